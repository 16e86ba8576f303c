"""The engine worker's wire protocol: versioned JSON messages over `multiprocessing.connection`.

Transport (docs/worker.md says the same for an operator):

- A TCP socket opened by the standard library's `multiprocessing.connection` (`Listener` on the
  worker, `Client` on the page's side). Before any message, both ends prove they hold the same
  auth key with its HMAC challenge, in both directions (the client checks the worker too). A
  peer without the key gets no message and its connection is closed. The key is never sent,
  printed, logged or written by this package; the challenge authenticates, it does not encrypt:
  across machines, use a private network or an SSH tunnel.
- Each message is one frame (`send_bytes` / `recv_bytes`, length-prefixed) holding a UTF-8 JSON
  object. Never pickle: `Connection.send` / `recv` would unpickle whatever the peer sent.
- Every message carries `"v": PROTOCOL_VERSION` and a `"type"`. A message of another version is
  refused with ProtocolVersionError naming both versions (the worker answers with that error and
  closes; a client raises it).

One call per connection: the client connects, sends one `call`, reads events until `done`,
`error` or `cancelled`, then closes. A connection closed before the end cancels its call: a
queued call leaves the queue, a running one stops at its next forward pass.

    client -> worker   call       {"method": str, "args": {...}, "client": str, "replica": str}
                                  (client, replica: whose turn and whose session slots, see below)
                       cancel     {}                               stop this connection's call
    worker -> client   queued     {"ahead": N}                     N runs before this one (the running one counted)
                       started    {}                               this call's measured run has begun
                       pass       {"steps": [...], "header": {...}}  stream_trace: the passes since the last
                                                                   event (Steps; the Prefill's at once, then every
                                                                   50 ms); the first also carries the trace header
                       progress   {"done": i, "total": n}          sweeps (points), modes, serving (requests)
                       alive      {}                               the worker's heartbeat, every HEARTBEAT_S while a
                                                                   call is open (a client that hears nothing for
                                                                   WORKER_SILENCE_S says the engine stopped answering)
                       done       {"result": ...}                  plain JSON; contract/worker/client.py rebuilds it
                                  (+ "shared": {"visitors", "measured_at"} when one measurement served several)
                       error      {"error": {"class", "key", "params", "message"}}
                       cancelled  {}

Methods (`call.method`, the kinds of engine/contract/worker/calls.py): MEASURED_METHODS run one at a
time in the worker's queue (a forward pass or a benchmark is inside each), taken in turns by peer
(the peer's address, then the call's `replica`: one app process), then by its `client` name (a page
session): one client's many calls do not all go before another client's one, and a fresh name per
call gains nothing. LIGHT_METHODS answer at once from the connection's own thread (no forward
pass; a model they need is loaded through the queue first).

Every frame is bounded before it is read (a call: WORKER_MAX_CALL_BYTES; anything from a worker:
WORKER_MAX_RESULT_BYTES) and parsed with engine.contract.limits.load_json (depth, number length,
no NaN or Infinity); a refusal is a keyed ProtocolError, never a traceback.
"""

from __future__ import annotations

import json
import os
import socket
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from multiprocessing.connection import Connection, answer_challenge, deliver_challenge
from pathlib import Path
from typing import Any

from engine.contract import config
from engine.contract.errors import LimitError
from engine.contract.limits import WORKER_MAX_RESULT_BYTES, load_json
from engine.contract.worker import calls
from engine.contract.worker.errors import ProtocolError, ProtocolVersionError, WorkerSetupError

PROTOCOL_VERSION = 3  # 2: the `alive` heartbeat, a call's `client`, bounded frames; 3: a call's `replica`
MIN_TOKEN_CHARS = 16  # a remote worker's token: shorter ones are guessable
HANDSHAKE_TIMEOUT_S = 10.0  # a client's connect and key challenge, in all (the worker allows its peers less)
HEARTBEAT_S = 1.0  # the worker says `alive` this often to every open call
MAX_CLIENT_NAME = 64  # characters of a call's `client` name

# The methods, from the one table of kinds (engine/contract/worker/calls.py) the worker and the client share.
MEASURED_METHODS = calls.names(measured=True)
LIGHT_METHODS = calls.names(lane="light")

CLIENT_TYPES = frozenset({"call", "cancel"})
WORKER_TYPES = frozenset({"queued", "started", "pass", "progress", "done", "error", "cancelled", "alive"})
FINAL_TYPES = frozenset({"done", "error", "cancelled"})  # the last message of a call


def encode(kind: str, **fields: Any) -> bytes:
    """One message as its frame's bytes: the version and type first, then `fields`."""
    return json.dumps({"v": PROTOCOL_VERSION, "type": kind, **fields}, ensure_ascii=False,
                      allow_nan=False).encode("utf-8")


def decode(frame: bytes, allowed: frozenset[str]) -> dict[str, Any]:
    """A frame's message, checked: a JSON object of this version whose type is one of `allowed`.

    Parsed bounded (engine.contract.limits.load_json: depth, number length, no NaN or Infinity).
    Raises ProtocolVersionError for another version, ProtocolError for anything else malformed."""
    try:
        message = load_json(frame.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as err:
        raise ProtocolError("protocol_malformed", f"not a JSON message: {type(err).__name__}", why="json") from None
    except LimitError as err:
        raise ProtocolError("protocol_malformed", f"a message refused: {err}", why=err.key) from None
    if not isinstance(message, dict):
        raise ProtocolError("protocol_malformed", "a message is a JSON object", why="object")
    if message.get("v") != PROTOCOL_VERSION:
        raise ProtocolVersionError(ours=PROTOCOL_VERSION, theirs=message.get("v"))
    if message.get("type") not in allowed:
        raise ProtocolError("protocol_malformed", f"unexpected message type {message.get('type')!r}",
                            why="type", type=str(message.get("type")))
    return message


class Channel:
    """One authenticated connection, carrying whole messages. Sends are serialised by a lock,
    so the worker's runner thread and a connection's own thread may both send on it."""

    def __init__(self, conn: Connection, receives: frozenset[str], max_bytes: int = WORKER_MAX_RESULT_BYTES) -> None:
        self.conn = conn
        self.receives = receives  # the message types the other end may send
        self.max_bytes = max_bytes  # a longer frame is refused before it is read
        self._send_lock = threading.Lock()

    def send(self, kind: str, **fields: Any) -> None:
        frame = encode(kind, **fields)
        with self._send_lock:
            self.conn.send_bytes(frame)

    def recv(self) -> dict[str, Any]:
        """The next message (blocks). EOFError / OSError when the other end has gone; ProtocolError for a
        frame over `max_bytes` (refused from its length, unread) or one that is not this protocol's."""
        return decode(recv_frame(self.conn, self.max_bytes), self.receives)

    def close(self) -> None:
        try:
            self.conn.close()
        except OSError:
            pass  # already gone


def recv_frame(conn: Connection, max_bytes: int) -> bytes:
    """One frame's bytes, refused from its length prefix when over `max_bytes` (ProtocolError: the
    connection is then out of step and must be closed)."""
    try:
        return conn.recv_bytes(max_bytes)
    except OSError as err:
        if str(err) != "bad message length":
            raise
        raise ProtocolError("protocol_too_large", f"a frame over {max_bytes:,} bytes was refused unread",
                            limit=max_bytes) from None


def client_name(value: Any) -> str:
    """A call's `client` name as the queue keys it: text, at most MAX_CLIENT_NAME characters."""
    return value[:MAX_CLIENT_NAME] if isinstance(value, str) else ""


class Deadline:
    """Shut a connection down if the block inside takes longer than `seconds` (the standard library's
    key challenge has no timeout: a peer that never answers would hold its thread for ever).
    Shutting the socket down wakes a thread blocked reading it; the block then raises OSError/EOFError."""

    def __init__(self, conn: Connection, seconds: float) -> None:
        self.conn, self.seconds = conn, seconds
        self._lock = threading.Lock()
        self._over = False
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def __enter__(self) -> Deadline:
        try:
            self._timer.start()
        except RuntimeError as err:  # "can't start new thread": this call fails, as a connection that cannot open
            raise OSError(f"no thread for the deadline: {err}") from None
        return self

    def __exit__(self, *exc) -> None:
        with self._lock:
            self._over = True  # finished in time: the timer, if it fires now, leaves the connection alone
        self._timer.cancel()

    def _expire(self) -> None:
        with self._lock:
            if not self._over:
                shutdown(self.conn)


def shutdown(conn: Connection) -> None:
    """Shut the connection's socket down for both directions (through a duplicate of its descriptor:
    a shutdown applies to the socket, so a thread blocked reading the original wakes with EOF)."""
    try:
        with socket.socket(fileno=os.dup(conn.fileno())) as sock:
            sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # already closed


def connect(address: tuple[str, int], authkey: bytes, timeout_s: float = HANDSHAKE_TIMEOUT_S) -> Connection:
    """A connection to a worker, after both ends proved they hold `authkey`.

    Raises OSError when nothing answers within `timeout_s`; when the key challenge fails, AuthenticationError
    (a wrong key), AssertionError (a peer that is not this protocol: its first frame is not a challenge, as
    the standard library asserts), EOFError or OSError (it hung up, or sent an oversized frame)."""
    sock = socket.create_connection(address, timeout=timeout_s)
    sock.settimeout(None)  # blocking again: a run's events may be seconds apart
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # the call right after the challenge's last frame
    conn = Connection(sock.detach())
    try:
        with Deadline(conn, timeout_s):
            answer_challenge(conn, authkey)  # the worker asks first, as multiprocessing.connection.Client does
            deliver_challenge(conn, authkey)  # then this side checks that the worker holds the key too
    except BaseException:
        conn.close()
        raise
    return conn


def parse_address(text: str) -> tuple[str, int]:
    """`HOST:PORT` (or `[v6]:PORT`) -> (host, port). Raises WorkerSetupError for anything else."""
    host, sep, port = text.strip().rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise WorkerSetupError("engine_address", f"an engine address is HOST:PORT, got {text!r}", value=text)
    return host, int(port)


def format_address(address: tuple[str, int]) -> str:
    host, port = address
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def is_loopback(host: str) -> bool:
    return host in ("127.0.0.1", "localhost", "::1") or host.startswith("127.")


def read_token(token_file: str | Path | None = None, environ: Mapping[str, str] = os.environ,
               env_name: str = config.ENGINE_TOKEN.name) -> bytes | None:
    """The shared token of a remote worker: the first line of `token_file`, else `environ[env_name]`;
    None when neither is set. Raises WorkerSetupError for an unreadable file or a short token (the
    error names the file and the length, never the token)."""
    if token_file:
        try:
            text = Path(token_file).expanduser().read_text(encoding="utf-8")
        except OSError as err:
            raise WorkerSetupError("engine_token_file", f"cannot read the token file {token_file}: "
                                   f"{err.strerror or err}", path=str(token_file)) from err
        token = text.strip().splitlines()[0].strip() if text.strip() else ""
        source = str(token_file)
    else:
        token = environ.get(env_name, "").strip()
        source = env_name
        if not token:
            return None
    if len(token) < MIN_TOKEN_CHARS:
        raise WorkerSetupError("engine_token_short", f"the token in {source} has {len(token)} characters; "
                               f"use at least {MIN_TOKEN_CHARS}", source=source, length=len(token),
                               minimum=MIN_TOKEN_CHARS)
    return token.encode("utf-8")


@dataclass(frozen=True)
class ModelRef:
    """Which model a call runs on: a choice the worker lists ("default", a folder name in its models
    folder, "preset:NAME"), a device and a dtype, as the page's picker and the operator name them."""

    choice: str = "default"
    device: str = "auto"
    dtype: str = "auto"

    def to_wire(self) -> dict[str, str]:
        return {"choice": self.choice, "device": self.device, "dtype": self.dtype}

    @classmethod
    def from_wire(cls, data: Any) -> ModelRef:
        if not isinstance(data, dict) or not all(isinstance(data.get(k), str) for k in ("choice", "device", "dtype")):
            raise ProtocolError("protocol_malformed", "a model is {choice, device, dtype} as text", why="model")
        return cls(data["choice"], data["device"], data["dtype"])

"""The worker's door: every new connection's key challenge and call, in ONE thread, before any thread of its own.

    KeyChallenge   the worker's side of multiprocessing.connection's key challenge (Python 3.12's
                   protocol: a client on 3.11 answers it with HMAC-MD5, one on 3.12 with SHA-256), fed
                   one frame at a time, so no thread waits on a peer that says nothing
    FrameReader    a connection's bytes cut into frames (multiprocessing.connection's length prefix),
                   read exactly frame by frame, each refused from its prefix past its bound
    Door           the selector thread: connections in the key challenge, then keyed without their
                   call, within PendingHandshakes' bounds (peers.py) and their deadlines; a connection
                   whose call is in is handed on with it (`on_call`), blocking again, or, while no
                   session slot is free, waits here for one in arrival order (a class's burst is
                   queued, not refused), hearing `alive` every HEARTBEAT_S

Why one thread: a thread per pending connection put a thread's start and two hand-overs of the GIL on
the accept path of every connection, in the process that times forward passes; a flood of silent
connections then queued a keyed client behind all of theirs. Here a pending connection costs a few
system calls, and no thread at all until its call is in.
"""

from __future__ import annotations

import hmac
import os
import selectors
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import AuthenticationError, Connection
from typing import Any

from engine.contract.limits import (
    WORKER_CALL_DEADLINE_S, WORKER_HANDSHAKE_DEADLINE_S, WORKER_MAX_CALL_BYTES, WORKER_MAX_PARKED,
    WORKER_PARK_DEADLINE_S,
)
from engine.contract.worker.errors import EngineWorkerError, ProtocolError, error_to_wire
from engine.contract.worker.protocol import CLIENT_TYPES, HEARTBEAT_S, client_name, decode, encode
from engine.runtime.worker.peers import PendingHandshakes, Watchdog

CHALLENGE, WELCOME, FAILURE = b"#CHALLENGE#", b"#WELCOME#", b"#FAILURE#"
DIGESTS = frozenset({"md5", "sha256", "sha384", "sha3_256", "sha3_384"})  # the standard library's (3.12)
LEGACY_LENGTHS = (16, 20)  # a bare HMAC-MD5 answer, and a challenge without a digest prefix (Python <= 3.11)
NONCE_BYTES = 40
MAX_HANDSHAKE_FRAME = 256  # the standard library reads the challenge's frames with this bound
SELECT_S = 0.25  # the door's longest sleep: deadlines are kept to within this


def digest_of(message: bytes) -> str:
    """The digest a challenge or an answer names ('' for the legacy, bare HMAC-MD5 form)."""
    if len(message) in LEGACY_LENGTHS:
        return ""
    end = message.find(b"}", 1, 10) if message.startswith(b"{") else -1
    name = message[1:end].decode("ascii", "replace") if end > 0 else ""
    if name not in DIGESTS:
        raise AuthenticationError("a challenge or answer of no known digest")
    return name


def answer_to(authkey: bytes, challenge: bytes) -> bytes:
    """The answer to a peer's `challenge` (without its tag), as the standard library makes it: the HMAC of
    the whole challenge, bare MD5 for a legacy one, else prefixed with the digest's name."""
    name = digest_of(challenge)
    mac = hmac.new(authkey, challenge, name or "md5").digest()
    return b"{%s}%s" % (name.encode("ascii"), mac) if name else mac


def framed(*frames: bytes) -> bytes:
    """Frames as multiprocessing.connection puts them on the wire: each after its 4-byte length."""
    return b"".join(struct.pack("!i", len(f)) + f for f in frames)


def no_delay(conn: Connection) -> None:
    """Each frame on the wire at once (TCP_NODELAY): a call's `queued`, `started` and `done` are small
    frames in a row, and Nagle's algorithm held each behind the client's delayed ACK of the one before
    (about 40 ms a call on Linux)."""
    with socket.socket(fileno=os.dup(conn.fileno())) as sock:  # an option of the socket, set through a duplicate
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class KeyChallenge:
    """Both ways, the worker first: it sends `opening()`, checks the peer's answer (WELCOME or FAILURE),
    answers the peer's own challenge and waits for its WELCOME. `take(frame)` returns the frames to
    send; AuthenticationError when the peer does not hold the key; `done` once both sides are proven."""

    def __init__(self, authkey: bytes) -> None:
        self.authkey = authkey
        self.challenge = b"{sha256}" + os.urandom(NONCE_BYTES)
        self.stage = "answer"  # answer -> their challenge -> welcome -> done
        self.done = False

    def opening(self) -> bytes:
        return CHALLENGE + self.challenge

    def take(self, frame: bytes) -> list[bytes]:
        if self.stage == "answer":
            name = digest_of(frame)
            expected = hmac.new(self.authkey, self.challenge, name or "md5").digest()
            mac = frame[len(name) + 2:] if name else frame
            if not hmac.compare_digest(expected, mac):
                return self._fail([FAILURE], "the digest received was wrong")
            self.stage = "their challenge"
            return [WELCOME]
        if self.stage == "their challenge":
            if not frame.startswith(CHALLENGE) or len(frame) < len(CHALLENGE) + LEGACY_LENGTHS[1]:
                return self._fail([], "not a key challenge")
            self.stage = "welcome"
            return [answer_to(self.authkey, frame[len(CHALLENGE):])]
        if frame != WELCOME:
            return self._fail([], "the worker's answer was refused")
        self.stage, self.done = "done", True
        return []

    def _fail(self, frames: list[bytes], why: str) -> list[bytes]:
        self.stage = "failed"
        raise AuthenticationError(why, frames)


class FrameReader:
    """multiprocessing.connection's frames from a non-blocking descriptor, read exactly: a 4-byte signed
    length (-1: an 8-byte one follows), then the payload; nothing past the frame is ever read, so the
    connection's next frame is left in the socket for whoever reads it next."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._header = b""
        self._size: int | None = None
        self._parts: list[bytes] = []
        self._got = 0

    def read(self, max_bytes: int) -> bytes | None:
        """The next whole frame, or None while it is still coming. EOFError when the peer has gone;
        ValueError (unread) for a frame over `max_bytes`; BlockingIOError is taken as 'not yet'."""
        try:
            while self._size is None:
                self._read_header()
            if self._size > max_bytes:
                raise ValueError(f"a frame of {self._size:,} bytes")
            while self._got < self._size:
                chunk = self._read_some(self._size - self._got)
                self._parts.append(chunk)
                self._got += len(chunk)
        except BlockingIOError:
            return None
        frame = b"".join(self._parts)
        self._header, self._size, self._parts, self._got = b"", None, [], 0
        return frame

    def _read_header(self) -> None:
        want = 4 if len(self._header) < 4 else 12
        self._header += self._read_some(want - len(self._header))
        if len(self._header) == 4:
            (size,) = struct.unpack("!i", self._header)
            if size != -1:
                self._size = size if size >= 0 else 1 << 62  # a negative length: refused as too large
        elif len(self._header) == 12:
            (self._size,) = struct.unpack("!Q", self._header[4:])

    def _read_some(self, n: int) -> bytes:
        data = os.read(self.fd, min(n, 1 << 16))
        if not data:
            raise EOFError("the peer has gone")
        return data


@dataclass
class Pending:
    """One connection at the door: its key challenge, then its call; `deadline` for the stage it is in."""

    conn: Connection
    host: str
    peer: str
    challenge: KeyChallenge
    deadline: float
    reader: FrameReader = field(init=False)
    gone: bool = False  # handed on with its call, or closed: the door holds it no more
    call: dict[str, Any] | None = None  # its call, while it waits here for a session slot

    def __post_init__(self) -> None:
        self.reader = FrameReader(self.conn.fileno())


class Door:
    """The selector thread. `admit(conn, host, peer)` from the accepting thread (never waits);
    `on_call(conn, host, peer, message)` from this thread, for a keyed connection whose call is in
    (it must not wait either: it starts the session's thread and returns True, or returns False when
    no session slot is free: the call then waits here, in arrival order, until `wake()` says a slot
    was given back). A refused call is told why in one keyed error (`refuse`), then closed."""

    def __init__(self, authkey: bytes, on_call: Callable[[Connection, str, str, dict[str, Any]], bool],
                 check_call: Callable[[dict[str, Any]], Any], watchdog: Watchdog) -> None:
        self.authkey, self.on_call, self.check_call, self.watchdog = authkey, on_call, check_call, watchdog
        self.pending = PendingHandshakes()
        self.handshake_deadline_s, self.call_deadline_s = WORKER_HANDSHAKE_DEADLINE_S, WORKER_CALL_DEADLINE_S
        self.max_parked, self.park_deadline_s = WORKER_MAX_PARKED, WORKER_PARK_DEADLINE_S
        self._parked: deque[Pending] = deque()  # calls waiting for a session slot, in arrival order
        self._last_beat = time.monotonic()
        self._selector = selectors.DefaultSelector()
        self._arrived: deque[tuple[Connection, str, str]] = deque()
        self._wake_in, self._wake_out = socket.socketpair()
        for sock in (self._wake_in, self._wake_out):
            sock.setblocking(False)
        self._selector.register(self._wake_in, selectors.EVENT_READ, None)
        self._open: dict[int, Pending] = {}
        self.thread: threading.Thread | None = None

    def start(self) -> threading.Thread:
        self.thread = threading.Thread(target=self._run, name="engine-door", daemon=True)
        self.thread.start()
        return self.thread

    def admit(self, conn: Connection, host: str, peer: str) -> None:
        self._arrived.append((conn, host, peer))
        self.wake()

    def wake(self) -> None:
        """Wake the door's thread (a connection arrived, or a session slot was given back)."""
        try:
            self._wake_out.send(b"\0")
        except BlockingIOError:
            pass  # the door is awake already, with wake-ups unread

    def _run(self) -> None:
        while True:
            for key, _ in self._selector.select(SELECT_S):
                try:
                    self._take_arrivals() if key.data is None else self._readable(key.data)
                except Exception as err:  # noqa: BLE001 - MemoryError included: that connection only, never the door
                    self.watchdog.warn("door", "a connection was closed: %s: %s", type(err).__name__, err)
                    if key.data is not None:
                        self._close(key.data)
            self._hand_on_parked()
            now = time.monotonic()
            self._expire(now)
            if now - self._last_beat >= HEARTBEAT_S:
                self._last_beat = now
                self._beat_parked()

    def _take_arrivals(self) -> None:
        try:
            while self._wake_in.recv(4096):
                pass
        except BlockingIOError:
            pass
        while self._arrived:
            self._enter(*self._arrived.popleft())

    def _enter(self, conn: Connection, host: str, peer: str) -> None:
        """A slot in the pending pool (its oldest shut down when full, in all or for this address), the
        worker's challenge sent, the connection watched."""
        evicted = self.pending.admit(host, conn)
        if evicted is not None:
            self.watchdog.warn("pending", "too many connections in the key challenge: the oldest closed (%s came)",
                               peer)
            pushed_out = self._open.get(evicted.fileno()) if not evicted.closed else None
            if pushed_out is not None:
                self._close(pushed_out)  # closed as pushed out: no "wrong token" said of it
        entry = Pending(conn, host, peer, KeyChallenge(self.authkey), time.monotonic() + self.handshake_deadline_s)
        try:
            os.set_blocking(conn.fileno(), False)
            no_delay(conn)
            self._write(entry, entry.challenge.opening())
            self._selector.register(conn.fileno(), selectors.EVENT_READ, entry)
        except (OSError, ValueError):
            self._close(entry)
            return
        self._open[conn.fileno()] = entry

    def _readable(self, entry: Pending) -> None:
        try:
            while not entry.gone and (frame := self._next_frame(entry)) is not None:
                self._step(entry, frame)
        except (AuthenticationError, EOFError, OSError, ValueError) as err:
            if isinstance(err, AuthenticationError) and len(err.args) > 1:
                self._write_quietly(entry, *err.args[1])  # FAILURE, as the standard library says it
            if isinstance(err, AuthenticationError):
                self._refused_key(entry)
            elif not entry.challenge.done:
                self.watchdog.warn(f"hung up {entry.host}", "%s closed its connection during the key challenge "
                                   "(%s)", entry.peer, type(err).__name__)
            elif isinstance(err, ValueError) and entry.call is None:  # a call's frame over its bound, refused unread
                self.refuse(entry.conn, ProtocolError("protocol_too_large", f"a frame over {WORKER_MAX_CALL_BYTES:,} "
                                                      "bytes was refused unread", limit=WORKER_MAX_CALL_BYTES))
            self._close(entry)

    def _next_frame(self, entry: Pending) -> bytes | None:
        return entry.reader.read(WORKER_MAX_CALL_BYTES if entry.challenge.done else MAX_HANDSHAKE_FRAME)

    def _step(self, entry: Pending, frame: bytes) -> None:
        if entry.call is not None:  # waiting for a slot: its only frame may be `cancel`, which ends it
            raise EOFError("the call was cancelled while it waited for a session slot")
        if not entry.challenge.done:
            self._write(entry, *entry.challenge.take(frame))
            if entry.challenge.done:
                entry.deadline = time.monotonic() + self.call_deadline_s
            return
        try:
            message = decode(frame, CLIENT_TYPES)
            self.check_call(message)
        except ProtocolError as err:  # ProtocolVersionError included: say why, then close
            self.refuse(entry.conn, err)
            self._close(entry)
            return
        self.pending.release(entry.conn)  # keyed, its call in: no longer in the key challenge's pool
        entry.call = message
        if self._parked or not self._hand_on(entry):
            self._park(entry)

    def _hand_on(self, entry: Pending) -> bool:
        """The call to its session (True), or False while no session slot is free (it stays here)."""
        self._forget(entry)
        os.set_blocking(entry.conn.fileno(), True)
        if self.on_call(entry.conn, entry.host, entry.peer, entry.call):
            return True
        os.set_blocking(entry.conn.fileno(), False)  # back at the door: watched for its hang-up or cancel
        entry.gone = False
        self._selector.register(entry.conn.fileno(), selectors.EVENT_READ, entry)
        self._open[entry.conn.fileno()] = entry
        return False

    def _park(self, entry: Pending) -> None:
        """Wait for a session slot, behind the calls that came before (none is refused while the bound holds)."""
        if len(self._parked) >= self.max_parked:
            self.watchdog.warn("parked", "refused %s's call: %d calls wait for a session slot already", entry.peer,
                               self.max_parked)
            self.refuse(entry.conn, EngineWorkerError("engine_busy", f"the worker holds {self.max_parked} calls "
                                                      "waiting already; try again"))
            self._close(entry)
            return
        entry.deadline = time.monotonic() + self.park_deadline_s
        self._parked.append(entry)

    def _hand_on_parked(self) -> None:
        """Every waiting call whose peer has a slot now, in arrival order; a peer whose call found none
        keeps its later ones waiting too (its calls stay in order)."""
        full: set[str] = set()
        still: deque[Pending] = deque()
        while self._parked:
            entry = self._parked.popleft()
            if entry.gone:
                continue  # it hung up, or was refused at its deadline
            key = _peer_key(entry)
            if key in full or not self._hand_on(entry):
                full.add(key)
                still.append(entry)
        self._parked = still

    def _beat_parked(self) -> None:
        """`alive` to every waiting call, so its client knows the worker is there (it reads no silence)."""
        beat = framed(encode("alive"))
        for entry in list(self._parked):
            if not entry.gone:
                try:
                    if os.write(entry.conn.fileno(), beat) != len(beat):
                        self._close(entry)  # a frame cut short: the connection is out of step
                except BlockingIOError:
                    pass  # it does not read: its deadline still holds
                except OSError:
                    self._close(entry)

    def refuse(self, conn: Connection, err: Exception) -> None:
        """One keyed error to a connection no thread serves (a small frame into an empty send buffer:
        written at once, or not at all), the caller then closes it."""
        frame = encode("error", error=error_to_wire(err))
        try:
            os.write(conn.fileno(), framed(frame))
        except OSError:
            pass  # gone, or not reading: it is closed anyway

    def _write(self, entry: Pending, *frames: bytes) -> None:
        data = framed(*frames)
        if data and os.write(entry.conn.fileno(), data) != len(data):
            raise OSError("the peer's window is full during the key challenge")

    def _write_quietly(self, entry: Pending, *frames: bytes) -> None:
        try:
            self._write(entry, *frames)
        except OSError:
            pass

    def _refused_key(self, entry: Pending) -> None:
        self.watchdog.warn(f"token {entry.host}", "refused a connection from %s: wrong or missing token", entry.peer)

    def _expire(self, now: float) -> None:
        for entry in [e for e in self._open.values() if e.deadline < now]:
            if not entry.challenge.done:
                self.watchdog.warn(f"token {entry.host}", "closed a connection from %s: no answer to the key "
                                   "challenge within %.0f s", entry.peer, self.handshake_deadline_s)
            elif entry.call is not None:
                self.refuse(entry.conn, EngineWorkerError("engine_busy", f"the call waited "
                                                          f"{self.park_deadline_s:.0f} s for a session slot; "
                                                          "try again"))
            self._close(entry)

    def _forget(self, entry: Pending) -> None:
        self.pending.release(entry.conn)
        if not entry.gone:
            entry.gone = True
            fd = entry.conn.fileno()
            if self._open.pop(fd, None) is not None:
                self._selector.unregister(fd)

    def _close(self, entry: Pending) -> None:
        self._forget(entry)
        if not entry.conn.closed:
            entry.conn.close()


def _peer_key(entry: Pending) -> str:
    """Whose session slots a waiting call counts in (as the server's SessionSlots key them)."""
    return peer_key(entry.host, entry.call or {})


def peer_key(host: str, call: dict[str, Any]) -> str:
    """One peer of the worker: its address and the replica its call names (every replica of a classroom
    behind one proxy comes from 127.0.0.1; a replica is one app process, `EngineClient.replica`)."""
    return f"{host}/{client_name(call.get('replica'))}"

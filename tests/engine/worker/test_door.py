"""The worker's door (engine/runtime/worker/door.py): the key challenge and the call read in one thread
for every new connection, and what happens to a call once it is in (peers.SessionSlots): a cap per
peer on keyed connections with a call, the calls beyond it waiting at the door in arrival order (and
refused in one keyed error only past the door's own bound); a keyed connection that sends no call
closed after its deadline; no thread started for a pending connection."""

from __future__ import annotations

import hmac
import json
import os
import secrets
import shutil
import socket
import struct
import subprocess
import threading
import time
from multiprocessing.connection import AuthenticationError, Connection, answer_challenge, deliver_challenge
from pathlib import Path
from types import SimpleNamespace

import pytest

from engine.contract.worker.client import EngineClient
from engine.contract.worker.errors import EngineWorkerError
from engine.contract.worker.protocol import PROTOCOL_VERSION, WORKER_TYPES, Channel, connect
from engine.runtime.worker.door import CHALLENGE, FAILURE, WELCOME, FrameReader, KeyChallenge, answer_to, digest_of
from engine.runtime.worker.jobs import MEASURED
from engine.runtime.worker.models import WorkerSettings
from engine.runtime.worker.peers import SessionSlots
from engine.runtime.worker.server import start_in_thread
from tests.factories import Gate

KEY = secrets.token_hex(16).encode()
WAIT_S = 30.0


# --- the key challenge, a frame at a time ------------------------------------------------------

def test_a_legacy_client_answers_the_workers_sha256_challenge_with_md5_and_gets_in():
    challenge = KeyChallenge(KEY)
    opening = challenge.opening()
    assert opening.startswith(CHALLENGE + b"{sha256}")
    md5 = hmac.new(KEY, opening[len(CHALLENGE):], "md5").digest()  # what Python 3.11's answer_challenge sends
    assert challenge.take(md5) == [WELCOME]
    theirs = os.urandom(20)  # Python 3.11's own challenge: 20 bytes, no digest named
    assert challenge.take(CHALLENGE + theirs) == [hmac.new(KEY, theirs, "md5").digest()]
    assert not challenge.done and challenge.take(WELCOME) == [] and challenge.done


def test_a_client_that_names_sha256_is_answered_in_sha256():
    challenge = KeyChallenge(KEY)
    ours = challenge.opening()[len(CHALLENGE):]
    assert challenge.take(b"{sha256}" + hmac.new(KEY, ours, "sha256").digest()) == [WELCOME]
    theirs = b"{sha256}" + os.urandom(40)
    assert challenge.take(CHALLENGE + theirs) == [b"{sha256}" + hmac.new(KEY, theirs, "sha256").digest()]
    assert answer_to(KEY, theirs) == b"{sha256}" + hmac.new(KEY, theirs, "sha256").digest()
    assert digest_of(os.urandom(16)) == "" and digest_of(b"{sha384}" + os.urandom(48)) == "sha384"


def test_a_wrong_key_is_told_failure_and_refused():
    challenge = KeyChallenge(KEY)
    wrong = hmac.new(b"another key of the same length!!", challenge.opening()[len(CHALLENGE):], "md5").digest()
    with pytest.raises(AuthenticationError) as caught:
        challenge.take(wrong)
    assert caught.value.args[1] == [FAILURE]
    with pytest.raises(AuthenticationError):
        digest_of(b"{whirlpool}" + os.urandom(40))


# --- frames ------------------------------------------------------------------------------

def test_frames_are_read_whole_across_reads_and_nothing_past_one_is_read():
    a, b = socket.socketpair()
    a.setblocking(False)
    reader = FrameReader(a.fileno())
    first, second = b"x" * 1000, b"second"
    wire = struct.pack("!i", len(first)) + first
    b.sendall(wire[:3])
    assert reader.read(4096) is None  # half a length prefix: not yet
    b.sendall(wire[3:500])
    assert reader.read(4096) is None
    b.sendall(wire[500:] + struct.pack("!i", len(second)) + second)
    assert reader.read(4096) == first
    a.setblocking(True)
    assert Connection(os.dup(a.fileno())).recv_bytes() == second  # left in the socket for the next reader
    a.close()
    b.close()


def test_a_frame_over_its_bound_is_refused_from_its_prefix_unread():
    a, b = socket.socketpair()
    a.setblocking(False)
    b.sendall(struct.pack("!i", 250_000_000))
    with pytest.raises(ValueError):
        FrameReader(a.fileno()).read(1 << 20)
    b.sendall(struct.pack("!i", -7))  # a negative length is no smaller frame
    with pytest.raises(ValueError):
        FrameReader(a.fileno()).read(1 << 20)
    b.close()
    with pytest.raises(EOFError):
        FrameReader(a.fileno()).read(1 << 20)
    a.close()


# --- the server ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def served():
    gate = Gate()
    settings = WorkerSettings(presets=False, max_prompt_tokens=64)
    running = start_in_thread(KEY, settings, measured={**MEASURED, "gate": gate, "quick": lambda ctx, args: 1})
    yield SimpleNamespace(worker=running.worker, address=running.address, gate=gate)
    gate.opened.set()
    running.close()


def keyed_from(address, source: str) -> Connection:
    sock = socket.create_connection(address, timeout=WAIT_S, source_address=(source, 0))
    sock.settimeout(None)
    conn = Connection(sock.detach())
    answer_challenge(conn, KEY)
    deliver_challenge(conn, KEY)
    return conn


def call_from(address, source: str, method: str) -> Channel:
    channel = Channel(keyed_from(address, source), WORKER_TYPES)
    channel.conn.send_bytes(json.dumps({"v": PROTOCOL_VERSION, "type": "call", "method": method, "args": {}}).encode())
    return channel


def test_one_peer_holds_only_its_share_of_slots_and_its_next_call_waits_at_the_door(served, monkeypatch):
    monkeypatch.setattr(served.worker, "sessions", SessionSlots(total=16, per_peer=2))
    served.gate.reset()
    held = [call_from(served.address, "127.0.0.2", "gate") for _ in range(2)]
    for channel in held:
        assert channel.recv()["type"] == "queued"
    waiting = call_from(served.address, "127.0.0.2", "quick")
    assert waiting.recv()["type"] == "alive"  # at the door, not refused: the worker says it is there
    other = call_from(served.address, "127.0.0.3", "ping")  # another address still gets in
    assert other.recv()["type"] == "done"
    served.gate.opened.set()
    for channel in held:
        while channel.recv()["type"] not in ("done", "cancelled"):
            pass
        channel.close()
    while (kind := waiting.recv()["type"]) not in ("done", "error", "cancelled"):
        pass
    assert kind == "done"  # a slot was given back: the waiting call was handed on and ran


def test_past_the_doors_bound_a_call_is_refused_as_engine_busy_in_one_line(served, monkeypatch):
    monkeypatch.setattr(served.worker, "sessions", SessionSlots(total=16, per_peer=0))
    monkeypatch.setattr(served.worker.door, "max_parked", 0)
    with pytest.raises(EngineWorkerError) as caught:
        EngineClient(served.address, KEY).ping()
    assert caught.value.key == "engine_busy" and "\n" not in str(caught.value)


def test_a_keyed_connection_that_sends_no_call_is_closed_after_its_deadline(served, monkeypatch):
    monkeypatch.setattr(served.worker.door, "call_deadline_s", 0.3)
    conn = connect(served.address, KEY)
    started = time.monotonic()
    with pytest.raises((EOFError, OSError)):
        conn.recv_bytes(1 << 16)  # the worker closes it: nothing of its own waits on it
    assert time.monotonic() - started < WAIT_S
    conn.close()


def test_pending_connections_start_no_thread(served):
    before = threading.active_count()
    socks = [socket.create_connection(served.address, timeout=WAIT_S, source_address=(f"127.0.1.{i}", 0))
             for i in range(1, 41)]
    for sock in socks:
        assert sock.recv(4)  # the worker's challenge came: each connection is in the door
    assert threading.active_count() <= before + 2  # no thread per pending connection (a client's timer aside)
    for sock in socks:
        sock.close()
    assert EngineClient(served.address, KEY).ping()


def test_a_fault_while_handing_a_call_on_closes_that_connection_and_the_door_goes_on(served, monkeypatch):
    def broken(*args):
        raise MemoryError("no memory for this one")

    monkeypatch.setattr(served.worker.door, "on_call", broken)
    channel = call_from(served.address, "127.0.0.4", "ping")
    with pytest.raises((EOFError, OSError)):
        channel.recv()
    channel.close()
    monkeypatch.undo()
    assert EngineClient(served.address, KEY).ping()


# A client of another Python: its standard library's own key challenge (3.12 on: SHA-256 both ways).
OTHER_CLIENT = """
import json, sys
from multiprocessing.connection import AuthenticationError, Client
conn = Client((sys.argv[1], int(sys.argv[2])), authkey=bytes.fromhex(sys.argv[3]))
conn.send_bytes(json.dumps({"v": int(sys.argv[4]), "type": "call", "method": "ping", "args": {}}).encode())
print(json.loads(conn.recv_bytes())["type"])
try:
    Client((sys.argv[1], int(sys.argv[2])), authkey=b"x" * 32)
except AuthenticationError:
    print("wrong key refused")
"""


def runs(python: str) -> bool:
    return subprocess.run([python, "-c", "pass"], capture_output=True, timeout=WAIT_S, check=False).returncode == 0


# On PATH, or installed by pyenv beside this one (a pyenv shim may not run in this environment).
OTHER_PYTHONS = [path for path in (*filter(None, map(shutil.which, ("python3.12", "python3.13"))),
                                   *map(str, sorted(Path.home().glob(".pyenv/versions/3.1[23].*/bin/python3"))))
                 if runs(path)][:2]


@pytest.mark.skipif(not OTHER_PYTHONS, reason="no Python 3.12 or 3.13 here")
@pytest.mark.parametrize("python", OTHER_PYTHONS)
def test_a_client_on_another_python_passes_the_doors_key_challenge(served, python):
    host, port = served.address
    argv = [python, "-c", OTHER_CLIENT, host, str(port), KEY.hex(), str(PROTOCOL_VERSION)]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=WAIT_S, check=False)
    assert out.stdout.split("\n")[:2] == ["done", "wrong key refused"], out

"""The worker's side of its peers (engine/runtime/worker/peers.py) and what the server does with them:
an outbox that never makes its writer wait, and drops a client past its bound or its deadline; the
pending pool that pushes out its oldest; the watchdog's stalls; the `alive` heartbeat; a finished
connection closed by the worker; calls of two clients taken in turns; inputs refused before queueing."""

from __future__ import annotations

import secrets
import socket
import threading
import time
from multiprocessing.connection import Connection
from types import SimpleNamespace

import pytest

from engine.contract.errors import InputError, LimitError
from engine.contract.worker.client import EngineClient
from engine.contract.worker.protocol import WORKER_TYPES, Channel, connect
from engine.runtime.worker import peers
from engine.runtime.worker.jobs import MEASURED
from engine.runtime.worker.models import WorkerSettings
from engine.runtime.worker.peers import Outbox, PendingHandshakes, Watchdog
from engine.runtime.worker.server import start_in_thread
from tests.factories import Gate

WAIT_S = 30.0


def pair(buffer_bytes: int = 4096) -> tuple[Connection, Connection]:
    a, b = socket.socketpair()
    for s in (a, b):
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, buffer_bytes)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, buffer_bytes)
    return Connection(a.detach()), Connection(b.detach())


def wait_for(condition, timeout_s: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


# --- the outbox -----------------------------------------------------------------------------

def test_an_outbox_put_never_waits_and_a_full_one_drops_its_client():
    worker_end, client_end = pair()
    outbox = Outbox(worker_end, max_bytes=64_000)
    threading.Thread(target=outbox.run, daemon=True).start()
    started = time.monotonic()
    with pytest.raises(EOFError):
        for i in range(1000):  # the client reads nothing: the kernel's buffers fill, then the outbox
            outbox.put("progress", done=i, total=1000, pad="x" * 1000)
    assert time.monotonic() - started < 5.0  # never blocked on the socket (it would have for ever)
    assert outbox.dropped and "unread" in outbox.dropped
    with pytest.raises(EOFError):
        outbox.put("done", result=1)  # a dropped client's run is cancelled by this
    client_end.close()


def test_an_outbox_whose_client_does_not_read_in_time_is_overdue():
    worker_end, client_end = pair()
    outbox = Outbox(worker_end, deadline_s=0.2)
    threading.Thread(target=outbox.run, daemon=True).start()
    for i in range(200):
        outbox.put("progress", done=i, total=200, pad="y" * 1000)
    assert not outbox.overdue(time.monotonic())
    wait_for(lambda: outbox.overdue(time.monotonic()), timeout_s=5.0)
    outbox.drop("it did not read its events in time")  # what the watchdog does on seeing it
    assert outbox.flush() is False
    client_end.close()


def test_an_outbox_that_ends_sends_everything_then_shuts_the_connection():
    worker_end, client_end = pair(1 << 16)
    outbox = Outbox(worker_end)
    threading.Thread(target=outbox.run, daemon=True).start()
    outbox.put("queued", ahead=0)
    outbox.put("done", result={"ok": True})
    outbox.end()
    got = [Channel(client_end, WORKER_TYPES).recv()["type"] for _ in range(2)]
    assert got == ["queued", "done"]
    with pytest.raises((EOFError, OSError)):
        client_end.recv_bytes()  # the worker closed its side once the last event was out


# --- the pending pool and the watchdog -------------------------------------------------------

def test_the_pending_pool_shuts_its_oldest_when_full_in_all_or_for_one_address():
    pool = PendingHandshakes(total=4, per_host=2)
    ends = [pair() for _ in range(6)]
    for (worker_end, _), host in zip(ends, ["a", "a", "b", "c"]):
        pool.admit(host, worker_end)
    assert len(pool) == 4
    pool.admit("a", ends[4][0])  # a third from "a": "a"'s oldest goes
    with pytest.raises((EOFError, OSError)):
        ends[0][1].recv_bytes()
    pool.admit("d", ends[5][0])  # the pool is full: the oldest of all goes ("a"'s second)
    with pytest.raises((EOFError, OSError)):
        ends[1][1].recv_bytes()
    assert len(pool) == 4 and pool.evicted == 2
    pool.release(ends[0][0])  # releasing one already pushed out is harmless
    assert len(pool) == 4


def test_the_watchdog_keeps_a_jump_of_its_clock_as_a_stall(monkeypatch):
    now = [1000.0]
    monkeypatch.setattr(peers.time, "monotonic", lambda: now[0])
    dog = Watchdog()
    dog.running = True  # as start() sets it, without its thread
    dog.note_clock()
    started = dog.note_clock()
    now[0] += 0.3
    assert dog.stalled_since(started) == 0.0
    now[0] += 60.0  # the process was stopped for a minute
    assert dog.stalled_since(started) == pytest.approx(60.0)
    assert dog.stalled_since(now[0] + 1) == 0.0  # a run that began after it is not touched


# --- the server ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def served():
    key = secrets.token_hex(16).encode()
    gate = Gate()
    settings = WorkerSettings(presets=False, max_prompt_tokens=64)
    running = start_in_thread(key, settings, measured={**MEASURED, "gate": gate, "quick": lambda ctx, args: 1})
    yield SimpleNamespace(worker=running.worker, address=running.address, key=key, gate=gate)
    gate.opened.set()
    running.close()


def test_an_open_call_hears_the_workers_heartbeat(served):
    served.gate.reset()
    channel = Channel(connect(served.address, served.key), WORKER_TYPES)
    channel.send("call", method="gate", args={})
    kinds = []
    deadline = time.monotonic() + WAIT_S
    while "alive" not in kinds and time.monotonic() < deadline:
        kinds.append(channel.recv()["type"])
    served.gate.opened.set()
    channel.close()
    assert kinds[:2] == ["queued", "started"] and "alive" in kinds


def test_the_worker_closes_a_finished_connection_the_client_keeps_open(served):
    channel = Channel(connect(served.address, served.key), WORKER_TYPES)
    channel.send("call", method="ping", args={})
    assert channel.recv()["type"] == "done"
    with pytest.raises((EOFError, OSError)):
        channel.recv()  # no slot held by a client that never hangs up
    channel.close()


def test_two_clients_calls_are_taken_in_turns(served):
    served.gate.reset()
    holder = threading.Thread(target=lambda: list(EngineClient(served.address, served.key).call("gate", {})),
                              daemon=True)
    holder.start()
    assert served.gate.entered.wait(WAIT_S)
    busy, other = (EngineClient(served.address, served.key, client_name=n) for n in ("busy", "other"))
    calls = [busy.call("quick", {}) for _ in range(6)]
    for call in calls:
        assert isinstance(next(call), tuple)  # each one queued (its first event)
    kind, fields = next(other.call("quick", {}))
    served.gate.opened.set()
    assert kind == "queued" and fields["ahead"] <= 2, fields  # after the running one and busy's next, not all six
    for call in calls:
        call.close()
    holder.join(WAIT_S)


def test_inputs_are_refused_before_anything_is_queued_or_tokenized(served):
    worker = served.worker
    with pytest.raises(InputError) as caught:
        worker.check_inputs("trace", {"prompt": "x" * (worker.max_prompt_chars + 1)})
    assert caught.value.key == "prompt_too_many_chars" and caught.value.params["limit"] == worker.max_prompt_chars
    with pytest.raises(InputError) as caught:
        worker.check_inputs("trace", {"prompt": "hi", "config": {"seed": -1}})
    assert (caught.value.key, caught.value.params["name"]) == ("sampling_range", "seed")
    with pytest.raises(LimitError):
        worker.check_inputs("token_preview", {"prompt": "hi", "target_tokens": 10**9})
    with pytest.raises(InputError):
        worker.check_inputs("serve_workload", {"requests": [{"prompt": "z" * 70_000}]})
    worker.check_inputs("trace", {"prompt": "法国的首都是", "config": {"seed": 7}})  # a real call passes


def test_one_result_larger_than_the_bound_is_sent_when_it_comes_alone():
    worker_end, client_end = pair(1 << 16)
    outbox = Outbox(worker_end, max_bytes=10_000)
    threading.Thread(target=outbox.run, daemon=True).start()
    outbox.put("done", result="r" * 50_000)  # a long run's result: nothing waits before it
    outbox.end()
    assert Channel(client_end, WORKER_TYPES).recv()["result"] == "r" * 50_000
    assert outbox.dropped is None


def test_a_named_client_is_the_same_client_taking_another_turn():
    base = EngineClient(("127.0.0.1", 9), b"k" * 16, heartbeat_s=0.25, silence_s=7.0)
    named = base.named("session-a")
    assert named.client_name == "session-a" and base.client_name != "session-a"
    assert (named.address, named.heartbeat_s, named.silence_s, named.local) == \
        (base.address, base.heartbeat_s, base.silence_s, base.local)


def test_a_stall_inside_a_runners_build_leaves_the_run_alone(monkeypatch):
    """A runner's build (torch.compile on a busy machine) is in no measured time: a stall there is kept
    but does not discard the run; one reaching past the build does."""
    from engine.runtime import untimed

    now = [2000.0]
    monkeypatch.setattr(peers.time, "monotonic", lambda: now[0])
    monkeypatch.setattr(untimed.time, "monotonic", lambda: now[0])
    dog = Watchdog()
    dog.running = True
    started = dog.note_clock()
    with untimed.untimed():
        now[0] += 20.0  # compiling, the watchdog starved
        dog.note_clock()
    assert dog.stalled_since(started) == 0.0
    now[0] += 10.0  # the process stood still again, in a timed pass this time
    assert dog.stalled_since(started) == pytest.approx(10.0)

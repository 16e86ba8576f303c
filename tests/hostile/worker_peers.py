"""Hostile peers of a real engine worker: `python -m tests.hostile.worker_peers CASE` runs one case.

The child starts a worker (engine.runtime.worker.server.start_in_thread, the real server code) with
test handlers in place of forward passes ("short": a lesson-sized run, about 20 ms; "flood": a
streamed run's worth of events; "drip": a long streamed run; "slow": a long run), then a hostile
peer as CASE says, and, while that peer is still connected, a well-behaved client's short call. It
prints one JSON line: the short call's time alone and beside the peer, what the peer got, and the
worker's log lines. The test asserts on that line; bench/worker_peers.py prints the same cases' ratios.
"""

from __future__ import annotations

import json
import logging
import os
import resource
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from multiprocessing.connection import Connection, answer_challenge, deliver_challenge
from pathlib import Path

from engine.contract.worker.client import EngineClient
from engine.contract.worker.errors import RunCancelled
from engine.contract.worker.protocol import PROTOCOL_VERSION, connect
from engine.runtime.worker.jobs import MEASURED
from engine.runtime.worker.models import WorkerSettings
from engine.runtime.worker.peers import PendingHandshakes
from engine.runtime.worker.server import CONNECTION_STACK_BYTES, start_in_thread

KEY = b"worker-peers-key-0123456789abcdef"
LOG: list[str] = []
DRIP = {"emitted": 0, "outcome": None}  # the drip run's events so far, and how it ended
RUNNING: dict = {}  # the worker of this child (main sets it): the burst case reads its queue's order
ORDER: dict[str, list] = {"submitted": [], "ran": []}  # the burst's calls by `seq`, as queued and as run
BURST_CLIENTS = 8  # the burst's calls come from this many client names, each with calls in a row
CLIENT_MEMORY_BYTES = 1 << 30  # a client process's address space (it imports no torch)
CLIENT_CPU_S = 60  # and its CPU seconds; the case kills it at its end anyway
# A client process: a real connection and call, reading until the stream has begun, then saying so.
STREAMING_CLIENT = """
import sys
from engine.contract.worker.protocol import WORKER_TYPES, Channel, connect
channel = Channel(connect((sys.argv[1], int(sys.argv[2])), bytes.fromhex(sys.argv[3])), WORKER_TYPES)
channel.send("call", method="drip", args={}, client="stopped")
while channel.recv()["type"] != "progress":
    pass
print("streaming", flush=True)
while True:
    channel.recv()
"""


class Remember(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        LOG.append(self.format(record))


def short(ctx, args):
    if "seq" in args:
        ORDER["ran"].append(args["seq"])
    time.sleep(0.02)
    return {"ok": True}


def flood(ctx, args):
    """`mb` MB of events (64: a 4000-token run streamed to a client, many times over)."""
    pad = "x" * 65536
    for i in range(16 * int(args.get("mb", 64))):
        ctx.check_cancelled()
        ctx.emit("progress", done=i, total=1000, pad=pad)
    return {"ok": True}


def drip(ctx, args):
    """A long streamed run: an 8 KB event every 10 ms (800 KB/s, so 10 s of it stays under the send
    buffer's bound: the send deadline drops a client that does not read, not the bound), up to 60 s."""
    pad = "d" * 8192
    try:
        for i in range(6000):
            ctx.check_cancelled()
            ctx.emit("progress", done=i, total=6000, pad=pad)
            DRIP["emitted"] = i + 1
            time.sleep(0.01)
    except RunCancelled:
        DRIP["outcome"] = "cancelled"
        raise
    DRIP["outcome"] = "done"
    return {"ok": True}


def slow(ctx, args):
    for _ in range(120):
        ctx.check_cancelled()
        time.sleep(0.05)
    return {"ok": True}


def start():
    logger = logging.getLogger("prefill_decode.worker")
    logger.addHandler(Remember())
    logger.setLevel(logging.INFO)
    settings = WorkerSettings(presets=False, max_prompt_tokens=64)
    running = start_in_thread(KEY, settings, measured={**MEASURED, "short": short, "flood": flood, "slow": slow,
                                                           "drip": drip})
    return running


def short_call_s(address, name: str = "good") -> float:
    started = time.monotonic()
    events = list(EngineClient(address, KEY, client_name=name).call("short", {}))
    assert events[-1][0] == "done", events
    return time.monotonic() - started


def raw(address, source: str = "127.0.0.2") -> socket.socket:
    sock = socket.create_connection(address, timeout=10, source_address=(source, 0))
    sock.settimeout(None)
    return sock


def keyed(address, source: str = "127.0.0.2") -> Connection:
    conn = Connection(raw(address, source).detach())
    answer_challenge(conn, KEY)
    deliver_challenge(conn, KEY)
    return conn


def frame(kind: str, **fields) -> bytes:
    return json.dumps({"v": PROTOCOL_VERSION, "type": kind, **fields}).encode()


# --- the cases: each returns what the hostile peer saw (and keeps it connected until the good call is in) ---

def unread(address, good, mb: int = 64):
    """A keyed client that calls a streamed run and never reads (a small receive buffer): `mb` MB of
    events, past the send buffer's bound (the send deadline: the `stopped` case). The short call starts
    once the worker has dropped that client (it is still connected): the time until then is the
    flood's own turn in the queue, measured apart (`dropped_after_s`), as any run ahead of it would be."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connecting: a small window
    sock.connect(address)
    conn = Connection(sock.detach())
    answer_challenge(conn, KEY)
    deliver_challenge(conn, KEY)
    conn.send_bytes(frame("call", method="flood", args={"mb": mb}, client="hostile"))
    sent = time.monotonic()  # the flood runs, its events piling up unread, until the worker drops its client
    while not any("dropped" in line for line in LOG) and time.monotonic() - sent < 60:
        time.sleep(0.01)
    dropped_s = time.monotonic() - sent  # the flood's own turn in the queue, as any run ahead would be
    return {"good_s": good(), "peer": "connected", "dropped_after_s": round(dropped_s, 3)}


def silent_flood(address, good):
    """300 connections that never answer the key challenge."""
    socks = []
    for i in range(300):
        try:
            socks.append(raw(address, f"127.0.0.{2 + i % 40}"))
        except OSError:
            pass
    return {"good_s": good(), "opened": len(socks)}


def idle_keyed(address, good):
    """Keyed connections that never send their call, as many as the worker lets through, past the door's
    pending bound (set here to 64 in all and 8 per address, so 300 connections cross it): the oldest
    ones are closed, and a keyed client still gets in."""
    RUNNING["worker"].door.pending = PendingHandshakes(total=64, per_host=8)
    conns = []
    for i in range(300):
        try:
            conns.append(keyed(address, f"127.0.0.{2 + i % 40}"))
        except (OSError, EOFError):
            pass
    return {"good_s": good(), "keyed": len(conns)}


def frames(address, good):
    """Every kind of frame a call may not be, each answered by one keyed error; then a good call."""
    answers = {}
    sends = {
        "huge": lambda c: c._send(b"\x0e\xe6\xb2\x80"),  # a length prefix of 250 MB
        "deep": lambda c: c.send_bytes(b'{"v": %d, "type": "call", "args": ' % PROTOCOL_VERSION + b"[" * 100_000),
        "digits": lambda c: c.send_bytes(frame("call", method="trace", args={})[:-1] + b', "n": ' + b"9" * 5000 + b"}"),
        "prompt": lambda c: c.send_bytes(frame("call", method="trace", args={"prompt": "a" * 70_000})),
        "preview": lambda c: c.send_bytes(frame("call", method="token_preview", args={"prompt": "b" * 300_000})),
        "seed": lambda c: c.send_bytes(frame("call", method="trace", args={"prompt": "hi", "config": {"seed": 2**40}})),
        "target": lambda c: c.send_bytes(frame("call", method="token_preview", args={"prompt": "hi",
                                                                                     "target_tokens": 10**9})),
    }
    for name, send in sends.items():
        conn = connect(address, KEY)
        send(conn)
        reply = json.loads(conn.recv_bytes(1 << 20))
        answers[name] = reply.get("error", {}).get("key")
        conn.close()
    return {"good_s": good(), "answers": answers}


def threads(address, good):
    """Keyed calls while no thread can be started: each refused in one keyed error, and the worker
    serves again after (no thread is needed before a call is in: the door serves the key challenge)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (vm_bytes() + (512 << 20), hard))  # 512 MB more address space ...
    threading.stack_size(1 << 30)  # ... and every new thread asks for 1 GiB of stack: none can start
    answers = []
    try:
        for i in range(20):
            conn = keyed(address, f"127.0.0.{2 + i}")
            conn.send_bytes(frame("call", method="short", args={}, client="hostile"))
            answers.append(json.loads(conn.recv_bytes(1 << 20)).get("error", {}).get("key"))
            conn.close()
    finally:
        threading.stack_size(0)
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    return {"good_s": good(), "opened": len(answers), "answers": sorted(set(answers))}


def stall(address, good):
    """The whole worker process stopped for 4 s (SIGSTOP) during a run: that run is discarded."""
    subprocess.Popen(["sh", "-c", f"sleep 1; kill -STOP {os.getpid()}; sleep 4; kill -CONT {os.getpid()}"])
    try:
        list(EngineClient(address, KEY).call("slow", {}))
        got = None
    except Exception as err:  # noqa: BLE001 - the answer this case is about
        got = getattr(err, "key", type(err).__name__)
    return {"good_s": good(), "slow": got}


def stopped(address, good):
    """A client PROCESS over a real TCP connection, stopped (SIGSTOP) during a long streamed run: the
    worker's runner goes on, the send deadline drops that client and cancels only its run, and another
    client's short call finishes while the stopped one is still connected."""
    client = subprocess.Popen([sys.executable, "-c", STREAMING_CLIENT, *map(str, address), KEY.hex()],
                              stdout=subprocess.PIPE, text=True, preexec_fn=bounded_client)
    try:
        assert client.stdout.readline().strip() == "streaming"
        client.send_signal(signal.SIGSTOP)
        stopped_at, emitted_at_stop = time.monotonic(), DRIP["emitted"]
        pinged = EngineClient(address, KEY).ping() is not None and not any("did not read" in line for line in LOG)
        while not any("did not read" in line for line in LOG) and time.monotonic() - stopped_at < 60:
            time.sleep(0.05)
        dropped_s = time.monotonic() - stopped_at
        while DRIP["outcome"] is None and time.monotonic() - stopped_at < 60:
            time.sleep(0.01)
        good_s = good()
        return {"good_s": good_s, "dropped_after_s": round(dropped_s, 2), "drip": DRIP["outcome"],
                "emitted_while_stopped": DRIP["emitted"] - emitted_at_stop, "peer_alive": client.poll() is None,
                "pinged_while_stopped": pinged}
    finally:
        client.kill()  # SIGKILL ends a stopped process too
        client.wait()


def burst(address, good, calls: int = 64):
    """`calls` calls at the same moment from one host (127.0.0.1), as a class's replica sends them:
    BURST_CLIENTS names, each with its calls in a row. What each got, and whether each client's calls
    ran in the order the worker took them in (its arrival order)."""
    queue = RUNNING["worker"].queue
    submit = queue.submit

    def recorded(waiter):
        with RECORD_LOCK:
            ORDER["submitted"].append(waiter.args.get("seq"))
            submit(waiter)
    queue.submit = recorded
    return {"good_s": 0.0, **burst_outcome(address, calls)}


RECORD_LOCK = threading.Lock()


def burst_outcome(address, calls: int) -> dict:
    gate = threading.Barrier(calls)
    got: list = [None] * calls

    def one(seq: int) -> None:
        client = EngineClient(address, KEY, client_name=f"c{seq % BURST_CLIENTS}")
        gate.wait()
        try:
            got[seq] = list(client.call("short", {"seq": seq}))[-1][0]
        except Exception as err:  # noqa: BLE001 - what each call got is the case's answer
            got[seq] = f"{type(err).__name__}: {getattr(err, 'key', '')}"
    threads_ = [threading.Thread(target=one, args=(seq,)) for seq in range(calls)]
    for thread in threads_:
        thread.start()
    for thread in threads_:
        thread.join(120)
    in_order = all(by_client(ORDER["ran"], c) == by_client(ORDER["submitted"], c) for c in range(BURST_CLIENTS))
    return {"answers": dict(sorted(Counter(map(str, got)).items())), "in_order": in_order,
            "ran": len(ORDER["ran"])}


def by_client(seqs: list, client: int) -> list:
    return [s for s in seqs if s is not None and s % BURST_CLIENTS == client]


CROWD = 40  # calls a crowd keeps in the queue at every moment (each of its threads calls again once answered)


def crowd_s(address, name_of, calls: int = CROWD) -> float:
    """The honest client's short call (replica "honest", name "good") while a crowd on another replica
    keeps `calls` calls waiting, its n-th call under `name_of(n)`: the honest call's seconds."""
    stop, numbers = threading.Event(), iter(range(1 << 30))

    def one_after_another() -> None:
        while not stop.is_set():
            n = next(numbers)
            client = EngineClient(address, KEY, client_name=name_of(n))
            client.replica = "crowd"
            list(client.call("short", {"n": n}))
    crowd = [threading.Thread(target=one_after_another, daemon=True) for _ in range(calls)]
    for thread in crowd:
        thread.start()
    queue = RUNNING["worker"].queue
    while len(queue) < calls * 3 // 4:  # the crowd is in the queue
        time.sleep(0.01)
    honest = EngineClient(address, KEY, client_name="good")
    honest.replica = "honest"
    started = time.monotonic()
    assert list(honest.call("short", {}))[-1][0] == "done"
    took = time.monotonic() - started
    stop.set()
    for thread in crowd:
        thread.join(30)
    return took


def crowd_case(name_of):
    """A crowd case: the honest call beside the crowd (`good_s`) and beside one well-behaved busy client
    (`busy_s`: one name keeping as many calls waiting), measured one after the other."""
    def case(address, good):
        busy_s = crowd_s(address, lambda n: "busy")
        return {"good_s": crowd_s(address, name_of), "busy_s": round(busy_s, 3)}
    return case


crowd_one_name = crowd_case(lambda n: "crowd")
crowd_own_name = crowd_case(lambda n: "good")  # the honest client's own name, from another replica
crowd_fresh_names = crowd_case(lambda n: f"visitor-{n}")  # a fresh name per call (a new browser session each)
for _name, _case in (("crowd_one_name", crowd_one_name), ("crowd_own_name", crowd_own_name),
                     ("crowd_fresh_names", crowd_fresh_names)):
    _case.__name__ = _name


def bounded_client() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CLIENT_MEMORY_BYTES, CLIENT_MEMORY_BYTES))
    resource.setrlimit(resource.RLIMIT_CPU, (CLIENT_CPU_S, CLIENT_CPU_S))


def vm_bytes() -> int:
    """This process's address space now (VmSize)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    raise OSError("no VmSize")


CASES = {f.__name__: f for f in (unread, silent_flood, idle_keyed, frames, threads, stall, stopped, burst,
                                 crowd_one_name, crowd_own_name, crowd_fresh_names)}


def main(name: str, *numbers: str) -> None:
    running = start()
    RUNNING["worker"] = running.worker
    threading.stack_size(CONNECTION_STACK_BYTES)  # as serve_worker sets it (start_in_thread leaves it)
    alone = min(short_call_s(running.address) for _ in range(3))
    started = time.monotonic()
    result = CASES[name](running.address, lambda: short_call_s(running.address), *map(int, numbers))
    result.update(alone_s=round(alone, 3), case_s=round(time.monotonic() - started, 2), log=LOG[-40:])
    result["good_s"] = round(result["good_s"], 3)
    print(json.dumps(result))
    sys.stdout.flush()
    os._exit(0)  # the hostile connections die with the process


if __name__ == "__main__":
    main(*sys.argv[1:])

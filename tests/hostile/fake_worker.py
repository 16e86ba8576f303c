"""A hostile engine worker for the client's side: `python -m tests.hostile.fake_worker CASE` runs one case.

The fake holds the token (it passes the key challenge both ways, as a worker that was broken into,
or a buggy one, would), then answers the one call as CASE says. The client in the same process
calls it, and the child prints one JSON line: what the client raised (class, key, why), how long
it took, how many events it yielded. No torch is imported: the client's side never needs it.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from multiprocessing.connection import Connection, answer_challenge, deliver_challenge
from pathlib import Path

from engine.contract.trace import RequestTrace
from engine.contract.worker.client import EngineClient, Pass
from engine.contract.worker.protocol import PROTOCOL_VERSION, ModelRef

KEY = b"fake-worker-key-0123456789abcdef"
ROOT = Path(__file__).resolve().parents[2]
TRACE = json.loads((ROOT / "assets" / "gallery" / "cpu" / "lesson-en-4.json").read_text(encoding="utf-8"))


def frame(kind: str, **fields) -> bytes:
    return json.dumps({"v": PROTOCOL_VERSION, "type": kind, **fields}).encode()


def header() -> dict:
    return {k: v for k, v in TRACE.items() if k != "steps"}


def step(i: int, start_ms: float) -> dict:
    base = dict(TRACE["steps"][min(i, 1)])
    return {**base, "index": i, "phase": "prefill" if i == 0 else "decode", "start_ms": start_ms,
            "end_ms": start_ms + 1.0}


def trace_with(steps: list[dict]) -> dict:
    return {**TRACE, "steps": steps}


# --- what the fake does once the call is in: each case one function of the connection ---

def silent(conn: Connection) -> None:
    time.sleep(30)  # keyed, then nothing at all


def queued_forever(conn: Connection) -> None:
    while True:
        conn.send_bytes(frame("queued", ahead=3))
        time.sleep(0.05)


def endless_pass(conn: Connection) -> None:
    conn.send_bytes(frame("queued", ahead=0))
    conn.send_bytes(frame("started"))
    n = 0
    while True:
        conn.send_bytes(frame("pass", steps=[step(n + k, float(n + k) * 2) for k in range(64)],
                              header=header() if n == 0 else None))
        n += 64


def huge_frame(conn: Connection) -> None:
    conn.send_bytes(frame("started"))
    conn._send(b"\x7f\xff\xff\xff")  # a length prefix of 2 GiB, then nothing of it
    time.sleep(30)


def many_steps(conn: Connection) -> None:
    conn.send_bytes(frame("started"))
    conn.send_bytes(frame("done", result=trace_with([step(i, i * 2.0) for i in range(5000)])))


def not_finite(conn: Connection) -> None:
    conn.send_bytes(frame("started"))
    conn.send_bytes(b'{"v": %d, "type": "done", "result": {"steps": [], "tokenize_ms": NaN}}' % PROTOCOL_VERSION)


def negative(conn: Connection) -> None:
    conn.send_bytes(frame("started"))
    steps = [step(0, 0.0), {**step(1, 5.0), "end_ms": -999999.0}]
    conn.send_bytes(frame("done", result=trace_with(steps)))


def stalled(conn: Connection) -> None:
    conn.send_bytes(frame("started"))
    time.sleep(6.5)  # no heartbeat: the worker stood still inside the run
    conn.send_bytes(frame("done", result=trace_with([step(0, 0.0), step(1, 2.0)])))


def heartbeat_then_done(conn: Connection) -> None:
    conn.send_bytes(frame("started"))
    for _ in range(8):  # a long pass, with the worker's heartbeat: kept alive, not stalled
        time.sleep(0.5)
        conn.send_bytes(frame("alive"))
    conn.send_bytes(frame("done", result=trace_with([step(0, 0.0), step(1, 2.0)])))


CASES = {f.__name__: f for f in (silent, queued_forever, endless_pass, huge_frame, many_steps, not_finite, negative,
                                 stalled, heartbeat_then_done)}


# (silence_s, max_call_s) of the client per case; the rest: 3 s of silence, 4 s in all
CLOCKS = {"endless_pass": (3.0, 60.0), "stalled": (20.0, 60.0), "heartbeat_then_done": (3.0, 60.0)}


def serve_one(listener: socket.socket, case) -> None:
    sock, _ = listener.accept()
    conn = Connection(sock.detach())
    try:
        deliver_challenge(conn, KEY)
        answer_challenge(conn, KEY)
        conn.recv_bytes(1 << 20)  # the call
        case(conn)
    except (OSError, EOFError):
        pass  # the client gave up: what it raised is the case's answer


def main(name: str) -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    threading.Thread(target=serve_one, args=(listener, CASES[name]), daemon=True).start()
    silence_s, max_call_s = CLOCKS.get(name, (3.0, 4.0))
    client = EngineClient(listener.getsockname(), KEY, silence_s=silence_s, max_call_s=max_call_s)
    started, events, outcome = time.monotonic(), 0, {}
    try:
        for event in client.stream_trace(ModelRef(), "hello"):
            events += 1
            assert not isinstance(event, Pass) or isinstance(event.trace, RequestTrace)
        outcome = {"raised": None}
    except Exception as err:  # noqa: BLE001 - the answer this case is about
        outcome = {"raised": type(err).__name__, "key": getattr(err, "key", None),
                   "why": getattr(err, "params", {}).get("why"), "message": str(err)[:300]}
    print(json.dumps({**outcome, "seconds": round(time.monotonic() - started, 2), "events": events}))


if __name__ == "__main__":
    main(sys.argv[1])

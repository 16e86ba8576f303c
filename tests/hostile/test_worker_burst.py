"""A class that presses Run at once: a burst of calls from one host is queued, never refused, and never
costs the worker its life.

    64 measured calls at the same moment from one host (a real worker in a child process,
    tests/hostile/worker_peers.py's `burst` case): all complete, each client's in its arrival order.
    64 calls at once to the app's own local worker (a real worker process): all answered, its pid unchanged
    (a connection closed during the key challenge used to read as "stuck" and get the worker killed).
"""

from __future__ import annotations

import json
import threading
from collections import Counter

import pytest

from engine.contract.worker.client import EngineClient
from engine.contract.worker.local import LocalWorker
from tests.hostile.bounded import python

pytestmark = pytest.mark.slow  # real workers: each imports torch
BURST = 64


def test_a_burst_of_64_calls_from_one_host_all_complete_in_order_within_each_client():
    # 64 client threads, 64 sessions and their senders in one process: more address space than the default
    outcome = python("-m", "tests.hostile.worker_peers", "burst", str(BURST), memory_mb=4096, timeout_s=180.0)
    assert not outcome.timed_out and outcome.returncode == 0, outcome.describe()
    got = json.loads(outcome.stdout.strip().splitlines()[-1])
    assert got["answers"] == {"done": BURST}, got  # none refused, none unreachable
    assert got["ran"] == BURST and got["in_order"], got
    assert not any("wrong or missing token" in line for line in got["log"]), got  # no false accusation


def test_a_burst_at_the_apps_local_worker_is_answered_and_never_replaces_it():
    client = EngineClient(None, None, local=LocalWorker(preload=("none",), device="cpu"))
    try:
        pid = client.ping()["pid"]
        answers = burst_of_pings(client, BURST)
        assert answers == Counter({"ok": BURST}), answers
        assert client.local.pid == pid and client.ping()["pid"] == pid  # the same worker, never killed
    finally:
        client.close()


def burst_of_pings(client: EngineClient, calls: int) -> Counter:
    gate = threading.Barrier(calls)
    answers: Counter = Counter()
    lock = threading.Lock()

    def one(i: int) -> None:
        named = client.named(f"visitor-{i}")
        gate.wait()
        try:
            named.ping()
            got = "ok"
        except Exception as err:  # noqa: BLE001 - what each call got is the test's answer
            got = f"{type(err).__name__}: {getattr(err, 'key', err)}"
        with lock:
            answers[got] += 1
    threads = [threading.Thread(target=one, args=(i,)) for i in range(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    return answers

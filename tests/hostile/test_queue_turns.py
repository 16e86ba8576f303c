"""Fair turns that no name can game (engine/runtime/worker/queue.py, the worker's queue itself).

A flood keeps FLOOD calls waiting at every moment (a new one whenever one of its calls starts), from
another peer of the same host (one classroom's replicas all reach the worker from 127.0.0.1). An
honest client's call arrives while a call runs. Counted, not timed: how many of the flood's calls
start before the honest one, against the same count beside one well-behaved busy client (one name,
FLOOD calls waiting). Goal: at most 2x that, whatever names the flood uses.
"""

from __future__ import annotations

import itertools

import pytest

from engine.runtime.worker.queue import JobQueue, Waiter

FLOOD = 40
HONEST = ("127.0.0.1", "replica-honest", "honest")


def waiter(n: int, client: tuple[str, ...]) -> Waiter:
    return Waiter("trace", {"n": n}, lambda kind, fields: None, client=client)


def ahead_of_honest(flood_client) -> int:
    """The flood's calls that start before the honest call (the one running when it arrives not counted)."""
    queue, numbers = JobQueue(), itertools.count()
    for _ in range(FLOOD):
        n = next(numbers)
        queue.submit(waiter(n, flood_client(n)))
    queue.take()  # one of the flood's calls runs when the honest call arrives
    queue.finish()
    queue.submit(waiter(next(numbers), flood_client(next(numbers))))  # the flood keeps FLOOD waiting
    honest = waiter(-1, HONEST)
    queue.submit(honest)
    started = 0
    while queue.take().waiters[0] is not honest:
        queue.finish()
        started += 1
        n = next(numbers)
        queue.submit(waiter(n, flood_client(n)))
        assert started < 10 * FLOOD, "the honest call never started"
    return started


FLOODS = {
    "one name": lambda n: ("127.0.0.1", "replica-flood", "flood"),
    "the honest client's own name": lambda n: ("127.0.0.1", "replica-flood", "honest"),
    "a fresh name per call": lambda n: ("127.0.0.1", "replica-flood", f"visitor-{n}"),
    "a fresh replica and name per call, from another host": lambda n: ("127.0.0.2", f"replica-{n}", f"v-{n}"),
}


@pytest.mark.parametrize("flood", FLOODS, ids=list(FLOODS))
def test_an_honest_call_starts_within_2x_of_its_turn_beside_one_busy_client_whatever_names_a_flood_uses(flood):
    beside_busy = ahead_of_honest(lambda n: ("127.0.0.1", "replica-busy", "busy"))
    assert beside_busy <= 1  # one turn of the busy client's at most
    assert ahead_of_honest(FLOODS[flood]) <= 2 * max(beside_busy, 1), flood


def test_a_new_client_joins_the_rotation_at_its_arrival_not_at_the_front():
    queue = JobQueue()
    a1, a2, b1, b2 = (waiter(i, ("h", "r", name)) for i, name in enumerate("aabb"))
    for w in (a1, a2, b1, b2):
        queue.submit(w)
    assert [queue.take().waiters[0] for _ in range(2)] == [a1, b1]
    late = waiter(9, ("h", "r", "c"))
    queue.submit(late)  # never served, but it came after a's and b's second calls: it goes after them
    assert [queue.take().waiters[0] for _ in range(3)] == [a2, b2, late]


def test_the_rotation_holds_only_clients_with_work_waiting():
    queue = JobQueue()
    for n in range(20_000):  # a fresh name per call, each call served before the next comes
        queue.submit(waiter(n, ("127.0.0.1", "replica", f"visitor-{n}")))
        queue.take()
        queue.finish()
        assert len(queue._turns) == 0  # nobody waits: nobody is held in the rotation
    for n in range(5):
        queue.submit(waiter(n, ("127.0.0.1", "replica", f"v-{n}")))
    assert len(queue._turns) == 1 + 1 + 5  # the host, its replica, five names: what waits, no more

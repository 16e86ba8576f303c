"""The worker's queue policy (engine/runtime/worker/queue.py), without a model or a socket.

What it proves: short lesson runs go before long jobs, round-robin by client; identical calls share
one measurement (every waiter hears every event, a late one too, and `done` says how many it
served), different seeds or settings never do; a shared measurement is cancelled only when every
waiter left; the history names no visitor.
"""

from __future__ import annotations

import threading

from engine.contract.engine_queue import QueueHistory
from engine.runtime.worker.queue import JobQueue, Turns, Waiter, ordered, share_key

GREEDY = {"model": {"choice": "default", "device": "cpu", "dtype": "auto"}, "prompt": "法国的首都是",
          "config": {"max_new_tokens": 8, "temperature": 0.0}, "repeats": 5}


def waiter(method: str, args: dict | None = None, client: str = "") -> Waiter:
    heard: list = []
    w = Waiter(method, dict(args or {}), lambda kind, fields: heard.append((kind, fields)), client=client)
    w.heard = heard
    return w


def kinds(w: Waiter) -> list[str]:
    return [k for k, _ in w.heard]


def test_the_key_is_the_canonical_arguments_and_never_spans_seeds_or_settings():
    same_order = {"repeats": 5, "config": {"temperature": 0.0, "max_new_tokens": 8}, "prompt": "法国的首都是",
                  "model": GREEDY["model"]}
    assert share_key("trace_repeats", GREEDY) == share_key("trace_repeats", same_order)
    sampled = {**GREEDY, "config": {"max_new_tokens": 8, "temperature": 1.0, "seed": 1}}
    other_seed = {**GREEDY, "config": {"max_new_tokens": 8, "temperature": 1.0, "seed": 2}}
    assert share_key("trace_repeats", sampled) != share_key("trace_repeats", other_seed)
    assert share_key("trace_repeats", GREEDY) != share_key("trace_repeats", {**GREEDY, "repeats": 4})
    assert share_key("trace_repeats", GREEDY) != share_key("trace", GREEDY)  # one key per job kind
    assert share_key("gate", {}) is None  # a method the queue does not know is never shared


def test_short_runs_go_before_long_jobs_and_take_turns_by_client():
    queue = JobQueue()
    long_a, long_b = waiter("serve_workload", {"n": 1}, "a"), waiter("sweep", {"n": 2}, "b")
    short = [waiter("trace", {"p": i}, c) for i, c in enumerate("aaab")]
    for w in (long_a, long_b, *short):
        queue.submit(w)
    order = [queue.take() for _ in range(6)]  # b's long job first: a was served last (its three short ones)
    assert [m.waiters[0] for m in order] == [short[0], short[3], short[1], short[2], long_b, long_a]


def test_round_robin_puts_the_client_served_last_at_the_back():
    jobs = [waiter("trace", {"p": i}, c) for i, c in enumerate("aab")]
    queue = JobQueue()
    for w in jobs:
        queue.submit(w)
    assert [queue.take().waiters[0] for _ in range(3)] == [jobs[0], jobs[2], jobs[1]]
    assert ordered([], Turns()) == []


def test_a_short_run_waits_only_for_the_running_unit_and_long_ones_hear_their_new_place():
    queue = JobQueue()
    running = waiter("serve_workload", {"n": 1})
    queue.submit(running)
    queue.take()
    long_wait, short = waiter("sweep", {"n": 2}), waiter("trace", {"p": 1})
    queue.submit(long_wait)
    queue.submit(short)
    assert short.heard == [("queued", {"ahead": 1})]  # only the measuring one before it
    assert long_wait.heard == [("queued", {"ahead": 1}), ("queued", {"ahead": 2})]
    assert queue.take_short().waiters == [short]  # at the long job's next unit boundary
    assert queue.take_short() is None  # the long one waiting is not run in a pause


def test_identical_calls_share_one_measurement_and_a_late_joiner_hears_it_all():
    queue = JobQueue()
    first = waiter("trace", GREEDY)
    queue.submit(first)
    measurement = queue.take()
    measurement.send("started")
    measurement.send("pass", steps=[1], header={"h": 1})
    late = waiter("trace", GREEDY)
    queue.submit(late)
    assert len(queue) == 1 and measurement.waiters == [first, late]
    measurement.send("done", result="r")
    assert kinds(late) == ["queued", "started", "pass", "done"] and late.heard[0] == ("queued", {"ahead": 0})
    done = dict(first.heard)["done"]
    assert done["result"] == "r" and done["shared"]["visitors"] == 2
    assert done["shared"]["measured_at"] > 1e9  # seconds since the epoch: the page says HH:MM:SS


def test_a_lone_run_says_nothing_about_sharing():
    queue = JobQueue()
    only = waiter("trace", GREEDY)
    queue.submit(only)
    queue.take().send("done", result="r")
    assert dict(only.heard)["done"] == {"result": "r"}


def test_a_shared_run_is_cancelled_only_when_every_waiter_left():
    queue = JobQueue()
    a, b = waiter("serve_workload", {"w": 1}), waiter("serve_workload", {"w": 1})
    queue.submit(a)
    queue.submit(b)
    measurement = queue.take()
    a.cancelled.set()
    assert queue.remove(a) and not measurement.cancelled.is_set()  # b still wants it
    b.cancelled.set()
    assert not queue.remove(b) and measurement.cancelled.is_set()  # the last one: it stops at its next pass
    newcomer = waiter("serve_workload", {"w": 1})
    queue.submit(newcomer)  # never joins a run that is stopping
    assert len(queue) == 2 and newcomer.heard == [("queued", {"ahead": 1})]


def test_a_waiting_call_that_leaves_is_dropped_and_the_others_move_up():
    queue = JobQueue()
    held, gone, behind = waiter("sweep", {"n": 0}), waiter("trace", {"p": 1}), waiter("trace", {"p": 2})
    queue.submit(held)
    queue.take()
    queue.submit(gone)
    queue.submit(behind)
    assert queue.remove(gone) and behind.heard[-1] == ("queued", {"ahead": 1})
    assert len(queue) == 2


def test_the_history_has_kinds_waits_runs_and_pauses_and_names_no_visitor():
    queue = JobQueue()
    long_job = waiter("serve_workload", {"workload": "secret prompt"}, client="10.0.0.7")
    queue.submit(long_job)
    serving = queue.take()
    serving.send("started")
    queue.submit(waiter("trace", {"prompt": "secret prompt"}, client="10.0.0.8"))
    resume = queue.paused(serving)
    short = queue.take_short()
    short.send("started")
    short.send("done", result=1)
    queue.finish()
    resume()
    plain = queue.history()
    assert "secret" not in str(plain) and "10.0.0" not in str(plain)
    history = QueueHistory.from_plain(plain)
    assert [(j.kind, j.lane, j.outcome) for j in history.jobs] == [("serving", "long", "running"),
                                                                     ("lesson", "short", "done")]
    serving_job = history.jobs[0]
    assert len(serving_job.pauses) == 1 and serving_job.run_s is not None and history.jobs[1].run_s is not None


def test_submitting_from_many_threads_keeps_every_waiter():
    queue = JobQueue()
    waiters = [waiter("trace", GREEDY) for _ in range(16)] + [waiter("trace", {"p": i}) for i in range(16)]
    threads = [threading.Thread(target=queue.submit, args=(w,)) for w in waiters]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(queue) == 17  # the 16 identical ones are one measurement
    taken = [queue.take() for _ in range(17)]
    assert sum(len(m.waiters) for m in taken) == 32


def test_a_call_that_comes_after_the_last_message_is_a_new_measurement():
    queue = JobQueue()
    first = waiter("trace", GREEDY)
    queue.submit(first)
    measurement = queue.take()
    measurement.send("started")
    measurement.send("done", result="r")  # sent, but the runner has not called finish() yet
    late = waiter("trace", GREEDY)
    queue.submit(late)
    assert measurement.waiters == [first] and late.heard == [("queued", {"ahead": 1})]
    queue.finish()
    assert queue.take().waiters == [late]  # measured anew: it would otherwise never hear an end


def test_a_waiter_that_hangs_up_after_the_result_still_counts_as_served():
    queue = JobQueue()
    a, b = waiter("trace", GREEDY), waiter("trace", GREEDY)
    queue.submit(a)
    queue.submit(b)
    measurement = queue.take()
    measurement.send("started")
    measurement.send("done", result="r")
    assert not queue.remove(a)  # its connection closed after the result: nothing to cancel
    queue.finish()
    assert QueueHistory.from_plain(queue.history()).jobs[0].visitors == 2


def test_a_calls_turn_is_its_peers_address_then_its_replica_then_its_name():
    from engine.runtime.worker.server import turn_of
    assert turn_of("127.0.0.1", {"replica": "r1", "client": "page-7"}) == ("127.0.0.1", "r1", "page-7")
    assert turn_of("10.0.0.5", {"client": 5, "replica": "x" * 200}) == ("10.0.0.5", "x" * 64, "")  # bounded text

"""The client holds against a hostile engine worker (one that holds the token): each case in a child
process with bounded memory and time (tests/hostile/fake_worker.py), one keyed error, never a hang,
never a traceback, never a bad number drawn."""

from __future__ import annotations

import json

import pytest

from engine.contract.worker.errors import RunStalled, WorkerSilent, WorkerUnreachable
from lesson.messages import error_message
from tests.hostile.bounded import python

MEMORY_MB = 768  # the client's side imports no torch


def run_case(name: str, timeout_s: float = 40.0) -> dict:
    outcome = python("-m", "tests.hostile.fake_worker", name, memory_mb=MEMORY_MB, timeout_s=timeout_s)
    assert not outcome.timed_out and outcome.returncode == 0, outcome.describe()
    assert "Traceback" not in outcome.stderr, outcome.describe()
    return json.loads(outcome.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name, key, within_s", [
    ("silent", "engine_silent", 15.0),  # keyed, then nothing: "the engine stopped answering" within the deadline
    ("queued_forever", "engine_silent", 15.0),  # past the longest call, however many `queued` it sends
])
def test_a_worker_that_says_nothing_useful_is_given_up_on_within_the_deadline(name, key, within_s):
    got = run_case(name)
    assert got["key"] == key and got["seconds"] < within_s, got


def test_endless_passes_stop_at_the_engines_own_step_cap():
    got = run_case("endless_pass", timeout_s=60.0)  # memory bounded by the child's ceiling too
    assert (got["key"], got["why"]) == ("protocol_malformed", "meaning") and got["events"] <= 4096 + 2, got


def test_a_frame_over_the_bound_is_refused_from_its_length_unread():
    got = run_case("huge_frame")
    assert got["key"] == "protocol_too_large" and got["seconds"] < 10, got


def test_a_trace_over_the_step_cap_is_refused_before_it_is_built():
    got = run_case("many_steps")
    assert (got["key"], got["why"]) == ("protocol_malformed", "meaning") and "5,000 steps" in got["message"], got


@pytest.mark.parametrize("name, why", [("not_finite", "limit_not_finite"), ("negative", "meaning")])
def test_results_that_cannot_be_true_are_refused_before_anything_is_drawn(name, why):
    got = run_case(name)
    assert (got["key"], got["why"]) == ("protocol_malformed", why), got


def test_a_run_the_worker_stood_still_in_is_discarded_and_says_so():
    got = run_case("stalled")
    assert got["raised"] == "RunStalled" and got["key"] == "engine_stalled", got


def test_a_long_pass_kept_alive_by_heartbeats_is_not_a_stall():
    got = run_case("heartbeat_then_done")
    assert got["raised"] is None and got["seconds"] > 3.5, got  # longer than the silence deadline, and fine


def test_the_page_says_the_engine_stopped_answering_and_a_local_worker_gets_the_apps_advice():
    assert "引擎停止响应" in error_message(WorkerSilent("10.0.0.5:8600", 20.0), "zh")
    assert "stopped answering" in error_message(WorkerSilent("10.0.0.5:8600", 20.0), "en")
    local = (WorkerSilent("127.0.0.1:5", 20.0, local=True), WorkerUnreachable("127.0.0.1:5", "EOFError", local=True))
    for err in local:
        for lang in ("zh", "en"):
            words = error_message(err, lang)
            assert "python -m engine worker" not in words and "PREFILL_DECODE_ENGINE" not in words, words
    assert "python -m engine worker" in error_message(WorkerUnreachable("10.0.0.5:8600", "refused"), "en")
    assert "discarded" in error_message(RunStalled(4.0), "en") and "丢弃" in error_message(RunStalled(4.0), "zh")

"""The engine worker holds against hostile peers: each case in a child process with bounded memory and
time (tests/hostile/worker_peers.py runs a real worker, the peer and a well-behaved client), and the
well-behaved client's short call finishes while the hostile peer is still connected.

No timing is asserted beyond a generous deadline (the call "finished within 60 s"); how close it
comes to its time alone is printed by bench/worker_peers.py, side by side.
"""

from __future__ import annotations

import json

import pytest

from tests.hostile.bounded import python

pytestmark = pytest.mark.slow  # each child imports torch (the worker's server does)
DEADLINE_S = 60.0  # generous: a loaded 2-core machine; the call takes some 70 ms alone


def run_case(name: str, timeout_s: float = 120.0) -> dict:
    outcome = python("-m", "tests.hostile.worker_peers", name, timeout_s=timeout_s)
    assert not outcome.timed_out and outcome.returncode == 0, outcome.describe()
    got = json.loads(outcome.stdout.strip().splitlines()[-1])
    assert got["good_s"] < DEADLINE_S, got
    assert not any("Traceback" in line for line in got["log"]), got
    assert "Traceback" not in outcome.stderr, outcome.describe()
    return got


def test_a_client_that_stops_reading_is_dropped_and_only_its_run_is_lost():
    got = run_case("unread")
    assert any("dropped" in line and "unread" in line for line in got["log"]), got


def test_connections_that_never_answer_the_key_challenge_lock_nobody_out():
    got = run_case("silent_flood")
    assert got["opened"] >= 200, got  # the flood got its connections; the keyed client got in anyway


def test_idle_keyed_connections_lock_nobody_out():
    got = run_case("idle_keyed")
    assert got["keyed"] >= 200, got
    assert any("oldest closed" in line for line in got["log"]), got


def test_every_refused_frame_is_one_keyed_error_and_the_worker_goes_on():
    got = run_case("frames")
    assert got["answers"] == {
        "huge": "protocol_too_large", "deep": "protocol_malformed", "digits": "protocol_malformed",
        "prompt": "prompt_too_many_chars", "preview": "prompt_too_many_chars", "seed": "sampling_range",
        "target": "limit_count",
    }, got


def test_a_worker_out_of_threads_refuses_and_lives():
    got = run_case("threads")
    assert got["answers"] == ["engine_busy"], got
    assert any("can't start new thread" in line for line in got["log"]), got


def test_a_run_the_worker_stood_still_in_is_discarded():
    got = run_case("stall")
    assert got["slow"] == "engine_stalled", got
    assert any("stood still" in line for line in got["log"]), got


def test_a_client_process_stopped_mid_stream_over_tcp_is_dropped_at_the_send_deadline():
    got = run_case("stopped")
    assert any("did not read its events" in line for line in got["log"]), got  # the deadline, not the bound
    assert got["drip"] == "cancelled", got  # only its run is lost ...
    assert got["emitted_while_stopped"] > 0, got  # ... and the runner never waited on it
    assert got["pinged_while_stopped"], got  # a light call answered before it was dropped
    assert got["peer_alive"], got  # the short call finished while the stopped client was still connected

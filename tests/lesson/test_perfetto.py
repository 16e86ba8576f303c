"""Chrome Trace Event export (lesson/perfetto.py): a single-request trace and serving runs
(one measured on the default model, one built by hand with a KV hand-off, one observed from a
client) checked against the Trace Event format's required fields and against the traces' own times."""

from __future__ import annotations

import dataclasses
import json
from collections import defaultdict

import pytest

from engine.contract.serving.metrics import compute_kv_memory, compute_serving_metrics
from engine.contract.serving.trace import (
    BatchEntry, BlockSnapshot, BlockTable, Handoff, Iteration, LinkEstimate, ServingRun, ServingSettings,
)
from lesson.perfetto import (
    REQUESTS_PID, SERVER_PID, WORKERS_PID, check_trace_events, request_trace_events, serving_run_events,
    to_perfetto_json,
)
from lesson.formats import fmt_ms
from tests.factories import DEFAULT_MODEL_INFO, make_record, make_trace


def _names(doc, pid):
    """tid -> thread name, from the metadata events."""
    return {e["tid"]: e["args"]["name"] for e in doc["traceEvents"]
            if e["ph"] == "M" and e["name"] == "thread_name" and e["pid"] == pid}


def _slices(doc, pid, tid=None):
    return [e for e in doc["traceEvents"] if e["ph"] == "X" and e["pid"] == pid and (tid is None or e["tid"] == tid)]


def _assert_nested(doc):
    """Slices on one thread either nest or follow each other: Perfetto draws them as a stack."""
    by_thread = defaultdict(list)
    for e in doc["traceEvents"]:
        if e["ph"] == "X":
            by_thread[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"]))
    for spans in by_thread.values():
        spans.sort(key=lambda span: (span[0], -span[1]))  # a parent before the children it starts with
        stack: list[float] = []  # the ends of the slices open here
        for start, end in spans:
            while stack and start >= stack[-1] - 1e-6:
                stack.pop()
            assert not stack or end <= stack[-1] + 1e-6, (start, end, stack)  # inside its parent, or after it
            stack.append(end)


def test_single_request_trace_has_every_required_field_and_its_own_times():
    trace = make_trace(output_pieces=("巴黎", "。", "<script>"))
    doc = json.loads(to_perfetto_json(trace))
    assert check_trace_events(doc) == []
    assert doc["displayTimeUnit"] == "ms"
    assert _names(doc, REQUESTS_PID) == {1: "request r0", 2: "TTFT, part by part"}
    assert _names(doc, WORKERS_PID) == {1: "engine"}
    req = [e for e in _slices(doc, REQUESTS_PID, 1) if e["name"] != "tokenize"]
    assert [e["name"] for e in req] == ["Prefill", "Decode 1", "Decode 2"]
    for event, step in zip(req, trace.steps):  # microseconds = the trace's milliseconds x 1000
        assert event["ts"] == pytest.approx(step.start_ms * 1000) and event["dur"] == pytest.approx(
            step.duration_ms * 1000)
        assert event["args"]["output_token"] == step.output_piece  # a piece is data, kept as text
    assert len(_slices(doc, WORKERS_PID, 1)) == 3
    kv = [e["args"]["engine"] for e in doc["traceEvents"] if e["ph"] == "C" and e["name"] == "KV bytes"]
    assert kv == [0, *(s.kv_bytes for s in trace.steps)]
    batch = [e["args"]["engine"] for e in doc["traceEvents"] if e["ph"] == "C" and e["name"] == "batch size"]
    assert batch == [0, 1, 0, 1, 0, 1, 0]
    _assert_nested(doc)


def test_checker_finds_missing_fields():
    good = request_trace_events(make_trace())
    assert check_trace_events(good) == []
    events = good["traceEvents"]
    x = next(i for i, e in enumerate(events) if e["ph"] == "X")
    c = next(i for i, e in enumerate(events) if e["ph"] == "C")
    broken = json.loads(json.dumps(good))
    del broken["traceEvents"][x]["dur"]
    broken["traceEvents"][c]["args"] = {"engine": "many"}
    del broken["traceEvents"][0]["pid"]
    broken["traceEvents"].append({"ph": "X", "name": "n", "pid": 1, "tid": 1, "ts": -5, "dur": 1})
    problems = check_trace_events(broken)
    assert any(f"event {x}: an X event needs dur" in p for p in problems)
    assert any(f"event {c}: a counter needs args" in p for p in problems)
    assert any("event 0: pid missing" in p for p in problems)
    assert any("ts missing or not a number" in p for p in problems)
    assert check_trace_events({"events": []}) == ["not a JSON object with a traceEvents list"]


def _handoff_run() -> ServingRun:
    """A hand-built disaggregated run: r0 prefilled on 'prefill', its KV handed off, decoded on 'decode';
    r1 waits for its Prefill until r0's is done."""
    r0 = make_record("r0", 0.0, [10.0, 16.0, 18.0])
    r1 = make_record("r1", 1.0, [20.0, 26.0])
    empty = BlockSnapshot(block_size=4, num_blocks=8, num_free_blocks=8)

    def blocks(*tables):
        return BlockSnapshot(4, 8, 8 - sum(len(t.block_ids) for t in tables), tables)

    its = (
        Iteration(0, "prefill", 2.0, 10.0, (BatchEntry("r0", "prefill", 0, 4, 1),),
                  blocks(BlockTable("r0", (0,), (4,))), waiting=("r1",)),
        Iteration(1, "prefill", 10.0, 20.0, (BatchEntry("r1", "prefill", 0, 4, 1),),
                  blocks(BlockTable("r1", (1,), (4,)))),
        Iteration(2, "decode", 14.0, 16.0, (BatchEntry("r0", "decode", 4, 5, 2),),
                  blocks(BlockTable("r0", (0, 2), (4, 1)))),
        Iteration(3, "decode", 16.0, 18.0, (BatchEntry("r0", "decode", 5, 6, 3),), empty),
        Iteration(4, "decode", 24.0, 26.0, (BatchEntry("r1", "decode", 4, 5, 2),), empty),
    )
    per_token = DEFAULT_MODEL_INFO.kv_bytes_per_token
    handoffs = (Handoff("r0", 4, 4 * per_token, 10.5, 13.0, 2.5, (LinkEstimate("nvlink", 9e11, 0.01),)),
                Handoff("r1", 4, 4 * per_token, 20.5, 23.0, 2.5))
    reqs = (r0, r1)
    return ServingRun("handoff-test", ServingSettings("disaggregated", 4, 8), DEFAULT_MODEL_INFO, reqs, its,
                      compute_serving_metrics(reqs), compute_kv_memory(its, reqs, 4, per_token),
                      handoffs=handoffs)


def test_serving_run_has_a_track_per_request_and_per_worker_with_handoffs_and_counters():
    run = _handoff_run()
    doc = json.loads(to_perfetto_json(run))
    assert check_trace_events(doc) == []
    assert _names(doc, REQUESTS_PID) == {1: "request r0", 2: "request r1"}
    assert _names(doc, WORKERS_PID) == {1: "prefill", 2: "decode"}
    r0 = [(e["name"], e["ts"], e["dur"]) for e in _slices(doc, REQUESTS_PID, 1)]
    assert r0 == [("waiting (queued)", 0.0, 2000.0), ("Prefill", 2000.0, 8000.0),
                  ("waiting (not in this pass)", 10000.0, 500.0), ("KV hand-off", 10500.0, 2500.0),
                  ("waiting (not in this pass)", 13000.0, 1000.0), ("Decode", 14000.0, 2000.0),
                  ("Decode", 16000.0, 2000.0)]
    hand = next(e for e in _slices(doc, REQUESTS_PID, 1) if e["name"] == "KV hand-off")
    assert hand["args"]["bytes"] == 4 * DEFAULT_MODEL_INFO.kv_bytes_per_token and hand["args"]["nvlink_ms"] == 0.01
    r1 = [e["name"] for e in _slices(doc, REQUESTS_PID, 2)]
    assert r1[:2] == ["waiting (queued)", "Prefill"]  # queued 1..10 ms behind r0's Prefill
    assert len(_slices(doc, WORKERS_PID, 1)) == 2 and len(_slices(doc, WORKERS_PID, 2)) == 3
    # a Decode held back while it holds its blocks is "stalled", not queued
    empty = run.iterations[-1].blocks
    held = dataclasses.replace(run, iterations=(*run.iterations[:4], Iteration(
        4, "decode", 24.0, 26.0, (BatchEntry("r0", "decode", 6, 7, 4),), empty, stalled=("r1",)), Iteration(
        5, "decode", 27.0, 29.0, (BatchEntry("r1", "decode", 4, 5, 2),), empty)))
    r1_held = [e["name"] for e in _slices(serving_run_events(held), REQUESTS_PID, 2)]
    assert "stalled (holds its KV blocks, no positions in a pass)" in r1_held
    kv = [(e["ts"], e["args"]["bytes"]) for e in doc["traceEvents"] if e["name"] == "KV bytes (decode)"]
    assert kv[0] == (16000.0, 5 * DEFAULT_MODEL_INFO.kv_bytes_per_token)  # r0's 5 positions after its first Decode
    batch = [e["args"]["requests"] for e in doc["traceEvents"] if e["name"] == "batch size (prefill)"]
    assert batch == [0, 1, 0, 1, 0]
    _assert_nested(doc)


def test_observed_run_has_request_tracks_ticks_and_server_counters():
    reqs = (make_record("r0", 0.0, [10.0, 12.0, 16.0]), make_record("r1", 5.0, [25.0]))
    run = ServingRun("probe", ServingSettings("one-at-a-time", 1, 1), DEFAULT_MODEL_INFO, reqs, (),
                     compute_serving_metrics(reqs), compute_kv_memory((), reqs, 1, 0),
                     notes=("observed from the client",))
    samples = [{"t_ms": 0.0, "values": {"running": 0, "waiting": 0, "kv_cache_usage": None}},
               {"t_ms": 8.0, "values": {"running": 2, "waiting": 1, "kv_cache_usage": 0.25}}]
    doc = serving_run_events(run, samples)
    assert check_trace_events(doc) == []
    assert _names(doc, WORKERS_PID) == {}  # no passes seen: no worker track is invented
    assert [e["name"] for e in _slices(doc, REQUESTS_PID, 1)] == [
        "until first token (queue + Prefill, not separable)", "streaming (Decode)"]
    assert [e["name"] for e in _slices(doc, REQUESTS_PID, 2)] == ["until first token (queue + Prefill, not separable)"]
    ticks = [e["ts"] for e in doc["traceEvents"] if e["ph"] == "i" and e["tid"] == 1]
    assert ticks == [10000.0, 12000.0, 16000.0]
    server = [(e["name"], e["ts"], e["args"]) for e in doc["traceEvents"] if e["ph"] == "C" and e["pid"] == SERVER_PID]
    assert ("kv_cache_usage", 8000.0, {"kv_cache_usage": 0.25}) in server
    assert not any(n == "kv_cache_usage" and ts == 0.0 for n, ts, _ in server)  # a missing sample is not a zero
    assert doc["otherData"]["notes"] == ["observed from the client"]


@pytest.mark.slow
def test_a_measured_serving_run_exports(default_lm):
    from engine.contract.serving.config import ServeConfig
    from engine.contract.serving.workloads import WorkloadRequest
    from engine.runtime.serving.engine import run_workload

    workload = (WorkloadRequest(0.0, "法国的首都是", 6, True),
                WorkloadRequest(0.0, "The capital of Germany is", 6, True),
                WorkloadRequest(5.0, "德国的首都是", 4, True, 40))
    run = run_workload(default_lm, workload, ServeConfig(policy="chunked", token_budget=16), scenario="perfetto")
    doc = json.loads(to_perfetto_json(run))
    assert check_trace_events(doc) == []
    assert len(_names(doc, REQUESTS_PID)) == 3 and _names(doc, WORKERS_PID) == {1: "engine"}
    assert len(_slices(doc, WORKERS_PID, 1)) == len(run.iterations)
    for tid, rec in enumerate(run.requests, start=1):
        phases = [e for e in _slices(doc, REQUESTS_PID, tid) if not e["name"].startswith("waiting")]
        assert sum(e["args"]["new_positions"] for e in phases) == rec.prompt_len + rec.num_output_tokens - 1
        assert phases[-1]["ts"] + phases[-1]["dur"] == pytest.approx(rec.finish_ms * 1000, abs=1e-3)
    assert any(e["name"] == "Prefill chunk" for e in _slices(doc, REQUESTS_PID, 3))  # 40 tokens > budget 16
    _assert_nested(doc)


@pytest.mark.slow
def test_export_cli_writes_the_perfetto_file(tmp_path):
    from lesson import export

    assert export.main(["--out", str(tmp_path), "--max-new-tokens", "3", "--perfetto"]) == 0
    doc = json.loads((tmp_path / "trace.perfetto.json").read_text(encoding="utf-8"))
    assert check_trace_events(doc) == []
    trace = json.loads((tmp_path / "trace.json").read_text(encoding="utf-8"))
    steps = [e for e in doc["traceEvents"] if e["ph"] == "X" and e["pid"] == REQUESTS_PID and e["tid"] == 1
             and e["name"].startswith(("Prefill", "Decode"))]  # the request's track (tid 2: TTFT's parts)
    assert [e["dur"] for e in steps] == pytest.approx([(s["end_ms"] - s["start_ms"]) * 1000 for s in trace["steps"]])


# --- TTFT, part by part ------------------------------------------------------------------------------

def _ttft_track(doc):
    names = _names(doc, REQUESTS_PID)
    tid = next(tid for tid, name in names.items() if name == "TTFT, part by part")
    return sorted(_slices(doc, REQUESTS_PID, tid), key=lambda e: (e["ts"], -e["dur"]))


def _timed_trace():
    """Tokenizing 0.3 ms, 0.7 ms inside the engine, then Prefill (its first token chosen in its last 0.4 ms)."""
    trace = make_trace()
    steps = tuple(dataclasses.replace(s, start_ms=s.start_ms + 0.7, end_ms=s.end_ms + 0.7) for s in trace.steps)
    return dataclasses.replace(trace, steps=steps, first_token_choice_ms=0.4, started_at_s=1_764_000_000.0)


def test_a_request_has_a_ttft_track_with_the_engines_parts_as_the_ttft_bar_draws_them():
    """The TTFT bar's parts were in no export: Perfetto showed the passes, not what TTFT is made of."""
    from lesson.diagrams.ttft_parts import ttft_parts

    trace = _timed_trace()
    doc = json.loads(to_perfetto_json(trace))
    assert check_trace_events(doc) == [] and _assert_nested(doc) is None
    track = _ttft_track(doc)
    total, parts = track[0], track[1:]
    assert total["name"] == f"TTFT as the engine measured it: {fmt_ms(trace.metrics.ttft_ms)}"
    assert [e["args"]["part"] for e in parts] == ["tokenize", "engine", "prefill", "choice"]
    assert all(e["args"]["measured_by"] == "engine" for e in parts)
    expected = ttft_parts(trace)  # the bar's own numbers
    for event in parts:
        assert event["dur"] == pytest.approx(expected.part_ms(event["args"]["part"]) * 1000, abs=0.01)
    assert parts[0]["ts"] == 0 and total["dur"] == pytest.approx(trace.metrics.ttft_ms * 1000, abs=0.01)
    for a, b in zip(parts, parts[1:]):  # end to end, in the order the time passed
        assert b["ts"] == pytest.approx(a["ts"] + a["dur"], abs=0.01)
    prefill = next(e for e in _slices(doc, REQUESTS_PID, 1) if e["name"] == "Prefill")
    choice = parts[-1]
    assert choice["ts"] + choice["dur"] == pytest.approx(prefill["ts"] + prefill["dur"], abs=0.01)  # one clock
    assert doc["otherData"]["time_origin"].startswith("the request's start")


def test_with_the_pages_times_the_track_has_the_visitors_parts_and_time_starts_at_the_send():
    from lesson.diagrams.ttft_parts import FeltTimes

    trace = _timed_trace()
    start, token_s = trace.started_at_s, trace.started_at_s + trace.prefill.end_ms / 1e3
    felt = FeltTimes(start - 0.120, token_s + 0.004, token_s + 0.013, start, trace.prefill.end_ms)
    doc = json.loads(to_perfetto_json(trace, felt=felt))
    assert check_trace_events(doc) == [] and _assert_nested(doc) is None
    track = _ttft_track(doc)
    felt_total = track[0]
    engine_total = next(e for e in track if e["name"].startswith("TTFT as the engine measured it"))
    assert felt_total["name"].startswith("TTFT as the visitor felt it") and felt_total["ts"] == 0
    assert all(not str(e["ts"]).startswith("-") for e in doc["traceEvents"])  # nothing before the send, no -0.0
    assert felt_total["dur"] == pytest.approx((120 + trace.metrics.ttft_ms + 13) * 1000, abs=1)
    parts = [e for e in track if "args" in e]
    assert [e["args"]["part"] for e in parts] == ["queue", "tokenize", "engine", "prefill", "choice", "trip", "page"]
    assert [e["args"]["measured_by"] for e in parts] == ["page"] + ["engine"] * 4 + ["page"] * 2
    assert parts[1]["ts"] == pytest.approx(120_000, abs=1) == engine_total["ts"]  # the engine's clock after the queue
    first_pass = next(e for e in _slices(doc, REQUESTS_PID, 1) if e["name"] == "Prefill")
    assert first_pass["ts"] == pytest.approx((120 + trace.prefill.start_ms) * 1000, abs=1)  # every event moved
    assert doc["otherData"]["time_origin"].startswith("the page's send")


def test_a_trace_without_a_pass_has_no_ttft_track():
    trace = dataclasses.replace(make_trace(), steps=())
    doc = json.loads(to_perfetto_json(trace))
    assert check_trace_events(doc) == [] and "TTFT, part by part" not in _names(doc, REQUESTS_PID).values()

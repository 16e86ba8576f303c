"""The serving run's record (engine/contract/serving/trace.py) and its metrics, from synthetic
timestamps: no model runs. Every expected number is worked out by hand."""

from __future__ import annotations

import json
import sys

import pytest

from engine.contract.serving.metrics import compute_kv_memory, compute_serving_metrics, distribution, meets_slo
from engine.contract.serving.trace import (
    SLO, BatchEntry, BlockSnapshot, BlockTable, Handoff, Iteration, LinkEstimate, LinkSpec, ServingRun, ServingSettings,
)
from engine.contract.trace import TraceFormatError
from tests.factories import DEFAULT_MODEL_INFO, make_record

# r0 arrives at 0: tokens at 10, 12, 16 -> TTFT 10, ITL 2 and 4, E2EL 16, TPOT (16-10)/2 = 3
# r1 arrives at 5: tokens at 25, 26      -> TTFT 20, ITL 1, E2EL 21, TPOT 1
# r2 arrives at 6: one token at 46       -> TTFT 40, no ITL, E2EL 40, no TPOT
REQUESTS = (make_record("r0", 0.0, [10.0, 12.0, 16.0]), make_record("r1", 5.0, [25.0, 26.0]),
            make_record("r2", 6.0, [46.0]))


def test_metrics_match_hand_computed_values():
    m = compute_serving_metrics(REQUESTS)
    assert m.num_requests == m.num_completed == 3
    assert m.duration_ms == 46.0  # first arrival 0 .. last finish 46
    assert m.total_input_tokens == 12 and m.total_output_tokens == 6
    assert m.request_throughput_per_s == pytest.approx(3 / 0.046)
    assert m.output_throughput_tok_s == pytest.approx(6 / 0.046)
    assert m.total_token_throughput_tok_s == pytest.approx(18 / 0.046)
    assert (m.ttft.mean, m.ttft.p50, m.ttft.max) == (pytest.approx(70 / 3), 20.0, 40.0)
    # numpy's linear interpolation: p90 of [10, 20, 40] sits at rank 1.8 -> 20 + 0.8 * 20 = 36
    assert m.ttft.p90 == pytest.approx(36.0) and m.ttft.p99 == pytest.approx(39.6)
    assert m.tpot.count == 2 and m.tpot.mean == pytest.approx(2.0)  # [3, 1]
    # ITL pools every gap: [2, 4, 1] -> sorted [1, 2, 4]; p99 at rank 1.98 -> 2 + 0.98 * 2
    assert m.itl.count == 3 and m.itl.p50 == 2.0 and m.itl.p99 == pytest.approx(3.96)
    assert m.e2el.p50 == 21.0 and m.e2el.max == 40.0


def test_goodput_counts_requests_meeting_every_slo():
    assert meets_slo(REQUESTS[0], SLO(ttft_ms=10.0, tpot_ms=3.0))  # limits are inclusive
    assert not meets_slo(REQUESTS[0], SLO(ttft_ms=10.0, tpot_ms=2.9))  # one missed SLO is enough
    m = compute_serving_metrics(REQUESTS, SLO(ttft_ms=25.0))
    assert m.num_good == 2 and m.goodput_req_per_s == pytest.approx(2 / 0.046)
    assert compute_serving_metrics(REQUESTS).num_good == 3  # no SLO set: every request is good


def test_empty_distribution_has_no_numbers():
    d = distribution([])
    assert d.count == 0 and d.p99 is None


def snapshot(tables: dict[str, tuple[tuple[int, ...], tuple[int, ...]]], num_blocks: int = 8) -> BlockSnapshot:
    rows = tuple(BlockTable(rid, ids, used) for rid, (ids, used) in tables.items())
    return BlockSnapshot(block_size=4, num_blocks=num_blocks,
                         num_free_blocks=num_blocks - sum(len(t.block_ids) for t in rows), tables=rows)


def test_kv_memory_at_the_peak_against_contiguous_reservation():
    small = snapshot({"r0": ((0, 1), (4, 1))})  # r0 holds 5 tokens in 2 blocks
    # at the peak r0 holds 6 tokens in 2 blocks, r1 holds 4 in 1: 10 tokens, 3 blocks = 12 slots (2 wasted)
    peak = snapshot({"r0": ((0, 1), (4, 2)), "r1": ((2,), (4,))})
    its = [Iteration(i, "engine", float(i), i + 1.0, (BatchEntry("r0", "decode", 5, 6, 1),), s)
           for i, s in enumerate((small, peak))]
    mem = compute_kv_memory(its, REQUESTS, block_size=4, kv_bytes_per_token=2048)
    assert peak.wasted_slots == 2 and peak.num_used_tokens == 10
    assert (mem.peak_used_blocks, mem.peak_used_tokens, mem.peak_paged_reserved_tokens) == (3, 10, 12)
    assert mem.peak_contiguous_reserved_tokens == 24  # (4 prompt + 8 max new) x 2 requests
    assert mem.paged_utilization == pytest.approx(10 / 12) and mem.contiguous_utilization == pytest.approx(10 / 24)
    # over both passes: held 5 + 10 tokens, paged slots 8 + 12, contiguous 12 + 24
    assert mem.mean_paged_utilization == pytest.approx(15 / 20)
    assert mem.mean_contiguous_utilization == pytest.approx(15 / 36)


def sample_run() -> ServingRun:
    block = snapshot({"r0": ((0, 1), (4, 3))})
    its = (
        Iteration(0, "prefill", 1.0, 9.0, (BatchEntry("r0", "prefill", 0, 4, 7),), block, token_budget=None,
                  waiting=("r1",)),
        Iteration(1, "decode", 10.0, 12.0, (BatchEntry("r0", "decode", 4, 5, 8),
                                             BatchEntry("r1", "prefill_chunk", 0, 2, None, recompute=True)),
                  block, token_budget=16, preempted=("r2",)),
    )
    links = (LinkSpec("nvlink", "NVLink", 450e9), LinkSpec("100gbps", "100 Gb/s", 12.5e9))
    handoff = Handoff("r0", 4, 8192, 9.0, 9.5, 0.5, (LinkEstimate("nvlink", 450e9, 8192 / 450e9 * 1e3),))
    settings = ServingSettings(policy="disaggregated", block_size=4, num_kv_blocks=8,
                               worker_cores=(("prefill", (0,)), ("decode", (1,))))
    return ServingRun(scenario="s", settings=settings, model=DEFAULT_MODEL_INFO, requests=REQUESTS, iterations=its,
                      metrics=compute_serving_metrics(REQUESTS), memory=compute_kv_memory(its, REQUESTS, 4, 2048),
                      handoffs=(handoff,), links=links, wall_ms=50.0, notes=("a note",))


def test_json_round_trip_is_exact_and_plain():
    run = sample_run()
    text = run.to_json()
    data = json.loads(text)
    assert data["kind"] == "serving_run" and data["schema_version"] == 1
    first = data["requests"][0]
    for key in ("request_id", "prompt_ids", "output_ids", "arrival_ms", "first_token_ms", "finish_ms", "itl_ms"):
        assert key in first
    assert first["derived"]["ttft_ms"] == 10.0
    assert data["iterations"][1]["entries"][1]["phase"] == "prefill_chunk"
    assert data["iterations"][1]["derived"]["num_prefill_tokens"] == 2
    assert ServingRun.from_json(text) == run


def test_record_module_imports_no_torch():
    import subprocess

    code = "import sys, engine.contract.serving.trace, engine.contract.serving.metrics; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d.update(kind="request_trace"), "not a serving run"),
    (lambda d: d.update(schema_version=99), "schema_version"),
    (lambda d: d["iterations"][0]["entries"][0].update(phase="think"), "unknown phase"),
    (lambda d: d["requests"][0].update(colour="red"), "no field"),
    (lambda d: d["requests"][0].pop("arrival_ms"), "not a valid serving run"),
])
def test_bad_documents_are_refused(mutate, message):
    data = sample_run().to_dict()
    mutate(data)
    with pytest.raises(TraceFormatError, match=message):
        ServingRun.from_json(json.dumps(data))

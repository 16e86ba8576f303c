"""Serving metrics as vLLM's benchmark (benchmarks/serve.py) defines them.

Per request, from when it arrived (vLLM: when the client sent it):
    TTFT = first token time - arrival
    TPOT = (E2EL - TTFT) / (output tokens - 1)      only for answers of 2+ tokens
    ITL  = the gaps between consecutive tokens       pooled over all requests
    E2EL = last token time - arrival
Over the run, duration = first arrival .. last finish:
    request throughput = completed / duration, output token throughput = output tokens / duration,
    total token throughput = (prompt + output tokens) / duration
Percentiles are numpy.percentile's (linear interpolation), as vLLM reports them
(engine.contract.trace.percentile: the same rule as one request's ITL percentiles).
Goodput (DistServe): requests that meet EVERY SLO that is set, per second.

Also the paged KV memory at its peak against contiguous pre-allocation to each
request's maximum length (PagedAttention's comparison).
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.contract.serving.trace import SLO, Distribution, Iteration, KVMemory, RequestRecord, ServingMetrics
from engine.contract.trace import percentile


def distribution(values: Sequence[float]) -> Distribution:
    if not len(values):
        return Distribution(count=0)
    x = [float(v) for v in values]
    p50, p90, p99 = (percentile(x, p) for p in (50, 90, 99))
    return Distribution(count=len(x), mean=sum(x) / len(x), p50=p50, p90=p90, p99=p99, max=max(x))


def meets_slo(record: RequestRecord, slo: SLO) -> bool:
    """DistServe's notion: a request counts only when it meets every SLO that is set."""
    checks = ((slo.ttft_ms, record.ttft_ms), (slo.tpot_ms, record.tpot_ms), (slo.e2el_ms, record.e2el_ms))
    return all(limit is None or value is None or value <= limit for limit, value in checks)


def compute_serving_metrics(requests: Sequence[RequestRecord], slo: SLO = SLO()) -> ServingMetrics:
    done = [r for r in requests if r.num_output_tokens > 0]
    if done:
        duration_ms = max(r.finish_ms for r in done) - min(r.arrival_ms for r in requests)
    else:
        duration_ms = 0.0
    seconds = duration_ms / 1e3 if duration_ms > 0 else float("inf")
    num_in, num_out = sum(r.prompt_len for r in done), sum(r.num_output_tokens for r in done)
    num_good = sum(meets_slo(r, slo) for r in done)
    return ServingMetrics(
        num_requests=len(requests),
        num_completed=len(done),
        duration_ms=duration_ms,
        total_input_tokens=num_in,
        total_output_tokens=num_out,
        request_throughput_per_s=len(done) / seconds,
        output_throughput_tok_s=num_out / seconds,
        total_token_throughput_tok_s=(num_in + num_out) / seconds,
        ttft=distribution([r.ttft_ms for r in done]),
        tpot=distribution([r.tpot_ms for r in done if r.tpot_ms is not None]),
        itl=distribution([gap for r in done for gap in r.itl_ms]),
        e2el=distribution([r.e2el_ms for r in done]),
        slo=slo,
        num_good=num_good,
        goodput_req_per_s=num_good / seconds,
    )


def compute_kv_memory(iterations: Sequence[Iteration], requests: Sequence[RequestRecord],
                      block_size: int, kv_bytes_per_token: int) -> KVMemory:
    """At the pass where the most blocks were in use (over all workers): tokens held vs reserved,
    paged (whole blocks) and contiguous (each running request's prompt + max_new_tokens)."""
    longest = {r.request_id: r.prompt_len + r.max_new_tokens for r in requests}
    peak = max(iterations, key=lambda it: it.blocks.num_used_blocks, default=None)
    if peak is None:
        return KVMemory(block_size, kv_bytes_per_token, 0, 0, 0, 0, 0.0, 0.0)
    def reserved(it: Iteration) -> tuple[int, int, int]:  # (tokens held, paged slots, contiguous slots)
        tables = it.blocks.tables
        return (it.blocks.num_used_tokens, len(it.blocks.held_tokens()) * block_size,  # shared blocks once
                sum(longest[t.request_id] for t in tables))

    used, paged, contiguous = reserved(peak)
    totals = [sum(column) for column in zip(*map(reserved, iterations))]
    return KVMemory(
        block_size=block_size, kv_bytes_per_token=kv_bytes_per_token,
        peak_used_blocks=peak.blocks.num_used_blocks, peak_used_tokens=used,
        peak_paged_reserved_tokens=paged, peak_contiguous_reserved_tokens=contiguous,
        paged_utilization=used / paged if paged else 0.0,
        contiguous_utilization=used / contiguous if contiguous else 0.0,
        mean_paged_utilization=totals[0] / totals[1] if totals[1] else 0.0,
        mean_contiguous_utilization=totals[0] / totals[2] if totals[2] else 0.0,
    )


def prefix_cache_totals(requests: Sequence[RequestRecord]) -> tuple[int, int, float]:
    """(prompt tokens looked up, of them read from the prefix cache, the hit rate) over the run's requests,
    each at its first look-up (the one its TTFT depends on); (0, 0, 0.0) for runs that recorded none."""
    looked = [r.prefix for r in requests if r.prefix is not None]
    total, cached = sum(p.num_tokens for p in looked), sum(p.num_cached_tokens for p in looked)
    return total, cached, cached / total if total else 0.0

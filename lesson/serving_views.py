"""Plain helpers behind the serving figures and the serving lab: the metric table's
rows, text alternatives, and what the measured numbers say, in zh and en.

No streamlit, no torch: everything here takes ServingRun values (engine/contract/serving/trace.py)
and returns strings, so it is tested without a model or a browser.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from engine.contract.serving.trace import ServingMetrics, ServingRun

from .diagrams.serving_gantt import fine_ms, itl_spikes, longest_pass, policy_label
from .formats import fmt_bytes, fmt_int, fmt_ms
from .layout import text_width
from .text import TEXTS, t


def _ms(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value / 1000:.2f} s" if value >= 1000 else fmt_ms(value)


@dataclass(frozen=True)
class MetricRow:
    """One row of the table: a label and how to read it from a run."""

    key: str  # text key of the metric's name
    suffix: str  # "p50", "p99", "" ...
    value: Callable[[ServingRun], float | None]  # the number compared across runs (None: not available)
    shown: Callable[[ServingRun], str]  # what the cell says
    better: str  # "low", "high" or "" (not ranked)


def _dist(name: str, pct: str) -> MetricRow:
    def value(run: ServingRun) -> float | None:
        return getattr(getattr(run.metrics, name), pct)

    return MetricRow(f"sv_m_{name}", pct, value, lambda run: _ms(value(run)), "low")


def _rate(attr: str, digits: int) -> MetricRow:
    return MetricRow(f"sv_m_{attr}", "", lambda run: getattr(run.metrics, attr),
                     lambda run: f"{getattr(run.metrics, attr):,.{digits}f}", "high")


def _goodput_shown(run: ServingRun) -> str:
    m = run.metrics
    return f"{m.num_good}/{m.num_completed} · {m.goodput_req_per_s:,.2f}"


METRIC_ROWS: tuple[MetricRow, ...] = (
    MetricRow("sv_m_completed", "", lambda run: run.metrics.num_completed,
              lambda run: f"{run.metrics.num_completed}/{run.metrics.num_requests}", ""),
    MetricRow("sv_m_duration", "", lambda run: run.metrics.duration_ms, lambda run: _ms(run.metrics.duration_ms),
              "low"),
    *(_dist("ttft", p) for p in ("p50", "p90", "p99")),
    *(_dist("tpot", p) for p in ("p50", "p90", "p99")),
    *(_dist("itl", p) for p in ("p50", "p90", "p99", "max")),
    *(_dist("e2el", p) for p in ("p50", "p99")),
    _rate("request_throughput_per_s", 2),
    _rate("output_throughput_tok_s", 1),
    _rate("total_token_throughput_tok_s", 1),
    MetricRow("sv_m_goodput", "", lambda run: run.metrics.goodput_req_per_s, _goodput_shown, "high"),
    MetricRow("sv_m_kv_paged", "", lambda run: run.memory.paged_utilization if run.iterations else None,
              lambda run: f"{run.memory.paged_utilization:.0%}" if run.iterations else "—", ""),
    MetricRow("sv_m_kv_contiguous", "", lambda run: run.memory.contiguous_utilization if run.iterations else None,
              lambda run: f"{run.memory.contiguous_utilization:.0%}" if run.iterations else "—", ""),
)


def row_label(row: MetricRow, lang: str) -> str:
    name = t(lang, row.key)
    return f"{name} {row.suffix}" if row.suffix else name


def run_label(run: ServingRun, lang: str) -> str:
    """A column heading: the policy, and the token budget when chunked."""
    words = policy_label(lang, run.settings.policy)
    if run.settings.token_budget:
        words += f" ({fmt_int(run.settings.token_budget)})"
    return words


def column_labels(runs: Sequence[ServingRun], lang: str) -> list[str]:
    """Headings, made unique when two runs share a policy (#2, #3 ...)."""
    labels, seen = [], {}
    for run in runs:
        words = run_label(run, lang)
        seen[words] = seen.get(words, 0) + 1
        labels.append(words if seen[words] == 1 else f"{words} #{seen[words]}")
    return labels


def best_columns(row: MetricRow, runs: Sequence[ServingRun]) -> set[int]:
    """The columns holding the best value of a ranked row (ties all count; none when under two values)."""
    values = [(i, row.value(r)) for i, r in enumerate(runs)]
    values = [(i, v) for i, v in values if v is not None]
    if not row.better or len(values) < 2:
        return set()
    best = (min if row.better == "low" else max)(v for _, v in values)
    return {i for i, v in values if v == best}


def metric_table(runs: Sequence[ServingRun], lang: str) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of plain strings: the first column names the metric, one column per run."""
    header = [t(lang, "sv_m_metric"), *column_labels(runs, lang)]
    rows = [[row_label(row, lang), *(row.shown(run) for run in runs)] for row in METRIC_ROWS]
    return header, rows


def metric_records(runs: Sequence[ServingRun], lang: str) -> list[dict[str, str]]:
    """The same table as records for st.dataframe (one dict per metric)."""
    header, rows = metric_table(runs, lang)
    return [dict(zip(header, row)) for row in rows]


def name_column_px(records: Sequence[dict[str, str]], font_px: float = 14.0) -> int:
    """Width in px of the metric table's first column (the metric names) in st.dataframe: its longest
    name (or heading) at the grid's font, plus the cell's padding and the heading's menu. Left to
    Streamlit, the column is sized from a cap and cut "Goodput（达标/完成 · 请求/秒）" at 1440 px wide."""
    if not records:
        return 0
    names = [next(iter(records[0]))] + [next(iter(r.values())) for r in records]
    return round(max(text_width(n, font_px) for n in names) + 48)


MIN_MEASURED_FRACTION = 0.10  # no time left until this share of the answer tokens has been written
MIN_MEASURED_S = 3.0  # ... over at least this long, counted from the policy's first written token


def time_left_s(finished_s: Sequence[float], num_policies: int, done: int, total: int, elapsed_s: float,
                first_s: float | None, first_done: int = 0) -> float | None:
    """Seconds left of the serving lab's run of every policy, or None until the estimate rests on enough
    measurement: at least MIN_MEASURED_FRACTION of the running policy's `total` answer tokens written, over
    at least MIN_MEASURED_S since its first progress (at `first_s` seconds into the policy, `first_done`
    tokens written then).

    The pace is measured from that first progress on, so the policy's start-up (the queue, a second
    process and its model load, the first Prefill) is not spread over the tokens: "1 / 200 written · 1844 s
    left" came from one token after a long start. The running policy's rest at that pace, then each
    policy still to come as long as the finished ones took on average (before any finished: as long as
    this one will take in all)."""
    if total <= 0 or first_s is None or done < MIN_MEASURED_FRACTION * total:
        return None
    measured_s, written = elapsed_s - first_s, done - first_done
    if measured_s < MIN_MEASURED_S or written <= 0:
        return None
    rest_s = max(total - done, 0) * measured_s / written
    per_policy = sum(finished_s) / len(finished_s) if finished_s else elapsed_s + rest_s
    still_to_come = max(num_policies - len(finished_s) - 1, 0)
    return rest_s + still_to_come * per_policy


def slo_text(metrics: ServingMetrics, lang: str) -> str:
    slo = metrics.slo
    parts = [f"{name} ≤ {_ms(v)}" for name, v in (("TTFT", slo.ttft_ms), ("TPOT", slo.tpot_ms), ("E2EL", slo.e2el_ms))
             if v is not None]
    return "; ".join(parts) if parts else t(lang, "sv_slo_none")


# --- text alternatives -----------------------------------------------------------

def gantt_alt(run: ServingRun, lang: str) -> str:
    it, waited = longest_pass(run)
    spikes = itl_spikes(run)
    return t(lang, "alt_sv_gantt", n=len(run.requests), policy=policy_label(lang, run.settings.policy),
             passes=len(run.iterations), ttft=_ms(run.metrics.ttft.p50), p99=_ms(run.metrics.itl.p99),
             longest=_ms(it.duration_ms) if it else "—", waited=len(waited),
             spike=_ms(spikes[0].ms) if spikes else "—", handoffs=len(run.handoffs))


def batch_alt(run: ServingRun, lang: str) -> str:
    its = run.iterations
    biggest = max(its, key=lambda it: (it.num_tokens, it.duration_ms))
    return t(lang, "alt_sv_batch", n=len(its), policy=policy_label(lang, run.settings.policy),
             mixed=sum(1 for it in its if it.num_prefill_tokens and it.num_decode_tokens),
             max_tokens=fmt_int(biggest.num_tokens), max_ms=_ms(biggest.duration_ms),
             budget=fmt_int(run.settings.token_budget) if run.settings.token_budget else "—")


def kv_alt(run: ServingRun, lang: str) -> str:
    mem = run.memory
    peak = max(run.iterations, key=lambda it: it.blocks.num_used_blocks)
    return t(lang, "alt_sv_kv", policy=policy_label(lang, run.settings.policy), passes=len(run.iterations),
             used=peak.blocks.num_used_blocks, blocks=fmt_int(peak.blocks.num_blocks),
             block_size=run.settings.block_size, waste=fmt_int(peak.blocks.wasted_slots),
             paged=f"{mem.paged_utilization:.0%}", contiguous=f"{mem.contiguous_utilization:.0%}")


def metrics_alt(runs: Sequence[ServingRun], lang: str) -> str:
    labels = column_labels(runs, lang)

    def listed(pick: Callable[[ServingRun], str]) -> str:
        return "; ".join(f"{name} {pick(run)}" for name, run in zip(labels, runs))

    return t(lang, "alt_sv_metrics", n=len(runs), rows=len(METRIC_ROWS),
             ttft=listed(lambda r: _ms(r.metrics.ttft.p50)), itl=listed(lambda r: _ms(r.metrics.itl.p99)),
             tput=listed(lambda r: f"{r.metrics.output_throughput_tok_s:,.1f}"))


SERVING_FIGURES = ("gantt", "batch", "kv", "metrics")


def figure_alt(name: str, run: ServingRun, lang: str) -> str:
    """The text alternative of a one-run serving figure: "gantt", "batch" or "kv"."""
    return {"gantt": gantt_alt, "batch": batch_alt, "kv": kv_alt}[name](run, lang)


# --- what the measured numbers say -------------------------------------------------

PREFIX_SCENARIOS = ("shared-system-prompt", "multi-turn-chat", "near-miss")  # their lesson is the prefix cache


def what_to_see(runs: Sequence[ServingRun], lang: str) -> str:
    """"What to look for", written for the runs' scenario (a workload of the visitor's own: the general
    words), and for a prefix-caching scenario run without it, that it is off."""
    scenario = runs[0].scenario if runs else ""
    key = "sl_see_" + scenario.replace("-", "_")
    words = t(lang, key) if key in TEXTS["en"] else t(lang, "sl_see_other")
    if scenario in PREFIX_SCENARIOS and not any(run.settings.prefix_caching for run in runs):
        words = f"{words}{'' if lang == 'zh' else ' '}{t(lang, 'sl_see_prefix_off')}"
    return words


def disagg_verdict(disagg: ServingRun, runs: Sequence[ServingRun], lang: str) -> str:
    """What disaggregation's p99 ITL says beside the other policies' measured now: the sentence "the Decode
    worker never runs a Prefill" reads as a benefit only where its p99 ITL was the table's lowest."""
    others = [r for r in runs if r is not disagg and r.metrics.itl.count]
    if not others or not disagg.metrics.itl.count:
        return t(lang, "sv_disagg_alone")
    mine = disagg.metrics.itl.p99
    listed = ", ".join(f"{policy_label(lang, r.settings.policy)} {_ms(r.metrics.itl.p99)}" for r in others)
    fields = dict(n=len(others) + 1, others=listed, device=disagg.model.device)
    if all(mine < r.metrics.itl.p99 for r in others):
        return t(lang, "sv_disagg_best", **fields)
    if all(mine > r.metrics.itl.p99 for r in others):
        return t(lang, "sv_disagg_worst", **fields)
    return t(lang, "sv_disagg_middle", **fields)

def findings(runs: Sequence[ServingRun], lang: str) -> list[str]:
    """Sentences comparing the runs, every number from them (Markdown-safe: numbers and our words)."""
    by = {r.settings.policy: r for r in runs}
    out = []
    first, chunked = by.get("prefill-first"), by.get("chunked")
    if first and chunked and first.metrics.itl.count and chunked.metrics.itl.count:
        a, b = first.metrics.itl.p99, chunked.metrics.itl.p99
        out.append(t(lang, "sv_find_chunked", first=_ms(a), chunked=_ms(b), ratio=f"{a / b:.1f}" if b else "—",
                     first_max=_ms(first.metrics.itl.max), chunked_max=_ms(chunked.metrics.itl.max),
                     budget=fmt_int(chunked.settings.token_budget or 0)))
    solo = by.get("one-at-a-time")
    batched = chunked or first
    if solo and batched and solo.metrics.output_throughput_tok_s:
        ratio = batched.metrics.output_throughput_tok_s / solo.metrics.output_throughput_tok_s
        out.append(t(lang, "sv_find_batching", policy=policy_label(lang, batched.settings.policy),
                     batched=f"{batched.metrics.output_throughput_tok_s:,.1f}",
                     solo=f"{solo.metrics.output_throughput_tok_s:,.1f}", ratio=f"{ratio:.1f}",
                     solo_ttft=_ms(solo.metrics.ttft.p99), batched_ttft=_ms(batched.metrics.ttft.p99)))
    disagg = by.get("disaggregated")
    if disagg and disagg.handoffs:
        total = sum(h.num_bytes for h in disagg.handoffs)
        copy = sum(h.copy_ms for h in disagg.handoffs)
        big = max(disagg.handoffs, key=lambda h: h.num_bytes)
        links = "; ".join(f"{e.name} {fine_ms(e.ms)}" for e in big.link_estimates) or "—"
        out.append(t(lang, "sv_find_disagg", n=len(disagg.handoffs), bytes=fmt_bytes(total), copy=_ms(copy),
                     p99=_ms(disagg.metrics.itl.p99), rid=big.request_id, big=fmt_bytes(big.num_bytes), links=links,
                     verdict=disagg_verdict(disagg, runs, lang)))
    waits = [r for r in runs if any(it.preempted for it in r.iterations)]
    for run in waits:
        out.append(t(lang, "sv_find_preempted", policy=policy_label(lang, run.settings.policy),
                     n=sum(len(it.preempted) for it in run.iterations)))
    return out

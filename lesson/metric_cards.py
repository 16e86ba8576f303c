"""The run's numbers in words: the metric cards (TTFT, TPOT, ITL p99, E2EL), the notes under them,
and the real Prefill beside a real Decode step, one run or the medians of several (lesson.spread).
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.contract.trace import RequestTrace

from .formats import escape_markdown, format_ms
from .spread import Headline, Spread, fmt_ratio, headline, verdict
from .svgtext import fmt_count
from .text import t

@dataclass(frozen=True)
class MetricCard:
    key: str  # "ttft", "tpot", "itl", "e2el"
    label: str
    value: str
    definition: str
    spread: str = ""  # "median of 5 runs (5.2 ms–8.0 ms)", "the run shown (one run)", or "" for a single run


def metric_cards(trace: RequestTrace, lang: str, numbers: Headline | None = None) -> list[MetricCard]:
    """TTFT / TPOT / ITL p99 / E2EL, formatted, each with its one-line definition.

    For one request the mean ITL always equals TPOT, so the ITL card shows what
    ITL adds instead: its p99, with p50 / p90 / max in the card's definition.
    A one-token answer has no gap to measure: TPOT and ITL read "—", and their
    definitions say why (a short value, so the card never cuts a sentence).

    `numbers`: the headline numbers of N runs of this request (lesson.spread), whose first run
    is `trace`. With N > 1, TTFT and TPOT read the median of the runs and say their range and
    N; ITL p99 and E2EL stay the shown run's, and say so.
    """
    metrics = trace.metrics
    if metrics is None:
        return []
    na = t(lang, "metric_na")
    values = {
        "ttft": format_ms(metrics.ttft_ms),
        "tpot": format_ms(metrics.tpot_ms) if metrics.tpot_ms is not None else na,
        "itl": format_ms(metrics.p99_itl_ms) if metrics.itl_ms else na,
        "e2el": format_ms(metrics.e2el_ms),
    }
    definitions = {k: t(lang, f"metric_{k}_def") for k in values}
    if metrics.tpot_ms is None:
        definitions["tpot"] = t(lang, "metric_tpot_one_token")
    if metrics.itl_ms:
        definitions["itl"] = t(lang, "metric_itl_spread", n=len(metrics.itl_ms), p50=format_ms(metrics.p50_itl_ms),
                               p90=format_ms(metrics.p90_itl_ms), max=format_ms(metrics.max_itl_ms))
    else:
        definitions["itl"] = t(lang, "metric_itl_one_token")
    spreads = dict.fromkeys(values, "")
    if numbers is not None and numbers.n > 1:
        spreads.update(itl=t(lang, "metric_this_run"), e2el=t(lang, "metric_this_run"))
        for key, spread in (("ttft", numbers.ttft_ms), ("tpot", numbers.tpot_ms)):
            if spread is not None:
                values[key], spreads[key] = format_ms(spread.median), spread_text(spread, lang)
    return [MetricCard(k, t(lang, f"metric_{k}"), v, definitions[k], spreads[k]) for k, v in values.items()]


def spread_text(spread: Spread, lang: str) -> str:
    """"median of 5 runs (5.2 ms–8.0 ms)": a number's median over runs, with its range."""
    return t(lang, "metric_spread", n=spread.n, low=format_ms(spread.low), high=format_ms(spread.high))


PAGE_NOTE_MIN_MS = 0.1  # the page's drawing, summed over the run, worth a sentence


def page_drawing_note(trace: RequestTrace, lang: str) -> str | None:
    """How much of the waits was this page's own drawing (the model waited meanwhile).

    The metrics include it, as a user of the page felt it; the pass times do not
    (see engine.runtime.generation.stream_trace). None when it is too small to mention.
    """
    drawn_ms = [s.consumer_ms for s in trace.steps]
    total = sum(drawn_ms)
    if total < PAGE_NOTE_MIN_MS:
        return None
    gaps = sum(ms >= PAGE_NOTE_MIN_MS for ms in drawn_ms)
    return t(lang, "page_drawing_note", ms=format_ms(total), n=gaps)


def metric_gap_notes(trace: RequestTrace, lang: str) -> tuple[str, ...]:
    """Why Prefill's pass time sits next to a slightly larger TTFT, and a Decode pass next to
    a slightly larger ITL (issue 8): the waits count time outside the passes. From the trace's
    own times; a note only where there is something to explain."""
    metrics, prefill, decodes = trace.metrics, trace.prefill, trace.decode_steps
    if metrics is None or prefill is None:
        return ()
    notes = [t(lang, "gap_note_prefill", prefill=format_ms(prefill.duration_ms), ttft=format_ms(metrics.ttft_ms),
               wait=format_ms(metrics.ttft_ms - prefill.duration_ms), tokenize=format_ms(trace.tokenize_ms))]
    if decodes and metrics.itl_ms:
        decode_ms = sum(s.duration_ms for s in decodes) / len(decodes)
        itl_ms = sum(metrics.itl_ms) / len(metrics.itl_ms)
        notes.append(t(lang, "gap_note_decode", decode=format_ms(decode_ms), itl=format_ms(itl_ms),
                       gap=format_ms(itl_ms - decode_ms)))
    return tuple(notes)


def bottleneck_live_text(trace: RequestTrace, lang: str, numbers: Headline | None = None) -> str | None:
    """The real Prefill beside a real Decode step, in words, and what their ratio means.

    `numbers`: N runs of this request (lesson.spread; the first is `trace`); without them, the
    one run `trace`. The sentence follows lesson.spread.verdict on the medians: alike (a small
    model's fixed cost per pass), apart, the same work (a one-position prompt), or this
    machine's noise (a Decode step at or above Prefill: the lesson says it cannot be), which
    shows the runs' range and asks to measure again. None without a Decode step.
    """
    prefill = trace.prefill
    if prefill is None or not trace.decode_steps:
        return None
    numbers = numbers if numbers is not None else headline((trace,))
    ratio, kind = numbers.ratio, verdict(numbers, prefill.num_positions)
    if ratio is None or kind is None:
        return None
    prefill_ms, decode_ms = numbers.prefill_ms, numbers.decode_ms
    fields = dict(prefill_ms=format_ms(prefill_ms.median), prompt_len=prefill.num_positions,
                  per_position=format_ms(prefill_ms.median / prefill.num_positions),
                  decode_ms=format_ms(decode_ms.median))
    if numbers.n > 1:
        words = [t(lang, "bottleneck_live_repeats", n=numbers.n, prefill_range=_range_ms(prefill_ms),
                   decode_range=_range_ms(decode_ms), **fields)]
    else:
        words = [t(lang, "bottleneck_live", **fields)]
    m = trace.model
    words.append(t(lang, f"bottleneck_{kind}", ratio=fmt_ratio(ratio.median), prompt_len=prefill.num_positions,
                   model=escape_markdown(m.model_id), params=fmt_count(m.num_params), device=m.device, dtype=m.dtype))
    if numbers.n > 1:
        low, high = fmt_ratio(ratio.low), fmt_ratio(ratio.high)
        words.append(t(lang, "bottleneck_ratio_same" if low == high else "bottleneck_ratio_range", n=numbers.n,
                       low=low, high=high))
    return " ".join(words)


def bottleneck_contradicts(trace: RequestTrace, numbers: Headline | None = None) -> bool:
    """True when the medians contradict the lesson (a Decode step at or above Prefill on a prompt
    of several positions): the page then offers to measure again."""
    prefill = trace.prefill
    if prefill is None or not trace.decode_steps:
        return False
    return verdict(numbers if numbers is not None else headline((trace,)), prefill.num_positions) == "noise"


def _range_ms(spread: Spread) -> str:
    return f"{format_ms(spread.low)}–{format_ms(spread.high)}"

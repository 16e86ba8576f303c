"""The run's numbers in words: the metric cards (TTFT, TPOT, ITL p99, E2EL), the notes under them,
and the real Prefill beside a real Decode step, one run or the medians of several (lesson.spread).
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.contract.trace import RequestTrace

from .formats import escape_markdown, fmt_count, fmt_ratio, format_ms
from .pass_floors import RunFloors, floor_words
from .spread import Headline, Spread, headline, verdict
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

    `numbers`: the headline numbers of N runs of this request (lesson.spread), whose shown run
    is `trace`. Every value is that run's own (lesson.spread's rule: the run nearest the medians);
    with N > 1 each card says which run it is, and TTFT and TPOT their range over the N runs.
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
    if numbers is not None and numbers.n > 1:  # every value is the shown run's; the ranges are over all runs
        shown = t(lang, "metric_shown_run", k=numbers.shown + 1, n=numbers.n)
        spreads.update(itl=shown, e2el=shown)
        for key, spread in (("ttft", numbers.ttft_ms), ("tpot", numbers.tpot_ms)):
            if spread is not None:
                spreads[key] = spread_text(spread, lang, numbers.shown)
    return [MetricCard(k, t(lang, f"metric_{k}"), v, definitions[k], spreads[k]) for k, v in values.items()]


def spread_text(spread: Spread, lang: str, shown: int) -> str:
    """"median run 3 of 5 (5 runs: 5.2 ms–8.0 ms)": which run a value is of, with its range over the runs."""
    return t(lang, "metric_spread_shown", k=shown + 1, n=spread.n, low=format_ms(spread.low),
             high=format_ms(spread.high))


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
    a slightly larger ITL: the waits count time outside the passes. From the trace's
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


def bottleneck_live_text(trace: RequestTrace, lang: str, numbers: Headline | None = None,
                         floors: RunFloors | None = None) -> str | None:
    """The real Prefill beside a real Decode step, in words, and what their ratio means.

    `numbers`: N runs of this request (lesson.spread; the shown one is `trace`); without them, the
    one run `trace`. Every number is the shown run's (the ranges are over all runs). The sentence
    follows lesson.spread.verdict on the shown run: alike (a small
    model's fixed cost per pass), apart, the same work (a one-position prompt), or this
    machine's noise (a Decode step at or above Prefill: the lesson says it cannot be), which
    shows the runs' range and asks to measure again. `floors` (lesson.pass_floors): where they say both
    passes must take the same time (a short prompt: the same weights read once each), a Decode step at or
    above Prefill is no noise but the same fixed cost per pass ("same_floor"). None without a Decode step.
    """
    prefill = trace.prefill
    if prefill is None or not trace.decode_steps:
        return None
    numbers = numbers if numbers is not None else headline((trace,))
    ratio, kind = numbers.ratio, _verdict(numbers, prefill.num_positions, floors)
    if ratio is None or kind is None:
        return None
    own = numbers.shown_numbers
    fields = dict(prefill_ms=format_ms(own.prefill_ms), prompt_len=prefill.num_positions,
                  per_position=format_ms(own.prefill_ms / prefill.num_positions), decode_ms=format_ms(own.decode_ms))
    if numbers.n > 1:
        words = [t(lang, "bottleneck_live_shown", n=numbers.n, k=numbers.shown + 1,
                   prefill_range=_range_ms(numbers.prefill_ms), decode_range=_range_ms(numbers.decode_ms), **fields)]
    else:
        words = [t(lang, "bottleneck_live", **fields)]
    m = trace.model
    floor = format_ms(floors.prefill.floor_ms) if floors is not None else ""
    words.append(t(lang, f"bottleneck_{kind}", ratio=fmt_ratio(own.ratio), prompt_len=prefill.num_positions,
                   model=escape_markdown(m.model_id), params=fmt_count(m.num_params), device=m.device, dtype=m.dtype,
                   floor=floor))
    if numbers.n > 1:
        low, high = fmt_ratio(ratio.low), fmt_ratio(ratio.high)
        words.append(t(lang, "bottleneck_ratio_same" if low == high else "bottleneck_ratio_range", n=numbers.n,
                       low=low, high=high))
    return " ".join(words)


def bottleneck_contradicts(trace: RequestTrace, numbers: Headline | None = None,
                           floors: RunFloors | None = None) -> bool:
    """True when the shown run contradicts the lesson (its Decode step at or above its Prefill on a
    prompt of several positions, where `floors`, if known, say Prefill must take longer): the page then
    offers to measure again."""
    prefill = trace.prefill
    if prefill is None or not trace.decode_steps:
        return False
    return _verdict(numbers if numbers is not None else headline((trace,)), prefill.num_positions, floors) == "noise"


def _verdict(numbers: Headline, prompt_len: int, floors: RunFloors | None) -> str | None:
    """lesson.spread.verdict, except that equal floors make a Decode step as slow as Prefill "same_floor"."""
    kind = verdict(numbers, prompt_len)
    return "same_floor" if kind == "noise" and floors is not None and floors.same_floor else kind


def _range_ms(spread: Spread) -> str:
    return f"{format_ms(spread.low)}–{format_ms(spread.high)}"


SAME_PER_POSITION = 0.05  # per-position ratios within 5 % of 1 read "about the same"


def timeline_lesson(trace: RequestTrace, lang: str, numbers: Headline | None = None,
                    floors: RunFloors | None = None) -> str | None:
    """The first figure's caption, in the lesson's terms: Prefill read N positions in one pass in X ms
    (X/N per position); each Decode step read one position in Y ms (the median of the run's steps), so
    per position Prefill was Y·N/X times cheaper. When this machine's noise made a Decode step at least
    as slow as the whole Prefill, it says so, with the runs' range, and asks to measure again (the page
    adds the button: bottleneck_contradicts). `numbers`: the run's repeats (lesson.spread; `trace` is
    their shown run). `floors`: the shown run's passes against this machine's floors (lesson.pass_floors);
    with them the sentence reads each pass against its floor instead: a short prompt's two passes have the
    same floor, so a Decode step as slow as Prefill is no noise there, only a long prompt's can be. None
    before a Decode step."""
    prefill, decodes = trace.prefill, trace.decode_steps
    if prefill is None or not decodes:
        return None
    numbers = numbers if numbers is not None else headline((trace,))
    own, n = numbers.shown_numbers, prefill.num_positions
    which = t(lang, "tl_lesson_which", k=numbers.shown + 1, n=numbers.n) if numbers.n > 1 else ""
    words = [t(lang, "tl_lesson", n=n, x=format_ms(own.prefill_ms), per=format_ms(own.prefill_ms / n),
               y=format_ms(own.decode_ms), which=which)]
    per_position = own.decode_ms * n / own.prefill_ms if own.prefill_ms > 0 else float("inf")
    if n <= 1:
        words.append(t(lang, "tl_lesson_one_position"))
    elif floors is not None:  # the floors decide what the two times should be
        words.append(floor_words(floors, lang))
    elif verdict(numbers, n) == "noise":  # a Decode step no faster than the whole Prefill: not the lesson
        words.append(t(lang, "tl_lesson_noise", y=format_ms(own.decode_ms), x=format_ms(own.prefill_ms)))
        if numbers.n > 1:
            words.append(t(lang, "tl_lesson_noise_range", n=numbers.n, prefill=_range_ms(numbers.prefill_ms),
                           decode=_range_ms(numbers.decode_ms)))
    elif abs(per_position - 1) <= SAME_PER_POSITION:
        words.append(t(lang, "tl_lesson_same"))
    elif per_position > 1:
        words.append(t(lang, "tl_lesson_cheaper", r=fmt_ratio(per_position)))
    else:
        words.append(t(lang, "tl_lesson_dearer", r=fmt_ratio(1 / per_position)))
    return ("" if lang == "zh" else " ").join(words)

"""Runs kept in a session: a short history, two pinned runs compared on shared axes,
and the slow-motion replay of a run's measured times.

Pure functions over RequestTrace (no streamlit, no torch): the page keeps the
history in its session state and draws what these return.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from engine.contract.trace import RequestTrace, Step

from .formats import fmt_bytes, fmt_ms
from .svgtext import visible
from .text import t

HISTORY_LIMIT = 8  # runs kept per session (each is one trace as JSON, tens of KB)


@dataclass(frozen=True)
class HistoryEntry:
    """One finished run kept in the session: plain values only."""

    run_id: str  # unique within the session: "<stamp>-<n>"
    stamp: str  # when it ran, "YYYYmmdd-HHMMSS" (lesson.downloads.run_stamp; a recorded run's UTC recording time)
    trace_json: str
    recorded: bool = False  # measured earlier (an opened file, the gallery, the server's first view), not live

    @property
    def number(self) -> int:
        """The run's number in this session (1, 2, ...): tells apart runs alike in every other label field."""
        return int(self.run_id.rsplit("-", 1)[-1])


def history_add(history: list[HistoryEntry], trace_json: str, stamp: str,
                limit: int = HISTORY_LIMIT, recorded: bool = False) -> list[HistoryEntry]:
    """A new history with this run first, at most `limit` runs, newest first; `recorded`: a run
    measured earlier (it is labelled so wherever the history shows it).

    The same trace (the page's first view drawn again) is not kept twice: the
    entry already there moves to the front, keeping its id (a pin stays valid).
    """
    for entry in history:
        if entry.trace_json == trace_json:
            return [entry] + [e for e in history if e is not entry][: limit - 1]
    serial = 1 + max((e.number for e in history), default=0)
    return [HistoryEntry(f"{stamp}-{serial}", stamp, trace_json, recorded), *history][:limit]


def keep_pins(pins: object, history: list[HistoryEntry], most: int = 2) -> list[str]:
    """The pinned run ids still in the history (a forged or dropped id is left out), at most `most`."""
    known = {e.run_id for e in history}
    if not isinstance(pins, (list, tuple)):
        return []
    kept: list[str] = []
    for pin in pins:
        if isinstance(pin, str) and pin in known and pin not in kept:
            kept.append(pin)
    return kept[:most]


HISTORY_PROMPT_CHARS = 20  # a history label quotes the prompt's end: the part that asks (a stretch adds filler before)


def short_prompt(prompt: str, max_chars: int = HISTORY_PROMPT_CHARS) -> str:
    """The prompt's last `max_chars` characters on one line, controls made visible (lesson.svgtext.visible):
    "…德国的首都是" tells a 德国 run from a 法国 one. Plain text: a picker shows it as typed; a caption
    escapes it for Markdown."""
    shown = visible(" ".join(prompt.split()))
    return shown if len(shown) <= max_chars else "…" + shown[-(max_chars - 1):]


def run_label(trace: RequestTrace, stamp: str, lang: str, number: int | None = None) -> str:
    """"#3 · 22:41:07 · “…德国的首都是” · 4 → 3 tokens · TTFT 18.2 ms · default": what tells two runs apart.

    With `number` (HistoryEntry.number) every label in a session is unique: two runs in the same
    second with the same prompt, lengths and TTFT would otherwise read alike, and a multiselect matches
    its values by label, so a pin could not tell them apart. An empty `stamp` leaves the clock out: a
    recorded run (the server's first view too) says when it was measured in its own words
    (lesson.recorded.history_label), not this session's clock.
    """
    clock = f"{stamp[9:11]}:{stamp[11:13]}:{stamp[13:15]}" if len(stamp) >= 15 else stamp
    metrics = trace.metrics
    label = t(lang, "history_label", prompt=short_prompt(trace.prompt), prompt_len=trace.prompt_len,
              output_len=len(trace.steps), ttft=fmt_ms(metrics.ttft_ms) if metrics else "—",
              model=trace.model.model_id)
    label = f"{clock} · {label}" if clock else label
    return label if number is None else f"#{number} · {label}"


def shared_extent(a: RequestTrace, b: RequestTrace) -> RequestTrace:
    """One trace whose extent covers both runs: pass it as `full=` to a renderer and
    both runs are drawn on the same axes (the same time axis, latency y axis, KV y axis,
    bar slots and table columns).

    It is never shown. Pass i lasts the longer of the two runs' waits for token i
    (so every bar and every ITL of either run fits under the latency axis, and the
    time axis reaches past both runs' ends); it carries the more positions and the
    larger KV cache of the two, so the columns and the KV axis fit both.
    """
    long, short = (a, b) if len(a.steps) >= len(b.steps) else (b, a)
    steps: list[Step] = []
    end_long = end_short = end = 0.0
    for i, step in enumerate(long.steps):
        other = short.steps[i] if i < len(short.steps) else None
        wait = step.end_ms - end_long
        end_long = step.end_ms
        if other is not None:
            wait = max(wait, other.end_ms - end_short)
            end_short = other.end_ms
        chips = step if other is None or len(step.input_ids) >= len(other.input_ids) else other
        kv = step if other is None or step.kv_bytes >= other.kv_bytes else other
        output = step if other is None or len(step.output_piece) >= len(other.output_piece) else other
        steps.append(dataclasses.replace(
            chips, index=i, output_id=output.output_id, output_piece=output.output_piece,
            kv_bytes=kv.kv_bytes, kv_bytes_per_layer=kv.kv_bytes_per_layer,
            start_ms=end, end_ms=end + wait, lock_wait_ms=0.0, consumer_ms=0.0,
        ))
        end += wait
    prompt = long if long.prompt_len >= short.prompt_len else short
    return dataclasses.replace(long, steps=tuple(steps), prompt=prompt.prompt, prompt_ids=prompt.prompt_ids,
                               prompt_pieces=prompt.prompt_pieces)


def compare_table(a: RequestTrace, b: RequestTrace, lang: str) -> list[dict[str, str]]:
    """Rows of the comparison table: what was asked, then the measured metrics and KV bytes."""
    def numbers(trace: RequestTrace) -> list[str]:
        m = trace.metrics
        return [str(trace.prompt_len), str(len(trace.steps)), fmt_ms(trace.steps[0].duration_ms),
                fmt_ms(m.ttft_ms), fmt_ms(m.tpot_ms) if m.tpot_ms is not None else "—",
                fmt_ms(m.p50_itl_ms) if m.itl_ms else "—", fmt_ms(m.p99_itl_ms) if m.itl_ms else "—",
                fmt_ms(m.e2el_ms), fmt_bytes(trace.model.kv_bytes_per_token), fmt_bytes(trace.kv_bytes)]

    names = [t(lang, key) for key in ("cmp_prompt_tokens", "cmp_answer_tokens", "cmp_prefill", "cmp_ttft",
                                      "cmp_tpot", "cmp_itl_p50", "cmp_itl_p99", "cmp_e2el", "cmp_kv_per_token",
                                      "cmp_kv_final")]
    col_a, col_b = t(lang, "cmp_run_a"), t(lang, "cmp_run_b")
    return [{t(lang, "cmp_measure"): name, col_a: x, col_b: y}
            for name, x, y in zip(names, numbers(a), numbers(b))]


# ---------------------------------------------------------------------------
# Slow-motion replay: the run's own token times, stretched
# ---------------------------------------------------------------------------

# pace -> (kind, value): "scale" divides the measured times (0.25 = four times slower),
# "fixed" gives every forward pass the same seconds.
REPLAY_PACES = {"x1": ("scale", 1.0), "x0.25": ("scale", 0.25), "x0.1": ("scale", 0.1),
                "x0.01": ("scale", 0.01), "s0.5": ("fixed", 0.5), "s1": ("fixed", 1.0)}
DEFAULT_REPLAY_PACE = "s0.5"


def replay_times_s(trace: RequestTrace, pace: str) -> tuple[float, ...]:
    """When each token appears in the replay, in seconds after it starts.

    "scale" paces keep the run's measured rhythm (TTFT, then each ITL) slowed down;
    "fixed" paces give each forward pass the same time, so even a 5 ms pass can be seen.
    """
    kind, value = REPLAY_PACES.get(pace, REPLAY_PACES[DEFAULT_REPLAY_PACE])
    if kind == "fixed":
        return tuple(value * (i + 1) for i in range(len(trace.steps)))
    return tuple(step.end_ms / 1000 / value for step in trace.steps)


def replay_position(times_s: tuple[float, ...], elapsed_s: float) -> int:
    """How many tokens the replay shows `elapsed_s` seconds in: at least the Prefill's, at most all."""
    shown = sum(1 for when in times_s if when <= elapsed_s)
    return max(1, min(len(times_s), shown))

"""TTFT as the lesson defines it: from sending the request to seeing the first output token, part by part.

One stacked bar, left to right in the order the time passed:

    queue      waiting for the engine: the engine worker's queue (other visitors' runs) until this
               request's clock started (the page's send time to RequestTrace.started_at_s)
    tokenize   the prompt turned into ids (RequestTrace.tokenize_ms)
    engine     waiting inside the engine before the Prefill pass: the model lock, building the trace
               (Prefill's start_ms - tokenize_ms)
    prefill    the Prefill pass itself (its duration_ms without the choice below)
    choice     choosing the first token from Prefill's logits (RequestTrace.first_token_choice_ms)
    trip       the first token's trip from the engine process to the page (the worker's message, read
               by the page's process: its receive time - the token's time on the engine's wall clock)
    page       the page until the token is on screen: here until the server has sent it to the
               browser (Streamlit gives the page no way to read the browser's own paint time)

Two labels: what the engine measured (tokenize .. choice: the trace's own TTFT) and what the visitor
felt (queue .. page). The visitor's parts exist only for a run measured for this visitor now (its run
1, the one streamed to the page): a recorded run, the first view (measured once for every visitor) and
an export from a trace draw the engine's parts and say so. Pure: `ttft_parts()` computes, `render_*`
draws.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from engine.contract.trace import RequestTrace

from ..formats import fmt_ms
from ..layout import text_width
from ..style import DEFAULT_STYLE, Style
from ..text import Table, label, table_for
from ._common import add_title, header, new_drawing, notes, notes_height, text, to_string

PAD, WIDTH, BAR_H = 32, 960, 34
ENGINE_KINDS = ("tokenize", "engine", "prefill", "choice")
KINDS = ("queue", *ENGINE_KINDS, "trip", "page")
CLOCK_SKEW_MS = 5.0  # a visitor part below -5 ms means two clocks disagree (a worker elsewhere): not drawn
FELT_SCHEMA = "prefill-decode.felt/1"


@dataclass(frozen=True)
class FeltTimes:
    """What the page measured around its run 1, on this machine's wall clock (time.time() seconds)."""

    sent_at_s: float  # the page asked the engine worker for the run
    received_at_s: float  # run 1's first token (its Prefill's Pass) reached the page's process
    shown_at_s: float  # the page had drawn it: Streamlit then sends it to the browser
    engine_started_at_s: float  # run 1's request clock started (RequestTrace.started_at_s, or the worker's Started)
    first_token_ms: float  # run 1's first token on that clock (its Prefill's end_ms)

    def to_json(self) -> str:
        return json.dumps({"schema": FELT_SCHEMA, **asdict(self)})

    @classmethod
    def from_json(cls, text: str) -> FeltTimes:
        data = json.loads(text)
        if not isinstance(data, dict) or data.pop("schema", None) != FELT_SCHEMA:
            raise ValueError(f"not the page's felt times ({FELT_SCHEMA})")
        return cls(**{k: float(v) for k, v in data.items()})


@dataclass(frozen=True)
class TtftParts:
    """TTFT's parts in ms (see the module doc); the visitor's parts are None where none were measured."""

    tokenize_ms: float
    engine_ms: float
    prefill_ms: float
    choice_ms: float | None  # None: a trace written before it was measured (it is inside prefill_ms then)
    queue_ms: float | None = None
    trip_ms: float | None = None
    page_ms: float | None = None

    @property
    def felt(self) -> bool:
        return self.queue_ms is not None

    @property
    def engine_ttft_ms(self) -> float:
        """What the engine measured: the trace's own TTFT."""
        return self.tokenize_ms + self.engine_ms + self.prefill_ms + (self.choice_ms or 0.0)

    @property
    def felt_ttft_ms(self) -> float | None:
        """What the visitor felt: from sending the request to the first token on the page."""
        if not self.felt:
            return None
        return self.queue_ms + self.engine_ttft_ms + self.trip_ms + self.page_ms

    def part_ms(self, kind: str) -> float | None:
        return getattr(self, f"{kind}_ms")


def ttft_parts(trace: RequestTrace, felt: FeltTimes | None = None) -> TtftParts:
    """TTFT's parts for `trace` (the run shown); with `felt`, the visitor's parts as the page measured
    them on its run 1. Raises ValueError before the first token."""
    prefill = trace.prefill
    if prefill is None:
        raise ValueError("TTFT has parts once the first token is out")
    choice = trace.first_token_choice_ms
    choice = None if choice is None else min(choice, prefill.duration_ms)
    engine = TtftParts(trace.tokenize_ms, max(prefill.start_ms - trace.tokenize_ms, 0.0),
                       prefill.duration_ms - (choice or 0.0), choice)
    if felt is None:
        return engine
    token_at_s = felt.engine_started_at_s + felt.first_token_ms / 1e3
    queue = (felt.engine_started_at_s - felt.sent_at_s) * 1e3
    trip = (felt.received_at_s - token_at_s) * 1e3
    page = (felt.shown_at_s - felt.received_at_s) * 1e3
    if min(queue, trip, page) < -CLOCK_SKEW_MS:  # the engine's clock is another machine's
        return engine
    return TtftParts(engine.tokenize_ms, engine.engine_ms, engine.prefill_ms, engine.choice_ms,
                     max(queue, 0.0), max(trip, 0.0), max(page, 0.0))


# --- layout and drawing -------------------------------------------------------------------------

def _colors(style: Style) -> dict[str, str]:
    return {"queue": style.waiting, "tokenize": style.cached_dark, "engine": style.cached, "prefill": style.prefill,
            "choice": style.prefill_light, "trip": style.muted_ink, "page": style.page}


def _width(style: Style) -> float:
    return min(WIDTH, style.max_width) if style.fitted else WIDTH


def _segments(parts: TtftParts, x0: float, x1: float) -> list[tuple[str, float, float, float]]:
    """(kind, x, width, ms) of each drawn part, in time order, scaled to the bar."""
    kinds = KINDS if parts.felt else ENGINE_KINDS
    values = [(k, parts.part_ms(k)) for k in kinds if parts.part_ms(k) is not None]
    total = sum(ms for _, ms in values) or 1.0
    out, x = [], x0
    for kind, ms in values:
        w = (x1 - x0) * ms / total
        out.append((kind, x, w, ms))
        x += w
    return out


def _note_lines(parts: TtftParts, table: Table, source: str, run_note: str) -> list[str]:
    lines = [run_note] if run_note else []
    if parts.felt:
        lines.append(label(table, "ttft_parts_clock"))
        if source == "felt_other_run":
            lines.append(label(table, "ttft_parts_run1"))
    else:  # none of the visitor's parts: why not (times given that did not fit the run's clock: "unclocked")
        lines.append(label(table, f"ttft_parts_only_engine_{'unclocked' if source.startswith('felt') else source}"))
    if parts.choice_ms is None:
        lines.append(label(table, "ttft_parts_no_choice"))
    return lines


def _bracket(dwg, span: tuple[float, float], y: float, up: bool, words: str, style: Style, right: float,
             class_: str) -> None:
    """A bracket over (up) or under the bar across `span`, with its words beyond it, kept left of `right`."""
    (x0, x1), tick = span, (-6 if up else 6)
    dwg.add(dwg.path(d=f"M{x0:.2f},{y + tick:.2f} V{y:.2f} H{x1:.2f} V{y + tick:.2f}", fill="none",
                     stroke=style.ink, stroke_width=1.4, class_=f"bracket {class_}"))
    ty = y - 8 if up else y + style.small_size + 6
    x = max(PAD, min(x0, right - text_width(words, style.small_size)))
    dwg.add(text(dwg, words, x, ty, size=style.small_size, fill=style.ink, weight="bold", class_=f"total {class_}"))


def _legend(dwg, segments, parts: TtftParts, table: Table, style: Style, y: float, width: float) -> float:
    """One line per part: swatch, what it is, its ms and share of the visitor's (or engine's) TTFT."""
    total = parts.felt_ttft_ms if parts.felt else parts.engine_ttft_ms
    line_h, colors = style.small_size * 1.7, _colors(style)
    for kind, _, _, ms in segments:
        group = dwg.g(class_=f"legend-item {kind}")
        group.add(dwg.rect((PAD, y - style.small_size * 0.8), (14, 14), rx=3, fill=colors[kind], stroke=style.grid,
                           class_=f"swatch {kind}"))
        words = label(table, f"ttft_part_{kind}")
        group.add(text(dwg, words, PAD + 22, y, size=style.small_size, fill=style.ink))
        share = f"{fmt_ms(ms)} · {100 * ms / total:.0f} %" if total else fmt_ms(ms)
        group.add(text(dwg, share, width - PAD, y, size=style.small_size, fill=style.ink, anchor="end",
                       class_="part-ms", **{"data-kind": kind}))
        dwg.add(group)
        y += line_h
    return y


def render_ttft_parts(trace: RequestTrace, *, lang: str = "zh", style: Style | None = None,
                      full: RequestTrace | None = None, felt: FeltTimes | None = None, source: str = "trace",
                      run_note: str = "") -> str:
    """The stacked bar of TTFT's parts for `trace` (see the module doc).

    `felt`: the page's own times around its run 1 (the visitor's parts); `source` says why there are
    none ("trace": an export, "recorded": a recorded run, "first_view": measured once for every visitor)
    or, with them, whether the run shown is run 1 ("felt") or another repeat ("felt_other_run"); times that do
    not fit the run's clock (a shared run joined under way, a worker on another machine) draw the engine's parts
    and say why.
    `full` is accepted like every renderer's and unused: TTFT is over once the first pass is."""
    table, style = table_for(lang), style or DEFAULT_STYLE
    parts = ttft_parts(trace, felt)
    width, title, m = _width(style), label(table, "ttft_parts_title"), trace.model
    bar_y = 84 + style.small_size * 2 + 14
    segments = _segments(parts, PAD, width - PAD)
    legend_y = bar_y + BAR_H + 16 + (style.small_size + 14 if parts.felt else 0) + style.small_size
    lines = _note_lines(parts, table, source, run_note)
    notes_y = legend_y + len(segments) * style.small_size * 1.7 - 4
    height = notes_y + notes_height(style, lines, width - 2 * PAD) + 20
    dwg = new_drawing(width, height, style, "ttft-parts", title)
    header(dwg, style, title, label(table, "ttft_parts_subtitle", model=m.model_id, device=m.device), width=width)
    colors = _colors(style)
    for kind, x, w, ms in segments:
        rect = dwg.rect((round(x, 2), bar_y), (round(max(w, 0.0), 2), BAR_H), fill=colors[kind], stroke=style.paper,
                        stroke_width=1, class_=f"part {kind}", **{"data-ms": f"{ms:.3f}"})
        dwg.add(add_title(rect, f"{label(table, f'ttft_part_{kind}')}: {fmt_ms(ms)}"))
    engine = [s for s in segments if s[0] in ENGINE_KINDS]
    e0, e1 = engine[0][1], engine[-1][1] + engine[-1][2]
    words = label(table, "ttft_parts_engine", ms=fmt_ms(parts.engine_ttft_ms))
    _bracket(dwg, (e0, max(e1, e0 + 2)), bar_y - 6, True, words, style, width - PAD, "engine")
    if parts.felt:
        words = label(table, "ttft_parts_felt", ms=fmt_ms(parts.felt_ttft_ms))
        _bracket(dwg, (PAD, width - PAD), bar_y + BAR_H + 6, False, words, style, width - PAD, "felt")
    _legend(dwg, segments, parts, table, style, legend_y, width)
    notes(dwg, style, lines, PAD, notes_y, width - 2 * PAD)
    return to_string(dwg)


def ttft_parts_alt(trace: RequestTrace, lang: str, felt: FeltTimes | None = None) -> str:
    """The bar in words: every part with its ms, and the two totals."""
    table, parts = table_for(lang), ttft_parts(trace, felt)
    kinds = KINDS if parts.felt else ENGINE_KINDS
    each = [f"{label(table, f'ttft_part_{k}')} {fmt_ms(parts.part_ms(k))}"
            for k in kinds if parts.part_ms(k) is not None]
    words = [label(table, "ttft_parts_title"), "; ".join(each), label(table, "ttft_parts_engine",
                                                                        ms=fmt_ms(parts.engine_ttft_ms))]
    if parts.felt:
        words.append(label(table, "ttft_parts_felt", ms=fmt_ms(parts.felt_ttft_ms)))
    return ". ".join(words)

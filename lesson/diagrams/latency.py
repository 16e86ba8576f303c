"""How long each output token took: one stacked bar per token, measured.

A bar spans the wait from the previous token (from the request start, for the
first) to this token, so its full height is TTFT for the first bar and that
token's ITL for every later one. It is split into what the time was spent on
(`RequestTrace.latency_parts`):

    bottom  the forward pass that made the token (Prefill blue, Decode orange)
    middle  page drawing: the stream's caller held the loop and the model waited (teal)
    top     other waiting: tokenizing, queued for the model lock, bookkeeping (violet)

TTFT is written at the first bar, TPOT (= the mean ITL) is a dashed line, the
ITL p50 and p99 are dotted lines, and each ITL is a dot at the top of its bar;
a note gives the whole spread (p50 / p90 / p99 / max). The same numbers as a
hoverable plotly figure: `lesson.charts.run.latency_figure`.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.contract.trace import RequestTrace

from ..layout import LinearScale, nice_ticks, sample_indices, text_width, wrap_text
from ..text import Table, label, table_for
from ..style import DEFAULT_STYLE, Style
from ..formats import fmt_int, fmt_ms
from ._common import (
    add_title, halo, header, legend_block, legend_rows, new_drawing, notes, notes_height, pass_tick, text, to_string,
)

MAX_BARS, MAX_TITLED = 600, 128
PREFILL_SLOT_W = 40
PAD, PLOT_W, PLOT_H, Y_LABEL_W, RIGHT_GUTTER = 32, 760, 290, 64, 96
PAGE_NOTE_MIN_MS = 0.1  # below this the page's drawing is not worth a sentence


@dataclass(frozen=True)
class Segment:
    kind: str  # one of SEGMENT_KINDS
    y: float  # top
    h: float
    ms: float


@dataclass(frozen=True)
class LatencyBar:
    step_index: int
    phase: str
    x: float
    w: float
    y: float  # top of the pass segment
    ms: float  # the pass alone
    total_ms: float  # the whole wait for this token: TTFT or its ITL
    segments: tuple[Segment, ...]  # pass, page, waiting (zero-height ones left out)
    itl_ms: float | None
    itl_y: float | None
    tick: str | None

    def segment_ms(self, kind: str) -> float:
        return sum(s.ms for s in self.segments if s.kind == kind)


@dataclass(frozen=True)
class RefLine:
    kind: str  # "tpot", "p50", "p99"
    y: float
    label_y: float  # nudged so the labels in the right gutter never overlap
    words: str


@dataclass(frozen=True)
class LatencyLayout:
    width: float
    height: float
    left: float
    top: float
    bottom: float
    right: float
    bars: tuple[LatencyBar, ...]
    y_ticks: tuple[tuple[float, str], ...]
    lines: tuple[RefLine, ...]
    legend_y: float
    notes_y: float
    notes: tuple[str, ...]
    ttft_lines: tuple[str, ...] = ()  # the TTFT label, on more lines when the width is to fit
    x_label_lines: tuple[str, ...] = ()
    value_labels: bool = True  # each Decode bar's ms above it (only where they do not collide)
    legend_items: tuple[tuple[str, str], ...] = ()  # (kind, caption) left to right, wrapped when fitted

    @property
    def tpot_y(self) -> float | None:
        return next((line.y for line in self.lines if line.kind == "tpot"), None)


def _segments(parts, y: LinearScale) -> tuple[Segment, ...]:
    """The stack for one bar, bottom up; segments under half a pixel are left out."""
    stack, base = [], 0.0
    for kind, ms in (("pass", parts.pass_ms), ("page", parts.consumer_ms),
                     ("waiting", parts.lock_wait_ms + parts.other_ms)):
        top_y, base_y = y(base + ms), y(base)
        if kind == "pass" or base_y - top_y >= 0.5:
            stack.append(Segment(kind, round(top_y, 2), round(max(base_y - top_y, 0.5), 2), ms))
        base += ms
    return tuple(stack)


def spread_apart(ys: list[float], min_gap: float) -> list[float]:
    """The same values, in the same order, pushed down where needed so that neighbours
    (sorted by value) are at least `min_gap` apart."""
    order = sorted(range(len(ys)), key=ys.__getitem__)
    placed, last = list(ys), None
    for i in order:
        if last is not None and placed[i] < last + min_gap:
            placed[i] = last + min_gap
        last = placed[i]
    return placed


def _ref_words(trace: RequestTrace, table: Table) -> tuple[tuple[str, str, float], ...]:
    metrics = trace.metrics
    if metrics.tpot_ms is None:
        return ()
    return (("tpot", label(table, "lat_tpot_line", ms=fmt_ms(metrics.tpot_ms)), metrics.tpot_ms),
            ("p50", label(table, "lat_pct_line", p=50, ms=fmt_ms(metrics.p50_itl_ms)), metrics.p50_itl_ms),
            ("p99", label(table, "lat_pct_line", p=99, ms=fmt_ms(metrics.p99_itl_ms)), metrics.p99_itl_ms))


def _ref_lines(trace: RequestTrace, y: LinearScale, table: Table, style: Style) -> tuple[RefLine, ...]:
    values = _ref_words(trace, table)
    if not values:
        return ()
    ys = [y(ms) for _, _, ms in values]
    label_ys = spread_apart(ys, style.small_size * 1.15)
    overflow = max(label_ys) - (y.r0 + style.small_size * 0.3)  # never below the x axis, where its labels are
    if style.fitted and overflow > 0:
        label_ys = [v - overflow for v in label_ys]
    return tuple(RefLine(kind, round(line_y, 2), round(label_y, 2), words)
                 for (kind, words, _), line_y, label_y in zip(values, ys, label_ys))


def _notes(trace: RequestTrace, table: Table) -> tuple[str, ...]:
    lines = [label(table, k) for k in ("lat_legend_ttft", "lat_legend_tpot", "lat_legend_itl")]
    metrics = trace.metrics
    if metrics.itl_ms:
        lines.append(label(table, "lat_spread", n=fmt_int(len(metrics.itl_ms)), p50=fmt_ms(metrics.p50_itl_ms),
                           p90=fmt_ms(metrics.p90_itl_ms), p99=fmt_ms(metrics.p99_itl_ms),
                           max=fmt_ms(metrics.max_itl_ms)))
    page = [p.consumer_ms for p in trace.latency_parts()]
    if sum(page) >= PAGE_NOTE_MIN_MS:
        gaps = sum(ms >= PAGE_NOTE_MIN_MS for ms in page)
        lines.append(label(table, "lat_page_note", ms=fmt_ms(sum(page)), n=fmt_int(gaps)))
    return tuple(lines)


def _peak_ms(trace: RequestTrace) -> float:
    """The tallest thing drawn: a bar's whole wait (sampled bars only) or an ITL."""
    parts = trace.latency_parts()
    return max([parts[i].total_ms for i in sample_indices(len(trace.steps), MAX_BARS)] + list(trace.metrics.itl_ms))


def _num_slots(trace: RequestTrace, full: RequestTrace | None) -> int:
    """Bar slots across the plot: the whole run's when it is drawn bar for bar, so a
    step's bar stays put while the teacher steps; else one per drawn bar."""
    if full is not None and len(full.steps) <= MAX_BARS:
        return len(full.steps)
    return len(sample_indices(len(trace.steps), MAX_BARS))


def latency_layout(trace: RequestTrace, table: Table, style: Style = DEFAULT_STYLE,
                   full: RequestTrace | None = None, run_note: str = "") -> LatencyLayout:
    """Coordinates of every mark. `full`: the whole run when `trace` is a prefix of it;
    the y axis (and the bar slots, when it fits MAX_BARS) come from it. `run_note`: which of several
    repeats this run is (lesson.spread.run_label), the first note."""
    metrics, parts = trace.metrics, trace.latency_parts()
    ticks = nice_ticks(0, _peak_ms(full or trace) * 1.05, 5)
    plot_w, y_label_w, gutter, top = PLOT_W, Y_LABEL_W, RIGHT_GUTTER, 160.0
    ttft_words = _ttft_words(trace, table)
    ttft_lines, x_lines = (ttft_words,), (label(table, "lat_axis_x"),)
    if style.fitted:  # classroom: big type in a fixed width; the plot takes what the labels leave
        y_label_w = max(text_width(f"{t:g}", style.tiny_size) for t in ticks) + 16
        # the reference lines' labels: the whole run's when stepping, so the plot keeps its width from pass 1
        gutter = max([text_width(w, style.small_size) for _, w, _ in _ref_words(full or trace, table)] + [0]) + 16
        plot_w = style.max_width - 2 * PAD - y_label_w - gutter
        first_mid = max(plot_w / _num_slots(trace, full), PREFILL_SLOT_W) / 2  # the label starts at bar 1's middle
        ttft_lines = wrap_text(ttft_words, plot_w + gutter - first_mid - 6, style.small_size)
        x_lines = wrap_text(x_lines[0], plot_w + y_label_w, style.small_size)
        top = 96 + style.small_size * 1.6 + len(ttft_lines) * style.small_size * 1.25 + 12
    left = PAD + y_label_w
    bottom, right = top + PLOT_H, left + plot_w
    picks = sample_indices(len(trace.steps), MAX_BARS)
    y = LinearScale(0, ticks[-1], bottom, top)
    # Prefill keeps a readable slot even beside hundreds of Decode bars.
    num_slots = _num_slots(trace, full)
    first_w = max(plot_w / num_slots, PREFILL_SLOT_W)
    slot_w = (plot_w - first_w) / max(num_slots - 1, 1)
    max_named, max_ticks = 16, 12
    if style.fitted:
        max_named = int((slot_w if num_slots > 1 else first_w) // (text_width("D99", style.tiny_size) + 8))
        max_ticks = min(12, int(plot_w // (text_width("9999", style.tiny_size) + 12)))
    bars = []
    for position, index in enumerate(picks):
        step = trace.steps[index]
        itl = metrics.itl_ms[index - 1] if index > 0 else None
        width = first_w if position == 0 else slot_w
        center = left + first_w / 2 if position == 0 else left + first_w + slot_w * (position - 0.5)
        bar_w = round(min(48.0, max(width * 0.7, 0.8)), 2)
        x = round(center - bar_w / 2, 2)
        bars.append(LatencyBar(index, step.phase, x, bar_w, y(step.duration_ms), step.duration_ms,
                               parts[index].total_ms, _segments(parts[index], y), itl,
                               None if itl is None else y(itl),
                               pass_tick(index, step.phase, position, num_slots, table, max_named, max_ticks)))
    width = right + gutter + PAD
    note_lines = ((run_note,) if run_note else ()) + _notes(trace, table)
    x_label_y = bottom + 40 + max(0, style.tiny_size - 11)
    legend_y = x_label_y + (len(x_lines) - 1) * style.small_size * 1.3 + 32 + max(0, style.small_size - 13)
    items = _legend_items(trace, bars, table)
    lines = legend_rows(style, [words for _, words in items], PAD, width - PAD)
    notes_y = legend_y + (len(lines) - 1) * style.small_size * 1.6 + 8
    height = notes_y + notes_height(style, list(note_lines), width - 2 * PAD) + 24
    if full is not None and full is not trace:  # the whole run's legend and notes take more lines: room for them
        height = max(height, latency_layout(full, table, style, full, run_note).height)
    value_w = max((text_width(fmt_ms(b.total_ms), style.tiny_size) for b in bars if b.phase == "decode"), default=0)
    return LatencyLayout(width, height, left, top, bottom, right, tuple(bars),
                         tuple((y(t), f"{t:g}") for t in ticks), _ref_lines(trace, y, table, style),
                         legend_y, notes_y, note_lines, tuple(ttft_lines), tuple(x_lines),
                         len(bars) <= 16 and slot_w >= value_w + 4, items)


def _ttft_words(trace: RequestTrace, table: Table) -> str:
    metrics, prefill = trace.metrics, trace.steps[0]
    return label(table, "lat_ttft", ms=fmt_ms(metrics.ttft_ms), prefill=fmt_ms(prefill.duration_ms),
                 rest=fmt_ms(metrics.ttft_ms - prefill.duration_ms))


def _legend_items(trace: RequestTrace, bars, table: Table) -> tuple[tuple[str, str], ...]:
    items = [(phase, label(table, "lat_legend_pass", phase=label(table, f"phase_{phase}")))
             for phase in ("prefill", "decode") if any(s.phase == phase for s in trace.steps)]
    if any(s.kind == "page" for bar in bars for s in bar.segments):
        items.append(("page", label(table, "legend_page")))
    items.append(("waiting", label(table, "legend_waiting")))
    return tuple(items)


def _draw_axes(dwg, layout: LatencyLayout, style: Style, table: Table) -> None:
    for y, words in layout.y_ticks:
        dwg.add(dwg.line((layout.left, y), (layout.right, y), stroke=style.grid, stroke_width=1, class_="grid"))
        dwg.add(text(dwg, words, layout.left - 8, y + 4, size=style.tiny_size, fill=style.muted_ink, anchor="end",
                     class_="tick-label"))
    above = 40 + (len(layout.ttft_lines) - 1) * style.small_size * 1.25 + max(0, style.small_size - 13)
    dwg.add(text(dwg, label(table, "lat_axis_y") + " (ms)", PAD, layout.top - above, size=style.small_size,
                 fill=style.muted_ink, weight="bold", class_="axis-label"))
    x = layout.left if len(layout.x_label_lines) == 1 else PAD
    for i, line in enumerate(layout.x_label_lines):
        dwg.add(text(dwg, line, x, layout.bottom + 40 + max(0, style.tiny_size - 11) + i * style.small_size * 1.3,
                     size=style.small_size, fill=style.muted_ink, weight="bold", class_="axis-label"))


def _segment_fill(kind: str, phase: str, style: Style) -> str:
    return {"pass": style.phase_color(phase), "page": style.page, "waiting": style.waiting}[kind]


def _draw_bar(dwg, bar: LatencyBar, layout: LatencyLayout, style: Style, table: Table, trace: RequestTrace) -> list:
    """The stacked bar (the pass segment carries data-step / data-ms), its ITL dot, its labels.
    Past MAX_TITLED bars no per-bar tooltip: hundreds of <title>s would double the file for
    detail the plotly chart gives."""
    step = trace.steps[bar.step_index]
    group = dwg.g(class_=f"latency-stack {bar.phase}", **{"data-step": bar.step_index,
                                                          "data-total-ms": f"{bar.total_ms:.3f}"})
    for segment in bar.segments:
        kind_class = f"latency-bar {bar.phase}" if segment.kind == "pass" else f"latency-{segment.kind}"
        extra = {"data-step": bar.step_index} if segment.kind == "pass" else {}
        group.add(dwg.rect((bar.x, segment.y), (bar.w, segment.h), fill=_segment_fill(segment.kind, bar.phase, style),
                           class_=kind_class, **extra, **{"data-ms": f"{segment.ms:.3f}"}))
    if len(layout.bars) <= MAX_TITLED:
        itl = "" if bar.itl_ms is None else f", {label(table, 'itl', ms=fmt_ms(bar.itl_ms))}"
        add_title(group, label(table, "lat_bar_title", n=bar.step_index + 1, phase=label(table, f"phase_{bar.phase}"),
                               positions=fmt_int(step.num_positions), ms=fmt_ms(bar.ms),
                               page_ms=fmt_ms(bar.segment_ms("page")),
                               wait_ms=fmt_ms(bar.total_ms - bar.ms - bar.segment_ms("page"))) + itl)
    parts = [group]
    if bar.itl_y is not None:
        parts.append(dwg.circle((round(bar.x + bar.w / 2, 2), bar.itl_y), r=3 if bar.w >= 6 else 1.6,
                                fill=style.paper, stroke=style.ink, stroke_width=1.2, class_="itl",
                                **{"data-ms": f"{bar.itl_ms:.3f}"}))
    top = min(s.y for s in bar.segments)
    if layout.value_labels and bar.phase == "decode":  # haloed: the TPOT line may pass right here
        parts.append(text(dwg, fmt_ms(bar.total_ms), bar.x + bar.w / 2, top - 12, size=style.tiny_size,
                          fill=style.ink, anchor="middle", class_="value-label", **halo(style)))
    if bar.tick:
        parts.append(text(dwg, bar.tick, bar.x + bar.w / 2, layout.bottom + 7 + style.tiny_size, size=style.tiny_size,
                          fill=style.phase_color(bar.phase), anchor="middle", weight="bold", class_="tick-label"))
    return parts


def _draw_marks(dwg, trace: RequestTrace, layout: LatencyLayout, style: Style, table: Table) -> None:
    first = layout.bars[0]
    first_top = min(s.y for s in first.segments)
    dwg.add(dwg.line((first.x + first.w / 2, first_top), (first.x + first.w / 2, layout.top - 12),
                     stroke=style.prefill, stroke_width=1.2, class_="ttft-leader"))
    num = len(layout.ttft_lines)
    for i, line in enumerate(layout.ttft_lines):
        dwg.add(text(dwg, line, first.x + first.w / 2 + 6, layout.top - 16 - (num - 1 - i) * style.small_size * 1.25,
                     size=style.small_size, fill=style.prefill, weight="bold", class_="ttft"))
    start = layout.bars[1].x if len(layout.bars) > 1 else layout.left
    for line in sorted(layout.lines, key=lambda line: line.kind == "tpot"):  # TPOT on top when they coincide
        ink = style.decode if line.kind == "tpot" else style.muted_ink
        dash = "6,4" if line.kind == "tpot" else "2,3"
        dwg.add(dwg.line((start - 4, line.y), (layout.right, line.y), stroke=ink, stroke_width=1.5,
                         stroke_dasharray=dash, class_=line.kind))
        dwg.add(text(dwg, line.words, layout.right + 8, line.label_y + style.small_size * 0.36, size=style.small_size,
                     fill=ink, weight="bold" if line.kind == "tpot" else None, class_=f"{line.kind}-label"))


def _draw_legend(dwg, trace: RequestTrace, layout: LatencyLayout, style: Style, table: Table) -> None:
    fills = {"prefill": style.prefill, "decode": style.decode, "page": style.page, "waiting": style.waiting}
    legend_block(dwg, style, [(fills[kind], words, kind) for kind, words in layout.legend_items],
                 PAD, layout.legend_y, layout.width - PAD)


def render_latency(trace: RequestTrace, *, lang: str = "zh", style: Style | None = None,
                   full: RequestTrace | None = None, run_note: str = "") -> str:
    """One stacked bar per output token (pass + page drawing + other waiting), with TTFT,
    TPOT, ITL and its p50 / p99 marked (measured times).

    `full`: the whole run when `trace` is a prefix of it: the y axis and the bar slots
    come from it, so stepping through the run never rescales the figure. `run_note`: which of several
    repeats this is (lesson.spread.run_label), drawn as the first note; "" for a single run."""
    table, style = table_for(lang), style or DEFAULT_STYLE
    if not trace.steps:
        raise ValueError("the latency diagram needs a trace with at least one forward pass")
    layout = latency_layout(trace, table, style, full, run_note)
    dwg = new_drawing(layout.width, layout.height, style, "latency", label(table, "lat_title"))
    m = trace.model
    header(dwg, style, label(table, "lat_title"), f"{m.model_id} · {m.device} · {m.dtype}")
    _draw_axes(dwg, layout, style, table)
    for bar in layout.bars:
        for part in _draw_bar(dwg, bar, layout, style, table, trace):
            dwg.add(part)
    _draw_marks(dwg, trace, layout, style, table)
    _draw_legend(dwg, trace, layout, style, table)
    notes(dwg, style, list(layout.notes), PAD, layout.notes_y, layout.width - 2 * PAD)
    return to_string(dwg)

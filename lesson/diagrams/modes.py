"""One prompt run in several engine modes: where a Decode step's time goes.

Input: the traces of the SAME prompt and lengths, one per engine mode asked for
(`{"eager": trace, "static": trace, ...}`, in the order to draw), and optionally the
cost model's floor for each step (`floors_ms[i]` for `steps[i]`, the same for every
mode: the floor depends only on the positions a pass handles).

`mode_summaries` turns them into plain rows (what ran, Prefill ms, the Decode steps'
median and spread, the attention kernels, whether the tokens match eager's); the SVG
(`render_modes`) and the app's plotly chart (`modes_figure`) draw the same rows:

    eager     ·  ·|·  ·        one row per mode: every Decode step a dot, the median a bar,
    static     · ·|· ·          a line from the fastest to the slowest step,
    compiled  ·|·               the floor a dashed line through every row
              0   2   4 ms

Bars carry data-mode, data-ran, data-median-ms, data-floor-ms so tests check the
picture against the numbers. Every label is escaped by svgwrite (model ids and engine
notes are not the lesson's own text).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from engine.contract.trace import RequestTrace, attention_kernels

from ..formats import fmt_ms
from ..layout import LinearScale, nice_ticks, text_width, wrap_text
from ..style import DEFAULT_STYLE, Style
from ..text import t
from ..spread import outlier_indices, point_spread
from ._common import (
    OUTLIER_COLOR, add_title, halo, header, new_drawing, notes, notes_height, outlier_ring, text, to_string,
)

PAD, STRIP_H, ROW_GAP, LEGEND_Y = 32, 26, 18, 108
PLOT_W = 760  # default width of the time axis; classroom mode fits style.max_width instead
DOT_R = 3.5


@dataclass(frozen=True)
class ModeSummary:
    """One mode's run of the prompt, in plain numbers (ms)."""

    asked: str  # the mode requested
    ran: str  # trace.engine_mode: what really ran
    note: str  # trace.engine_note: why it fell back, "" normally
    prefill_ms: float | None
    decode_ms: tuple[float, ...]  # every Decode step, in order
    prefill_kernel: str  # "" when the trace does not say (older traces)
    decode_kernel: str  # the Decode steps' kernels, "flash" or "flash, math"
    same_tokens: bool | None  # the same output ids as the eager run; None without an eager run
    floor_ms: float | None  # the median Decode step's floor (cost model), if given
    prefill_floor_ms: float | None
    setup_ms: float = 0.0  # trace.engine_setup_ms: building the runner (compile, capture) before the request

    @property
    def median_ms(self) -> float | None:
        return statistics.median(self.decode_ms) if self.decode_ms else None

    @property
    def outlier_steps(self) -> tuple[int, ...]:
        """Indices (into decode_ms) of the steps far from the mode's others: lesson.spread's one rule."""
        return outlier_indices(self.decode_ms)

    @property
    def step_spread(self) -> tuple[float, float]:
        """(fastest, slowest) Decode step that is not an outlier, as the sweep draws a point's line."""
        low, high, _ = point_spread(self.decode_ms)
        return low, high

    @property
    def vs_floor(self) -> float | None:
        """measured ÷ floor for the median Decode step (1.0 = at the floor)."""
        median = self.median_ms
        return median / self.floor_ms if median is not None and self.floor_ms else None


def step_kernels(steps) -> str:
    return ", ".join(attention_kernels(steps))


def mode_summaries(runs: Mapping[str, RequestTrace], floors_ms: Sequence[float] | None = None) -> list[ModeSummary]:
    """One summary per mode asked, in `runs`' order. `floors_ms`: each step's floor, index 0 the Prefill."""
    if not runs:
        raise ValueError("the engine modes figure needs at least one run")
    eager = runs.get("eager")
    decode_floors = list(floors_ms[1:]) if floors_ms else []
    floor = statistics.median(decode_floors) if decode_floors else None
    rows = []
    for asked, trace in runs.items():
        prefill, decode = trace.prefill, trace.decode_steps
        rows.append(ModeSummary(
            asked=asked, ran=trace.engine_mode, note=trace.engine_note,
            prefill_ms=prefill.duration_ms if prefill else None,
            decode_ms=tuple(s.duration_ms for s in decode),
            prefill_kernel=prefill.attention_kernel if prefill else "", decode_kernel=step_kernels(decode),
            same_tokens=None if eager is None else trace.output_ids == eager.output_ids,
            floor_ms=floor, prefill_floor_ms=floors_ms[0] if floors_ms else None,
            setup_ms=trace.engine_setup_ms))
    return rows


def kernel_words(lang: str, prefill_kernel: str, decode_kernel: str, decode_ran: bool = True) -> str:
    """"attention kernel: Prefill flash, Decode flash" ("n/a" for a trace that does not say);
    "attention kernel: Prefill flash (no Decode step)" when no Decode step ran (a one-token answer)."""
    na = t(lang, "modes_kernel_na")
    if not decode_ran and not decode_kernel:
        return t(lang, "modes_kernels_no_decode", prefill=prefill_kernel or na)
    return t(lang, "modes_kernels", prefill=prefill_kernel or na, decode=decode_kernel or na)


def headline(rows: Sequence[ModeSummary], lang: str) -> str:
    """"eager → compiled removes X ms per Decode step (A → B); the floor is Y." with the slowest
    and the fastest mode; one mode: its median against the floor."""
    timed = [r for r in rows if r.median_ms is not None]
    if not timed:
        return t(lang, "modes_no_decode")
    base = next((r for r in timed if r.asked == "eager"), timed[0])
    best = min(timed, key=lambda r: r.median_ms)
    floor = t(lang, "modes_floor_is", floor=fmt_ms(base.floor_ms)) if base.floor_ms else ""
    if best is base:
        return t(lang, "modes_headline_one", mode=base.asked, ms=fmt_ms(base.median_ms)) + floor
    return t(lang, "modes_headline", base=base.asked, best=best.asked, saved=fmt_ms(base.median_ms - best.median_ms),
             base_ms=fmt_ms(base.median_ms), best_ms=fmt_ms(best.median_ms)) + floor


def prefill_outliers(rows: Sequence[ModeSummary]) -> list[ModeSummary]:
    """The modes whose Prefill (the same prompt in every mode) is far from the other modes' (the same rule)."""
    timed = [r for r in rows if r.prefill_ms is not None]
    return [timed[i] for i in outlier_indices([r.prefill_ms for r in timed])]


def outlier_notes(rows: Sequence[ModeSummary], lang: str) -> list[str]:
    """The noise notes: how many Decode steps are ringed, and each Prefill far from the other modes'."""
    lines = []
    num = sum(len(r.outlier_steps) for r in rows)
    if num:
        lines.append(t(lang, "modes_outliers_note", n=num, total=sum(len(r.decode_ms) for r in rows)))
    others = [r.prefill_ms for r in rows if r.prefill_ms is not None]
    for row in prefill_outliers(rows):
        lines.append(t(lang, "modes_prefill_outlier", mode=row.asked, ms=fmt_ms(row.prefill_ms),
                       median=fmt_ms(statistics.median(others))))
    return lines


def row_title(row: ModeSummary, lang: str) -> str:
    """"compiled · Decode median 2.6 ms (2.4–3.1 ms)", or "… → ran static" after a fallback."""
    name = row.asked if row.ran == row.asked else t(lang, "modes_fell_back", asked=row.asked, ran=row.ran)
    if row.median_ms is None:
        return name
    return t(lang, "modes_row_title", mode=name, median=fmt_ms(row.median_ms), low=fmt_ms(min(row.decode_ms)),
             high=fmt_ms(max(row.decode_ms)))


def row_detail(row: ModeSummary, lang: str) -> str:
    """"Prefill 5.0 ms · attention kernel: Prefill flash, Decode flash · same tokens as eager ✓"."""
    parts = [t(lang, "modes_prefill_ms", ms=fmt_ms(row.prefill_ms)) if row.prefill_ms is not None else "",
             kernel_words(lang, row.prefill_kernel, row.decode_kernel, decode_ran=bool(row.decode_ms))]
    if row.same_tokens is not None and row.asked != "eager":
        parts.append(t(lang, "modes_same_tokens" if row.same_tokens else "modes_other_tokens"))
    return " · ".join(p for p in parts if p)


def axis_end_ms(rows: Sequence[ModeSummary], target_ticks: int = 5) -> float:
    """Where the time axis ends (a round tick): past every step, unless a few stragglers (a busy
    machine) lie far beyond the medians; then at about twice the largest median, and those steps
    are drawn at the right edge (`off_scale`), so one hiccup does not squash every bar."""
    values = [ms for r in rows for ms in r.decode_ms]
    anchors = [r.median_ms for r in rows if r.median_ms is not None] + [r.floor_ms for r in rows if r.floor_ms]
    if not values:
        return nice_ticks(0, max(anchors or [1.0]), target_ticks)[-1]
    return nice_ticks(0, min(max(values), 2 * max(anchors)), target_ticks)[-1]


def off_scale(rows: Sequence[ModeSummary], end_ms: float) -> list[float]:
    """The Decode steps beyond the axis' end, slowest first."""
    return sorted((ms for r in rows for ms in r.decode_ms if ms > end_ms), reverse=True)


# --- the SVG ----------------------------------------------------------------------------

@dataclass(frozen=True)
class RowLayout:
    row: ModeSummary
    title_lines: tuple[str, ...]
    detail_lines: tuple[str, ...]
    top: float  # the first text line's top
    strip_top: float  # the strip of dots and the median bar


def _widths(style: Style) -> tuple[float, float]:
    """(figure width, plot width): fixed, or fitted to style.max_width (classroom mode)."""
    width = style.max_width if style.fitted else PLOT_W + 2 * PAD
    return width, width - 2 * PAD


def _rows_layout(rows: Sequence[ModeSummary], lang: str, style: Style, top: float, plot_w: float) -> list[RowLayout]:
    out, y = [], top
    for row in rows:
        title = wrap_text(row_title(row, lang), plot_w, style.font_size)
        detail = wrap_text(row_detail(row, lang), plot_w, style.small_size)
        strip_top = y + len(title) * style.font_size * 1.35 + len(detail) * style.small_size * 1.4 + 6
        out.append(RowLayout(row, title, detail, y, strip_top))
        y = strip_top + STRIP_H + ROW_GAP
    return out


def render_modes(runs: Mapping[str, RequestTrace], *, floors_ms: Sequence[float] | None = None, lang: str = "zh",
                 style: Style | None = None) -> str:
    """The runs of one prompt in each engine mode: every Decode step, the median, the floor."""
    style = style or DEFAULT_STYLE
    rows = mode_summaries(runs, floors_ms)
    first = next(iter(runs.values()))
    width, plot_w = _widths(style)
    left, right = PAD, PAD + plot_w
    title = t(lang, "modes_fig_title")
    subtitle = t(lang, "modes_fig_subtitle", model=first.model.model_id, device=first.model.device,
                 prompt_len=first.prompt_len, steps=len(first.decode_steps))
    floor = next((r.floor_ms for r in rows if r.floor_ms), None)
    rings = any(r.outlier_steps for r in rows)
    legend_bottom = _legend(None, style, lang, left, right, bool(floor), rings)  # measure only
    plot_top = legend_bottom + style.small_size * 2.2
    layout = _rows_layout(rows, lang, style, plot_top, plot_w)
    plot_bottom = layout[-1].strip_top + STRIP_H + 8
    target = 5 if not style.fitted else 4
    end = axis_end_ms(rows, target)
    ticks = nice_ticks(0, end, target)
    xs = LinearScale(0, ticks[-1], left, right)
    lines = [headline(rows, lang)] + [t(lang, "modes_note_fallback", asked=r.asked, ran=r.ran, note=r.note)
                                      for r in rows if r.note]
    beyond = off_scale(rows, ticks[-1])
    if beyond:
        lines.append(t(lang, "modes_off_scale", n=len(beyond), slowest=fmt_ms(beyond[0])))
    lines += outlier_notes(rows, lang)
    lines.append(t(lang, "modes_fig_note"))
    if first.model.random_weights:
        lines.append(t(lang, "random_weights_note"))
    axis_y = plot_bottom + style.tiny_size + 8
    height = axis_y + style.small_size + 14 + notes_height(style, lines, width - 2 * PAD) + 24
    dwg = new_drawing(width, height, style, "engine-modes", title)
    header(dwg, style, title, subtitle)
    _legend(dwg, style, lang, left, right, bool(floor), rings)
    for tick in ticks:
        x = xs(tick)
        dwg.add(dwg.line((x, plot_top), (x, plot_bottom), stroke=style.grid, stroke_width=1, class_="grid"))
        dwg.add(text(dwg, fmt_ms(tick) if tick else "0", x, plot_bottom + style.tiny_size + 4, size=style.tiny_size,
                     fill=style.muted_ink, anchor="middle" if tick else "start", class_="tick-label"))
    dwg.add(text(dwg, t(lang, "modes_axis"), left, axis_y + style.small_size + 4, size=style.small_size,
                 fill=style.muted_ink, weight="bold", class_="axis-label"))
    if floor:  # under the rows: their labels' halo keeps it out of the words
        _floor_line(dwg, style, lang, xs(floor), floor, plot_top, plot_bottom, right)
    for row_layout in layout:
        _draw_row(dwg, row_layout, xs, style, lang)
        if floor:  # and again over each strip, so the median bar never hides it
            top = row_layout.strip_top
            dwg.add(dwg.line((xs(floor), top), (xs(floor), top + STRIP_H), stroke=style.ink, stroke_width=2,
                             stroke_dasharray="5 4", class_="floor-mark"))
    notes(dwg, style, lines, PAD, axis_y + style.small_size + 8, width - 2 * PAD)
    return to_string(dwg)


def _legend(dwg, style: Style, lang: str, left: float, right: float, floor: bool = True,
            rings: bool = False) -> float:
    """Dot = a Decode step, bar = the median with the fastest-to-slowest line, dashed = the floor, a red ring
    (only where there is one) = a step far from the others.
    Items go on as many lines as the width needs; returns the last line's baseline (draws when dwg)."""
    items = [("dot", t(lang, "modes_legend_step")), ("bar", t(lang, "modes_legend_median"))]
    if floor:
        items.append(("floor", t(lang, "modes_legend_floor")))
    if rings:
        items.append(("outlier", t(lang, "modes_legend_outlier")))
    x, y, gap = left, float(LEGEND_Y), 24
    for kind, words in items:
        w = 22 + text_width(words, style.small_size)
        if x > left and x + w > right:
            x, y = left, y + style.small_size * 1.6
        if dwg is not None:
            group = dwg.g(class_=f"legend-item {kind}")
            mid = y - style.small_size * 0.35
            if kind == "dot":
                group.add(dwg.circle((x + 8, mid), DOT_R + 1, fill=style.decode))
            elif kind == "outlier":
                group.add(dwg.circle((x + 8, mid), 5, fill="none", stroke=OUTLIER_COLOR, stroke_width=2))
            elif kind == "bar":
                group.add(dwg.rect((x, mid - 6), (16, 12), fill=style.decode_light, stroke=style.decode,
                                   stroke_width=1.5))
            else:
                group.add(dwg.line((x + 8, mid - 8), (x + 8, mid + 8), stroke=style.ink, stroke_width=2,
                                   stroke_dasharray="4 3"))
            group.add(text(dwg, words, x + 22, y, size=style.small_size, fill=style.ink))
            dwg.add(group)
        x += w + gap
    return y


def _draw_row(dwg, layout: RowLayout, xs: LinearScale, style: Style, lang: str) -> None:
    row = layout.row
    group = dwg.g(class_=f"mode-row {row.asked}", **{"data-mode": row.asked, "data-ran": row.ran})
    y = layout.top
    for line in layout.title_lines:
        y += style.font_size * 1.35
        group.add(text(dwg, line, xs.r0, y - style.font_size * 0.3, size=style.font_size, fill=style.ink,
                       weight="bold", class_="mode-title", **halo(style)))
    for line in layout.detail_lines:
        y += style.small_size * 1.4
        group.add(text(dwg, line, xs.r0, y - style.small_size * 0.3, size=style.small_size, fill=style.muted_ink,
                       class_="mode-detail", **halo(style)))
    top, mid = layout.strip_top, layout.strip_top + STRIP_H / 2
    if row.median_ms is not None:
        data = {"data-mode": row.asked, "data-ran": row.ran, "data-median-ms": repr(row.median_ms),
                "data-floor-ms": repr(row.floor_ms) if row.floor_ms else ""}
        bar = dwg.rect((xs.r0, top + 3), (max(xs(row.median_ms) - xs.r0, 1.0), STRIP_H - 6), fill=style.decode_light,
                       stroke=style.decode, stroke_width=1.5, class_="median-bar", **data)
        group.add(add_title(bar, row_title(row, lang)))
        end = xs.d1
        low, high = row.step_spread  # the outliers' own rings, not the line, show how far they went
        group.add(dwg.line((xs(low), mid), (xs(min(high, end)), mid), stroke=style.decode, stroke_width=2,
                           class_="spread"))
        for i, ms in enumerate(row.decode_ms, start=1):
            data = {"data-step": i, "data-ms": repr(ms)}
            if ms > end:  # a straggler past the axis: an arrowhead at the edge
                x = xs(end)
                dot = dwg.polygon([(x - 9, mid - 6), (x, mid), (x - 9, mid + 6)], fill=style.decode,
                                  class_="step off-scale", **data)
            else:
                dot = dwg.circle((xs(ms), mid), DOT_R, fill=style.decode, fill_opacity=0.75, class_="step", **data)
            group.add(add_title(dot, f"D{i}: {fmt_ms(ms)}"))
            if i - 1 in row.outlier_steps:
                group.add(outlier_ring(dwg, xs(min(ms, end)) - (4 if ms > end else 0), mid,
                                       t(lang, "modes_outlier_title", mode=row.asked, n=i, ms=fmt_ms(ms),
                                         median=fmt_ms(row.median_ms)), **data))
    dwg.add(group)


def _floor_line(dwg, style: Style, lang: str, x: float, floor_ms: float, top: float, bottom: float,
                right: float) -> None:
    words = t(lang, "modes_floor_label", floor=fmt_ms(floor_ms))
    dwg.add(dwg.line((x, top - style.small_size * 1.2), (x, bottom), stroke=style.ink, stroke_width=2,
                     stroke_dasharray="5 4", class_="floor-line", **{"data-floor-ms": repr(floor_ms)}))
    anchor = "start" if x + 6 + text_width(words, style.small_size) <= right else "end"
    dwg.add(text(dwg, words, x + 6 if anchor == "start" else x - 6, top - style.small_size * 0.4,
                 size=style.small_size, fill=style.ink, anchor=anchor, class_="floor-label", **halo(style)))

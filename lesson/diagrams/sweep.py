"""A sweep (`engine.contract.sweep.Sweep`) drawn: measured medians beside the cost model's floors.

Two panels share a log x axis (the swept value: prompt length, context or batch size):
time of one pass on a log scale (measured median with a line from the fastest to the
slowest repeat that is not an outlier, each outlier a red ring of its own: lesson.spread's
rule, a repeat far from the others), the floor hollow and dashed; and positions per second
(measured and the floor's best). Marks carry data-value, data-ms and data-floor-ms for
tests; a spread line also data-low-ms and data-high-ms, an outlier ring data-ms.
"""

from __future__ import annotations

import math

from ..formats import fmt_time, si
from ..layout import LogScale
from ..spread import point_spread
from ..style import DEFAULT_STYLE, Style
from ..text import label, table_for
from ._common import (
    OUTLIER_COLOR, add_title, header, legend_item, legend_item_width, new_drawing, notes, text, to_string,
)
from .roofline import bound_word, decade_range

PAD, Y_LABEL_W, PLOT_W, PANEL_H, PANEL_GAP, TOP = 32, 78, 680, 220, 70, 140


def _color(kind: str, style: Style) -> str:
    return style.prefill if kind == "prefill" else style.decode


def render_sweep(sweep, *, lang: str = "zh", style: Style | None = None) -> str:
    table, style = table_for(lang), style or DEFAULT_STYLE
    if not sweep.points:
        raise ValueError("a sweep figure needs at least one point")
    key = sweep.kind.replace("-", "_")
    title = label(table, f"sw_title_{key}")
    left, right = PAD + Y_LABEL_W, PAD + Y_LABEL_W + PLOT_W
    width = right + PAD + 12
    rate_top = TOP + PANEL_H + PANEL_GAP
    dwg = new_drawing(width, rate_top + PANEL_H + 150, style, f"sweep {sweep.kind}", title)
    header(dwg, style, title, label(table, "sw_subtitle", model=sweep.model_id, device=sweep.device, dtype=sweep.dtype,
                                    repeats=sweep.repeats, spec=sweep.device_spec))
    spreads = [point_spread(p.times_ms) for p in sweep.points]
    num_outliers = sum(len(outliers) for _, _, outliers in spreads)
    _legend(dwg, style, table, _color(sweep.kind, style), num_outliers > 0)
    values = [p.value for p in sweep.points]
    lo, hi = (min(values), max(values)) if len(values) > 1 else (values[0] / 2, values[0] * 2)
    xs = LogScale(math.log10(lo) - 0.08, math.log10(hi) + 0.08, left + 10, right - 10)
    _time_panel(dwg, style, table, sweep, xs, spreads)
    _rate_panel(dwg, style, table, sweep, xs, rate_top)
    x_axis = label(table, f"sw_x_{key}", context=sweep.batch_context)
    dwg.add(text(dwg, x_axis, left, rate_top + PANEL_H + 38, size=style.small_size, fill=style.muted_ink,
                 weight="bold", class_="axis-label"))
    notes(dwg, style, _note_lines(sweep, table, num_outliers), PAD, rate_top + PANEL_H + 46, width - 2 * PAD)
    return to_string(dwg)


def _legend(dwg, style: Style, table, color: str, with_outliers: bool) -> None:
    x = legend_item(dwg, style, PAD, 108, color, label(table, "sw_measured"), "measured")
    group = dwg.g(class_="legend-item floor")
    group.add(dwg.circle((x + 7, 104), 6, fill=style.paper, stroke=style.ink, stroke_width=2))
    group.add(text(dwg, label(table, "sw_floor"), x + 20, 108, size=style.small_size, fill=style.ink))
    dwg.add(group)
    if with_outliers:  # only a sweep that has one says what a red ring is
        x += legend_item_width(style, label(table, "sw_floor"))
        group = dwg.g(class_="legend-item outlier")
        group.add(dwg.circle((x + 7, 104), 5, fill="none", stroke=OUTLIER_COLOR, stroke_width=2))
        group.add(text(dwg, label(table, "sw_outlier"), x + 20, 108, size=style.small_size, fill=style.ink))
        dwg.add(group)


def _frame(dwg, style: Style, top: float, values, fmt, axis: str) -> LogScale:
    """A panel's frame, grid and y ticks (whole decades covering `values`); its y scale."""
    left, right, bottom = PAD + Y_LABEL_W, PAD + Y_LABEL_W + PLOT_W, top + PANEL_H
    y_lo, y_hi = decade_range(values, pad=0.1)
    ys = LogScale(y_lo, y_hi, bottom, top)
    for value in ys.decades():
        py = ys(value)
        dwg.add(dwg.line((left, py), (right, py), stroke=style.grid, stroke_width=1, class_="grid"))
        dwg.add(text(dwg, fmt(value), left - 8, py + 4, size=style.tiny_size, fill=style.muted_ink,
                     anchor="end", class_="tick-label"))
    dwg.add(dwg.rect((left, top), (PLOT_W, PANEL_H), fill="none", stroke=style.muted_ink, stroke_width=1,
                     class_="frame"))
    dwg.add(text(dwg, axis, PAD, top - 12, size=style.small_size, fill=style.muted_ink, weight="bold",
                 class_="axis-label"))
    return ys


def _lines(dwg, marks, style: Style, color: str, points: list[tuple[float, float]],
           floors: list[tuple[float, float]]) -> None:
    marks.add(dwg.polyline(points, fill="none", stroke=color, stroke_width=2, class_="measured-line"))
    marks.add(dwg.polyline(floors, fill="none", stroke=style.ink, stroke_width=1.5, stroke_dasharray="5 4",
                           class_="floor-line"))


def _time_panel(dwg, style: Style, table, sweep, xs: LogScale, spreads) -> None:
    """Time of one pass: each point's median, its spread line, its outliers, and its floor."""
    every = [t for p in sweep.points for t in p.times_ms]
    ys = _frame(dwg, style, TOP, every + [p.floor_ms for p in sweep.points], fmt_time, label(table, "sw_time_axis"))
    color, marks = _color(sweep.kind, style), dwg.g(class_="panel time")
    _lines(dwg, marks, style, color, [(xs(p.value), ys(p.median_ms)) for p in sweep.points],
           [(xs(p.value), ys(p.floor_ms)) for p in sweep.points])
    for point, (low, high, outliers) in zip(sweep.points, spreads):
        px, data = xs(point.value), _data(point)
        words = _point_words(table, point, low, high, len(outliers))
        marks.add(dwg.line((px, ys(low)), (px, ys(high)), stroke=color, stroke_width=2, class_="spread",
                           **data, **{"data-low-ms": repr(low), "data-high-ms": repr(high)}))
        for ms in outliers:
            marks.add(add_title(dwg.circle((px, ys(ms)), 5, fill="none", stroke=OUTLIER_COLOR, stroke_width=2,
                                           class_="outlier", **{"data-value": point.value, "data-ms": repr(ms)}),
                                label(table, "sw_outlier_title", x=point.value, ms=fmt_time(ms),
                                      median=fmt_time(point.median_ms))))
        marks.add(add_title(dwg.circle((px, ys(point.median_ms)), 5, fill=color, class_="measured time", **data),
                            words))
        marks.add(add_title(dwg.circle((px, ys(point.floor_ms)), 5, fill=style.paper, stroke=style.ink,
                                       stroke_width=1.5, class_="floor time", **data), words))
    dwg.add(marks)
    _x_ticks(dwg, style, sweep, xs, TOP + PANEL_H)


def _rate_panel(dwg, style: Style, table, sweep, xs: LogScale, top: float) -> None:
    """Positions per second, measured (from the median) and at the floor."""
    measured = [p.tokens_per_s for p in sweep.points]
    floor = [p.new_positions * p.batch / (p.floor_ms / 1e3) for p in sweep.points]
    ys = _frame(dwg, style, top, measured + floor, lambda v: si(v).strip(), label(table, "sw_rate_axis"))
    color, marks = _color(sweep.kind, style), dwg.g(class_="panel rate")
    _lines(dwg, marks, style, color, [(xs(p.value), ys(m)) for p, m in zip(sweep.points, measured)],
           [(xs(p.value), ys(f)) for p, f in zip(sweep.points, floor)])
    for point, m, f in zip(sweep.points, measured, floor):
        px, data = xs(point.value), _data(point)
        low, high, outliers = point_spread(point.times_ms)
        words = _point_words(table, point, low, high, len(outliers))
        marks.add(add_title(dwg.circle((px, ys(m)), 5, fill=color, class_="measured rate", **data), words))
        marks.add(add_title(dwg.circle((px, ys(f)), 5, fill=style.paper, stroke=style.ink, stroke_width=1.5,
                                       class_="floor rate", **data), words))
    dwg.add(marks)
    _x_ticks(dwg, style, sweep, xs, top + PANEL_H)


def _data(point) -> dict:
    return {"data-value": point.value, "data-ms": repr(point.median_ms), "data-floor-ms": repr(point.floor_ms)}


def _point_words(table, point, low: float, high: float, num_outliers: int) -> str:
    words = label(table, "sw_point_title", x=point.value, ms=fmt_time(point.median_ms), lo=fmt_time(low),
                  hi=fmt_time(high), floor=fmt_time(point.floor_ms), bound=bound_word(table, point.bound),
                  rate=si(point.tokens_per_s).strip())
    if num_outliers:
        words += " " + label(table, "sw_point_outliers", n=num_outliers, total=len(point.times_ms))
    return words


def _x_ticks(dwg, style: Style, sweep, xs: LogScale, bottom: float) -> None:
    for point in sweep.points:
        dwg.add(text(dwg, f"{point.value:,}", xs(point.value), bottom + 16, size=style.tiny_size,
                     fill=style.muted_ink, anchor="middle", class_="tick-label"))


def _note_lines(sweep, table, num_outliers: int) -> list[str]:
    first, last = sweep.points[0], sweep.points[-1]
    lines = [label(table, "sw_note", x0=f"{first.value:,}", x1=f"{last.value:,}",
                   measured_ratio=f"{last.median_ms / first.median_ms:.2g}",
                   floor_ratio=f"{last.floor_ms / first.floor_ms:.2g}")]
    if num_outliers:
        lines.append(label(table, "sw_outliers_note", n=num_outliers,
                           total=sum(len(p.times_ms) for p in sweep.points)))
    if sweep.random_weights:
        lines.append(label(table, "random_weights"))
    return lines

"""A sweep (`engine.sweep.Sweep`) drawn: measured medians beside the cost model's floors.

Two panels share a log x axis (the swept value: prompt length, context or batch size):
time of one pass on a log scale (measured median with a line from the fastest to the
slowest repeat, the floor hollow and dashed), and positions per second (measured and
the floor's best). Marks carry data-value, data-ms and data-floor-ms for tests.
"""

from __future__ import annotations

import math

from ..layout import LogScale
from ..text import label, table_for
from ..style import DEFAULT_STYLE, Style
from ._common import add_title, header, legend_item, new_drawing, notes, text, to_string
from .roofline import bound_word, decade_range, fmt_time, si

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
    time_top, rate_top = TOP, TOP + PANEL_H + PANEL_GAP
    height = rate_top + PANEL_H + 150
    dwg = new_drawing(width, height, style, f"sweep {sweep.kind}", title)
    header(dwg, style, title, label(table, "sw_subtitle", model=sweep.model_id, device=sweep.device, dtype=sweep.dtype,
                                    repeats=sweep.repeats, spec=sweep.device_spec))
    color = _color(sweep.kind, style)
    x = legend_item(dwg, style, PAD, 108, color, label(table, "sw_measured"), "measured")
    group = dwg.g(class_="legend-item floor")
    group.add(dwg.circle((x + 7, 104), 6, fill=style.paper, stroke=style.ink, stroke_width=2))
    group.add(text(dwg, label(table, "sw_floor"), x + 20, 108, size=style.small_size, fill=style.ink))
    dwg.add(group)

    values = [p.value for p in sweep.points]
    lo, hi = (min(values), max(values)) if len(values) > 1 else (values[0] / 2, values[0] * 2)
    xs = LogScale(math.log10(lo) - 0.08, math.log10(hi) + 0.08, left + 10, right - 10)

    panels = (
        ("time", time_top, [p.median_ms for p in sweep.points], [p.floor_ms for p in sweep.points],
         [min(p.times_ms) for p in sweep.points], [max(p.times_ms) for p in sweep.points],
         label(table, "sw_time_axis"), fmt_time),
        ("rate", rate_top, [p.tokens_per_s for p in sweep.points],
         [p.new_positions * p.batch / (p.floor_ms / 1e3) for p in sweep.points], None, None,
         label(table, "sw_rate_axis"), lambda v: si(v).strip()),
    )
    for metric, top, measured, floor, low, high, axis, fmt in panels:
        bottom = top + PANEL_H
        y_lo, y_hi = decade_range(measured + floor + (low or []) + (high or []), pad=0.1)
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
        marks = dwg.g(class_=f"panel {metric}")
        marks.add(dwg.polyline([(xs(v), ys(m)) for v, m in zip(values, measured)], fill="none", stroke=color,
                               stroke_width=2, class_="measured-line"))
        marks.add(dwg.polyline([(xs(v), ys(f)) for v, f in zip(values, floor)], fill="none", stroke=style.ink,
                               stroke_width=1.5, stroke_dasharray="5 4", class_="floor-line"))
        for i, point in enumerate(sweep.points):
            px = xs(point.value)
            data = {"data-value": point.value, "data-ms": repr(point.median_ms), "data-floor-ms": repr(point.floor_ms)}
            words = label(table, "sw_point_title", x=point.value, ms=fmt_time(point.median_ms),
                          lo=fmt_time(min(point.times_ms)), hi=fmt_time(max(point.times_ms)),
                          floor=fmt_time(point.floor_ms), bound=bound_word(table, point.bound),
                          rate=si(point.tokens_per_s).strip())
            if low is not None:
                marks.add(dwg.line((px, ys(low[i])), (px, ys(high[i])), stroke=color, stroke_width=2,
                                   class_="spread", **data))
            marks.add(add_title(dwg.circle((px, ys(measured[i])), 5, fill=color, class_=f"measured {metric}",
                                           **data), words))
            marks.add(add_title(dwg.circle((px, ys(floor[i])), 5, fill=style.paper, stroke=style.ink,
                                           stroke_width=1.5, class_=f"floor {metric}", **data), words))
        dwg.add(marks)
        for value in values:
            dwg.add(text(dwg, f"{value:,}", xs(value), bottom + 16, size=style.tiny_size, fill=style.muted_ink,
                         anchor="middle", class_="tick-label"))
    x_axis = label(table, f"sw_x_{key}", context=sweep.batch_context)
    dwg.add(text(dwg, x_axis, left, rate_top + PANEL_H + 38, size=style.small_size, fill=style.muted_ink,
                 weight="bold", class_="axis-label"))
    first, last = sweep.points[0], sweep.points[-1]
    lines = [label(table, "sw_note", x0=f"{first.value:,}", x1=f"{last.value:,}",
                   measured_ratio=f"{last.median_ms / first.median_ms:.2g}",
                   floor_ratio=f"{last.floor_ms / first.floor_ms:.2g}")]
    if sweep.random_weights:
        lines.append(label(table, "random_weights"))
    notes(dwg, style, lines, PAD, rate_top + PANEL_H + 46, width - 2 * PAD)
    return to_string(dwg)

"""The roofline and every pass against its floor: `engine.contract.cost.TraceFloors` drawn two ways.

- `render_roofline`: log-log, arithmetic intensity (FLOPs per byte) across, FLOP/s up.
  The memory roof rises at the bandwidth's slope until the ridge, the compute roof is flat
  after it. Each pass of the run is a filled dot at (its intensity, its FLOPs / measured time)
  and a hollow dot on the roof: where it would sit if it ran at its floor.
- `render_step_floors`: one bar per pass (measured ms, coloured by phase) with the floor
  drawn in as a dark line across the bar.

`formats` (the bottleneck lab's engine runs in other weight formats: {label: TraceFloors of that run}) adds,
per format, its median Decode step as a filled square at (intensity, FLOPs / measured time) and a hollow
square at its floor, named by the format, beside the run's own passes.

Floors with no measured time (lesson.lab.lab_prediction_only: another device's datasheet, or a
preview in other dtypes) are drawn as the cost model's prediction alone: hollow dots on the roofs,
floor marks without bars, and a note that says so; nothing measured is put under roofs that did
not measure it.

Marks carry data-* attributes (data-phase, data-intensity, data-flops-per-s, data-ms,
data-floor-ms) so tests check the picture against the numbers.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping
from dataclasses import dataclass

from ..formats import fmt_share, fmt_time, si
from ..layout import LinearScale, LogScale, nice_ticks, sample_indices
from ..style import DEFAULT_STYLE, Style
from ..text import Table, device_label, label, table_for
from ._common import add_title, header, legend_item, new_drawing, notes, pass_tick, text, to_string

PAD, Y_LABEL_W, PLOT_W, PLOT_H, TOP = 32, 78, 680, 360, 140
MAX_SLOTS = 48


def bound_word(table: Table, bound: str) -> str:
    return label(table, f"bound_{bound}")


def decade_range(values, pad: float = 0.3) -> tuple[float, float]:
    """Whole decades covering every value, with a little room."""
    logs = [math.log10(v) for v in values if v > 0 and math.isfinite(v)]
    return math.floor(min(logs) - pad), math.ceil(max(logs) + pad)


@dataclass(frozen=True)
class RooflineLayout:
    x: LogScale
    y: LogScale
    roof: tuple[tuple[float, float], ...]  # (x, y) pixel corners of the roof line
    ridge_x: float


def roofline_layout(floors, extra=()) -> RooflineLayout:
    """The axes and roof for `floors`' passes and any `extra` passes (other formats' Decode steps)."""
    peak, bandwidth = floors.peak_flops_per_s, floors.bandwidth_bytes_per_s
    ridge = floors.ridge_intensity
    passes = (*floors.steps, *extra)
    intensities = [s.intensity for s in passes] + [ridge]
    x_lo, x_hi = decade_range(intensities)
    achieved = [s.achieved_flops_per_s for s in passes if s.measured_ms > 0]
    achieved += [s.flops / (s.floor_ms / 1e3) for s in extra]
    y_lo, y_hi = decade_range(achieved + [peak, bandwidth * 10.0 ** x_lo])
    left, bottom = PAD + Y_LABEL_W, TOP + PLOT_H
    x = LogScale(x_lo, x_hi, left, left + PLOT_W)
    y = LogScale(y_lo, y_hi, bottom, TOP)
    start = 10.0 ** x_lo
    roof = ((x(start), y(bandwidth * start)), (x(ridge), y(peak)), (x(10.0 ** x_hi), y(peak)))
    return RooflineLayout(x, y, roof, x(ridge))


def format_steps(formats: Mapping[str, object] | None) -> dict[str, object]:
    """Each format's median measured Decode step (formats without one left out)."""
    found = {}
    for name, runs in (formats or {}).items():
        decode = [s for s in runs.phase_steps("decode") if s.measured_ms > 0]
        if decode:
            found[name] = _median_step(decode)
    return found


def render_roofline(floors, *, lang: str = "zh", style: Style | None = None,
                    formats: Mapping[str, object] | None = None) -> str:
    """The roofs of `floors`' device and this run's passes under them (and each of `formats`' median Decode)."""
    table, style = table_for(lang), style or DEFAULT_STYLE
    if not floors.steps:
        raise ValueError("a roofline needs at least one pass")
    by_format = format_steps(formats)
    layout = roofline_layout(floors, tuple(by_format.values()))
    left, bottom, right = PAD + Y_LABEL_W, TOP + PLOT_H, PAD + Y_LABEL_W + PLOT_W
    width = right + PAD + 12
    dwg = new_drawing(width, bottom + 170, style, "roofline", label(table, "rf_title"))
    subtitle = label(table, "rf_subtitle", model=floors.model_id, device=device_label(floors.device_name, lang),
                     dtype=floors.weight_dtype)
    header(dwg, style, label(table, "rf_title"), subtitle)
    x = legend_item(dwg, style, PAD, 108, style.prefill, label(table, "phase_prefill"), "prefill")
    x = legend_item(dwg, style, x, 108, style.decode, label(table, "phase_decode"), "decode")
    _hollow_legend(dwg, style, x, 108, label(table, "rf_floor"))
    for value in layout.x.decades():
        px = layout.x(value)
        dwg.add(dwg.line((px, TOP), (px, bottom), stroke=style.grid, stroke_width=1, class_="grid"))
        dwg.add(text(dwg, si(value).strip(), px, bottom + 18, size=style.tiny_size, fill=style.muted_ink,
                     anchor="middle", class_="tick-label"))
    for value in layout.y.decades():
        py = layout.y(value)
        dwg.add(dwg.line((left, py), (right, py), stroke=style.grid, stroke_width=1, class_="grid"))
        dwg.add(text(dwg, si(value).strip(), left - 8, py + 4, size=style.tiny_size, fill=style.muted_ink,
                     anchor="end", class_="tick-label"))
    dwg.add(dwg.rect((left, TOP), (PLOT_W, PLOT_H), fill="none", stroke=style.muted_ink, stroke_width=1,
                     class_="frame"))
    (x0, y0), (xr, yr), (x1, y1) = layout.roof
    dwg.add(dwg.line((x0, y0), (xr, yr), stroke=style.ink, stroke_width=2.5, class_="roof memory-roof",
                     **{"data-bytes-per-s": repr(floors.bandwidth_bytes_per_s)}))
    dwg.add(dwg.line((xr, yr), (x1, y1), stroke=style.ink, stroke_width=2.5, class_="roof compute-roof",
                     **{"data-flops-per-s": repr(floors.peak_flops_per_s)}))
    dwg.add(dwg.line((xr, yr), (xr, bottom), stroke=style.muted_ink, stroke_width=1, stroke_dasharray="4 4",
                     class_="ridge", **{"data-intensity": repr(floors.ridge_intensity)}))
    dwg.add(text(dwg, label(table, "rf_compute_roof", peak=si(floors.peak_flops_per_s)), x1 - 4, y1 - 8,
                 size=style.small_size, fill=style.ink, anchor="end", class_="roof-label"))
    dwg.add(text(dwg, label(table, "rf_memory_roof", bandwidth=si(floors.bandwidth_bytes_per_s)), x0 + 6,
                 y0 - 10, size=style.small_size, fill=style.ink, class_="roof-label"))
    dwg.add(text(dwg, label(table, "rf_ridge", ridge=f"{floors.ridge_intensity:,.1f}"), xr + 6, bottom - 8,
                 size=style.tiny_size, fill=style.muted_ink, class_="ridge-label"))
    points = dwg.g(class_="points")
    for step in sorted(floors.steps, key=lambda s: s.phase == "prefill"):  # Prefill drawn last, on top
        _point(dwg, points, layout, step, table, style)
    dwg.add(points)
    _format_points(dwg, layout, by_format, table, style)
    dwg.add(text(dwg, label(table, "rf_x_axis"), left, bottom + 40, size=style.small_size, fill=style.muted_ink,
                 weight="bold", class_="axis-label"))
    dwg.add(text(dwg, label(table, "rf_y_axis"), PAD, TOP - 12, size=style.small_size, fill=style.muted_ink,
                 weight="bold", class_="axis-label"))
    gap = label(table, "rf_gap_note") if measured(floors) else \
        label(table, "rf_prediction_note", device=device_label(floors.device_name, lang))
    lines = [_roofline_note(floors, table), gap]
    if floors.random_weights:
        lines.append(label(table, "random_weights"))
    notes(dwg, style, lines, PAD, bottom + 52, width - 2 * PAD)
    return to_string(dwg)


def measured(floors) -> bool:
    """Whether any pass of `floors` carries a measured time (else they are a prediction only)."""
    return any(s.measured_ms > 0 for s in floors.steps)


def _hollow_legend(dwg, style: Style, x: float, y: float, caption: str) -> None:
    group = dwg.g(class_="legend-item floor")
    group.add(dwg.circle((x + 7, y - 4), 6, fill=style.paper, stroke=style.ink, stroke_width=2))
    group.add(text(dwg, caption, x + 20, y, size=style.small_size, fill=style.ink))
    dwg.add(group)


def _point(dwg, group, layout: RooflineLayout, step, table: Table, style: Style) -> None:
    name = _pass_name(step, table)
    px = layout.x(step.intensity)
    attainable = min(step.flops / (step.floor_ms / 1e3), math.inf)
    floor_y = layout.y(attainable)
    color = style.phase_color(step.phase)
    data = {"data-phase": step.phase, "data-step": step.index, "data-intensity": repr(step.intensity)}
    words = label(table, "rf_point_title", name=name, intensity=f"{step.intensity:,.2f}",
                  achieved=si(step.achieved_flops_per_s), floor=fmt_time(step.floor_ms),
                  measured=fmt_time(step.measured_ms), bound=bound_word(table, step.bound)) \
        if step.measured_ms > 0 else predicted_title(step, table)
    if step.measured_ms > 0:
        measured_y = layout.y(step.achieved_flops_per_s)
        group.add(dwg.line((px, measured_y), (px, floor_y), stroke=color, stroke_width=1, stroke_dasharray="3 3",
                           class_=f"gap {step.phase}", **data))
        dot = dwg.circle((px, measured_y), 7 if step.phase == "prefill" else 5, fill=color, stroke=style.paper,
                         stroke_width=1.5, class_=f"measured {step.phase}",
                         **data, **{"data-flops-per-s": repr(step.achieved_flops_per_s)})
        group.add(add_title(dot, words))
    hollow = dwg.circle((px, floor_y), 6, fill=style.paper, stroke=color, stroke_width=2,
                        class_=f"floor {step.phase}", **data, **{"data-flops-per-s": repr(attainable)})
    group.add(add_title(hollow, words))


def _format_points(dwg, layout: RooflineLayout, by_format: dict, table: Table, style: Style) -> None:
    if by_format:
        group = dwg.g(class_="formats")
        for name, step in by_format.items():
            _format_point(dwg, group, layout, name, step, table, style)
        dwg.add(group)


def _format_point(dwg, group, layout: RooflineLayout, name: str, step, table: Table, style: Style) -> None:
    """One weight format's median Decode step: measured (filled square), its floor (hollow), a dashed gap, its name."""
    px, size = layout.x(step.intensity), 9
    measured_y, floor_y = layout.y(step.achieved_flops_per_s), layout.y(step.flops / (step.floor_ms / 1e3))
    data = {"data-format": name, "data-intensity": repr(step.intensity), "data-ms": repr(step.measured_ms),
            "data-floor-ms": repr(step.floor_ms)}
    words = label(table, "rf_format_title", format=name, intensity=f"{step.intensity:,.2f}",
                  measured=fmt_time(step.measured_ms), floor=fmt_time(step.floor_ms))
    group.add(dwg.line((px, measured_y), (px, floor_y), stroke=style.ink, stroke_width=1, stroke_dasharray="2 3",
                       class_="format-gap", **data))
    mark = dwg.rect((px - size / 2, measured_y - size / 2), (size, size), fill=style.ink, stroke=style.paper,
                    stroke_width=1, class_="format-measured", **data)
    group.add(add_title(mark, words))
    hollow = dwg.rect((px - size / 2, floor_y - size / 2), (size, size), fill=style.paper, stroke=style.ink,
                      stroke_width=1.5, class_="format-floor", **data)
    group.add(add_title(hollow, words))
    group.add(text(dwg, name, px + size, measured_y + 4, size=style.tiny_size, fill=style.ink, class_="format-label"))


def predicted_title(step, table: Table) -> str:
    """A pass's hover words when only its floor is known: no measured time, no ratio."""
    return label(table, "rf_point_title_prediction", name=_pass_name(step, table), intensity=f"{step.intensity:,.2f}",
                 floor=fmt_time(step.floor_ms), bound=bound_word(table, step.bound))


def _pass_name(step, table: Table) -> str:
    return label(table, "pass_short_prefill" if step.phase == "prefill" else "pass_short_decode", n=step.index)


def _median_step(steps):
    """The pass whose measured time is the median (a real pass, not an average of two)."""
    ordered = sorted(steps, key=lambda s: s.measured_ms)
    return ordered[(len(ordered) - 1) // 2]


def _roofline_note(floors, table: Table) -> str:
    prefill = floors.phase_steps("prefill")
    decode = floors.phase_steps("decode")
    p = prefill[0] if prefill else floors.steps[0]
    d = _median_step(decode) if decode else p
    return label(table, "rf_note", n=p.new_positions, prefill_i=f"{p.intensity:,.1f}",
                 prefill_bound=bound_word(table, p.bound), decode_i=f"{d.intensity:,.2f}",
                 decode_bound=bound_word(table, d.bound))


# --- per pass: measured bar, floor line -----------------------------------------------

@dataclass(frozen=True)
class FloorBar:
    step: int
    phase: str
    measured_ms: float
    floor_ms: float
    x: float
    y: float       # top of the measured bar
    w: float
    h: float
    floor_y: float  # the floor's line


def floor_bars(floors) -> tuple[tuple[FloorBar, ...], tuple[tuple[float, str], ...], tuple[int, ...]]:
    """Bars for up to MAX_SLOTS passes (first and last kept), the y ticks, the passes shown."""
    picks = sample_indices(len(floors.steps), MAX_SLOTS)
    steps = [floors.steps[i] for i in picks]
    top_value = max(max(s.measured_ms, s.floor_ms) for s in steps) or 1e-9
    ticks = nice_ticks(0, top_value, 4)
    bottom, left = TOP + PLOT_H * 0.7, PAD + Y_LABEL_W
    y = LinearScale(0, ticks[-1], bottom, TOP)
    slot_w = PLOT_W / len(picks)
    bar_w = round(min(36.0, slot_w * 0.7), 2)
    bars = []
    for position, step in enumerate(steps):
        x = round(left + slot_w * (position + 0.5) - bar_w / 2, 2)
        bars.append(FloorBar(step.index, step.phase, step.measured_ms, step.floor_ms, x, y(step.measured_ms), bar_w,
                             round(bottom - y(step.measured_ms), 2), y(step.floor_ms)))
    return tuple(bars), tuple((y(t), fmt_time(t)) for t in ticks), picks


def render_step_floors(floors, *, lang: str = "zh", style: Style | None = None) -> str:
    """Each pass's measured time as a bar, its floor as a line across it."""
    table, style = table_for(lang), style or DEFAULT_STYLE
    if not floors.steps:
        raise ValueError("the floor chart needs at least one pass")
    bars, ticks, picks = floor_bars(floors)
    left, right = PAD + Y_LABEL_W, PAD + Y_LABEL_W + PLOT_W
    bottom = TOP + PLOT_H * 0.7
    width = right + PAD + 12
    title = label(table, "fl_title" if measured(floors) else "fl_title_prediction")
    dwg = new_drawing(width, bottom + 150, style, "step-floors", title)
    header(dwg, style, title, label(table, "fl_subtitle", model=floors.model_id,
                                    device=device_label(floors.device_name, lang)))
    x = PAD
    if measured(floors):  # a prediction only has no coloured bars to name
        x = legend_item(dwg, style, x, 108, style.prefill, label(table, "phase_prefill"), "prefill")
        x = legend_item(dwg, style, x, 108, style.decode, label(table, "phase_decode"), "decode")
    group = dwg.g(class_="legend-item floor")
    group.add(dwg.line((x, 104), (x + 18, 104), stroke=style.ink, stroke_width=3))
    group.add(text(dwg, label(table, "fl_floor_legend"), x + 24, 108, size=style.small_size, fill=style.ink))
    dwg.add(group)
    for py, words in ticks:
        dwg.add(dwg.line((left, py), (right, py), stroke=style.grid, stroke_width=1, class_="grid"))
        dwg.add(text(dwg, words, left - 8, py + 4, size=style.tiny_size, fill=style.muted_ink, anchor="end",
                     class_="tick-label"))
    dwg.add(text(dwg, label(table, "fl_y_axis"), PAD, TOP - 12, size=style.small_size, fill=style.muted_ink,
                 weight="bold", class_="axis-label"))
    marks = dwg.g(class_="bars")
    by_index = {s.index: s for s in floors.steps}
    for position, bar in enumerate(bars):
        step = by_index[bar.step]
        data = {"data-step": bar.step, "data-phase": bar.phase, "data-ms": repr(bar.measured_ms),
                "data-floor-ms": repr(bar.floor_ms)}
        words = label(table, "fl_bar_title", name=_pass_name(step, table), measured=fmt_time(bar.measured_ms),
                      floor=fmt_time(bar.floor_ms), bound=bound_word(table, step.bound),
                      eff=fmt_share(step.efficiency)) if bar.measured_ms > 0 else predicted_title(step, table)
        if bar.measured_ms > 0:  # a prediction only: the floor marks stand alone
            rect = dwg.rect((bar.x, bar.y), (bar.w, bar.h), fill=style.phase_color(bar.phase),
                            class_=f"measured-bar {bar.phase}", **data)
            marks.add(add_title(rect, words))
        line = dwg.line((bar.x - 3, bar.floor_y), (bar.x + bar.w + 3, bar.floor_y), stroke=style.ink,
                        stroke_width=3, class_=f"floor-mark {bar.phase}", **data)
        marks.add(add_title(line, words))
        tick = pass_tick(bar.step, bar.phase, position, len(bars), table)
        if tick:
            dwg.add(text(dwg, tick, bar.x + bar.w / 2, bottom + 16, size=style.tiny_size, fill=style.muted_ink,
                         anchor="middle", class_="tick-label"))
    dwg.add(marks)
    lines = [_floor_note(floors, table, lang), _roofline_note(floors, table)]
    if floors.random_weights:
        lines.append(label(table, "random_weights"))
    notes(dwg, style, lines, PAD, bottom + 30, width - 2 * PAD)
    return to_string(dwg)


def _floor_note(floors, table: Table, lang: str) -> str:
    """How near each phase came to its floor, or (a prediction only) that nothing here was measured."""
    if not measured(floors):
        return label(table, "fl_prediction_note", device=device_label(floors.device_name, lang))
    prefill, decode = floors.phase_steps("prefill"), floors.phase_steps("decode")
    return label(table, "fl_note", prefill_eff=fmt_share(prefill[0].efficiency) if prefill else "—",
                 decode_eff=fmt_share(statistics.median(s.efficiency for s in decode)) if decode else "—")

"""Per-step latency: one bar per forward pass, measured.

Prefill is one tall bar (all prompt positions), each Decode a short one. TTFT
is written at the Prefill bar (it ends there, plus tokenizing), TPOT is a
dashed line across the Decode bars, and each ITL is a dot over its pass.
The same numbers as a hoverable plotly figure: `lesson.charts.latency_figure`.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.trace import RequestTrace

from ..layout import LinearScale, nice_ticks, sample_indices
from ..strings import label, strings_for
from ..style import DEFAULT_STYLE, Style
from ..svgtext import fmt_int, fmt_ms
from ._common import add_title, header, new_drawing, notes, pass_tick, text, to_string

MAX_BARS, MAX_TITLED = 600, 128
PREFILL_SLOT_W = 40
PAD, PLOT_W, PLOT_H, Y_LABEL_W, RIGHT_GUTTER = 32, 760, 290, 64, 96


@dataclass(frozen=True)
class LatencyBar:
    step_index: int
    phase: str
    x: float
    w: float
    y: float
    ms: float
    itl_ms: float | None
    itl_y: float | None
    tick: str | None


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
    tpot_y: float | None


def latency_layout(trace: RequestTrace, table: dict) -> LatencyLayout:
    metrics = trace.metrics
    left, top = PAD + Y_LABEL_W, 160.0
    bottom, right = top + PLOT_H, left + PLOT_W
    picks = sample_indices(len(trace.steps), MAX_BARS)
    peak = max([trace.steps[i].duration_ms for i in picks] + list(metrics.itl_ms))
    ticks = nice_ticks(0, peak * 1.05, 5)
    y = LinearScale(0, ticks[-1], bottom, top)
    # Prefill keeps a readable slot even beside hundreds of Decode bars.
    first_w = max(PLOT_W / len(picks), PREFILL_SLOT_W)
    slot_w = (PLOT_W - first_w) / max(len(picks) - 1, 1)
    bars = []
    for position, index in enumerate(picks):
        step = trace.steps[index]
        itl = metrics.itl_ms[index - 1] if index > 0 else None
        width = first_w if position == 0 else slot_w
        center = left + first_w / 2 if position == 0 else left + first_w + slot_w * (position - 0.5)
        bar_w = round(min(48.0, max(width * 0.7, 0.8)), 2)
        x = round(center - bar_w / 2, 2)
        bars.append(LatencyBar(index, step.phase, x, bar_w, y(step.duration_ms), step.duration_ms, itl,
                               None if itl is None else y(itl), pass_tick(index, step.phase, position, len(picks), table)))
    tpot_y = None if metrics.tpot_ms is None else y(metrics.tpot_ms)
    return LatencyLayout(right + RIGHT_GUTTER + PAD, bottom + 130, left, top, bottom, right, tuple(bars),
                         tuple((y(t), f"{t:g}") for t in ticks), tpot_y)


def _draw_axes(dwg, layout: LatencyLayout, style: Style, table: dict) -> None:
    for y, words in layout.y_ticks:
        dwg.add(dwg.line((layout.left, y), (layout.right, y), stroke=style.grid, stroke_width=1, class_="grid"))
        dwg.add(text(dwg, words, layout.left - 8, y + 4, size=style.tiny_size, fill=style.muted_ink, anchor="end",
                     class_="tick-label"))
    dwg.add(text(dwg, label(table, "lat_axis_y") + " (ms)", PAD, layout.top - 40, size=style.small_size,
                 fill=style.muted_ink, weight="bold", class_="axis-label"))
    dwg.add(text(dwg, label(table, "lat_axis_x"), layout.left, layout.bottom + 40, size=style.small_size,
                 fill=style.muted_ink, weight="bold", class_="axis-label"))


def _draw_bar(dwg, bar: LatencyBar, layout: LatencyLayout, style: Style, table: dict, trace: RequestTrace) -> list:
    """The bar (carrying data-step / data-ms), its ITL dot, its labels. Past MAX_TITLED bars no
    per-bar tooltip: hundreds of <title>s would double the file for detail the plotly chart gives."""
    step = trace.steps[bar.step_index]
    rect = dwg.rect((bar.x, bar.y), (bar.w, max(layout.bottom - bar.y, 0.5)), fill=style.phase_color(bar.phase),
                    class_=f"latency-bar {bar.phase}", **{"data-step": bar.step_index, "data-ms": f"{bar.ms:.3f}"})
    if len(layout.bars) <= MAX_TITLED:
        itl = "" if bar.itl_ms is None else f", {label(table, 'itl', ms=fmt_ms(bar.itl_ms))}"
        add_title(rect, label(table, "lat_bar_title", n=bar.step_index + 1, phase=label(table, f"phase_{bar.phase}"),
                              positions=fmt_int(step.num_positions), ms=fmt_ms(bar.ms)) + itl)
    parts = [rect]
    if bar.itl_y is not None:
        parts.append(dwg.circle((round(bar.x + bar.w / 2, 2), bar.itl_y), r=3 if bar.w >= 6 else 1.6,
                                fill=style.paper, stroke=style.ink, stroke_width=1.2, class_="itl",
                                **{"data-ms": f"{bar.itl_ms:.3f}"}))
    if len(layout.bars) <= 16 and bar.phase == "decode":
        parts.append(text(dwg, fmt_ms(bar.ms), bar.x + bar.w / 2, bar.y - 12, size=style.tiny_size, fill=style.ink,
                          anchor="middle", class_="value-label"))
    if bar.tick:
        parts.append(text(dwg, bar.tick, bar.x + bar.w / 2, layout.bottom + 18, size=style.tiny_size,
                          fill=style.phase_color(bar.phase), anchor="middle", weight="bold", class_="tick-label"))
    return parts


def _draw_marks(dwg, trace: RequestTrace, layout: LatencyLayout, style: Style, table: dict) -> None:
    metrics, prefill = trace.metrics, trace.steps[0]
    ttft = label(table, "lat_ttft", ms=fmt_ms(metrics.ttft_ms), prefill=fmt_ms(prefill.duration_ms),
                 rest=fmt_ms(metrics.ttft_ms - prefill.duration_ms))
    first = layout.bars[0]
    dwg.add(dwg.line((first.x + first.w / 2, first.y), (first.x + first.w / 2, layout.top - 12), stroke=style.prefill,
                     stroke_width=1.2, class_="ttft-leader"))
    dwg.add(text(dwg, ttft, first.x + first.w / 2 + 6, layout.top - 16, size=style.small_size, fill=style.prefill,
                 weight="bold", class_="ttft"))
    if layout.tpot_y is not None:
        start = layout.bars[1].x if len(layout.bars) > 1 else layout.left
        dwg.add(dwg.line((start - 4, layout.tpot_y), (layout.right, layout.tpot_y), stroke=style.decode,
                         stroke_width=1.5, stroke_dasharray="6,4", class_="tpot"))
        dwg.add(text(dwg, label(table, "lat_tpot_line", ms=fmt_ms(metrics.tpot_ms)), layout.right + 8,
                     layout.tpot_y + style.small_size * 0.36, size=style.small_size, fill=style.decode,
                     weight="bold", class_="tpot-label"))


def render_latency(trace: RequestTrace, *, lang: str = "zh", style: Style | None = None) -> str:
    """One bar per forward pass with TTFT, TPOT and ITL marked (measured times)."""
    table, style = strings_for(lang), style or DEFAULT_STYLE
    if not trace.steps:
        raise ValueError("the latency diagram needs a trace with at least one forward pass")
    layout = latency_layout(trace, table)
    dwg = new_drawing(layout.width, layout.height, style, "latency", label(table, "lat_title"))
    m = trace.model
    header(dwg, style, label(table, "lat_title"), f"{m.model_id} · {m.device} · {m.dtype}")
    _draw_axes(dwg, layout, style, table)
    for bar in layout.bars:
        for part in _draw_bar(dwg, bar, layout, style, table, trace):
            dwg.add(part)
    _draw_marks(dwg, trace, layout, style, table)
    notes(dwg, style, [label(table, k) for k in ("lat_legend_ttft", "lat_legend_tpot", "lat_legend_itl")],
          PAD, layout.bottom + 46, layout.width - 2 * PAD)
    return to_string(dwg)

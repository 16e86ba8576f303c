"""The bottleneck lab's plotly figures, the same numbers as lesson/diagrams/roofline.py and sweep.py:
the roofline, every pass against its floor, and a measured sweep with its spread.
"""

from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..diagrams.roofline import bound_word, decade_range, measured, predicted_title
from ..diagrams.sweep import OUTLIER_COLOR
from ..spread import point_spread
from ..style import DEFAULT_STYLE, Style
from ..formats import fmt_share, fmt_time, si
from ..text import Table, label, table_for
from .common import classroom_fonts, plain_label

CLASSROOM_ROOFLINE_PX = 720  # classroom mode: the roofline's height, its legend's margin included
CLASSROOM_LEGEND_PX = 290  # below the plot: tick labels, the axis title and five legend lines in 21 px type


def roofline_figure(floors, lang: str = "zh", style: Style | None = None, classroom: bool = False) -> go.Figure:
    """Log-log roofline of `floors` (engine.contract.cost.TraceFloors): the two roofs, each pass measured
    (filled) and at its floor (hollow, on the roof). data[0] is the roof; then Prefill / Decode
    measured, then Prefill / Decode floors. Floors with nothing measured (another device's
    datasheet, other dtypes) draw the prediction alone: empty measured traces, out of the legend,
    and the title says so."""
    table, style = table_for(lang), style or DEFAULT_STYLE
    peak, bandwidth, ridge = floors.peak_flops_per_s, floors.bandwidth_bytes_per_s, floors.ridge_intensity
    x_lo, x_hi = decade_range([s.intensity for s in floors.steps] + [ridge])
    fig = go.Figure()
    fig.add_trace(go.Scatter(
        x=[10.0 ** x_lo, ridge, 10.0 ** x_hi], y=[bandwidth * 10.0 ** x_lo, peak, peak], mode="lines",
        line=dict(color=style.ink, width=3), name=plain_label(label(table, "rf_compute_roof", peak=si(peak))) + " · "
        + plain_label(label(table, "rf_memory_roof", bandwidth=si(bandwidth))), hoverinfo="skip"))
    for kind in ("measured", "floor"):
        for phase in ("prefill", "decode"):
            steps = floors.phase_steps(phase)
            if kind == "measured":
                steps = tuple(s for s in steps if s.measured_ms > 0)
            ys = [s.achieved_flops_per_s if kind == "measured" else s.flops / (s.floor_ms / 1e3) for s in steps]
            words = [plain_label(label(table, "rf_point_title", name=_step_name(s, table),
                                       intensity=f"{s.intensity:,.2f}", achieved=si(s.achieved_flops_per_s),
                                       floor=fmt_time(s.floor_ms), measured=fmt_time(s.measured_ms),
                                       bound=bound_word(table, s.bound)))
                     for s in steps]
            color = style.phase_color(phase)
            marker = dict(color=color, size=11 if phase == "prefill" else 8) if kind == "measured" else \
                dict(color=style.paper, size=10, line=dict(color=color, width=2))
            what = label(table, "rf_measured" if kind == "measured" else "rf_floor")
            name = f"{label(table, f'phase_{phase}')} · {what}"
            if kind == "floor" and not measured(floors):
                words = [plain_label(predicted_title(s, table)) for s in steps]
            fig.add_trace(go.Scatter(x=[s.intensity for s in steps], y=ys, mode="markers", marker=marker,
                                     name=plain_label(name), hovertext=words, hoverinfo="text",
                                     showlegend=bool(steps)))
    fig.add_vline(x=ridge, line_dash="dot", line_color=style.muted_ink,
                  annotation_text=plain_label(label(table, "rf_ridge", ridge=f"{ridge:,.1f}")))
    achieved = [s.achieved_flops_per_s for s in floors.steps if s.measured_ms > 0]
    y_lo, y_hi = decade_range(achieved + [peak, bandwidth * 10.0 ** x_lo])
    # as the SVG: whole decades, each named in one format (plotly's own mixes "100T" with "10^16")
    fig.update_xaxes(title=label(table, "rf_x_axis"), **decade_axis(x_lo, x_hi, lambda v: si(v).strip()))
    fig.update_yaxes(title=label(table, "rf_y_axis"), **decade_axis(y_lo, y_hi, lambda v: si(v).strip()))
    title = label(table, "rf_title") + ("" if measured(floors) else " · " + label(table, "rf_prediction_tag"))
    fig.update_layout(title=plain_label(title), font=dict(family=style.font_family),
                      plot_bgcolor=style.paper, legend=dict(orientation="h", yanchor="top", y=-0.2, x=0))
    if classroom:  # a projector's type; its five legend lines then need a margin of their own under the axis
        classroom_fonts(fig, True, style)
        fig.update_layout(height=CLASSROOM_ROOFLINE_PX, margin=dict(b=CLASSROOM_LEGEND_PX),
                          legend=dict(yref="container", yanchor="bottom", y=0))
    return fig


def decade_axis(lo_exp: int, hi_exp: int, fmt) -> dict:
    """A log axis from 10**lo_exp to 10**hi_exp, ticked at whole decades only, each tick's words `fmt(value)`:
    plotly's own log ticks label the 2s and 5s between decades too (they collide with "1000/s" and
    "10k/s") and switch format past 10**15."""
    values = [10.0 ** e for e in range(lo_exp, hi_exp + 1)]
    return {"type": "log", "range": [lo_exp, hi_exp], "tickmode": "array", "tickvals": values,
            "ticktext": [fmt(v) for v in values]}


def _step_name(step, table: Table) -> str:
    return label(table, "pass_short_prefill" if step.phase == "prefill" else "pass_short_decode", n=step.index)


def step_floors_figure(floors, lang: str = "zh", style: Style | None = None) -> go.Figure:
    """One bar per pass (measured ms, by phase) and its floor as a dark dash across it.
    data[0] the bars, data[1] the floors. Floors with nothing measured (a prediction only) have no
    bars: data[0] is empty and out of the legend, the title says the floors are a prediction."""
    table, style = table_for(lang), style or DEFAULT_STYLE
    names = [_step_name(s, table) for s in floors.steps]
    compared = measured(floors)
    words = [plain_label(label(table, "fl_bar_title", name=n, measured=fmt_time(s.measured_ms),
                               floor=fmt_time(s.floor_ms), bound=bound_word(table, s.bound),
                               eff=fmt_share(s.efficiency)) if compared else predicted_title(s, table))
             for n, s in zip(names, floors.steps)]
    shown = floors.steps if compared else ()
    fig = go.Figure()
    fig.add_trace(go.Bar(x=names[:len(shown)], y=[s.measured_ms for s in shown], hovertext=words, hoverinfo="text",
                         marker_color=[style.phase_color(s.phase) for s in shown],
                         name=plain_label(label(table, "rf_measured")), showlegend=compared))
    fig.add_trace(go.Scatter(x=names, y=[s.floor_ms for s in floors.steps], mode="markers", hovertext=words,
                             hoverinfo="text", name=plain_label(label(table, "fl_floor_legend")),
                             marker=dict(symbol="line-ew", size=26, line=dict(color=style.ink, width=4))))
    title = label(table, "fl_title" if compared else "fl_title_prediction")
    fig.update_layout(title=plain_label(title), yaxis_title=f"{label(table, 'fl_y_axis')} (ms)",
                      font=dict(family=style.font_family), plot_bgcolor=style.paper, bargap=0.3,
                      legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0))
    if not compared:  # no bars to place the categories: keep every pass on the axis, in order
        fig.update_xaxes(categoryorder="array", categoryarray=names)
    return fig


def sweep_figure(sweep, lang: str = "zh", style: Style | None = None) -> go.Figure:
    """Two rows over the swept value (log x): time of one pass (log y: measured median with the
    fastest..slowest repeat that is not an outlier as error bars, the floor dashed) and positions
    per second. data: time measured, time floor, rate measured, rate floor, then the outliers (red
    rings on the time row, lesson.spread's rule; an empty trace when there are none)."""
    table, style = table_for(lang), style or DEFAULT_STYLE
    key = sweep.kind.replace("-", "_")
    color = style.prefill if sweep.kind == "prefill" else style.decode
    xs = [p.value for p in sweep.points]
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.12,
                        subplot_titles=(label(table, "sw_time_axis"), label(table, "sw_rate_axis")))
    spreads = [point_spread(p.times_ms) for p in sweep.points]
    hover = [f"{p.value:,}: {fmt_time(p.median_ms)} ({fmt_time(low)}–{fmt_time(high)}), "
             f"{plain_label(label(table, 'sw_floor'))} {fmt_time(p.floor_ms)}"
             for p, (low, high, _) in zip(sweep.points, spreads)]
    fig.add_trace(go.Scatter(
        x=xs, y=[p.median_ms for p in sweep.points], mode="lines+markers", line=dict(color=color, width=2),
        name=plain_label(label(table, "sw_measured")),
        error_y=dict(type="data", symmetric=False, array=[high - p.median_ms for p, (_, high, _) in
                                                          zip(sweep.points, spreads)],
                     arrayminus=[p.median_ms - low for p, (low, _, _) in zip(sweep.points, spreads)], color=color),
        hovertext=hover, hoverinfo="text"), row=1, col=1)
    hollow = dict(color=style.paper, size=8, line=dict(color=style.ink, width=1.5))
    fig.add_trace(go.Scatter(x=xs, y=[p.floor_ms for p in sweep.points], mode="lines+markers",
                             line=dict(color=style.ink, dash="dash"), marker=hollow,
                             name=plain_label(label(table, "sw_floor")), hovertext=hover, hoverinfo="text"),
                  row=1, col=1)
    fig.add_trace(go.Scatter(x=xs, y=[p.tokens_per_s for p in sweep.points], mode="lines+markers",
                             line=dict(color=color, width=2), showlegend=False,
                             hovertemplate="%{x:,}: %{y:,.0f} /s<extra></extra>"), row=2, col=1)
    fig.add_trace(go.Scatter(x=xs, y=[p.new_positions * p.batch / (p.floor_ms / 1e3) for p in sweep.points],
                             mode="lines+markers", line=dict(color=style.ink, dash="dash"), showlegend=False,
                             marker=dict(color=style.paper, size=8, line=dict(color=style.ink, width=1.5)),
                             hovertemplate="%{x:,}: %{y:,.0f} /s<extra></extra>"), row=2, col=1)
    _outlier_trace(fig, sweep, spreads, table)
    fig.update_xaxes(type="log", tickvals=xs, ticktext=[f"{v:,}" for v in xs])
    fig.update_xaxes(title=plain_label(label(table, f"sw_x_{key}", context=sweep.batch_context)), row=2, col=1)
    every_ms = [ms for p in sweep.points for ms in p.times_ms] + [p.floor_ms for p in sweep.points]
    rates = list(fig.data[2].y) + list(fig.data[3].y)
    fig.update_yaxes(**decade_axis(*decade_range(every_ms, pad=0.1), fmt_time), row=1, col=1)
    fig.update_yaxes(**decade_axis(*decade_range(rates, pad=0.1), lambda v: si(v).strip() + "/s"), row=2, col=1)
    fig.update_layout(title=plain_label(label(table, f"sw_title_{key}")), font=dict(family=style.font_family),
                      plot_bgcolor=style.paper, height=560, legend=dict(orientation="h", yanchor="bottom", y=1.04, x=0))
    return fig


def _outlier_trace(fig: go.Figure, sweep, spreads, table: Table) -> None:
    """Every repeat far from its point's others, a red ring on the time row (shown in the legend only if any)."""
    rings = [(p, ms) for p, (_, _, outliers) in zip(sweep.points, spreads) for ms in outliers]
    fig.add_trace(go.Scatter(
        x=[p.value for p, _ in rings], y=[ms for _, ms in rings], mode="markers", showlegend=bool(rings),
        marker=dict(symbol="circle-open", size=11, color=OUTLIER_COLOR, line=dict(width=2)),
        name=plain_label(label(table, "sw_outlier")), hoverinfo="text",
        hovertext=[plain_label(label(table, "sw_outlier_title", x=p.value, ms=fmt_time(ms),
                                     median=fmt_time(p.median_ms))) for p, ms in rings]), row=1, col=1)

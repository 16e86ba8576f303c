"""Plotly figures for the app: the same numbers as the SVGs, with hover details.

Imported by the app only (plotly is heavier than svgwrite); the SVG renderers
never import this module.
"""

from __future__ import annotations

from html import escape

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from engine.trace import RequestTrace

from .diagrams.latency import spread_apart
from .diagrams.roofline import bound_word, decade_range, fmt_share, fmt_time, measured, predicted_title, si
from .diagrams.sweep import OUTLIER_COLOR
from .diagrams.serving_gantt import gantt_segments, itl_spikes, policy_label, segment_title
from .spread import point_spread
from .style import DEFAULT_STYLE, Style
from .svgtext import fmt_bytes, fmt_ms, piece_label
from .text import Table, check_language, label, t, table_for


def _pass_names(trace: RequestTrace, table: Table) -> list[str]:
    return [label(table, "pass_n", n=s.index + 1) for s in trace.steps]


def _hover(trace: RequestTrace, table: Table) -> list[str]:
    # plotly renders hover text as HTML-ish markup: escape what the user typed.
    rows = []
    for s in trace.steps:
        pieces = " | ".join(piece_label(p) for p in s.input_pieces[:8]) + (" …" if s.num_positions > 8 else "")
        rows.append("<br>".join((
            f"<b>{label(table, 'pass_n', n=s.index + 1)} · {label(table, f'phase_{s.phase}')}</b>",
            f"{label(table, 'positions_range', a=s.context_before, b=s.context_after - 1)} (+{s.num_positions})",
            f"in: {escape(pieces)}",
            f"out: {escape(piece_label(s.output_piece))}",
            f"{fmt_ms(s.duration_ms)} · KV {fmt_bytes(s.kv_bytes)}",
        )))
    return rows


CLASSROOM_FONT_PX = 21  # classroom mode: the page's body text is 20.5 px; no chart text smaller


def font_layout(style: Style, classroom: bool) -> dict:
    """Fonts for a chart: plotly's defaults, or the classroom's (ticks, legend, titles, hover)."""
    if not classroom:
        return {"font": dict(family=style.font_family)}
    size = CLASSROOM_FONT_PX
    axis = dict(tickfont=dict(size=size), title_font=dict(size=size))  # a page theme sets these per axis
    return {"font": dict(family=style.font_family, size=size), "title_font_size": round(size * 1.3),
            "hoverlabel": dict(font_size=size), "legend_font_size": size,
            "xaxis": axis, "yaxis": axis}


def latency_figure(trace: RequestTrace, lang: str = "zh", style: Style | None = None,
                   full: RequestTrace | None = None, classroom: bool = False) -> go.Figure:
    """One stacked bar per output token: the pass that made it (coloured by phase), then
    the page's drawing and the other waiting before it, so each bar's height is that
    token's wait (TTFT for the first, its ITL after). TPOT dashed, ITL p50 / p99 dotted.

    data[0] is always the pass times, data[1] the page drawing, data[2] the other waiting.
    `full`: the whole run when `trace` is a prefix of it: both axes are fixed to it, so
    stepping through the run adds bars without rescaling. `classroom`: larger type everywhere.
    The TTFT note sits above the plot, left-aligned, so no bar (a long run's Decode bars
    included) ever runs under it; the legend goes below the plot.
    """
    table, style = table_for(lang), style or DEFAULT_STYLE
    metrics, parts, names = trace.metrics, trace.latency_parts(), _pass_names(trace, table)
    fig = go.Figure()
    fig.add_trace(go.Bar(
        x=names, y=[s.duration_ms for s in trace.steps], marker_color=[style.phase_color(s.phase) for s in trace.steps],
        hovertext=_hover(trace, table), hoverinfo="text", name=label(table, "lat_legend_pass", phase="").strip(),
    ))
    for name_key, color, values in (
        ("legend_page", style.page, [p.consumer_ms for p in parts]),
        ("legend_waiting", style.waiting, [p.lock_wait_ms + p.other_ms for p in parts]),
    ):
        fig.add_trace(go.Bar(x=names, y=values, marker_color=color, name=label(table, name_key),
                             hovertemplate="%{x}: %{y:.3f} ms<extra>" + plain_label(label(table, name_key))
                             + "</extra>"))
    if metrics and len(trace.steps) > 1:
        fig.add_trace(go.Scatter(
            x=names[1:], y=list(metrics.itl_ms), mode="markers", name="ITL",
            marker=dict(color=style.paper, line=dict(color=style.ink, width=1.5), size=7),
        ))
        # The lines' labels sit in the right margin, outside the plot, so no bar runs under them,
        # pushed apart where the three lines are close (they often coincide).
        lines = ((label(table, "lat_tpot_line", ms=fmt_ms(metrics.tpot_ms)), metrics.tpot_ms, "dash", style.decode),
                 (label(table, "lat_pct_line", p=50, ms=fmt_ms(metrics.p50_itl_ms)), metrics.p50_itl_ms, "dot",
                  style.muted_ink),
                 (label(table, "lat_pct_line", p=99, ms=fmt_ms(metrics.p99_itl_ms)), metrics.p99_itl_ms, "dot",
                  style.muted_ink))
        top_ms = max([p.total_ms for p in ((full or trace).latency_parts())] + [metrics.p99_itl_ms]) * 1.15
        shifts = _label_shifts([v for _, v, _, _ in lines], top_ms, PLOT_PX[classroom], 24 if classroom else 15)
        for (words, value, dash, color), shift in zip(lines, shifts):
            fig.add_hline(y=value, line_dash=dash, line_color=color, annotation_text=plain_label(words),
                          annotation_position="right", annotation_xanchor="left", annotation_yshift=shift,
                          annotation_font_color=color)
    if metrics:
        _ttft_note(fig, trace, table, style)
    fig.update_layout(title=label(table, "lat_title"), yaxis_title=f"{label(table, 'lat_axis_y')} (ms)",
                      xaxis_title=label(table, "lat_axis_x"), **font_layout(style, classroom),
                      plot_bgcolor=style.paper, barmode="stack", bargap=0.3, showlegend=True,
                      height=PLOT_PX[classroom] + LATENCY_MARGIN_PX[classroom]["t"] + LATENCY_MARGIN_PX[classroom]["b"],
                      margin=dict(LATENCY_MARGIN_PX[classroom], r=170 if classroom else 130),
                      # The legend hangs from the figure's own bottom edge (container coordinates), under a
                      # bottom margin sized for the level tick labels, the axis title and two legend rows:
                      # a paper-relative y would slide into the axis title as the plot's height changes.
                      legend=dict(orientation="h", yref="container", yanchor="bottom", y=0, xanchor="left", x=0))
    _level_pass_ticks(fig, (full or trace), table, classroom)
    if full is not None:
        _fix_axes(fig, full, table, max([p.total_ms for p in full.latency_parts()] + list(full.metrics.itl_ms)))
    return fig


def _ttft_note(fig: go.Figure, trace: RequestTrace, table: Table, style: Style) -> None:
    """TTFT and its parts, above the plot, left-aligned (no bar ever runs under it)."""
    metrics, prefill = trace.metrics, trace.steps[0]
    fig.add_annotation(xref="paper", yref="paper", x=0, y=1.0, yshift=6, xanchor="left", yanchor="bottom",
                       showarrow=False, name="ttft",
                       text=plain_label(label(table, "lat_ttft", ms=fmt_ms(metrics.ttft_ms),
                                              prefill=fmt_ms(prefill.duration_ms),
                                              rest=fmt_ms(metrics.ttft_ms - prefill.duration_ms))),
                       font=dict(color=style.prefill))


# Top: the title and the TTFT note. Bottom: one row of level tick labels, the axis title, then up to
# two legend rows (the classroom's 21 px legend wraps to two rows in a narrow column).
LATENCY_MARGIN_PX = {False: {"t": 90, "b": 130}, True: {"t": 110, "b": 200}}
MAX_PASS_TICKS = {False: 8, True: 4}  # level labels "第 128 次" fit side by side in a ~450 px wide plot


def pass_tick_numbers(num_passes: int, classroom: bool = False) -> list[int]:
    """Which passes (1-based) get an x tick label: all when few, else pass 1 and every k-th pass
    (k = 2, 5, 10, 20, 25, 50, 100, ...), at most MAX_PASS_TICKS of them, so the labels stay level
    (plotly stands crowded labels on end, and upright labels ran into the axis title and legend)."""
    for step in _nice_steps():
        # pass 1, then the multiples of `step` not crowding it ("1, 4, 6, 8", not "1, 2, 4, 6")
        ticks = [1] + [n for n in range(step, num_passes + 1, step) if n - 1 >= 0.75 * step]
        if len(ticks) <= MAX_PASS_TICKS[classroom]:
            return ticks
    raise AssertionError("unreachable: the steps grow without bound")


def _nice_steps():
    """1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, ..."""
    magnitude = 1
    while True:
        yield from (magnitude, 2 * magnitude, 5 * magnitude) if magnitude < 10 else \
            (magnitude, 2 * magnitude, 25 * magnitude // 10, 5 * magnitude)
        magnitude *= 10


def _level_pass_ticks(fig: go.Figure, trace: RequestTrace, table: Table, classroom: bool) -> None:
    """Label only pass_tick_numbers(...) of the x axis, level; the axis title clears them."""
    names = _pass_names(trace, table)
    shown = [names[n - 1] for n in pass_tick_numbers(len(names), classroom)]
    fig.update_xaxes(tickmode="array", tickvals=shown, ticktext=shown, tickangle=0, automargin=True,
                     title_standoff=12)


PLOT_PX = {False: 300, True: 380}  # about how tall the latency chart's plot area is, in px


def _label_shifts(values: list[float], top: float, plot_px: float, line_px: float) -> list[float]:
    """Vertical pixel shifts that keep labels at `values` (0..top on a `plot_px` tall axis)
    at least `line_px` apart, each as near its own line as it can be."""
    ys = [plot_px * v / top if top > 0 else 0.0 for v in values]  # up from the axis
    placed = spread_apart(ys, line_px)  # close labels fan upwards, never below the axis
    return [round(p - y, 1) for y, p in zip(ys, placed)]  # plotly's yshift: positive is up


def _fix_axes(fig: go.Figure, full: RequestTrace, table: Table, peak: float) -> None:
    """Every pass of the whole run on the x axis, y from 0 to its peak (plus headroom for labels)."""
    names = _pass_names(full, table)
    fig.update_xaxes(categoryorder="array", categoryarray=names, range=[-0.5, len(names) - 0.5])
    fig.update_yaxes(range=[0, peak * 1.15])


def plain_label(words: str) -> str:
    """Our own label inside a plotly template: escape markup and template braces."""
    return escape(words).replace("{", "(").replace("}", ")")


def kv_growth_figure(trace: RequestTrace, lang: str = "zh", style: Style | None = None,
                     full: RequestTrace | None = None, classroom: bool = False) -> go.Figure:
    """KV-cache bytes after each pass, stacked by layer (axes fixed to `full`, as in latency_figure)."""
    table, style = table_for(lang), style or DEFAULT_STYLE
    names = _pass_names(trace, table)
    fig = go.Figure()
    for layer in range(trace.model.num_layers):
        fig.add_trace(go.Bar(
            x=names, y=[s.kv_bytes_per_layer[layer] for s in trace.steps],
            name=label(table, "kv_layer", i=layer),
            marker_color=style.cached if layer % 2 == 0 else style.cached_dark,
            hovertemplate="%{x}: %{y:,} B<extra>" + label(table, "kv_layer", i=layer) + "</extra>",
        ))
    fig.update_layout(barmode="stack", title=label(table, "kv_title"), yaxis_title=f"{label(table, 'kv_axis_y')} (B)",
                      xaxis_title=label(table, "kv_axis_x"), **font_layout(style, classroom),
                      plot_bgcolor=style.paper, showlegend=trace.model.num_layers <= 12)
    _level_pass_ticks(fig, (full or trace), table, classroom)
    if full is not None:
        _fix_axes(fig, full, table, max(s.kv_bytes for s in full.steps))
    return fig


# --- roofline, floor vs measured, sweeps (the bottleneck lab; same numbers as lesson/diagrams/roofline.py) ---

def roofline_figure(floors, lang: str = "zh", style: Style | None = None) -> go.Figure:
    """Log-log roofline of `floors` (engine.cost.TraceFloors): the two roofs, each pass measured
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


# ---- serving lab: the Gantt with hover (lesson/diagrams/serving_gantt.py draws the same segments) ----

def serving_gantt_figure(run, lang: str = "zh", style: Style | None = None) -> go.Figure:
    """One row per request (first at the top): each segment of `gantt_segments(run)` as a horizontal
    bar from its start, tokens as ticks, ITL spikes as red markers; hover names the pass, positions, time.

    data holds one bar trace per segment kind present (in SEGMENT_ORDER), then the token ticks.
    Request ids are escaped (plotly reads <b>, <br> ... in labels)."""
    check_language(lang)
    style = style or DEFAULT_STYLE
    ids = [plain_label(r.request_id) for r in run.requests]
    row = {r.request_id: name for r, name in zip(run.requests, ids)}
    colors = {"queue": style.waiting, "stall": style.waiting, "prefill": style.prefill, "prefill_chunk": "#60a5fa",
              "decode": style.decode, "handoff": "#059669", "observed_ttft": style.prefill_light}
    segments = gantt_segments(run)
    fig = go.Figure()
    for kind in SEGMENT_ORDER:
        chosen = [s for s in segments if s.kind == kind]
        if not chosen:
            continue
        thin = kind in ("queue", "stall")
        fig.add_trace(go.Bar(
            orientation="h", y=[row[s.request_id] for s in chosen],
            x=[max(s.end_ms - s.start_ms, 1e-3) for s in chosen],
            base=[s.start_ms for s in chosen], marker_color=colors[kind], opacity=0.55 if thin else 1.0,
            width=0.35 if thin else 0.7, name=plain_label(_segment_name(kind, lang)),
            hovertext=[plain_label(segment_title(s, lang)) for s in chosen], hoverinfo="text",
        ))
    ticks_x = [tt for r in run.requests for tt in r.token_times_ms]
    ticks_y = [row[r.request_id] for r in run.requests for _ in r.token_times_ms]
    fig.add_trace(go.Scatter(x=ticks_x, y=ticks_y, mode="markers", name=plain_label(t(lang, "sv_legend_token")),
                             marker=dict(symbol="line-ns-open", size=12, color=style.ink, line=dict(width=1)),
                             hovertemplate="%{y}: %{x:.1f} ms<extra></extra>"))
    spikes = itl_spikes(run)
    if spikes:
        fig.add_trace(go.Scatter(
            x=[(s.start_ms + s.end_ms) / 2 for s in spikes], y=[row[s.request_id] for s in spikes], mode="markers",
            marker=dict(symbol="triangle-down", size=10, color="#dc2626"),
            name=plain_label(t(lang, "sv_legend_spike", factor="3")),
            hovertext=[plain_label(t(lang, "sv_spike_title", rid=s.request_id, ms=fmt_ms(s.ms))) for s in spikes],
            hoverinfo="text"))
    title = (t(lang, "sv_gantt_title", policy=policy_label(lang, run.settings.policy)) if run.iterations
             else t(lang, "sv_gantt_title_observed"))
    fig.update_layout(barmode="overlay", title=plain_label(title), xaxis_title=plain_label(t(lang, "sv_time_axis")),
                      font=dict(family=style.font_family), plot_bgcolor=style.paper,
                      height=max(260, 60 + 26 * len(ids)),
                      legend=dict(orientation="h", yanchor="bottom", y=1.02, xanchor="left", x=0))
    fig.update_yaxes(categoryorder="array", categoryarray=list(reversed(ids)), type="category")
    return fig


SEGMENT_ORDER = ("queue", "stall", "observed_ttft", "prefill", "prefill_chunk", "decode", "handoff")


def _segment_name(kind: str, lang: str) -> str:
    key = {"queue": "sv_legend_waiting", "stall": "sv_legend_waiting", "observed_ttft": "sv_legend_observed_ttft",
           "prefill": "sv_phase_prefill", "prefill_chunk": "sv_phase_prefill_chunk", "decode": "sv_phase_decode",
           "handoff": "sv_legend_handoff"}[kind]
    return t(lang, key)

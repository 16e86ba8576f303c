"""A run's plotly chart on the lesson page: the latency of each output token (the pass, the
page's drawing, other waiting), with hover details (the KV cache after each pass is an SVG:
lesson/diagrams/kv_growth.py).
"""

from __future__ import annotations

from html import escape

import plotly.graph_objects as go

from engine.contract.trace import RequestTrace

from ..diagrams.latency import spread_apart
from ..layout import wrap_text
from ..style import DEFAULT_STYLE, Style
from ..formats import fmt_bytes, fmt_ms
from ..svgtext import piece_label
from ..text import Table, label, table_for
from .common import CLASSROOM_FONT_PX, font_layout, plain_label

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


def latency_figure(trace: RequestTrace, lang: str = "zh", style: Style | None = None,
                   full: RequestTrace | None = None, classroom: bool = False, run_note: str = "") -> go.Figure:
    """One stacked bar per output token: the pass that made it (coloured by phase), then
    the page's drawing and the other waiting before it, so each bar's height is that
    token's wait (TTFT for the first, its ITL after). TPOT dashed, ITL p50 / p99 dotted.

    data[0] is always the pass times, data[1] the page drawing, data[2] the other waiting.
    `full`: the whole run when `trace` is a prefix of it: both axes are fixed to it, so
    stepping through the run adds bars without rescaling. `classroom`: larger type everywhere.
    The TTFT note sits above the plot, left-aligned, so no bar (a long run's Decode bars included) ever
    runs under it; the legend goes below the plot. `run_note`: which repeat it is, under the title.
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
            _level_line(fig, plain_label(words), value, dash, color, shift)
    if metrics:
        _ttft_note(fig, trace, table, style)
    x_title, x_title_px = _axis_title(label(table, "lat_axis_x"), classroom)
    margin = LATENCY_MARGIN_PX[classroom]
    fig.update_layout(title=label(table, "lat_title"), yaxis_title=f"{label(table, 'lat_axis_y')} (ms)",
                      xaxis_title=x_title, **font_layout(style, classroom),
                      plot_bgcolor=style.paper, barmode="stack", bargap=0.3, showlegend=True,
                      height=PLOT_PX[classroom] + margin["t"] + margin["b"] + x_title_px,
                      margin=dict(margin, b=margin["b"] + x_title_px, r=170 if classroom else 130),
                      # The legend hangs from the figure's own bottom edge (container coordinates), under a
                      # bottom margin sized for the level tick labels, the axis title and two legend rows:
                      # a paper-relative y would slide into the axis title as the plot's height changes.
                      legend=dict(orientation="h", yref="container", yanchor="bottom", y=0, xanchor="left", x=0))
    _level_pass_ticks(fig, (full or trace), table, classroom)
    if full is not None:
        _fix_axes(fig, full, table, max([p.total_ms for p in full.latency_parts()] + list(full.metrics.itl_ms)))
    _run_note(fig, run_note, classroom)
    return fig


def _level_line(fig: go.Figure, words: str, value: float, dash: str, color: str, shift: int) -> None:
    """A level line across the plot at `value`, its words in the right margin: the shape and annotation
    plotly's add_hline(annotation_position="right") adds, set directly (add_hline costs ~20 ms a line)."""
    fig.add_shape(type="line", line=dict(color=color, dash=dash), x0=0, x1=1, xref="x domain", y0=value, y1=value,
                  yref="y")
    fig.add_annotation(font=dict(color=color), showarrow=False, text=words, x=1, xanchor="left", xref="x domain",
                       y=value, yanchor="middle", yref="y", yshift=shift)


PHONE_LINE_PX = 300  # a line of the chart's own words that fits a phone's 358 px chart (390 px screen)
# The chart is about the lesson column wide (760 px, 820 in classroom), and on a phone 358 px: outside classroom
# mode its subtitle and axis title wrap to fit a phone (one long line was cut off at both edges there).
RUN_NOTE_WRAP_PX = {False: PHONE_LINE_PX, True: 700}
AXIS_TITLE_WRAP_PX = {False: 280, True: 560}  # centred under a phone's 150 px plot: at most 300 px stays inside
AXIS_TITLE_PX = 14


def _run_note(fig: go.Figure, run_note: str, classroom: bool) -> None:
    """Which repeat the chart draws, as the title's subtitle (wrapped: plotly does not wrap); the title
    then stands at the top and the top margin grows by the note's lines, so the TTFT note keeps its room
    ("": a single run, nothing said). lesson.spread.run_label writes it, as on the SVG twin."""
    if not run_note:
        return
    size = CLASSROOM_FONT_PX if classroom else 12
    lines = wrap_text(run_note, RUN_NOTE_WRAP_PX[classroom], size)
    grow = round(len(lines) * size * 1.35)
    margin = LATENCY_MARGIN_PX[classroom]
    fig.update_layout(title=dict(yref="container", y=1, yanchor="top", pad=dict(t=10),
                                 subtitle=dict(text="<br>".join(plain_label(line) for line in lines),
                                               font=dict(size=size, color=DEFAULT_STYLE.muted_ink))),
                      margin=dict(t=margin["t"] + grow), height=fig.layout.height + grow)


def _ttft_note(fig: go.Figure, trace: RequestTrace, table: Table, style: Style) -> None:
    """TTFT and its parts, above the plot, left-aligned (no bar ever runs under it)."""
    metrics, prefill = trace.metrics, trace.steps[0]
    fig.add_annotation(xref="paper", yref="paper", x=0, y=1.0, yshift=6, xanchor="left", yanchor="bottom",
                       showarrow=False, name="ttft",
                       text=plain_label(label(table, "lat_ttft", ms=fmt_ms(metrics.ttft_ms),
                                              prefill=fmt_ms(prefill.duration_ms),
                                              rest=fmt_ms(metrics.ttft_ms - prefill.duration_ms))),
                       font=dict(color=style.prefill))


def _axis_title(words: str, classroom: bool) -> tuple[str, int]:
    """(the x axis title wrapped, as plotly's <br> lines: to a phone's width outside classroom mode, to the
    classroom column's plot in its 21 px type, where one line ran past the figure's left edge; the px its
    extra lines need below the plot)."""
    size = CLASSROOM_FONT_PX if classroom else AXIS_TITLE_PX  # plotly's own size for an axis title: 14 px
    lines = wrap_text(words, AXIS_TITLE_WRAP_PX[classroom], size)
    return "<br>".join(plain_label(line) for line in lines), round((len(lines) - 1) * size * 1.35)


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

"""The engine modes figure for the app (plotly): lesson/diagrams/modes.py's rows, with hover.

One row per mode asked (first at the top): the median Decode step as a bar, a line from
the fastest to the slowest step, every step a dot, and the cost-model floor as a dashed
line through every row. The same `mode_summaries` feed the SVG, so both show one set of
numbers. Labels are escaped: plotly reads <b>, <br> ... in them, and an engine note is
not the lesson's own text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import plotly.graph_objects as go

from engine.contract.trace import RequestTrace

from ..diagrams._common import OUTLIER_COLOR
from ..diagrams.modes import axis_end_ms, headline, mode_summaries, row_detail, row_title
from ..style import DEFAULT_STYLE, Style
from ..formats import fmt_ms
from ..text import t
from .common import font_layout, plain_label

def _title_text(rows, lang: str) -> str:
    """The chart's headline as plain text: the modes' comparison, or why there is none (no Decode step)."""
    return plain_label(headline(rows, lang) if rows else t(lang, "modes_no_decode"))


def _outlier_trace(fig: go.Figure, rows, names, end: float, lang: str) -> None:
    """data[2]: a red ring on every Decode step far from its mode's others (in the legend only if any)."""
    rings = [(n, i + 1, r.decode_ms[i], r) for r, n in zip(rows, names) for i in r.outlier_steps]
    fig.add_trace(go.Scatter(
        x=[min(ms, end) for _, _, ms, _ in rings], y=[n for n, _, _, _ in rings], mode="markers",
        showlegend=bool(rings), marker=dict(symbol="circle-open", size=13, color=OUTLIER_COLOR, line=dict(width=2)),
        name=plain_label(t(lang, "modes_legend_outlier")), hoverinfo="text",
        hovertext=[plain_label(t(lang, "modes_outlier_title", mode=r.asked, n=i, ms=fmt_ms(ms),
                                 median=fmt_ms(r.median_ms))) for _, i, ms, r in rings]))


def modes_figure(runs: Mapping[str, RequestTrace], floors_ms: Sequence[float] | None = None, lang: str = "zh",
                 style: Style | None = None, classroom: bool = False, title: bool = True) -> go.Figure:
    """data[0]: the median bars (one per mode asked, in `runs`' order); data[1]: every Decode step; data[2]:
    the steps far from their mode's others (lesson.spread's rule), ringed.
    title=False leaves the headline to the page (plotly titles never wrap: in classroom type the
    headline ran past a 1024-px projector's column)."""
    style = style or DEFAULT_STYLE
    rows = [r for r in mode_summaries(runs, floors_ms) if r.median_ms is not None]
    names = [plain_label(r.asked if r.ran == r.asked else t(lang, "modes_fell_back", asked=r.asked, ran=r.ran))
             for r in rows]
    hover = [plain_label(row_title(r, lang)) + "<br>" + plain_label(row_detail(r, lang))
             + (f"<br>{plain_label(r.note)}" if r.note else "") for r in rows]
    end = axis_end_ms(rows) if rows else 1.0  # stragglers past it sit on the edge as arrowheads
    steps = [(n, i, ms) for r, n in zip(rows, names) for i, ms in enumerate(r.decode_ms, 1)]
    fig = go.Figure()
    fig.add_trace(go.Bar(
        orientation="h", y=names, x=[r.median_ms for r in rows], marker_color=style.decode_light,
        marker_line=dict(color=style.decode, width=1.5), name=plain_label(t(lang, "modes_legend_median")),
        error_x=dict(type="data", symmetric=False, color=style.decode,
                     array=[min(r.step_spread[1], end) - r.median_ms for r in rows],
                     arrayminus=[r.median_ms - r.step_spread[0] for r in rows]),
        hovertext=hover, hoverinfo="text"))
    fig.add_trace(go.Scatter(
        x=[min(ms, end) for _, _, ms in steps], y=[n for n, _, _ in steps], mode="markers",
        marker=dict(color=style.decode, size=[7 if ms <= end else 12 for _, _, ms in steps], opacity=0.75,
                    symbol=["circle" if ms <= end else "triangle-right" for _, _, ms in steps]),
        name=plain_label(t(lang, "modes_legend_step")),
        hovertext=[f"{n} · D{i}: {fmt_ms(ms)}" for n, i, ms in steps], hoverinfo="text"))
    _outlier_trace(fig, rows, names, end, lang)
    floor = next((r.floor_ms for r in rows if r.floor_ms), None)
    if floor:
        fig.add_vline(x=floor, line=dict(color=style.ink, dash="dash", width=2))
        fig.add_annotation(x=floor, y=1, xref="x", yref="paper", yanchor="bottom", xanchor="left", showarrow=False,
                           text=plain_label(t(lang, "modes_floor_label", floor=fmt_ms(floor))))  # above the bars
    fig.update_yaxes(categoryorder="array", categoryarray=list(reversed(names)), type="category")
    fig.update_xaxes(title=plain_label(t(lang, "modes_axis")), ticksuffix=" ms", range=[0, end * 1.02])
    fig.update_layout(
        title=dict(text=_title_text(rows, lang) if title else "",
                   x=0, xanchor="left", **({} if classroom else {"font": dict(size=15)})),  # classroom: its own size
        plot_bgcolor=style.paper, height=max(300, (200 if title else 150) + 62 * len(rows)) + (30 if classroom else 0),
        bargap=0.45,
        # The legend sits at the very bottom of the figure, in a margin of its own: placed under the plot in
        # paper units it landed on the axis title once classroom type made the tick labels taller.
        legend=dict(orientation="h", yref="container", yanchor="bottom", y=0.0, x=0),
        margin=dict(l=10, r=10, t=80 if title else 40, b=90 if classroom else 70),
        **font_layout(style, classroom))
    return fig

"""Plotly figures for the app: the same numbers as the SVGs, with hover details.

Imported by the app only (plotly is heavier than svgwrite); the SVG renderers
never import this module.
"""

from __future__ import annotations

import plotly.graph_objects as go

from engine.trace import RequestTrace

from .strings import label, strings_for
from .style import DEFAULT_STYLE, Style
from .svgtext import fmt_bytes, fmt_ms, piece_label


def _pass_names(trace: RequestTrace, table: dict) -> list[str]:
    return [label(table, "pass_n", n=s.index + 1) for s in trace.steps]


def _hover(trace: RequestTrace, table: dict) -> list[str]:
    # plotly renders hover text as HTML-ish markup: escape what the user typed.
    from html import escape

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


def latency_figure(trace: RequestTrace, lang: str = "zh", style: Style | None = None) -> go.Figure:
    """One bar per forward pass (ms), coloured by phase, TTFT/TPOT marked."""
    table, style = strings_for(lang), style or DEFAULT_STYLE
    metrics = trace.metrics
    fig = go.Figure(go.Bar(
        x=_pass_names(trace, table), y=[s.duration_ms for s in trace.steps],
        marker_color=[style.phase_color(s.phase) for s in trace.steps],
        hovertext=_hover(trace, table), hoverinfo="text", name=label(table, "lat_axis_y"),
    ))
    if metrics and len(trace.steps) > 1:
        fig.add_trace(go.Scatter(
            x=_pass_names(trace, table)[1:], y=list(metrics.itl_ms), mode="markers", name="ITL",
            marker=dict(color=style.paper, line=dict(color=style.ink, width=1.5), size=7),
        ))
        fig.add_hline(y=metrics.tpot_ms, line_dash="dash", line_color=style.decode,
                      annotation_text=label(table, "lat_tpot_line", ms=fmt_ms(metrics.tpot_ms)))
    if metrics:
        prefill = trace.steps[0]
        fig.add_annotation(x=_pass_names(trace, table)[0], y=prefill.duration_ms, yshift=12, showarrow=False,
                           text=label(table, "lat_ttft", ms=fmt_ms(metrics.ttft_ms), prefill=fmt_ms(prefill.duration_ms),
                                      rest=fmt_ms(metrics.ttft_ms - prefill.duration_ms)),
                           font=dict(color=style.prefill))
    fig.update_layout(title=label(table, "lat_title"), yaxis_title=f"{label(table, 'lat_axis_y')} (ms)",
                      xaxis_title=label(table, "lat_axis_x"), font=dict(family=style.font_family),
                      plot_bgcolor=style.paper, showlegend=False, bargap=0.3)
    return fig


def kv_growth_figure(trace: RequestTrace, lang: str = "zh", style: Style | None = None) -> go.Figure:
    """KV-cache bytes after each pass, stacked by layer."""
    table, style = strings_for(lang), style or DEFAULT_STYLE
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
                      xaxis_title=label(table, "kv_axis_x"), font=dict(family=style.font_family),
                      plot_bgcolor=style.paper, showlegend=trace.model.num_layers <= 12)
    return fig

"""The serving lab's Gantt with hover (lesson/diagrams/serving_gantt.py draws the same segments):
one row per request, its waits, passes and tokens, and the ITL spikes.
"""

from __future__ import annotations

import plotly.graph_objects as go

from ..diagrams.serving_gantt import gantt_segments, itl_spikes, policy_label, segment_title
from ..style import DEFAULT_STYLE, Style
from ..formats import fmt_ms
from ..text import check_language, t
from .common import plain_label

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

"""The server's own view during a probe: running and waiting requests and KV-cache usage over time.

`server_metrics_figure(result.server_metrics, lang)` draws what engine/contract/interop/prometheus.py sampled from a
vLLM or SGLang `/metrics` endpoint (a plotly figure for the app's serving lab): requests on the
left axis as steps (a gauge holds its value until the next sample), KV-cache usage in percent on
the right. A series the server does not expose is left out, never drawn as zeros; a missing sample
is a gap. `server_metrics_note` is the sentence to show instead when nothing was sampled.
"""

from __future__ import annotations

import plotly.graph_objects as go

from engine.contract.interop.prometheus import ServerMetrics

from ..style import DEFAULT_STYLE, Style
from ..text import t
from .common import classroom_fonts

SERIES = (("running", "probe_running", "decode"), ("waiting", "probe_waiting", "waiting"))


def server_metrics_note(metrics: ServerMetrics, lang: str = "zh") -> str | None:
    """None when there is a figure to draw, else why not (in the reader's language)."""
    if metrics.available and metrics.samples:
        return None
    return t(lang, "probe_no_server_metrics", reason=metrics.reason or "-")


def server_metrics_figure(metrics: ServerMetrics, lang: str = "zh", style: Style | None = None,
                          classroom: bool = False) -> go.Figure:
    style = style or DEFAULT_STYLE
    times = [s.t_ms for s in metrics.samples]
    fig = go.Figure()
    for key, label_key, color in SERIES:
        if key not in metrics.names:
            continue
        fig.add_trace(go.Scatter(
            x=times, y=[s.values.get(key) for s in metrics.samples], name=t(lang, label_key), mode="lines+markers",
            line={"shape": "hv", "color": getattr(style, color)}, connectgaps=False,
            hovertemplate="%{x:.0f} ms: %{y:g}<extra>" + metrics.names[key] + "</extra>"))
    if "kv_cache_usage" in metrics.names:
        usage = [None if s.values.get("kv_cache_usage") is None else 100.0 * s.values["kv_cache_usage"]
                 for s in metrics.samples]
        fig.add_trace(go.Scatter(
            x=times, y=usage, name=t(lang, "probe_kv_usage"), yaxis="y2", mode="lines",
            line={"shape": "hv", "dash": "dot", "color": style.muted_ink}, connectgaps=False,
            hovertemplate="%{x:.0f} ms: %{y:.1f}%<extra>" + metrics.names["kv_cache_usage"] + "</extra>"))
    fig.update_layout(
        title={"text": t(lang, "probe_server_title")},
        xaxis={"title": {"text": t(lang, "probe_time_axis")}, "rangemode": "tozero"},
        yaxis={"title": {"text": t(lang, "probe_requests_axis")}, "rangemode": "tozero", "dtick": 1},
        yaxis2={"title": {"text": t(lang, "probe_kv_axis")}, "overlaying": "y", "side": "right",
                "range": [0, 100]},
        legend={"orientation": "h", "y": -0.25}, margin={"l": 60, "r": 60, "t": 50, "b": 40},
        plot_bgcolor="white", height=380 if classroom else 320,
    )
    return classroom_fonts(fig, classroom, style)

"""What the app's plotly figures share: fonts (the classroom's larger type included) and our own
labels escaped, so plotly reads no markup or template braces in them.
"""

from __future__ import annotations

from html import escape

import plotly.graph_objects as go

from ..style import DEFAULT_STYLE, Style

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


def classroom_fonts(fig: go.Figure, classroom: bool, style: Style | None = None) -> go.Figure:
    """Classroom mode for any plotly chart of the serving lab: no text under the page's body size
    (font_layout's classroom fonts, the right-hand axis included)."""
    if classroom:
        fig.update_layout(**font_layout(style or DEFAULT_STYLE, True))
        if "yaxis2" in fig.layout and fig.layout.yaxis2.overlaying:
            fig.update_layout(yaxis2={"tickfont": {"size": CLASSROOM_FONT_PX},
                                      "title_font": {"size": CLASSROOM_FONT_PX}})
    return fig


def plain_label(words: str) -> str:
    """Our own label inside a plotly template: escape markup and template braces."""
    return escape(words).replace("{", "(").replace("}", ")")

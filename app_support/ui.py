"""Small Streamlit building blocks: an error boundary, a diagram with its
download and raw-SVG view, metric cards, and the page's static CSS.

SVG is shown with `st.image`, i.e. inside an <img>: a browser never runs
scripts there, so token text drawn into a diagram stays text. Raw HTML is only
ever the fixed CSS below, never anything a visitor typed.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

import streamlit as st

from lesson.text import t
from lesson.views import MetricCard, error_message

log = logging.getLogger("prefill_decode.app")

BASE_CSS = """
<style>
.block-container { max-width: 1180px; padding-top: 2.2rem; }
h1 { font-size: 2.1rem !important; line-height: 1.25 !important; }
[data-testid="stMetricValue"] { font-size: 1.7rem; }
[data-testid="stCaptionContainer"] { font-size: 0.92rem; }
</style>
"""

CLASSROOM_CSS = """
<style>
[data-testid="stMain"] .stMarkdown p, [data-testid="stMain"] .stMarkdown li,
[data-testid="stMain"] .stMarkdown td, [data-testid="stMain"] .stMarkdown th {
  font-size: 1.28rem !important; line-height: 1.65 !important; }
[data-testid="stMain"] h1 { font-size: 2.7rem !important; }
[data-testid="stMain"] h2 { font-size: 2.1rem !important; }
[data-testid="stMain"] h3 { font-size: 1.7rem !important; }
[data-testid="stMain"] [data-testid="stMetricValue"] { font-size: 2.4rem !important; }
[data-testid="stMain"] [data-testid="stMetricLabel"] p { font-size: 1.3rem !important; }
[data-testid="stMain"] [data-testid="stCaptionContainer"] p { font-size: 1.1rem !important; }
[data-testid="stMain"] [data-testid="stWidgetLabel"] p { font-size: 1.15rem !important; }
[data-testid="stMain"] [data-testid="stCode"] code { font-size: 1.15rem !important; }
.stButton button p { font-size: 1.1rem !important; }
</style>
"""


def inject_css(classroom: bool) -> None:
    """Fixed CSS only (no user text): larger type in classroom mode."""
    st.html(BASE_CSS + (CLASSROOM_CSS if classroom else ""))


@contextlib.contextmanager
def error_boundary(lang: str, key: str = "err_internal") -> Iterator[None]:
    """Turn any error in a section into a message in the page's language.

    Streamlit's own rerun/stop signals derive from BaseException and pass through.
    """
    try:
        yield
    except Exception as err:  # noqa: BLE001 - the page must never show a traceback
        log.exception("section failed")
        if getattr(err, "key", None):
            st.error(error_message(err, lang))
        else:
            st.error(t(lang, key, kind=type(err).__name__))


def svg_figure(name: str, svg: str, lang: str, caption: str | None = None, *, alt: str, file_stem: str) -> None:
    """A diagram with its text alternative, then its SVG download (`file_stem`.svg) and,
    on demand, its source (wrapped: the SVG is one long line).

    `alt` is plain text set as the <img>'s alt attribute (lesson.views.figure_alt),
    never parsed as markup.
    """
    st.image(svg, width="stretch", alt=alt)
    if caption:
        st.caption(caption)
    left, right = st.columns([1, 2], vertical_alignment="center")
    left.download_button(
        t(lang, "download_svg"), data=svg, file_name=f"{file_stem}.svg", mime="image/svg+xml",
        key=f"download_svg_{name}", on_click="ignore", icon=":material/download:",
    )
    if right.toggle(t(lang, "raw_svg"), key=f"raw_svg_{name}"):
        st.code(svg, language="xml", height=320, wrap_lines=True)


def metric_row(cards: list[MetricCard]) -> None:
    """TTFT / TPOT / mean ITL / E2EL side by side, each with its definition."""
    for column, card in zip(st.columns(len(cards) or 1, border=True), cards):
        with column:
            st.metric(card.label, card.value, help=card.definition)
            st.caption(card.definition)

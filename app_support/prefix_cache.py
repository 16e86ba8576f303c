"""The serving lab's prefix-caching part (app_support/serving.py calls `section`).

With the lab's switch on, every policy ran with the cache, and the first of them ran once more with it
off on the same workload: this part shows, per request, the prompt, cached and computed tokens, the hit
rate and why the rest missed (lesson.prefix_views), both runs' TTFT side by side, and the block-sharing
figure (lesson/diagrams/prefix_cache.py). With the switch off it says how to see them.
"""

from __future__ import annotations

import functools
from dataclasses import replace

import streamlit as st

from lesson.diagrams.prefix_cache import render_prefix_cache
from lesson.formats import escape_markdown
from lesson.prefix_views import prefix_alt, prefix_records, ttft_heading, ttft_records, ttft_sentence
from lesson.serving_views import run_label
from lesson.slides import serving_stem
from lesson.style import DEFAULT_STYLE
from lesson.text import t

from . import resources
from .run_store import ServingSet
from .ui import svg_figure


# Outside classroom mode the block table is still drawn to the column's width (its cells fold, as in classroom
# mode) instead of as wide as its 32 blocks: shrunk into the column its labels came out at 7-8.6 px.
PAGE_COLUMN_UNITS = 820


@functools.lru_cache(maxsize=64)
def prefix_svg(shown: ServingSet, k: int, lang: str, classroom: bool = False) -> str:
    style = resources.figure_style(classroom) if classroom else replace(DEFAULT_STYLE, max_width=PAGE_COLUMN_UNITS)
    return render_prefix_cache(shown.runs[k], lang=lang, style=style)


def section(lang: str, shown: ServingSet, tag: str) -> None:
    """The part under the serving lab's figures (`shown`: the stored set of runs, with its cache-off run):
    nothing to show for runs with the cache off but a hint."""
    st.subheader(t(lang, "pc_heading"), anchor="prefix-caching")
    off = shown.prefix_off
    cached = [(run, k) for k, run in enumerate(shown.runs) if run.settings.prefix_caching and run.iterations]
    if not cached:
        st.caption(t(lang, "pc_off_note"))
        return
    st.markdown(t(lang, "pc_intro"))
    run, index = cached[0]
    if len(cached) > 1:
        names = [run_label(r, lang) for r, _ in cached]
        pick = st.selectbox(t(lang, "pc_tab"), range(len(cached)), format_func=lambda i: names[i],
                            key="sl_prefix_policy", placeholder=t(lang, "choose_option"))
        run, index = cached[pick or 0]
    st.markdown(f"**{escape_markdown(run_label(run, lang))}**")
    st.dataframe(prefix_records(run, lang), hide_index=True, width="stretch")
    if off is not None:
        on = next((r for r, _ in cached if r.settings.policy == off.settings.policy), run)
        st.markdown(f"**{escape_markdown(ttft_heading(on, lang))}**")
        st.markdown(escape_markdown(ttft_sentence(off, on, lang)))
        st.dataframe(ttft_records(off, on, lang), hide_index=True, width="stretch")
    st.caption(t(lang, "pc_explain"))
    classroom = bool(st.session_state.get("classroom"))
    svg_figure(f"serving_prefix_{run.settings.policy}", prefix_svg(shown, index, lang, classroom), lang,
               alt=prefix_alt(run, lang), file_stem=serving_stem(run, "prefix", tag))

"""The bottleneck lab page (app_pages/bottleneck_lab.py), part by part.

It shows the run the lesson page shows (st.session_state.trace_json, one run
shared by every page) against the cost model (engine.cost), and measures
what the lesson claims: cache on vs off, one Decode step's attention.
"""

from __future__ import annotations

import streamlit as st

from engine.trace import RequestTrace
from lesson.text import t
from lesson.views import ServerSettings, cache_compare_alt, cache_compare_caption, download_stem, trace_summary

from . import resources, sections
from .ui import error_boundary, svg_figure

# Widget keys of this page: app.py writes them back each run so they survive a visit to the lesson.
LAB_WIDGET_KEYS = ()


def bottleneck_lab(lang: str, lm, settings: ServerSettings) -> None:
    st.header(t(lang, "lab_title"), anchor="lab")
    st.markdown(t(lang, "lab_intro"))
    st.page_link("app_pages/lesson.py", label=t(lang, "lab_back_link"), icon=":material/school:")
    if lm is None:
        return
    trace_json = sections._trace_to_show(lang, settings)  # the lesson's run, or its first view
    if trace_json is None or st.session_state.trace_args is None:
        st.info(t(lang, "no_trace"))
        return
    trace = RequestTrace.from_json(trace_json)
    st.caption(t(lang, "lab_shared_run", summary=trace_summary(trace, lang)))
    stem = download_stem(trace, st.session_state.trace_stamp)
    st.header(t(lang, "lab_cache_title"), anchor="cache")
    shown = _cache_compare(lang, trace, settings, stem)
    if shown is not None:
        _decode_attention(lang, *shown, stem)


COMPARE_MAX_NEW_TOKENS = 32  # about a second for both loops on the default model and the lesson's prompt


def _cache_compare(lang: str, trace: RequestTrace, settings: ServerSettings, stem: str) -> tuple | None:
    """Cache on vs off for the shown run's prompt, once asked for: the figure and its totals.

    Returns (resources.cache_comparison's plain arguments, the answer's token ids), or None.
    """
    args = st.session_state.trace_args
    num_tokens = min(COMPARE_MAX_NEW_TOKENS, settings.limits.max_new_tokens)
    key = (args.model_choice, args.device, args.dtype, tuple(trace.prompt_ids), num_tokens)
    if st.button(t(lang, "cache_compare"), key="cache_compare", icon=":material/cached:",
                 help=t(lang, "cache_compare_help", num_tokens=num_tokens)):
        st.session_state.cache_compare_for = key  # shown until the run (or its prompt) changes
    if st.session_state.get("cache_compare_for") != key:
        return None
    with error_boundary(lang, "err_diagram"):
        with st.spinner(t(lang, "cache_compare_running")):
            comparison = resources.cache_comparison(*key)
        svg = resources.cache_compare_svg(*key, lang)
        svg_figure("cache_compare", svg, lang, cache_compare_caption(comparison, lang),
                   alt=cache_compare_alt(comparison, lang), file_stem=f"{stem}_cache_compare")
        return key, comparison.output_ids
    return None


def _decode_attention(lang: str, key: tuple, output_ids: tuple[int, ...], stem: str) -> None:
    """A Decode step picked on a slider, and what its new position reads from the cache."""
    model_choice, device, dtype, prompt_ids, _ = key
    steps = list(range(1, len(output_ids)))  # D1 .. D(n-1): pass 0 is the Prefill
    if not steps:
        return
    step = steps[0]
    if len(steps) > 1:  # the slider key names the count: a stale value from another length never applies
        step = st.select_slider(t(lang, "attention_step"), options=steps, format_func=lambda k: f"D{k}",
                                key=f"attention_step_{len(steps)}", help=t(lang, "attention_step_help"))
    with error_boundary(lang, "err_diagram"):
        svg, alt = resources.decode_attention_svg(model_choice, device, dtype, prompt_ids, output_ids, step, lang)
        context = len(prompt_ids) + step - 1  # cached before that step: the prompt and the answer so far
        svg_figure("attention", svg, lang, t(lang, "attention_caption", context=context),
                   alt=alt, file_stem=f"{stem}_attention_D{step}")



"""The lesson's sections, in the page's order, after the run panel.

Each function draws one part of the lesson. Sections that show a figure take the run as
trace JSON (a plain string, so the figure caches key on it; app_support/resources.py parses
it once) or None when there is no run to show yet. While the classroom or the replay steps
through the run, the JSON is the part shown so far and the figures keep the whole run's axes
(app_support/stepping.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import streamlit as st

from engine.contract.config import ServerSettings
from lesson.alt_text import figure_alt, schematic_alt, with_run_note
from lesson.answer import truncate_trace
from lesson.diagrams import RUN_NOTED
from lesson.diagrams.animation import render_animation
from lesson.diagrams.ttft_parts import FeltTimes, render_ttft_parts, ttft_parts_alt
from lesson.downloads import download_stem
from lesson.engine_modes import engine_caption
from lesson.formats import markdown_table
from lesson.metric_cards import (
    bottleneck_contradicts, bottleneck_live_text, metric_cards, metric_gap_notes, page_drawing_note, timeline_lesson,
)
from lesson.recorded import figure_note, recorded_alt, recorded_stem, with_note
from lesson.spread import run_label
from lesson.style import DEFAULT_STYLE
from lesson.text import label, t, table_for

from . import resources, state
from .resources import parsed_trace
from .stepping import stepping_full
from .ui import error_boundary, felt_source, metric_row, plotly_config, scroll_into_view, shown_spread, svg_figure


def intro(lang: str) -> None:
    st.markdown(t(lang, "intro_1"))
    st.markdown(t(lang, "intro_2"))


def figure_words(lang: str, trace_json: str, alt: str, stem: str) -> tuple[str, str, str | None]:
    """A lesson figure's (alt text, download stem, extra caption line): labelled when the run shown is
    recorded (an opened file: all three) or the server's first view, cached for every visitor (the alt
    text and the caption line). Unchanged, and no line, for a run this visitor measured."""
    ss = st.session_state
    if not (ss.trace_recorded or ss.trace_is_default):
        return alt, stem, None
    provenance = parsed_trace(trace_json).provenance
    stem = recorded_stem(stem, provenance) if ss.trace_recorded else stem
    return recorded_alt(alt, provenance, lang), stem, figure_note(provenance, lang)


def live_diagram(name: str, trace_json: str | None, lang: str, caption: str | None = None) -> None:
    if trace_json is None:
        st.info(t(lang, "no_trace"))
        return
    with error_boundary(lang, "err_diagram"):
        run_note = shown_run_note(lang, trace_json)  # which of the repeats every figure draws (lesson.spread)
        svg = resources.diagram_svg(name, trace_json, lang, stepping_full(), classroom=st.session_state.classroom,
                                    run_note=run_note)
        alt, stem = resources.diagram_words(name, trace_json, lang, st.session_state.trace_stamp)
        alt, stem, note = figure_words(lang, trace_json, alt, stem)  # a recorded run says so
        alt = with_run_note(alt, run_note if name in RUN_NOTED else "")
        svg_figure(name, svg, lang, with_note(caption, note), alt=alt, file_stem=stem)


def shown_run_note(lang: str, trace_json: str) -> str:
    """"median run 3 of 5 (...)" for the stored run (the whole run while the classroom steps), or ""."""
    whole = parsed_trace(stepping_full() or trace_json)
    return run_label(shown_spread(whole), lang)


def section_timeline(lang: str, trace_json: str | None) -> None:
    """The run's timeline first (on the first screen, under the run panel), then the lesson's words on it."""
    st.header(t(lang, "sec_timeline"), anchor="timeline")
    stretched = state.pop_difference_note(parsed_trace(trace_json).prompt_len if trace_json else None)
    if stretched is not None:  # "show the difference" ran: say what it did, and bring its figures into view
        with st.container(key="difference-note"):
            st.info(t(lang, "difference_note", num_tokens=stretched, ignore_eos=t(lang, "ignore_eos")),
                    icon=":material/compare_arrows:")
        scroll_into_view("difference-note")
    live_diagram("timeline", trace_json, lang, _timeline_caption(lang, trace_json))
    if trace_json is not None and bottleneck_contradicts(*_whole_and_spread(trace_json)):  # noise: measure again
        repeats = resources.server_settings().repeats
        st.button(t(lang, "tl_measure_again"), key="timeline_measure_again", icon=":material/refresh:",
                  on_click=state.run_again, help=t(lang, "tl_measure_again_help", n=repeats))
    st.caption(t(lang, "timeline_real_split"))
    if not st.session_state.classroom:  # its labels are drawn at about 10 px here; a projector needs more
        st.caption(t(lang, "timeline_projector_hint"))
    if trace_json is not None:
        ttft_bar(lang, trace_json)
    st.markdown(t(lang, "timeline_1"))
    st.markdown(markdown_table(t(lang, "timeline_table")))
    st.markdown(t(lang, "timeline_2"))


def _whole_and_spread(trace_json: str):
    """(the stored run, whole even while the classroom steps, and its repeats' headline numbers or None)."""
    whole = parsed_trace(stepping_full() or trace_json)
    return whole, shown_spread(whole)


def _timeline_caption(lang: str, trace_json: str | None) -> str:
    """The first figure's caption: what it measured in the lesson's terms (lesson.metric_cards.timeline_lesson)."""
    if trace_json is None:
        return t(lang, "timeline_caption")
    whole, numbers = _whole_and_spread(trace_json)
    lesson = timeline_lesson(whole, lang, numbers)
    joiner = "" if lang == "zh" else " "  # Chinese sentences run on without a space
    return f"{lesson}{joiner}{t(lang, 'timeline_caption')}" if lesson else t(lang, "timeline_caption")


def ttft_bar(lang: str, trace_json: str) -> None:
    """TTFT as the lesson defines it, part by part, under the timeline (lesson.diagrams.ttft_parts): the
    engine's parts of the run shown, and the visitor's (queue, trip, page) where the page measured them
    for this visitor now; a recorded run or the first view says it has only the engine's."""
    whole_json = stepping_full() or trace_json  # the replay and the classroom: TTFT is the whole run's
    whole, numbers = _whole_and_spread(trace_json)
    ss = st.session_state
    source = felt_source(numbers)
    if source.startswith("felt") and whole_json != ss.trace_json:  # not the stored run: the page timed none of it
        source = "trace"
    felt = ss.trace_felt if source.startswith("felt") else None
    with error_boundary(lang, "err_diagram"):
        run_note = run_label(numbers, lang)
        svg, alt = _ttft_figure(whole_json, lang, felt, source, run_note, ss.classroom)
        alt = with_run_note(alt, run_note)
        stem = download_stem(whole, ss.trace_stamp)
        alt, stem, note = figure_words(lang, whole_json, alt, stem)
        svg_figure("ttft_parts", svg, lang, with_note(t(lang, "ttft_parts_caption"), note), alt=alt,
                   file_stem=f"{stem}_ttft_parts")


@st.cache_data(show_spinner=False, max_entries=64)
def _ttft_figure(trace_json: str, lang: str, felt_json: str | None, source: str, run_note: str,
                 classroom: bool) -> tuple[str, str]:
    """(the TTFT bar, its alt text), keyed by plain values."""
    trace = parsed_trace(trace_json)
    felt = FeltTimes.from_json(felt_json) if felt_json else None
    svg = render_ttft_parts(trace, lang=lang, style=resources.figure_style(classroom), felt=felt, source=source,
                            run_note=run_note)
    return svg, ttft_parts_alt(trace, lang, felt)


# The lesson below its first screen is drawn when the reader comes to it: a class opening the lesson at once
# draws (and its browsers lay out) the first screens only, less than half of the whole page's elements. This
# script (read_on.js), in the page, presses the "read on" button when the reader scrolls within a window's
# height of it or follows a link to a section below; the button itself works without it. Fixed code, no
# user text, read once at import.
READ_ON_JS = Path(__file__).with_name("read_on.js").read_text(encoding="utf-8")


def read_on(lang: str, heading_keys: list[str]) -> None:
    """In place of the lesson's sections below the first screen (their headings' text keys, in order): a
    button that draws them, pressed by the page itself when the reader comes near, and what is below."""
    with st.container(key="read-on"):
        st.button(t(lang, "read_on"), key="read_on", icon=":material/expand_more:", width="stretch",
                  on_click=state.open_lesson)
        st.caption(t(lang, "read_on_next", sections=" · ".join(t(lang, key) for key in heading_keys)))
    st.html(f"\n<script>\n{READ_ON_JS}</script>\n", unsafe_allow_javascript=True)


def section_prefill(lang: str, trace_json: str | None) -> None:
    st.header(t(lang, "sec_prefill"), anchor="prefill")
    st.markdown(t(lang, "prefill_1"))
    st.markdown(t(lang, "prefill_2"))
    live_diagram("blocks", trace_json, lang, t(lang, "blocks_caption"))


def section_decode(lang: str, trace_json: str | None) -> None:
    st.header(t(lang, "sec_decode"), anchor="decode")
    for key in ("decode_1", "decode_2", "decode_3"):
        st.markdown(t(lang, key))
    live_diagram("kv_growth", trace_json, lang, t(lang, "kv_caption"))


def section_blocks_demo(lang: str) -> None:
    st.header(t(lang, "sec_blocks"), anchor="blocks")
    st.markdown(t(lang, "blocks_note"))
    left, right = st.columns(2)
    left.slider(t(lang, "demo_prompt_len"), 1, state.DEMO_MAX_PROMPT, key="demo_prompt_len")
    right.slider(t(lang, "demo_output_len"), 1, state.DEMO_MAX_OUTPUT, key="demo_output_len")
    _sketch_live(lang, int(st.session_state.demo_prompt_len), int(st.session_state.demo_output_len))
    with st.container(key="sketch_figure"), error_boundary(lang, "err_diagram"):
        prompt_len, output_len = int(st.session_state.demo_prompt_len), int(st.session_state.demo_output_len)
        svg = resources.schematic_svg(prompt_len, output_len, lang, classroom=st.session_state.classroom)
        svg_figure("blocks_schematic", svg, lang, t(lang, "demo_live_hint"),
                   alt=schematic_alt(prompt_len, output_len, lang),
                   file_stem=f"prefill-decode_sketch_prompt{prompt_len}_answer{output_len}")


# While a length slider is dragged, Streamlit sends its value only on release (a rerun later);
# this script (sketch_live.js), in the page, redraws a plain copy of the sketch from the thumbs'
# numbers at every move, in place of the figure, and steps aside once the page's own figure (drawn
# by lesson.diagrams for exactly those lengths, with its SVG download) is there. Fixed code, read
# once at import; its data (numbers, colours, the lesson's own words) come as JSON in a data
# attribute and are set as text, never markup.
SKETCH_LIVE_JS = Path(__file__).with_name("sketch_live.js").read_text(encoding="utf-8")


def _sketch_live(lang: str, prompt_len: int, output_len: int) -> None:
    """The in-page script that makes the sketch follow the length sliders while they move."""
    table, style = table_for(lang), DEFAULT_STYLE
    data = {"p": prompt_len, "o": output_len, "prefill": style.phase_color("prefill"),
            "decode": style.phase_color("decode"), "cached": style.cached, "ink": style.ink,
            "muted": style.muted_ink, "font": style.font_family,
            "subtitle": label(table, "blocks_subtitle_schematic", p="{p}", o="{o}"),
            "alt": t(lang, "sketch_live_alt"), "positions": t(lang, "sketch_positions")}  # {p} {o}: filled in the page
    # JSON inside a single-quoted attribute: every character that could end it or start markup is escaped
    payload = json.dumps(data, ensure_ascii=True).replace("&", "\\u0026").replace("<", "\\u003c") \
        .replace(">", "\\u003e").replace("'", "\\u0027")
    st.html(f"\n<div class=\"pd-sketch-data\" hidden data-sketch='{payload}'></div>\n"
            f"<script>\n{SKETCH_LIVE_JS}</script>\n", unsafe_allow_javascript=True)


def section_bottleneck(lang: str, trace_json: str | None, settings: ServerSettings) -> None:
    st.header(t(lang, "sec_bottleneck"), anchor="bottleneck")
    st.markdown(t(lang, "bottleneck_1"))
    st.markdown(markdown_table(t(lang, "bottleneck_table")))
    st.markdown(t(lang, "bottleneck_2"))
    if trace_json is not None:
        trace = parsed_trace(trace_json)
        live = bottleneck_live_text(trace, lang, shown_spread(trace))  # the medians of the run's repeats
        if live:
            st.info(live, icon=":material/speed:")
        if bottleneck_contradicts(trace, shown_spread(trace)):  # this machine's noise: offer a fresh measurement
            st.button(t(lang, "bottleneck_measure_again"), key="bottleneck_measure_again", icon=":material/refresh:",
                      on_click=state.run_again, help=t(lang, "bottleneck_measure_again_help", n=settings.repeats))
    st.button(t(lang, "show_difference", num_tokens=settings.limits.max_prompt_tokens), key="show_difference",
              icon=":material/compare_arrows:", on_click=state.show_the_difference, args=(settings.limits,),
              help=t(lang, "show_difference_help"))
    # The measurements (roofline, floor vs measured, sweeps, cache on/off, attention) are on their own page.
    st.page_link("app_pages/bottleneck_lab.py", label=t(lang, "lab_link"), icon=":material/speed:")


def section_waits(lang: str, trace_json: str | None) -> None:
    st.header(t(lang, "sec_waits"), anchor="waits")
    st.markdown(t(lang, "waits_1"))
    st.markdown(t(lang, "waits_2"))
    if trace_json is None:
        st.info(t(lang, "no_trace"))
        return
    with error_boundary(lang):
        trace = parsed_trace(trace_json)
        metric_row(metric_cards(trace, lang, shown_spread(trace)))  # medians of the run's repeats, if any
        st.caption(engine_caption(trace, lang))  # which engine mode and attention kernel ran
        for note in metric_gap_notes(trace, lang):  # the pass times (timeline) beside the waits (cards)
            st.caption(note)
        drawing = page_drawing_note(trace, lang)
        if drawing:
            st.caption(drawing)
    with error_boundary(lang, "err_diagram"):
        figure = resources.latency_figure(trace_json, lang, stepping_full(), classroom=st.session_state.classroom,
                                          run_note=shown_run_note(lang, trace_json))
        st.plotly_chart(figure, key="latency_chart", width="stretch", config=plotly_config(lang))
        st.caption(with_note(t(lang, "latency_caption"), figure_words(lang, trace_json, "", "")[2]))
    live_diagram("latency", trace_json, lang, t(lang, "latency_svg_caption"))


def section_many(lang: str) -> None:
    st.header(t(lang, "sec_many"), anchor="many")
    st.markdown(t(lang, "many_1"))
    st.caption(t(lang, "many_server_note"))
    st.page_link("app_pages/serving_lab.py", label=t(lang, "sl_link"), icon=":material/dns:")  # the serving lab
    st.subheader(t(lang, "sec_prefix"), anchor="prefix-caching")  # what the lab's prefix-caching switch shows
    st.markdown(t(lang, "prefix_1"))
    st.markdown(t(lang, "prefix_2"))
    st.caption(t(lang, "prefix_3"))
    st.markdown(t(lang, "prefix_4", switch=t(lang, "prefix_reuse")))


def section_summary(lang: str) -> None:
    st.header(t(lang, "sec_summary"), anchor="summary")
    with st.container(border=True):
        st.markdown(f"**{t(lang, 'summary')}**")


def section_animation(lang: str, trace_json: str | None) -> None:
    """The looping step-through, with play / pause and a slider that picks the pass to stop on.

    Paused, the figure is a still frame (lesson.diagrams.animation, still=True): the passes up
    to the chosen one on the whole run's axes, that pass framed and its caption shown. Play goes
    on from the pass the slider shows (start_pass), then loops from the start.
    """
    st.header(t(lang, "sec_animation"), anchor="animation")
    if trace_json is None:
        live_diagram("animation", trace_json, lang, t(lang, "animation_caption"))
        return
    total = len(parsed_trace(trace_json).steps)
    if st.session_state.classroom and stepping_full() not in (None, trace_json):
        _classroom_still(lang, trace_json)  # the classroom steps: the still frame at its step
        return
    paused = st.session_state.anim_paused
    with st.container(key="anim_controls"):
        st.caption(t(lang, "anim_controls"))
        left, right = st.columns([1, 4], vertical_alignment="bottom")
        left.button(t(lang, "anim_play" if paused else "anim_pause"), key="anim_play_pause", width="stretch",
                    icon=":material/play_arrow:" if paused else ":material/pause:", on_click=_flip_animation)
        step = total
        if total > 1:  # the key names the count: a value left from a longer run never applies
            step = right.select_slider(
                t(lang, "anim_step"), options=list(range(1, total + 1)), value=total, key=f"anim_step_{total}",
                format_func=lambda k: anim_step_words(lang, k, total, paused), on_change=_pause_animation)
    step = int(step)
    if not paused and step >= total:
        live_diagram("animation", trace_json, lang, t(lang, "animation_caption"))
        return
    with error_boundary(lang, "err_diagram"):
        whole = stepping_full() or trace_json
        svg, alt = _animation_frame(trace_json, whole, step, lang, st.session_state.classroom, paused,
                                    shown_run_note(lang, trace_json))
        stem = download_stem(parsed_trace(whole), st.session_state.trace_stamp)
        alt, stem, note = figure_words(lang, whole, alt, stem)  # a recorded run says so
        svg_figure("animation", svg, lang, with_note(t(lang, "animation_caption"), note), alt=alt,
                   file_stem=f"{stem}_animation_{'pass' if paused else 'from_pass'}{step}")


def anim_step_words(lang: str, k: int, total: int, paused: bool) -> str:
    """The slider's value: paused, the pass the still frame shows; playing, where the loop starts (the
    figure's own caption says the pass it is on: the slider must not name another one)."""
    if paused:
        return t(lang, "anim_step_value", k=k, n=total)
    if k >= total:
        return t(lang, "anim_step_playing_all", n=total)
    return t(lang, "anim_step_playing_from", k=k, n=total)


def _classroom_still(lang: str, trace_json: str) -> None:
    """The classroom's step (under the sidebar's buttons): the animation stands on the pass they name."""
    with error_boundary(lang, "err_diagram"):
        whole, step = stepping_full(), len(parsed_trace(trace_json).steps)
        svg, alt = _animation_frame(trace_json, whole, step, lang, True, True, shown_run_note(lang, trace_json))
        stem = download_stem(parsed_trace(whole), st.session_state.trace_stamp)
        alt, stem, note = figure_words(lang, whole, alt, stem)
        svg_figure("animation", svg, lang, with_note(t(lang, "animation_caption"), note), alt=alt,
                   file_stem=f"{stem}_animation_pass{step}")


def _flip_animation() -> None:
    st.session_state.anim_paused = not st.session_state.anim_paused
    state.redraw_labels(("anim_step_",), ())  # the slider's words: the paused pass, or where the loop starts


def _pause_animation() -> None:
    st.session_state.anim_paused = True  # moving the slider stops on the pass it shows


@st.cache_data(show_spinner=False, max_entries=128)
def _animation_frame(trace_json: str, full_json: str, step: int, lang: str, classroom: bool,
                     still: bool, run_note: str = "") -> tuple[str, str]:
    """(the figure, its alt text), in the classroom style when asked: paused, the still frame
    after pass `step`; playing, the animation starting at pass `step`; `run_note`: which repeat it draws."""
    trace, full = parsed_trace(trace_json), parsed_trace(full_json)
    style = resources.figure_style(classroom)
    if not still:
        svg = render_animation(trace, lang=lang, full=full, style=style, start_pass=step, run_note=run_note)
        return svg, with_run_note(figure_alt("animation", trace, lang), run_note)
    cut = truncate_trace(trace, step)
    svg = render_animation(cut, lang=lang, full=full, still=True, style=style, run_note=run_note)
    return svg, with_run_note(figure_alt("animation", cut, lang), run_note)


def section_references(lang: str) -> None:
    st.header(t(lang, "sec_references"), anchor="references")
    st.markdown("\n".join(f"{i}. {ref}" for i, ref in enumerate(t(lang, "references"), start=1)))


def section_review(lang: str, trace_json: str | None) -> None:
    st.header(t(lang, "sec_review"), anchor="review")
    live_diagram("review_map", trace_json, lang, t(lang, "review_caption"))
    st.markdown(f"*{t(lang, 'next_lesson')}*")

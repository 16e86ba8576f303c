"""The lesson's sections, in the page's order, after the run panel.

Each function draws one part of the lesson. Sections that show a figure take the run as a
RunView (app_support/run_store.py: the stored run, and the passes shown of it; the figure caches
key on it) or None when there is no run to show yet. While the classroom or the replay steps
through the run, the view is the part shown so far and the figures keep the whole run's axes
(RunView.full); what quotes the whole run reads RunView.whole (app_support/stepping.py).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import streamlit as st

from engine.contract.config import ServerSettings
from lesson.alt_text import figure_alt, schematic_alt, with_run_note
from lesson.answer import truncate_trace
from lesson.diagrams import RUN_NOTED
from lesson.diagrams.animation import render_animation
from lesson.diagrams.ttft_parts import render_ttft_parts, ttft_parts, ttft_parts_alt
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

from . import pass_floors, resources, state
from .quantization import section_quantization
from .run_store import RunView, StoredRun
from .ui import error_boundary, felt_source, join_paragraphs, metric_row, plotly_config, scroll_into_view, svg_figure


def intro(lang: str) -> None:
    st.markdown(join_paragraphs(t(lang, "intro_1"), t(lang, "intro_2")))


def figure_words(lang: str, view: RunView, alt: str, stem: str) -> tuple[str, str, str | None]:
    """A lesson figure's (alt text, download stem, extra caption line): labelled when the run shown is
    recorded (an opened file: all three) or the server's first view, the same for every visitor (the alt
    text and the caption line). Unchanged, and no line, for a run this visitor measured."""
    origin = view.run.origin
    if origin == "measured":
        return alt, stem, None
    provenance = view.whole.provenance
    stem = recorded_stem(stem, provenance) if origin == "recorded" else stem
    return recorded_alt(alt, provenance, lang), stem, figure_note(provenance, lang)


def live_diagram(name: str, view: RunView | None, lang: str, caption: str | None = None,
                 floors_ms: tuple[float, ...] | None = None) -> None:
    if view is None:
        st.info(t(lang, "no_trace"))
        return
    with error_boundary(lang, "err_diagram"):
        run_note = shown_run_note(lang, view)  # which of the repeats every figure draws (lesson.spread)
        svg = resources.diagram_svg(name, view, lang, classroom=st.session_state.classroom, run_note=run_note,
                                    floors_ms=floors_ms)
        alt, stem = resources.diagram_words(name, view, lang)
        alt, stem, note = figure_words(lang, view, alt, stem)  # a recorded run says so
        alt = with_run_note(alt, run_note if name in RUN_NOTED else "")
        narrow = None  # a phone's drawing (the time axis on its first screen), shown there instead (app_support.ui)
        if name == "timeline" and not st.session_state.classroom:
            narrow = resources.diagram_svg(name, view, lang, run_note=run_note, floors_ms=floors_ms, phone=True)
        svg_figure(name, svg, lang, with_note(caption, note), alt=alt, file_stem=stem, narrow_svg=narrow)


def shown_run_note(lang: str, view: RunView) -> str:
    """"median run 3 of 5 (...)" for the stored run (the whole run while the classroom steps), or ""."""
    return run_label(view.run.headline, lang)


def section_timeline(lang: str, view: RunView | None) -> None:
    """The run's timeline first (on the first screen, under the run panel), then the lesson's words on it."""
    st.header(t(lang, "sec_timeline"), anchor="timeline")
    stretched = state.pop_difference_note(view.trace.prompt_len if view is not None else None)
    if stretched is not None:  # "show the difference" ran: say what it did, and bring its figures into view
        with st.container(key="difference-note"):
            st.info(t(lang, "difference_note", num_tokens=stretched, ignore_eos=t(lang, "ignore_eos")),
                    icon=":material/compare_arrows:")
        scroll_into_view("difference-note")
    floors = pass_floors.shown_floors(view.whole) if view is not None else None
    step_floors = pass_floors.step_floors_ms(view.whole) if floors is not None else None  # each bar's floor
    live_diagram("timeline", view, lang, _timeline_caption(lang, view, floors), step_floors)
    if view is not None and _contradicts(view, floors):  # noise: measure again
        repeats = resources.server_settings().repeats
        st.button(t(lang, "tl_measure_again"), key="timeline_measure_again", icon=":material/refresh:",
                  on_click=state.run_again, help=t(lang, "tl_measure_again_help", n=repeats))
    st.caption(t(lang, "timeline_real_split"))
    if view is not None and floors is not None:  # where each pass's time goes: floor + the rest
        with error_boundary(lang, "err_diagram"):
            pass_floors.floors_figure(lang, view.whole, floors[0], floors[1], shown_run_note(lang, view),
                                      download_stem(view.whole, view.run.stamp))
    if not st.session_state.classroom:  # its labels are drawn at about 10 px here; a projector needs more
        st.caption(t(lang, "timeline_projector_hint"))
    if view is not None:
        ttft_bar(lang, view)
    st.markdown(join_paragraphs(t(lang, "timeline_1"), markdown_table(t(lang, "timeline_table")),
                                t(lang, "timeline_2")))


def _contradicts(view: RunView, floors) -> bool:
    """The run shown turns the lesson's order round: against its floors (a long Prefill measured no slower
    than a Decode step: lesson.pass_floors), or, without them, a Decode step at or above Prefill."""
    if floors is not None:
        return floors[0].flipped
    return bottleneck_contradicts(view.whole, view.run.headline)


def _timeline_caption(lang: str, view: RunView | None, floors=None) -> str:
    """The first figure's caption: what it measured in the lesson's terms (lesson.metric_cards.timeline_lesson),
    each pass against its floor on this machine's roofs where they are known (`floors`: shown_floors)."""
    if view is None:
        return t(lang, "timeline_caption")
    lesson = timeline_lesson(view.whole, lang, view.run.headline, floors[0] if floors is not None else None)
    joiner = "" if lang == "zh" else " "  # Chinese sentences run on without a space
    return f"{lesson}{joiner}{t(lang, 'timeline_caption')}" if lesson else t(lang, "timeline_caption")


def ttft_bar(lang: str, view: RunView) -> None:
    """TTFT as the lesson defines it, part by part, under the timeline (lesson.diagrams.ttft_parts): one run's
    parts, never two runs' side by side. Where the page timed this visitor's run 1 (queue, trip, page), the
    bar draws run 1 whole, and says so when the other figures draw another repeat; else the engine's parts
    of the run shown, and a recorded run or the first view says it has only the engine's. The caption names
    the lower bracket only where one is drawn. The classroom and the replay: TTFT is the whole run's."""
    run = view.run
    source = felt_source(run)
    with error_boundary(lang, "err_diagram"):
        run_note = t(lang, "ttft_parts_run1_note", n=run.headline.n) if source == "felt_other_run" else \
            run_label(run.headline, lang)
        svg, alt, felt_drawn = _ttft_figure(run, lang, source, run_note, st.session_state.classroom)
        alt = with_run_note(alt, run_note)
        stem = download_stem(run.trace, run.stamp)
        alt, stem, note = figure_words(lang, RunView(run, run.num_passes), alt, stem)
        caption = t(lang, "ttft_parts_caption" if felt_drawn else "ttft_parts_caption_engine")
        svg_figure("ttft_parts", svg, lang, with_note(caption, note), alt=alt, file_stem=f"{stem}_ttft_parts")


@functools.lru_cache(maxsize=64)
def _ttft_figure(run: StoredRun, lang: str, source: str, run_note: str, classroom: bool) -> tuple[str, str, bool]:
    """(the TTFT bar, its alt text, whether the visitor's parts and their bracket are drawn) of one run:
    run 1 with the page's times where it timed them (`source` "felt..."), else the run shown, the engine's."""
    felted = source.startswith("felt")
    trace, felt = (run.felt_run, run.felt) if felted else (run.trace, None)
    svg = render_ttft_parts(trace, lang=lang, style=resources.figure_style(classroom), felt=felt,
                            source="felt" if felted else source, run_note=run_note)
    return svg, ttft_parts_alt(trace, lang, felt), ttft_parts(trace, felt).felt


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


def section_prefill(lang: str, view: RunView | None) -> None:
    st.header(t(lang, "sec_prefill"), anchor="prefill")
    st.markdown(join_paragraphs(t(lang, "prefill_1"), t(lang, "prefill_2")))
    live_diagram("blocks", view, lang, t(lang, "blocks_caption"))


def section_decode(lang: str, view: RunView | None) -> None:
    st.header(t(lang, "sec_decode"), anchor="decode")
    st.markdown(join_paragraphs(*(t(lang, key) for key in ("decode_1", "decode_2", "decode_3"))))
    live_diagram("kv_growth", view, lang, t(lang, "kv_caption"))


def section_blocks_demo(lang: str) -> None:
    st.header(t(lang, "sec_blocks"), anchor="blocks")
    st.markdown(t(lang, "blocks_note"))
    with st.container(horizontal=True, gap="medium"):  # side by side, one block (not three)
        st.slider(t(lang, "demo_prompt_len"), 1, state.DEMO_MAX_PROMPT, key="demo_prompt_len")
        st.slider(t(lang, "demo_output_len"), 1, state.DEMO_MAX_OUTPUT, key="demo_output_len")
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


def section_bottleneck(lang: str, view: RunView | None, settings: ServerSettings) -> None:
    st.header(t(lang, "sec_bottleneck"), anchor="bottleneck")
    st.markdown(join_paragraphs(t(lang, "bottleneck_1"), markdown_table(t(lang, "bottleneck_table")),
                                t(lang, "bottleneck_2")))
    if view is not None:
        # the passes shown (a classroom prefix quotes its own numbers), with the repeats' medians when whole
        floors = pass_floors.shown_floors(view.trace)  # equal floors: a slow Decode step there is no noise
        floors = floors[0] if floors is not None else None
        live = bottleneck_live_text(view.trace, lang, view.headline, floors)
        if live:
            with st.container(key="bottleneck-live"):  # the lab quotes the same numbers (tests read both)
                st.info(live, icon=":material/speed:")
        if bottleneck_contradicts(view.trace, view.headline, floors):  # noise: offer a fresh measurement
            st.button(t(lang, "bottleneck_measure_again"), key="bottleneck_measure_again", icon=":material/refresh:",
                      on_click=state.run_again, help=t(lang, "bottleneck_measure_again_help", n=settings.repeats))
    st.button(t(lang, "show_difference", num_tokens=settings.limits.max_prompt_tokens), key="show_difference",
              icon=":material/compare_arrows:", on_click=state.show_the_difference, args=(settings.limits,),
              help=t(lang, "show_difference_help"))
    # The measurements (roofline, floor vs measured, sweeps, cache on/off, attention) are on their own page.
    st.page_link("app_pages/bottleneck_lab.py", label=t(lang, "lab_link"), icon=":material/speed:")


def section_waits(lang: str, view: RunView | None) -> None:
    st.header(t(lang, "sec_waits"), anchor="waits")
    st.markdown(join_paragraphs(t(lang, "waits_1"), t(lang, "waits_2")))
    if view is None:
        st.info(t(lang, "no_trace"))
        return
    with error_boundary(lang):
        trace = view.trace
        metric_row(metric_cards(trace, lang, view.headline))  # medians of the run's repeats, if any
        # which engine mode and attention kernel ran; the pass times (timeline) beside the waits (cards)
        st.caption(join_paragraphs(engine_caption(trace, lang), *metric_gap_notes(trace, lang),
                                   page_drawing_note(trace, lang)))
    with error_boundary(lang, "err_diagram"):
        figure = resources.latency_figure(view, lang, classroom=st.session_state.classroom,
                                          run_note=shown_run_note(lang, view))
        st.plotly_chart(figure, key="latency_chart", width="stretch", config=plotly_config(lang))
        st.caption(with_note(t(lang, "latency_caption"), figure_words(lang, view, "", "")[2]))
    live_diagram("latency", view, lang, t(lang, "latency_svg_caption"))


def section_many(lang: str) -> None:
    st.header(t(lang, "sec_many"), anchor="many")
    st.markdown(t(lang, "many_1"))
    st.caption(t(lang, "many_server_note"))
    st.page_link("app_pages/serving_lab.py", label=t(lang, "sl_link"), icon=":material/dns:")  # the serving lab
    st.subheader(t(lang, "sec_prefix"), anchor="prefix-caching")  # what the lab's prefix-caching switch shows
    st.markdown(join_paragraphs(t(lang, "prefix_1"), t(lang, "prefix_2")))
    st.caption(t(lang, "prefix_3"))
    st.markdown(t(lang, "prefix_4", switch=t(lang, "prefix_reuse")))


def section_summary(lang: str) -> None:
    st.header(t(lang, "sec_summary"), anchor="summary")
    with st.container(border=True):
        st.markdown(f"**{t(lang, 'summary')}**")


def section_animation(lang: str, view: RunView | None) -> None:
    """The looping step-through, with play / pause and a slider that picks the pass to stop on.

    Paused, the figure is a still frame (lesson.diagrams.animation, still=True): the passes up
    to the chosen one on the whole run's axes, that pass framed and its caption shown. Play goes
    on from the pass the slider shows (start_pass), then loops from the start.
    """
    st.header(t(lang, "sec_animation"), anchor="animation")
    if view is None:
        live_diagram("animation", view, lang, t(lang, "animation_caption"))
        return
    total = len(view.trace.steps)
    if st.session_state.classroom and view.stepping and not view.is_whole:
        _classroom_still(lang, view)  # the classroom steps: the still frame at its step
        return
    paused = st.session_state.anim_paused
    st.caption(t(lang, "anim_controls"))
    step = total
    with st.container(horizontal=True, vertical_alignment="bottom", gap="medium"):  # one block, not three
        st.button(t(lang, "anim_play" if paused else "anim_pause"), key="anim_play_pause",
                  icon=":material/play_arrow:" if paused else ":material/pause:", on_click=_flip_animation)
        if total > 1:  # the key names the count: a value left from a longer run never applies
            step = st.select_slider(
                t(lang, "anim_step"), options=list(range(1, total + 1)), value=total, key=f"anim_step_{total}",
                format_func=lambda k: anim_step_words(lang, k, total, paused), on_change=_pause_animation)
    step = int(step)
    if not paused and step >= total:
        live_diagram("animation", view, lang, t(lang, "animation_caption"))
        return
    with error_boundary(lang, "err_diagram"):
        svg, alt = _animation_frame(view, step, lang, st.session_state.classroom, paused, shown_run_note(lang, view))
        stem = download_stem(view.whole, view.run.stamp)
        alt, stem, note = figure_words(lang, view, alt, stem)  # a recorded run says so
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


def _classroom_still(lang: str, view: RunView) -> None:
    """The classroom's step (under the sidebar's buttons): the animation stands on the pass they name."""
    with error_boundary(lang, "err_diagram"):
        svg, alt = _animation_frame(view, view.step, lang, True, True, shown_run_note(lang, view))
        stem = download_stem(view.whole, view.run.stamp)
        alt, stem, note = figure_words(lang, view, alt, stem)
        svg_figure("animation", svg, lang, with_note(t(lang, "animation_caption"), note), alt=alt,
                   file_stem=f"{stem}_animation_pass{view.step}")


def _flip_animation() -> None:
    st.session_state.anim_paused = not st.session_state.anim_paused
    state.redraw_labels(("anim_step_",), ())  # the slider's words: the paused pass, or where the loop starts


def _pause_animation() -> None:
    st.session_state.anim_paused = True  # moving the slider stops on the pass it shows


@functools.lru_cache(maxsize=128)
def _animation_frame(view: RunView, step: int, lang: str, classroom: bool, still: bool,
                     run_note: str = "") -> tuple[str, str]:
    """(the figure, its alt text), in the classroom style when asked: paused, the still frame
    after pass `step`; playing, the animation starting at pass `step`; `run_note`: which repeat it draws."""
    trace, full = view.trace, view.whole
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


def section_review(lang: str, view: RunView | None) -> None:
    st.header(t(lang, "sec_review"), anchor="review")
    live_diagram("review_map", view, lang, t(lang, "review_caption"))
    st.markdown(f"*{t(lang, 'next_lesson')}*")
    with error_boundary(lang):
        section_quantization(lang)

"""The lesson page (the default page): the intro, the run's timeline (the first screen shows a figure),
the run panel, then the lesson's other sections in order, drawn once the reader comes to them (a "read on"
button the page presses itself when the reader scrolls near it: app_support/sections.read_on); in
classroom mode's presenter view, one figure per screen instead (app_support/presenter.py).

app.py has already drawn the header, the sidebar and the navigation; this file
draws the body. Words live in lesson/text, numbers and their sentences in lesson/ (formats,
metric_cards, run_words, alt_text ...), messages in lesson/messages, drawings in lesson/diagrams;
this file only wires them up.
"""

import functools

import streamlit as st

from app_support import (compare, first_screens, frame, gallery, links, presenter, resources, run_panel, sections,
                         slide_kit, speculative, stepping)
from app_support.run_store import RunView
from lesson.text import t

FIRST_SCREEN = ("timeline", "run")  # the contents' anchors always drawn (first_screen); the rest when read to


def lesson(lang: str, settings) -> None:
    opening, wait_s = not st.session_state.first_screen_drawn, settings.first_screen_wait_ms / 1000
    with first_screens.opening(opening):  # a class opening the page: every first figure before anyone's rest
        view = first_screen(lang, settings)
    st.session_state.first_screen_drawn = True
    if st.session_state.lesson_open:
        first_screens.after_first_figure(wait_s)
        with first_screens.rest_of_page(wait_s):
            rest_of_lesson(lang, settings, view)
    else:  # what the visitor cannot see yet is not drawn: a class opening the lesson draws first screens only
        sections.read_on(lang, [key for anchor, key in frame.CONTENTS if anchor not in FIRST_SCREEN])
    resources.draw_neighbours_ahead()  # a classroom step's figures for the steps either side, in the background
    stepping.replay_tick()  # last: while a replay runs, the page is drawn again at its next token


def rest_of_lesson(lang: str, settings, view: RunView | None) -> None:
    """The lesson's sections below the first screen, in order."""
    sections.section_prefill(lang, view)
    sections.section_decode(lang, view)
    speculative.section_speculative(lang, settings)  # guessing first: speculative decoding
    sections.section_blocks_demo(lang)
    sections.section_bottleneck(lang, view, settings)
    sections.section_waits(lang, view)
    compare.section_compare(lang)
    sections.section_many(lang)
    sections.section_summary(lang)
    sections.section_animation(lang, view)
    sections.section_references(lang)
    sections.section_review(lang, view)


def first_screen(lang: str, settings) -> RunView | None:
    """The intro, the run panel and, above it, the timeline of the run it stored; returns the view of that run."""
    sections.intro(lang)
    # The lesson's first section, its timeline figure first, on the first screen: drawn into this slot
    # once the run panel below it has stored the run it shows (a new run included); on a session's first
    # page run, before the panel: the run is known then, and the figure reaches the visitor sooner.
    first_section = st.container()
    known = run_panel.known_before_run(lang, settings)
    if known is not None:
        with first_section:
            sections.section_timeline(lang, known)
    lm = frame.load_model(lang, settings)  # None (with a message) when it cannot load
    view = run_panel.run_panel(lang, lm, settings, known)
    slide_kit.lesson_button(lang)  # every figure of this run for slides, in one zip (built when clicked)
    gallery.open_panel(lang, "lesson", settings)  # a recorded run: the gallery or an upload (opened before this draw)
    if known is None:
        with first_section:
            sections.section_timeline(lang, view)
    return view


def presenting(lang: str, settings) -> None:
    """The presenter view of the run the page shows (the server's first view before any run), and the
    sidebar's link to this view: drawn by the view's fragment, so a step redraws it with the step shown."""
    run = run_panel.trace_to_show(lang, settings)
    link_box = functools.partial(links.link_box, lang, "", settings,
                                 resources.model_choices(settings.device, settings.dtype))
    if run is None:
        st.info(t(lang, "no_trace"))
        link_box()
    else:
        presenter.presenter_view(lang, run, link_box)


if st.session_state.classroom and st.session_state.presenter:
    presenting(st.session_state.lang, resources.server_settings())
else:
    lesson(st.session_state.lang, resources.server_settings())

"""The lesson page (the default page): run panel, then the lesson's sections in order.

app.py has already drawn the header, the sidebar and the navigation; this file
draws the body. Words live in lesson/text, numbers in lesson/views, messages
in lesson/messages, drawings in lesson/diagrams; this file only wires them up.
"""

import streamlit as st

from app_support import compare, frame, gallery, resources, run_panel, sections, slide_kit, stepping

lang = st.session_state.lang
settings = resources.server_settings()

sections.intro(lang)

lm = frame.load_model(lang, settings)  # None (with a message) when it cannot load
trace_json = run_panel.run_panel(lang, lm, settings)
slide_kit.lesson_button(lang)  # every figure of this run for slides, in one zip (built when clicked)
gallery.open_panel(lang, "lesson", settings)  # a recorded run: the gallery or an upload (opened before this draw)

sections.section_timeline(lang, trace_json)
sections.section_prefill(lang, trace_json)
sections.section_decode(lang, trace_json)
sections.section_blocks_demo(lang)
sections.section_bottleneck(lang, trace_json, settings)
sections.section_waits(lang, trace_json)
compare.section_compare(lang)
sections.section_many(lang)
sections.section_summary(lang)
sections.section_animation(lang, trace_json)
sections.section_references(lang)
sections.section_review(lang, trace_json)
stepping.replay_tick()  # last: while a replay runs, the page is drawn again at its next token

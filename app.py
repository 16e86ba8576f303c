"""Lesson 19, Prefill and Decode: the lesson app, live on the real engine.

    streamlit run app.py

The page runs top to bottom: settings -> model -> run panel -> the lesson's
sections in order. Words live in lesson/text, numbers and messages in
lesson/views, drawings in lesson/diagrams; this file only wires them up.
"""

import streamlit as st

from app_support import resources, sections, state
from app_support.ui import inject_css
from lesson.text import t

state.init_session()
settings = resources.server_settings()
state.repair_session(settings.limits, settings.models_dir)
lang = st.session_state.lang

st.set_page_config(page_title=t(lang, "page_title"), page_icon="🧭", layout="wide")
sections.header(lang)
inject_css(st.session_state.classroom)
sections.show_flash(lang)
classroom_slot = sections.sidebar(lang, settings)
sections.intro(lang)

lm = sections.load_model(lang, settings)
if lm is not None:
    sections.model_caption(lang, lm)
trace_json = sections.run_panel(lang, lm, settings)
sections.classroom_controls(lang, classroom_slot)

sections.section_timeline(lang, trace_json)
sections.section_prefill(lang, trace_json)
sections.section_decode(lang, trace_json)
sections.section_blocks_demo(lang)
sections.section_bottleneck(lang, trace_json, settings)
sections.section_waits(lang, trace_json)
sections.section_many(lang)
sections.section_summary(lang)
sections.section_animation(lang, trace_json)
sections.section_references(lang)
sections.section_review(lang, trace_json)

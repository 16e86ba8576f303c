"""Lesson 19, Prefill and Decode: the lesson app, live on the real engine.

    streamlit run app.py

This file is the entry every page shares: session state, server settings,
page config, the header and the sidebar, then Streamlit's own multipage
navigation. Each page's body is a file in app_pages/ (the lesson is the
default page); all pages share one run: the session keeps its id (st.session_state.run_id), the run
itself is one value in the process's run store (app_support/run_store.py).
"""

import streamlit as st

from app_support import starting

# A session's first run says the model is loading before anything else, before the page's modules are
# imported (1-2 s, more on a busy machine) and the engine worker is started (a cold start was ~10 s of
# blank page before any word): app_support/starting.py imports only streamlit and the lesson's words.
starting_slot = starting.starting_note()

from app_support import frame, lab, links, resources, serving, state, stepping  # noqa: E402 - after the note
from app_support.ui import inject_css, page_scripts  # noqa: E402
from lesson.text import t  # noqa: E402

state.init_session()
# Streamlit forgets a widget's value on a run that does not draw it: kept aside and put back,
# the lesson's prompt and lengths (and the labs' knobs) survive a visit to the other page.
state.keep_widget_values((*state.WIDGET_KEYS, *lab.LAB_WIDGET_KEYS, *serving.SERVING_WIDGET_KEYS))
settings = resources.server_settings()
# what the engine worker offers (the first visitor's call starts a local worker): default, folders, presets
model_choices = resources.model_choices(settings.device, settings.dtype)
state.repair_session(settings.limits, model_choices)
lang = st.session_state.lang

st.set_page_config(page_title=t(lang, "page_title"), page_icon="🧭", layout="wide")
PAGES = {  # url path -> the page; a new page is one more entry here
    "lesson": st.Page("app_pages/lesson.py", title=t(lang, "nav_lesson"), icon=":material/school:", default=True),
    "bottleneck_lab": st.Page("app_pages/bottleneck_lab.py", title=t(lang, "nav_bottleneck_lab"),
                              icon=":material/speed:", url_path="bottleneck_lab"),
    "serving_lab": st.Page("app_pages/serving_lab.py", title=t(lang, "nav_serving_lab"), icon=":material/dns:",
                           url_path="serving_lab"),
    "exercises": st.Page("app_pages/exercises.py", title=t(lang, "nav_exercises"), icon=":material/quiz:",
                         url_path="exercises"),
}
page = st.navigation(list(PAGES.values()), position="sidebar")
on_lesson = page.url_path == PAGES["lesson"].url_path
presenting = on_lesson and st.session_state.classroom and st.session_state.presenter  # app_pages/lesson.py
if links.apply_link(page.url_path, settings, model_choices):  # a link's values, checked: drawn from them
    st.rerun()
links.keep_language(lang)  # ?lang= stays in the address bar: a reload or another page keeps the language
links.tidy_address(lang)  # an opened link's query leaves the address bar, its #section kept

frame.header(lang)
starting_slot.empty()  # the loading note stays until the header is there: no blank page between the two
inject_css(st.session_state.classroom, presenter=presenting)
page_scripts(lang)  # every wait says how long it has lasted; Streamlit's own English in the page's language
frame.show_flash(lang)
links.show_notice(lang, page.url_path)
classroom_slot = frame.sidebar(lang, settings, contents=on_lesson)
page.run()
if not presenting:  # the presenter view draws its own (in its fragment: a step redraws the view alone)
    links.link_box(lang, page.url_path, settings, model_choices)  # after the page: its step and settings as they are
if on_lesson:  # after the run panel: the buttons step the run it stored
    stepping.classroom_controls(lang, classroom_slot)

"""The first thing a session's first run draws: "Loading the model in the engine process…".

Imported by app.py before the page's other modules: importing those takes 1-2 s (more on a busy
machine), and the first visitor's call then starts the engine worker and loads the model (about 10 s
on a cold start), so this module imports only streamlit and the lesson's words, and the note is on the
page before any of that starts. app.py clears it once the page's header is drawn.
"""

from __future__ import annotations

import streamlit as st

from lesson.text import LANGUAGES, t


def starting_note():
    """On a session's first run, before the engine worker is asked anything (the first visitor's call
    starts it and loads the model): "Loading the model in the engine process…" in the address bar's
    language (`?lang=`, read before any link is applied) or the session's. An st.empty the caller clears."""
    slot = st.empty()
    ss = st.session_state
    if not ss.get("started_once"):
        ss.started_once = True
        asked = st.query_params.get("lang")
        lang = asked if asked in LANGUAGES else ss.lang if ss.get("lang") in LANGUAGES else LANGUAGES[0]
        slot.info(t(lang, "loading_model"), icon=":material/hourglass_top:")
    return slot

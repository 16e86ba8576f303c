"""The exercises page: predict, then measure. Answer first; the app then runs it on the real model,
grades the answer with what it measured and explains with the lesson's words (app_support/exercises.py)."""

import streamlit as st

from app_support import exercises, frame, resources

lang = st.session_state.lang
settings = resources.server_settings()

lm = frame.load_model(lang, settings)  # None (with a message) when it cannot load
exercises.exercises_page(lang, lm, settings)

"""The serving lab: many requests at once on the real engine, every policy on the same workload."""

import streamlit as st

from app_support import frame, gallery, resources, serving

lang = st.session_state.lang
settings = resources.server_settings()

lm = frame.load_model(lang, settings)  # None (with a message) when it cannot load
serving.serving_lab(lang, lm, settings)
gallery.serving_panel(lang, settings)  # recorded serving runs: the gallery or an upload

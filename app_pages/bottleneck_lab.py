"""The bottleneck lab: the cost model, roofline, floor vs measured and sweeps, for the run the lesson shows."""

import streamlit as st

from app_support import frame, lab, resources

lang = st.session_state.lang
settings = resources.server_settings()

lm = frame.load_model(lang, settings)  # None (with a message) when it cannot load
lab.bottleneck_lab(lang, lm, settings)

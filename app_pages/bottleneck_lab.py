"""The bottleneck lab: the cost model, roofline, floor vs measured and sweeps, for the run the lesson shows."""

import streamlit as st

from app_support import frame, gallery, lab, resources

lang = st.session_state.lang
settings = resources.server_settings()

lm = frame.load_model(lang, settings)  # None (with a message) when it cannot load
lab.bottleneck_lab(lang, lm, settings)
gallery.lab_panel(lang, settings)  # a recorded sweep or cache on vs off: the gallery or an upload

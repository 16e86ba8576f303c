"""The bottleneck lab: the cost model, roofline, floor vs measured and sweeps, for the run the lesson shows."""

import streamlit as st

from app_support import lab, resources, sections

lang = st.session_state.lang
settings = resources.server_settings()

lm = sections.load_model(lang, settings)
if lm is not None:
    sections.model_caption(lang, lm)
lab.bottleneck_lab(lang, lm, settings)

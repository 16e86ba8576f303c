"""The lesson's last section, the next lesson previewed: weight formats as measured on this machine
(assets/gallery/cpu/weight-formats.json, written by `python -m bench.quantization --record`), drawn by
lesson/quantization.py, with its two predict-then-measure exercises graded from the same file.

No file (or one that does not read) leaves the section to the lesson's one closing line.
"""

from __future__ import annotations

import logging
from pathlib import Path

import streamlit as st

from engine.contract.format_runs import FormatRuns
from engine.contract.meaning import MeaningError
from lesson import quantization as q
from lesson.formats import markdown_table
from lesson.text import t

log = logging.getLogger(__name__)
FORMATS_FILE = Path(__file__).resolve().parents[1] / "assets" / "gallery" / "cpu" / "weight-formats.json"


@st.cache_resource(show_spinner=False)
def format_runs(path: str = str(FORMATS_FILE)) -> FormatRuns | None:
    """The measured file, read once per process; None when it is missing or refused (logged)."""
    try:
        return FormatRuns.from_json(Path(path).read_text(encoding="utf-8"))
    except (OSError, MeaningError):
        log.warning("no readable weight-formats file at %s", path, exc_info=True)
        return None


def section_quantization(lang: str) -> None:
    runs = format_runs()
    if runs is None:
        return
    st.subheader(t(lang, "q_title"), anchor="quantization")
    st.markdown(q.section_intro(runs, lang))
    for model in (runs.preset, runs.embedded):
        if model is not None:
            rows = q.formats_rows(model, lang)
            st.markdown(f"**{q.table_title(model, lang)}**\n\n"
                        + markdown_table([list(rows[0]), *(list(r.values()) for r in rows)]))
    st.markdown(q.preset_story(runs, lang))
    st.markdown(q.answer_story(runs, lang))
    exercises(runs, lang)


def exercises(runs: FormatRuns, lang: str) -> None:
    """Predict first (a number, yes or no), then see what the file measured."""
    ss = st.session_state
    with st.form("q_exercises"):
        st.number_input(q.speedup_question(runs, lang), min_value=0.1, max_value=100.0, step=0.1,
                        key="q_speedup_guess")
        st.radio(t(lang, "q_ex_paris"), ("yes", "no"), format_func=lambda v: t(lang, f"q_ex_{v}"),
                 key="q_paris_guess", horizontal=True)
        checked = st.form_submit_button(t(lang, "q_ex_check"), key="q_check")
    if checked:
        ss.q_grades = (q.grade_speedup(runs, ss.q_speedup_guess), q.grade_paris(runs, ss.q_paris_guess, lang))
    for grade in ss.q_grades or ():
        (st.success if grade.correct else st.info)(q.grade_words(grade, lang))

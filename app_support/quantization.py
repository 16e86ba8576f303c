"""The lesson's last section, the next lesson previewed: weight formats side by side, drawn by lesson/quantization.py,
with its two predict-then-measure exercises.

Before a visitor asks, it shows the recording (assets/gallery/cpu/weight-formats.json, written by
`python -m bench.quantization --record`) and says it is one (machine, date). The button measures the embedded
model's formats on the engine worker now (its `weight_formats` call: every format loaded, timed interleaved, then
compared with fp32), with a wait that names its phase and the seconds so far; the run is kept for every visitor of
this process (`live_store`, keyed by the settings it ran with: the worker also shares one measurement among
identical waiting calls), and the section and its exercises then read it. The real-size preset's table stays the
recording's (the live run measures the embedded model only).

No file (or one that does not read) and no live run leave the section to the lesson's one closing line.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

import streamlit as st

from engine.contract.format_runs import FormatRuns, live_units
from engine.contract.meaning import MeaningError
from engine.contract.worker.client import Progress, Started
from engine.contract.worker.protocol import ModelRef
from lesson import quantization as q
from lesson.diagrams.format_kl import format_kl_alt, kl_lines, render_format_kl
from lesson.diagrams.format_time import format_time_alt, render_format_time, timed_rows
from lesson.formats import markdown_table
from lesson.inputs import DEFAULT_MODEL_CHOICE
from lesson.text import t

from . import frame, resources, slide_kit
from .ui import error_boundary, svg_figure

log = logging.getLogger(__name__)
FORMATS_FILE = Path(__file__).resolve().parents[1] / "assets" / "gallery" / "cpu" / "weight-formats.json"
LIVE_STEPS, LIVE_ROUNDS = 8, 3  # as the recording's: Decode steps per answer, interleaved rounds
LIVE_PHASES = live_units(rounds=LIVE_ROUNDS)


@st.cache_resource(show_spinner=False)
def format_runs(path: str = str(FORMATS_FILE)) -> FormatRuns | None:
    """The measured file, read once per process; None when it is missing or refused (logged)."""
    try:
        return FormatRuns.from_json(Path(path).read_text(encoding="utf-8"))
    except (OSError, MeaningError):
        log.warning("no readable weight-formats file at %s", path, exc_info=True)
        return None


class LiveStore:
    """Runs measured on this server (parsed, frozen: here FormatRuns keyed by (device, dtype, steps, rounds); the
    bottleneck lab's answers in other weight formats, RequestTraces), the oldest dropped past `max_entries`.
    Sessions put from their own threads; what a session keeps is at most a key, never the run's JSON."""

    def __init__(self, max_entries: int = 8) -> None:
        self.runs: dict[tuple, FormatRuns] = {}
        self.lock = threading.Lock()
        self.max_entries = max_entries

    def put(self, key: tuple, runs: FormatRuns) -> None:
        with self.lock:
            self.runs.pop(key, None)
            self.runs[key] = runs
            while len(self.runs) > self.max_entries:
                self.runs.pop(next(iter(self.runs)))


@st.cache_resource(show_spinner=False)
def live_store() -> LiveStore:
    """Shared by every visitor of this process: formats measured once are shown to all."""
    return LiveStore()


def live_key() -> tuple:
    settings = resources.server_settings()
    return settings.device, settings.dtype, LIVE_STEPS, LIVE_ROUNDS


def section_quantization(lang: str) -> None:
    recorded, store, key = format_runs(), live_store(), live_key()
    live = store.runs.get(key)
    if recorded is None and live is None:
        return
    shown = live or recorded
    st.subheader(t(lang, "q_title"), anchor="quantization")
    st.markdown(q.section_intro(shown, lang))
    note = st.empty()
    if st.button(t(lang, "q_live_again" if live is not None else "q_live_run"), key="q_live_run",
                 icon=":material/speed:", help=t(lang, "q_live_help", steps=LIVE_STEPS, rounds=LIVE_ROUNDS)):
        with error_boundary(lang):  # a refusal is said in words; the recording stays on the page
            measured = measure_live(lang)
            store.put(key, measured)
            live = shown = measured
    note.caption(q.provenance_caption(shown, lang, live is not None, recorded))
    models = [shown.embedded, *([recorded.preset] if recorded is not None and recorded.preset is not None else [])]
    for model in models:
        rows = q.formats_rows(model, lang)
        st.markdown(f"**{q.table_title(model, lang)}**\n\n"
                    + markdown_table([list(rows[0]), *(list(r.values()) for r in rows)]))
    if recorded is not None:
        st.markdown(q.preset_story(recorded, lang))
    st.markdown(q.answer_story(shown, lang))
    if kl_lines(shown):  # per-position KL: a live run (or a recording that kept it)
        svg_figure("format_kl", render_format_kl(shown, lang=lang), lang, alt=format_kl_alt(shown, lang),
                   file_stem="prefill-decode_format_kl")
    if timed_rows(shown):  # where a Decode step's time goes: a live run's matmuls timed alone
        svg_figure("format_time", render_format_time(shown, lang=lang), lang, alt=format_time_alt(shown, lang),
                   file_stem="prefill-decode_format_time")
    slide_kit.formats_button(lang, shown)  # the figures for slides, when this run has them
    exercises(shown, lang)


def measure_live(lang: str) -> FormatRuns:
    """The formats measured in the engine worker now: its queue place while it waits, then a bar naming the
    phase (loading, timing, quality) and the seconds so far; an engine refusal raises its worded error."""
    settings = resources.server_settings()
    place = frame.QueuePlace(lang)
    bar = st.progress(0.0, text=q.live_progress("wait", 0, len(LIVE_PHASES), 0, lang))
    started = time.monotonic()
    done, began = 0, False

    def on_event(event) -> None:
        nonlocal done, began
        place(event)
        if isinstance(event, Progress):
            done = event.done
        began = began or isinstance(event, (Started, Progress))
        phase = LIVE_PHASES[min(done, len(LIVE_PHASES) - 1)] if began else "wait"
        bar.progress(done / len(LIVE_PHASES), text=q.live_progress(phase, done, len(LIVE_PHASES),
                                                                    time.monotonic() - started, lang))

    try:
        return resources.client().weight_formats(ModelRef(DEFAULT_MODEL_CHOICE, settings.device, settings.dtype),
                                                  steps=LIVE_STEPS, rounds=LIVE_ROUNDS, on_event=on_event)
    finally:
        place.slot.empty()
        bar.empty()


def exercises(runs: FormatRuns, lang: str) -> None:
    """Predict first (a number, yes or no), then see what was measured: graded from `runs` (the live run when
    there is one), anew on each draw, so a live run after the check regrades the same guesses."""
    ss = st.session_state
    with st.form("q_exercises"):
        st.number_input(q.speedup_question(runs, lang), min_value=0.1, max_value=100.0, step=0.1,
                        key="q_speedup_guess")
        st.radio(t(lang, "q_ex_paris"), ("yes", "no"), format_func=lambda v: t(lang, f"q_ex_{v}"),
                 key="q_paris_guess", horizontal=True)
        checked = st.form_submit_button(t(lang, "q_ex_check"), key="q_check")
    if checked or ss.q_grades:
        ss.q_grades = (q.grade_speedup(runs, ss.q_speedup_guess), q.grade_paris(runs, ss.q_paris_guess, lang))
    for grade in ss.q_grades or ():
        (st.success if grade.correct else st.info)(q.grade_words(grade, lang))

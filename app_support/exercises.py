"""The exercises page (app_pages/exercises.py): predict, then measure (lesson/exercises.py).

A student picks an exercise, answers it (a choice or a number), and locks the answer; only then
does the page run what the exercise names, live on this server's model through the engine worker,
grade the answer with the measured numbers and explain it with the lesson's words. Answers and
grades stay in the session (state.DEFAULTS: ex_answers, ex_results); a lecturer downloads the
question sheet.

`measure` is the page's one way to the engine: each spec of lesson.exercises becomes a call
through app_support/resources.py (the worker's client) or the serving lab's cached run.
"""

from __future__ import annotations

import logging

import streamlit as st

from engine.contract.config import ServerSettings, ServingCaps
from engine.contract.serving.trace import ServingRun
from engine.contract.serving.workloads import scenario
from engine.contract.sweep import DEFAULT_REPEATS, Sweep
from engine.contract.trace import RequestTrace
from engine.contract.worker.protocol import ModelRef
from lesson import exercises as ex
from lesson.exercises import BY_KEY, EXERCISES, CacheRun, Choice, Context, NotGradable, ServeRun, SweepRun, TraceRun
from lesson.inputs import default_prompt
from lesson.text import t

from . import resources, serving
from .ui import error_boundary

log = logging.getLogger("prefill_decode.app")

KEYS = [exercise.key for exercise in EXERCISES]  # the exercises in the lesson's order: the picker's options
MARKS = {True: "✓", False: "✗", None: "○"}  # right, wrong, not answered yet: beside each exercise's title


# --- the engine: one function per kind of run -----------------------------------------

def measure(spec, lm, lang: str, settings: ServerSettings):
    """What `spec` measures, on the model `lm` (resources.EngineModel): a RequestTrace, a CacheComparison,
    a Sweep or a ServingRun. Raises the engine's errors (a cap, a worker that cannot be reached)."""
    ref = lm.ref
    if isinstance(spec, TraceRun):
        return _trace(ref, lang, settings, spec)
    if isinstance(spec, CacheRun):
        prefill = _trace(ref, lang, settings, TraceRun(spec.prompt_tokens, 1))
        return resources.cache_comparison(ref.choice, ref.device, ref.dtype, prefill.prompt_ids, spec.max_new_tokens)
    if isinstance(spec, SweepRun):
        return Sweep.from_json(sweep_json(ref.choice, ref.device, ref.dtype, spec.kind, spec.points))
    return ServingRun.from_json(_serving_json(ref, spec))


def _trace(ref: ModelRef, lang: str, settings: ServerSettings, spec: TraceRun) -> RequestTrace:
    """The lesson's example in `lang`, stretched to spec.prompt_tokens, greedy: one run (cached per arguments)."""
    prompt = default_prompt(lang)
    if spec.prompt_tokens:
        prompt = resources.prompt_preview(ref.choice, ref.device, ref.dtype, prompt, spec.prompt_tokens)[0]
    return resources.finished_run(ref.choice, ref.device, ref.dtype, prompt, spec.max_new_tokens, 0.0, 0, 1.0, 0,
                                  settings.limits.max_prompt_tokens, spec.ignore_eos, 1).trace


@st.cache_data(show_spinner=False, max_entries=16)
def sweep_json(model_choice: str, device: str, dtype: str, kind: str, points: tuple[int, ...]) -> str:
    """A sweep measured in the engine worker (DEFAULT_REPEATS passes a point, their median)."""
    ref = ModelRef(model_choice, device, dtype)
    return resources.client().sweep(ref, kind, points, repeats=DEFAULT_REPEATS).to_json(indent=None)


def _serving_json(ref: ModelRef, spec: ServeRun) -> str:
    """The scenario under one policy with the serving lab's default settings (its cached run: a lab visit
    with the same choices reuses it), within this server's caps."""
    workload = scenario(spec.scenario)
    serving.check_caps(workload, ServingCaps.from_env())
    return serving.serving_run_json(ref.choice, ref.device, ref.dtype, serving.workload_json(workload), spec.scenario,
                                    spec.policy, 64, 16, 0, "preempt", 0.0, 0.0, spec.prefix_caching)


def context(settings: ServerSettings, lm) -> Context:
    """This server's caps and the model the page runs, as the exercises read them."""
    return Context(max_prompt_tokens=settings.limits.max_prompt_tokens, max_new_tokens=settings.limits.max_new_tokens,
                   sweep_max_positions=settings.sweep_max_positions, sweep_max_batch=settings.sweep_max_batch,
                   model=lm.info if lm is not None else None)


# --- the page -------------------------------------------------------------------------

def exercises_page(lang: str, lm, settings: ServerSettings) -> None:
    ss = st.session_state
    if not isinstance(ss.ex_answers, dict) or not isinstance(ss.ex_results, dict):
        ss.ex_answers, ss.ex_results = {}, {}  # a forged value: start over
    ctx = context(settings, lm)
    st.header(t(lang, "ex_page_title"), anchor="exercises")
    st.markdown(t(lang, "ex_page_intro"))
    progress = st.empty()  # filled last: with the grade this page run may add
    st.download_button(t(lang, "ex_download_sheet"), data=ex.question_sheet(lang, ctx), mime="text/markdown",
                       file_name=f"prefill-decode_exercises_{lang}.md", key="ex_download_sheet", on_click="ignore",
                       icon=":material/download:", help=t(lang, "ex_download_sheet_help"))
    if ss.get("ex_pick") not in BY_KEY:
        ss.ex_pick = EXERCISES[0].key
    st.selectbox(t(lang, "ex_pick"), KEYS, key="ex_pick", placeholder=t(lang, "choose_option"),
                 format_func=lambda k: f"{KEYS.index(k) + 1}. {ex.title(BY_KEY[k], lang)}")
    exercise = BY_KEY[ss.ex_pick]
    with st.container(border=True, key="ex_card"):
        _exercise(lang, exercise, ctx, lm, settings)
    answered, right = ex.progress(ss.ex_results)
    marks = " · ".join(f"{n} {_mark(k)}" for n, k in enumerate(KEYS, start=1))  # the picker's labels stay fixed
    progress.caption(t(lang, "ex_progress", answered=answered, total=len(EXERCISES), right=right) + f"  \n{marks}")


def _mark(key: str) -> str:
    result = st.session_state.ex_results.get(key)
    return MARKS[None if result is None else bool(result.correct)]


def _exercise(lang: str, exercise: ex.Exercise, ctx: Context, lm, settings: ServerSettings) -> None:
    ss = st.session_state
    st.subheader(ex.title(exercise, lang))
    st.markdown(ex.question(exercise, lang, ctx))
    specs = exercise.plan(ctx)
    if not specs:
        st.info(t(lang, "ex_unavailable_note"))
        return
    locked = ss.ex_answers.get(exercise.key)
    if locked is None:
        answer = _answer_widget(lang, exercise)
        st.markdown(t(lang, "ex_runs_title") + "\n" + "\n".join(f"- {ex.describe(s, lang)}" for s in specs))
        st.button(t(lang, "ex_lock_and_run"), key="ex_lock", type="primary", icon=":material/lock:",
                  disabled=answer is None or lm is None, on_click=_lock, args=(exercise.key,))
        return
    st.markdown(t(lang, "ex_locked", answer=ex.answer_words(exercise, locked, lang)))
    if exercise.key not in ss.ex_results and lm is not None:
        _measure_and_grade(lang, exercise, specs, locked, lm, settings)
    result = ss.ex_results.get(exercise.key)
    if result is not None:
        _graded(lang, exercise, result)
    _next_buttons(lang, exercise)


def _answer_widget(lang: str, exercise: ex.Exercise):
    """The student's answer before anything runs: one of the options, or a number in the unit (None: not yet)."""
    form = exercise.form
    if isinstance(form, Choice):
        return st.radio(t(lang, "ex_your_answer"), form.options, index=None, key=f"ex_answer_{exercise.key}",
                        format_func=lambda o: ex.option_words(exercise, o, lang))
    unit = t(lang, f"ex_unit_{form.unit}")
    value = st.number_input(t(lang, "ex_your_number", unit=unit), min_value=0.0, max_value=1e9, value=None,
                            step=1.0 if form.exact else 0.1, key=f"ex_answer_{exercise.key}")
    return None if value is None else float(value)


def _measure_and_grade(lang: str, exercise: ex.Exercise, specs, answer, lm, settings: ServerSettings) -> None:
    """Run every spec (a progress bar saying which), then grade; a refusal is a message, the answer stays locked."""
    bar = st.progress(0.0)
    results = []
    with error_boundary(lang):
        try:
            for i, spec in enumerate(specs):
                bar.progress(i / len(specs), text=t(lang, "ex_running", i=i + 1, n=len(specs),
                                                    what=ex.describe(spec, lang)))
                results.append(measure(spec, lm, lang, settings))
        finally:
            bar.empty()
        try:
            result = ex.grade(exercise, answer, results)
        except NotGradable as err:
            log.warning("exercise %s not gradable: %s", exercise.key, err)
            st.warning(t(lang, "ex_not_gradable"))
            return
        st.session_state.ex_results = {**st.session_state.ex_results, exercise.key: result}


def _graded(lang: str, exercise: ex.Exercise, result: ex.Grade) -> None:
    (st.success if result.correct else st.warning)(ex.verdict(exercise, result, lang),
                                                   icon=":material/check:" if result.correct else ":material/close:")
    measured, lesson = ex.explanation(exercise, result, lang)
    st.markdown(f"**{t(lang, 'ex_measured_title')}**  \n{measured}")
    st.caption(f"{t(lang, 'ex_lesson_says')} {lesson}")


def _next_buttons(lang: str, exercise: ex.Exercise) -> None:
    left, right = st.columns(2)
    left.button(t(lang, "ex_retry"), key="ex_retry", icon=":material/replay:", on_click=_forget, args=(exercise.key,))
    if exercise.key != KEYS[-1]:
        right.button(t(lang, "ex_next"), key="ex_next", icon=":material/arrow_forward:", on_click=_next)


def _lock(key: str) -> None:
    """The lock button's callback: the answer is kept before the page runs again, so that run draws it locked
    (no answer box left to change) and measures."""
    ss = st.session_state
    value = ss.get(f"ex_answer_{key}")
    if value is not None:
        ss.ex_answers = {**ss.ex_answers, key: value if isinstance(value, str) else float(value)}


def _forget(key: str) -> None:
    """"Answer again": this exercise's answer and grade are dropped (its runs stay cached)."""
    ss = st.session_state
    ss.ex_answers = {k: v for k, v in ss.ex_answers.items() if k != key}
    ss.ex_results = {k: v for k, v in ss.ex_results.items() if k != key}
    ss.pop(f"ex_answer_{key}", None)


def _next() -> None:
    """"Next exercise": the one after the shown one (the selectbox's value, set before it is drawn again)."""
    st.session_state.ex_pick = KEYS[min(KEYS.index(st.session_state.ex_pick) + 1, len(KEYS) - 1)]

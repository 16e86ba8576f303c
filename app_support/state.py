"""The page's session state: defaults, repairs of bad values, one-shot messages.

Every widget has a key listed in DEFAULTS. Values are checked *before* the
widgets are drawn, so a forged or stale value (a length out of range, a model
that is no longer listed) is repaired with a message instead of an exception.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from typing import Any

import streamlit as st

from engine.contract.config import Limits
from engine.contract.speculative import MAX_SPECULATIVE_TOKENS
from lesson.inputs import (
    DEFAULT_MODEL_CHOICE, DEFAULT_OUTPUT_LEN, DEFAULT_PROMPT, as_int_in_range, default_prompt, is_default_prompt,
)
from lesson.runs import DEFAULT_REPLAY_PACE, REPLAY_PACES, keep_pins
from lesson.text import LANGUAGES

from . import run_store

DEMO_MAX_PROMPT = 64
DEMO_MAX_OUTPUT = 32
KEPT = "kept_widget_values"  # a plain (non-widget) copy of every widget's value: see keep_widget_values

DEFAULTS: dict[str, Any] = {
    "lang": "zh",
    "classroom": False,
    "model_choice": DEFAULT_MODEL_CHOICE,
    "prompt": DEFAULT_PROMPT,  # per language: lesson.inputs.default_prompt(lang)
    "output_len": DEFAULT_OUTPUT_LEN,
    "prompt_len": 0,
    "temperature": 0.0,
    "top_k": 0,
    "top_p": 1.0,
    "seed": 0,
    "ignore_eos": False,  # the model's end of sequence ends the answer, as in the lesson's table
    "prefix_reuse": False,  # the prefix cache off: every Prefill computes the whole prompt, as the lesson's table
    "prefix_scope": "",  # this session's name for its kept runs in the engine (set once, at random: init_session)
    "demo_prompt_len": 4,  # the lesson's sketch: 法国 / 的 / 首都 / 是
    "demo_output_len": 2,  # -> 巴黎 / 。
    # the run every page shows: its id in the process's run store (app_support/run_store.py), where the run
    # (trace, headline numbers, felt times, arguments, stamp, origin) is one frozen value; None: no run yet
    "run_id": None,
    "run_holder": None,  # run_store.RunHolder: this session's hold on its runs in the store, gone with the session
    "class_step": 1,  # classroom: forward passes shown so far
    "class_at_end": False,  # classroom: stepped past the last pass, the run's end (lesson.class_steps)
    "presenter": False,  # classroom: the presenter view, one figure per screen (app_support/presenter.py)
    "presenter_figure": 0,  # the presenter view's figure: an index into app_support.presenter.FIGURES
    "flash": [],  # (text key, params) shown once at the top
    "reset_model_choice": False,  # a listed model failed to load: back to the default
    "run_requested": False,  # a control below the Run button asked for a run (show the difference)
    "difference_note": None,  # show the difference: the prompt length it asked for, said once above the timeline
    # ---- runs kept in the session (lesson.runs) ----
    "history": [],  # lesson.runs.HistoryEntry (a run store id each), newest first, at most lesson.runs.HISTORY_LIMIT
    "compare_pins": [],  # the run ids of the (at most two) runs drawn side by side
    "replay_pace": DEFAULT_REPLAY_PACE,  # lesson.runs.REPLAY_PACES
    "replay_from": None,  # time.time() when the replay of the last run started; None: no replay
    "anim_paused": False,  # the animated step-through: paused on a step (anim_step) instead of looping
    # ---- what this page run shows of the stored run (app_support/stepping.py, set by the run panel) ----
    "replay_shown": None,  # the passes the replay shows now; None: no replay
    "replay_last": None,  # the replay's position on the page's last run (a fixed pace shows every pass)
    "replay_due_at": float("inf"),  # time.time() when the replay's next pass is due: the timer redraws then
    "replay_finished": None,  # a replay just ended: its number of passes, said once under the answer
    # ---- the labs' results (app_support/lab.py, modes.py, serving.py, serving_remote.py) ----
    "cache_compare_for": None,  # the run (model and prompt ids) the cache on/off comparison was asked for
    "modes_results": {},  # engine modes measured, by (model, prompt, lengths, modes): app_support.modes
    "sl_runs": None,  # the serving lab's last runs: the id of a run_store.ServingSet (one run per policy)
    "first_screen_drawn": False,  # this session's lesson page has drawn its first figure once (first_screens.py)
    "lesson_open": False,  # the lesson below its first screen is drawn: the reader came to it (sections.read_on)
    "started_once": False,  # this session's first run has drawn its loading note (starting.starting_note)
    "class_stepped": False,  # a classroom step just happened: bring the stepped figure on screen (stepping.py)
    "sl_probe": None,  # the last probe of a real server: the id of a run_store.ProbeShown
    # ---- recorded runs opened (app_support/gallery.py) ----
    "recorded_notice": None,  # (page, "success" | "error", Markdown): what opening a file did, said once there
    "recorded_lab": None,  # a recorded sweep or cache comparison opened in the lab: a run_store.RecordedLab id
    "recorded_serving": None,  # recorded serving runs opened in the serving lab: a run_store.ServingSet id
    "recorded_names": {},  # page ("lesson", "lab", "serving") -> the gallery run open there, by name; None: a file
    # ---- a link that reopens a state (app_support/links.py) ----
    "link_applied": None,  # the query of the link this session opened (applied once)
    "link_tidy": None,  # "to_draw", then "drawn": the opened link's query leaving the address bar (links.apply_link)
    "lang_in_url": False,  # the page's language is in the address bar (app_support.links.keep_language)
    "link_overflow_checked": False,  # the script that tells a query Streamlit dropped (links._check_overflow) ran
    "link_notice": None,  # (page path, what the link did and what was wrong with it): said once there
    "pending_class_step": None,  # a link's classroom step, set once the run it steps through is stored
    "sl_link_run": False,  # a link to the serving lab: run its policies on the next draw
    # ---- predict, then measure (app_support/exercises.py) ----
    "ex_answers": {},  # exercise key -> the answer the student locked before its run
    "ex_results": {},  # exercise key -> lesson.exercises.Grade: measured, right or not
    # ---- the next lesson previewed: weight formats (app_support/quantization.py) ----
    "q_speedup_guess": 2.0,  # the student's guess of INT4's Decode speed-up over fp32
    "q_paris_guess": "yes",  # whether INT4 weights still answer 巴黎
    "q_grades": None,  # (speed-up, 巴黎) lesson.exercises.Grade once checked against the measured file
    # ---- guessing first: speculative decoding (app_support/speculative.py) ----
    "spec_source": "example",  # the repeating example, or the run panel's prompt
    "spec_k": 4,  # drafts per verify pass (GenerationConfig.num_speculative_tokens)
    "spec_run_id": None,  # the run with guessing, in the run store
    "spec_plain_id": None,  # the same prompt's plain Decode run, in the run store
    "spec_passes_guess": 4,  # target passes for 4 guesses, 3 accepted (the answer is 1)
    "spec_ratio_guess": "yes",  # whether a pass over k + 1 positions costs k + 1 Decode steps
    "spec_grades": None,  # lesson.exercises.Grade of each, once checked against the two runs
    KEPT: {},  # a plain copy of every widget's value: see keep_widget_values
}


# The keys of the lesson's controls (everything "reset to the lesson's defaults" puts back; not the language).
WIDGET_KEYS = ("classroom", "presenter", "model_choice", "prompt", "output_len", "prompt_len", "temperature",
               "top_k", "top_p", "seed", "ignore_eos", "prefix_reuse", "demo_prompt_len", "demo_output_len",
               "compare_pins", "replay_pace", "anim_paused")


def fresh(value: Any) -> Any:
    """A default as a session's own value: a list or dict copied, so no two sessions share one."""
    return value.copy() if isinstance(value, (list, dict)) else value


def init_session() -> None:
    kept = st.session_state.get(KEPT, {})
    for key, value in DEFAULTS.items():
        if key == "prompt":  # the running example in the page's language
            value = default_prompt(st.session_state.get("lang", DEFAULTS["lang"]))
        value = kept.get(key, value)  # a widget the last page did not draw: its value from before
        st.session_state.setdefault(key, fresh(value))
    if not st.session_state.prefix_scope:  # one name per browser session: its kept runs are its own
        st.session_state.prefix_scope = secrets.token_hex(8)


def keep_widget_values(keys: tuple[str, ...]) -> None:
    """Widget values survive a page that does not draw them (Streamlit forgets those).

    Each run copies the values into a plain dict and puts back only a value Streamlit has
    dropped. It never writes a widget's key while its widget is on the page: a write there
    is sent back to the browser as the widget's new value, and a slider moved with the
    keyboard while the page was running jumped back to the stale value on the server while
    its thumb kept the new one (slider at 64, token split still 4 tokens).
    """
    ss = st.session_state
    kept = ss.get(KEPT)
    if not isinstance(kept, dict):
        kept = ss[KEPT] = {}
    for key in keys:
        if key in ss:
            kept[key] = ss[key]
        elif key in kept:
            ss[key] = kept[key]


# Choice widgets whose options are drawn in the page's language (a format_func of `lang`). Streamlit keeps
# such a widget's value in the browser as its drawn label: after a language switch the box went on
# showing the old language's label ("每次前向 0.5 秒" on an English page) until the page was left.
WORDED_WIDGETS = ("replay_pace", "model_choice", "compare_pins", "ex_pick", "lab_device_spec", "lab_sweep_kind",
                  "presenter_figure", "sl_source", "sl_scenario", "sl_arrival", "sl_on_kv_full", "sl_probe_api",
                  "q_paris_guess")
WORDED_PREFIXES = ("rec_pick_", "anim_step_", "ex_answer_")


def redraw_labels(prefixes: tuple[str, ...] = WORDED_PREFIXES, names: tuple[str, ...] = WORDED_WIDGETS) -> None:
    """Each worded choice widget's value set again (the same value): Streamlit then sends it to the
    browser with its new label. Only from a callback, or before the widgets are drawn."""
    ss = st.session_state
    for key in [k for k in ss if isinstance(k, str) and (k in names or k.startswith(prefixes))]:
        ss[key] = ss[key]


def language_changed() -> None:
    """The language radio's callback: the lesson's own example follows the language, and every choice
    box says its value in the new language at once (redraw_labels).

    A prompt the visitor typed stays; the page's first view (not a run they asked
    for) is dropped so it is drawn again from the new language's example.
    """
    redraw_labels()
    ss = st.session_state
    kept = ss.get(KEPT) if isinstance(ss.get(KEPT), dict) else {}
    prompt = ss["prompt"] if "prompt" in ss else kept.get("prompt", "")  # a lab page draws no prompt box
    if is_default_prompt(prompt):
        ss.prompt = kept["prompt"] = default_prompt(ss.lang)
        if run_store.current_origin() == "first_view":
            ss.run_id = None


def reset_to_defaults(limits: Limits) -> None:
    """The reset button's callback: every control back to DEFAULTS, the prompt in the page's language.

    The run shown (run_id) is kept; the page then says whether it matches the settings.
    """
    ss = st.session_state
    for key in WIDGET_KEYS:
        ss[key] = fresh(DEFAULTS[key])
    ss.prompt = default_prompt(ss.lang)
    ss.output_len = min(DEFAULT_OUTPUT_LEN, limits.max_new_tokens)
    ss.class_step = 10**9  # classroom mode is off by default: every diagram shows the whole run


def show_the_difference(limits: Limits) -> None:
    """The "show the difference" button's callback: the visitor's own prompt stretched (the lesson's
    sentences before it) to the longest prompt the server allows (1024 tokens by default), run at once.
    The prompt, the answer length and "keep writing past the end" stay as the visitor set them; the
    timeline then says what the button did, and the page scrolls to it (the figures that changed).

    On a tiny model a 4-token Prefill costs about what a Decode step does (fixed per-pass
    overhead); at 1024 positions Prefill is many times a Decode step, as the lesson says.
    """
    ss = st.session_state
    ss.prompt_len = limits.max_prompt_tokens
    ss.difference_note = limits.max_prompt_tokens
    ss.run_requested = True


def pop_difference_note(prompt_len: int | None) -> int | None:
    """The stretched length "show the difference" asked for, once, if the run shown has that many
    prompt tokens (a run that was refused or did not happen says nothing)."""
    asked, st.session_state.difference_note = st.session_state.difference_note, None
    return asked if asked is not None and asked == prompt_len else None


def open_lesson() -> None:
    """The "read on" button's callback (pressed by the reader, or by the page when the reader scrolls near it
    or follows a link to a section below): from now on the page draws the whole lesson."""
    st.session_state.lesson_open = True


def run_again() -> None:
    """The "measure again" button's callback (the bottleneck section, when this machine's noise made a
    Decode step look as slow as Prefill): the run panel runs its request again, repeats and all."""
    st.session_state.run_requested = True


def flash(key: str, **params: Any) -> None:
    st.session_state.flash = [*st.session_state.flash, (key, params)]


def pop_flash() -> list[tuple[str, dict]]:
    messages, st.session_state.flash = st.session_state.flash, []
    return messages


def repair(key: str, value: Any) -> None:
    """A session value put right, written only when it is not already that value (of that type).

    Every write of a widget's key is sent to the browser as the widget's new value. Written on every
    run, a run that began before a click sent the old value back after it: the box the visitor had
    just ticked showed unticked, and the Run pressed next ran without it.
    """
    ss = st.session_state
    if key not in ss or type(ss[key]) is not type(value) or ss[key] != value:
        ss[key] = value


def repair_session(limits: Limits, model_choices: Sequence[str] = (DEFAULT_MODEL_CHOICE,)) -> None:
    """Bring every widget value into its legal range before the widgets exist. `model_choices`: the
    models the engine worker offers (app_support.resources.model_choices)."""
    ss = st.session_state
    if ss.lang not in LANGUAGES:
        ss.lang = DEFAULTS["lang"]
    if not isinstance(ss.prompt, str):
        ss.prompt = ""
    repair("classroom", bool(ss.classroom))
    repair("presenter", ss.presenter is True)
    if not isinstance(ss.history, list):
        ss.history = []
    repair("compare_pins", keep_pins(ss.compare_pins, ss.history))
    if ss.replay_pace not in REPLAY_PACES:
        ss.replay_pace = DEFAULT_REPLAY_PACE
    if ss.spec_source not in ("example", "yours"):
        ss.spec_source = DEFAULTS["spec_source"]
    if ss.spec_ratio_guess not in ("yes", "no"):
        ss.spec_ratio_guess = DEFAULTS["spec_ratio_guess"]
    for key in ("anim_paused", "ignore_eos", "prefix_reuse"):
        repair(key, ss[key] is True)
    if ss.reset_model_choice:
        ss.model_choice, ss.reset_model_choice = DEFAULT_MODEL_CHOICE, False
    if ss.model_choice not in model_choices:
        flash("err_unknown_model", path=str(ss.model_choice)[:80])
        ss.model_choice = DEFAULT_MODEL_CHOICE
    ranges = {
        "output_len": (1, limits.max_new_tokens, min(DEFAULT_OUTPUT_LEN, limits.max_new_tokens)),
        "prompt_len": (0, limits.max_prompt_tokens, 0),
        "top_k": (0, 1000, 0),
        "seed": (0, 2**31 - 1, 0),
        "demo_prompt_len": (1, DEMO_MAX_PROMPT, DEFAULTS["demo_prompt_len"]),
        "demo_output_len": (1, DEMO_MAX_OUTPUT, DEFAULTS["demo_output_len"]),
        "spec_k": (1, MAX_SPECULATIVE_TOKENS, DEFAULTS["spec_k"]),  # a k the engine would refuse: said, and clamped
        "spec_passes_guess": (0, 16, DEFAULTS["spec_passes_guess"]),
    }
    for key, (low, high, default) in ranges.items():
        fixed, ok = as_int_in_range(ss[key], low, high, default)
        if not ok:
            flash("err_length_range", name_key=key, value=str(ss[key])[:40], clamped=fixed)
            ss[key] = fixed
    for key, low, high, default in (("temperature", 0.0, 2.0, 0.0), ("top_p", 0.05, 1.0, 1.0)):
        value = ss[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
            repair(key, default)
        else:
            repair(key, float(min(high, max(low, value))))

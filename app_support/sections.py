"""The page, section by section, in the lesson's order.

Each function draws one part of the page. Sections that show a diagram take
the trace as JSON (a plain string, so the SVG cache can key on it) or None
when there is no run to show yet.
"""

from __future__ import annotations

import datetime
import json
import logging
import time
from dataclasses import dataclass

import streamlit as st

from engine.prompts import DEFAULT_MAX_PROMPT_TOKENS
from engine.trace import RequestTrace
from lesson.perfetto import to_perfetto_json
from lesson.text import LANGUAGE_NAMES, LANGUAGES, t
from lesson.views import (
    DEFAULT_MODEL_CHOICE, DEFAULT_OUTPUT_LEN, ServerSettings, bottleneck_live_text, default_prompt, download_stem,
    engine_caption, error_message, escape_markdown, format_bytes, format_count,
    format_ms, list_model_choices, markdown_table, metric_cards, metric_gap_notes,
    page_drawing_note, queue_note, run_stamp, schematic_alt, step_log_line, step_table, stop_reason_text,
    token_split_text, trace_csv, trace_summary, truncate_trace,
)

from lesson.runs import (
    HISTORY_LIMIT, REPLAY_PACES, compare_table, history_add, keep_pins, replay_position, replay_times_s,
    run_label, shared_extent,
)

from . import resources, state
from .ui import classroom_keyboard, error_boundary, metric_row, svg_figure

log = logging.getLogger("prefill_decode.app")

# (anchor, title key) in page order: the sidebar's table of contents.
UI_REFRESH_S = 0.1  # while the model runs, redraw the answer at most 10 times a second

CONTENTS = (
    ("run", "run_title"), ("timeline", "sec_timeline"), ("prefill", "sec_prefill"), ("decode", "sec_decode"),
    ("blocks", "sec_blocks"), ("bottleneck", "sec_bottleneck"), ("waits", "sec_waits"), ("compare", "sec_compare"),
    ("many", "sec_many"), ("summary", "sec_summary"), ("animation", "sec_animation"), ("references", "sec_references"),
    ("review", "sec_review"),
)


# Each paragraph of the prompt box takes its direction from its first strong character, so a
# right-to-left prompt (Arabic, Hebrew) is right-aligned and reads in order. Fixed CSS, no user text.
PROMPT_CSS = "<style>.st-key-prompt textarea { unicode-bidi: plaintext; text-align: start; }</style>"


@dataclass(frozen=True)
class RunArgs:
    """Everything that determines a trace, as plain values (the cache key)."""

    model_choice: str
    device: str
    dtype: str
    prompt: str
    max_new_tokens: int
    temperature: float
    top_k: int
    top_p: float
    seed: int
    max_prompt_tokens: int
    ignore_eos: bool = False  # keep writing past end of sequence: the length slider is then exact


# ---------------------------------------------------------------------------
# Top of the page: header, sidebar, model
# ---------------------------------------------------------------------------

def header(lang: str) -> None:
    title_col, switch_col = st.columns([5, 2], vertical_alignment="bottom")
    with title_col:
        st.caption(t(lang, "kicker"))
        st.title(t(lang, "title"), anchor="top")
    with switch_col:
        st.radio(
            t(lang, "language"), LANGUAGES, key="lang", horizontal=True,
            format_func=LANGUAGE_NAMES.__getitem__, on_change=state.language_changed,
        )
        st.toggle(t(lang, "classroom"), key="classroom", help=t(lang, "classroom_help"), on_change=_classroom_changed)


def _classroom_changed() -> None:
    """Entering classroom mode starts the stepping at Prefill; leaving shows everything."""
    st.session_state.class_step = 1 if st.session_state.classroom else 10**9


def show_flash(lang: str) -> None:
    for key, params in state.pop_flash():
        params = dict(params)
        if "name_key" in params:
            params["name"] = t(lang, params.pop("name_key"))
        st.warning(t(lang, key, **{k: escape_markdown(str(v)) for k, v in params.items()}))


def sidebar(lang: str, settings: ServerSettings, contents: bool = True):
    """Settings, limits and (on the lesson page) its contents. Returns a slot at the top for the classroom buttons."""
    classroom = st.session_state.classroom
    with st.sidebar:
        classroom_slot = st.container()
        st.subheader(t(lang, "sidebar_title"))
        presets = resources.preset_choices(settings.device, settings.dtype)
        st.selectbox(
            t(lang, "model"), list_model_choices(settings.models_dir, presets), key="model_choice",
            help=t(lang, "model_help"),  # options are folder names (language-neutral; "default" = embedded)
            format_func=lambda c: t(lang, "preset_choice", name=c) if c in presets else c,
        )
        with st.expander(t(lang, "sampling"), expanded=False):
            if classroom:
                st.caption(t(lang, "sampling_locked"))
            st.slider(t(lang, "temperature"), 0.0, 2.0, step=0.05, key="temperature", disabled=classroom)
            st.number_input(t(lang, "top_k"), 0, 1000, step=1, key="top_k", disabled=classroom)
            st.slider(t(lang, "top_p"), 0.05, 1.0, step=0.05, key="top_p", disabled=classroom)
            st.number_input(t(lang, "seed"), 0, 2**31 - 1, step=1, key="seed", disabled=classroom)
        limits = settings.limits
        st.caption(t(lang, "limits", max_prompt_tokens=limits.max_prompt_tokens,
                     max_prompt_chars=limits.max_prompt_chars, max_new_tokens=limits.max_new_tokens))
        st.button(t(lang, "reset_defaults"), key="reset_defaults", help=t(lang, "reset_defaults_help"),
                  icon=":material/restart_alt:", width="stretch", on_click=state.reset_to_defaults, args=(limits,))
        if contents:
            st.markdown(f"**{t(lang, 'toc')}**")
            st.markdown("\n".join(f"- [{t(lang, key)}](#{anchor})" for anchor, key in CONTENTS))
    return classroom_slot


def load_model(lang: str, settings: ServerSettings):
    """The model for this run, shown with its caption, or None (with a message) when it cannot be loaded.

    A listed folder that fails to load sends the picker back to the default.
    """
    choice = st.session_state.model_choice
    try:
        with st.spinner(t(lang, "loading_model")):
            lm = resources.get_model(choice, settings.device, settings.dtype)
    except Exception as err:  # noqa: BLE001 - becomes a message, never a traceback
        log.warning("model %r failed to load: %s", choice, err)
        if choice != "default":
            state.flash(f"err_{err.key}" if getattr(err, "key", None) else "err_internal",
                        **_flash_params(err))
            st.session_state.reset_model_choice = True  # applied before the picker is drawn again
            st.rerun()
        st.error(error_message(err, lang))
        return None
    if lm.info.random_weights:  # a preset: said above everything its run shows
        st.warning(t(lang, "random_weights_note"), icon=":material/casino:")
    model_caption(lang, lm)
    return lm


def _flash_params(err: Exception) -> dict:
    from pathlib import Path

    params = {k: str(v) for k, v in (getattr(err, "params", None) or {}).items() if k != "reason"}
    if params.get("path"):
        params["path"] = Path(params["path"]).name
    return params or {"kind": type(err).__name__}


def model_caption(lang: str, lm) -> None:
    info = lm.info
    with st.sidebar:
        st.markdown(t(lang, "model_in_use", model_id=escape_markdown(info.model_id),
                      architecture=escape_markdown(info.architecture), num_layers=info.num_layers,
                      num_params=format_count(info.num_params)))
        st.markdown(t(lang, "device_dtype", device=info.device, dtype=info.dtype,
                      kv_per_token=format_bytes(info.kv_bytes_per_token)))
        if info.sliding_window is not None:  # the per-token figure above holds only until the window is full
            st.markdown(t(lang, "kv_sliding_window", sliding=info.num_sliding_layers, layers=info.num_layers,
                          window=f"{info.sliding_window:,}"))


def intro(lang: str) -> None:
    st.markdown(t(lang, "intro_1"))
    st.markdown(t(lang, "intro_2"))


# ---------------------------------------------------------------------------
# The run panel: prompt, lengths, the real token split, Run (streams)
# ---------------------------------------------------------------------------

def run_panel(lang: str, lm, settings: ServerSettings) -> str | None:
    """Controls and the live run. Returns the trace JSON the diagrams should show."""
    st.header(t(lang, "run_title"), anchor="run")
    st.markdown(t(lang, "run_intro"))
    limits = settings.limits
    left, right = st.columns([3, 2], gap="large")
    with left:
        st.text_area(t(lang, "prompt"), key="prompt", placeholder=t(lang, "prompt_placeholder"), height=110)
        st.html(PROMPT_CSS)
    with right:
        st.slider(t(lang, "output_len"), 1, limits.max_new_tokens, key="output_len", help=t(lang, "output_len_help"))
        st.slider(t(lang, "prompt_len"), 0, limits.max_prompt_tokens, key="prompt_len", help=t(lang, "prompt_len_help"))
        st.checkbox(t(lang, "ignore_eos"), key="ignore_eos", help=t(lang, "ignore_eos_help"))

    prompt = st.session_state.prompt
    preview = _prompt_preview(lang, lm, settings, prompt) if lm is not None else None
    effective = preview[0] if preview else None
    # Off while the prompt cannot run (empty, too long): the message above says why.
    clicked = st.button(t(lang, "run"), key="run", type="primary", icon=":material/play_arrow:",
                        disabled=lm is None or effective is None)
    clicked = clicked or (st.session_state.run_requested and lm is not None and effective is not None)
    st.session_state.run_requested = False
    result = st.container(border=True, key="result_box")
    ran = False  # a new run drew its own answer; otherwise the box shows the run the figures show
    if clicked and effective is not None:
        with result, error_boundary(lang):
            ran = _stream_run(lang, lm, current_args(settings, effective), num_prompt_tokens=preview[1])
    trace_json = _trace_to_show(lang, settings)
    st.session_state.replay_shown = _replay_step(trace_json)
    stepping = st.session_state.classroom or st.session_state.replay_shown is not None
    st.session_state.stepping_full_json = trace_json if stepping else None
    if trace_json is None:
        result.info(t(lang, "no_trace"))
        return None
    with result, error_boundary(lang):
        shown = classroom_view(trace_json)
        if st.session_state.replay_shown is not None:
            _replay_box(lang, RequestTrace.from_json(shown), len(RequestTrace.from_json(trace_json).steps))
        elif not ran:
            _result_box(lang, RequestTrace.from_json(shown))
        st.caption(trace_summary(RequestTrace.from_json(trace_json), lang))
        if st.session_state.pop("replay_finished", None):
            st.caption(t(lang, "replay_done", total=len(RequestTrace.from_json(trace_json).steps)))
        if effective is not None and st.session_state.trace_args != current_args(settings, effective):
            st.info(t(lang, "stale_note"), icon=":material/refresh:")
    _replay_controls(lang)
    with st.expander(t(lang, "data_title")), error_boundary(lang):
        _data_downloads(lang, RequestTrace.from_json(trace_json), st.session_state.trace_stamp)
    return shown


def _prompt_preview(lang: str, lm, settings: ServerSettings, prompt: str) -> tuple[str, int] | None:
    """Show the real tokenizer split; return (the prompt to run, its tokens), or None if it cannot run."""
    limits = settings.limits
    if len(prompt) > limits.max_prompt_chars:
        st.error(t(lang, "err_prompt_too_many_chars", num_chars=len(prompt), limit=limits.max_prompt_chars))
        return None
    if not prompt.strip():
        st.warning(t(lang, "err_empty_prompt"))
        return None
    with error_boundary(lang):
        effective, pieces, natural = resources.prompt_preview(
            st.session_state.model_choice, settings.device, settings.dtype, prompt, st.session_state.prompt_len)
        target = st.session_state.prompt_len
        if target and target <= natural:
            st.caption(t(lang, "prompt_len_note", natural=natural))
        elif target:
            st.caption(t(lang, "prompt_extended", natural=natural, num_tokens=len(pieces)))
        if len(pieces) > limits.max_prompt_tokens:
            # Only the typed prompt can be too long: filler stops at the target, which is at most the limit.
            st.error(t(lang, "err_prompt_too_long", num_tokens=len(pieces), limit=limits.max_prompt_tokens))
            return None
        if st.session_state.model_choice == DEFAULT_MODEL_CHOICE and len(pieces) > DEFAULT_MAX_PROMPT_TOKENS:
            # An operator may raise the cap; the embedded model was not trained that far.
            st.warning(t(lang, "prompt_beyond_trained", trained=DEFAULT_MAX_PROMPT_TOKENS, num_tokens=len(pieces)))
        st.caption(t(lang, "token_split", num_tokens=len(pieces)))
        st.code(token_split_text(pieces), language=None, wrap_lines=True, height="content" if len(pieces) < 80 else 140)
        return effective, len(pieces)
    return None


def current_args(settings: ServerSettings, prompt: str) -> RunArgs:
    ss = st.session_state
    greedy_fixed = ss.classroom  # classroom: greedy, seed 0, so a demo repeats exactly
    return RunArgs(
        model_choice=ss.model_choice, device=settings.device, dtype=settings.dtype, prompt=prompt,
        max_new_tokens=int(ss.output_len),
        temperature=0.0 if greedy_fixed else float(ss.temperature),
        top_k=0 if greedy_fixed else int(ss.top_k),
        top_p=1.0 if greedy_fixed else float(ss.top_p),
        seed=0 if greedy_fixed else int(ss.seed),
        max_prompt_tokens=settings.limits.max_prompt_tokens,
        ignore_eos=bool(ss.ignore_eos),
    )


def _stream_run(lang: str, lm, args: RunArgs, num_prompt_tokens: int) -> bool:
    """Run the model, drawing Prefill and then each Decode token as it arrives.

    Returns whether a finished run was stored (and its answer drawn)."""
    from engine import GenerationConfig, stream_trace

    cfg = GenerationConfig(max_new_tokens=args.max_new_tokens, temperature=args.temperature,
                           top_k=args.top_k, top_p=args.top_p, seed=args.seed, ignore_eos=args.ignore_eos)
    queued = st.empty()
    if lm.lock.locked():  # another visitor's forward pass is running: say so while we wait
        queued.info(t(lang, "queued"), icon=":material/hourglass_top:")
    progress = st.progress(0.0, text=t(lang, "running_prefill", num_positions=num_prompt_tokens))
    answer, log_box = st.empty(), st.empty()
    trace, last_draw = None, 0.0
    try:
        for trace in stream_trace(lm, args.prompt, cfg, max_prompt_tokens=args.max_prompt_tokens):
            # The model waits while the page draws, and that wait lands in the next ITL; so draw
            # Prefill at once, then at most every UI_REFRESH_S (measured: drawing every step of a
            # 6 ms decode made TPOT about 10 ms). The engine records each hold as the next step's
            # consumer_ms, so the waits section shows it as its own slice, never hidden in a metric.
            if len(trace.steps) > 1 and time.perf_counter() - last_draw < UI_REFRESH_S:
                continue
            queued.empty()
            done = len(trace.steps)
            progress.progress(min(1.0, done / cfg.max_new_tokens), text=t(
                lang, "progress", step=done, num_tokens=done, max_tokens=cfg.max_new_tokens))
            _answer_and_log(lang, trace, answer, log_box, tail=6)
            last_draw = time.perf_counter()
    except Exception:
        answer.empty()  # no half answer left behind: the box shows the run the figures show
        log_box.empty()
        raise
    finally:
        queued.empty()
        progress.empty()
    if trace is None:
        return False
    _store_trace(trace.to_json(indent=None), args, is_default=False)
    shown = RequestTrace.from_json(classroom_view(st.session_state.trace_json))
    _answer_and_log(lang, shown, answer, log_box)
    _done_notes(lang, shown)
    return True


def _store_trace(trace_json: str, args: RunArgs, is_default: bool) -> None:
    """The run every figure shows from now on, with when it ran (for download names)."""
    ss = st.session_state
    ss.trace_json, ss.trace_args, ss.trace_is_default = trace_json, args, is_default
    ss.trace_stamp = run_stamp(datetime.datetime.now())
    ss.class_step = 1 if ss.classroom else len(json.loads(trace_json)["steps"])
    ss.history = history_add(ss.history, trace_json, ss.trace_stamp)  # kept for the comparison
    ss.compare_pins = keep_pins(ss.compare_pins, ss.history)  # a pinned run that just left the history
    ss.replay_from = None  # a replay is of the run it started on


def _result_box(lang: str, trace: RequestTrace) -> None:
    _answer_and_log(lang, trace, st.empty(), st.empty())
    _done_notes(lang, trace)


def _done_notes(lang: str, trace: RequestTrace) -> None:
    if trace.finished:
        st.success(t(lang, "done", num_tokens=len(trace.steps), stop_reason=stop_reason_text(trace, lang)))
        if trace.stop_reason == "eos" and len(trace.steps) < trace.max_new_tokens:
            st.caption(t(lang, "eos_hint", num_tokens=len(trace.steps), limit=trace.max_new_tokens,
                         ignore_eos=t(lang, "ignore_eos")))
    note = queue_note(trace, lang)  # only the engine-measured wait for the model lock
    if note is not None:
        st.caption(note)


def _answer_and_log(lang: str, trace: RequestTrace, answer, log_box, tail: int | None = None) -> None:
    text = trace.output_text if trace.finished else "".join(trace.output_pieces)
    with answer.container():
        st.markdown(f"**{t(lang, 'answer')}**")
        st.code(text or " ", language=None, wrap_lines=True)
    indices = range(len(trace.steps))
    if tail is not None and len(trace.steps) > tail:
        indices = range(len(trace.steps) - tail, len(trace.steps))
    lines = [f"- {step_log_line(trace, i, lang)}" for i in indices]
    if tail is not None and len(trace.steps) > tail:
        lines.insert(0, "- …")
    if tail is None and len(lines) > 8:  # a long finished run: first few, then the last few
        lines = lines[:4] + [f"- … ({len(lines) - 7})"] + lines[-3:]
    log_box.markdown("\n".join(lines))


def _trace_to_show(lang: str, settings: ServerSettings) -> str | None:
    """The last run; before any run, the default prompt's trace in the page's language (cached per model)."""
    if st.session_state.trace_json is not None:
        return st.session_state.trace_json
    args = RunArgs(st.session_state.model_choice, settings.device, settings.dtype, default_prompt(lang),
                   min(DEFAULT_OUTPUT_LEN, settings.limits.max_new_tokens), 0.0, 0, 1.0, 0,
                   settings.limits.max_prompt_tokens)
    try:
        trace_json = resources.finished_trace_json(*_plain(args))
    except Exception as err:  # noqa: BLE001
        log.warning("default trace failed: %s", err)
        st.error(error_message(err, lang))
        return None
    _store_trace(trace_json, args, is_default=True)
    return trace_json


def _plain(args: RunArgs) -> tuple:
    return (args.model_choice, args.device, args.dtype, args.prompt, args.max_new_tokens,
            args.temperature, args.top_k, args.top_p, args.seed, args.max_prompt_tokens, args.ignore_eos)


def _data_downloads(lang: str, trace: RequestTrace, stamp: str) -> None:
    st.dataframe(step_table(trace), hide_index=True, width="stretch", height=240)
    stem = download_stem(trace, stamp)
    left, right = st.columns(2)
    left.download_button(t(lang, "download_json"), data=trace.to_json(), file_name=f"{stem}_trace.json",
                         mime="application/json", key="download_json", on_click="ignore",
                         icon=":material/download:")
    right.download_button(t(lang, "download_csv"), data=trace_csv(trace), file_name=f"{stem}_steps.csv",
                          mime="text/csv", key="download_csv", on_click="ignore", icon=":material/download:")
    st.download_button(t(lang, "download_perfetto"), data=to_perfetto_json(trace), file_name=f"{stem}.perfetto.json",
                       mime="application/json", key="download_perfetto", on_click="ignore",
                       icon=":material/download:", help=t(lang, "download_perfetto_help"))


# ---------------------------------------------------------------------------
# Classroom stepping: one forward pass at a time through every diagram
# ---------------------------------------------------------------------------

def classroom_view(trace_json: str) -> str:
    """The trace cut to the passes shown so far: the replay's position while a replay runs,
    the classroom's step in classroom mode, else the whole run."""
    replay = st.session_state.get("replay_shown")
    if not st.session_state.classroom and replay is None:
        return trace_json
    trace = RequestTrace.from_json(trace_json)
    step = replay if replay is not None else int(st.session_state.class_step)
    step = max(1, min(step, len(trace.steps)))
    return truncate_trace(trace, step).to_json(indent=None) if step < len(trace.steps) else trace_json


def stepping_full() -> str | None:
    """The whole run while the classroom steps through it (set by run_panel), else None:
    the figures take their axes from it, so stepping never rescales them."""
    return st.session_state.get("stepping_full_json")


def classroom_controls(lang: str, slot) -> None:
    """Buttons at the top of the sidebar (always in reach while the teacher scrolls),
    pressed also by the keyboard: → / Page Down, ← / Page Up, Home, End (ui.classroom_keyboard)."""
    if not st.session_state.classroom or st.session_state.trace_json is None:
        return
    total = len(json.loads(st.session_state.trace_json)["steps"])
    with slot:
        st.button(t(lang, "classroom_step"), key="class_next", type="primary", width="stretch",
                  icon=":material/skip_next:", on_click=_set_class_step, args=(1, total, True))
        st.button(t(lang, "classroom_prev"), key="class_prev", width="stretch", icon=":material/skip_previous:",
                  on_click=_set_class_step, args=(-1, total, True))
        st.button(t(lang, "classroom_reset"), key="class_reset", width="stretch", icon=":material/first_page:",
                  on_click=_set_class_step, args=(1, total, False))
        st.button(t(lang, "classroom_all"), key="class_all", width="stretch", icon=":material/last_page:",
                  on_click=_set_class_step, args=(total, total, False))
        shown = max(1, min(int(st.session_state.class_step), total))
        phase = t(lang, "phase_prefill") if shown == 1 else f"{t(lang, 'phase_decode')} {shown - 1}"
        with st.container(key="class_position"):  # browser tests read the step here
            st.progress(shown / total, text=t(lang, "classroom_position", shown=shown, total=total, phase=phase))
        st.caption(t(lang, "classroom_keys"))
        classroom_keyboard()
        st.divider()


def _set_class_step(value: int, total: int, relative: bool) -> None:
    """Button callback: runs before the page, so every part shows the same step."""
    current = max(1, min(total, int(st.session_state.class_step)))
    st.session_state.class_step = max(1, min(total, current + value if relative else value))


# ---------------------------------------------------------------------------
# Slow-motion replay of the last run: its measured token times, stretched
# ---------------------------------------------------------------------------

def _replay_step(trace_json: str | None) -> int | None:
    """The passes the replay shows now (None: no replay). Read once per page run (run_panel),
    so every figure on the page shows the same pass; a finished replay ends itself."""
    ss = st.session_state
    if ss.replay_from is None or trace_json is None or ss.classroom:
        ss.replay_from = None
        return None
    times = replay_times_s(RequestTrace.from_json(trace_json), ss.replay_pace)
    elapsed = time.time() - ss.replay_from
    if elapsed > times[-1] + REPLAY_HOLD_S:
        ss.replay_from, ss.replay_finished = None, len(times)
        return None
    position = replay_position(times, elapsed)
    last = ss.get("replay_last")
    if REPLAY_PACES[ss.replay_pace][0] == "fixed" and last is not None and position > last:
        # Every pass is shown, each for its full time, even when the page draws slower than the pace.
        position = last + 1
        ss.replay_from = time.time() - times[position - 1]
    ss.replay_last = position
    return position


REPLAY_HOLD_S = 1.0  # the whole answer stays up this long before the replay ends


def _start_replay() -> None:
    st.session_state.replay_from, st.session_state.replay_last = time.time(), None


def _stop_replay() -> None:
    st.session_state.replay_from = None


def _replay_controls(lang: str) -> None:
    """Pace and start / stop, under the answer. Off in classroom mode (the teacher steps by hand)."""
    if st.session_state.classroom or st.session_state.trace_json is None:
        return
    pace, button = st.columns([3, 2], vertical_alignment="bottom")
    pace.selectbox(t(lang, "replay_pace"), list(REPLAY_PACES), key="replay_pace",
                   format_func=lambda key: t(lang, f"replay_pace_{key}"), help=t(lang, "replay_pace_help"))
    if st.session_state.replay_shown is None:
        button.button(t(lang, "replay_start"), key="replay_start", icon=":material/slow_motion_video:",
                      on_click=_start_replay, width="stretch")
    else:
        button.button(t(lang, "replay_stop"), key="replay_stop", icon=":material/stop:", on_click=_stop_replay,
                      width="stretch")


def _replay_box(lang: str, shown: RequestTrace, total: int) -> None:
    """The answer as far as the replay has come, under a label that says it is a replay."""
    with st.container(key="replay_box"):  # browser tests read the replay's position here
        st.info(t(lang, "replay_label", shown=len(shown.steps), total=total, ms=format_ms(shown.steps[-1].end_ms)),
                icon=":material/slow_motion_video:")
    _answer_and_log(lang, shown, st.empty(), st.empty())


def replay_tick() -> None:
    """Last on the page: while a replay runs, note when its next pass is due and start the timer
    (_replay_timer) that draws the page again then.

    Not st.rerun() at the end of each run: Streamlit removes what an earlier run drew and a later
    one did not only when a run ends without a rerun, so a replay drawn by reruns kept the finished
    run's banner, a second summary and the start button on screen for its whole length."""
    ss = st.session_state
    if ss.get("replay_shown") is None or ss.replay_from is None or ss.trace_json is None:
        return
    times = replay_times_s(RequestTrace.from_json(ss.trace_json), ss.replay_pace)
    elapsed = time.time() - ss.replay_from
    upcoming = [when for when in (*times, times[-1] + REPLAY_HOLD_S + 0.05) if when > elapsed]
    ss.replay_due_at = ss.replay_from + (upcoming[0] if upcoming else elapsed)
    _replay_timer()


REPLAY_TIMER_S = 0.1  # how often the browser asks whether the replay's next pass is due


@st.fragment(run_every=REPLAY_TIMER_S)
def _replay_timer() -> None:
    """Runs with the page (the next pass is not due yet: nothing to do), then every REPLAY_TIMER_S
    on its own; once the next pass is due, the whole page is drawn again. The page stops calling
    it when the replay ends, and Streamlit then stops its timer."""
    ss = st.session_state
    if ss.get("replay_from") is not None and time.time() >= ss.get("replay_due_at", float("inf")):
        ss.replay_due_at = float("inf")  # one redraw per pass, however many ticks land before it starts
        st.rerun()


# ---------------------------------------------------------------------------
# Runs kept in the session: pick two, drawn on the same axes
# ---------------------------------------------------------------------------

@st.cache_data(show_spinner=False, max_entries=64)
def _history_label(trace_json: str, stamp: str, lang: str, number: int) -> str:
    return run_label(RequestTrace.from_json(trace_json), stamp, lang, number)


@st.cache_data(show_spinner=False, max_entries=32)
def _shared_extent_json(a_json: str, b_json: str) -> str:
    return shared_extent(RequestTrace.from_json(a_json), RequestTrace.from_json(b_json)).to_json(indent=None)


COMPARE_FIGURES = (("timeline", "compare_fig_timeline"), ("latency", "compare_fig_latency"),
                   ("kv_growth", "compare_fig_kv"))


def section_compare(lang: str) -> None:
    """The session's last runs; two pinned ones side by side, every figure on shared axes."""
    ss = st.session_state
    st.header(t(lang, "sec_compare"), anchor="compare")
    st.markdown(t(lang, "compare_intro", limit=HISTORY_LIMIT))
    history = ss.history
    if len(history) < 2:
        st.info(t(lang, "compare_need_two", count=len(history)), icon=":material/compare:")
        return
    labels = {e.run_id: _history_label(e.trace_json, e.stamp, lang, e.number) for e in history}
    kept = keep_pins(ss.compare_pins, history)
    if kept != ss.compare_pins:  # a pinned run left the history with this page's run (written only then)
        ss.compare_pins = kept
    st.multiselect(t(lang, "compare_pick"), list(labels), key="compare_pins", max_selections=2,
                   format_func=labels.__getitem__, help=t(lang, "compare_pick_help"),
                   placeholder=t(lang, "compare_placeholder"), select_all=False)  # Streamlit's own words are English
    pinned = [e for pin in ss.compare_pins for e in history if e.run_id == pin]
    if len(pinned) < 2:
        st.caption(t(lang, "compare_pick_two"))
        return
    with error_boundary(lang):
        a, b = (RequestTrace.from_json(e.trace_json) for e in pinned)
        st.markdown(f"**{t(lang, 'compare_table_title')}**")
        st.dataframe(compare_table(a, b, lang), hide_index=True, width="stretch")
        st.caption(t(lang, "compare_same_axes"))
        extent = _shared_extent_json(pinned[0].trace_json, pinned[1].trace_json)
    for name, title in COMPARE_FIGURES:
        st.subheader(t(lang, title))
        side_by_side = name != "timeline" and not ss.classroom  # a timeline is wide: one above the other
        places = st.columns(2) if side_by_side else (st.container(), st.container())
        for run, entry, place in zip(("cmp_run_a", "cmp_run_b"), pinned, places):
            with place, error_boundary(lang, "err_diagram"):
                svg = resources.diagram_svg(name, entry.trace_json, lang, extent, classroom=ss.classroom)
                alt, stem = resources.diagram_words(name, entry.trace_json, lang, entry.stamp)
                words = escape_markdown(labels[entry.run_id])
                svg_figure(f"compare_{name}_{run[-1]}", svg, lang,
                           t(lang, "compare_run_caption", run=t(lang, run), label=words),
                           alt=t(lang, "compare_alt", run=t(lang, run), alt=alt), file_stem=stem)


# ---------------------------------------------------------------------------
# The lesson's sections
# ---------------------------------------------------------------------------

def live_diagram(name: str, trace_json: str | None, lang: str, caption: str | None = None) -> None:
    if trace_json is None:
        st.info(t(lang, "no_trace"))
        return
    with error_boundary(lang, "err_diagram"):
        svg = resources.diagram_svg(name, trace_json, lang, stepping_full(), classroom=st.session_state.classroom)
        alt, stem = resources.diagram_words(name, trace_json, lang, st.session_state.trace_stamp)
        svg_figure(name, svg, lang, caption, alt=alt, file_stem=stem)


def section_timeline(lang: str, trace_json: str | None) -> None:
    st.header(t(lang, "sec_timeline"), anchor="timeline")
    st.markdown(t(lang, "timeline_1"))
    st.markdown(markdown_table(t(lang, "timeline_table")))
    st.markdown(t(lang, "timeline_2"))
    live_diagram("timeline", trace_json, lang, t(lang, "timeline_caption"))
    st.caption(t(lang, "timeline_real_split"))


def section_prefill(lang: str, trace_json: str | None) -> None:
    st.header(t(lang, "sec_prefill"), anchor="prefill")
    st.markdown(t(lang, "prefill_1"))
    st.markdown(t(lang, "prefill_2"))
    live_diagram("blocks", trace_json, lang, t(lang, "blocks_caption"))


def section_decode(lang: str, trace_json: str | None) -> None:
    st.header(t(lang, "sec_decode"), anchor="decode")
    for key in ("decode_1", "decode_2", "decode_3"):
        st.markdown(t(lang, key))
    live_diagram("kv_growth", trace_json, lang, t(lang, "kv_caption"))


def section_blocks_demo(lang: str) -> None:
    st.header(t(lang, "sec_blocks"), anchor="blocks")
    st.markdown(t(lang, "blocks_note"))
    left, right = st.columns(2)
    left.slider(t(lang, "demo_prompt_len"), 1, state.DEMO_MAX_PROMPT, key="demo_prompt_len")
    right.slider(t(lang, "demo_output_len"), 1, state.DEMO_MAX_OUTPUT, key="demo_output_len")
    _sketch_live(lang, int(st.session_state.demo_prompt_len), int(st.session_state.demo_output_len))
    with st.container(key="sketch_figure"), error_boundary(lang, "err_diagram"):
        prompt_len, output_len = int(st.session_state.demo_prompt_len), int(st.session_state.demo_output_len)
        svg = resources.schematic_svg(prompt_len, output_len, lang, classroom=st.session_state.classroom)
        svg_figure("blocks_schematic", svg, lang, t(lang, "demo_live_hint"),
                   alt=schematic_alt(prompt_len, output_len, lang),
                   file_stem=f"prefill-decode_sketch_prompt{prompt_len}_answer{output_len}")


# While a length slider is dragged, Streamlit sends its value only on release (a rerun later);
# this script, in the page, redraws a plain copy of the sketch from the thumbs' numbers at
# every move, in place of the figure, and steps aside once the page's own figure (drawn by
# lesson.diagrams for exactly those lengths, with its SVG download) is there. Fixed code; its
# data (numbers, colours, the lesson's own words) come as JSON and are set as text, never markup.
SKETCH_LIVE_JS = """
<div class="pd-sketch-data" hidden data-sketch='%s'></div>
<script>
(() => {
  if (window.__prefillDecodeSketch) { window.__prefillDecodeSketch(); return; }
  const NS = 'http://www.w3.org/2000/svg';
  const thumb = (key) => {
    const el = document.querySelector('.st-key-' + key + ' [data-testid=stSliderThumbValue]');
    const n = el ? parseInt(el.innerText, 10) : NaN;
    return Number.isFinite(n) ? n : null;
  };
  const el = (tag, attrs, text) => {
    const e = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const fill = (words, p, o) => words.replace('{p}', p).replace('{o}', o);
  function draw(box, d, p, o) {
    const rows = p + o - 1, cols = o, cell = Math.max(4, Math.min(22, 640 / cols, 420 / rows));
    const left = 90, top = 54, height = top + rows * cell + 40;
    const width = Math.max(left + cols * (cell + 4) + 40, 640);  // room for the title line
    const svg = el('svg', {viewBox: `0 0 ${width} ${height}`, width, height, role: 'img',
                           'font-family': d.font, 'aria-label': fill(d.alt, p, o)});
    svg.style.maxWidth = '100%%';
    svg.style.height = 'auto';
    svg.append(el('text', {x: 10, y: 22, 'font-size': 15, 'font-weight': 'bold', fill: d.ink}, fill(d.subtitle, p, o)));
    for (let c = 0; c < cols; c++) {
      const x = left + c * (cell + 4);
      svg.append(el('text', {x: x + cell / 2, y: top - 8, 'font-size': 12, 'text-anchor': 'middle',
                             fill: c ? d.decode : d.prefill}, c ? 'D' + c : 'P'));
      const first = c ? p + c - 1 : 0;
      for (let r = 0; r <= (c ? first : p - 1); r++) {
        const colour = r < first ? d.cached : (c ? d.decode : d.prefill);
        svg.append(el('rect', {x, y: top + r * cell, width: cell, height: Math.max(cell - 1, 2), rx: 2, fill: colour}));
      }
    }
    svg.append(el('text', {x: 10, y: top + 14, 'font-size': 12, fill: d.muted}, d.positions));
    box.replaceChildren(svg);
  }
  function update() {
    const data = document.querySelector('.pd-sketch-data');
    const figure = document.querySelector('.st-key-sketch_figure [data-testid=stImage], .st-key-sketch_figure img');
    if (!data || !figure) return;
    const d = JSON.parse(data.dataset.sketch);
    const p = thumb('demo_prompt_len'), o = thumb('demo_output_len');
    let box = document.querySelector('.pd-sketch-live');
    if (!box) {
      box = document.createElement('div');
      box.className = 'pd-sketch-live';
      box.hidden = true;
      figure.parentElement.insertBefore(box, figure);
    }
    const dragging = p !== null && o !== null && (p !== d.p || o !== d.o);
    if (dragging && box.dataset.drawn !== p + ',' + o) { draw(box, d, p, o); box.dataset.drawn = p + ',' + o; }
    box.hidden = !dragging;
    figure.style.display = dragging ? 'none' : '';
  }
  window.__prefillDecodeSketch = update;
  new MutationObserver(update).observe(document.body, {subtree: true, childList: true, characterData: true});
  update();
})();
</script>
"""


def _sketch_live(lang: str, prompt_len: int, output_len: int) -> None:
    """The in-page script that makes the sketch follow the length sliders while they move."""
    from lesson.strings import label, strings_for
    from lesson.style import DEFAULT_STYLE

    table, style = strings_for(lang), DEFAULT_STYLE
    data = {"p": prompt_len, "o": output_len, "prefill": style.phase_color("prefill"),
            "decode": style.phase_color("decode"), "cached": style.cached, "ink": style.ink,
            "muted": style.muted_ink, "font": style.font_family,
            "subtitle": label(table, "blocks_subtitle_schematic", p="{p}", o="{o}"),
            "alt": t(lang, "sketch_live_alt"), "positions": t(lang, "sketch_positions")}  # {p} {o}: filled in the page
    # JSON inside a single-quoted attribute: every character that could end it or start markup is escaped
    payload = json.dumps(data, ensure_ascii=True).replace("&", "\\u0026").replace("<", "\\u003c") \
        .replace(">", "\\u003e").replace("'", "\\u0027")
    st.html(SKETCH_LIVE_JS % payload, unsafe_allow_javascript=True)


def section_bottleneck(lang: str, trace_json: str | None, settings: ServerSettings) -> None:
    st.header(t(lang, "sec_bottleneck"), anchor="bottleneck")
    st.markdown(t(lang, "bottleneck_1"))
    st.markdown(markdown_table(t(lang, "bottleneck_table")))
    st.markdown(t(lang, "bottleneck_2"))
    if trace_json is not None:
        live = bottleneck_live_text(RequestTrace.from_json(trace_json), lang)
        if live:
            st.info(live, icon=":material/speed:")
    st.button(t(lang, "show_difference", num_tokens=settings.limits.max_prompt_tokens), key="show_difference",
              icon=":material/compare_arrows:", on_click=state.show_the_difference, args=(settings.limits,),
              help=t(lang, "show_difference_help"))
    # The measurements (roofline, floor vs measured, sweeps, cache on/off, attention) are on their own page.
    st.page_link("app_pages/bottleneck_lab.py", label=t(lang, "lab_link"), icon=":material/speed:")


def section_waits(lang: str, trace_json: str | None) -> None:
    st.header(t(lang, "sec_waits"), anchor="waits")
    st.markdown(t(lang, "waits_1"))
    st.markdown(t(lang, "waits_2"))
    if trace_json is None:
        st.info(t(lang, "no_trace"))
        return
    with error_boundary(lang):
        trace = RequestTrace.from_json(trace_json)
        metric_row(metric_cards(trace, lang))
        st.caption(engine_caption(trace, lang))  # which engine mode and attention kernel ran (issue 10)
        for note in metric_gap_notes(trace, lang):  # the pass times (timeline) beside the waits (cards)
            st.caption(note)
        drawing = page_drawing_note(trace, lang)
        if drawing:
            st.caption(drawing)
    with error_boundary(lang, "err_diagram"):
        figure = resources.latency_figure(trace_json, lang, stepping_full(), classroom=st.session_state.classroom)
        st.plotly_chart(figure, key="latency_chart", width="stretch", config={"displaylogo": False})
        st.caption(t(lang, "latency_caption"))
    live_diagram("latency", trace_json, lang, t(lang, "latency_svg_caption"))


def section_many(lang: str) -> None:
    st.header(t(lang, "sec_many"), anchor="many")
    st.markdown(t(lang, "many_1"))
    st.caption(t(lang, "many_server_note"))
    st.page_link("app_pages/serving_lab.py", label=t(lang, "sl_link"), icon=":material/dns:")  # the serving lab


def section_summary(lang: str) -> None:
    st.header(t(lang, "sec_summary"), anchor="summary")
    with st.container(border=True):
        st.markdown(f"**{t(lang, 'summary')}**")


def section_animation(lang: str, trace_json: str | None) -> None:
    """The looping step-through, with play / pause and a slider that picks the pass to stop on.

    Paused, the figure is a still frame (lesson.diagrams.animation, still=True): the passes up
    to the chosen one on the whole run's axes, that pass framed and its caption shown. Play goes
    on from the pass the slider shows (start_pass), then loops from the start.
    """
    st.header(t(lang, "sec_animation"), anchor="animation")
    if trace_json is None:
        live_diagram("animation", trace_json, lang, t(lang, "animation_caption"))
        return
    total = len(RequestTrace.from_json(trace_json).steps)
    paused = st.session_state.anim_paused
    with st.container(key="anim_controls"):
        st.caption(t(lang, "anim_controls"))
        left, right = st.columns([1, 4], vertical_alignment="bottom")
        left.button(t(lang, "anim_play" if paused else "anim_pause"), key="anim_play_pause", width="stretch",
                    icon=":material/play_arrow:" if paused else ":material/pause:", on_click=_flip_animation)
        step = total
        if total > 1:  # the key names the count: a value left from a longer run never applies
            step = right.select_slider(
                t(lang, "anim_step"), options=list(range(1, total + 1)), value=total, key=f"anim_step_{total}",
                format_func=lambda k: t(lang, "anim_step_value", k=k, n=total), on_change=_pause_animation)
    step = int(step)
    if not paused and step >= total:
        live_diagram("animation", trace_json, lang, t(lang, "animation_caption"))
        return
    with error_boundary(lang, "err_diagram"):
        whole = stepping_full() or trace_json
        svg, alt = _animation_frame(trace_json, whole, step, lang, st.session_state.classroom, paused)
        stem = download_stem(RequestTrace.from_json(whole), st.session_state.trace_stamp)
        svg_figure("animation", svg, lang, t(lang, "animation_caption"), alt=alt,
                   file_stem=f"{stem}_animation_{'pass' if paused else 'from_pass'}{step}")


def _flip_animation() -> None:
    st.session_state.anim_paused = not st.session_state.anim_paused


def _pause_animation() -> None:
    st.session_state.anim_paused = True  # moving the slider stops on the pass it shows


@st.cache_data(show_spinner=False, max_entries=128)
def _animation_frame(trace_json: str, full_json: str, step: int, lang: str, classroom: bool,
                     still: bool) -> tuple[str, str]:
    """(the figure, its alt text), in the classroom style when asked: paused, the still frame
    after pass `step`; playing, the animation starting at pass `step`."""
    from lesson.diagrams.animation import render_animation
    from lesson.views import figure_alt

    trace, full = RequestTrace.from_json(trace_json), RequestTrace.from_json(full_json)
    style = resources.figure_style(classroom)
    if not still:
        svg = render_animation(trace, lang=lang, full=full, style=style, start_pass=step)
        return svg, figure_alt("animation", trace, lang)
    cut = truncate_trace(trace, step)
    svg = render_animation(cut, lang=lang, full=full, still=True, style=style)
    return svg, figure_alt("animation", cut, lang)


def section_references(lang: str) -> None:
    st.header(t(lang, "sec_references"), anchor="references")
    st.markdown("\n".join(f"{i}. {ref}" for i, ref in enumerate(t(lang, "references"), start=1)))


def section_review(lang: str, trace_json: str | None) -> None:
    st.header(t(lang, "sec_review"), anchor="review")
    live_diagram("review_map", trace_json, lang, t(lang, "review_caption"))
    st.markdown(f"*{t(lang, 'next_lesson')}*")

"""The run panel: the prompt, the lengths, the real token split, and Run, which streams.

A finished run is kept in the process's run store (app_support/run_store.py: one frozen StoredRun, with
its repeats' numbers, the page's felt times, its arguments and a time stamp); the session keeps its id
(st.session_state.run_id, one run shared by every page) and adds it to its history. The panel then returns
the RunView the lesson's figures should show: the whole run, or the passes the classroom or the replay has
reached (app_support/stepping.py). A recorded run opened from a file or the gallery
(app_support/gallery.py: open_recorded_trace) is stored the same way; it, and the server's first view
(measured once, the same StoredRun for every visitor), are labelled as recorded (recorded_caption).
"""

from __future__ import annotations

import dataclasses
import datetime
import logging
import time
from contextlib import closing

import streamlit as st

from engine.contract.config import ServerSettings
from engine.contract.prompts import DEFAULT_MAX_PROMPT_TOKENS
from engine.contract.trace import RequestTrace
from engine.contract.worker.client import Done, Pass, Progress, Started
from lesson.answer import answer_text, past_eos_note
from lesson.diagrams.ttft_parts import FeltTimes
from lesson.downloads import download_stem, run_stamp, step_table, trace_csv
from lesson.formats import format_ms, token_split_text
from lesson.inputs import DEFAULT_MODEL_CHOICE, DEFAULT_OUTPUT_LEN, default_prompt
from lesson.messages import error_message
from lesson.perfetto import to_perfetto_json
from lesson.recorded import first_view_note, recorded_note, recorded_stamp, recorded_stem
from lesson.run_words import prefix_note, queue_note, step_log_line, stop_reason_text, trace_summary
from lesson.runs import history_add, keep_pins
from lesson.spread import shown_run
from lesson.text import t

from . import frame, resources, run_store, stepping
from .run_store import RunArgs, RunView, StoredRun
from .ui import error_boundary, felt_source, join_paragraphs

log = logging.getLogger("prefill_decode.app")

UI_REFRESH_S = 0.1  # while the model runs, redraw the answer at most 10 times a second


def figures_run(lang: str, settings: ServerSettings) -> RunView | None:
    """The stored run as the figures show it, read once per page run (the replay's position is read here,
    into st.session_state.replay_shown); None where there is no run to show."""
    run = trace_to_show(lang, settings)
    st.session_state.replay_shown = stepping.replay_step(run)
    return stepping.view_of(run) if run is not None else None


def known_before_run(lang: str, settings: ServerSettings) -> RunView | None:
    """The figures' run when it is known before the run panel is drawn: on a session's first page run (no
    Run button on its screen yet, so none was pressed), nothing asked to run, and that run at hand (stored,
    or a first view this process has measured). Then the first figure can be drawn before the controls:
    a class opening the lesson at once gets it sooner. None otherwise (a cold server measures its first
    view under the run panel, with its loading words)."""
    ss = st.session_state
    if ss.first_screen_drawn or ss.run_requested:
        return None
    if run_store.current() is None and _first_view_args(lang, settings).plain() not in _first_views:
        return None
    return figures_run(lang, settings)


def run_panel(lang: str, lm, settings: ServerSettings, known: RunView | None = None) -> RunView | None:
    """Controls and the live run. Returns the view of the run the diagrams should show. `known`: the figures' run,
    read before the panel (known_before_run: no Run can have been pressed)."""
    st.header(t(lang, "run_title"), anchor="run")
    st.markdown(t(lang, "run_intro"))
    prompt_column = _controls(lang, settings)
    with prompt_column:  # the real token split under the prompt, beside the lengths: a shorter first screen
        preview = _prompt_preview(lang, lm, settings, st.session_state.prompt) if lm is not None else None
    effective = preview[0] if preview else None
    # Off while the prompt cannot run (empty, too long): the message above says why.
    clicked = st.button(t(lang, "run"), key="run", type="primary", icon=":material/play_arrow:",
                        disabled=lm is None or effective is None)
    clicked = clicked or (st.session_state.run_requested and lm is not None and effective is not None)
    clicked = clicked and known is None  # the figures drawn before the panel are this page run's: never a new run
    st.session_state.run_requested = False
    result = st.container(border=True, key="result_box")
    ran = False  # a new run drew its own answer; otherwise the box shows the run the figures show
    if clicked and effective is not None:
        with result, error_boundary(lang):
            ran = _stream_run(lang, lm, current_args(settings, effective), num_prompt_tokens=preview[1],
                              repeats=settings.repeats)
    view = known or figures_run(lang, settings)
    if view is None:
        result.info(t(lang, "no_trace"))
        return None
    with result, error_boundary(lang):
        stale = effective is not None and view.run.args != current_args(settings, effective)
        stale = stale and view.run.origin != "recorded"  # a recorded run is not this page's settings
        _shown_run(lang, view, ran=ran, stale=stale)
    stepping.replay_controls(lang)
    with st.expander(t(lang, "data_title")), error_boundary(lang):
        _data_downloads(lang, view.run)
    return view


def _controls(lang: str, settings: ServerSettings):
    """The prompt box and, beside it, the answer and prompt lengths; returns the prompt's column."""
    limits = settings.limits
    left, right = st.columns([3, 2], gap="large")
    with left:
        st.text_area(t(lang, "prompt"), key="prompt", placeholder=t(lang, "prompt_placeholder"), height=110)
    with right:
        st.slider(t(lang, "output_len"), 1, limits.max_new_tokens, key="output_len", help=t(lang, "output_len_help"))
        st.slider(t(lang, "prompt_len"), 0, limits.max_prompt_tokens, key="prompt_len", help=t(lang, "prompt_len_help"))
        st.checkbox(t(lang, "ignore_eos"), key="ignore_eos", help=t(lang, "ignore_eos_help"))
        st.checkbox(t(lang, "prefix_reuse"), key="prefix_reuse", help=t(lang, "prefix_reuse_help"))
    return left


def _shown_run(lang: str, view: RunView, ran: bool, stale: bool) -> None:
    """The result box for the stored run, as far as `view` goes: the replay's answer so far,
    or the answer (unless a run just drew its own), then its summary and notes."""
    trace, shown = view.whole, view.trace
    if st.session_state.replay_shown is not None:
        _replay_box(lang, shown, len(trace.steps))
    elif not ran:
        _result_box(lang, shown)
    finished, st.session_state.replay_finished = st.session_state.replay_finished, None
    st.caption(join_paragraphs(trace_summary(trace, lang), prefix_note(trace, lang), recorded_caption(view.run, lang),
                               t(lang, "replay_done", total=len(trace.steps)) if finished else None))
    if stale:
        st.info(t(lang, "stale_note"), icon=":material/refresh:")


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
        prefix_cache=bool(ss.prefix_reuse),
    )


def _stream_run(lang: str, lm, args: RunArgs, num_prompt_tokens: int, repeats: int = 1) -> bool:
    """Run the request in the engine worker, drawing Prefill and then each Decode token as its pass
    arrives; the worker then runs the same request `repeats` - 1 more times (engine.runtime.repeats), so the
    headline numbers are medians. While other visitors' runs are ahead in its queue, the page says
    its place; a page rerun or closed meanwhile takes this run out of the queue.

    Returns whether a finished run was stored (and its answer drawn)."""
    cfg = resources.generation_config(args.max_new_tokens, args.temperature, args.top_k, args.top_p, args.seed,
                                      args.ignore_eos)
    if args.prefix_cache:  # this visitor's own kept runs: the session's scope
        cfg = dataclasses.replace(cfg, prefix_cache=True, prefix_scope=st.session_state.prefix_scope)
    place = frame.QueuePlace(lang)
    progress = st.progress(0.0, text=t(lang, "running_prefill", num_positions=num_prompt_tokens))
    answer, log_box = answer_slots()
    clock = FirstTokenClock()
    try:
        runs = _follow_runs(lang, lm, args, cfg, repeats, place, (progress, answer, log_box), clock)
    except Exception:
        answer.empty()  # no half answer left behind: the box shows the run the figures show
        log_box.empty()
        raise
    finally:
        place.slot.empty()
        progress.empty()
    if not runs:
        return False
    trace, numbers = shown_run(runs)  # lesson.spread's one rule: the run nearest the medians, for every view
    felt = clock.felt(runs[0])
    run = StoredRun(trace, args, "measured", run_stamp(datetime.datetime.now()), headline=numbers, felt=felt,
                    first_run=runs[0] if felt is not None and runs[0] is not trace else None)
    store_run(run)
    shown = stepping.view_of(run).trace
    answer_and_log(lang, shown, answer, log_box)
    _done_notes(lang, shown)
    if place.waited:  # the wait was the queue's, before the run: in no time shown
        st.caption(t(lang, "engine_queue_waited", ahead=place.waited))
    if place.shared_note():  # identical runs asked at once: one measurement for all of them
        st.caption(place.shared_note())
    return True


class FirstTokenClock:
    """The page's own times around run 1's first token, on this machine's wall clock (time.time()):
    when the page asked, when the worker began, when the first token reached this process and when the
    page had drawn it (lesson.diagrams.ttft_parts: the visitor's parts of TTFT)."""

    def __init__(self) -> None:
        self.sent_at_s = time.time()
        self.started_at_s: float | None = None  # the worker's Started.at
        self.received_at_s: float | None = None
        self.shown_at_s: float | None = None

    def felt(self, run1: RequestTrace) -> FeltTimes | None:
        """The times, placed against run 1's own clock; None where a part was not seen."""
        engine_start = run1.started_at_s if run1.started_at_s is not None else self.started_at_s
        if None in (engine_start, self.received_at_s, self.shown_at_s) or run1.prefill is None:
            return None
        return FeltTimes(self.sent_at_s, self.received_at_s, self.shown_at_s, engine_start, run1.prefill.end_ms)


def _follow_runs(lang: str, lm, args: RunArgs, cfg, repeats: int, place, slots,
                 clock: FirstTokenClock | None = None) -> tuple[RequestTrace, ...]:
    """Draw the repeated run's events as they come (`slots`: the progress bar, the answer, the log);
    returns every finished run, run 1 first (none if the call ended without them). `clock` notes the
    times around run 1's first token."""
    progress, answer, log_box = slots
    last_draw, clock = 0.0, clock or FirstTokenClock()
    events = resources.stream_runs(lm.ref, args.prompt, cfg, repeats=repeats, max_prompt_tokens=args.max_prompt_tokens)
    with closing(events):  # Streamlit stops a rerun page inside this loop: closing cancels the call in the worker
        for event in events:
            if isinstance(event, Done):
                return tuple(event.result)
            if isinstance(event, Pass):
                first = clock.received_at_s is None
                clock.received_at_s = clock.received_at_s or time.time()
                last_draw = _draw_pass(lang, event.trace, cfg.max_new_tokens, last_draw, slots, repeats)
                clock.shown_at_s = time.time() if first else clock.shown_at_s  # drawn: Streamlit sends it now
            elif isinstance(event, Started):
                clock.started_at_s = event.at
                place(event)
            elif isinstance(event, Progress):
                if repeats > 1:  # each finished run counts on the progress bar
                    progress.progress(event.done / event.total, text=t(lang, "repeats_progress", done=event.done,
                                                                       total=event.total))
            else:
                place(event)  # Queued / Started / Waiting: the queue place, or a redraw
    return ()


def _draw_pass(lang: str, trace: RequestTrace, max_tokens: int, last_draw: float, slots, repeats: int = 1) -> float:
    """Run 1 so far: Prefill at once, then at most every UI_REFRESH_S, its finished pass in full.
    Returns when it last drew. The worker never waits for the page (its passes are timed there);
    the redraw limit keeps this process's work off the cores the worker measures on. With repeats,
    the bar says this is run 1 of them, still measuring (the page then shows the median run)."""
    progress, answer, log_box = slots
    if not trace.finished and len(trace.steps) > 1 and time.perf_counter() - last_draw < UI_REFRESH_S:
        return last_draw
    if not trace.finished:
        done = len(trace.steps)
        words = t(lang, "progress", step=done, num_tokens=done, max_tokens=max_tokens)
        if repeats > 1:
            words = f"{t(lang, 'run_streaming', n=repeats)} {words}"
        progress.progress(min(1.0, done / max_tokens), text=words)
    answer_and_log(lang, trace, answer, log_box, tail=6)
    return time.perf_counter()


def store_run(run: StoredRun) -> None:
    """The run every figure shows from now on: kept in the store, its id the session's, and in its history.
    The first view is one StoredRun shared by every visitor; a recorded run keeps its own UTC time stamp."""
    ss = st.session_state
    ss.run_id = run_store.store().put(run)
    ss.class_step = 1 if ss.classroom else run.num_passes
    # kept for the comparison; the first view, the same for every visitor, is a recorded run there too
    ss.history = history_add(ss.history, run.id, run.stamp, recorded=run.origin != "measured")
    ss.compare_pins = keep_pins(ss.compare_pins, ss.history)  # a pinned run that just left the history
    ss.replay_from = None  # a replay is of the run it started on
    run_store.hold_session_runs()


def open_recorded_trace(trace: RequestTrace, args: RunArgs) -> None:
    """Show a recorded trace (app_support/gallery.py) as the page's run: every figure draws it, labelled as
    recorded, and it joins the history. `args`: what would measure it again here (the prompt and lengths)."""
    store_run(StoredRun(trace, args, "recorded", recorded_stamp(trace.provenance)))


def recorded_caption(run: StoredRun, lang: str) -> str | None:
    """The label of a run shown but not measured for this visitor now: an opened recorded run (its machine,
    device, versions, date), or the server's first view, measured once for every visitor
    (resources.finished_run): recorded at HH:MM on which machine. None for a run this visitor ran."""
    if run.origin == "recorded":
        return recorded_note(run.trace.provenance, lang)
    if run.origin == "first_view":
        return first_view_note(run.trace.provenance, lang)
    return None


def answer_slots():
    """(the answer's slot, the step log's slot): side by side, so the first screen reaches a figure."""
    answer_col, log_col = st.columns([2, 3], gap="large")
    return answer_col.empty(), log_col.empty()


def _result_box(lang: str, trace: RequestTrace) -> None:
    answer_and_log(lang, trace, *answer_slots())
    _done_notes(lang, trace)


def _replay_box(lang: str, shown: RequestTrace, total: int) -> None:
    """The answer as far as the replay has come, under a label that says it is a replay."""
    with st.container(key="replay_box"):  # browser tests read the replay's position here
        st.info(t(lang, "replay_label", shown=len(shown.steps), total=total, ms=format_ms(shown.steps[-1].end_ms)),
                icon=":material/slow_motion_video:")
    answer_and_log(lang, shown, *answer_slots())


def _done_notes(lang: str, trace: RequestTrace) -> None:
    """"Done" and why it stopped, then its notes in one caption (the page sends one message per element)."""
    eos_hint = past_eos = None
    if trace.finished:
        st.success(t(lang, "done", num_tokens=len(trace.steps), stop_reason=stop_reason_text(trace, lang)))
        if trace.stop_reason == "eos" and len(trace.steps) < trace.max_new_tokens:
            eos_hint = t(lang, "eos_hint", num_tokens=len(trace.steps), limit=trace.max_new_tokens,
                         ignore_eos=t(lang, "ignore_eos"))
        past_eos = past_eos_note(trace, lang)  # why the answer turned into unrelated (often English) text
    notes = join_paragraphs(eos_hint, past_eos, queue_note(trace, lang))  # the queue: the engine's wait alone
    if notes:
        st.caption(notes)


def answer_and_log(lang: str, trace: RequestTrace, answer, log_box, tail: int | None = None) -> None:
    """The answer so far in `answer` and the step log in `log_box` (two st.empty slots): while
    streaming, the last `tail` steps; finished and long, the first few and the last few."""
    text = answer_text(trace)  # a classroom step's prefix leaves out the </s> normal mode never shows
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


def trace_to_show(lang: str, settings: ServerSettings) -> StoredRun | None:
    """The session's run; before any run, the default prompt's run in the page's language (one per model and
    process). A run the store no longer keeps (many runs since: run_store) is said in words, and the first
    view shown instead. The bottleneck lab shows the same run."""
    ss = st.session_state
    run = run_store.current()
    if run is not None:
        return run
    if ss.run_id is not None:  # this session's run was dropped from the store
        ss.run_id = None
        st.warning(t(lang, "run_gone"), icon=":material/history:")
    args = _first_view_args(lang, settings)
    try:
        run = resources.finished_run(*args.plain(), settings.repeats)
    except Exception as err:  # noqa: BLE001
        log.warning("default trace failed: %s", err)
        st.error(error_message(err, lang))
        return None
    if len(_first_views) >= FIRST_VIEWS_KEPT:
        _first_views.clear()
    _first_views.add(args.plain())
    store_run(run)
    return run


# The first views this process has measured (their RunArgs.plain()), so a session can tell one is at hand
# without asking for it (known_before_run); bounded, forgotten whole when full (then measured looks again).
_first_views: set[tuple] = set()
FIRST_VIEWS_KEPT = 64  # as many as resources.finished_run keeps


def _first_view_args(lang: str, settings: ServerSettings) -> RunArgs:
    """The first view's request: the default prompt in the page's language, greedy, the lesson's length."""
    return RunArgs(st.session_state.model_choice, settings.device, settings.dtype, default_prompt(lang),
                   min(DEFAULT_OUTPUT_LEN, settings.limits.max_new_tokens), 0.0, 0, 1.0, 0,
                   settings.limits.max_prompt_tokens)


def _data_downloads(lang: str, run: StoredRun) -> None:
    """The step table and the run's files; each file is written when its button is clicked (a callable:
    Streamlit's deferred download), not on every page run of every visitor."""
    trace = run.trace
    st.dataframe(step_table(trace), hide_index=True, width="stretch", height=240)
    stem = download_stem(trace, run.stamp)
    if run.origin == "recorded":  # the file names say it too
        stem = recorded_stem(stem, trace.provenance)
    felt = felt_for(run)
    with st.container(horizontal=True):  # the three files in a row: one block (a message each: test_page_size)
        st.download_button(t(lang, "download_json"), data=trace.to_json, file_name=f"{stem}_trace.json",
                           mime="application/json", key="download_json", on_click="ignore",
                           icon=":material/download:")
        st.download_button(t(lang, "download_csv"), data=lambda: trace_csv(trace), file_name=f"{stem}_steps.csv",
                           mime="text/csv", key="download_csv", on_click="ignore", icon=":material/download:")
        st.download_button(t(lang, "download_perfetto"), data=lambda: to_perfetto_json(trace, felt=felt),
                           file_name=f"{stem}.perfetto.json",
                           mime="application/json", key="download_perfetto", on_click="ignore",
                           icon=":material/download:", help=t(lang, "download_perfetto_help"))


def felt_for(run: StoredRun) -> FeltTimes | None:
    """The page's own times around the first token (FeltTimes), for the run's files: only for a run measured for
    this visitor now whose drawn repeat is run 1, the one the page timed (else the files hold the engine's)."""
    return run.felt if felt_source(run) == "felt" else None

"""The bottleneck lab's engine modes section: where a Decode step's time goes.

Two measurements first (engine/runtime/overhead.py): the operator calls one eager Decode step
issues, and the host time of one tiny call; their product estimates, as a lower bound,
the step's call overhead. Then, on a button press, the prompt the lesson shows runs once
in each mode the learner picked (eager, static, graph, compiled: engine/runtime/runners.py), one
after another, greedy and past end of sequence so every mode writes the same tokens;
all in one queued call of the engine worker. The runs are kept in st.session_state per (model,
prompt, lengths, modes) and drawn by lesson/diagrams/modes.py (SVG) and lesson/charts/modes.py (plotly).
"""

from __future__ import annotations

import datetime

import streamlit as st

from engine.contract.config import ServerSettings
from engine.contract.cost import trace_floors
from engine.contract.trace import ENGINE_MODES, RequestTrace
from engine.contract.worker.client import Progress
from engine.contract.worker.protocol import ModelRef
from lesson.diagrams.modes import headline, mode_summaries, render_modes
from lesson.downloads import download_stem
from lesson.engine_modes import MODES_MAX_NEW_TOKENS, modes_explanations, modes_table, offered_modes
from lesson.formats import escape_markdown, format_ms
from lesson.text import device_label, t

from . import frame, resources
from .ui import error_boundary, plotly_config

MODES_WIDGET_KEYS = tuple(f"modes_pick_{mode}" for mode in ENGINE_MODES)  # one checkbox per mode
RESULTS_KEY = "modes_results"  # {(model, device, dtype, prompt, max prompt tokens, tokens, modes): {...}}
MAX_KEPT = 4  # comparisons kept per session; the oldest goes first


@st.cache_resource(show_spinner=False, max_entries=8)
def decode_ops(model_choice: str, device: str, dtype: str):
    """The operator calls of one eager Decode step of that model (engine.runtime.overhead.DecodeOps), counted
    once, in the engine worker."""
    return resources.client().decode_ops(ModelRef(model_choice, device, dtype))


@st.cache_resource(show_spinner=False, max_entries=4)
def host_us_per_call(device: str) -> float:
    """Microseconds of host time one tiny operator call costs on `device`, measured once per process,
    in the engine worker (the process that runs the model)."""
    return resources.client().host_us_per_call(device)


def engine_modes(lang: str, lm, trace: RequestTrace, settings: ServerSettings) -> None:
    """The section: what the modes are, the call count and its cost, then the comparison."""
    st.subheader(t(lang, "modes_title"), anchor="modes")
    st.markdown(t(lang, "modes_intro"))
    estimate_ms = None
    with error_boundary(lang):
        estimate_ms = _call_overhead(lang, lm)
    with error_boundary(lang):
        _comparison(lang, lm, trace, settings, estimate_ms)


def _call_overhead(lang: str, lm) -> float:
    """Calls per eager Decode step × one call's host cost: the step's call overhead, at least (ms)."""
    ss = st.session_state
    with st.spinner(t(lang, "lab_measuring")):
        ops = decode_ops(ss.model_choice, resources.server_settings().device, resources.server_settings().dtype)
        us = host_us_per_call(lm.device)
    estimate_ms = ops.kernels * us / 1e3
    cards = ((t(lang, "modes_metric_calls"), f"{ops.calls:,}"), (t(lang, "modes_metric_kernels"), f"{ops.kernels:,}"),
             (t(lang, "modes_metric_us"), f"{us:.1f} µs"),
             (t(lang, "modes_metric_estimate"), f"≥ {format_ms(estimate_ms)}"))
    per_row = 2 if ss.classroom else len(cards)  # classroom type: four cards in a row cut their labels at 1024 px
    for row in range(0, len(cards), per_row):
        for column, (name, value) in zip(st.columns(per_row, border=True), cards[row:row + per_row]):
            column.metric(name, value)
    top = ", ".join(f"{escape_markdown(name)} {count}" for name, count in ops.top)
    st.markdown(t(lang, "modes_ops", model=escape_markdown(lm.info.model_id), calls=f"{ops.calls:,}",
                  kernels=f"{ops.kernels:,}", per_layer=f"{ops.per_layer:.0f}", layers=ops.layers, top=top))
    st.markdown(t(lang, "modes_host_us", device=escape_markdown(lm.device), us=f"{us:.1f}"))
    st.markdown(t(lang, "modes_estimate", kernels=f"{ops.kernels:,}", us=f"{us:.1f}", est=format_ms(estimate_ms)))
    return estimate_ms


def _pick_modes(lang: str, lm, settings: ServerSettings) -> tuple[str, ...]:
    """One checkbox per mode offered here; graph is greyed out off CUDA with the reason under it."""
    ss = st.session_state
    offered = offered_modes(lm.device_type, settings, lang)
    st.markdown(f"**{t(lang, 'modes_pick')}**")
    for column, (mode, reason) in zip(st.columns(len(offered)), offered):
        key = f"modes_pick_{mode}"
        if reason is not None and ss.get(key) is not False:
            ss[key] = False  # cannot run here: never checked
        elif not isinstance(ss.get(key), bool):  # first visit, or a forged value: the quick modes ticked,
            ss[key] = mode != "compiled"  # compiled's first run compiles for tens of seconds: the visitor asks for it
        column.checkbox(mode, key=key, disabled=reason is not None, help=t(lang, f"modes_help_{mode}"))
        if reason is not None:
            column.caption(reason)
    if any(mode == "compiled" and reason is None for mode, reason in offered):
        st.caption(_compile_time_words(lang))
    if not settings.compile_mode:
        st.caption(t(lang, "modes_compile_off"))
    return tuple(mode for mode, reason in offered if reason is None and ss.get(f"modes_pick_{mode}"))


def last_compile_s(results: object) -> float | None:
    """Seconds the last compiled runner built in this session took (a trace's engine_setup_ms), if one was."""
    builds = [resources.parsed_trace(entry["runs"]["compiled"]).engine_setup_ms / 1e3
              for entry in (results.values() if isinstance(results, dict) else ())
              if isinstance(entry, dict) and "compiled" in entry.get("runs", {})]
    builds = [s for s in builds if s > 0]
    return builds[-1] if builds else None


def _compile_time_words(lang: str) -> str:
    """What the first compiled run costs: measured on a 2-core CPU, and this session's own last build."""
    words = t(lang, "modes_compile_time")
    last = last_compile_s(st.session_state.get(RESULTS_KEY))
    return words + (" " + t(lang, "modes_compile_time_last", s=f"{last:.0f}") if last is not None else "")


def _comparison(lang: str, lm, trace: RequestTrace, settings: ServerSettings, estimate_ms: float | None) -> None:
    ss = st.session_state
    args = ss.trace_args
    chosen = _pick_modes(lang, lm, settings)
    num_tokens = max(1, min(max(args.max_new_tokens, 2), MODES_MAX_NEW_TOKENS, settings.limits.max_new_tokens))
    key = (args.model_choice, args.device, args.dtype, args.prompt, args.max_prompt_tokens, num_tokens, chosen)
    clicked = st.button(t(lang, "modes_run"), key="modes_run", icon=":material/speed:", disabled=not chosen,
                        help=t(lang, "modes_run_help", prompt_len=trace.prompt_len, num_tokens=num_tokens))
    if not chosen:
        st.caption(t(lang, "modes_none_picked"))
        return
    results = ss.get(RESULTS_KEY)
    if not isinstance(results, dict):
        results = ss[RESULTS_KEY] = {}
    if clicked:
        words = t(lang, "modes_running", modes=", ".join(chosen))
        if "compiled" in chosen:
            words += t(lang, "modes_running_compile")
        with st.spinner(words):
            runs = _run_modes(lang, lm, args.prompt, args.max_prompt_tokens, num_tokens, chosen)
        results.pop(key, None)
        results[key] = {"runs": runs, "when": datetime.datetime.now().strftime("%H:%M:%S")}
        while len(results) > MAX_KEPT:
            results.pop(next(iter(results)))
    entry = results.get(key)
    if entry is None:
        st.caption(t(lang, "modes_not_run"))
        return
    _show(lang, lm, trace, entry, num_tokens, estimate_ms)


def _run_modes(lang: str, lm, prompt: str, max_prompt_tokens: int, num_tokens: int,
               modes: tuple[str, ...]) -> dict[str, str]:
    """The prompt once per mode, one after another in one queued call of the engine worker (no other
    visitor's run between two modes): {mode asked: its trace as JSON}. Greedy and past end of sequence,
    so every mode writes `num_tokens` tokens and the tokens can be compared."""
    place = frame.QueuePlace(lang)
    progress = ModesProgress(lang, st.progress(0.0, text=modes_progress_words(lang, modes, 0)), place, modes)
    try:
        runs = resources.client().modes(lm.ref, prompt, num_tokens=num_tokens, modes=modes,
                                        max_prompt_tokens=max_prompt_tokens, on_event=progress)
    finally:
        place.slot.empty()
        progress.bar.empty()
    return {mode: run.to_json(indent=None) for mode, run in runs.items()}


def modes_progress_words(lang: str, modes: tuple[str, ...], done: int) -> str:
    """"eager measured (1 of 2); now static…": which modes are done and which one runs."""
    if done >= len(modes):
        return t(lang, "modes_progress_done", n=len(modes))
    words = t(lang, "modes_progress", mode=modes[done], i=done + 1, n=len(modes))
    if done:
        words = t(lang, "modes_progress_measured", modes=", ".join(modes[:done])) + words
    return words + (t(lang, "modes_progress_compiles") if modes[done] == "compiled" else "")


class ModesProgress:
    """The `on_event` of the engine modes' call: a bar that says which mode runs now (the worker's
    Progress after each mode), the queue's place otherwise (frame.QueuePlace)."""

    def __init__(self, lang: str, bar, place, modes: tuple[str, ...]) -> None:
        self.lang, self.bar, self.place, self.modes = lang, bar, place, modes

    def __call__(self, event) -> None:
        if isinstance(event, Progress):
            done = min(max(int(event.done), 0), len(self.modes))
            self.bar.progress(done / max(len(self.modes), 1), text=modes_progress_words(self.lang, self.modes, done))
        else:
            self.place(event)


def _floors_ms(lm, trace: RequestTrace) -> tuple[tuple[float, ...] | None, str]:
    """Each step's floor on this machine's measured roofs (the runs are measured here), and its name."""
    spec = resources.device_spec("this", lm.info.device)
    floors = trace_floors(trace, resources.model_shape(lm.ref.choice, lm.ref.device, lm.ref.dtype), spec)
    return tuple(step.floor_ms for step in floors.steps), spec.name


def _show(lang: str, lm, trace: RequestTrace, entry: dict, num_tokens: int, estimate_ms: float | None) -> None:
    from lesson.charts.modes import modes_figure

    ss = st.session_state
    runs = {mode: resources.parsed_trace(run_json) for mode, run_json in entry["runs"].items()}
    first = next(iter(runs.values()))
    floors_ms, device_name = None, ""
    with error_boundary(lang):  # without roofs the figure still shows every step, only no floor
        floors_ms, device_name = _floors_ms(lm, first)
    rows = mode_summaries(runs, floors_ms)
    st.caption(t(lang, "modes_same_run", prompt_len=first.prompt_len, num_tokens=num_tokens, when=entry["when"]))
    st.markdown(f"**{escape_markdown(headline(rows, lang))}**")  # wraps, unlike a plotly title
    st.plotly_chart(modes_figure(runs, floors_ms, lang, classroom=ss.classroom, title=False), key="modes_chart",
                    width="stretch", config=plotly_config(lang))
    st.table(modes_table(rows, lang), hide_index=True)  # a static table wraps: every column stays on screen
    if floors_ms:
        st.caption(t(lang, "modes_floor_source", device=escape_markdown(device_label(device_name, lang))))
    if first.model.random_weights:
        st.caption(t(lang, "random_weights_note"))
    for row in rows:
        if row.note:
            st.warning(escape_markdown(t(lang, "modes_note_fallback", asked=row.asked, ran=row.ran, note=row.note)),
                       icon=":material/warning:")
    for words in modes_explanations(rows, runs, lm.device_type, lang, estimate_ms):
        st.markdown(words)
    svg = render_modes(runs, floors_ms=floors_ms, lang=lang, style=resources.figure_style(ss.classroom))
    stem = download_stem(trace, ss.trace_stamp)
    st.download_button(t(lang, "modes_download"), data=svg, file_name=f"{stem}_modes.svg", mime="image/svg+xml",
                       key="modes_download", on_click="ignore", icon=":material/download:")

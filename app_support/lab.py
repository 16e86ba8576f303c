"""The bottleneck lab page (app_pages/bottleneck_lab.py), part by part.

It shows the run the lesson page shows (the session's stored run, app_support/run_store.py: one
value shared by every page) against the cost model (engine.contract.cost), and measures
what the lesson claims: cache on vs off, one Decode step's attention.
"""

from __future__ import annotations

import streamlit as st

from engine.contract.config import ServerSettings
from engine.contract.cost import DEVICE_SPECS, TORCH_DTYPES, trace_floors
from engine.contract.sweep import Sweep
from engine.contract.trace import RequestTrace
from engine.contract.worker.client import Progress
from lesson.alt_text import cache_compare_alt, cache_compare_caption
from lesson.diagrams import render_roofline, render_step_floors, render_sweep
from lesson.downloads import download_stem
from lesson.formats import escape_markdown, si
from lesson.lab import (
    LAB_DEVICE_SPECS, LAB_DTYPES, lab_agreement_text, lab_cost_table, lab_dtype_rows, lab_prediction_only,
    lab_prediction_text, lab_roofs_are_the_runs, lab_sweep_caption, lab_sweep_kept_text,
)
from lesson.run_words import trace_summary
from lesson.text import device_label, t

from . import frame, modes, resources, run_panel, run_store
from .run_store import StoredRun
from .ui import error_boundary, plotly_config, svg_figure

# Widget keys of this page: app.py writes them back each run so they survive a visit to the lesson.
LAB_WIDGET_KEYS = ("lab_device_spec", "lab_weight_dtype", "lab_kv_dtype", "lab_sweep_kind", "lab_sweep_up_to",
                   *modes.MODES_WIDGET_KEYS)
SWEEP_REPEATS = 5  # timed passes per point, after a warm-up: the median, the spread and its outliers are drawn
SWEEP_BATCH_CONTEXT = 128  # positions each row has cached in the batch sweep
SWEEP_KINDS = ("prefill", "decode-context", "decode-batch")


def bottleneck_lab(lang: str, lm, settings: ServerSettings) -> None:
    st.header(t(lang, "lab_title"), anchor="lab")
    st.markdown(t(lang, "lab_intro"))
    st.page_link("app_pages/lesson.py", label=t(lang, "lab_back_link"), icon=":material/school:")
    if lm is None:
        return
    ss, shown = st.session_state, run_store.current()
    if shown is not None and shown.origin == "first_view" and shown.args.model_choice != ss.model_choice:
        ss.run_id = None  # the page's own first view (no run the visitor asked for) follows the model picked since
    run = run_panel.trace_to_show(lang, settings)  # the lesson's run, or its first view: the same stored value
    if run is None or run.args is None:
        st.info(t(lang, "no_trace"))
        return
    trace = run.trace
    st.caption(t(lang, "lab_shared_run", summary=trace_summary(trace, lang)))
    recorded = run_panel.recorded_caption(run, lang)  # a recorded run, or the server's first view, says so here too
    if recorded:
        st.caption(recorded)
    stem = download_stem(trace, run.stamp)
    floors = None
    if trace.model.model_id != lm.info.model_id:  # the picker changed since the run: its shape is not lm's
        st.info(t(lang, "lab_other_model", run_model=escape_markdown(trace.model.model_id),
                  model=escape_markdown(lm.info.model_id)), icon=":material/refresh:")
    else:
        with error_boundary(lang):
            floors = _prediction(lang, lm, trace)
    if floors is not None:
        _floor_figures(lang, floors, stem)
    if trace.model.model_id == lm.info.model_id:
        modes.engine_modes(lang, lm, run, settings)  # eager / static / graph / compiled: app_support/modes.py
    _sweeps(lang, lm, settings)
    st.subheader(t(lang, "lab_cache_title"), anchor="cache")
    shown = _cache_compare(lang, run, settings, stem)
    if shown is not None:
        _decode_attention(lang, *shown, stem)


def _prediction(lang: str, lm, trace: RequestTrace):
    """The dtype and device knobs, the cost model's table for this run, and what it predicts."""
    st.subheader(t(lang, "lab_prediction_title"), anchor="prediction")
    ran_in = TORCH_DTYPES.get(lm.info.dtype, "fp32")
    ss = st.session_state
    for key, options, default in (("lab_device_spec", LAB_DEVICE_SPECS, "this"),
                                  ("lab_weight_dtype", LAB_DTYPES, ran_in), ("lab_kv_dtype", LAB_DTYPES, ran_in)):
        if ss.get(key) not in options:  # a forged or stale value: back to the default, never an exception
            ss[key] = default if default in options else options[0]
    device_col, weight_col, kv_col = st.columns([2, 1, 1])
    device_col.selectbox(t(lang, "lab_device_spec"), LAB_DEVICE_SPECS, key="lab_device_spec",
                         format_func=lambda k: t(lang, "lab_this_machine") if k == "this" else _spec_name(k),
                         help=t(lang, "lab_device_spec_help"), placeholder=t(lang, "choose_option"))
    weight_col.selectbox(t(lang, "lab_weight_dtype"), LAB_DTYPES, key="lab_weight_dtype",
                         help=t(lang, "lab_dtype_help"), placeholder=t(lang, "choose_option"))
    kv_col.selectbox(t(lang, "lab_kv_dtype"), LAB_DTYPES, key="lab_kv_dtype", help=t(lang, "lab_dtype_help"),
                     placeholder=t(lang, "choose_option"))
    measured_here = ss.lab_device_spec == "this"
    with st.spinner(t(lang, "lab_measuring")):
        spec = resources.device_spec(ss.lab_device_spec, lm.info.device)
    shape = resources.model_shape(lm.ref.choice, lm.ref.device, lm.ref.dtype)  # read in the engine worker
    floors = trace_floors(trace, shape, spec, weight_dtype=ss.lab_weight_dtype, kv_dtype=ss.lab_kv_dtype)
    if measured_here:  # the roofs themselves: a machine busy while it was measured gets low ones
        words_col, button_col = st.columns([3, 1], vertical_alignment="center")
        words_col.caption(t(lang, "lab_this_roofs", bandwidth=si(spec.bandwidth_bytes_per_s),
                            fp32=si(spec.fp32_flops_per_s), bf16=si(spec.bf16_flops_per_s)))
        button_col.button(t(lang, "lab_measure_again"), key="lab_measure_again", icon=":material/refresh:",
                          on_click=resources.measure_again, help=t(lang, "lab_measure_again_help"))
    if measured_here and spec.spec is not None:
        st.caption(t(lang, "lab_vs_datasheet", name=spec.spec.name,
                     copy=f"{spec.bandwidth_bytes_per_s / spec.spec.bandwidth_bytes_per_s:.0%}",
                     matmul=f"{spec.bf16_flops_per_s / spec.spec.bf16_flops_per_s:.0%}"))
    as_run = (ss.lab_weight_dtype, ss.lab_kv_dtype) == (ran_in, ran_in)  # else a preview, not a check
    # The roof rule: the run's times only under the roofs of the machine that measured them, in its dtypes.
    compared = lab_roofs_are_the_runs(trace, ss.lab_device_spec, as_run)
    st.markdown(lab_prediction_text(floors, lang))
    st.table(lab_cost_table(floors, lang, compared=compared), hide_index=True)  # a static table wraps
    st.info(lab_agreement_text(floors, lang, lab_roofs_are_the_runs(trace, ss.lab_device_spec, True), as_run=as_run),
            icon=":material/insights:")
    if not compared:
        st.caption(t(lang, "lab_prediction_only", device=escape_markdown(device_label(floors.device_name, lang))))
    with st.expander(t(lang, "lab_dtype_preview")):
        by_dtype = {d: trace_floors(trace, shape, spec, weight_dtype=d, kv_dtype=ss.lab_kv_dtype) for d in LAB_DTYPES}
        st.table(lab_dtype_rows(by_dtype, lang), hide_index=True)
        st.caption(t(lang, "lab_dtype_note"))
    return floors if compared else lab_prediction_only(floors)  # the figures draw what the roof rule allows


def _spec_name(key: str) -> str:
    return DEVICE_SPECS[key].name


def _floor_figures(lang: str, floors, stem: str) -> None:
    st.subheader(t(lang, "lab_roofline_title"), anchor="roofline")
    st.markdown(t(lang, "lab_roofline_intro"))
    with error_boundary(lang, "err_diagram"):
        from lesson.charts.common import classroom_fonts
        from lesson.charts.lab import roofline_figure, step_floors_figure

        classroom = st.session_state.classroom  # a projector's type: no chart text under the body text
        st.plotly_chart(roofline_figure(floors, lang, classroom=classroom), key="lab_roofline", width="stretch",
                        config=plotly_config(lang))
        st.plotly_chart(classroom_fonts(step_floors_figure(floors, lang), classroom), key="lab_step_floors",
                        width="stretch", config=plotly_config(lang))
        if floors.random_weights:
            st.caption(t(lang, "random_weights_note"))
        _svg_downloads(lang, floors, stem)


def _svg_downloads(lang: str, floors, stem: str) -> None:
    """The same two figures as standalone SVG (as python -m lesson.export writes them)."""
    left, right = st.columns(2)
    for column, name, render in ((left, "roofline", render_roofline), (right, "step_floors", render_step_floors)):
        column.download_button(t(lang, f"lab_download_{name}"), data=render(floors, lang=lang),
                               file_name=f"{stem}_{name}.svg", mime="image/svg+xml", key=f"lab_download_{name}",
                               on_click="ignore", icon=":material/download:")


def sweep_points(kind: str, max_positions: int, settings: ServerSettings) -> tuple[int, ...]:
    """The values a visitor may sweep up to: powers of two within the model and the server's caps."""
    if kind == "decode-batch":
        return tuple(b for b in (1, 2, 4, 8, 16, 32, 64) if b <= settings.sweep_max_batch)
    limit = min(settings.sweep_max_positions, max_positions - (1 if kind == "decode-context" else 0))
    return tuple(v for v in (8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192) if v <= limit)


def _sweeps(lang: str, lm, settings: ServerSettings) -> None:
    """Pick a sweep and how far; run it once (progress bar), then it is kept per model and device."""
    st.subheader(t(lang, "lab_sweep_title"), anchor="sweeps")
    st.markdown(t(lang, "lab_sweep_intro", repeats=SWEEP_REPEATS))
    ss = st.session_state
    if ss.get("lab_sweep_kind") not in SWEEP_KINDS:
        ss.lab_sweep_kind = SWEEP_KINDS[0]
    st.radio(t(lang, "lab_sweep_kind"), SWEEP_KINDS, key="lab_sweep_kind", horizontal=True,
             format_func=lambda k: t(lang, f"lab_sweep_{k.replace('-', '_')}"))
    kind = ss.lab_sweep_kind
    options = sweep_points(kind, lm.info.max_positions, settings)
    if not options:
        st.warning(t(lang, "lab_sweep_none"))
        return
    default = min(options, key=lambda v: abs(v - (64 if kind == "decode-batch" else
                                                   128 if lm.info.random_weights else 512)))
    if ss.get("lab_sweep_up_to") not in options:
        ss.lab_sweep_up_to = default
    if len(options) > 1:
        st.select_slider(t(lang, "lab_sweep_up_to"), options, key="lab_sweep_up_to", help=t(
            lang, "lab_sweep_caps", positions=settings.sweep_max_positions, batch=settings.sweep_max_batch))
    points = tuple(v for v in options if v <= ss.lab_sweep_up_to)
    key = (ss.model_choice, settings.device, settings.dtype, kind, points, SWEEP_REPEATS,  # the model measured: lm
           SWEEP_BATCH_CONTEXT if kind == "decode-batch" else 0)
    store = resources.sweep_store()
    run_col, again_col = st.columns([1, 1])
    clicked = run_col.button(t(lang, "lab_sweep_run", n=len(points)), key="lab_sweep_run",
                             icon=":material/play_arrow:", disabled=key in store.results)
    if key in store.results and again_col.button(  # a kept sweep looks noisy: measure it anew, for everyone
            t(lang, "lab_sweep_again"), key="lab_sweep_again", icon=":material/refresh:",
            help=t(lang, "lab_sweep_again_help", n=len(points), repeats=SWEEP_REPEATS)):
        store.results.pop(key, None)
        clicked = True
    if clicked:
        with error_boundary(lang):
            _run_sweep(lang, lm, kind, points, key, store)
    sweep_json = store.results.get(key)
    if sweep_json is None:
        st.caption(t(lang, "lab_sweep_not_run"))
        return
    _kept_sweep(lang, kind, sweep_json)


def _kept_sweep(lang: str, kind: str, sweep_json: str) -> None:
    """A sweep measured on this server: its figure, its words, when it was measured, its downloads."""
    with error_boundary(lang, "err_diagram"):
        from lesson.charts.common import classroom_fonts
        from lesson.charts.lab import sweep_figure

        sweep = Sweep.from_json(sweep_json)
        st.plotly_chart(classroom_fonts(sweep_figure(sweep, lang), st.session_state.classroom),
                        key=f"lab_sweep_{kind}", width="stretch", config=plotly_config(lang))
        st.caption(lab_sweep_caption(sweep, lang))
        st.caption(lab_sweep_kept_text(sweep, lang))  # when and where: a kept sweep says how old it is
        if sweep.random_weights:
            st.caption(t(lang, "random_weights_note"))
        name = f"prefill-decode_sweep_{kind}_{sweep.model_id.replace(':', '-')}"
        left, right = st.columns(2)
        left.download_button(t(lang, "lab_sweep_download"), data=sweep_json, mime="application/json",
                             file_name=f"{name}.json", key="lab_sweep_download", on_click="ignore",
                             icon=":material/download:")
        right.download_button(t(lang, "lab_sweep_download_svg"), data=render_sweep(sweep, lang=lang),
                              mime="image/svg+xml", file_name=f"{name}.svg", key="lab_sweep_download_svg",
                              on_click="ignore", icon=":material/download:")


def _run_sweep(lang: str, lm, kind: str, points: tuple[int, ...], key: tuple, store) -> None:
    """Measure the sweep in the engine worker (one measured call at a time there: other visitors' runs
    ahead of it are counted on the page), a progress step per point; kept for every visitor."""
    place = frame.QueuePlace(lang)
    bar = st.progress(0.0, text=t(lang, "lab_sweep_running", done=0, total=len(points)))

    def on_event(event) -> None:
        if isinstance(event, Progress):
            bar.progress(event.done / event.total, text=t(lang, "lab_sweep_running", done=event.done,
                                                          total=event.total))
        else:
            place(event)

    try:
        sweep = resources.client().sweep(lm.ref, kind, points, repeats=SWEEP_REPEATS,
                                         batch_context=SWEEP_BATCH_CONTEXT, on_event=on_event)
        store.put(key, sweep.to_json())
    finally:
        place.slot.empty()
        bar.empty()


COMPARE_MAX_NEW_TOKENS = 32  # about a second for both loops on the default model and the lesson's prompt


def _cache_compare(lang: str, run: StoredRun, settings: ServerSettings, stem: str) -> tuple | None:
    """Cache on vs off for the shown run's prompt, once asked for: the figure and its totals.

    Returns (resources.cache_comparison's plain arguments, the answer's token ids), or None.
    """
    trace, args = run.trace, run.args
    num_tokens = min(COMPARE_MAX_NEW_TOKENS, settings.limits.max_new_tokens)
    key = (args.model_choice, args.device, args.dtype, tuple(trace.prompt_ids), num_tokens)
    if st.button(t(lang, "cache_compare"), key="cache_compare", icon=":material/cached:",
                 help=t(lang, "cache_compare_help", num_tokens=num_tokens)):
        st.session_state.cache_compare_for = key  # shown until the run (or its prompt) changes
    if st.session_state.get("cache_compare_for") != key:
        return None
    with error_boundary(lang, "err_diagram"):
        with st.spinner(t(lang, "cache_compare_running")):
            comparison = resources.cache_comparison(*key)
        svg = resources.cache_compare_svg(*key, lang, classroom=st.session_state.classroom)
        svg_figure("cache_compare", svg, lang, cache_compare_caption(comparison, lang),
                   alt=cache_compare_alt(comparison, lang), file_stem=f"{stem}_cache_compare")
        return key, comparison.output_ids
    return None


def _decode_attention(lang: str, key: tuple, output_ids: tuple[int, ...], stem: str) -> None:
    """A Decode step picked on a slider, and what its new position reads from the cache."""
    model_choice, device, dtype, prompt_ids, _ = key
    steps = list(range(1, len(output_ids)))  # D1 .. D(n-1): pass 0 is the Prefill
    if not steps:
        return
    step = steps[0]
    if len(steps) > 1:  # the slider key names the count: a stale value from another length never applies
        step = st.select_slider(t(lang, "attention_step"), options=steps, format_func=lambda k: f"D{k}",
                                key=f"attention_step_{len(steps)}", help=t(lang, "attention_step_help"))
    with error_boundary(lang, "err_diagram"):
        svg, alt = resources.decode_attention_svg(model_choice, device, dtype, prompt_ids, output_ids, step, lang,
                                                  classroom=st.session_state.classroom)
        context = len(prompt_ids) + step - 1  # cached before that step: the prompt and the answer so far
        svg_figure("attention", svg, lang, t(lang, "attention_caption", context=context),
                   alt=alt, file_stem=f"{stem}_attention_D{step}")



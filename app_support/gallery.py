"""Recorded runs on the page: open one from the gallery (assets/gallery/<machine>/index.json, written by
`python -m engine record`) or from an upload, and label it as recorded wherever it is drawn.

    open_panel(lang, "lesson", settings)   a trace becomes the page's run (every lesson figure, the history)
    lab_panel(lang, settings)              the bottleneck lab: a recorded sweep or cache on vs off, drawn here
    serving_panel(lang, settings)          the serving lab: recorded serving runs, policy beside policy

A file is read by engine.contract.recorded.read_recorded: its size against PREFILL_DECODE_RECORDED_MAX_MB, then
UTF-8, bounded JSON, its kind and every value's type; a refusal is one message in the page's language
(lesson.messages), and the page keeps what it showed. Opening happens in the widgets' callbacks, before
the script draws the page, so every section draws the opened run on that same run.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import streamlit as st

from engine.contract.config import ServerSettings
from engine.contract.recorded import (
    GalleryEntry, RecordedComparison, RecordedFileError, gallery_indexes, load_entry, read_index, read_recorded,
)
from engine.contract.serving.trace import ServingRun
from engine.contract.sweep import Sweep
from engine.contract.trace import RequestTrace
from lesson.alt_text import cache_compare_alt
from lesson.charts.lab import sweep_figure
from lesson.diagrams import render_cache_compare, render_sweep
from lesson.formats import escape_markdown
from lesson.lab import lab_sweep_caption
from lesson.messages import code_span, error_message
from lesson.recorded import entries_label, figure_note, recorded_alt, recorded_note, recorded_stem
from lesson.serving_views import figure_alt, findings, metric_records, metrics_alt, run_label
from lesson.slides import run_set_tag, serving_stem
from lesson.text import t

from . import resources, run_panel, run_store, serving
from .ui import error_boundary, metric_dataframe, plotly_config, svg_figure

log = logging.getLogger("prefill_decode.app")

GALLERY_ROOT = Path(__file__).resolve().parents[1] / "assets" / "gallery"
PAGE_KINDS = {"lesson": ("trace",), "lab": ("sweep", "cache_comparison"), "serving": ("serving_run",)}
PAGE_OF = {kind: page for page, kinds in PAGE_KINDS.items() for kind in kinds}  # where each kind opens
SERVING_FIGURES = ("gantt", "batch", "kv")


# --- reading, cached (files are plain values in, the runs' JSON out) ---------------------------

@st.cache_data(show_spinner=False, ttl=300)
def gallery_entries(root: str) -> tuple[GalleryEntry, ...]:
    """Every run of every index under `root`; an unreadable index is skipped (the log says why).
    Read again after five minutes, so a machine's folder recorded meanwhile appears."""
    entries: list[GalleryEntry] = []
    for index in gallery_indexes(Path(root)):
        try:
            entries += read_index(index)
        except RecordedFileError as err:
            log.warning("gallery index %s skipped: %s", index, err)
    return tuple(entries)


@st.cache_data(show_spinner=False, max_entries=32)
def gallery_run(entry: GalleryEntry, limit: int) -> tuple[str, tuple[str, ...]]:
    """(its kind, its runs' JSON) of a gallery entry."""
    recorded = load_entry(entry, limit)
    return recorded.kind, recorded.jsons


@st.cache_data(show_spinner=False, max_entries=8)
def uploaded_run(data: bytes, limit: int) -> tuple[str, tuple[str, ...]]:
    """(its kind, its runs' JSON) of an uploaded file."""
    recorded = read_recorded(data, limit)
    return recorded.kind, recorded.jsons


@st.cache_resource(show_spinner=False, max_entries=16)
def parsed_recorded(kind: str, run_json: str):
    """A recorded sweep or cache comparison parsed once (shared, frozen: never mutate it)."""
    if kind == "sweep":
        return Sweep.from_json(run_json)
    return RecordedComparison.from_dict(json.loads(run_json))


def limit_bytes(settings: ServerSettings) -> int:
    return int(settings.recorded_max_mb * 1e6)


# --- opening: the panel, and its callbacks ---------------------------------------------------

def page_choices(page: str) -> dict[str, tuple[GalleryEntry, ...]]:
    """The gallery's runs this page opens, by "<machine folder>/<name>". A serving run comes with the
    other policies recorded on its machine and scenario, so they open together, policy beside policy."""
    entries = [e for e in gallery_entries(str(GALLERY_ROOT)) if e.kind in PAGE_KINDS[page]]
    if page != "serving":
        return {f"{e.folder.name}/{e.name}": (e,) for e in entries}
    sets: dict[str, tuple[GalleryEntry, ...]] = {}
    for e in entries:
        key = f"{e.folder.name}/serving-{e.fact('scenario', e.name)}"
        sets[key] = (*sets.get(key, ()), e)
    return sets


def open_panel(lang: str, page: str, settings: ServerSettings) -> None:
    """An expander: pick a gallery run and open it, or upload a file; says once what opening did."""
    notice = st.session_state.recorded_notice
    with st.expander(t(lang, "rec_title"), icon=":material/history:", expanded=bool(notice and notice[0] == page)):
        st.markdown(t(lang, "rec_intro"))
        st.caption(t(lang, f"rec_intro_{page}"))
        choices = page_choices(page)
        if choices:
            with st.container(horizontal=True, vertical_alignment="bottom"):  # one block, not three
                st.selectbox(t(lang, "rec_gallery"), list(choices), key=f"rec_pick_{page}",
                             format_func=lambda name: entries_label(choices[name], lang) if name in choices else name,
                             placeholder=t(lang, "choose_option"))
                st.button(t(lang, "rec_open"), key=f"rec_open_{page}", icon=":material/folder_open:",
                          on_click=_open_picked, args=(page, settings))
        else:
            st.caption(t(lang, "rec_gallery_none"))
        st.file_uploader(t(lang, "rec_upload", limit=f"{settings.recorded_max_mb:g}"), type=["json"],
                         key=f"rec_upload_{page}", help=t(lang, "rec_upload_help"), on_change=_open_uploaded,
                         args=(page, settings))
        if notice and notice[0] == page:
            st.session_state.recorded_notice = None  # said once
            (st.success if notice[1] == "success" else st.error)(notice[2])


def _open_picked(page: str, settings: ServerSettings) -> None:
    """The Open button's callback: the picked gallery run (or a scenario's policies), opened on this page."""
    open_gallery_run(page, st.session_state.get(f"rec_pick_{page}"), settings)


def open_gallery_run(page: str, name: object, settings: ServerSettings) -> bool:
    """The gallery run (or a scenario's policies) called `name` ("<machine folder>/<name>", as
    page_choices lists them) opened on `page`, saying so once; False for a name the gallery does not
    have (a link's) or a run refused (its message said). Its name is kept (recorded_names): a link
    to the page names it again."""
    lang = st.session_state.lang
    entries = page_choices(page).get(name) if isinstance(name, str) else None
    if not entries:
        return False
    try:
        loaded = [gallery_run(entry, limit_bytes(settings)) for entry in entries]
        _open(page, loaded[0][0], tuple(j for _, jsons in loaded for j in jsons), settings)
    except Exception as err:  # noqa: BLE001 - a message in the page's language, never a traceback
        _refused(page, err, lang)
        return False
    st.session_state.recorded_names = {**st.session_state.recorded_names, page: name}
    _notice(page, "success", t(lang, "rec_opened", label=escape_markdown(entries_label(entries, lang))))
    return True


def _open_uploaded(page: str, settings: ServerSettings) -> None:
    """The uploader's callback: a new file, read (bounded) and opened on this page; nothing when it was removed."""
    lang, upload = st.session_state.lang, st.session_state.get(f"rec_upload_{page}")
    if upload is None:
        return
    limit = limit_bytes(settings)
    try:
        if upload.size > limit:  # refused before its bytes are read
            raise RecordedFileError("too_large", "upload too large", mb=round(upload.size / 1e6, 2),
                                    limit=round(limit / 1e6, 2))
        kind, jsons = uploaded_run(upload.getvalue(), limit)
        _open(page, kind, jsons, settings)
    except Exception as err:  # noqa: BLE001 - a message in the page's language, never a traceback
        _refused(page, err, lang)
        return
    _notice(page, "success", t(lang, "rec_opened", label=code_span(Path(upload.name).name[:80])))


def _open(page: str, kind: str, jsons: tuple[str, ...], settings: ServerSettings) -> None:
    """Show the run(s) on `page`; RecordedFileError("wrong_kind") for a kind another page opens."""
    if kind not in PAGE_KINDS[page]:
        raise RecordedFileError("wrong_kind", f"a {kind} opens on the {PAGE_OF[kind]} page", kind=kind,
                                expected=PAGE_OF[kind])
    ss = st.session_state
    ss.recorded_names = {**ss.recorded_names, page: None}  # a gallery run sets its name after this
    if page == "lesson":
        trace = RequestTrace.from_json(jsons[0])  # the file's edge: parsed once, then kept as a value
        if trace.prompt_len > settings.limits.max_prompt_tokens:  # the labs measure the shown run's prompt again
            raise RecordedFileError("over_cap", "the prompt is over this server's cap", n=trace.prompt_len,
                                    limit=settings.limits.max_prompt_tokens)
        run_panel.open_recorded_trace(trace, rerun_args(trace, settings))
    elif page == "lab":
        run_store.keep("recorded_lab", run_store.RecordedLab(kind, parsed_recorded(kind, jsons[0])))
    else:  # the file's edge: parsed once, then kept as values
        run_store.keep("recorded_serving", run_store.ServingSet(tuple(ServingRun.from_json(j) for j in jsons), jsons))


def rerun_args(trace, settings: ServerSettings) -> run_panel.RunArgs:
    """What would measure a recorded trace again here: its prompt and sampling, on the page's model,
    within this server's limits (the labs' cache on/off and engine modes use these)."""
    s = trace.sampling
    return run_panel.RunArgs(
        st.session_state.model_choice, settings.device, settings.dtype, trace.prompt,
        min(trace.max_new_tokens, settings.limits.max_new_tokens), s.temperature, s.top_k, s.top_p, s.seed,
        settings.limits.max_prompt_tokens)


def _refused(page: str, err: Exception, lang: str) -> None:
    log.info("recorded run refused on %s: %s", page, err)
    _notice(page, "error", error_message(err, lang))


def _notice(page: str, kind: str, text: str) -> None:
    st.session_state.recorded_notice = (page, kind, text)


def _close(key: str) -> None:
    st.session_state[key] = None


# --- the labs' recorded runs --------------------------------------------------------------------

def lab_panel(lang: str, settings: ServerSettings) -> None:
    """The bottleneck lab's recorded runs: open one, then a recorded sweep or cache on vs off drawn here."""
    open_panel(lang, "lab", settings)
    shown = run_store.kept_of(run_store.RecordedLab, "recorded_lab")
    if shown is None:
        return
    with error_boundary(lang, "err_diagram"):
        if shown.kind == "sweep":
            _recorded_sweep(lang, shown.value)
        else:
            _recorded_comparison(lang, shown.value)
    st.button(t(lang, "rec_close"), key="rec_close_lab", on_click=_close, args=("recorded_lab",))


def _recorded_sweep(lang: str, sweep: Sweep) -> None:
    prov, classroom = sweep.provenance, st.session_state.classroom
    st.subheader(t(lang, "rec_sweep_title"))
    st.markdown(recorded_note(prov, lang))
    st.plotly_chart(sweep_figure(sweep, lang), key="rec_sweep_chart", width="stretch", config=plotly_config(lang))
    caption = lab_sweep_caption(sweep, lang)
    st.caption(caption)
    svg = render_sweep(sweep, lang=lang, style=resources.figure_style(classroom))
    stem = f"prefill-decode_sweep_{sweep.kind}_{sweep.model_id.replace(':', '-')}"
    svg_figure("rec_sweep", svg, lang, figure_note(prov, lang), file_stem=recorded_stem(stem, prov),
               alt=recorded_alt(t(lang, "rec_sweep_alt", kind=sweep.kind, model=sweep.model_id, n=len(sweep.points)),
                                prov, lang))


def _recorded_comparison(lang: str, recorded: RecordedComparison) -> None:
    prov, comparison = recorded.provenance, recorded.comparison
    st.subheader(t(lang, "rec_cache_title"))
    st.markdown(recorded_note(prov, lang))
    svg = render_cache_compare(comparison, lang=lang, model_id=recorded.model_id,
                               style=resources.figure_style(st.session_state.classroom))
    # not lesson.alt_text.cache_compare_caption: it says "measured on this machine", and this run was not
    svg_figure("rec_cache_compare", svg, lang, figure_note(prov, lang),
               alt=recorded_alt(cache_compare_alt(comparison, lang), prov, lang),
               file_stem=recorded_stem("prefill-decode_cache_compare", prov))


def serving_panel(lang: str, settings: ServerSettings) -> None:
    """The serving lab's recorded runs: open some, then their table and figures, each labelled."""
    open_panel(lang, "serving", settings)
    shown = run_store.kept_of(run_store.ServingSet, "recorded_serving")
    if shown is None:
        return
    with error_boundary(lang, "err_diagram"):
        _recorded_serving(lang, shown)
    st.button(t(lang, "rec_close"), key="rec_close_serving", on_click=_close, args=("recorded_serving",))


def _recorded_serving(lang: str, shown: run_store.ServingSet) -> None:
    classroom, runs = st.session_state.classroom, list(shown.runs)
    st.subheader(t(lang, "rec_serving_title"))
    st.markdown(recorded_note(runs[0].provenance, lang))
    for line in findings(runs, lang):
        st.markdown("- " + line)
    metric_dataframe(metric_records(runs, lang))
    prov, tag = runs[0].provenance, run_set_tag(shown.jsons)  # download names: scenario, run set, policy, figure
    svg_figure("rec_serving_metrics", serving.metrics_svg(shown, lang, classroom), lang, figure_note(prov, lang),
               alt=recorded_alt(metrics_alt(runs, lang), prov, lang),
               file_stem=recorded_stem(serving_stem(runs[0], "metrics", tag), prov))
    tabs = st.tabs([t(lang, f"sl_tab_{figure}") for figure in SERVING_FIGURES])
    for tab, figure in zip(tabs, SERVING_FIGURES):
        with tab:
            for k, run in enumerate(runs):
                st.markdown(f"**{escape_markdown(run_label(run, lang))}**")
                svg_figure(f"rec_serving_{figure}_{k}", serving.serving_svg(figure, shown, k, lang, classroom), lang,
                           figure_note(run.provenance, lang), alt=recorded_alt(figure_alt(figure, run, lang),
                                                                               run.provenance, lang),
                           file_stem=recorded_stem(serving_stem(run, figure, tag), run.provenance))

"""Runs kept in the session, compared: pick two, and see them in one table and on the same axes.

Every finished run joins st.session_state.history (lesson.runs, at most HISTORY_LIMIT, newest
first; app_support/run_panel.py adds it); the visitor pins two (`compare_pins`), and each figure
draws both on the axes of the larger (lesson.runs.shared_extent). A recorded run (opened from a file or
the gallery, or the server's first view) is labelled as recorded in the picker, the alt texts and the
download names (lesson.recorded), so it can be pinned beside a live run.
"""

from __future__ import annotations

import functools

import streamlit as st

from lesson.diagrams import DIAGRAMS
from lesson.formats import escape_markdown
from lesson.layout import figures_per_row
from lesson.recorded import history_label, recorded_alt, recorded_stem
from lesson.runs import HISTORY_LIMIT, HistoryEntry, compare_table, keep_pins, run_label, shared_extent
from lesson.text import t

from . import resources, run_store
from .run_store import StoredRun
from .ui import error_boundary, svg_figure

COMPARE_FIGURES = (("timeline", "compare_fig_timeline"), ("latency", "compare_fig_latency"),
                   ("kv_growth", "compare_fig_kv"))


@functools.lru_cache(maxsize=64)
def _history_label(run: StoredRun, stamp: str, lang: str, number: int) -> str:
    return run_label(run.trace, stamp, lang, number)


@functools.lru_cache(maxsize=32)
def _shared_extent(a: StoredRun, b: StoredRun) -> StoredRun:
    """Both runs' axes in one (lesson.runs.shared_extent), as a run whose trace every figure pair is drawn on."""
    return StoredRun(shared_extent(a.trace, b.trace), None, "measured", "")


@functools.lru_cache(maxsize=128)
def compare_svg(name: str, run: StoredRun, extent: StoredRun, lang: str, classroom: bool) -> str:
    """One figure of a compared run on the pair's shared axes."""
    return DIAGRAMS[name](run.trace, lang=lang, full=extent.trace, style=resources.figure_style(classroom))


def kept_history() -> list[tuple[HistoryEntry, StoredRun]]:
    """The session's history with each entry's stored run, those the store still keeps."""
    kept = [(entry, run_store.store().get(entry.stored_id)) for entry in st.session_state.history]
    return [(entry, run) for entry, run in kept if run is not None]


def section_compare(lang: str) -> None:
    """The session's last runs; two pinned ones side by side, every figure on shared axes."""
    st.header(t(lang, "sec_compare"), anchor="compare")
    st.markdown(t(lang, "compare_intro", limit=HISTORY_LIMIT))
    kept = kept_history()
    history, runs = [entry for entry, _ in kept], {entry.run_id: run for entry, run in kept}
    if len(history) < 2:
        st.info(t(lang, "compare_need_two", count=len(history)), icon=":material/compare:")
        return
    # a recorded run (a file, the gallery, the first view) is labelled with when it was measured, not a clock
    labels = {e.run_id: history_entry_label(
        e, runs[e.run_id], _history_label(runs[e.run_id], "" if e.recorded else e.stamp, lang, e.number), lang)
        for e in history}
    pinned = _pick(lang, history, labels)
    if len(pinned) < 2:
        st.caption(t(lang, "compare_pick_two"))
        return
    pinned_runs = [runs[e.run_id] for e in pinned]
    with error_boundary(lang):
        st.markdown(f"**{t(lang, 'compare_table_title')}**")
        st.dataframe(compare_table(pinned_runs[0].trace, pinned_runs[1].trace, lang), hide_index=True,
                     width="stretch")
        st.caption(t(lang, "compare_same_axes"))
        extent = _shared_extent(*pinned_runs)
    for name, title in COMPARE_FIGURES:
        st.subheader(t(lang, title))
        _figure_pair(lang, name, list(zip(pinned, pinned_runs)), labels, extent)


def entry_words(lang: str, entry: HistoryEntry, run: StoredRun, alt: str, stem: str) -> tuple[str, str]:
    """(alt text, download stem) of a history run's figure, labelled when the run is recorded."""
    if not entry.recorded:
        return alt, stem
    provenance = run.trace.provenance
    return recorded_alt(alt, provenance, lang), recorded_stem(stem, provenance)


def history_entry_label(entry: HistoryEntry, run: StoredRun, label: str, lang: str) -> str:
    """A history run's label in the picker, marked "recorded <when>" when it is."""
    return history_label(label, run.trace.provenance, lang) if entry.recorded else label


def _pick(lang: str, history: list, labels: dict[str, str]) -> list:
    """The picker of (at most two) runs; returns the pinned history entries, in pin order."""
    ss = st.session_state
    kept = keep_pins(ss.compare_pins, history)
    if kept != ss.compare_pins:  # a pinned run left the history with this page's run (written only then)
        ss.compare_pins = kept
    st.multiselect(t(lang, "compare_pick"), list(labels), key="compare_pins", max_selections=2,
                   format_func=labels.__getitem__, help=t(lang, "compare_pick_help"),
                   placeholder=t(lang, "compare_placeholder"), select_all=False)  # Streamlit's own words are English
    return [e for pin in ss.compare_pins for e in history if e.run_id == pin]


def _figure_pair(lang: str, name: str, pinned: list, labels: dict[str, str], extent: StoredRun) -> None:
    """One figure of both runs: side by side only where both keep readable labels in half the column
    (lesson.layout.figures_per_row; the lesson's figures are too wide for it), else one above the
    other, their shared time axes aligned. Classroom type: always one above the other."""
    classroom = st.session_state.classroom
    svgs = {}
    for run, (_, stored) in zip(("cmp_run_a", "cmp_run_b"), pinned):
        with error_boundary(lang, "err_diagram"):
            svgs[run] = compare_svg(name, stored, extent, lang, classroom)
    side_by_side = not classroom and len(svgs) == 2 and figures_per_row(list(svgs.values())) == 2
    places = st.columns(2) if side_by_side else (st.container(), st.container())
    for run, (entry, stored), place in zip(("cmp_run_a", "cmp_run_b"), pinned, places):
        if run not in svgs:
            continue
        with place, error_boundary(lang, "err_diagram"):
            view = run_store.whole_view(stored)  # its stamp is its history entry's (run_panel.store_run)
            alt, stem = entry_words(lang, entry, stored, *resources.diagram_words(name, view, lang))
            words = escape_markdown(labels[entry.run_id])
            svg_figure(f"compare_{name}_{run[-1]}", svgs[run], lang,
                       t(lang, "compare_run_caption", run=t(lang, run), label=words),
                       alt=t(lang, "compare_alt", run=t(lang, run), alt=alt), file_stem=stem)

"""Where each pass's time goes, under the timeline: the run shown and a long prompt, each pass as its floor on
this machine's measured roofs (engine.contract.cost through the worker, as the bottleneck lab reads them) plus
the rest (lesson.pass_floors, lesson.diagrams.pass_floors). The long prompt is this visitor's latest long run
measured here (e.g. "show the difference": 1024 tokens), else the gallery's recorded run of the lesson's example
at 1024 tokens (assets/gallery/<device>/lesson-<lang>-1024.json): the first screen shows the contrast without
measuring a second, long request for every visitor.
"""

from __future__ import annotations

import functools
import logging
from pathlib import Path

import streamlit as st

from engine.contract.cost import TraceFloors, trace_floors
from engine.contract.recorded import RecordedFileError, gallery_indexes, load_entry, read_index
from engine.contract.trace import RequestTrace
from lesson.alt_text import with_run_note
from lesson.diagrams.pass_floors import FloorGroup, pass_floors_alt, render_pass_floors
from lesson.pass_floors import RunFloors, run_floors
from lesson.recorded import recorded_when
from lesson.text import t

from . import resources, run_store
from .ui import svg_figure

log = logging.getLogger(__name__)
LONG_PROMPT_TOKENS = 1024  # the gallery's long lesson run (and "show the difference"'s length)
LONG_FROM = 256  # a run shown with at least this many prompt positions is its own long prompt


def _trace_floors(trace: RequestTrace) -> TraceFloors | None:
    """Every pass of `trace` against this machine's measured roofs, or None where they cannot be had (the
    worker cannot measure them, or the model selected now is not the run's)."""
    ss = st.session_state
    try:
        settings = resources.server_settings()
        shape = resources.model_shape(ss.model_choice, settings.device, settings.dtype)
        spec = resources.device_spec("this", trace.model.device)
    except Exception as err:  # noqa: BLE001  (no floors: the figures and caption read as without them)
        log.warning("no floors for the first figure: %s", err)
        return None
    if (shape.num_layers, shape.hidden_size) != (trace.model.num_layers, trace.model.hidden_size):
        return None  # another model is selected now: its shape is not the run's
    return trace_floors(trace, shape, spec)


def shown_floors(trace: RequestTrace) -> tuple[RunFloors, str] | None:
    """(the run's Prefill and median Decode step against this machine's measured roofs, the roofs' name)."""
    floors = _trace_floors(trace)
    passes = run_floors(floors, trace.model.device) if floors is not None else None
    return (passes, floors.device_name) if passes is not None else None


def step_floors_ms(trace: RequestTrace) -> tuple[float, ...] | None:
    """Each pass's floor by step index (the timeline draws it over the pass's bar), or None."""
    floors = _trace_floors(trace)
    return tuple(step.floor_ms for step in floors.steps) if floors is not None else None


GALLERY_ROOT = Path(__file__).resolve().parents[1] / "assets" / "gallery"  # as app_support/gallery.py's


@functools.lru_cache(maxsize=8)
def _recorded_long_run(lang: str, device: str, max_bytes: int) -> RequestTrace | None:
    """The gallery's recorded long run of the lesson's example on `device`, parsed once per process, or None.
    Read here, not through app_support.gallery (which the run panel imports): the gallery's files, read the
    same way."""
    name = f"lesson-{lang}-{LONG_PROMPT_TOKENS}"
    for index in gallery_indexes(GALLERY_ROOT):
        try:
            entries = read_index(index)
        except RecordedFileError as err:
            log.warning("gallery index %s skipped: %s", index, err)
            continue
        for entry in entries:
            if entry.name == name and entry.kind == "trace" and entry.folder.name == device:
                return load_entry(entry, max_bytes).run
    return None


def _recorded_long(lang: str, trace: RequestTrace) -> RequestTrace | None:
    """The gallery's recorded long run of the lesson's example on this device and model, or None."""
    max_bytes = int(resources.server_settings().recorded_max_mb * 1e6)
    long = _recorded_long_run(lang, trace.model.device, max_bytes)
    return long if long is not None and long.model.model_id == trace.model.model_id else None


def _measured_long(trace: RequestTrace) -> tuple[RequestTrace, int] | None:
    """(this session's latest long run measured here on the shown run's model, its number), or None."""
    for entry in st.session_state.history:  # newest first
        run = run_store.store().get(entry.stored_id)
        if entry.recorded or not isinstance(run, run_store.StoredRun):
            continue
        if run.trace.prompt_len >= LONG_FROM and run.trace.decode_steps and run.trace.model == trace.model:
            return run.trace, entry.number
    return None


def _long_group(lang: str, trace: RequestTrace) -> FloorGroup | None:
    """The long prompt beside a short run: measured here by this visitor, else the gallery's recording."""
    measured = _measured_long(trace)
    long = measured[0] if measured else _recorded_long(lang, trace)
    long_floors = shown_floors(long) if long is not None else None
    if long is None or long_floors is None:
        return None
    if measured:
        return FloorGroup(t(lang, "pf_group_long_measured", n=long.prompt_len, k=measured[1]), long_floors[0])
    provenance = long.provenance
    machine, when = (provenance.machine, recorded_when(provenance)) if provenance else ("?", "?")
    return FloorGroup(t(lang, "pf_group_long", n=long.prompt_len, machine=machine, when=when), long_floors[0])


def floor_groups(lang: str, trace: RequestTrace, floors: RunFloors) -> tuple[FloorGroup, ...]:
    """The run shown and, beside a short one, a long prompt (its passes on the same roofs)."""
    groups = [FloorGroup(t(lang, "pf_group_run", n=floors.prefill.num_positions), floors)]
    long = _long_group(lang, trace) if trace.prompt_len < LONG_FROM else None
    return tuple(groups + ([long] if long else []))


def floors_figure(lang: str, trace: RequestTrace, floors: RunFloors, device_name: str, run_note: str,
                  stem: str) -> None:
    """The figure under the timeline, with its alt text and download."""
    groups = floor_groups(lang, trace, floors)
    svg = render_pass_floors(groups, lang=lang, style=resources.figure_style(st.session_state.classroom),
                             device_name=device_name, run_note=run_note)
    alt = with_run_note(pass_floors_alt(groups, lang), run_note)
    caption = t(lang, "pf_caption")
    if len(groups) > 1 and _measured_long(trace) is None:  # the long prompt is the recording: say how to measure
        limit = resources.server_settings().limits.max_prompt_tokens
        caption += ("" if lang == "zh" else " ") + t(lang, "pf_caption_recorded",
                                                     button=t(lang, "show_difference", num_tokens=limit))
    svg_figure("pass_floors", svg, lang, caption, alt=alt, file_stem=f"{stem}_pass_floors")

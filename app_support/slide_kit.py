"""The slide kit's download buttons: every figure of the run shown (the lesson page) or of the serving
runs shown (the serving lab) in one zip of SVGs, projector PNGs and an offline slides.html (lesson/slides.py).

The zip is built only when the button is clicked: Streamlit calls the button's `data` then, on a
thread of its own, outside the page's script (drawing fifteen PNGs takes seconds, and a page run
must not pay for that each time). So the callable holds plain values only (the run's JSON, the
language, the style) and never touches the session.
"""

from __future__ import annotations

import functools
import logging

import streamlit as st

from engine.contract.format_runs import FormatRuns
from engine.contract.serving.trace import ServingRun
from engine.contract.trace import RequestTrace
from lesson.answer import answer_text
from lesson.spread import run_label
from lesson.diagrams.serving_gantt import policy_label, scenario_label
from lesson.slides import (
    PNG_WIDTH, format_slides, lesson_slides, run_set_tag, safe_name, serving_slides, slide_kit, stamp_words, svg_to_png,
)
from lesson.style import DEFAULT_STYLE, classroom_style
from lesson.svgtext import visible
from lesson.text import t

from . import pass_floors, run_store

log = logging.getLogger("prefill_decode.app")

QUOTE_CHARS = 60  # the prompt and answer on the title slide keep at most this many characters


@functools.cache
def png_problem() -> str | None:
    """Why this server cannot draw PNGs (CairoSVG or the system's cairo library missing), or None."""
    try:
        import cairosvg  # noqa: F401 - loads the system's cairo library
    except (ImportError, OSError) as err:
        log.warning("slide kit without PNGs: %s", err)
        return type(err).__name__
    return None


def _quote(text: str) -> str:
    shown = " ".join(visible(text).split())
    return shown if len(shown) <= QUOTE_CHARS else shown[: QUOTE_CHARS - 1] + "…"


def _zip(slides, lang: str, title: str, subtitle: str) -> bytes:
    """The zip with PNGs where this server can draw them; if drawing fails, without them (logged)."""
    if png_problem() is None:
        try:
            return slide_kit(slides, lang=lang, title=title, subtitle=subtitle, rasterize=svg_to_png)
        except Exception:  # noqa: BLE001 - a figure cairo cannot draw must not lose the whole download
            log.exception("slide kit: PNGs failed, zipping the SVGs alone")
    return slide_kit(slides, lang=lang, title=title, subtitle=subtitle, rasterize=None)


@functools.lru_cache(maxsize=4)
def lesson_zip(trace: RequestTrace, lang: str, run_name: str, classroom: bool, sketch: tuple[int, int],
               when: str, run_note: str = "", floors_ms: tuple[float, ...] | None = None) -> bytes:
    """Every lesson figure of the run `trace` (the whole run, in the page's style); `run_note`: which
    repeat it is, as the page's figures say it (lesson.spread.run_label); `floors_ms`: each pass's floor,
    drawn by the timeline as on the page (app_support.pass_floors.step_floors_ms)."""
    style = classroom_style() if classroom else DEFAULT_STYLE
    slides = lesson_slides(trace, lang=lang, run_name=run_name, style=style, sketch=sketch, run_note=run_note,
                           floors_ms=floors_ms)
    answer = answer_text(trace)  # as the page shows it: special tokens such as </s> left out
    subtitle = t(lang, "kit_deck_subtitle", prompt=_quote(trace.prompt), answer=_quote(answer),
                 model=trace.model.model_id, when=stamp_words(when))  # a date and time, not the file stamp
    return _zip(slides, lang, t(lang, "kit_deck_title"), subtitle)


@functools.lru_cache(maxsize=4)
def serving_zip(run_jsons: tuple[str, ...], lang: str, classroom: bool) -> bytes:
    """The serving lab's figures of these runs (one per policy, one workload)."""
    runs = [ServingRun.from_json(j) for j in run_jsons]
    style = classroom_style() if classroom else DEFAULT_STYLE
    slides = serving_slides(runs, lang=lang, tag=run_set_tag(run_jsons), style=style)
    policies = ", ".join(policy_label(lang, r.settings.policy) for r in runs)
    subtitle = t(lang, "kit_deck_serving_subtitle", scenario=scenario_label(lang, runs[0].scenario),
                 policies=policies, model=runs[0].model.model_id)
    return _zip(slides, lang, t(lang, "kit_deck_serving_title"), subtitle)


@functools.lru_cache(maxsize=4)
def formats_zip(runs: FormatRuns, lang: str, classroom: bool) -> bytes:
    """The weight formats' figures of one run (frozen, so it keys the cache)."""
    style = classroom_style() if classroom else DEFAULT_STYLE
    subtitle = t(lang, "kit_deck_formats_subtitle", model=runs.embedded.model_id, cpu=runs.cpu,
                 when=runs.recorded_at[:16].replace("T", " ") + " UTC")
    return _zip(format_slides(runs, lang=lang, style=style), lang, t(lang, "kit_deck_formats_title"), subtitle)


def formats_button(lang: str, runs: FormatRuns) -> None:
    """The quantization section's "all figures for slides" download, for the run it shows (one with the figures)."""
    if not format_slides(runs, lang=lang):
        return
    data = functools.partial(formats_zip, runs, lang, bool(st.session_state.classroom))
    st.download_button(t(lang, "kit_download"), data=data, file_name=f"prefill-decode_weight-formats_slides_{lang}.zip",
                       mime="application/zip", key="kit_download_formats", on_click="ignore",
                       icon=":material/slideshow:", help=t(lang, "kit_download_formats_help", width=PNG_WIDTH))
    _png_note(lang)


def run_number(run_id: str) -> int | None:
    """The shown run's number in this session's history (lesson.runs.HistoryEntry.number), if it is there."""
    for entry in st.session_state.history:
        if entry.stored_id == run_id:
            return entry.number
    return None


def lesson_button(lang: str) -> None:
    """The lesson page's "all figures for slides" download, for the whole run the page shows."""
    ss, run = st.session_state, run_store.current()  # the whole stored run, whatever the classroom's step
    if run is None:
        return
    number = run_number(run.id)
    run_name = f"run{number}" if number else "run"
    sketch = (int(ss.demo_prompt_len), int(ss.demo_output_len))
    run_note = run_label(run.headline, lang)  # the page's figures say it too
    floors_ms = pass_floors.step_floors_ms(run.trace)  # the timeline's, as on the page
    data = functools.partial(lesson_zip, run.trace, lang, run_name, bool(ss.classroom), sketch, run.stamp,
                             run_note, floors_ms)
    st.download_button(t(lang, "kit_download"), data=data, file_name=f"prefill-decode_{run_name}_slides_{lang}.zip",
                       mime="application/zip", key="kit_download", on_click="ignore", icon=":material/slideshow:",
                       help=t(lang, "kit_download_help", width=PNG_WIDTH))
    _png_note(lang)


def serving_button(lang: str, runs: list[ServingRun], run_jsons: tuple[str, ...]) -> None:
    """The serving lab's "all figures for slides" download, for the runs it shows (`runs`: `run_jsons` parsed)."""
    if not run_jsons:
        return
    name = f"prefill-decode_serving_{safe_name(runs[0].scenario)}_{run_set_tag(run_jsons)}_slides_{lang}.zip"
    data = functools.partial(serving_zip, tuple(run_jsons), lang, bool(st.session_state.classroom))
    st.download_button(t(lang, "kit_download"), data=data, file_name=name, mime="application/zip",
                       key="kit_download_serving", on_click="ignore", icon=":material/slideshow:",
                       help=t(lang, "kit_download_serving_help", width=PNG_WIDTH))
    _png_note(lang)


def _png_note(lang: str) -> None:
    problem = png_problem()
    if problem is not None:
        st.caption(t(lang, "kit_no_png", why=problem))

"""Recorded runs in the app: the server's first view says it was recorded (when, on which machine); a
gallery run or an uploaded file opens, drawn by the same figures and labelled as recorded wherever it
appears, and can be pinned beside a live run; a malformed or hostile file is one message in the page's
language and the page keeps what it showed."""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from app_support.gallery import GALLERY_ROOT
from engine.contract.recorded import RecordedFileError, gallery_indexes, load_entry, read_index
from lesson.messages import error_message
from lesson.recorded import figure_note, first_view_note, recorded_note
from lesson.text import t
from tests.app.apptest import (
    APP, LAB, SERVING_LAB, assert_healthy, needs_model, read_on, shown_trace, stored_run, texts,
)
from tests.factories import make_run, make_trace

ENTRIES = {f"{e.folder.name}/{e.name}": e for index in gallery_indexes(GALLERY_ROOT) for e in read_index(index)}


@pytest.fixture
def app(monkeypatch):
    monkeypatch.setenv("PREFILL_DECODE_MAX_PROMPT_TOKENS", "1024")
    monkeypatch.setenv("PREFILL_DECODE_RECORDED_MAX_MB", "0.2")  # the 1024-token traces fit, a 300 KB file does not
    return AppTest.from_file(APP, default_timeout=300).run()


def images(at) -> list[str]:
    """Each figure's alt text, once: the timeline is drawn twice (wide, and for a phone's column; CSS shows one)."""
    alts = [img.proto.imgs[0].alt for img in at.get("image")]
    return [alt for i, alt in enumerate(alts) if i == 0 or alt != alts[i - 1]]


def open_gallery(at, page: str, name: str):
    at.selectbox(key=f"rec_pick_{page}").set_value(name)
    return at.button(key=f"rec_open_{page}").click().run()


@needs_model
def test_the_first_view_says_when_and_on_which_machine_it_was_recorded(app):
    read_on(app)  # the reader came to the sections below the first screen
    assert_healthy(app)
    assert stored_run(app).origin == "first_view"
    provenance = shown_trace(app)["provenance"]
    assert provenance["device"] == "cpu" and provenance["recorded_at"].endswith("Z")
    trace = shown_trace_object(app)
    assert first_view_note(trace.provenance, "zh") in texts(app, "caption")  # under the run panel's answer
    assert figure_note(trace.provenance, "zh") in texts(app, "caption")  # under each figure
    alts = images(app)
    assert sum(t("zh", "rec_alt").split("{")[0] in alt for alt in alts) == 7  # every run figure, the TTFT bar too
    assert app.session_state["history"][0].recorded


@needs_model
def test_a_gallery_trace_becomes_the_pages_run_labelled_and_pins_beside_another_run(app):
    read_on(app)  # the reader came to the sections below the first screen
    at = open_gallery(app, "lesson", "cpu/lesson-zh-1024")
    assert_healthy(at)
    recorded = load_entry(ENTRIES["cpu/lesson-zh-1024"], 1_000_000).run
    assert shown_trace(at)["prompt_ids"] == list(recorded.prompt_ids) and stored_run(at).origin == "recorded"
    assert recorded_note(recorded.provenance, "zh") in texts(at, "caption")
    assert t("zh", "stale_note") not in texts(at, "info")  # a recorded run is not the page's settings
    assert at.success and sum(t("zh", "rec_alt").split("{")[0] in alt for alt in images(at)) == 7  # TTFT's parts too
    history = at.session_state["history"]
    assert [e.recorded for e in history] == [True, True]  # the opened run, and the first view before it
    at.multiselect(key="compare_pins").set_value([e.run_id for e in history]).run()
    assert_healthy(at)
    labels = at.multiselect(key="compare_pins").options
    assert all(label.startswith("录制于") for label in labels)
    run_a = [alt for alt in images(at) if alt.startswith(t("zh", "cmp_run_a"))]
    assert len(run_a) == 3 and all(t("zh", "rec_alt").split("{")[0] in alt for alt in run_a)


@needs_model
def test_a_live_run_after_a_recorded_one_is_the_visitors_own(app):
    at = open_gallery(app, "lesson", "cpu/lesson-zh-4")
    at.button(key="run").click().run()
    assert_healthy(at)
    assert stored_run(at).origin == "measured"
    # no figure of the run says "recorded" (the sidebar's link box explains links to recorded runs); the one
    # recording left is the long prompt beside it, which the floors figure's caption names as such
    long_prompt = t("zh", "pf_caption_recorded", button=t("zh", "show_difference", num_tokens=1024))
    captions = texts(at.main, "caption")
    assert long_prompt in captions and "录制" not in captions.replace(long_prompt, "")
    assert not at.session_state["history"][0].recorded


def shown_trace_object(at):
    return stored_run(at).trace


BAD_FILES = {
    "not_json": b"{ this is not json",
    "script": b"<script>alert('x')</script>",
    "wrong_kind": make_run().to_json().encode("utf-8"),  # a serving run: the serving lab opens it
    "too_large": b" " * 300_000 + make_trace().to_json().encode("utf-8"),
    "invalid": json.dumps({**json.loads(make_trace().to_json()), "tokenize_ms": "<b>soon</b>"}).encode("utf-8"),
}
WHY = {"not_json": "not_json", "script": "not_json", "wrong_kind": "wrong_kind", "too_large": "too_large",
       "invalid": "invalid"}


@needs_model
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_a_malformed_or_hostile_file_is_one_message_and_the_page_keeps_its_run(app, lang):
    if lang != "zh":
        app.radio(key="lang").set_value(lang).run()
    before = app.session_state["run_id"]
    for name, data in BAD_FILES.items():
        app.file_uploader(key="rec_upload_lesson").set_value((f"{name}.json", data, "application/json")).run()
        assert not app.exception, [e.value for e in app.exception]
        errors = [e.value for e in app.error]
        assert len(errors) == 1, (name, errors)
        assert t(lang, f"rec_why_{WHY[name]}").split("{")[0] in errors[0], (name, errors)
        assert "<script>" not in errors[0] and "<b>" not in errors[0]
        assert app.session_state["run_id"] == before and stored_run(app).origin != "recorded"
    expected = error_message(RecordedFileError("not_json", "x"), lang)
    app.file_uploader(key="rec_upload_lesson").set_value(("again.json", b"nope", "application/json")).run()
    assert [e.value for e in app.error] == [expected]


@needs_model
@pytest.mark.slow
def test_the_labs_open_a_recorded_sweep_cache_comparison_and_serving_runs(app):
    at = app.switch_page(LAB).run()
    at = open_gallery(at, "lab", "cpu/sweep-prefill-preset-qwen2-5-0-5b")
    assert_healthy(at)
    assert any(c.key == "rec_sweep_chart" for c in at.get("plotly_chart"))
    sweep = load_entry(ENTRIES["cpu/sweep-prefill-preset-qwen2-5-0-5b"], 1_000_000).run
    assert recorded_note(sweep.provenance, "zh") in texts(at, "markdown")
    at = open_gallery(at, "lab", "cpu/cache-on-off-zh-1024")
    assert_healthy(at)
    assert any(alt.startswith(t("zh", "alt_cache_compare").split("{")[0]) for alt in images(at))
    at = at.switch_page(SERVING_LAB).run()
    options = at.selectbox(key="rec_pick_serving").options
    assert len(options) == 1 and "4" in options[0]  # one machine, one scenario, its four policies together
    at = at.button(key="rec_open_serving").click().run()
    assert_healthy(at)
    recorded = [alt for alt in images(at) if t("zh", "rec_alt").split("{")[0] in alt]
    assert len(recorded) == 1 + 3 * 4  # the metric table, then Gantt, batch and KV blocks of each policy
    at.file_uploader(key="rec_upload_serving").set_value(("t.json", make_trace().to_json().encode(), "x/json")).run()
    assert [e.value for e in at.error] == [error_message(
        RecordedFileError("wrong_kind", "x", kind="trace", expected="lesson"), "zh")]


@needs_model
def test_a_recorded_prompt_over_this_servers_cap_is_refused(monkeypatch):
    monkeypatch.setenv("PREFILL_DECODE_MAX_PROMPT_TOKENS", "256")  # the labs would measure its prompt again
    at = open_gallery(AppTest.from_file(APP, default_timeout=300).run(), "lesson", "cpu/lesson-zh-1024")
    assert not at.exception and stored_run(at).origin != "recorded"
    assert [e.value for e in at.error] == [error_message(
        RecordedFileError("over_cap", "x", n=1024, limit=256), "zh")]

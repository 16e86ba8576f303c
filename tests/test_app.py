"""The lesson app: pure helpers first (no model), then the page through AppTest.

AppTest runs app.py in this process, driving every widget by its key. The
model is loaded once per process (st.cache_resource), so the page tests share
it; they need the embedded default model (assets/default_model) and skip
cleanly without it.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path

import pytest

from engine.errors import InputError, ModelLoadError
from lesson.text import t
from lesson.views import (
    Limits, as_int_in_range, bottleneck_live_text, error_message, escape_markdown, format_bytes,
    format_ms, list_model_choices, metric_cards, page_drawing_note, queue_note, queue_wait_ms, resolve_model_choice,
    settings_from_env, step_log_line, token_split_text, trace_csv, truncate_trace,
)
from tests.factories import make_trace

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")

def default_model_dir() -> Path:
    from engine.model import DEFAULT_MODEL_DIR

    return DEFAULT_MODEL_DIR


HAS_DEFAULT_MODEL = (default_model_dir() / "config.json").is_file()


# ---------------------------------------------------------------------------
# Pure helpers (lesson/views.py)
# ---------------------------------------------------------------------------

def test_settings_come_from_env_with_safe_fallbacks():
    s = settings_from_env({})
    assert s.limits == Limits(1024, 128, 8000) and s.models_dir is None and s.device == s.dtype == "auto"
    s = settings_from_env({"PREFILL_DECODE_MAX_PROMPT_TOKENS": "64", "PREFILL_DECODE_MAX_NEW_TOKENS": "-3",
                           "PREFILL_DECODE_MAX_PROMPT_CHARS": "lots", "PREFILL_DECODE_MODELS_DIR": "/srv/m"})
    assert s.limits == Limits(64, 128, 8000) and s.models_dir == Path("/srv/m")


def test_model_choices_are_names_in_the_models_folder_only(tmp_path):
    (tmp_path / "tiny").mkdir()
    (tmp_path / ".hidden").mkdir()
    (tmp_path / "notes.txt").write_text("x")
    assert list_model_choices(tmp_path) == ["default", "tiny"]
    assert list_model_choices(None) == list_model_choices(tmp_path / "missing") == ["default"]
    assert resolve_model_choice("default", tmp_path) is None
    assert resolve_model_choice("tiny", tmp_path) == str(tmp_path / "tiny")
    for forged in ("../tiny", "/etc", str(tmp_path / "tiny"), ".hidden", "notes.txt"):
        with pytest.raises(KeyError):
            resolve_model_choice(forged, tmp_path)


def test_a_symlink_leading_out_of_the_models_folder_is_not_a_choice(tmp_path):
    models, elsewhere = tmp_path / "models", tmp_path / "elsewhere"
    (models / "real").mkdir(parents=True)
    elsewhere.mkdir()
    (models / "escape").symlink_to(elsewhere, target_is_directory=True)
    (models / "root").symlink_to("/", target_is_directory=True)
    (models / "alias").symlink_to(models / "real", target_is_directory=True)  # stays inside: fine
    assert list_model_choices(models) == ["default", "alias", "real"]
    for name in ("escape", "root"):
        with pytest.raises(KeyError):
            resolve_model_choice(name, models)


def test_int_inputs_are_clamped_or_replaced():
    assert as_int_in_range(5, 1, 10, 3) == (5, True)
    assert as_int_in_range(10**9, 1, 10, 3) == (10, False)
    assert as_int_in_range(-4, 1, 10, 3) == (1, False)
    assert as_int_in_range("7", 1, 10, 3) == (3, False)
    assert as_int_in_range(math.nan, 1, 10, 3) == (3, False)
    assert as_int_in_range(True, 1, 10, 3) == (3, False)


def test_user_text_is_escaped_for_markdown():
    assert escape_markdown("<img src=x>") == r"\<img src=x\>"
    assert escape_markdown("[a](b) *c* :red[d] $e$") == r"\[a\]\(b\) \*c\* \:red\[d\] \$e\$"
    assert token_split_text(["法国", "\n", "是"]) == "法国 │ ⏎ │ 是"
    assert token_split_text(["a\x00", "\u202eb"]) == "a\u2400 │ \u27eaRLO\u27ebb"  # nothing hidden or reordered


def test_engine_errors_read_in_both_languages_without_server_paths():
    err = ModelLoadError("not_a_model", "x", path="/srv/secret/models/broken")
    assert error_message(err, "zh") == t("zh", "err_not_a_model", path="broken")
    assert "broken" in error_message(err, "en") and "/srv" not in error_message(err, "en")
    err = InputError("prompt_too_long", "x", num_tokens=2000, limit=1024)
    assert "2000" in error_message(err, "zh") and "1024" in error_message(err, "en")
    failed = ModelLoadError("model_load_failed", "x", path="/a/b", reason="Traceback: secret")
    assert "secret" not in error_message(failed, "en")
    assert "KeyError" in error_message(KeyError("boom"), "en") and "boom" not in error_message(KeyError("boom"), "en")


def test_metric_cards_formats_and_single_token_case():
    cards = metric_cards(make_trace(), "en")
    assert [c.key for c in cards] == ["ttft", "tpot", "itl", "e2el"]
    assert all(c.value.endswith("ms") and c.definition for c in cards)
    one = metric_cards(make_trace(output_pieces=("巴黎",)), "zh")
    assert one[1].value == one[2].value == t("zh", "metric_na")


def _timed(trace, times):
    """The trace with each step's (start_ms, end_ms, consumer_ms, lock_wait_ms) replaced."""
    import dataclasses

    steps = tuple(dataclasses.replace(s, start_ms=a, end_ms=b, consumer_ms=c, lock_wait_ms=w)
                  for s, (a, b, c, w) in zip(trace.steps, times))
    return dataclasses.replace(trace, steps=steps)


def test_the_itl_card_shows_the_spread_not_a_second_tpot():
    # tokens at 4, 14, 16, 19 ms: gaps 10, 2, 3 -> mean 5 (= TPOT), p50 3, p99 9.86, max 10
    trace = _timed(make_trace(("a",), ("w", "x", "y", "z")),
                   [(1.0, 4.0, 0, 0), (12.0, 14.0, 0, 0), (15.0, 16.0, 0, 0), (18.0, 19.0, 0, 0)])
    cards = {c.key: c for c in metric_cards(trace, "en")}
    assert cards["tpot"].value == "5.0 ms" and cards["itl"].value == "9.9 ms"
    assert "p50 3.0 ms" in cards["itl"].definition and "max 10.0 ms" in cards["itl"].definition
    assert "p90 8.6 ms" in cards["itl"].definition  # rank 1.8: 3 + 0.8 x (10 - 3)


def test_queue_note_counts_only_the_wait_for_the_model_lock():
    slow_bookkeeping = _timed(make_trace(), [(20.0, 23.0, 0.0, 0.0), (23.5, 25.5, 0.0, 0.0)])
    assert queue_wait_ms(slow_bookkeeping) is None  # 20 ms before Prefill, none of it queued
    queued = _timed(make_trace(), [(20.0, 23.0, 0.0, 12.0), (26.5, 28.5, 0.0, 3.0)])
    assert queue_wait_ms(queued) == 15.0
    note = queue_note(queued, "en")
    assert "15.0 ms" in note and "12.0 ms" in note and queue_note(slow_bookkeeping, "en") is None


def test_page_drawing_is_named_when_it_stretched_a_wait():
    drawn = _timed(make_trace(), [(0.3, 3.3, 0.0, 0.0), (6.0, 8.0, 2.5, 0.0)])
    assert "2.5 ms" in page_drawing_note(drawn, "en") and "1" in page_drawing_note(drawn, "zh")
    assert page_drawing_note(make_trace(), "en") is None
    assert format_ms(1234.5) == "1.23 s" and format_ms(None) == "—" and format_bytes(2048) == "2.0 KiB"


def test_trace_helpers_csv_truncate_log_and_bottleneck():
    trace = make_trace(output_pieces=("巴黎", "。", "`x"))
    rows = trace_csv(trace).splitlines()
    assert rows[0].startswith("step,phase,positions") and len(rows) == 4
    cut = truncate_trace(trace, 1)
    assert len(cut.steps) == 1 and not cut.finished and truncate_trace(trace, 99) is trace
    assert "Prefill" in step_log_line(trace, 0, "en") and "4" in step_log_line(trace, 0, "en")
    assert "``" not in step_log_line(trace, 2, "en")
    assert "4" in bottleneck_live_text(trace, "zh")
    assert queue_wait_ms(trace) is None


# ---------------------------------------------------------------------------
# The page (AppTest)
# ---------------------------------------------------------------------------

needs_model = pytest.mark.skipif(not HAS_DEFAULT_MODEL, reason="the embedded default model is not built yet")


@pytest.fixture
def app(monkeypatch, tmp_path):
    """A fresh page on a server whose models folder holds one real and one broken model."""
    from streamlit.testing.v1 import AppTest

    from app_support import resources

    models = tmp_path / "models"
    models.mkdir()
    # hard links (or a copy): a symlink out of the models folder is refused, by design
    shutil.copytree(default_model_dir(), models / "copy_of_default", copy_function=_link_or_copy)
    (models / "not_a_model").mkdir()
    (models / "not_a_model" / "readme.txt").write_text("just a folder")
    (models / "broken_weights").mkdir()  # looks like a model, but its files are garbage
    (models / "broken_weights" / "config.json").write_text("{not json")
    (models / "broken_weights" / "model.safetensors").write_bytes(b"\0" * 16)
    monkeypatch.setenv("PREFILL_DECODE_MODELS_DIR", str(models))
    monkeypatch.setenv("PREFILL_DECODE_MAX_NEW_TOKENS", "32")
    monkeypatch.setenv("PREFILL_DECODE_MAX_PROMPT_TOKENS", "256")
    resources.server_settings.clear()
    at = AppTest.from_file(APP, default_timeout=180)
    yield at.run()
    resources.server_settings.clear()


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:  # another file system
        shutil.copy2(src, dst)


def texts(at, kind: str) -> str:
    return "\n".join(str(e.value) for e in getattr(at, kind))


def shown_trace(at) -> dict:
    return json.loads(at.session_state["trace_json"])


def assert_healthy(at) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


@needs_model
def test_first_view_shows_the_default_prompt_live(app):
    assert_healthy(app)
    assert app.text_area(key="prompt").value == "法国的首都是"
    trace = shown_trace(app)
    assert trace["prompt"] == "法国的首都是" and trace["steps"][0]["phase"] == "prefill"
    assert "巴黎" in trace["output_text"]
    assert len(app.get("image")) == 7  # every diagram, as an <img> (pixels are checked in the browser test)
    assert len(app.get("plotly_chart")) == 1
    assert {"download_json", "download_csv", "download_svg_timeline", "download_svg_blocks_schematic"} <= {
        b.key for b in app.get("download_button")}
    assert [m.label for m in app.metric] == ["TTFT", "TPOT", "ITL p99", "E2EL"]
    assert "设备 **cpu**" in texts(app, "markdown") or "设备 **cuda**" in texts(app, "markdown")


@needs_model
def test_change_lengths_then_run(app):
    app.slider(key="output_len").set_value(3)
    app.slider(key="prompt_len").set_value(40)
    app.button(key="run").click().run()
    assert_healthy(app)
    trace = shown_trace(app)
    assert len(trace["prompt_ids"]) == 40 and trace["prompt"].endswith("法国的首都是")
    assert 1 <= len(trace["steps"]) <= 3 and all(s["phase"] == "decode" for s in trace["steps"][1:])
    assert "40" in texts(app, "caption")  # the real split is announced with its length
    assert any(c.value.count("│") == 39 for c in app.code)  # ... and shown token by token
    assert t("zh", "stale_note") not in texts(app, "info")


@needs_model
def test_the_answer_stops_at_end_of_sequence_unless_asked_to_keep_writing(app):
    app.slider(key="output_len").set_value(8)
    app.button(key="run").click().run()
    assert_healthy(app)
    trace = shown_trace(app)
    assert trace["output_text"] == "巴黎。" and trace["stop_reason"] == "eos" and len(trace["steps"]) == 3
    assert t("zh", "stop_eos") in texts(app, "success")
    assert t("zh", "ignore_eos") in texts(app, "caption")  # the page says how to get more tokens
    app.checkbox(key="ignore_eos").check().run()
    app.button(key="run").click().run()
    assert_healthy(app)
    trace = shown_trace(app)
    assert len(trace["steps"]) == 8 and trace["stop_reason"] == "length"  # the slider means what it says
    assert trace["output_text"].startswith("巴黎。")


@needs_model
def test_switch_language_then_back(app):
    app.radio(key="lang").set_value("en").run()
    assert_healthy(app)
    assert app.title[0].value == t("en", "title")
    assert t("en", "sec_waits") in [h.value for h in app.header]
    assert [m.label for m in app.metric][2] == "ITL p99"
    app.radio(key="lang").set_value("zh").run()
    assert app.title[0].value == t("zh", "title") and not app.exception


@needs_model
def test_classroom_mode_steps_one_forward_pass_at_a_time(app):
    app.toggle(key="classroom").set_value(True).run()
    app.slider(key="output_len").set_value(4)
    app.text_area(key="prompt").input("法国的首都是").run()
    app.button(key="run").click().run()
    assert_healthy(app)
    assert app.session_state["class_step"] == 1
    total = len(shown_trace(app)["steps"])
    assert shown_trace(app)["sampling"]["temperature"] == 0.0 and shown_trace(app)["sampling"]["seed"] == 0
    assert len(json.loads(app.session_state["trace_json"])["steps"]) == total  # the whole run is kept
    app.button(key="class_next").click().run()
    assert app.session_state["class_step"] == min(2, total)
    phase = "Decode 1" if total > 1 else "Prefill"
    progress = [p.proto.text for p in app.get("progress")]
    assert t("zh", "classroom_position", shown=min(2, total), total=total, phase=phase) in progress
    app.button(key="class_all").click().run()
    assert app.session_state["class_step"] == total
    app.button(key="class_reset").click().run()
    assert app.session_state["class_step"] == 1 and not app.exception
    first = [s["output_id"] for s in shown_trace(app)["steps"]]
    app.button(key="run").click().run()  # greedy + fixed seed: the demo repeats exactly
    assert [s["output_id"] for s in shown_trace(app)["steps"]] == first


@needs_model
def test_schematic_demo_reacts_without_running_the_model(app):
    before = app.session_state["trace_json"]
    app.slider(key="demo_prompt_len").set_value(12)
    app.slider(key="demo_output_len").set_value(5).run()
    assert_healthy(app)
    assert app.session_state["trace_json"] is before
    app.toggle(key="raw_svg_blocks_schematic").set_value(True).run()
    raw = [c.value for c in app.code if c.language == "xml"]
    assert raw and raw[0].lstrip().startswith(("<svg", "<?xml"))


@needs_model
def test_bad_inputs_give_messages_and_the_page_recovers(app):
    prompt = app.text_area(key="prompt")
    prompt.input("").run()
    assert not app.exception and t("zh", "err_empty_prompt") in texts(app, "warning")
    app.button(key="run").click().run()
    assert not app.exception

    app.text_area(key="prompt").input("长" * 20_000).run()
    assert not app.exception
    assert t("zh", "err_prompt_too_many_chars", num_chars=20000, limit=8000) in texts(app, "error")
    app.button(key="run").click().run()
    assert not app.exception

    app.session_state["output_len"] = 10**6  # a widget value out of range (as a forged request would send)
    app.session_state["demo_prompt_len"] = 0
    app.run()
    assert not app.exception
    assert 1 <= app.slider(key="output_len").value <= 32 and app.slider(key="demo_prompt_len").value >= 1

    app.selectbox(key="model_choice").select("not_a_model").run()
    assert not app.exception
    assert t("zh", "err_not_a_model", path="not\\_a\\_model") in texts(app, "warning")
    assert app.selectbox(key="model_choice").value == "default"
    app.selectbox(key="model_choice").select("broken_weights").run()
    assert not app.exception and app.selectbox(key="model_choice").value == "default"
    assert t("zh", "err_model_load_failed", path="broken\\_weights") in texts(app, "warning")

    app.text_area(key="prompt").input("法国的首都是").run()
    app.slider(key="output_len").set_value(4)
    app.button(key="run").click().run()
    assert_healthy(app)
    assert shown_trace(app)["prompt"] == "法国的首都是" and len(shown_trace(app)["steps"]) <= 4


@needs_model
def test_out_of_range_values_are_repaired_with_a_message(monkeypatch):
    """Values already in the session (e.g. after an operator lowers a cap) are clamped, not fatal."""
    from streamlit.testing.v1 import AppTest

    from app_support import resources

    monkeypatch.setenv("PREFILL_DECODE_MAX_NEW_TOKENS", "32")
    resources.server_settings.clear()
    at = AppTest.from_file(APP, default_timeout=180)
    at.session_state["output_len"] = 10**6
    at.session_state["prompt_len"] = -5
    at.session_state["demo_output_len"] = 999
    at.session_state["lang"] = "fr"
    at.session_state["model_choice"] = "../../etc"  # a forged choice never becomes a path
    at.run()
    resources.server_settings.clear()
    assert not at.exception
    assert at.slider(key="output_len").value == 32 and at.slider(key="prompt_len").value == 0
    assert at.slider(key="demo_output_len").value == 32 and at.session_state["lang"] == "zh"
    warnings = texts(at, "warning")
    assert t("zh", "err_length_range", name=t("zh", "output_len"), value=10**6, clamped=32) in warnings
    assert t("zh", "err_length_range", name=t("zh", "prompt_len"), value=escape_markdown("-5"), clamped=0) in warnings
    assert at.selectbox(key="model_choice").value == "default"
    assert t("zh", "err_unknown_model", path=escape_markdown("../../etc")) in warnings


@needs_model
def test_a_second_listed_model_can_be_picked(app):
    app.selectbox(key="model_choice").select("copy_of_default").run()
    app.slider(key="output_len").set_value(2)
    app.button(key="run").click().run()
    assert_healthy(app)
    # the engine names a model by its folder
    assert shown_trace(app)["model"]["model_id"] == "copy_of_default"


@needs_model
def test_a_visitor_waiting_for_the_model_is_told_so(app):
    """Another visitor holds the model; our Run waits, then says it queued."""
    import threading

    from app_support import resources
    from lesson.views import settings_from_env

    settings = settings_from_env()
    lm = resources.get_model("default", settings.device, settings.dtype)
    lm.lock.acquire()
    threading.Timer(1.0, lm.lock.release).start()
    app.slider(key="output_len").set_value(2)
    app.button(key="run").click().run()
    assert_healthy(app)
    waited_ms = sum(s["lock_wait_ms"] for s in shown_trace(app)["steps"])
    assert waited_ms >= 100  # the engine measured the wait for the lock ...
    assert "排队等模型共" in texts(app, "caption")  # ... and the page says so (not the static note on queues)


def test_the_token_preview_shows_a_bos_and_counts_it(monkeypatch, tmp_path, tiny_model_dirs):
    """A models-folder checkpoint whose tokenizer adds a BOS (Llama, Gemma): the preview's split starts
    with it, and "extend to N tokens" means N tokens as the model gets them, BOS included."""
    from app_support import resources
    from tests.factories import build_bos_tokenizer

    folder = tmp_path / "models" / "llama_bos"
    folder.mkdir(parents=True)
    for name in ("config.json", "generation_config.json", "model.safetensors"):
        shutil.copy(tiny_model_dirs["llama"] / name, folder / name)
    words = len(build_bos_tokenizer(folder).encode("The capital of France is", add_special_tokens=False))
    monkeypatch.setenv("PREFILL_DECODE_MODELS_DIR", str(tmp_path / "models"))
    resources.server_settings.clear()
    try:
        _, pieces, natural = resources.prompt_preview("llama_bos", "cpu", "float32", "The capital of France is", 0)
        assert pieces[0] == "<s>" and natural == len(pieces) == words + 1
        effective, pieces, _ = resources.prompt_preview("llama_bos", "cpu", "float32", "The capital of France is", 40)
        assert effective.endswith("The capital of France is") and pieces[0] == "<s>" and len(pieces) == 40
    finally:
        resources.server_settings.clear()
        resources.get_model.clear()

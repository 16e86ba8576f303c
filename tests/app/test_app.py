"""The lesson app: pure helpers first (no model), then the page through AppTest.

AppTest runs app.py in this process, driving every widget by its key. The
model is loaded once per process (st.cache_resource), so the page tests share
it; they need the embedded default model (assets/default_model) and skip
cleanly without it.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from app_support import resources
from engine.contract.codec import convert
from engine.contract.config import Limits, settings_from_env
from engine.contract.errors import InputError, ModelLoadError
from engine.contract.prompts import LESSON_PROMPTS
from engine.contract.trace import RequestTrace
from lesson.alt_text import figure_alt, schematic_alt
from lesson.answer import truncate_trace
from lesson.downloads import CSV_BOM, download_stem, run_stamp, step_table, trace_csv
from lesson.formats import escape_markdown, fmt_bytes, format_ms, token_split_text
from lesson.inputs import as_int_in_range, default_prompt, is_default_prompt
from lesson.messages import error_message
from lesson.metric_cards import bottleneck_live_text, metric_cards, page_drawing_note
from lesson.perfetto import check_trace_events, request_trace_events
from lesson.run_words import queue_note, queue_wait_ms, step_log_line
from lesson.text import t
from tests.app.apptest import APP, assert_healthy, needs_model, read_on, shown_trace, stored_run, texts
from tests.factories import build_bos_tokenizer, make_trace

# ---------------------------------------------------------------------------
# Pure helpers (lesson/inputs.py, formats.py, metric_cards.py, run_words.py, downloads.py, alt_text.py)
# ---------------------------------------------------------------------------

def test_settings_come_from_env_with_safe_fallbacks():
    s = settings_from_env({})
    assert s.limits == Limits(1024, 128, 8000) and s.models_dir is None and s.device == s.dtype == "auto"
    s = settings_from_env({"PREFILL_DECODE_MAX_PROMPT_TOKENS": "64", "PREFILL_DECODE_MAX_NEW_TOKENS": "-3",
                           "PREFILL_DECODE_MAX_PROMPT_CHARS": "lots", "PREFILL_DECODE_MODELS_DIR": "/srv/m"})
    assert s.limits == Limits(64, 128, 8000) and s.models_dir == Path("/srv/m")


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


def test_a_one_token_answer_reads_a_dash_and_says_why():
    for lang in ("zh", "en"):
        cards = {c.key: c for c in metric_cards(make_trace(output_pieces=("巴黎",)), lang)}
        assert cards["tpot"].value == cards["itl"].value == "—"  # short: the card never cuts a sentence
        assert cards["tpot"].definition == t(lang, "metric_tpot_one_token")
        assert cards["itl"].definition == t(lang, "metric_itl_one_token")
        assert cards["ttft"].value.endswith("ms") and cards["ttft"].definition == t(lang, "metric_ttft_def")


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
    assert format_ms(1234.5) == "1.23 s" and format_ms(None) == "—" and fmt_bytes(2048) == "2.0 KiB"


def test_the_bottleneck_note_names_the_machine_and_says_when_the_phases_look_alike():
    # Prefill 1 + 0.5 x 4 = 3 ms vs Decode 2 ms: 1.5x, alike; with 400 positions: 201 ms, 100.5x apart.
    short = make_trace(decode_ms=2.0)
    assert "1.5" in bottleneck_live_text(short, "en") and t("en", "bottleneck_alike", ratio="1.5", model="tiny",
                                                             params="x", device="cpu", dtype="float32")[:8] in \
        bottleneck_live_text(short, "en")
    long = make_trace(tuple(f"p{i}" for i in range(400)), decode_ms=2.0)
    text = bottleneck_live_text(long, "zh")
    assert "100.5" in text and "只算 1 个位置" in text and "固定开销" not in text
    assert "cpu" in bottleneck_live_text(short, "zh") and "固定开销" in bottleneck_live_text(short, "zh")


def test_trace_helpers_csv_truncate_log_and_bottleneck():
    trace = make_trace(output_pieces=("巴黎", "。", "`x"))
    rows = trace_csv(trace).splitlines()
    assert rows[0].startswith(CSV_BOM + "step_index,phase,") and len(rows) == 4
    cut = truncate_trace(trace, 1)
    assert len(cut.steps) == 1 and not cut.finished and truncate_trace(trace, 99) is trace
    assert "Prefill" in step_log_line(trace, 0, "en") and "4" in step_log_line(trace, 0, "en")
    assert "``" not in step_log_line(trace, 2, "en")
    assert "4" in bottleneck_live_text(trace, "zh")
    assert queue_wait_ms(trace) is None


def test_the_csv_opens_in_spreadsheets_and_every_header_says_its_unit():
    import csv
    import io

    trace = make_trace(output_pieces=("巴黎", "。"))
    data = trace_csv(trace).encode("utf-8")
    assert data.startswith(b"\xef\xbb\xbf")  # the UTF-8 byte-order mark Excel and Numbers look for
    rows = list(csv.DictReader(io.StringIO(data.decode("utf-8-sig"))))
    assert rows[0]["output_piece"] == "巴黎" and rows[1]["input_pieces"] == "巴黎"
    text_columns = {"step_index", "phase", "positions_first_to_last", "input_pieces", "output_piece"}
    for header in rows[0]:
        assert header in text_columns or header.endswith(("_ms", "_bytes")) or header.startswith("num_"), header
    assert float(rows[0]["pass_ms"]) == trace.steps[0].duration_ms and rows[0]["num_new_positions"] == "4"
    assert int(rows[1]["kv_cache_bytes"]) == trace.steps[1].kv_bytes and rows[1]["num_cached_positions_after"] == "5"
    assert list(step_table(trace)[0]) == list(rows[0])  # the page's table has the same headers


def test_download_names_tell_runs_apart():
    import datetime

    stamp = run_stamp(datetime.datetime(2025, 3, 4, 5, 6, 7))
    assert stamp == "20250304-050607"
    assert download_stem(make_trace(), stamp) == "prefill-decode_prompt4_answer2_20250304-050607"
    longer = make_trace(prompt_pieces=("a",) * 40, output_pieces=("b",) * 7)
    assert download_stem(longer, stamp) != download_stem(make_trace(), stamp)
    assert download_stem(make_trace(), "20250304-050608") != download_stem(make_trace(), stamp)


def test_each_language_has_its_own_running_example():
    assert default_prompt("zh") == "法国的首都是" and default_prompt("en") == "The capital of France is"
    assert default_prompt("fr") == "法国的首都是"
    assert all(is_default_prompt(p) for p in LESSON_PROMPTS.values()) and is_default_prompt("法国的首都是 ")
    assert not is_default_prompt("The capital of Germany is") and not is_default_prompt(None)


ALT_NAMES = ("timeline", "ttft_parts", "blocks", "kv_growth", "latency", "animation", "review_map")


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_every_figure_has_a_text_alternative_with_its_numbers(lang):
    from lesson.diagrams import DIAGRAMS

    assert set(ALT_NAMES) == set(DIAGRAMS)
    trace = make_trace(output_pieces=("巴黎", "。", "</s>"))
    metrics = trace.metrics
    alts = {name: figure_alt(name, trace, lang) for name in ALT_NAMES}
    assert len(set(alts.values())) == len(ALT_NAMES)  # each says what its own figure shows
    for name, alt in alts.items():
        assert "{" not in alt and "}" not in alt, (name, alt)  # every field filled
    assert "法国的首都是" in alts["timeline"] and format_ms(metrics.ttft_ms) in alts["timeline"]
    assert format_ms(metrics.e2el_ms) in alts["timeline"]
    assert fmt_bytes(trace.kv_bytes) in alts["kv_growth"]
    assert fmt_bytes(trace.steps[0].kv_bytes) in alts["kv_growth"]
    assert format_ms(metrics.tpot_ms) in alts["latency"] and format_ms(metrics.p99_itl_ms) in alts["latency"]
    assert "巴黎" in alts["animation"] and str(sum(s.num_positions for s in trace.steps)) in alts["blocks"]
    assert fmt_bytes(trace.kv_bytes) in alts["review_map"]
    assert format_ms(metrics.ttft_ms) in alts["ttft_parts"]  # the engine's TTFT, from the trace alone
    sketch = schematic_alt(12, 5, lang)
    assert all(str(n) in sketch for n in (12, 4, 16)) and "{" not in sketch  # 5 passes, 12 + 4 positions


def test_figure_alt_text_keeps_user_text_short_and_visible():
    hostile = "x" * 500 + "\u202e<img src=x onerror=alert(1)>\n法国的首都是"
    trace = make_trace(prompt=hostile, output_pieces=("巴黎", "\x00。"))
    alt = figure_alt("timeline", trace, "en")
    assert "\u202e" not in alt and "\x00" not in alt and "\n" not in alt  # nothing hidden or reordered
    assert "…" in alt and alt.count("x") < 60 and "法国的首都是" in alt  # a stretched prompt keeps its end
    assert figure_alt("latency", make_trace(output_pieces=("巴黎",)), "en").count("—") == 4  # no gaps: no TPOT, ITL


def test_only_interactive_figures_promise_hover():
    """Figures are <img>s: a tooltip inside one never shows. Only plotly charts hover: the latency chart
    (latency_caption) and the serving lab's Gantt, behind its toggle (sl_hover)."""
    import re

    from lesson.text import TEXTS

    plotly_labels = {"latency_caption", "sl_hover"}
    in_the_svg = "kv_stack_legend"  # drawn inside the KV figure: hover only in the downloaded file
    for lang in ("zh", "en"):
        for key, text in TEXTS[lang].items():
            if isinstance(text, str) and key not in plotly_labels | {in_the_svg}:
                assert not re.search("hover|悬停", text, re.IGNORECASE), key
        legend = TEXTS[lang][in_the_svg]
        assert not re.search("hover|悬停", legend, re.IGNORECASE) or "SVG" in legend


# ---------------------------------------------------------------------------
# The page (AppTest)
# ---------------------------------------------------------------------------

# The `app` fixture (tests/app/conftest.py): the lesson page on a server whose models folder
# holds a copy of the default model, a folder that is not a model, and broken weights.


@needs_model
def test_first_view_shows_the_default_prompt_live(app):
    assert_healthy(app)
    assert app.text_area(key="prompt").value == "法国的首都是"
    trace = shown_trace(app)
    assert trace["prompt"] == "法国的首都是" and trace["steps"][0]["phase"] == "prefill"
    assert "巴黎" in trace["output_text"]
    # the first screen: the timeline, where each pass's time goes and TTFT's parts; the rest when read to
    # the timeline (wide, and a phone's: CSS shows one), the passes' floors, TTFT's parts
    assert len(app.get("image")) == 4 and not app.get("plotly_chart") and not app.metric
    captions = texts(app, "caption")
    assert all(t("zh", key) in captions for key in ("sec_prefill", "sec_waits", "sec_review"))  # it says what is below
    assert app.button(key="read_on").label == t("zh", "read_on")
    read_on(app)
    assert_healthy(app)
    assert "read_on" not in {b.key for b in app.button}  # pressed once: the lesson stays whole
    assert [h.value for h in app.header][2:] == [t("zh", key) for key in (
        "sec_prefill", "sec_decode", "spec_title", "sec_blocks", "sec_bottleneck", "sec_waits", "sec_compare",
        "sec_many", "sec_summary", "sec_animation", "sec_references", "sec_review")]  # in the caption's order
    assert shown_trace(app) == trace  # the same run, now drawn whole
    # every diagram (the timeline twice: wide, and a phone's), the passes' floors, TTFT's parts, as an <img>
    assert len(app.get("image")) == 10
    alts = [img.proto.imgs[0].alt for img in app.get("image")]
    assert alts[0] == alts[1]  # the two timelines say the same
    assert all(alts) and len(set(alts)) == 9 and "巴黎" in alts[0]  # each says what it shows, with the run's numbers
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
def test_show_the_difference_stretches_the_visitors_own_prompt_keeps_their_choices_and_says_so(app):
    """It used to replace the prompt with 法国的首都是, untick "keep writing past the end" and leave the
    changed figures out of view above."""
    read_on(app)  # the reader came to the sections below the first screen
    app.text_area(key="prompt").set_value("德国的首都是")
    app.checkbox(key="ignore_eos").check()
    app.slider(key="output_len").set_value(6).run()
    app.button(key="show_difference").click().run()  # this server allows 256 prompt tokens
    assert_healthy(app)
    trace = shown_trace(app)
    assert len(trace["prompt_ids"]) == 256 and trace["prompt"].endswith("德国的首都是")
    assert len(trace["steps"]) == 6 and trace["stop_reason"] == "length"  # past the end, as ticked
    prefill, decodes = trace["steps"][0], trace["steps"][1:]
    assert prefill["context_after"] == 256 and all(s["context_after"] - s["context_before"] == 1 for s in decodes)
    assert app.slider(key="prompt_len").value == 256 and app.checkbox(key="ignore_eos").value
    assert app.text_area(key="prompt").value == "德国的首都是"
    note = t("zh", "difference_note", num_tokens=256, ignore_eos=t("zh", "ignore_eos"))
    assert note in texts(app, "info")
    scripts = [h.proto.body for h in app.get("html") if "scrollIntoView" in h.proto.body]
    assert len(scripts) == 1 and ".st-key-difference-note" in scripts[0]  # the page goes to the changed figures
    app.run()  # said once
    assert note not in texts(app, "info") and not [h for h in app.get("html") if "scrollIntoView" in h.proto.body]


@needs_model
def test_switch_language_then_back(app):
    read_on(app)  # the reader came to the sections below the first screen
    app.radio(key="lang").set_value("en").run()
    assert_healthy(app)
    assert app.title[0].value == t("en", "title")
    assert t("en", "sec_waits") in [h.value for h in app.header]
    assert [m.label for m in app.metric][2] == "ITL p99"
    app.radio(key="lang").set_value("zh").run()
    assert app.title[0].value == t("zh", "title") and not app.exception


@needs_model
def test_the_example_follows_the_language_unless_the_visitor_typed_one(app):
    app.radio(key="lang").set_value("en").run()
    assert_healthy(app)
    assert app.text_area(key="prompt").value == "The capital of France is"
    trace = shown_trace(app)  # the first view is drawn again from the English example
    assert trace["prompt"] == "The capital of France is" and trace["output_text"] == " Paris."
    assert trace["stop_reason"] == "eos" and t("en", "stale_note") not in texts(app, "info")
    app.text_area(key="prompt").input("The capital of Germany is").run()
    app.radio(key="lang").set_value("zh").run()
    assert_healthy(app)
    assert app.text_area(key="prompt").value == "The capital of Germany is"  # typed: kept
    assert shown_trace(app)["prompt"] == "The capital of France is"  # and the figures keep what they showed
    app.text_area(key="prompt").input("The capital of France is").run()
    app.button(key="run").click().run()
    app.radio(key="lang").set_value("en").run()
    app.radio(key="lang").set_value("zh").run()
    assert app.text_area(key="prompt").value == "法国的首都是"
    assert shown_trace(app)["prompt"] == "The capital of France is"  # a run the visitor asked for stays


@needs_model
def test_a_page_opened_in_english_starts_from_the_english_example(served_settings):
    at = AppTest.from_file(APP, default_timeout=180)
    at.session_state["lang"] = "en"
    at.run()
    assert_healthy(at)
    assert at.text_area(key="prompt").value == "The capital of France is"
    assert shown_trace(at)["output_text"] == " Paris."


@needs_model
def test_downloads_are_named_after_the_run(app, monkeypatch):
    from streamlit.runtime.media_file_manager import MediaFileManager
    from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage

    read_on(app)  # the reader came to the sections below the first screen
    names: list[str] = []
    original = MemoryMediaFileStorage.load_and_get_id

    def spy(self, path_or_data, mimetype, kind, filename=None):
        names.append(filename)
        return original(self, path_or_data, mimetype, kind, filename)

    monkeypatch.setattr(MemoryMediaFileStorage, "load_and_get_id", spy)
    deferred = MediaFileManager.add_deferred  # the run's data files are written when clicked

    def spy_deferred(self, data_callable, mimetype, coordinates, file_name=None, **kwargs):
        names.append(file_name)
        return deferred(self, data_callable, mimetype, coordinates, file_name, **kwargs)

    monkeypatch.setattr(MediaFileManager, "add_deferred", spy_deferred)
    stems = []
    for output_len in (2, 1):
        names.clear()
        app.slider(key="output_len").set_value(output_len)
        app.button(key="run").click().run()
        assert_healthy(app)
        stem = f"prefill-decode_prompt4_answer{output_len}_{stored_run(app).stamp}"
        assert {f"{stem}_trace.json", f"{stem}_steps.csv", f"{stem}_timeline.svg", f"{stem}_kv_growth.svg",
                f"{stem}_review_map.svg", "prefill-decode_sketch_prompt4_answer2.svg"} <= set(names), names
        assert not {"trace.json", "trace_steps.csv", "timeline.svg"} & set(names)
        stems.append(stem)
    assert stems[0] != stems[1]  # two runs, two names


@needs_model
def test_a_one_token_answer_shows_a_dash_and_a_reason(app):
    read_on(app)  # the reader came to the sections below the first screen
    app.slider(key="output_len").set_value(1)
    app.button(key="run").click().run()
    assert_healthy(app)
    assert len(shown_trace(app)["steps"]) == 1
    values = {m.label: m.value for m in app.metric}
    assert values["TPOT"] == values["ITL p99"] == "—" and values["TTFT"].endswith("ms")
    captions = texts(app, "caption")
    assert t("zh", "metric_tpot_one_token") in captions and t("zh", "metric_itl_one_token") in captions


@needs_model
def test_run_is_off_while_the_prompt_cannot_run_and_the_answer_stays(app, monkeypatch):
    answer = shown_trace(app)["output_text"]
    assert not app.button(key="run").disabled
    app.text_area(key="prompt").input("").run()
    assert app.button(key="run").disabled and t("zh", "err_empty_prompt") in texts(app, "warning")

    # Emptied and clicked before the page could redraw: both arrive in one rerun.
    app.text_area(key="prompt").input("法国的首都是").run()
    app.text_area(key="prompt").input("")
    app.button(key="run").click().run()
    assert not app.exception and shown_trace(app)["output_text"] == answer
    assert any(c.value == answer for c in app.code)  # the answer the figures show is still on the page

    app.text_area(key="prompt").input("法国的首都是" * 80).run()  # over the 256-token cap, typed as is
    assert app.button(key="run").disabled
    errors = texts(app, "error")
    assert "256" in errors and "加长到" not in errors and "缩短" in errors  # lowering "extend to" would not help

    app.text_area(key="prompt").input("法国的首都是").run()
    assert not app.button(key="run").disabled and not app.error

    def failing_run(*args, **kwargs):
        raise RuntimeError("the model fell over")
        yield

    monkeypatch.setattr(resources, "stream_runs", failing_run)  # the run panel's call to the engine worker
    app.button(key="run").click().run()  # a run that fails keeps the last answer next to its figures
    codes = [c.value for c in app.main.code if c.language != "xml"]  # not the sidebar's link box
    assert "RuntimeError" in texts(app, "error") and codes[-1] == answer
    assert not app.get("progress")  # nor a progress bar stuck at Prefill


@needs_model
def test_reset_puts_every_control_back_to_the_lessons_defaults(app):
    from app_support.state import DEFAULTS, WIDGET_KEYS

    read_on(app)  # the reader came to the sections below the first screen
    app.radio(key="lang").set_value("en").run()
    app.text_area(key="prompt").input("Hello there").run()
    app.slider(key="output_len").set_value(3)
    app.slider(key="prompt_len").set_value(40)
    app.checkbox(key="ignore_eos").check()
    app.slider(key="temperature").set_value(0.7)
    app.number_input(key="seed").set_value(7)
    app.slider(key="demo_prompt_len").set_value(9)
    app.selectbox(key="model_choice").select("copy_of_default")
    app.toggle(key="classroom").set_value(True).run()
    assert app.session_state["classroom"] and app.session_state["output_len"] == 3
    app.button(key="reset_defaults").click().run()
    assert_healthy(app)
    for key in WIDGET_KEYS:
        assert app.session_state[key] == (default_prompt("en") if key == "prompt" else DEFAULTS[key]), key
    assert app.session_state["lang"] == "en" and app.text_area(key="prompt").value == "The capital of France is"
    assert app.slider(key="output_len").value == DEFAULTS["output_len"] and not app.warning  # no repair needed


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
    assert stored_run(app).num_passes == total  # the whole run is kept: the step is a view of it
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


def timeline_axis(at) -> tuple[str, list[str], list[str]]:
    """(width, time-axis tick labels, Prefill bar x and width) of the timeline's raw SVG on the page."""
    import xml.etree.ElementTree as ET

    svg = next(c.value for c in at.code if "lesson-diagram timeline" in c.value)
    root = ET.fromstring(svg)
    ticks = [el.text for el in root.iter() if el.get("class") == "tick-label"]
    prefill = [(el.get("x"), el.get("width")) for el in root.iter() if el.get("class") == "pass-time prefill"]
    return root.get("width"), ticks, prefill


@needs_model
def test_classroom_stepping_keeps_the_timeline_time_axis(app):
    """Stepping forward adds rows; the time axis and the Prefill bar stay put."""
    app.toggle(key="classroom").set_value(True).run()
    app.slider(key="output_len").set_value(6)
    app.button(key="run").click().run()
    app.toggle(key="raw_svg_timeline").set_value(True).run()
    assert_healthy(app)
    total = len(shown_trace(app)["steps"])
    first = timeline_axis(app)
    assert app.session_state["class_step"] == 1 and total >= 3 and len(first[1]) >= 2 and len(first[2]) == 1
    for step in range(2, total + 1):
        app.button(key="class_next").click().run()
        assert app.session_state["class_step"] == step
        assert timeline_axis(app) == first, step


@needs_model
def test_schematic_demo_reacts_without_running_the_model(app):
    read_on(app)  # the reader came to the sections below the first screen
    before = stored_run(app)
    app.slider(key="demo_prompt_len").set_value(12)
    app.slider(key="demo_output_len").set_value(5).run()
    assert_healthy(app)
    assert stored_run(app) is before
    app.toggle(key="raw_svg_blocks_schematic").set_value(True).run()
    raw = [c for c in app.code if c.language == "xml"]
    assert raw and raw[0].value.lstrip().startswith(("<svg", "<?xml"))
    assert raw[0].proto.wrap_lines  # the SVG is one long line: the view wraps it
    assert schematic_alt(12, 5, "zh") in [img.proto.imgs[0].alt for img in app.get("image")]


@needs_model
def test_bad_inputs_give_messages_and_the_page_recovers(app):
    read_on(app)  # the reader came to the sections below the first screen
    prompt = app.text_area(key="prompt")
    prompt.input("").run()
    assert not app.exception and t("zh", "err_empty_prompt") in texts(app, "warning")
    assert app.button(key="run").disabled

    app.text_area(key="prompt").input("长" * 20_000).run()
    assert not app.exception
    assert t("zh", "err_prompt_too_many_chars", num_chars=20000, limit=8000) in texts(app, "error")
    assert app.button(key="run").disabled

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
    monkeypatch.setenv("PREFILL_DECODE_MAX_NEW_TOKENS", "32")
    at = AppTest.from_file(APP, default_timeout=180)
    at.session_state["output_len"] = 10**6
    at.session_state["prompt_len"] = -5
    at.session_state["demo_output_len"] = 999
    at.session_state["lang"] = "fr"
    at.session_state["model_choice"] = "../../etc"  # a forged choice never becomes a path
    at.session_state["lesson_open"] = True  # a reader who had read on: the sketch's sliders are drawn
    at.run()
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


def test_the_token_preview_shows_a_bos_and_counts_it(use_thread_engine):
    """A models-folder checkpoint whose tokenizer adds a BOS (Llama, Gemma): the preview's split starts
    with it, and "extend to N tokens" means N tokens as the model gets them, BOS included. The
    session's worker in this process's threads holds it (conftest.thread_engine: `llama_bos`)."""
    folder = use_thread_engine.models / "llama_bos"
    words = len(build_bos_tokenizer(folder).encode("The capital of France is", add_special_tokens=False))
    _, pieces, natural = resources.prompt_preview("llama_bos", "cpu", "float32", "The capital of France is", 0)
    assert pieces[0] == "<s>" and natural == len(pieces) == words + 1
    effective, pieces, _ = resources.prompt_preview("llama_bos", "cpu", "float32", "The capital of France is", 40)
    assert effective.endswith("The capital of France is") and pieces[0] == "<s>" and len(pieces) == 40


@needs_model
def test_classroom_back_first_and_last_pass_buttons(app):
    """The buttons the keys press (← / Page Up, Home, End) step back, to the first and to the last pass."""
    app.toggle(key="classroom").set_value(True).run()
    app.checkbox(key="ignore_eos").check()
    app.slider(key="output_len").set_value(5)
    app.button(key="run").click().run()
    assert_healthy(app)
    total = len(shown_trace(app)["steps"])
    assert total == 5 and app.session_state["class_step"] == 1
    app.button(key="class_prev").click().run()
    assert app.session_state["class_step"] == 1  # no step before Prefill
    app.button(key="class_all").click().run()  # End
    assert app.session_state["class_step"] == total
    app.button(key="class_prev").click().run()
    assert app.session_state["class_step"] == total - 1
    progress = [p.proto.text for p in app.get("progress")]
    assert t("zh", "classroom_position", shown=total - 1, total=total, phase=f"Decode {total - 2}") in progress
    app.button(key="class_reset").click().run()  # Home
    assert app.session_state["class_step"] == 1
    assert t("zh", "classroom_keys") in texts(app, "caption") and not app.exception


def _figure(at, alt_start: str):
    """The one <img> whose alt text starts with `alt_start`."""
    found = [img.proto.imgs[0] for img in at.get("image") if img.proto.imgs[0].alt.startswith(alt_start)]
    assert len(found) == 1, [img.proto.imgs[0].alt[:40] for img in at.get("image")]
    return found[0]


@needs_model
def test_cache_on_vs_off_shows_the_measured_totals_and_a_decode_steps_attention(app):
    from app_support.lab import COMPARE_MAX_NEW_TOKENS
    from lesson.alt_text import cache_compare_caption
    from lesson.formats import fmt_count

    app.switch_page("app_pages/bottleneck_lab.py").run()  # the measurements live on the lab page
    app.button(key="cache_compare").click().run()
    assert_healthy(app)
    trace, args = shown_trace(app), stored_run(app).args
    # the page's own comparison (st.cache_data, shared with this process), not a second measurement
    comparison = resources.cache_comparison(args.model_choice, args.device, args.dtype, tuple(trace["prompt_ids"]),
                                            COMPARE_MAX_NEW_TOKENS)
    assert comparison.prompt_len == len(trace["prompt_ids"]) and comparison.num_steps == COMPARE_MAX_NEW_TOKENS
    assert len(app.get("image")) == 2  # the lab page: cache on/off and one step's attention
    figure = _figure(app, t("zh", "alt_cache_compare").split("{")[0])
    assert format_ms(comparison.off_total_ms) in figure.alt and format_ms(comparison.on_total_ms) in figure.alt
    assert cache_compare_caption(comparison, "zh") in texts(app, "caption")
    for number in (format_ms(comparison.off_total_ms), format_ms(comparison.on_total_ms),
                   fmt_count(int(comparison.off_total_flops)), fmt_count(int(comparison.on_total_flops))):
        assert number in texts(app, "caption")
    assert comparison.off_total_flops > comparison.on_total_flops  # the cache saves recomputing old positions

    slider = app.select_slider(key=f"attention_step_{COMPARE_MAX_NEW_TOKENS - 1}")
    assert slider.value == 1
    attention_alt = t("zh", "alt_attention").split("{")[0]
    before = _figure(app, attention_alt)
    assert "D1" in before.alt
    slider.set_value(20).run()
    assert_healthy(app)
    after = _figure(app, attention_alt)
    assert "D20" in after.alt and after.url != before.url  # a different step, a different picture
    context = len(trace["prompt_ids"]) + 19
    assert t("zh", "attention_caption", context=context) in texts(app, "caption")
    assert _figure(app, t("zh", "alt_cache_compare").split("{")[0]).url == figure.url  # the comparison is not rerun


def test_cache_compare_words_quote_the_comparisons_totals():
    from types import SimpleNamespace

    from lesson.alt_text import attention_alt, cache_compare_alt, cache_compare_caption

    comparison = SimpleNamespace(prompt_len=6, num_steps=32, off_total_ms=1412.76, on_total_ms=165.06,
                                 off_total_flops=53015494656.0, on_total_flops=1807597568.0)
    attention = SimpleNamespace(decode_index=5, num_layers=4, context=10)
    for lang in ("zh", "en"):
        words = cache_compare_alt(comparison, lang) + cache_compare_caption(comparison, lang)
        for number in ("1.41 s", "165 ms", "53.0B", "1.8B", "32", "8.6", "29.3"):
            assert number in words, (lang, number)
        assert "{" not in words and "D5" in attention_alt(attention, lang) and "10" in attention_alt(attention, lang)


@pytest.mark.slow
def test_the_app_offers_the_perfetto_download(monkeypatch):
    """The lesson page's data downloads include the shown run as Trace Event JSON (AppTest)."""
    monkeypatch.setenv("PREFILL_DECODE_MAX_NEW_TOKENS", "32")
    at = AppTest.from_file(APP, default_timeout=180).run()
    assert not at.exception, [e.value for e in at.exception]
    button = next(b for b in at.get("download_button") if b.key == "download_perfetto")
    assert button.proto.label == "下载 Perfetto Trace（Chrome Trace Event JSON）"
    shown = shown_trace(at)
    # written when clicked (a deferred download), not on every page run of every visitor
    assert button.proto.deferred_file_id and not button.proto.url
    assert check_trace_events(request_trace_events(convert(shown, RequestTrace))) == []

"""Hostile workload lines (the serving lab's paste box, `serve --workload`): 100 000 brackets, a 5000-digit
number, a lone surrogate, a prompt of 100 000 characters, a typed prompt of 3000 tokens under a cap of
1024, an arrival ten minutes away. Each is refused naming its line, in seconds, in the page's language."""

from __future__ import annotations

import json
import re
import time

import pytest

from app_support.serving import check_caps
from engine.contract.config import ServingCaps
from engine.contract.errors import CapError, InputError
from engine.contract.limits import MAX_ARRIVAL_MS
from engine.contract.serving.workloads import WorkloadError, parse_workload_lines
from lesson.messages import serving_message
from lesson.text import t
from tests.app.apptest import APP, SERVING_LAB, fresh_settings, kept, needs_model  # noqa: F401  (a fixture)
from tests.hostile.bounded import assert_one_line, python

GOOD = '{"arrival_ms": 0, "prompt": "法国的首都是", "max_new_tokens": 4}'
# name -> (the second line of a workload, the why its refusal names)
LINES = {
    "100 000 brackets": ('{"arrival_ms": 0, "prompt": "x", "max_new_tokens": 4, "prompt_tokens": '
                         + "[" * 100_000 + "]" * 100_000 + "}", "limit_json_depth"),
    "a 5000-digit number": ('{"arrival_ms": 0, "prompt": "x", "max_new_tokens": ' + "9" * 5000 + "}",
                            "limit_json_number"),
    "a lone surrogate in the prompt": ('{"arrival_ms": 0, "prompt": "\\ud800", "max_new_tokens": 4}', "limit_text"),
    "a 100 000-character prompt": (json.dumps({"arrival_ms": 0, "prompt": "巴" * 100_000, "max_new_tokens": 4}),
                                   "limit_count"),
    "an arrival ten minutes away": ('{"arrival_ms": 600000, "prompt": "x", "max_new_tokens": 4}', "arrival_range"),
    "an arrival just past the limit": (json.dumps({"arrival_ms": MAX_ARRIVAL_MS + 1, "prompt": "x",
                                                   "max_new_tokens": 4}), "arrival_range"),
}


@pytest.mark.parametrize("name", list(LINES))
def test_a_hostile_line_is_refused_naming_it_in_both_languages(name):
    line, why = LINES[name]
    start = time.perf_counter()
    with pytest.raises(WorkloadError) as err:
        parse_workload_lines([GOOD, line])
    assert time.perf_counter() - start < 2
    assert err.value.key == "bad_workload_line" and err.value.params["line"] == 2
    assert err.value.params["why"] == why
    for lang, line_words in (("zh", "第 2 行"), ("en", "Line 2")):
        message = serving_message(err.value, lang)
        assert line_words in message and t(lang, "err_internal", kind="x")[:6] not in message, message
        assert "{" not in message


def test_a_million_lines_are_counted_before_any_is_parsed():
    start = time.perf_counter()
    with pytest.raises(WorkloadError) as err:
        parse_workload_lines(["{"] * 1_000_000)  # none of them JSON: the count refuses first
    assert err.value.params["why"] == "too_many" and time.perf_counter() - start < 5


SERVE = ["-m", "engine", "serve", "--policy", "chunked", "--workload"]
# The file is refused before torch is imported: the child stays near 26 MB (importing torch alone: about 220 MB)
TORCHLESS_MB = 100


@pytest.mark.parametrize("name", ["100 000 brackets", "a 5000-digit number", "a lone surrogate in the prompt"])
def test_serve_refuses_the_file_in_one_line_before_loading_a_model(name, tmp_path):
    path = tmp_path / "workload.jsonl"
    path.write_text(GOOD + "\n" + LINES[name][0] + "\n", encoding="utf-8")
    outcome = python(*SERVE, str(path), timeout_s=60)
    assert_one_line(outcome, 2, "line 2", seconds=30, peak_mb=TORCHLESS_MB)


def test_serve_refuses_an_oversized_file_before_reading_it(tmp_path):
    path = tmp_path / "workload.jsonl"
    with path.open("wb") as f:  # sparse: 65 MB on paper, nothing on disk
        f.truncate(65 * 2**20)
    outcome = python(*SERVE, str(path), timeout_s=60)
    assert_one_line(outcome, 2, "bytes", seconds=30, peak_mb=TORCHLESS_MB)


# --- the lab's caps: every request's typed prompt, and its arrival ----------------------------

def test_a_typed_prompt_over_the_cap_is_refused_as_a_stretched_one_is():
    work = parse_workload_lines([json.dumps({"arrival_ms": 0, "prompt": "word " * 3000, "max_new_tokens": 4})])
    caps = ServingCaps(max_requests=4, max_prompt_tokens=1024, max_new_tokens=16)
    check_caps(work, caps)  # without a tokenizer only the stretch is known
    with pytest.raises(CapError) as err:
        check_caps(work, caps, count_tokens=lambda text: len(text.split()))
    assert err.value.key == "sl_cap_prompt" and err.value.params == {"n": 3000, "limit": 1024}


def test_a_typed_prompt_the_engine_will_not_even_count_is_over_the_cap_and_said_so():
    """The engine worker refuses to count a prompt over its character cap (prompt_too_many_chars): the
    lab says the prompt is over its own cap, in words, instead of an error box (it failed so once a test
    process's shared worker held a small cap)."""
    work = parse_workload_lines([json.dumps({"arrival_ms": 0, "prompt": "word " * 3000, "max_new_tokens": 4})])
    caps = ServingCaps(max_requests=4, max_prompt_tokens=1024, max_new_tokens=16)

    def refusing(text: str) -> int:
        raise InputError("prompt_too_many_chars", "too many characters", num_chars=len(text), limit=100)

    with pytest.raises(CapError) as err:
        check_caps(work, caps, count_tokens=refusing)
    assert err.value.key == "sl_cap_prompt_chars" and err.value.params == {"chars": 15000, "limit": 1024}
    for lang in ("zh", "en"):
        assert "15000" in serving_message(err.value, lang) and "1024" in serving_message(err.value, lang)
    with pytest.raises(InputError):  # any other refusal is not a cap: it stays what it was
        check_caps(work, caps, count_tokens=lambda text: (_ for _ in ()).throw(InputError("bad_workload", "x")))


def test_an_arrival_past_the_limit_is_refused_by_the_caps_too():
    from engine.contract.serving.workloads import WorkloadRequest

    work = (WorkloadRequest(MAX_ARRIVAL_MS + 1, "x", 4),)
    with pytest.raises(CapError) as err:
        check_caps(work, ServingCaps())
    assert err.value.key == "sl_cap_arrival"
    for lang in ("zh", "en"):
        assert "60000" in serving_message(err.value, lang)


@needs_model
@pytest.mark.slow
@pytest.mark.usefixtures("fresh_settings")
def test_the_lab_refuses_a_typed_3000_token_prompt(monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("PREFILL_DECODE_SERVING_MAX_PROMPT_TOKENS", "1024")
    at = AppTest.from_file(APP, default_timeout=300)
    at.run()
    at.switch_page(SERVING_LAB).run()
    at.radio(key="sl_source").set_value("jsonl").run()
    long = json.dumps({"arrival_ms": 0, "prompt": "The capital of France is " * 600, "max_new_tokens": 4},
                      ensure_ascii=False)
    at.text_area(key="sl_jsonl").set_value(long).run()
    at.button(key="sl_run").click().run()
    assert not at.exception
    [message] = [e.value for e in at.error]
    assert re.search(r"\d{4}", message) and "1024" in message, message
    assert kept(at, "sl_runs") is None

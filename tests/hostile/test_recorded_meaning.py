"""Recorded runs checked for meaning, not only types (engine.contract.recorded + engine.contract.meaning):
each file below has the right types and a wrong meaning, and is one refusal (RecordedFileError), never
a figure's ValueError/IndexError/KeyError or a wrong number drawn; text from a file is shown visible."""

from __future__ import annotations

import json

import pytest

from engine.contract import codec, recorded
from engine.contract.recorded import RecordedFileError, read_recorded
from engine.contract.serving.trace import ServingRun
from lesson.slides import serving_slides
from tests.hostile.bounded import ROOT

GALLERY = ROOT / "assets" / "gallery" / "cpu"
MAX_BYTES = 50_000_000


def load(name: str) -> dict:
    return json.loads((GALLERY / name).read_text(encoding="utf-8"))


def refusal(data) -> RecordedFileError:
    with pytest.raises(RecordedFileError) as caught:
        read_recorded(json.dumps(data), MAX_BYTES)
    return caught.value


def trace_with(**changes) -> dict:
    data = load("lesson-en-4.json")
    return {**data, **changes}


def test_the_gallery_itself_passes_every_check_of_meaning():
    runs = [path for path in sorted(GALLERY.glob("*.json")) if path.name not in ("index.json", "weight-formats.json")]
    assert len(runs) >= 10  # the folder's recorded runs (its weight-formats table is no run: lesson/quantization.py)
    for path in runs:
        assert read_recorded(path.read_bytes(), MAX_BYTES).runs


@pytest.mark.parametrize("case", ["empty", "negative", "huge", "order", "inverted"])
def test_a_trace_whose_numbers_cannot_be_true_is_refused(case):
    data = trace_with()
    steps = data["steps"]
    if case == "empty":
        data["steps"] = []
    elif case == "negative":
        steps[1]["end_ms"] = -999999.0  # drawn as "TTFT -999999.00 ms" before
    elif case == "huge":
        steps[1]["end_ms"] = 1e300
    elif case == "order":
        steps[1]["start_ms"], steps[2]["start_ms"] = steps[2]["start_ms"], steps[1]["start_ms"]
    else:
        steps[0]["end_ms"] = steps[0]["start_ms"] - 5
    err = refusal(data)
    assert err.params["why"] == "invalid" and err.params["kind"] == "trace", err


def test_a_trace_over_the_step_cap_is_refused_before_one_step_is_built(monkeypatch):
    data = trace_with()
    data["steps"] = [data["steps"][1]] * 11_500

    def never(*args, **kwargs):
        raise AssertionError("a step was built")

    monkeypatch.setattr(codec, "convert", never)  # the one builder of a recorded run (engine.contract.codec)
    err = refusal(data)
    assert err.params["why"] == "too_many" and err.params["n"] == 11_500
    assert err.params["limit"] == recorded.MAX_TRACE_STEPS


def test_cache_lists_of_other_lengths_are_refused():
    data = load("cache-on-off-zh-1024.json")
    data["comparison"]["on_ms"] = data["comparison"]["on_ms"][:-1]
    assert refusal(data).params["why"] == "invalid"
    data = load("cache-on-off-zh-1024.json")
    data["comparison"]["off_ms"][0] = -3.0
    assert refusal(data).params["why"] == "invalid"


@pytest.mark.parametrize("kind", ["", "mystery"])
def test_a_sweep_of_an_unknown_kind_is_refused(kind):
    data = load("sweep-prefill-preset-qwen2-5-0-5b.json")
    data["kind"] = kind
    assert refusal(data).params["why"] == "invalid"


def test_a_sweep_without_points_or_with_negative_times_is_refused():
    data = load("sweep-prefill-preset-qwen2-5-0-5b.json")
    data["points"] = []
    assert refusal(data).params["why"] == "invalid"
    data = load("sweep-prefill-preset-qwen2-5-0-5b.json")
    data["points"][0]["times_ms"][0] = -1.0
    assert refusal(data).params["why"] == "invalid"


def test_a_serving_run_with_times_out_of_order_is_refused():
    data = load("serving-long-prompt-during-chats-chunked.json")
    first = data["requests"][0]
    first["finish_ms"] = first["arrival_ms"] - 10
    assert refusal(data).params["why"] == "invalid"


def test_a_files_scenario_name_is_shown_visible_in_the_slides():
    data = load("serving-long-prompt-during-chats-chunked.json")
    data["scenario"] = "evil\u202eslide\x00name"
    run = ServingRun.from_json(json.dumps(data))
    slides = serving_slides([run], lang="en", tag="t")
    texts = [text for slide in slides for text in (slide.caption, slide.alt)]
    assert all("\u202e" not in text and "\x00" not in text for text in texts)
    assert any("\u27eaRLO\u27eb" in text and "\u2400" in text for text in texts)

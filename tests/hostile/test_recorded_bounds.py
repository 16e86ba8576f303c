"""Recorded runs whose clocks or prefix records cannot be true (engine/contract/recorded.py,
engine/contract/serving/prefix_check.py): each is one refusal in words (RecordedFileError), never a
figure's "year 31690708 is out of range" or a hit rate of 8,333,300 %."""

from __future__ import annotations

import json

import pytest

from engine.contract.recorded import WALL_CLOCK_LIMIT_S, RecordedFileError, read_recorded
from lesson.run_words import clock
from tests.hostile.bounded import ROOT

GALLERY = ROOT / "assets" / "gallery" / "cpu"
NEAR_MISS = ROOT / "tests" / "serving" / "fixtures" / "prefix_near_miss_tight.json"
MAX_BYTES = 50_000_000


def refused(data) -> RecordedFileError:
    with pytest.raises(RecordedFileError) as caught:
        read_recorded(json.dumps(data), MAX_BYTES)
    assert caught.value.params["why"] == "invalid" and "\n" not in str(caught.value)
    return caught.value


def trace(**prefix) -> dict:
    data = json.loads((GALLERY / "lesson-en-4.json").read_text(encoding="utf-8"))
    n = data["prompt_len"] if "prompt_len" in data else len(data["prompt_ids"])
    return {**data, "prefix": {"num_tokens": n, "num_cached_tokens": 0, "miss": "first_seen", **prefix}}


@pytest.mark.parametrize("field", ["source_started_at_s", "evicted_at_s"])
def test_a_prefix_record_with_a_time_past_any_calendar_is_refused(field):
    err = refused(trace(**{field: 1e15}))
    assert field in str(err)


def test_a_start_past_any_calendar_is_refused_and_a_real_one_reads_back():
    assert "started_at_s" in str(refused({**trace(), "started_at_s": 1e15}))
    assert read_recorded(json.dumps(trace(source_started_at_s=1_796_000_000.0)), MAX_BYTES).runs
    assert clock(WALL_CLOCK_LIMIT_S) != "—"  # the bound itself is a time a page can show


def serving_run(**prefix) -> dict:
    data = json.loads(NEAR_MISS.read_text(encoding="utf-8"))
    first = data["requests"][0]
    first["prefix"] = {**first["prefix"], **prefix}
    return data


def test_the_fixture_itself_reads_back_and_so_does_a_record_of_every_usable_block():
    assert read_recorded(NEAR_MISS.read_text(encoding="utf-8"), MAX_BYTES).runs
    assert read_recorded(json.dumps(serving_run(num_cached_tokens=176, miss="")), MAX_BYTES).runs  # 11 of 16


@pytest.mark.parametrize("prefix, words", [
    ({"num_tokens": 1_000_000, "num_cached_tokens": 999_996}, "1,000,000 tokens"),  # a 182-token prompt
    ({"block_hashes": ["deadbeef"] * 40}, "40 block hashes"),  # 182 tokens: 11 full blocks of 16
    ({"num_cached_tokens": 20}, "whole blocks of 16"),  # not a whole block
])
def test_a_prefix_record_is_checked_against_its_requests_prompt_and_full_blocks(prefix, words):
    err = refused(serving_run(**prefix))
    assert "'first'" in str(err) and (words in str(err) or "whole blocks" in str(err)), str(err)

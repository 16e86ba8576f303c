"""Workloads: named scenarios, seeded Poisson arrivals, JSON Lines files refused line by line."""

from __future__ import annotations

import json
import re

import pytest

from engine.contract.serving.workloads import (
    SCENARIOS, WorkloadError, WorkloadRequest, load_workload_file, parse_workload_lines, poisson_workload, questions,
    scenario,
)


def test_scenarios_are_kebab_case_and_build():
    for name in SCENARIOS:
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", name)
        workload = scenario(name)
        assert workload and all(isinstance(r, WorkloadRequest) and r.max_new_tokens >= 1 for r in workload)
    long = scenario("long-prompt-during-chats")
    assert max(r.prompt_tokens for r in long) == 1024
    assert len(scenario("burst-16")) == 16 and {r.arrival_ms for r in scenario("burst-16")} == {0.0}


def test_unknown_scenario_names_the_choices():
    with pytest.raises(WorkloadError, match="unknown scenario 'nope'; choose one of long-prompt-during-chats"):
        scenario("nope")


def test_questions_are_the_default_models_own():
    qs = questions()
    assert qs[0] == "法国的首都是" and qs[1] == "The capital of Germany is"


def test_poisson_is_seeded_and_increasing():
    a, b, c = poisson_workload(20, 50.0, seed=1), poisson_workload(20, 50.0, seed=1), poisson_workload(20, 50.0, seed=2)
    assert a == b and a != c
    times = [r.arrival_ms for r in a]
    assert times[0] == 0.0 and times == sorted(times)
    # mean gap of an exponential with rate 50/s is 20 ms; 19 gaps of a seeded draw stay well within 5..80
    assert 5.0 < times[-1] / 19 < 80.0


def test_a_good_file_parses_sorted_with_optional_keys(tmp_path):
    path = tmp_path / "w.jsonl"
    path.write_text('{"arrival_ms": 50, "prompt": "法国的首都是", "max_new_tokens": 4}\n\n'
                    '{"arrival_ms": 0.5, "prompt": "The capital of Peru is", "max_new_tokens": 8, '
                    '"ignore_eos": true, "prompt_tokens": 64, "request_id": "peru"}\n', encoding="utf-8")
    first, second = load_workload_file(path)
    assert first == WorkloadRequest(0.5, "The capital of Peru is", 8, True, 64, "peru")
    assert second.arrival_ms == 50.0 and second.request_id == ""


GOOD = {"arrival_ms": 0, "prompt": "法国的首都是", "max_new_tokens": 4}


@pytest.mark.parametrize("line, why", [
    ("not json", "not JSON"),
    ("[1, 2]", "expected a JSON object"),
    (json.dumps({k: v for k, v in GOOD.items() if k != "prompt"}), "missing 'prompt'"),
    (json.dumps({**GOOD, "colour": "red"}), "unknown key(s) colour"),
    (json.dumps({**GOOD, "arrival_ms": "soon"}), "'arrival_ms' has the wrong type"),
    (json.dumps({**GOOD, "arrival_ms": -1}), "arrival_ms must be a number in 0..60000"),
    (json.dumps({**GOOD, "arrival_ms": 1e12}), "arrival_ms must be a number in 0..60000"),
    (json.dumps({**GOOD, "max_new_tokens": 0}), "max_new_tokens must be 1..4096"),
    (json.dumps({**GOOD, "max_new_tokens": 2.5}), "'max_new_tokens' has the wrong type"),
    (json.dumps({**GOOD, "max_new_tokens": True}), "'max_new_tokens' has the wrong type"),
    (json.dumps({**GOOD, "prompt": "   "}), "the prompt is empty"),
    (json.dumps({**GOOD, "ignore_eos": "yes"}), "'ignore_eos' has the wrong type"),
    ('{"arrival_ms": NaN, "prompt": "x", "max_new_tokens": 1}', "arrival_ms must be a number"),
])
def test_a_bad_line_is_refused_with_its_number(line, why):
    lines = [json.dumps(GOOD), "", line]  # the bad one is line 3 (blank lines still count)
    with pytest.raises(WorkloadError) as err:
        parse_workload_lines(lines)
    assert str(err.value).startswith("workload line 3: ") and why in str(err.value)
    assert err.value.key == "bad_workload_line" and err.value.params["line"] == 3
    _has_words_in_both_languages(err.value)


def _has_words_in_both_languages(err) -> None:
    """A page says it from `why` and data fields alone: a template in zh and en, no English in the fields."""
    from lesson.text import TEXTS, placeholders

    why = err.params["why"]
    for lang in ("zh", "en"):
        assert f"sl_wl_why_{why}" in TEXTS[lang]
    fields = {k: v for k, v in err.params.items() if k not in ("why", "reason", "line")}
    assert placeholders(TEXTS["zh"][f"sl_wl_why_{why}"]) == set(fields)
    assert not [v for v in fields.values() if isinstance(v, str) and " " in v.strip(", ")]  # data, not prose


def test_a_page_passes_the_caps_it_applies():
    line = json.dumps({**GOOD, "max_new_tokens": 100})
    parse_workload_lines([line])  # within the engine's 4096
    with pytest.raises(WorkloadError) as err:
        parse_workload_lines([line], max_new_tokens=64)
    assert err.value.params["why"] == "max_new_tokens_range" and err.value.params["limit"] == 64
    assert "1..64, got 100" in str(err.value)
    with pytest.raises(WorkloadError) as err:
        parse_workload_lines([json.dumps({**GOOD, "prompt_tokens": 300})], max_prompt_tokens=256)
    assert err.value.params["why"] == "prompt_tokens_range" and err.value.params["limit"] == 256
    for lines in (["", "  "], [json.dumps(GOOD)] * 513):
        with pytest.raises(WorkloadError) as err:
            parse_workload_lines(lines)
        _has_words_in_both_languages(err.value)


def test_the_shipped_example_file_parses():
    from pathlib import Path

    import engine.contract.serving

    workload = load_workload_file(Path(engine.contract.serving.__file__).parent / "example_workload.jsonl")
    assert len(workload) == 5 and workload[3].request_id == "long-en" and workload[3].prompt_tokens == 512


def test_an_empty_or_missing_file_is_refused(tmp_path):
    with pytest.raises(WorkloadError, match="no requests"):
        parse_workload_lines(["", "  "])
    with pytest.raises(WorkloadError, match="cannot read workload file"):
        load_workload_file(tmp_path / "missing.jsonl")


def test_workloads_import_no_torch():
    import subprocess
    import sys

    code = "import sys, engine.contract.serving.workloads, engine.cli.serve; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"

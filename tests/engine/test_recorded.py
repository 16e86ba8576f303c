"""Reading a recorded run from anywhere: every kind the engine writes opens; anything else is one refusal
(RecordedFileError, key "recorded_file") that names the check, and the page says it in both languages."""

from __future__ import annotations

import dataclasses
import json

import pytest

from engine.contract.recorded import (
    MAX_TRACE_STEPS, RecordedComparison, RecordedFileError, read_index, read_recorded,
)
from engine.contract.trace import Provenance, RequestTrace
from lesson.messages import error_message
from tests.factories import fake_comparison, make_run, make_sweep, make_trace

PROV = Provenance("AMD EPYC", 2, "cpu", "", "2.13.0", "5.24.0", "2025-06-01T14:03:12Z")
LIMIT = 1_000_000


def refusal(data, max_bytes: int = LIMIT) -> RecordedFileError:
    with pytest.raises(RecordedFileError) as caught:
        read_recorded(data, max_bytes)
    assert caught.value.key == "recorded_file"
    return caught.value


@pytest.mark.parametrize("make, kind", [
    (lambda: dataclasses.replace(make_trace(), provenance=PROV), "trace"),
    (lambda: dataclasses.replace(make_run(), provenance=PROV), "serving_run"),
    (lambda: dataclasses.replace(make_sweep(), provenance=PROV), "sweep"),
    (lambda: RecordedComparison("default", fake_comparison(), PROV), "cache_comparison"),
])
def test_every_kind_the_engine_writes_opens_as_itself(make, kind):
    run = make()
    recorded = read_recorded(run.to_json().encode("utf-8"), LIMIT)
    assert recorded.kind == kind and recorded.run == run and recorded.provenance == PROV
    assert read_recorded(recorded.json, LIMIT).run == run  # the canonical one-line JSON reads back the same


def test_a_file_of_serving_runs_opens_as_all_of_them():
    runs = [make_run(policy=p) for p in ("chunked", "one-at-a-time")]
    lab_download = "[" + ",".join(r.to_json(indent=None) for r in runs) + "]"  # the serving lab's download
    cli_all = json.dumps({"runs": [r.to_dict() for r in runs]})  # engine serve --policy all --json
    for text in (lab_download, cli_all):
        recorded = read_recorded(text, LIMIT)
        assert recorded.kind == "serving_run" and list(recorded.runs) == runs


def test_an_older_trace_without_provenance_opens_with_none():
    assert read_recorded(make_trace().to_json(), LIMIT).provenance is None


def mutated(change) -> str:
    data = json.loads(make_trace().to_json())
    change(data)
    return json.dumps(data)


@pytest.mark.parametrize("data, why", [
    ("x" * 200, "too_large"),
    (b"\xff\xfe{}", "not_text"),
    ("<script>alert(1)</script>", "not_json"),
    ("[" * 500 + "]" * 500, "too_deep"),
    ('{"a": ' + "9" * 500 + "}", "long_number"),
    ('{"steps": [], "schema_version": NaN}', "not_finite"),
    ('{"hello": "world"}', "unknown_kind"),
    ("[1, 2, 3]", "unknown_kind"),
    ('{"kind": "serving_run"}', "invalid"),
    (mutated(lambda d: d["steps"][0].update(start_ms="soon")), "invalid"),
    (mutated(lambda d: d["steps"][0].update(input_ids=["a"])), "invalid"),
    (mutated(lambda d: d["model"].update(num_layers=True)), "invalid"),
    (mutated(lambda d: d.update(steps="<script>")), "invalid"),
    (mutated(lambda d: d.update(provenance={"cpu": "<script>"})), "invalid"),
])
def test_a_malformed_or_hostile_file_is_refused_with_its_reason(data, why):
    err = refusal(data, max_bytes=100 if why == "too_large" else LIMIT)
    assert err.params["why"] == why
    for lang in ("zh", "en"):
        words = error_message(err, lang)
        assert words and "{" not in words and "<script>" not in words


def test_a_trace_longer_than_the_engine_writes_is_refused():
    trace = make_trace(("a",), ("x",) * 3)
    data = json.loads(trace.to_json())
    step = data["steps"][-1]
    data["steps"] += [dict(step, index=step["index"] + i) for i in range(1, MAX_TRACE_STEPS)]
    err = refusal(json.dumps(data), max_bytes=50_000_000)
    assert err.params["why"] == "too_many" and err.params["limit"] == MAX_TRACE_STEPS


def test_the_refusal_says_the_kind_and_page_in_words():
    err = RecordedFileError("wrong_kind", "x", kind="serving_run", expected="serving")
    assert "serving lab" in error_message(err, "en") and "服务实验室" in error_message(err, "zh")
    odd = RecordedFileError("a-why-no-one-wrote", "x", kind="<b>x</b>")
    assert "this version" in error_message(odd, "en")


def test_an_index_names_files_in_its_own_folder_only(tmp_path):
    entry = {"name": "x", "kind": "trace", "file": "../secret.json", "figures": [], "about": {}, "provenance": None}
    (tmp_path / "index.json").write_text(json.dumps({"schema": "prefill-decode.gallery/1", "runs": [entry]}))
    with pytest.raises(RecordedFileError):
        read_index(tmp_path / "index.json")


def test_a_run_read_back_equals_the_trace_written():
    trace = dataclasses.replace(make_trace(), provenance=PROV)
    assert RequestTrace.from_json(read_recorded(trace.to_json(), LIMIT).json) == trace


def test_reading_a_recorded_run_needs_no_torch():
    import subprocess
    import sys

    code = ("import sys, engine.contract.recorded, lesson.recorded; "
            "assert 'torch' not in sys.modules and 'streamlit' not in sys.modules")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True).returncode == 0

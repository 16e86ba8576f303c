"""Hostile saved serving runs (`python -m lesson.export --serving-run`, and whatever else reads one with
ServingRun.from_json): 100 000 brackets, a 5000-digit number, times of 1e308, NaN or Infinity. Each is one
line, in bounded time and memory, before a file is written; nothing non-finite reaches JSON, Perfetto
or an SVG attribute. A good run with --perfetto writes its Perfetto trace."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest

from engine.contract.errors import LimitError
from engine.contract.serving.trace import ServingRun
from lesson.perfetto import check_trace_events, to_perfetto_json
from tests.factories import make_run
from tests.hostile.bounded import assert_one_line, python

SPLICE = "@@hostile@@"
NON_FINITE = re.compile(r"\b(inf|nan|Infinity|NaN)\b")


def run_text(change) -> str:
    data = make_run(policy="chunked").to_dict()
    change(data)
    return json.dumps(data).replace(f'"{SPLICE}"', RAW.get(_raw_key(data), ""))


RAW: dict[str, str] = {}


def _raw_key(data) -> str:
    return data.get("scenario", "")


def splice(name: str, raw: str):
    def change(data: dict) -> None:
        data["scenario"] = name
        data["requests"][0]["finish_ms"] = SPLICE
        RAW[name] = raw
    return change


def set_time(value: float):
    def change(data: dict) -> None:
        data["requests"][0]["finish_ms"] = value
        data["iterations"][0]["end_ms"] = value
    return change


CASES = {
    "100 000 brackets": (splice("deep", "[" * 100_000 + "]" * 100_000), "nested"),
    "a 5000-digit number": (splice("digits", "9" * 5000), "number"),
    "a time of 1e308 ms": (set_time(1e308), "1e+308"),
    "NaN": (splice("nan", "NaN"), "NaN"),
    "Infinity": (splice("inf", "-Infinity"), "Infinity"),
    "a time of 1e400 (inf when read)": (splice("overflow", "1e400"), "1e400"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_hostile_run_is_one_line_and_writes_nothing(name, tmp_path):
    change, word = CASES[name]
    path, out = tmp_path / "run.json", tmp_path / "out"
    path.write_text(run_text(change), encoding="utf-8")
    outcome = python("-m", "lesson.export", "--out", str(out), "--serving-run", str(path), "--perfetto")
    assert_one_line(outcome, 1, word, seconds=30, peak_mb=600)
    assert not out.exists() or not any(out.iterdir())


@pytest.mark.parametrize("name", list(CASES))
def test_the_reader_refuses_before_building_a_record(name):
    change, _ = CASES[name]
    with pytest.raises(LimitError):
        ServingRun.from_json(run_text(change))


def test_a_run_with_a_negative_layer_count_is_one_line(tmp_path):
    data = make_run(policy="chunked").to_dict()
    data["model"]["num_layers"] = -1
    path = tmp_path / "run.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    outcome = python("-m", "lesson.export", "--out", str(tmp_path / "out"), "--serving-run", str(path))
    assert_one_line(outcome, 1, "run.json", seconds=30, peak_mb=600)


def test_serving_run_writes_its_perfetto_trace_when_asked(tmp_path):
    path, out = tmp_path / "run.json", tmp_path / "out"
    path.write_text(make_run(policy="chunked").to_json(), encoding="utf-8")
    outcome = python("-m", "lesson.export", "--out", str(out), "--serving-run", str(path), "--perfetto")
    assert outcome.returncode == 0, outcome.describe()
    trace = out / "serving.perfetto.json"
    assert str(trace) in outcome.stdout and check_trace_events(json.loads(trace.read_text(encoding="utf-8"))) == []


def test_nothing_non_finite_is_ever_written():
    """A run built in memory with an infinite time (no file can hold one now) is refused by every writer."""
    run = make_run(policy="chunked")
    first = run.requests[0]
    times = (*first.token_times_ms[:-1], float("inf"))
    bad = dataclasses.replace(run, requests=(dataclasses.replace(first, finish_ms=float("inf"), token_times_ms=times),
                                             *run.requests[1:]),
                              iterations=(dataclasses.replace(run.iterations[0], end_ms=float("nan")),
                                          *run.iterations[1:]))
    with pytest.raises(LimitError):
        bad.to_json()
    with pytest.raises(LimitError):
        to_perfetto_json(bad)
    good = to_perfetto_json(run) + run.to_json()
    assert not NON_FINITE.search(good)


def test_what_a_good_run_writes_holds_only_finite_numbers(tmp_path):
    path, out = tmp_path / "run.json", tmp_path / "out"
    path.write_text(make_run(policy="chunked").to_json(), encoding="utf-8")
    assert python("-m", "lesson.export", "--out", str(out), "--serving-run", str(path), "--perfetto").returncode == 0
    for written in out.iterdir():
        attributes = re.findall(r'="([^"]*)"', written.read_text(encoding="utf-8")) if written.suffix == ".svg" \
            else [written.read_text(encoding="utf-8")]
        assert not [a for a in attributes if NON_FINITE.search(a) and written.suffix != ".svg" or
                    re.fullmatch(r"-?(inf|nan)", a)], written

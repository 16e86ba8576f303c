"""Exports of a run with prefix caching carry its cached counts: the JSON, the Perfetto trace (a
look-up slice before each Prefill) and the slide kit (the block-sharing figure)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from engine.contract.serving.trace import ServingRun
from lesson.perfetto import check_trace_events, trace_events
from lesson.slides import serving_slides
from tests.factories import make_run

FIXTURE = Path(__file__).resolve().parents[1] / "serving" / "fixtures" / "prefix_near_miss_tight.json"


def run() -> ServingRun:
    return ServingRun.from_json(FIXTURE.read_text(encoding="utf-8"))


def test_the_json_carries_cached_counts_and_miss_reasons():
    data = json.loads(run().to_json())
    assert data["settings"]["prefix_caching"] is True
    first = data["requests"][1]["prefix"]
    assert first["miss"] == "diverged" and first["derived"]["num_computed_tokens"] == first["num_tokens"]
    assert any(it["lookups"] for it in data["iterations"]) and any(it["evictions"] for it in data["iterations"])


def test_perfetto_has_a_look_up_slice_before_each_prefill():
    r = run()
    doc = trace_events(r)
    assert check_trace_events(doc) == []
    lookups = [e for e in doc["traceEvents"] if e.get("cat") == "lookup"]
    assert len(lookups) == sum(len(it.lookups) for it in r.iterations) == len(r.requests)
    first_prefill = {}
    for e in doc["traceEvents"]:
        if e.get("cat") in ("prefill", "prefill_chunk"):
            first_prefill.setdefault(e["tid"], e["ts"])
    for e in lookups:
        assert e["ts"] + e["dur"] <= first_prefill[e["tid"]] + 1e-6
        assert set(e["args"]) == {"tokens", "cached_tokens", "computed_tokens", "miss"}
    assert not [e for e in trace_events(make_run())["traceEvents"] if e.get("cat") == "lookup"]  # cache off


def test_the_slide_kit_adds_the_block_sharing_figure_only_with_the_cache_on():
    on = run()
    names = [s.name for s in serving_slides([on], lang="en", tag="abc123")]
    assert any(n.endswith("_prefix_en") for n in names)
    off = dataclasses.replace(on, settings=dataclasses.replace(on.settings, prefix_caching=False))
    assert not any(s.name.endswith("_prefix_zh") for s in serving_slides([off], lang="zh", tag="abc123"))

"""The serving lab's prefix-caching switch (AppTest): off, the page says how to see the cache; on, every
policy runs with it and the first once more without it, and the page shows the per-request hit table, both
runs' TTFT side by side and the block-sharing figure; a system prompt counts against the prompt cap."""

from __future__ import annotations

import json

import pytest

from app_support.serving import check_caps
from engine.contract.config import ServingCaps
from engine.contract.errors import CapError
from engine.contract.serving.workloads import WorkloadRequest
from lesson.text import t
from tests.app.apptest import assert_healthy, kept, needs_model, serving_lab_page

LINES = "\n".join(json.dumps({"arrival_ms": 300 * i, "prompt": q, "max_new_tokens": 3, "system_tokens": 48,
                              "request_id": f"chat{i}"}, ensure_ascii=False)
                  for i, q in enumerate(("法国的首都是", "德国的首都是", "日本的首都是")))


def test_a_system_prompt_counts_against_the_prompt_cap():
    caps = ServingCaps(max_requests=4, max_prompt_tokens=64, max_new_tokens=8)
    check_caps((WorkloadRequest(0.0, "x", 4, prompt_tokens=32, system_tokens=32),), caps)
    with pytest.raises(CapError) as err:
        check_caps((WorkloadRequest(0.0, "x", 4, prompt_tokens=32, system_tokens=48),), caps)
    assert err.value.params["n"] == 80


@pytest.fixture
def lab(monkeypatch):
    yield from serving_lab_page(monkeypatch, {"PREFILL_DECODE_SERVING_MAX_REQUESTS": "6",
                                              "PREFILL_DECODE_SERVING_MAX_PROMPT_TOKENS": "256",
                                              "PREFILL_DECODE_SERVING_MAX_NEW_TOKENS": "16",
                                              "PREFILL_DECODE_SERVING_DISAGGREGATED": "0"})


@pytest.mark.slow
@needs_model
def test_the_switch_runs_with_the_cache_and_shows_hits_misses_and_ttft_side_by_side(lab):
    lab.radio(key="sl_source").set_value("jsonl").run()
    lab.text_area(key="sl_jsonl").set_value(LINES).run()
    lab.button(key="sl_run").click().run()
    assert_healthy(lab)
    assert t("zh", "pc_off_note") in [str(c.value) for c in lab.caption]  # off: a hint, no table
    lab.toggle(key="sl_prefix_caching").set_value(True).run()
    lab.button(key="sl_run").click().run()
    assert_healthy(lab)
    runs = kept(lab, "sl_runs").runs
    assert all(r.settings.prefix_caching for r in runs)
    off = kept(lab, "sl_runs").prefix_off
    assert not off.settings.prefix_caching and off.settings.policy == runs[0].settings.policy
    assert [r.output_ids for r in off.requests] == [r.output_ids for r in runs[0].requests]
    assert runs[0].requests[1].prefix.num_cached_tokens > 0
    tables = [f.value for f in lab.dataframe]
    hits = next(f for f in tables if t("zh", "pc_col_cached") in f.columns and t("zh", "pc_col_reason") in f.columns)
    assert list(hits[t("zh", "pc_col_request")]) == ["chat0", "chat1", "chat2"]
    assert hits[t("zh", "pc_col_reason")][0] == t("zh", "pc_miss_first_seen")
    assert any(t("zh", "pc_col_ttft_off") in f.columns and t("zh", "pc_col_ttft_on") in f.columns for f in tables)
    words = "\n".join(str(m.value) for m in lab.markdown)
    assert "TTFT 中位数" in words and "两次的 Token 完全相同：是" in words
    assert len(lab.get("image")) == 3 * len(runs) + 1 + 1 + 1  # three tabs a policy, the table, block sharing,
    # and the engine's own queue


def test_outside_classroom_mode_the_page_folds_the_block_table_to_its_column():
    """Drawn as wide as its blocks and shrunk into the page's column, its labels came out at 7-8.6 px."""
    import re
    from pathlib import Path

    from app_support.prefix_cache import PAGE_COLUMN_UNITS, prefix_svg
    from engine.contract.serving.trace import ServingRun
    from lesson.diagrams.prefix_cache import render_prefix_cache

    fixture = Path(__file__).resolve().parents[1] / "serving" / "fixtures" / "prefix_near_miss_tight.json"
    run = ServingRun.from_json(fixture.read_text(encoding="utf-8"))
    view_width = re.compile(r'viewBox="[0-9.]+ [0-9.]+ ([0-9.]+)')
    from app_support.run_store import ServingSet

    shown = ServingSet((run,), (run.to_json(),))
    width = float(view_width.search(prefix_svg(shown, 0, "zh", classroom=False)).group(1))
    wide = float(view_width.search(render_prefix_cache(run, lang="zh")).group(1))
    assert width <= PAGE_COLUMN_UNITS < wide, (width, wide)

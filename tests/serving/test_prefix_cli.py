"""`python -m engine serve --prefix-caching`: the per-request hit table and the run's hit rate; the JSON
carries the settings and each request's look-up; without the flag nothing changes in the table."""

from __future__ import annotations

import json

from engine.cli import main
from engine.contract.serving.trace import ServingRun


def test_the_flag_prints_hits_and_misses_and_the_json_carries_them(tmp_path, capsys):
    path = tmp_path / "w.jsonl"
    lines = [{"arrival_ms": 0, "prompt": "Q: 法国的首都是", "max_new_tokens": 2, "system_tokens": 40,
              "request_id": "a"},
             {"arrival_ms": 200, "prompt": "Q: 德国的首都是", "max_new_tokens": 2, "system_tokens": 40,
              "request_id": "b"}]
    path.write_text("\n".join(json.dumps(line, ensure_ascii=False) for line in lines), encoding="utf-8")
    base = ["serve", "--workload", str(path), "--policy", "one-at-a-time", "--block-size", "8"]
    assert main([*base, "--prefix-caching"]) == 0
    out = capsys.readouterr().out
    assert "why not cached" in out and "first time this prefix was seen" in out
    assert "prompt tokens read from the cache" in out
    assert main([*base, "--prefix-caching", "--json"]) == 0
    run = ServingRun.from_json(capsys.readouterr().out)
    assert run.settings.prefix_caching and run.request("b").prefix.num_cached_tokens >= 32
    assert main(base) == 0
    out = capsys.readouterr().out
    assert "why not cached" not in out

"""Reading `vllm bench serve --save-result --save-detailed` files (engine/contract/interop/vllm_import.py).

The fixture follows vLLM's field names (vllm/benchmarks/serve.py; see the module docstring for the
commits read); its numbers are made up, its summary computed from its per-request lists with
vLLM's formulas. Variants of it (the older benchmark_serving.py layout, a doctored summary, broken
files) are derived here."""

from __future__ import annotations

import json

import numpy as np
import pytest

from engine.contract.interop.vllm_import import VllmResultError, format_comparison, load_vllm_result, read_vllm_result
from engine.contract.serving.trace import ServingRun
from lesson import export
from lesson.perfetto import check_trace_events, serving_run_events
from tests.factories import VLLM_RESULT


def fixture() -> dict:
    return json.loads(VLLM_RESULT.read_text(encoding="utf-8"))


def test_fixture_imports_with_measured_arrivals_and_vllm_definitions():
    data = fixture()
    imp = load_vllm_result(VLLM_RESULT)
    run = imp.run
    assert imp.placement == "start_times" and imp.failed[0][0] == 5 and "ServerDisconnectedError" in imp.failed[0][1]
    assert [r.request_id for r in run.requests] == ["r0", "r1", "r2", "r3", "r4", "r6", "r7"]  # r5 failed
    assert run.iterations == () and run.notes[0].startswith("observed from the client")
    t0 = data["start_times"][0]
    for r in run.requests:
        i = int(r.request_id[1:])
        assert r.arrival_ms == pytest.approx((data["start_times"][i] - t0) * 1e3)
        assert r.ttft_ms == pytest.approx(data["ttfts"][i] * 1e3)
        assert r.e2el_ms == pytest.approx(data["latencies"][i] * 1e3)
        assert len(r.itl_ms) == len(data["itls"][i]) == len(r.output_pieces) - 1
        assert r.num_output_tokens == data["output_lens"][i] and r.prompt_len == data["input_lens"][i]
        # vLLM's TPOT: (latency - ttft) / (output tokens - 1)
        assert r.tpot_ms == pytest.approx((data["latencies"][i] - data["ttfts"][i]) / (data["output_lens"][i] - 1)
                                          * 1e3)
    # r2 streamed two tokens in one chunk: fewer ITLs than tokens - 1, as vLLM records it
    r2 = run.request("r2")
    assert len(r2.itl_ms) == r2.num_output_tokens - 2
    # the run's own metrics (engine/contract/serving/metrics.py) agree with the file's summary
    m = run.metrics
    assert m.num_completed == data["completed"] and m.total_output_tokens == data["total_output_tokens"]
    for name in ("ttft", "tpot", "itl", "e2el"):
        d = getattr(m, name)
        assert (d.mean, d.p50, d.p90, d.p99) == pytest.approx(
            (data[f"mean_{name}_ms"], data[f"p50_{name}_ms"], data[f"p90_{name}_ms"], data[f"p99_{name}_ms"]))
        assert d.p50 <= d.p90 <= d.p99 <= d.max
    assert ServingRun.from_json(run.to_json()) == run


def test_every_summary_number_is_checked_and_the_fixture_agrees():
    imp = load_vllm_result(VLLM_RESULT)
    keys = {c.key for c in imp.comparisons}
    assert {"p99_ttft_ms", "median_itl_ms", "std_e2el_ms", "mean_tpot_ms", "completed", "total_output_tokens",
            "request_throughput", "output_throughput"} <= keys
    assert len(keys) == 31 and imp.differing() == ()
    assert imp.ignored_fields == ("note",)  # a --metadata pair: listed, not read
    assert "0 of 31 summary numbers differ" in format_comparison(imp)


def test_a_summary_that_disagrees_with_its_requests_is_shown():
    data = fixture()
    data["p99_ttft_ms"] += 12.5
    data["total_output_tokens"] -= 3
    imp = read_vllm_result(json.dumps(data))
    diff = {c.key: c for c in imp.differing()}
    assert set(diff) == {"p99_ttft_ms", "total_output_tokens"}
    assert diff["p99_ttft_ms"].difference == pytest.approx(-12.5)
    assert diff["total_output_tokens"].difference == pytest.approx(3.0)
    text = format_comparison(imp)
    assert "2 of 31 summary numbers differ from the per-request data: p99_ttft_ms, total_output_tokens" in text
    # recomputed by hand: numpy's linear interpolation over the successful TTFTs
    ok = [i for i, e in enumerate(data["errors"]) if not e]
    assert diff["p99_ttft_ms"].recomputed == pytest.approx(np.percentile([data["ttfts"][i] for i in ok], 99) * 1e3)


def _old_layout(data: dict) -> dict:
    """benchmarks/benchmark_serving.py before `vllm bench serve`: no latencies / start_times / queue_times,
    and the goodput key spelled with a colon."""
    for key in ("latencies", "start_times", "queue_times", "failed", "max_output_tokens_per_s",
                "max_concurrent_requests", "rtfx", "endpoint_type"):
        data.pop(key)
    data["request_goodput:"] = data.pop("request_goodput")
    return data


def test_older_layout_places_arrivals_and_says_so():
    data = _old_layout(fixture())
    imp = read_vllm_result(json.dumps(data))
    assert imp.placement == "rate" and imp.ignored_fields == ("note",)
    arrivals = [r.arrival_ms for r in imp.run.requests]
    assert arrivals == pytest.approx([i * 250.0 for i in (0, 1, 2, 3, 4, 6, 7)])  # evenly at 4 requests/s
    assert any("PLACED evenly at the request rate (4/s)" in n for n in imp.run.notes)
    assert any("no per-request latencies" in n for n in imp.run.notes)
    # E2EL without latencies: TTFT + ITLs, 0.4 ms short of vLLM's stream-end latency in this fixture
    diff = {c.key for c in imp.differing()}
    assert {"mean_e2el_ms", "mean_tpot_ms"} <= diff and not any(k.endswith("_ttft_ms") or k.endswith("_itl_ms")
                                                                   for k in diff)
    e2el = next(c for c in imp.comparisons if c.key == "mean_e2el_ms")
    assert e2el.difference == pytest.approx(-0.4, abs=1e-6) and "no latencies" in e2el.note


def test_burst_and_concurrency_placement():
    data = _old_layout(fixture())
    data["request_rate"] = "inf"
    assert {r.arrival_ms for r in read_vllm_result(json.dumps(data)).run.requests} == {0.0}
    data["max_concurrency"] = 2
    imp = read_vllm_result(json.dumps(data))
    assert imp.placement == "burst+concurrency"
    # two slots: r0 and r1 at 0; r2 when the first of them finished; never more than 2 in flight
    spans = sorted((r.arrival_ms, r.finish_ms) for r in imp.run.requests)
    for t, _ in spans:
        assert sum(1 for a, b in spans if a <= t < b - 1e-9) <= 2
    r0, r1, r2 = (imp.run.request(f"r{i}") for i in range(3))
    assert r0.arrival_ms == r1.arrival_ms == 0.0 and r2.arrival_ms == pytest.approx(min(r0.finish_ms, r1.finish_ms))


@pytest.mark.parametrize("mutate, words", [
    (lambda d: d.pop("ttfts"), "missing ttfts"),
    (lambda d: [d.pop(k) for k in ("ttfts", "itls", "input_lens", "output_lens")],
     "missing input_lens, output_lens, ttfts, itls: this file has only the summary; run vllm bench serve with "
     "--save-result --save-detailed"),
    (lambda d: d["itls"].pop(), "'itls' has 7 entries but ttfts has 8"),
    (lambda d: d.__setitem__("ttfts", "fast"), "'ttfts' should be a list"),
    (lambda d: d["ttfts"].__setitem__(0, -1), "ttfts[0] is -1, not a number >= 0"),
    (lambda d: d["itls"].__setitem__(1, [0.1, "x"]), "itls[1] should be a list of seconds >= 0"),
    (lambda d: d.__setitem__("errors", ["boom"] * 8), "all 8 requests failed (first error: 'boom')"),
])
def test_broken_files_get_one_clear_message(mutate, words):
    data = fixture()
    mutate(data)
    with pytest.raises(VllmResultError) as err:
        read_vllm_result(json.dumps(data))
    assert words in str(err.value) and "\n" not in str(err.value)
    assert err.value.key == "vllm_result"
    from lesson.text import TEXTS, placeholders

    why = err.value.params["why"]  # a page words it from `why` and the data fields, in its own language
    fields = {k for k in err.value.params if k not in ("why", "reason")}
    for lang in ("zh", "en"):
        assert placeholders(TEXTS[lang][f"sl_vllm_why_{why}"]) == fields


def test_not_json_not_an_object_and_appended_results():
    for text, words in (("{", "not JSON"), ("[1, 2]", "expected a JSON object"),
                        (VLLM_RESULT.read_text() + "\n" + VLLM_RESULT.read_text(), "several results (written with "
                                                                           "--append-result)")):
        with pytest.raises(VllmResultError, match=r".*" + words.replace("(", r"\(").replace(")", r"\)")):
            read_vllm_result(text)


def test_export_cli_from_vllm(tmp_path, capsys):
    assert export.main(["--out", str(tmp_path), "--from-vllm", str(VLLM_RESULT), "--perfetto"]) == 0
    run = ServingRun.from_json((tmp_path / "serving_run.json").read_text(encoding="utf-8"))
    assert len(run.requests) == 7
    comparison = json.loads((tmp_path / "vllm_comparison.json").read_text(encoding="utf-8"))
    assert comparison["placement"] == "start_times" and len(comparison["comparisons"]) == 31
    assert "0 of 31 summary numbers differ" in (tmp_path / "vllm_comparison.txt").read_text(encoding="utf-8")
    doc = json.loads((tmp_path / "serving.perfetto.json").read_text(encoding="utf-8"))
    assert check_trace_events(doc) == [] and check_trace_events(serving_run_events(run)) == []
    bad = tmp_path / "bad.json"
    bad.write_text('{"ttfts": []}', encoding="utf-8")
    capsys.readouterr()
    assert export.main(["--out", str(tmp_path), "--from-vllm", str(bad)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: not a usable vLLM bench serve result: missing input_lens") and err.count("\n") == 1
    assert export.main(["--out", str(tmp_path), "--from-vllm", str(VLLM_RESULT), "--schematic", "2", "2"]) == 2


def test_imports_are_observed_runs_and_the_gantt_says_where_the_times_come_from():
    """policy "observed" (not an engine policy), and the Gantt's subtitle: vLLM's measured times, or
    arrivals placed from the request rate when the file has no start_times (never "all measured")."""
    from engine.contract.interop.vllm_import import arrivals_placed
    from lesson.diagrams.serving_gantt import gantt_subtitle, render_serving_gantt, run_kind
    from lesson.serving_views import run_label
    from lesson.text import t

    data = json.loads(VLLM_RESULT.read_text(encoding="utf-8"))
    measured = read_vllm_result(json.dumps(data), name="bench").run
    del data["start_times"]
    placed = read_vllm_result(json.dumps(data), name="bench").run
    assert measured.settings.policy == placed.settings.policy == "observed"
    assert run_kind(measured) == run_kind(placed) == "vllm"
    assert not arrivals_placed(measured) and arrivals_placed(placed)
    for lang in ("zh", "en"):
        assert run_label(measured, lang) == t(lang, "sv_policy_observed")
        assert gantt_subtitle(measured, lang).startswith(t(lang, "sv_gantt_subtitle_vllm", n=len(measured.requests),
                                                           model=measured.model.model_id,
                                                           device=measured.model.device)[:12])
        assert gantt_subtitle(placed, lang) == t(lang, "sv_gantt_subtitle_vllm_placed", n=len(placed.requests),
                                                 model=placed.model.model_id, device=placed.model.device)
    assert "arrivals placed from its request rate" in render_serving_gantt(placed, lang="en")
    assert "所有时间均为实测" not in render_serving_gantt(placed, lang="zh")
    assert "所有时间均为实测" not in render_serving_gantt(measured, lang="zh")
    assert ServingRun.from_json(placed.to_json()).settings.policy == "observed"  # round-trips

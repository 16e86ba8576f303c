"""The serving figures (Gantt, batch composition, KV blocks, metric table): structure checked
against synthetic runs (tests/factories.py), alt texts, hostile text, and a look in Chromium."""

from __future__ import annotations

import dataclasses
import re

import pytest

from engine.contract.serving.trace import SLO, ServingRun
from lesson.diagrams.batch_composition import render_batch_composition
from lesson.diagrams.kv_blocks import render_kv_blocks
from lesson.diagrams.serving_gantt import MAX_ROWS, gantt_segments, itl_spikes, render_serving_gantt
from lesson.diagrams.serving_metrics import render_serving_metrics
from lesson.layout import text_width
from lesson.serving_views import (METRIC_ROWS, disagg_verdict, figure_alt, findings, metric_records, metric_table,
                                  metrics_alt, what_to_see)
from lesson.style import classroom_style
from lesson.text import t
from tests.factories import HAS_DEFAULT_MODEL, LONG_PROMPT_DURING_CHATS, client_run, make_run
from tests.svg import SVG, all_text, parse, with_class

POLICIES = ("one-at-a-time", "prefill-first", "chunked", "disaggregated")


@pytest.fixture(scope="module")
def runs() -> dict[str, ServingRun]:
    return {p: make_run(policy=p) for p in POLICIES}


# --- Gantt --------------------------------------------------------------------------

@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_gantt_has_one_row_per_request_and_one_bar_per_pass_entry(runs, policy, lang):
    run = runs[policy]
    root = parse(render_serving_gantt(run, lang=lang))
    assert root.get("viewBox") == f"0 0 {root.get('width')} {root.get('height')}"
    rows = with_class(root, "request-row")
    assert [r.get("data-request-id") for r in rows] == [r.request_id for r in run.requests]
    passes = [el for el in with_class(root, "segment") if el.get("class").split()[1] in
              ("prefill", "prefill_chunk", "decode")]
    assert len(passes) == sum(len(it.entries) for it in run.iterations)
    for rid in ("r0", "r4"):
        ticks = [g for g in with_class(root, "token-ticks") if g.get("data-request-id") == rid][0]
        assert len(list(ticks)) == run.request(rid).num_output_tokens


def test_prefill_first_shows_the_stall_and_chunking_shortens_it(runs):
    first, chunked = runs["prefill-first"], runs["chunked"]
    root = parse(render_serving_gantt(first, lang="en"))
    spikes = with_class(root, "itl-spike")
    assert spikes, "the long Prefill must show as an ITL spike on the running Decodes"
    assert {s.get("data-request-id") for s in spikes} >= {"r0", "r1", "r2", "r3"}
    biggest = max(float(s.get("data-ms")) for s in spikes)
    assert biggest == pytest.approx(first.metrics.itl.max, abs=1e-3)
    assert with_class(root, "spike-label")
    stalls = with_class(root, "segment", "stall")
    assert {s.get("data-request-id") for s in stalls} >= {"r0", "r1", "r2", "r3"}
    assert "1,024" not in all_text(root) and "200 prompt positions (r4)" in all_text(root)
    # chunked: the prompt goes in pieces, each pass also carries the Decodes; the worst gap is smaller
    chunks = with_class(parse(render_serving_gantt(chunked, lang="en")), "segment", "prefill_chunk")
    assert len(chunks) >= 2 and chunked.metrics.itl.max < first.metrics.itl.max / 2


def test_disaggregated_gantt_draws_each_handoff(runs):
    run = runs["disaggregated"]
    root = parse(render_serving_gantt(run, lang="zh"))
    handoffs = with_class(root, "segment", "handoff")
    assert [h.get("data-request-id") for h in handoffs] == [h.request_id for h in run.handoffs]
    assert "KV 交接" in all_text(root) and "nvlink" in all_text(root)


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_a_run_seen_from_a_client_has_no_passes_but_every_token(lang):
    run = client_run()
    root = parse(render_serving_gantt(run, lang=lang))
    assert len(with_class(root, "request-row")) == len(run.requests)
    observed = with_class(root, "segment", "observed_ttft")
    assert len(observed) == len(run.requests)
    assert not with_class(root, "segment", "decode") and not with_class(root, "segment", "stall")
    assert sum(len(list(g)) for g in with_class(root, "token-ticks")) == sum(r.num_output_tokens for r in run.requests)
    assert figure_alt("gantt", run, lang)
    with pytest.raises(ValueError):
        render_batch_composition(run, lang=lang)
    with pytest.raises(ValueError):
        render_kv_blocks(run, lang=lang)


def test_many_requests_fold_past_max_rows():
    spec = tuple((f"r{i}", float(i), 4, 3) for i in range(MAX_ROWS + 7))
    run = make_run(spec, policy="chunked")
    root = parse(render_serving_gantt(run, lang="en"))
    assert len(with_class(root, "request-row")) == MAX_ROWS
    assert f"The first {MAX_ROWS} of {MAX_ROWS + 7} requests" in all_text(root)


def test_hostile_request_ids_and_prompts_stay_text():
    evil = '<script>alert("x")</script>'
    spec = ((evil, 0.0, 4, 4), ("r\u202e1", 1.0, 4, 4), ("a&b\x01", 2.0, 30, 2))
    run = make_run(spec, policy="prefill-first", prompt_text=evil + "\x00\x1b")
    for render in (render_serving_gantt, render_batch_composition, render_kv_blocks):
        svg = render(run, lang="en")
        root = parse(svg)  # well-formed XML: nothing was pasted in as markup
        assert "<script" not in svg and not list(root.iter(f"{SVG}script"))
    svg = render_serving_gantt(run, lang="en")
    assert "&lt;script&gt;" in svg and "\u202e" not in svg and "⟪RLO⟫" in svg
    assert "<script" not in render_serving_metrics([run], lang="en")


def test_spikes_are_gaps_over_three_medians(runs):
    run = runs["prefill-first"]
    median = run.metrics.itl.p50
    gaps = [b - a for r in run.requests for a, b in zip(r.token_times_ms, r.token_times_ms[1:])]
    assert len(itl_spikes(run)) == sum(g > 3 * median for g in gaps)
    kinds = {s.kind for s in gantt_segments(run)}
    assert {"prefill", "decode", "stall"} <= kinds


# --- batch composition -----------------------------------------------------------------

@pytest.mark.parametrize("policy", POLICIES)
def test_batch_composition_has_one_bar_per_pass_with_its_tokens(runs, policy):
    run = runs[policy]
    root = parse(render_batch_composition(run, lang="en"))
    bars = with_class(root, "iteration")
    assert len(bars) == len(run.iterations)
    by_index = {it.index: it for it in run.iterations}
    for bar in bars:
        it = by_index[int(bar.get("data-index"))]
        assert int(bar.get("data-prefill")) == it.num_prefill_tokens
        assert int(bar.get("data-decode")) == it.num_decode_tokens
        drawn = sum(int(r.get("data-tokens")) for r in with_class(bar, "tokens"))
        assert drawn == it.num_tokens
    panels = with_class(root, "panel", "tokens")
    assert len(panels) == (2 if policy == "disaggregated" else 1)


def test_budget_line_sits_at_the_budget_and_no_bar_passes_it(runs):
    run = runs["chunked"]
    assert run.settings.token_budget == 32
    root = parse(render_batch_composition(run, lang="zh"))
    panel = with_class(root, "panel", "tokens")[0]
    top, bottom, y_max = float(panel.get("data-top")), float(panel.get("data-bottom")), float(panel.get("data-y-max"))
    line = with_class(root, "budget-line")[0]
    assert int(line.get("data-budget")) == 32
    expected = bottom - 32 / y_max * (bottom - top)
    assert float(line.get("y1")) == pytest.approx(expected, abs=0.01)
    for bar in with_class(root, "iteration"):
        highest = min(float(r.get("y")) for r in with_class(bar, "tokens"))
        assert highest >= expected - 0.01
    assert not with_class(parse(render_batch_composition(runs["prefill-first"], lang="zh")), "budget-line")


# --- KV blocks ---------------------------------------------------------------------------

@pytest.mark.parametrize("policy", POLICIES)
def test_kv_columns_count_the_blocks_of_each_pass(runs, policy):
    run = runs[policy]
    root = parse(render_kv_blocks(run, lang="en"))
    columns = with_class(root, "kv-column")
    assert len(columns) == len(run.iterations)
    by_index = {it.index: it for it in run.iterations}
    for col in columns:
        snap = by_index[int(col.get("data-index"))].blocks
        assert int(col.get("data-used")) == snap.num_used_blocks
        assert int(col.get("data-free")) == snap.num_free_blocks
        assert sum(int(r.get("data-blocks")) for r in with_class(col, "owned")) == snap.num_used_blocks


def test_kv_block_table_at_the_peak_and_paged_vs_contiguous(runs):
    run = runs["chunked"]
    root = parse(render_kv_blocks(run, lang="en"))
    peak = max(run.iterations, key=lambda it: it.blocks.num_used_blocks)
    cells = with_class(root, "block", "owned")
    assert len(cells) == peak.blocks.num_used_blocks
    assert sum(int(c.get("data-tokens")) for c in cells) == peak.blocks.num_used_tokens
    assert len(with_class(root, "block", "free")) == peak.blocks.num_free_blocks
    paged, contiguous = with_class(root, "memory-bar", "paged")[0], with_class(root, "memory-bar", "contiguous")[0]
    assert int(paged.get("data-reserved")) == run.memory.peak_paged_reserved_tokens
    assert int(contiguous.get("data-reserved")) == run.memory.peak_contiguous_reserved_tokens
    assert f"{run.memory.paged_utilization:.0%}" in all_text(root)
    assert "2309.06180" in all_text(root)


# --- metric table ---------------------------------------------------------------------------

def test_metric_table_has_a_column_per_run_and_the_numbers_of_each(runs):
    ordered = [runs[p] for p in POLICIES]
    header, rows = metric_table(ordered, "en")
    assert header[0] == "Metric" and len(header) == 5 and len(rows) == len(METRIC_ROWS)
    itl_p99 = rows[[r[0] for r in rows].index("ITL p99")]
    assert itl_p99[2] == f"{runs['prefill-first'].metrics.itl.p99:.1f} ms"
    root = parse(render_serving_metrics(ordered, lang="en"))
    table = with_class(root, "metric-table")[0]
    assert int(table.get("data-rows")) == len(METRIC_ROWS) and int(table.get("data-cols")) == 4
    best_itl = [c for c in with_class(root, "cell", "best") if c.get("data-row") == str(
        [r[0] for r in rows].index("ITL p99"))]
    winner = min(range(4), key=lambda i: ordered[i].metrics.itl.p99)
    assert [int(c.get("data-col")) for c in best_itl] == [winner + 1]
    records = metric_records(ordered, "zh")
    assert len(records) == len(METRIC_ROWS) and list(records[0])[0] == "指标"


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_app_tables_metric_name_column_holds_its_longest_name(lang):
    """st.dataframe cut "Goodput（达标/完成 · 请求,…" at 1440 px: the app sets the first column's width."""
    from lesson.layout import text_width
    from lesson.serving_views import name_column_px

    records = metric_records([make_run(policy=p) for p in ("prefill-first", "chunked")], lang)
    longest = max((r[next(iter(r))] for r in records), key=lambda n: text_width(n, 14))
    assert longest.startswith(("Goodput", "KV")) and name_column_px(records) >= text_width(longest, 14) + 24


def test_goodput_row_counts_requests_meeting_every_slo():
    run = make_run(policy="prefill-first", slo=SLO(tpot_ms=3.0))
    good = sum(1 for r in run.requests if r.tpot_ms is None or r.tpot_ms <= 3.0)
    assert run.metrics.num_good == good < len(run.requests)
    _, rows = metric_table([run], "en")
    assert rows[[r[0] for r in rows].index("Goodput (good/done · req/s)")][1].startswith(f"{good}/5")
    assert "TPOT ≤ 3.0 ms" in all_text(parse(render_serving_metrics([run], lang="en")))


def test_same_policy_twice_gets_distinct_columns(runs):
    other = dataclasses.replace(runs["chunked"])
    header, _ = metric_table([runs["chunked"], other], "en")
    assert len(set(header)) == 3


# --- words ---------------------------------------------------------------------------------

@pytest.mark.parametrize("lang", ["zh", "en"])
def test_alt_texts_quote_the_measured_numbers(runs, lang):
    run = runs["prefill-first"]
    gantt = figure_alt("gantt", run, lang)
    assert f"{run.metrics.itl.p99:.1f} ms" in gantt and str(len(run.requests)) in gantt
    assert "200" in figure_alt("batch", run, lang)
    peak = max(run.iterations, key=lambda it: it.blocks.num_used_blocks)
    assert str(peak.blocks.num_used_blocks) in figure_alt("kv", run, lang)
    ordered = [runs[p] for p in POLICIES]
    alt = metrics_alt(ordered, lang)
    assert f"{runs['chunked'].metrics.itl.p99:.1f} ms" in alt
    assert not re.search(r"\{\w+\}", gantt + alt)


def test_findings_compare_the_policies_with_their_numbers(runs):
    lines = findings([runs[p] for p in POLICIES], "en")
    text = " ".join(lines)
    assert f"{runs['prefill-first'].metrics.itl.p99:.1f} ms" in text
    assert f"{runs['chunked'].metrics.itl.p99:.1f} ms" in text
    assert "hand-offs" in text and "one at a time" in text
    assert findings([runs["chunked"]], "zh") == []


def test_unknown_language_is_refused(runs):
    with pytest.raises(ValueError):
        render_serving_gantt(runs["chunked"], lang="fr")


def test_real_run_json_round_trip_draws_the_same(runs):
    run = runs["disaggregated"]
    again = ServingRun.from_json(run.to_json())
    assert render_serving_gantt(again, lang="en") == render_serving_gantt(run, lang="en")


# --- plotly ----------------------------------------------------------------------------------

def test_plotly_gantt_has_the_same_segments_and_escapes_ids():
    from lesson.charts.serving import SEGMENT_ORDER, serving_gantt_figure

    spec = (("<b>x</b>", 0.0, 4, 6), *LONG_PROMPT_DURING_CHATS[1:])
    run = make_run(spec, policy="prefill-first")
    fig = serving_gantt_figure(run, "en")
    segments = gantt_segments(run)
    bars = [d for d in fig.data if d.type == "bar"]
    assert sum(len(d.x) for d in bars) == len(segments)
    kinds = [k for k in SEGMENT_ORDER if any(s.kind == k for s in segments)]
    assert [len(d.x) for d in bars] == [sum(s.kind == k for s in segments) for k in kinds]  # one trace per kind
    ticks = [d for d in fig.data if d.type == "scatter"][0]
    assert len(ticks.x) == sum(r.num_output_tokens for r in run.requests)
    assert "&lt;b&gt;x&lt;/b&gt;" in set(ticks.y) and "<b>x</b>" not in set(ticks.y)
    assert list(fig.layout.yaxis.categoryarray)[-1] == "&lt;b&gt;x&lt;/b&gt;"  # the first request on top
    observed = serving_gantt_figure(client_run(), "zh")
    assert [d.name for d in observed.data if d.type == "bar"] == ["到第一个 Token（客户端看到的）"]


# --- python -m lesson.export -------------------------------------------------------------------

def test_export_draws_a_saved_run_and_refuses_bad_input(tmp_path, capsys):
    from lesson.export import main

    saved = tmp_path / "run.json"
    saved.write_text(make_run(policy="chunked").to_json(), encoding="utf-8")
    assert main(["--out", str(tmp_path / "a"), "--serving-run", str(saved), "--lang", "en"]) == 0
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["serving_batch.svg", "serving_gantt.svg",
                                                                 "serving_kv.svg"]
    client = tmp_path / "client.json"
    client.write_text(client_run().to_json(), encoding="utf-8")
    assert main(["--out", str(tmp_path / "b"), "--serving-run", str(client)]) == 0
    assert [p.name for p in (tmp_path / "b").iterdir()] == ["serving_gantt.svg"]  # no passes, no blocks
    capsys.readouterr()
    (tmp_path / "bad.json").write_text('{"kind": "request_trace"}', encoding="utf-8")
    assert main(["--out", str(tmp_path / "c"), "--serving-run", str(tmp_path / "bad.json")]) == 1
    assert main(["--out", str(tmp_path / "c"), "--serving", "capital-questions", "--policies", "fastest"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "not a serving run" in err[0] and "unknown policy fastest" in err[1]


def test_export_runs_a_scenario_on_the_real_engine(tmp_path):
    if not HAS_DEFAULT_MODEL:
        pytest.skip("the embedded default model is not built yet")
    from lesson.export import main

    assert main(["--out", str(tmp_path), "--serving", "capital-questions", "--policies", "prefill-first,chunked",
                 "--lang", "en"]) == 0
    names = {p.name for p in tmp_path.iterdir()}
    for policy in ("prefill-first", "chunked"):
        assert {f"serving_{policy}_{k}.svg" for k in ("gantt", "batch", "kv")} | {f"serving_{policy}.json"} <= names
        run = ServingRun.from_json((tmp_path / f"serving_{policy}.json").read_text(encoding="utf-8"))
        assert run.settings.policy == policy and len(run.requests) == 8 and run.metrics.num_completed == 8
    table = parse((tmp_path / "serving_metrics.svg").read_text(encoding="utf-8").split("\n", 1)[1])
    assert int(with_class(table, "metric-table")[0].get("data-cols")) == 2


def test_preemptions_are_marked_where_they_happened(runs):
    run = runs["chunked"]
    it = run.iterations[3]
    victim = it.entries[0].request_id
    preempted = dataclasses.replace(run, iterations=tuple(
        dataclasses.replace(x, preempted=(victim,)) if x.index == it.index else x for x in run.iterations))
    root = parse(render_serving_gantt(preempted, lang="en"))
    marks = [m for m in with_class(root, "preempted") if m.get("data-iteration") is not None]
    assert [(m.get("data-request-id"), int(m.get("data-iteration"))) for m in marks] == [(victim, it.index)]
    assert with_class(root, "legend-item", "preempted")
    assert not with_class(parse(render_serving_gantt(run, lang="en")), "preempted")


# --- exact snapshots (regenerate after an intended change: UPDATE_SNAPSHOTS=1 pytest ... -k snapshot) ----

SNAPSHOTS = __import__("pathlib").Path(__file__).parent / "snapshots"
SNAPSHOT_CASES = {
    "serving_gantt_prefill_first_zh": lambda runs: render_serving_gantt(runs["prefill-first"], lang="zh"),
    "serving_gantt_disaggregated_en": lambda runs: render_serving_gantt(runs["disaggregated"], lang="en"),
    "serving_batch_chunked_en": lambda runs: render_batch_composition(runs["chunked"], lang="en"),
    "serving_kv_chunked_zh": lambda runs: render_kv_blocks(runs["chunked"], lang="zh"),
    "serving_metrics_en": lambda runs: render_serving_metrics([runs[p] for p in POLICIES], lang="en"),
}


@pytest.mark.parametrize("name", sorted(SNAPSHOT_CASES))
def test_snapshot(name, runs):
    import os

    svg = SNAPSHOT_CASES[name](runs) + "\n"
    path = SNAPSHOTS / f"{name}.svg"
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        path.write_text(svg, encoding="utf-8")
    assert path.exists(), f"missing snapshot {path.name}: run with UPDATE_SNAPSHOTS=1"
    assert svg == path.read_text(encoding="utf-8"), f"{name} changed; regenerate after an intended change"


def test_observed_policy_is_accepted_by_the_record_but_not_by_engine_serve():
    from engine.cli.serve import POLICY_CHOICES
    from engine.contract.errors import InputError
    from engine.contract.serving.config import ServeConfig
    from engine.contract.serving.trace import OBSERVED_POLICY, ServingSettings
    from engine.contract.trace import TraceFormatError

    assert ServingSettings(policy=OBSERVED_POLICY, block_size=1, num_kv_blocks=1).policy == "observed"
    assert OBSERVED_POLICY not in POLICY_CHOICES
    with pytest.raises(InputError):
        ServeConfig(policy=OBSERVED_POLICY)
    with pytest.raises(TraceFormatError):
        ServingSettings(policy="bogus", block_size=1, num_kv_blocks=1)


def test_the_gantt_subtitle_is_truthful_per_kind_of_run():
    """Engine run: every time measured; probe: observed from the client (never "all measured")."""
    from engine.contract.serving.trace import OBSERVED_POLICY
    from lesson.diagrams.serving_gantt import gantt_subtitle, run_kind

    engine_run = make_run(policy="chunked")
    probe_like = dataclasses.replace(client_run(), settings=dataclasses.replace(client_run().settings,
                                                                                policy=OBSERVED_POLICY))
    assert run_kind(engine_run) == "engine" and run_kind(probe_like) == "probe"
    assert gantt_subtitle(engine_run, "en").endswith("every time measured")
    assert gantt_subtitle(engine_run, "zh").endswith("所有时间均为实测")
    for lang, words in (("en", "observed from the client"), ("zh", "从客户端观测")):
        svg = render_serving_gantt(probe_like, lang=lang)
        assert words in gantt_subtitle(probe_like, lang) and words in svg
        assert "every time measured" not in svg and "所有时间均为实测" not in svg
        from lesson.serving_views import run_label
        from lesson.text import t

        assert run_label(probe_like, lang) == t(lang, "sv_policy_observed")


def test_the_metric_table_names_its_scenario_in_the_page_language(runs):
    import dataclasses

    from lesson.text import t

    run = dataclasses.replace(runs["prefill-first"], scenario="long-prompt-during-chats")
    for lang in ("zh", "en"):
        words = all_text(parse(render_serving_metrics([run], lang=lang)))
        assert t(lang, "sl_scn_name_long_prompt_during_chats") in words and "long-prompt-during-chats" not in words


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_metric_tables_title_and_subtitle_fit_a_narrow_classroom_figure(lang):
    """In classroom type the metric table can be drawn narrower than the column; its subtitle (a long
    scenario name in zh) must end in "…" inside the figure, not run past its right edge."""
    style = classroom_style()
    runs = [make_run(policy=p, scenario="long-prompt-during-chats") for p in ("prefill-first", "chunked")]
    root = parse(render_serving_metrics(runs, lang=lang, style=style))
    width = float(root.get("width"))
    for cls, size in (("title", style.title_size), ("subtitle", style.small_size)):
        (el,) = with_class(root, cls)
        x = float(el.get("x"))
        assert x + text_width("".join(el.itertext()), size) <= width - x + 0.5, (cls, "".join(el.itertext()))


@pytest.mark.parametrize("lang", ["zh", "en"])
@pytest.mark.parametrize("base_ms, verdict", [(100.0, "sv_disagg_worst"), (0.01, "sv_disagg_best")])
def test_the_disaggregation_sentence_follows_its_p99_itl_beside_the_others(runs, base_ms, verdict, lang):
    """"The Decode worker never runs a Prefill" reads as a benefit only where disaggregation's p99 ITL was
    the table's lowest; where it was the highest, the sentence says so and why."""
    disagg = make_run(policy="disaggregated", base_ms=base_ms, per_token_ms=base_ms / 40)
    others = [runs[p] for p in POLICIES if p != "disaggregated"]
    p99s = [r.metrics.itl.p99 for r in others]
    mine = disagg.metrics.itl.p99
    assert mine > max(p99s) if verdict == "sv_disagg_worst" else mine < min(p99s)  # the runs built as meant
    text = " ".join(findings([*others, disagg], lang))
    chosen = disagg_verdict(disagg, [*others, disagg], lang)
    assert chosen.startswith(t(lang, verdict, n=4, others="", device="")[:12]) and chosen in text
    assert all(f"{p99:.1f} ms" in chosen for p99 in p99s)
    highest, lowest = {"zh": ("最高", "最低"), "en": ("highest", "lowest")}[lang]
    said, unsaid = (highest, lowest) if verdict == "sv_disagg_worst" else (lowest, highest)
    assert said in chosen and unsaid not in text


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_what_to_look_for_is_written_for_each_scenario(lang):
    """Each named scenario has its own words; a prefix-caching scenario run without the cache says it is off,
    and a workload of the visitor's own gets the general words."""
    from engine.contract.serving.workloads import SCENARIOS

    seen = {}
    for name in SCENARIOS:
        run = dataclasses.replace(make_run(), scenario=name)
        seen[name] = what_to_see([run], lang)
    assert len(set(seen.values())) == len(SCENARIOS)
    assert t(lang, "sl_see_prefix_off") in seen["shared-system-prompt"]
    assert t(lang, "sl_see_prefix_off") not in seen["long-prompt-during-chats"]
    cached = make_run(scenario="shared-system-prompt")
    cached = dataclasses.replace(cached, settings=dataclasses.replace(cached.settings, prefix_caching=True))
    assert what_to_see([cached], lang) == t(lang, "sl_see_shared_system_prompt")
    assert "1024" not in what_to_see([cached], lang)  # not the long-prompt scenario's words
    assert what_to_see([make_run(scenario="pasted")], lang) == t(lang, "sl_see_other")

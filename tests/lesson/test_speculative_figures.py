"""Every view of a run accepts a trace with verify passes (speculative decoding), and draws them meaningfully:
a verify pass like a small Prefill over its k+1 positions, its rejected drafts struck out, the cache's rollback."""

from __future__ import annotations

import pytest

from engine.contract.trace import RequestTrace
from lesson.alt_text import figure_alt
from lesson.charts.run import latency_figure
from lesson.diagrams import DIAGRAMS, render_acceptance
from lesson.downloads import trace_csv
from lesson.metric_cards import metric_cards, timeline_lesson
from lesson.perfetto import to_perfetto_json
from lesson.run_words import step_log_line, trace_summary
from lesson.spread import run_numbers
from lesson.style import classroom_style
from tests.factories import make_speculative_trace
from tests.svg import parse, with_class

LANGS = ("zh", "en")


@pytest.fixture(scope="module")
def trace() -> RequestTrace:
    return make_speculative_trace()


def test_the_synthetic_trace_is_what_it_claims(trace):
    assert [s.phase for s in trace.steps] == ["prefill", "verify", "decode", "verify", "verify"]
    assert len(trace.output_ids) == 1 + 3 + 1 + 4 + 1 and RequestTrace.from_json(trace.to_json()) == trace
    assert trace.tokens_per_pass == pytest.approx(9 / 4)


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("name", sorted(DIAGRAMS))
def test_every_figure_draws_a_speculative_trace(name, lang, trace):
    for style in (None, classroom_style()):
        svg = DIAGRAMS[name](trace, lang=lang, style=style)
        parse(svg)
        for n in range(1, len(trace.steps) + 1):  # classroom stepping: every prefix of the run
            parse(DIAGRAMS[name](RequestTrace(**{**trace.__dict__, "steps": trace.steps[:n], "stop_reason": None}),
                                 lang=lang, style=style, full=trace))


@pytest.mark.parametrize("lang", LANGS)
def test_every_other_view_takes_a_speculative_trace(lang, trace):
    latency_figure(trace, lang)
    assert metric_cards(trace, lang) and trace_summary(trace, lang)
    timeline_lesson(trace, lang)
    for index in range(len(trace.steps)):
        assert step_log_line(trace, index, lang)
    for name in DIAGRAMS:
        assert figure_alt(name, trace, lang)
    assert to_perfetto_json(trace)
    run_numbers(trace)
    assert "num_drafts_accepted" in trace_csv(trace)


def test_timeline_strikes_out_exactly_the_rejected_drafts(trace):
    root = parse(DIAGRAMS["timeline"](trace, lang="en"))
    rejected = with_class(root, "rejected")
    assert len(rejected) == sum(len(s.rejected_ids) for s in trace.steps) == 2 + 0 + 2
    assert len(with_class(root, "strike")) == len(rejected)
    assert len(with_class(root, "phase-badge", "verify")) == 3


def test_blocks_show_the_rollback(trace):
    root = parse(DIAGRAMS["blocks"](trace, lang="en"))
    rejected = with_class(root, "pos", "rejected")
    assert sum(int(r.get("data-count")) for r in rejected) == 4  # the positions the two rejections dropped
    verify = with_class(root, "pos", "verify")
    assert sum(int(c.get("data-count")) for c in verify) == (1 + 2) + (1 + 3) + 1  # computed and kept
    # a rejected position gets a row of its own once: the next pass computes it again in the same row
    positions = [int(c.get("data-start")) for c in with_class(root, "pos") if c.get("data-pass") == "0"]
    assert len(positions) == len(set(positions))


def test_kv_growth_counts_the_kept_positions(trace):
    root = parse(DIAGRAMS["kv_growth"](trace, lang="en"))
    assert "as the formula says" in " ".join(root.itertext())  # the rollback keeps one K and V per kept position


@pytest.mark.parametrize("name", ("kv_growth", "latency"))
def test_bar_charts_name_a_verify_pass_as_one(name, trace):
    words = list(parse(DIAGRAMS[name](trace, lang="en")).itertext())
    assert {"P", "V1", "D2", "V3", "V4"} <= set(words)


@pytest.mark.parametrize("lang, words", [("en", "3 verify passes, 2.25 tokens per target pass"),
                                         ("zh", "3 次 Verify，每次目标模型前向平均得到 2.25 个 Token")])
def test_review_map_says_tokens_per_target_pass(lang, words, trace):
    lines = parse(DIAGRAMS["review_map"](trace, lang=lang)).itertext()
    joined = ("" if lang == "zh" else " ").join(lines)  # a cell wraps: Chinese lines join without a space
    assert words in joined


def test_a_folded_timeline_row_says_it_folds_verify_passes():
    long = make_speculative_trace(((4, 1), (0, 0)) * 8)
    words = " ".join(parse(DIAGRAMS["timeline"](long, lang="en")).itertext())
    assert "more Decode and Verify passes" in words


@pytest.mark.parametrize("lang", LANGS)
def test_the_acceptance_chart_draws_every_draft_and_bonus(lang, trace):
    svg = render_acceptance(trace, lang=lang)
    assert svg == render_acceptance(trace, lang=lang)  # byte-stable
    root = parse(svg)
    verify = trace.verify_steps
    assert len(with_class(root, "cell", "kept")) == sum(s.num_accepted for s in verify) == 2 + 3 + 0
    assert len(with_class(root, "cell", "rejected")) == sum(len(s.rejected_ids) for s in verify) == 2 + 0 + 2
    assert len(with_class(root, "cell", "bonus")) == len(verify)
    assert "2.25" in " ".join(root.itertext())
    parse(render_acceptance(make_speculative_trace(((0, 0),)), lang=lang))  # no verify pass: says so, no cells


def test_a_recorded_run_keeps_its_drafts(trace):
    from engine.contract.recorded import read_recorded

    assert read_recorded(trace.to_json(), 1_000_000).runs == (trace,)

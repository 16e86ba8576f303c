"""The note under the answer for the lesson's prefix cache (lesson.run_words.prefix_note): one sentence per
outcome, in zh and en, with the visitor's token text as code, never markup."""

from __future__ import annotations

import dataclasses

import pytest

from engine.contract.trace import PREFIX_MISSES, PrefixReuse
from lesson.run_words import clock, prefix_note
from lesson.text import t
from tests.factories import make_trace

BASE = make_trace(("法国", "的", "首都", "是"), ("巴黎", "。"))


def with_prefix(**fields) -> object:
    cached = fields.get("num_cached_tokens", 0)
    steps = list(BASE.steps)
    first = steps[0]
    steps[0] = dataclasses.replace(first, context_before=cached, input_ids=first.input_ids[cached:],
                                   input_pieces=first.input_pieces[cached:])
    return dataclasses.replace(BASE, steps=tuple(steps), prefix=PrefixReuse(num_tokens=4, **fields))


CASES = {
    "": dict(num_cached_tokens=3, source_started_at_s=1_000_000.0),
    "first_seen": dict(num_cached_tokens=0),
    "diverged": dict(num_cached_tokens=2, miss="diverged", diverged_at=2, token_piece="</text><script>",
                     cached_piece="首都", source_started_at_s=1_000_000.0),
    "evicted": dict(num_cached_tokens=0, miss="evicted", source_started_at_s=1_000_000.0,
                    evicted_at_s=1_000_060.0),
    "too_short": dict(num_cached_tokens=0, miss="too_short"),
    "mode": dict(num_cached_tokens=0, miss="mode"),
    "sliding_window": dict(num_cached_tokens=0, miss="sliding_window"),
}


def test_every_miss_reason_has_its_case():
    assert set(CASES) - {""} == set(PREFIX_MISSES)


@pytest.mark.parametrize("lang", ["zh", "en"])
@pytest.mark.parametrize("miss", list(CASES))
def test_each_outcome_reads_in_both_languages(miss, lang):
    fields = CASES[miss]
    words = prefix_note(with_prefix(**({"miss": miss} if miss and "miss" not in fields else {}), **fields), lang)
    assert words and "{" not in words
    cached = fields["num_cached_tokens"]
    if miss in ("", "diverged", "evicted", "first_seen"):
        assert str(4 - cached) in words  # the positions Prefill computed
    if miss in ("", "diverged"):
        assert clock(1_000_000.0) in words
    if miss == "diverged":
        assert "`</text><script>`" in words and "`首都`" in words  # code spans: never markup


def test_off_says_nothing():
    assert prefix_note(BASE, "en") is None


def test_an_extended_prompt_says_the_rest_was_never_computed():
    words = prefix_note(with_prefix(num_cached_tokens=2, miss="first_seen", source_started_at_s=1_000_000.0), "en")
    assert words == t("en", "pr_first_seen_some", last=1, cached=2, when=clock(1_000_000.0), computed=2, prompt=4)


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_blocks_figure_draws_read_positions_apart_from_computed_ones(lang):
    import xml.etree.ElementTree as ET

    from lesson.diagrams.blocks import render_blocks
    from lesson.style import classroom_style

    trace = with_prefix(num_cached_tokens=3, source_started_at_s=1_000_000.0)
    for style in (None, classroom_style()):
        root = ET.fromstring(render_blocks(trace, lang=lang, style=style))
        cells = [el for el in root.iter() if (el.get("class") or "").startswith("pos ")]
        prefill = [el for el in cells if el.get("data-pass") == "0"]
        counts = {kind: sum(int(el.get("data-count")) for el in prefill if kind in el.get("class").split())
                  for kind in ("reused", "prefill")}
        assert counts == {"reused": 3, "prefill": 1}
        assert not any("reused" in el.get("class").split() for el in cells if el.get("data-pass") != "0")
        words = "".join(root.itertext())
        assert t(lang, "legend_reused") in words
    plain = ET.fromstring(render_blocks(BASE, lang=lang))
    assert t(lang, "legend_reused") not in "".join(plain.itertext())  # off: the figure as before


def test_the_step_log_says_prefill_read_positions_from_the_cache():
    from lesson.run_words import step_log_line

    trace = with_prefix(num_cached_tokens=3, source_started_at_s=1_000_000.0)
    assert step_log_line(trace, 0, "en").startswith("**Prefill**: 1 new position(s) in one pass, 3 read from")
    assert "前缀缓存" in step_log_line(trace, 0, "zh")
    assert "prefix cache" not in step_log_line(BASE, 0, "en")


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_blocks_alt_text_counts_what_prefill_computed(lang):
    from lesson.alt_text import figure_alt

    words = figure_alt("blocks", with_prefix(num_cached_tokens=3, source_started_at_s=1_000_000.0), lang)
    assert t(lang, "alt_blocks_reused", last=2) in words
    assert t(lang, "alt_blocks_reused", last=2) not in figure_alt("blocks", BASE, lang)


def test_the_perfetto_file_has_the_look_up_after_tokenizing():
    import json

    from lesson.perfetto import to_perfetto_json

    trace = with_prefix(num_cached_tokens=3, source_started_at_s=1_000_000.0, lookup_ms=0.1)
    events = json.loads(to_perfetto_json(trace))["traceEvents"]
    (lookup,) = [e for e in events if e.get("name") == "prefix-cache look-up"]
    assert lookup["args"] == {"cached_tokens": 3, "computed_tokens": 1, "prompt_tokens": 4, "miss": "none"}
    assert lookup["ts"] == trace.tokenize_ms * 1000 and lookup["ts"] + lookup["dur"] <= trace.prefill.start_ms * 1000
    assert not [e for e in json.loads(to_perfetto_json(BASE))["traceEvents"] if e.get("name") == "prefix-cache look-up"]

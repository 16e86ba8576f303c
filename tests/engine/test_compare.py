"""Cache on vs off (engine/runtime/compare.py) and its two figures.

Engine: both loops choose the same tokens; cache-off FLOPs grow with every step while
cache-on Decode FLOPs stay nearly flat; a Decode step's attention weights sum to one over
exactly the cached positions plus the new one. Figures: parsed as SVG, counted, escaped.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import pytest

from engine.contract.cost import ModelShape
from engine.contract.errors import PhaseError
from engine.contract.prompts import prompt_token_ids
from engine.runtime.compare import DecodeAttention, compare_cache, decode_attention, step_flops
from engine.runtime.model import load_model
from lesson.diagrams import DIAGRAMS, render_attention, render_cache_compare
from tests.factories import fake_attention, fake_comparison
from tests.svg import SVG, with_class

HOSTILE = "<script>alert(1)</script>&\u202e\x00]]>"


@pytest.fixture(scope="module")
def tiny(tiny_model_dirs):
    return {kind: load_model(tiny_model_dirs[kind], device="cpu") for kind in ("llama", "gpt2")}


# --- engine: same tokens, FLOPs per step ------------------------------------------

def test_cache_off_and_on_give_identical_tokens_on_the_default_model(default_lm):
    ids = prompt_token_ids(default_lm.tokenizer, "法国的首都是")
    result = compare_cache(default_lm, ids, 12)
    assert result.num_steps == 12 and len(result.off_ms) == len(result.on_ms) == 12
    assert all(ms > 0 for ms in result.off_ms + result.on_ms)
    assert result.off_positions == tuple(len(ids) + t for t in range(12))
    assert result.on_positions == (len(ids),) + (1,) * 11


@pytest.mark.parametrize("kind", ["llama", "gpt2"])
def test_cache_off_and_on_give_identical_tokens_on_tiny_models(tiny, kind):
    lm = tiny[kind]
    ids = prompt_token_ids(lm.tokenizer, "The capital of France is")
    result = compare_cache(lm, ids, 10)
    assert len(result.output_ids) == 10  # EOS ignored: both loops run the full length


def test_tokens_that_differ_raise(default_lm, monkeypatch):
    import engine.runtime.compare as compare

    real = compare.timed_ids_no_cache
    monkeypatch.setattr(compare, "timed_ids_no_cache",
                        lambda lm, ids, n: (lambda out: ([out[0][0] + 1] + out[0][1:], out[1]))(real(lm, ids, n)))
    with pytest.raises(compare.TokensDifferError, match="output token 0"):
        compare.compare_cache(default_lm, prompt_token_ids(default_lm.tokenizer, "法国的首都是"), 3)


def test_cache_off_flops_grow_while_cache_on_decode_stays_flat(default_lm):
    shape = ModelShape.from_config(default_lm.model.config)
    off, on = step_flops(shape, 64, 64)
    assert off[0] == on[0]  # the first pass is the same Prefill either way
    assert all(b > a for a, b in zip(off, off[1:]))  # one more position to recompute every step
    assert off[-1] > 1.5 * off[0]
    decode = on[1:]
    assert max(decode) / min(decode) < 1.05  # one position each; only the attention reads grow
    assert all(b >= a for a, b in zip(decode, decode[1:]))
    assert all(o > 10 * d for o, d in zip(off[1:], decode))


# --- engine: the attention of one Decode step ---------------------------------------

def _check_attention(att: DecodeAttention, context: int, num_layers: int) -> None:
    assert att.context == context and len(att.token_ids) == len(att.pieces) == context + 1
    assert att.num_layers == num_layers == len(att.mean)
    for layer in att.per_head:
        for head in layer:
            assert len(head) == context + 1  # every cached position plus the new one, no more
            assert math.isclose(sum(head), 1.0, abs_tol=1e-4)
            assert all(w >= 0 for w in head)
    for row in att.mean:
        assert len(row) == context + 1 and math.isclose(sum(row), 1.0, abs_tol=1e-4)
    assert att.num_read == (context + 1,) * num_layers  # a full cache: every position read


def test_a_sliding_window_reads_only_the_window(tiny_model_dirs):
    lm = load_model(tiny_model_dirs["mistral"], device="cpu")
    window = lm.model.config.sliding_window  # the tiny Mistral's (tests/conftest.py): 8 positions
    ids = prompt_token_ids(lm.tokenizer, "The capital of France is Paris.")
    out = compare_cache(lm, ids, 6).output_ids
    att = decode_attention(lm, ids, out, 4)
    assert att.context + 1 > window and att.num_read == (window,) * 2
    for row in att.mean:
        assert len(row) == att.context + 1 and math.isclose(sum(row), 1.0, abs_tol=1e-4)
        assert all(w == 0.0 for w in row[:-window])  # dropped from the cache: not read


def test_decode_attention_sums_to_one_over_the_cache_plus_the_new_position(default_lm):
    ids = prompt_token_ids(default_lm.tokenizer, "法国的首都是")
    result = compare_cache(default_lm, ids, 6)
    att = decode_attention(default_lm, ids, result.output_ids, 4)
    _check_attention(att, len(ids) + 3, default_lm.info.num_layers)
    assert len(att.per_head[0]) == default_lm.info.num_heads
    assert att.token_ids == tuple(ids) + result.output_ids[:4]
    assert default_lm.model.config._attn_implementation != "eager"  # switched back after the step


def test_decode_attention_on_a_tiny_model(tiny):
    lm = tiny["llama"]
    ids = prompt_token_ids(lm.tokenizer, "The capital of France is")
    out = compare_cache(lm, ids, 4).output_ids
    _check_attention(decode_attention(lm, ids, out, 1), len(ids), 2)


def test_decode_attention_refuses_a_step_outside_the_answer(default_lm):
    with pytest.raises(PhaseError):
        decode_attention(default_lm, [1, 2, 3], (4, 5), 2)
    with pytest.raises(PhaseError):
        decode_attention(default_lm, [1, 2, 3], (4, 5), 0)


# --- figures ---------------------------------------------------------------------

@pytest.mark.parametrize("lang", ["zh", "en"])
def test_cache_compare_figure_has_an_off_and_an_on_bar_per_step_in_both_panels(lang):
    comparison = fake_comparison()
    root = ET.fromstring(render_cache_compare(comparison, lang=lang, model_id="m"))
    assert root.tag == f"{SVG}svg"
    for metric, off, on in (("time", comparison.off_ms, comparison.on_ms),
                            ("flops", comparison.off_flops, comparison.on_flops)):
        for mode, values in (("off", off), ("on", on)):
            bars = with_class(root, "cc-bar", metric, mode)
            assert [float(b.get("data-value")) for b in bars] == list(values)
            assert [int(b.get("data-step")) for b in bars] == list(range(comparison.num_steps))
    heights = {b.get("data-step"): float(b.get("height")) for b in with_class(root, "cc-bar", "flops", "off")}
    assert heights["5"] > heights["1"]  # cache off grows


def test_cache_compare_figure_samples_a_long_run():
    root = ET.fromstring(render_cache_compare(fake_comparison(200), lang="en"))
    steps = [int(b.get("data-step")) for b in with_class(root, "cc-bar", "time", "off")]
    assert steps[0] == 0 and steps[-1] == 199 and len(steps) <= 48


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_attention_figure_has_a_cell_per_layer_and_position(lang):
    att = fake_attention()
    root = ET.fromstring(render_attention(att, lang=lang))
    cells = with_class(root, "att-cell")
    assert len(cells) == 2 * (att.context + 1)
    new_cells = with_class(root, "att-cell", "new")  # the new position, once per layer, last
    assert [c.get("data-pos") for c in new_cells] == [str(att.context)] * 2
    for layer in range(2):
        weights = [float(c.get("data-weight")) for c in cells if c.get("data-layer") == str(layer)]
        assert math.isclose(sum(weights), 1.0)
    labels = [("".join(t.itertext())) for t in with_class(root, "col-label")]
    assert labels == list(att.pieces)
    head_root = ET.fromstring(render_attention(att, lang=lang, head=1))
    assert len(with_class(head_root, "att-cell")) == len(cells)


def test_hostile_text_stays_escaped_in_both_figures():
    att = fake_attention(3, pieces=(HOSTILE, "a", "b", HOSTILE))
    for svg in (render_attention(att, lang="en", model_id=HOSTILE),
                render_cache_compare(fake_comparison(), lang="en", model_id=HOSTILE)):
        assert "<script" not in svg and "\x00" not in svg
        root = ET.fromstring(svg)  # still well-formed
        assert not list(root.iter(f"{SVG}script"))
        assert "&lt;script&gt;" in svg


def test_neither_figure_is_registered_as_a_trace_diagram():
    assert render_cache_compare not in DIAGRAMS.values() and render_attention not in DIAGRAMS.values()


def test_the_new_labels_have_the_same_fields_in_zh_and_en():
    import string

    from lesson.text import TEXTS

    def fields(template: str) -> set[str]:
        return {name for _, name, _, _ in string.Formatter().parse(template) if name}

    ZH, EN = TEXTS["zh"], TEXTS["en"]
    keys = [k for k in ZH if k.startswith(("cc_", "att_"))]
    assert len(keys) == 22 and set(keys) <= set(EN)  # 19, and the outliers' ring, its note and a Prefill's
    assert all(fields(ZH[k]) == fields(EN[k]) for k in keys)

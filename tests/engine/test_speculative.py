"""Speculative decoding writes exactly what plain Decode writes.

- the prompt-lookup drafter proposes what followed the latest earlier match of the last n tokens
- greedy: the kept tokens equal plain greedy Decode's, token for token, on many prompts (ones whose drafts
  are accepted and ones whose drafts are rejected), tiny Llama, Qwen2 and GPT-2 and k = 1..8, and the KV
  cache after the run equals plain's (same length, values allclose)
- sampling: over many seeds, the tokens' frequencies match plain sampling's (a two-sample chi-square test),
  and the same test tells a wrong accept rule apart
- a verify step's fields, its trace's metrics (vLLM's ITL rule), its JSON round trip
- bad settings are refused before any pass, in words (lesson/text/*/errors.py)
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter

import pytest
import torch

from engine.contract.errors import InputError
from engine.contract.results import GenerationConfig
from engine.contract.speculative import propose_ngram
from engine.contract.trace import RequestTrace
from engine.runtime import generation, speculative
from engine.runtime.generation import PrefixStart, encode_prompt, generate, generate_ids, passes
from engine.runtime.model import load_model
from engine.runtime.sampling import token_probs
from lesson.messages import error_message
from tests.factories import HAS_DEFAULT_MODEL

FAMILIES = ("llama", "qwen2", "gpt2")
# English only: the tiny Qwen2 folder's tokenizer reads no Chinese. The repeated prompts give the lookup text to
# propose; a random model rarely agrees with it (the oracle drafter below makes drafts it keeps).
PROMPTS = (
    "The capital of France is",
    "The capital of France is Paris. The capital of France is",
    "The capital of Germany is Berlin. The capital of Japan is Tokyo. The capital of Germany is Berlin. The",
    "Prefill reads the whole prompt; decode writes one token at a time. Prefill reads",
    "decode writes one token at a time.",
)
# The embedded model knows this paragraph by heart (assets/default_model/corpus_sample.txt): its answer
# continues the text, which the prompt holds once already.
REPEATING = ("An LLM answers a prompt in two phases called Prefill and Decode. Prefill reads the whole prompt in one "
             "forward pass. Prefill also builds the KV cache for every layer. An LLM answers a prompt in two phases")


@pytest.fixture(scope="module")
def tiny(tiny_model_dirs):
    return {kind: load_model(tiny_model_dirs[kind], device="cpu") for kind in (*FAMILIES, "mistral")}


# --- the drafter ----------------------------------------------------------------------------------

def test_prompt_lookup_proposes_what_followed_the_latest_longest_match():
    tokens = [1, 2, 3, 9, 1, 2, 3, 4, 5, 6, 1, 2, 3]
    assert propose_ngram(tokens, min_n=1, max_n=3, k=3) == (4, 5, 6)  # the latest "1 2 3" is followed by 4 5 6
    assert propose_ngram(tokens, min_n=1, max_n=3, k=2) == (4, 5)
    assert propose_ngram([7, 8, 9], min_n=1, max_n=3, k=4) == ()  # nothing occurred before
    assert propose_ngram([5, 1, 2, 6, 2], min_n=1, max_n=2, k=2) == (6, 2)  # n=2 fails, n=1 ("2") matches
    assert propose_ngram([5, 1, 2, 6, 2], min_n=2, max_n=2, k=2) == ()  # ... unless min_n forbids it
    assert propose_ngram([4, 0, 5, 6, 4], min_n=1, max_n=1, k=3, stop_ids={5}) == (0,)  # never drafts EOS


# --- greedy parity ----------------------------------------------------------------------------------

def final_cache(lm, prompt_ids: list[int], cfg: GenerationConfig):
    """The run's tokens and each layer's (K, V) after its last pass, as the prefix cache's keep hook sees them
    (it is called only when the cache holds exactly the prompt and the answer but its last token)."""
    kept = {}
    start = PrefixStart(0, None, keep=lambda ids, tensors: kept.update(ids=ids, tensors=tensors))
    tokens = [t for p in passes(lm, prompt_ids, cfg, record=False, start=start) for t in p.emitted_ids]
    assert kept, "the cache's length after the run is not prompt + answer - 1"
    return tokens, kept["tensors"]


class OracleDrafter:
    """A drafter that knows plain Decode's answer and gets every third guess wrong: on random tiny models (whose
    text repeats nothing) it makes the verify pass keep all, some or none of its k drafts."""

    name = "oracle"

    def __init__(self, prompt_ids: list[int], answer: list[int], vocab_size: int, cfg: GenerationConfig) -> None:
        self.prompt_len, self.answer, self.vocab_size, self.cfg = len(prompt_ids), answer, vocab_size, cfg

    def propose(self, history, num_left, stop_ids, generator=None) -> speculative.Draft:
        done = len(history) - self.prompt_len
        guesses = self.answer[done:done + min(self.cfg.num_speculative_tokens, num_left - 1)]
        return speculative.Draft(tuple((t + 1) % self.vocab_size if (len(history) + j) % 3 == 0 else t
                                       for j, t in enumerate(guesses)))


@pytest.mark.parametrize("drafter", ("ngram", "oracle"))
@pytest.mark.parametrize("kind", FAMILIES)
def test_greedy_speculative_writes_plain_decodes_tokens_and_cache(tiny, kind, drafter, monkeypatch):
    lm = tiny[kind]
    totals = Counter()
    for prompt in PROMPTS:
        plain_cfg = GenerationConfig(max_new_tokens=24, ignore_eos=True)
        ids = encode_prompt(lm, prompt, plain_cfg)
        plain, plain_kv = final_cache(lm, ids, plain_cfg)
        if drafter == "oracle":
            monkeypatch.setattr(generation, "drafter_for", lambda lm_, cfg, draft=None, answer=plain, ids=ids:
                                OracleDrafter(ids, answer, lm.info.vocab_size, cfg))
        for k in range(1, 9):
            cfg = dataclasses.replace(plain_cfg, speculative="ngram", num_speculative_tokens=k)
            tokens, kv = final_cache(lm, ids, cfg)
            assert tokens == plain, (prompt, k)
            for (keys, values), (plain_keys, plain_values) in zip(kv, plain_kv):
                assert keys.shape == plain_keys.shape and values.shape == plain_values.shape
                torch.testing.assert_close(keys, plain_keys, rtol=1e-4, atol=1e-5)
                torch.testing.assert_close(values, plain_values, rtol=1e-4, atol=1e-5)
            ran = list(passes(lm, ids, cfg, record=False))
            totals["drafted"] += sum(len(p.draft_ids) for p in ran)
            totals["accepted"] += sum(p.num_accepted for p in ran)
            totals["all kept"] += sum(1 for p in ran if p.draft_ids and p.num_accepted == len(p.draft_ids))
    assert totals["drafted"] > 0 and totals["accepted"] < totals["drafted"], totals  # drafts ran; some rejected
    if drafter == "oracle":  # and the other paths: drafts kept, and a whole verify pass kept (its bonus token)
        assert totals["accepted"] > 0 and totals["all kept"] > 0, totals


@pytest.mark.parametrize("kind", FAMILIES)
def test_speculative_stops_at_eos_where_plain_decode_does(tiny, kind):
    lm = tiny[kind]
    for prompt in PROMPTS:
        plain = generate(lm, prompt, GenerationConfig(max_new_tokens=40))
        spec = generate(lm, prompt, GenerationConfig(max_new_tokens=40, speculative="ngram"))
        assert (spec.output_ids, spec.stop_reason, spec.output_text) == \
            (plain.output_ids, plain.stop_reason, plain.output_text)


@pytest.mark.skipif(not HAS_DEFAULT_MODEL, reason="the embedded default model is not built")
def test_repeating_text_is_accepted_several_tokens_per_pass(default_lm):
    plain = generate(default_lm, REPEATING, GenerationConfig(max_new_tokens=32, ignore_eos=True))
    spec = generate(default_lm, REPEATING, GenerationConfig(max_new_tokens=32, ignore_eos=True, speculative="ngram"))
    assert spec.output_ids == plain.output_ids and spec.output_text == plain.output_text
    assert len(spec.output_ids) == 32 and spec.tokens_per_pass > 2
    verify = spec.verify_steps[0]
    assert verify.phase == "verify" and verify.drafter == "ngram" and verify.num_accepted >= 1
    assert verify.input_ids == (verify.input_ids[0], *verify.draft_ids) and verify.num_positions == 5
    assert verify.emitted_pieces == (*verify.input_pieces[1:1 + verify.num_accepted], verify.output_piece)
    for before, after in zip(spec.steps, spec.steps[1:]):  # the chain: each pass starts where the cache was kept
        assert after.context_before == before.context_kept and after.input_ids[0] == before.output_id
    assert spec.steps[-1].kv_bytes == plain.steps[-1].kv_bytes  # the rollback left the same cache
    assert RequestTrace.from_json(spec.to_json()) == spec


def test_metrics_count_every_token_and_one_gap_per_pass(tiny):
    """vLLM's rule: tokens of one pass arrive together; TPOT divides by every token, ITL has a gap per pass."""
    trace = generate(tiny["llama"], PROMPTS[1], GenerationConfig(max_new_tokens=24, ignore_eos=True,
                                                                  speculative="ngram", num_speculative_tokens=8))
    assert trace.verify_steps and len(trace.output_ids) == 24 == len(trace.token_times_ms)
    m = trace.metrics
    assert len(m.itl_ms) == len(trace.steps) - 1
    assert m.tpot_ms == pytest.approx((trace.steps[-1].end_ms - trace.steps[0].end_ms) / 23)
    assert m.ttft_ms == trace.steps[0].end_ms


# --- sampling: the target's distribution ------------------------------------------------------------

NUM_SEEDS = 300
SAMPLED = GenerationConfig(max_new_tokens=6, ignore_eos=True, temperature=2.0)  # flat: drafts often rejected


def chi_square_p(a: Counter, b: Counter) -> float:
    """Two-sample chi-square test of homogeneity (equal sample sizes): the p-value that both samples come from
    one distribution. Tokens are taken from the most to the least frequent (both samples together) and grouped
    until a group holds at least 10 (an expected count of 5 per sample, as the test's approximation needs): a
    flat distribution over hundreds of rare tokens still gives many groups, so the test keeps its power."""
    rows, group = [], [0, 0]
    for key in sorted(set(a) | set(b), key=lambda key: (-(a[key] + b[key]), key)):
        group = [group[0] + a[key], group[1] + b[key]]
        if sum(group) >= 10:
            rows.append(tuple(group))
            group = [0, 0]
    if sum(group):  # the rarest few: into the last group
        rows[-1] = (rows[-1][0] + group[0], rows[-1][1] + group[1]) if rows else tuple(group)
    statistic = sum((x - y) ** 2 / (x + y) for x, y in rows)  # equal totals: sum over cells of (O - E)^2 / E
    return _chi2_survival(statistic, len(rows) - 1)


def _chi2_survival(x: float, dof: int) -> float:
    """P(X >= x) for a chi-square with `dof` degrees of freedom (regularised upper gamma, series form)."""
    if dof <= 0:
        return 1.0
    s, half = dof / 2, x / 2
    term = total = 1 / s
    for n in range(1, 2000):
        term *= half / (s + n)
        total += term
    return max(0.0, 1 - math.exp(-half + s * math.log(half) - math.lgamma(s)) * total) if half else 1.0


def position_counts(lm, ids, cfg) -> list[Counter]:
    """For each answer position, how often each token was written there over NUM_SEEDS seeds."""
    counts = [Counter() for _ in range(cfg.max_new_tokens)]
    for seed in range(NUM_SEEDS):
        for position, token in enumerate(generate_ids(lm, ids, dataclasses.replace(cfg, seed=seed))):
            counts[position][token] += 1
    return counts


@pytest.mark.skipif(not HAS_DEFAULT_MODEL, reason="the embedded default model is not built")
@pytest.mark.slow  # 15-25 s on a 2-core CPU (docs/testing.md)
def test_sampling_keeps_the_target_distribution(default_lm, monkeypatch):
    """Each answer position's token frequencies, speculative against plain, over 300 seeds each.

    Tolerance: a two-sample chi-square test at p >= 0.001 per position. The seeds are fixed, so the result is
    the same on every run; the bound is justified by the test's power: the same test, on the same seeds, tells
    apart a wrong rule (keep every draft, as greedy does) by far (p < 1e-6)."""
    ids = encode_prompt(default_lm, REPEATING, SAMPLED)
    plain = position_counts(default_lm, ids, SAMPLED)
    spec_cfg = dataclasses.replace(SAMPLED, speculative="ngram", num_speculative_tokens=4)
    spec = position_counts(default_lm, ids, spec_cfg)
    accepted = sum(p.num_accepted for seed in range(20)
                   for p in passes(default_lm, ids, dataclasses.replace(spec_cfg, seed=seed), record=False))
    assert accepted > 20, "the drafts must be accepted often, or the test checks only plain sampling"
    p_values = [chi_square_p(a, b) for a, b in zip(plain, spec)]
    assert min(p_values[1:]) >= 1e-3, p_values  # position 0 is Prefill's own choice: the same either way

    monkeypatch.setattr(generation, "accept", keep_every_draft)
    wrong = position_counts(default_lm, ids, spec_cfg)
    assert min(chi_square_p(a, b) for a, b in zip(plain[1:], wrong[1:])) < 1e-6, "the test cannot tell a wrong rule"


# --- bad settings, refused in words -------------------------------------------------------------------

@pytest.mark.parametrize("fields, key", [
    ({"speculative": "eagle"}, "speculative_unknown"),
    ({"speculative": "ngram", "num_speculative_tokens": 0}, "speculative_tokens_range"),
    ({"speculative": "ngram", "num_speculative_tokens": 17}, "speculative_tokens_range"),
    ({"speculative": "ngram", "prompt_lookup_min": 3, "prompt_lookup_max": 2}, "prompt_lookup_range"),
    ({"speculative": "ngram", "prompt_lookup_max": 17}, "prompt_lookup_range"),
    ({"speculative": "ngram", "mode": "static"}, "speculative_mode"),
])
def test_bad_settings_are_refused_in_both_languages(fields, key):
    with pytest.raises(InputError) as caught:
        GenerationConfig(**fields)
    assert caught.value.key == key
    zh, en = error_message(caught.value, "zh"), error_message(caught.value, "en")
    assert "投机解码" in zh or "草稿" in zh or "n-gram" in zh
    assert "speculative" in en.lower() or "draft" in en or "n-gram" in en


def test_a_sliding_window_model_is_refused_before_any_pass(tiny):
    lm = tiny["mistral"]
    with pytest.raises(InputError) as caught:
        next(passes(lm, [5, 6, 7], GenerationConfig(speculative="ngram"), record=False))
    assert caught.value.key == "speculative_sliding_window"
    assert "滑动窗口" in error_message(caught.value, "zh") and "sliding" in error_message(caught.value, "en")


@pytest.mark.skipif(not HAS_DEFAULT_MODEL, reason="the embedded default model is not built")
def test_the_prefix_cache_keeps_a_speculative_run(default_lm):
    """The kept run is the prompt and the answer but its last token, as without speculative decoding: the same
    prompt again reads all but its last position from it, and writes the same tokens."""
    plain = generate(default_lm, REPEATING, GenerationConfig(max_new_tokens=12, ignore_eos=True))
    cfg = GenerationConfig(max_new_tokens=12, ignore_eos=True, speculative="ngram", prefix_cache=True,
                           prefix_scope="spec-test")
    first, again = generate(default_lm, REPEATING, cfg), generate(default_lm, REPEATING, cfg)
    assert first.verify_steps and first.output_ids == again.output_ids == plain.output_ids
    assert again.prefix.num_cached_tokens == len(again.prompt_ids) - 1


# --- a draft model ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def small_draft(tiny_model_dirs, tmp_path_factory):
    """A 1-layer Llama with the tiny models' tokenizer: a draft smaller than each of them."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from tests.conftest import tiny_config

    folder = tmp_path_factory.mktemp("draft")
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dirs["llama"])
    config = tiny_config("llama", len(tokenizer), tokenizer.eos_token_id)
    config.num_hidden_layers = 1
    torch.manual_seed(1)
    AutoModelForCausalLM.from_config(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return load_model(folder, device="cpu")


def test_a_draft_model_writes_plain_decodes_tokens(tiny, small_draft):
    """Greedy, k = 1..8: the target's own tokens whatever the draft guesses (a random 1-layer draft), and every
    guess kept when the draft is the target itself (its greedy tokens are the target's)."""
    lm = tiny["llama"]
    totals = Counter()
    for prompt in PROMPTS[:3]:
        plain = generate(lm, prompt, GenerationConfig(max_new_tokens=16, ignore_eos=True))
        for k in range(1, 9):
            cfg = GenerationConfig(max_new_tokens=16, ignore_eos=True, speculative="draft", num_speculative_tokens=k)
            spec = generate(lm, prompt, cfg, draft=small_draft)
            assert spec.output_ids == plain.output_ids, (prompt, k)
            totals["drafted"] += sum(len(s.draft_ids) for s in spec.verify_steps)
            totals["accepted"] += sum(s.num_accepted for s in spec.verify_steps)
        itself = generate(lm, prompt, dataclasses.replace(cfg, num_speculative_tokens=4), draft=dataclasses.replace(
            lm, info=dataclasses.replace(lm.info, num_params=lm.info.num_params - 1)))  # "smaller": passes the check
        assert itself.output_ids == plain.output_ids
        assert all(s.num_accepted == len(s.draft_ids) for s in itself.verify_steps) and itself.tokens_per_pass > 4
        assert itself.verify_steps[0].drafter == "draft:" + lm.info.model_id
    assert totals["drafted"] > 0 and totals["accepted"] < totals["drafted"], totals


TINY_TEMPERATURE = 0.7  # the random draft's guesses are mostly rejected here: max(0, p - q) writes most tokens


def keep_every_draft(logits, draft, cfg, generator):
    """A wrong rule, for the tests' power: every draft kept, as greedy does."""
    return len(draft.ids), int(torch.multinomial(token_probs(logits[-1], cfg), 1, generator=generator))


@pytest.mark.slow  # 15-25 s on a 2-core CPU (docs/testing.md)
def test_sampling_with_a_draft_model_keeps_the_target_distribution(tiny, small_draft, monkeypatch):
    """As the prompt-lookup test, with q the draft's own distribution: min(1, p/q), then max(0, p - q). The same
    seeds and test tell the wrong rule apart (p < 1e-6)."""
    lm = tiny["llama"]
    cfg = GenerationConfig(max_new_tokens=4, ignore_eos=True, temperature=TINY_TEMPERATURE)
    ids = encode_prompt(lm, PROMPTS[0], cfg)
    plain = position_counts(lm, ids, cfg)
    spec_cfg = dataclasses.replace(cfg, speculative="draft", num_speculative_tokens=3)

    def spec_counts() -> list[Counter]:
        counts = [Counter() for _ in range(cfg.max_new_tokens)]
        for seed in range(NUM_SEEDS):
            run_cfg = dataclasses.replace(spec_cfg, seed=seed)
            for position, token in enumerate(generate(lm, PROMPTS[0], run_cfg, draft=small_draft).output_ids):
                counts[position][token] += 1
        return counts

    assert min(chi_square_p(a, b) for a, b in zip(plain[1:], spec_counts()[1:])) >= 1e-3
    monkeypatch.setattr(generation, "accept", keep_every_draft)
    assert min(chi_square_p(a, b) for a, b in zip(plain[1:], spec_counts()[1:])) < 1e-6, "no power"


def test_a_draft_model_is_refused_before_any_pass(tiny, small_draft, tmp_path):
    from transformers import AutoModelForCausalLM

    from tests.conftest import tiny_config
    from tests.factories import build_bos_tokenizer

    other = build_bos_tokenizer(tmp_path)  # another vocabulary
    config = tiny_config("llama", len(other), other.eos_token_id)
    config.num_hidden_layers = 1
    AutoModelForCausalLM.from_config(config).save_pretrained(tmp_path)
    foreign = load_model(tmp_path, device="cpu")
    cfg = GenerationConfig(speculative="draft")
    for target, draft, key in ((tiny["llama"], None, "speculative_draft_missing"),
                               (tiny["llama"], foreign, "draft_vocabulary"),
                               (small_draft, tiny["llama"], "draft_larger")):
        with pytest.raises(InputError) as caught:
            next(passes(target, [5, 6, 7], cfg, record=False, draft=draft))
        assert caught.value.key == key
        zh, en = error_message(caught.value, "zh"), error_message(caught.value, "en")
        assert "草稿模型" in zh and "draft model" in en


def test_a_speculative_trace_crosses_the_worker_protocol_and_its_checks():
    """The page reads runs through the engine worker's client: its codec and meaning checks take verify steps."""
    import json

    from engine.contract.meaning import MeaningError, check_trace
    from engine.contract.worker.client import checked_trace
    from engine.contract.codec import convert, to_plain
    from tests.factories import make_speculative_trace

    trace = make_speculative_trace()
    check_trace(trace)
    assert checked_trace(json.loads(json.dumps(to_plain(trace)))) == trace
    data = json.loads(trace.to_json())
    verify = data["steps"][1]
    verify["draft_ids"] = list(range(17))  # a peer's 17 drafts: more than a verify pass checks
    verify["input_ids"], verify["input_pieces"] = verify["input_ids"][:1] + list(range(17)), ["x"] * 18
    verify["context_after"] = verify["context_before"] + 18
    with pytest.raises(MeaningError):
        check_trace(convert(data, RequestTrace))

"""The lesson engine's prefix cache (engine/runtime/prefix_store.py): a run's Prefill starts from the longest
kept earlier run of its scope that begins like its prompt, computes only the rest, and changes no token;
every miss reason is produced on purpose here."""

from __future__ import annotations

import dataclasses
import itertools

import pytest

from engine.contract.codec import convert
from engine.contract.errors import InputError
from engine.contract.trace import PREFIX_MISSES, PrefixReuse, RequestTrace, TraceFormatError
from engine.runtime.generation import GenerationConfig, generate
from engine.runtime.model import load_model
from engine.runtime.prefix_store import PrefixStore
from engine.runtime.repeats import measure

_scopes = itertools.count()


def cached_cfg(**kw) -> GenerationConfig:
    """The cache on, in a scope no other test uses (the default model is shared by the session)."""
    return GenerationConfig(max_new_tokens=kw.pop("max_new_tokens", 6), prefix_cache=True,
                            prefix_scope=f"test-{next(_scopes)}", **kw)


@pytest.fixture(scope="module")
def tiny(tiny_model_dirs):
    return {kind: load_model(path, device="cpu", warmup=False) for kind, path in tiny_model_dirs.items()}


def test_the_second_run_computes_only_the_new_positions(default_lm):
    cfg = cached_cfg()
    first = generate(default_lm, "法国的首都是", cfg)
    again = generate(default_lm, "法国的首都是", cfg)
    n = again.prompt_len
    assert first.prefix.num_cached_tokens == 0 and first.prefix.miss == "first_seen"
    assert again.prefix == PrefixReuse(n, n - 1, source_started_at_s=first.started_at_s,
                                       lookup_ms=again.prefix.lookup_ms, kept_runs=1)
    prefill = again.prefill
    assert (prefill.context_before, prefill.context_after) == (n - 1, n)  # the last position only
    assert prefill.input_ids == again.prompt_ids[n - 1:] and prefill.input_pieces == again.prompt_pieces[n - 1:]
    assert prefill.kv_bytes == first.prefill.kv_bytes  # the cache holds every prompt position either way
    assert again.output_ids == first.output_ids == generate(default_lm, "法国的首都是", GenerationConfig(6)).output_ids


def test_a_prompt_that_extends_the_last_run_reads_its_answer_too(default_lm):
    """A multi-turn chat resends the conversation: the kept run holds the prompt and the answer."""
    cfg = cached_cfg()
    first = generate(default_lm, "法国的首都是", cfg)
    follow = generate(default_lm, "法国的首都是" + first.output_text + "德国的首都是", cfg)
    kept = first.prompt_len + len(first.steps) - 1  # the answer's last token was never fed
    assert follow.prompt_ids[:kept] == first.prompt_ids + first.output_ids[:-1]
    assert follow.prefix.num_cached_tokens == kept and follow.prefix.miss == "first_seen"  # the rest is new
    assert follow.prefill.context_before == kept
    alone = generate(default_lm, follow.prompt, GenerationConfig(6))
    assert follow.output_ids == alone.output_ids


def test_diverged_names_the_token_in_both(default_lm):
    cfg = cached_cfg()
    generate(default_lm, "法国的首都是", cfg)
    other = generate(default_lm, "法国的语言是", cfg)
    p = other.prefix
    k = p.diverged_at
    assert p.miss == "diverged" and k == p.num_cached_tokens > 0
    assert other.prompt_pieces[k] == p.token_piece and p.cached_piece == "首都" != p.token_piece
    assert other.prefill.context_before == k


def test_first_seen_too_short_and_scopes_are_apart(default_lm):
    cfg = cached_cfg()
    generate(default_lm, "法国的首都是", cfg)
    elsewhere = GenerationConfig(max_new_tokens=4, prefix_cache=True, prefix_scope=cfg.prefix_scope + "x")
    assert generate(default_lm, "法国的首都是", elsewhere).prefix.miss == "first_seen"  # another visitor's run
    fresh = generate(default_lm, "日本的首都是", cfg).prefix
    assert (fresh.miss, fresh.num_cached_tokens, fresh.kept_runs) == ("first_seen", 0, 1)
    one = generate(default_lm, "法", cfg)
    assert one.prompt_len == 1 and one.prefix.miss == "too_short" and one.prefill.context_before == 0


def test_evicted_says_when(default_lm):
    default_lm = dataclasses.replace(default_lm, prefixes=PrefixStore(runs_per_scope=1))
    cfg = cached_cfg()
    first = generate(default_lm, "法国的首都是", cfg)
    generate(default_lm, "日本的首都是", cfg)  # the scope keeps one run: this one evicts the first
    back = generate(default_lm, "法国的首都是", cfg).prefix
    assert back.miss == "evicted" and back.source_started_at_s == first.started_at_s
    assert back.evicted_at_s >= first.started_at_s and back.num_cached_tokens == 0


def test_the_store_stays_within_its_bytes(default_lm):
    counted = PrefixStore()  # one run's bytes as the store counts them: its tensors, their overhead, its ids
    generate(dataclasses.replace(default_lm, prefixes=counted), "法国的首都是", GenerationConfig(6, prefix_cache=True))
    store = PrefixStore(max_bytes=int(counted.nbytes * 2.5))
    default_lm = dataclasses.replace(default_lm, prefixes=store)
    for prompt, scope in (("法国的首都是", "a"), ("日本的首都是", "b"), ("德国的首都是", "c")):
        generate(default_lm, prompt, GenerationConfig(6, prefix_cache=True, prefix_scope=scope))
        assert store.nbytes <= store.max_bytes
    assert [s for s, _ in store.kept] == ["b", "c"]  # least recently used first
    assert generate(default_lm, "法国的首都是", GenerationConfig(6, prefix_cache=True, prefix_scope="a")) \
        .prefix.miss == "evicted"


def test_static_modes_and_sliding_windows_say_why(default_lm, tiny):
    static = generate(default_lm, "法国的首都是", cached_cfg(mode="static"))
    assert static.prefix.miss == "mode" and static.prefill.context_before == 0
    sliding = tiny["mistral"]
    cfg = cached_cfg(max_new_tokens=4)
    generate(sliding, "hello world", cfg)
    assert generate(sliding, "hello world", cfg).prefix.miss == "sliding_window"
    assert not sliding.prefixes.kept


def test_repeats_all_read_the_same_kept_run(default_lm):
    cfg = cached_cfg()
    generate(default_lm, "法国的首都是", cfg)
    runs = measure(default_lm, "法国的首都是巴黎。德国的首都是", cfg, repeats=3)
    assert len({r.prefix.num_cached_tokens for r in runs}) == 1 and runs[0].prefix.num_cached_tokens > 0
    assert len({r.output_ids for r in runs}) == 1
    assert tuple(default_lm.prefixes.runs(cfg.prefix_scope)[-1].ids[:runs[0].prompt_len]) == tuple(runs[0].prompt_ids)


@pytest.mark.parametrize("kind", ["llama", "qwen2", "gpt2"])
def test_tokens_are_the_same_as_without_the_cache(tiny, kind):
    lm, cfg = tiny[kind], cached_cfg(max_new_tokens=8, ignore_eos=True)
    prompts = ["the cat sat", "the cat sat on", "the cat sat on the mat", "the dog ran", "the cat sat"]
    for prompt in prompts:
        with_cache = generate(lm, prompt, cfg)
        alone = generate(lm, prompt, GenerationConfig(max_new_tokens=8, ignore_eos=True))
        assert with_cache.output_ids == alone.output_ids, (kind, prompt, with_cache.prefix)
    assert with_cache.prefix.num_cached_tokens == with_cache.prompt_len - 1


def test_the_record_round_trips_and_refuses_nonsense(default_lm):
    cfg = cached_cfg()
    generate(default_lm, "法国的首都是", cfg)
    trace = generate(default_lm, "法国的首都是", cfg)
    assert RequestTrace.from_json(trace.to_json()) == trace
    assert generate(default_lm, "法国的首都是", GenerationConfig(4)).prefix is None  # off: as before
    bad = [dict(num_tokens=4, num_cached_tokens=4), dict(num_tokens=4, num_cached_tokens=1, miss="nope"),
           dict(num_tokens=4, num_cached_tokens=1, miss="diverged"),
           dict(num_tokens=4, num_cached_tokens=1, miss="diverged", diverged_at=2),
           dict(num_tokens=-1, num_cached_tokens=0)]
    for fields in bad:
        with pytest.raises(TraceFormatError):
            PrefixReuse(**fields)
    data = trace.to_dict()
    data["steps"][0]["context_before"] = 0
    data["steps"][0]["input_ids"] = list(trace.prompt_ids)
    data["steps"][0]["input_pieces"] = list(trace.prompt_pieces)
    with pytest.raises(TraceFormatError, match="prefix cache"):
        convert(data, RequestTrace)  # a Prefill from 0 cannot have read positions from the cache
    assert set(PREFIX_MISSES) >= {"too_short", "first_seen", "diverged", "evicted", "mode", "sliding_window"}


@pytest.mark.parametrize("scope", ["a b", "<script>", "x" * 65, "名字"])
def test_a_scope_is_a_plain_name(scope):
    with pytest.raises(InputError) as err:
        GenerationConfig(prefix_cache=True, prefix_scope=scope)
    assert err.value.key == "prefix_scope"

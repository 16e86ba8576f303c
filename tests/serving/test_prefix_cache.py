"""Prefix caching on the real engine: the same greedy tokens with the cache on and off and as each
request run alone; the block manager's invariants after every pass; every miss reason made on purpose."""

from __future__ import annotations

import json
import time

import pytest

from engine.contract.serving.config import ServeConfig
from engine.contract.serving.metrics import prefix_cache_totals
from engine.contract.serving.prefix import MISS_REASONS, block_hashes, chain_hash, short, usable_blocks
from engine.contract.serving.trace import ServingRun
from engine.contract.serving.workloads import SCENARIOS, WorkloadRequest, scenario
from engine.runtime.serving.block_manager import BlockManager
from engine.runtime.serving.core import EngineCore, prepare_sequences
from engine.runtime.serving.engine import run_workload
from engine.runtime.serving.scheduler import SchedulerConfig
from tests.serving.test_serving_engine import assert_parity, solo_ids

PREFIX_SCENARIOS = ("shared-system-prompt", "multi-turn-chat", "near-miss")
TEXT = "Prefill reads the whole prompt in one forward pass, and Decode writes one token at a time."


# --- the hash chain and the block manager, no model ---------------------------------------------

def test_hashes_chain_and_never_name_a_partial_block():
    tokens = list(range(10))
    hashes = block_hashes(tokens, 4)
    assert len(hashes) == 2  # 10 tokens: two full blocks, the last two tokens unnamed
    assert hashes[0] == chain_hash("", [0, 1, 2, 3]) and hashes[1] == chain_hash(hashes[0], [4, 5, 6, 7])
    assert block_hashes([9, 1, 2, 3, 4, 5, 6, 7], 4)[1] != hashes[1]  # a different first block changes the chain
    assert block_hashes(tokens, 4, hashes[:1]) == hashes  # known hashes are kept, the rest computed
    assert [usable_blocks(n, 4) for n in (1, 4, 5, 8, 9)] == [0, 0, 1, 1, 2]  # the last position is computed


def test_block_manager_shares_counts_parks_and_evicts_least_recently_used():
    bm = BlockManager(4, 2, prefix_caching=True)
    a = [1, 2, 3, 4, 5]
    ha = block_hashes(a, 2)
    bm.grow("a", 5)  # 3 blocks
    bm.name_blocks("a", a, ha, 5)
    assert len(bm.cached) == 2  # the third block holds one token: never named
    match = bm.match(a, ha)
    assert match.block_ids == tuple(bm.tables["a"][:2]) and match.missing is None
    bm.take("b", match.block_ids)
    assert [bm.ref_counts[x] for x in bm.tables["a"]] == [2, 2, 1]
    bm.check({"a": a, "b": a})
    bm.free("a")
    bm.free("b")
    assert bm.num_free == 4 and len(bm.idle) == 2 and bm.num_allocated == bm.num_freed
    bm.check({})
    bm.now_ms = 12.0
    bm.grow("c", 5)  # 3 blocks: 2 from the free list, then the least recently used idle block
    evicted = bm.take_evictions()
    assert len(evicted) == 1 and evicted[0].by_request == "c" and evicted[0].at_ms == 12.0
    assert evicted[0].block_hash == short(ha[1])  # the prefix's tail goes first, its head stays
    assert ha[0] in bm.cached and ha[1] not in bm.cached and ha[1] in bm.evicted
    bm.check({"c": [7] * 5})


def test_freeing_twice_or_sharing_wrongly_is_caught():
    bm = BlockManager(3, 2, prefix_caching=True)
    bm.grow("a", 4)
    table = list(bm.tables["a"])
    bm.free("a")
    bm.tables["a"] = table  # a stale table: its blocks are freed a second time
    with pytest.raises(RuntimeError, match="freed twice"):
        bm.free("a")
    bm = BlockManager(3, 2, prefix_caching=True)
    bm.grow("a", 4)
    bm.name_blocks("a", [1, 2, 3, 4], block_hashes([1, 2, 3, 4], 2), 4)
    with pytest.raises(AssertionError, match="another hash"):
        bm.check({"a": [1, 2, 9, 9]})  # the tokens it holds are not the ones the block was named for
    bm.ref_counts[bm.tables["a"][0]] = 2
    with pytest.raises(AssertionError, match="reference count"):
        bm.check({"a": [1, 2, 3, 4]})


def test_without_the_cache_nothing_is_named_or_found():
    bm = BlockManager(4, 2)
    bm.grow("a", 5)
    bm.name_blocks("a", [1, 2, 3, 4, 5], block_hashes([1, 2, 3, 4, 5], 2), 5)
    assert not bm.cached and bm.match([1, 2, 3, 4, 5], []).block_ids == ()
    bm.free("a")
    assert list(bm.free_blocks) == [3, 0, 1, 2]  # freed in table order, as before the cache existed


# --- the engine, stepped by hand (arrivals in a fixed order, invariants after every pass) -------

def drive(lm, config: ServeConfig, waves) -> tuple[dict, list]:
    """Each wave's requests are added together; the engine steps until they are all done, checking the
    block manager after every pass. Returns ({request_id: sequence}, iterations)."""
    seqs = prepare_sequences(lm, [r for wave in waves for r in wave], config)
    by_id = {s.request_id: s for s in seqs}
    core = EngineCore(lm, SchedulerConfig.for_run(config), config.blocks_for_run(seqs), config.block_size)
    t0, iterations = time.perf_counter(), []
    for wave in waves:
        for req in wave:
            core.scheduler.add(by_id[req.request_id])
        while core.scheduler.has_work():
            iteration, _ = core.step(lambda: (time.perf_counter() - t0) * 1e3)
            iterations.append(iteration)
            held = {s.request_id: s.tokens for s in core.scheduler.running}
            core.blocks.check(held)
    assert not core.blocks.tables and core.blocks.num_free == core.blocks.num_blocks
    return by_id, iterations


def ask(rid: str, prompt: str, max_new: int = 4) -> WorkloadRequest:
    return WorkloadRequest(0.0, prompt, max_new, True, request_id=rid)


ON = ServeConfig(policy="chunked", token_budget=32, block_size=8, prefix_caching=True)


def test_a_repeated_prompt_computes_only_what_follows_its_cached_blocks(default_lm):
    seqs, iterations = drive(default_lm, ON, [[ask("a", TEXT)], [ask("b", TEXT)]])
    a, b = seqs["a"], seqs["b"]
    n = len(a.prompt_ids)
    assert a.prefix.miss == "first_seen" and a.prefix.num_cached_tokens == 0
    assert b.prefix.miss == "" and b.prefix.num_cached_tokens == usable_blocks(n, 8) * 8 > 0
    first = next(e for it in iterations for e in it.entries if e.request_id == "b")
    assert (first.phase, first.start, first.end) == ("prefill", b.prefix.num_cached_tokens, n)  # only the rest
    assert b.output_ids == a.output_ids == solo_ids(default_lm, b)
    hit = next(it for it in iterations if it.lookups and it.lookups[0].request_id == "b")
    shared = hit.blocks.ref_counts()
    assert max(shared.values()) == 1  # a had finished: b holds them alone
    assert b.prefix.block_hashes == tuple(short(h) for h in block_hashes(b.prompt_ids, 8))


def test_the_prompt_that_fills_its_last_block_still_computes_one_position(default_lm):
    ids = prepare_sequences(default_lm, [ask("x", TEXT)], ON)[0].prompt_ids
    cut = len(ids) - len(ids) % 8  # a prompt of whole blocks: its last block holds the last position
    text = default_lm.tokenizer.decode(ids[:cut])
    seqs, iterations = drive(default_lm, ON, [[ask("a", text)], [ask("b", text)]])
    b = seqs["b"]
    if len(b.prompt_ids) % 8 == 0:  # the decode round trip kept it whole blocks
        assert b.prefix.num_cached_tokens == len(b.prompt_ids) - 8
    assert b.prefix.num_computed_tokens >= 1 and b.output_ids == solo_ids(default_lm, b)


def test_every_miss_reason_on_purpose(default_lm):
    reasons = {}
    # first seen, then a different first token (diverged at position 0, both tokens named)
    seqs, _ = drive(default_lm, ON, [[ask("a", "Q: " + TEXT)], [ask("b", "A: " + TEXT)]])
    reasons["first_seen"], b = seqs["a"].prefix, seqs["b"].prefix
    assert (b.miss, b.diverged_at, b.other_request) == ("diverged", 0, "a")
    assert b.token_id == seqs["b"].prompt_ids[0] and b.cached_token_id == seqs["a"].prompt_ids[0]
    reasons["diverged"] = b
    # shorter than one block plus its last position
    seqs, _ = drive(default_lm, ON, [[ask("s", "法国的首都是")]])
    reasons["too_short"] = seqs["s"].prefix
    # in flight: two requests with one prompt admitted in the same pass
    same = ServeConfig(policy="prefill-first", block_size=8, prefix_caching=True)
    seqs, _ = drive(default_lm, same, [[ask("p", TEXT), ask("q", TEXT)]])
    assert seqs["q"].prefix.other_request == "p"
    reasons["in_flight"] = seqs["q"].prefix
    # evicted: a's blocks idle, b needs every block, a's prompt again finds them gone
    other = "Decode writes one token at a time, and Prefill reads the whole prompt in one forward pass."
    sizes = [len(s.prompt_ids) for s in prepare_sequences(default_lm, [ask("x", TEXT), ask("y", other)], ON)]
    tight = ServeConfig(policy="chunked", token_budget=32, block_size=8, prefix_caching=True,
                        num_kv_blocks=-(-(max(sizes) + 3) // 8))  # one request at its longest: every block
    seqs, _ = drive(default_lm, tight, [[ask("a", TEXT)], [ask("b", other)], [ask("c", TEXT)]])
    c = seqs["c"].prefix
    assert (c.miss, c.miss_block, c.other_request) == ("evicted", 0, "b") and c.evicted_at_ms is not None
    reasons["evicted"] = c
    # the cache off: every request says so
    run = run_workload(default_lm, [ask("a", TEXT)], ServeConfig(policy="chunked"))
    reasons["cache_off"] = run.requests[0].prefix
    assert {k: v.miss for k, v in reasons.items()} == {k: k for k in MISS_REASONS}
    assert all(v.num_cached_tokens == 0 for v in reasons.values())


def test_shared_blocks_hold_kv_bytes_once(default_lm):
    """Two chats after one system prompt, the first still decoding while the second runs: the blocks they
    share are held twice (reference count 2) and counted once."""
    work = [WorkloadRequest(0.0, q, 20, True, system_tokens=96, request_id=f"r{i}")
            for i, q in enumerate(("法国的首都是", "德国的首都是"))]
    run = run_workload(default_lm, work, ON)
    assert run.requests[1].prefix.num_cached_tokens >= 64
    both = [it.blocks for it in run.iterations if len(it.blocks.tables) == 2]
    snap = next(b for b in both if max(b.ref_counts().values()) == 2)
    assert snap.num_used_tokens < sum(t.num_tokens for t in snap.tables)  # the shared blocks counted once
    assert snap.num_used_blocks == len(snap.ref_counts())
    held = snap.held_tokens()
    assert snap.num_used_tokens == sum(held.values()) and snap.wasted_slots == len(held) * 8 - sum(held.values())


# --- parity: cache on == cache off == each request alone -------------------------------------------

def assert_same_tokens(lm, off: ServingRun, on: ServingRun) -> None:
    for a, b in zip(off.requests, on.requests):
        assert a.prompt_ids == b.prompt_ids and a.output_ids == b.output_ids, a.request_id
        assert list(b.output_ids) == solo_ids(lm, b), b.request_id


@pytest.mark.parametrize("name", PREFIX_SCENARIOS)
def test_prefix_scenarios_same_tokens_and_hits(default_lm, name):
    off = run_workload(default_lm, scenario(name), ServeConfig(policy="chunked"), scenario=name)
    on = run_workload(default_lm, scenario(name), ServeConfig(policy="chunked", prefix_caching=True), scenario=name)
    assert_same_tokens(default_lm, off, on)
    assert prefix_cache_totals(off.requests)[1] == 0 and prefix_cache_totals(on.requests)[1] > 0
    assert all(r.prefix.miss == "cache_off" for r in off.requests)
    assert on.requests[0].prefix.miss == "first_seen"
    if name == "near-miss":
        assert [r.prefix.miss for r in on.requests] == ["first_seen", "diverged", ""]
    if name == "shared-system-prompt":
        assert all(r.prefix.num_cached_tokens >= 496 for r in on.requests[1:])
    again = ServingRun.from_json(on.to_json())
    assert again == on and again.requests[1].prefix == on.requests[1].prefix


@pytest.mark.slow
@pytest.mark.parametrize("name", [s for s in SCENARIOS if s not in PREFIX_SCENARIOS])
def test_every_other_scenario_same_tokens_with_the_cache(default_lm, name):
    off = run_workload(default_lm, scenario(name), ServeConfig(policy="chunked"), scenario=name)
    on = run_workload(default_lm, scenario(name), ServeConfig(policy="chunked", prefix_caching=True), scenario=name)
    assert_same_tokens(default_lm, off, on)


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["one-at-a-time", "prefill-first", "disaggregated"])
def test_every_policy_same_tokens_with_the_cache(default_lm, policy):
    """Each request's tokens as if it ran alone (the same policy without the cache is held to that in
    test_serving_engine.py, so it is not run again here: the disaggregated one starts two processes)."""
    on = run_workload(default_lm, scenario("near-miss"), ServeConfig(policy=policy, prefix_caching=True))
    assert_parity(default_lm, on)
    assert on.requests[2].prefix.num_cached_tokens > 0


def test_preempted_requests_find_their_own_blocks_and_match(default_lm):
    """A tight budget preempts; a re-admitted request looks its own (idle) blocks up again."""
    work = [WorkloadRequest(0.0, TEXT, 12, True, system_tokens=40, request_id=f"r{i}") for i in range(3)]
    cfg = ServeConfig(policy="chunked", token_budget=24, block_size=8, num_kv_blocks=12, prefix_caching=True)
    seqs, iterations = drive(default_lm, cfg, [work])
    assert any(it.preempted for it in iterations)
    for s in seqs.values():
        assert s.output_ids == solo_ids(default_lm, s)


@pytest.mark.parametrize("kind", ["llama", "qwen2", "gpt2"])
def test_other_families_same_tokens_with_the_cache(tiny_model_dirs, kind):
    from engine.runtime.model import load_model

    lm = load_model(tiny_model_dirs[kind], device="cpu")
    work = (WorkloadRequest(0.0, "法国的首都是", 6, True, system_tokens=30),
            WorkloadRequest(0.0, "德国的首都是", 5, True, system_tokens=30),
            WorkloadRequest(1.0, "The capital of France is", 7, True, system_tokens=30))
    cfg = ServeConfig(policy="chunked", token_budget=8, block_size=4)
    off = run_workload(lm, work, cfg)
    on = run_workload(lm, work, ServeConfig(policy="chunked", token_budget=8, block_size=4, prefix_caching=True))
    assert_same_tokens(lm, off, on)
    seqs, _ = drive(lm, ServeConfig(policy="chunked", token_budget=8, block_size=4, prefix_caching=True),
                    [[dataclass_id(work[0], "a")], [dataclass_id(work[1], "b"), dataclass_id(work[2], "c")]])
    assert seqs["b"].prefix.num_cached_tokens > 0


def dataclass_id(req: WorkloadRequest, rid: str) -> WorkloadRequest:
    return WorkloadRequest(req.arrival_ms, req.prompt, req.max_new_tokens, req.ignore_eos, req.prompt_tokens, rid,
                           req.system_tokens)


# --- the record ------------------------------------------------------------------------------------

def test_an_older_run_without_prefix_fields_still_loads(default_lm):
    run = run_workload(default_lm, [ask("a", TEXT)], ON)
    data = run.to_dict()
    del data["settings"]["prefix_caching"]
    for r in data["requests"]:
        del r["prefix"]
    for it in data["iterations"]:
        del it["lookups"], it["evictions"], it["blocks"]["num_cached_free_blocks"]
    old = ServingRun.from_json(json.dumps(data))
    assert not old.prefix_caching and old.requests[0].prefix is None
    assert prefix_cache_totals(old.requests) == (0, 0, 0.0)

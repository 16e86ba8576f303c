"""The serving engine on the real default model: every request's greedy tokens equal
running it alone (engine.runtime.generation), under every policy; the scheduler's invariants;
the KV hand-off of a disaggregated run; workers that outlive no coordinator; a request that can never fit."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from engine.contract.errors import InputError
from engine.contract.serving.config import ServeConfig
from engine.contract.serving.workloads import WorkloadRequest
from engine.runtime.generation import GenerationConfig, generate_ids
from engine.runtime.serving.core import EngineCore, prepare_sequences
from engine.runtime.serving.engine import run_workload
from engine.runtime.serving.scheduler import SchedulerConfig
from tests.factories import ROOT

# Ragged on purpose: a 1-token answer (EOS), a stretched prompt that chunks, staggered arrivals.
WORKLOAD = (
    WorkloadRequest(0.0, "法国的首都是", 10, ignore_eos=True),
    WorkloadRequest(0.0, "The capital of Japan is", 12, ignore_eos=False),
    WorkloadRequest(5.0, "德国的首都是", 6, ignore_eos=True, prompt_tokens=70),
    WorkloadRequest(10.0, "The capital of Italy is", 9, ignore_eos=True),
    WorkloadRequest(12.0, "埃及的首都是", 1),
)


def solo_ids(lm, record) -> list[int]:
    cfg = GenerationConfig(max_new_tokens=record.max_new_tokens, ignore_eos=record.ignore_eos)
    return generate_ids(lm, list(record.prompt_ids), cfg)


def assert_parity(lm, run) -> None:
    for record in run.requests:
        assert list(record.output_ids) == solo_ids(lm, record), record.request_id


def assert_positions_cover(run) -> None:
    """Each request's entries compute its positions in order, without gaps or overlaps
    (a preemption restarts it at 0, marked recompute)."""
    for record in run.requests:
        nxt = 0
        for it in run.iterations:
            for e in it.entries:
                if e.request_id != record.request_id:
                    continue
                if e.start == 0 and nxt > 0:
                    assert e.recompute and record.num_preemptions > 0
                    nxt = 0
                assert e.start == nxt
                nxt = e.end
        # every position but the last output token (never fed back) was computed
        assert nxt == record.prompt_len + record.num_output_tokens - 1


@pytest.fixture(scope="module")
def runs(default_lm):
    configs = {
        "one-at-a-time": ServeConfig(policy="one-at-a-time"),
        "prefill-first": ServeConfig(policy="prefill-first"),
        "chunked": ServeConfig(policy="chunked", token_budget=16, block_size=8),
        "disaggregated": ServeConfig(policy="disaggregated"),
        # 9 blocks of 8 = 72 slots: the 70-token prompt fits alone, so others are preempted and recomputed
        "chunked-tight": ServeConfig(policy="chunked", token_budget=24, block_size=8, num_kv_blocks=11),
        "prefill-first-tight": ServeConfig(policy="prefill-first", block_size=8, num_kv_blocks=11),
        "wait-tight": ServeConfig(policy="chunked", token_budget=24, block_size=8, num_kv_blocks=11,
                                  on_kv_full="wait"),
    }
    return {name: run_workload(default_lm, WORKLOAD, cfg, scenario="test") for name, cfg in configs.items()}


@pytest.mark.slow
@pytest.mark.parametrize("name", ["one-at-a-time", "prefill-first", "chunked", "disaggregated", "chunked-tight",
                                  "prefill-first-tight", "wait-tight"])
def test_every_request_matches_running_it_alone(default_lm, runs, name):
    run = runs[name]
    assert [r.request_id for r in run.requests] == ["r0", "r1", "r2", "r3", "r4"]
    assert all(r.stop_reason in ("eos", "length") for r in run.requests)  # every request finished
    assert_parity(default_lm, run)
    assert_positions_cover(run)


@pytest.mark.slow
def test_real_runs_round_trip_through_json(runs):
    from engine.contract.serving.trace import ServingRun

    for name in ("disaggregated", "chunked-tight"):
        assert ServingRun.from_json(runs[name].to_json()) == runs[name]


@pytest.mark.slow
def test_answers_mean_something(runs):
    r1 = runs["chunked"].request("r1")
    assert r1.output_text.startswith(" Tokyo.") and r1.stop_reason == "eos"
    assert runs["chunked"].request("r4").output_ids == runs["one-at-a-time"].request("r4").output_ids


@pytest.mark.slow
def test_policies_shape_the_passes(runs):
    assert all(len(it.entries) == 1 for it in runs["one-at-a-time"].iterations)
    for it in runs["prefill-first"].iterations:  # a pass is all Prefill or all Decode: Decodes stall
        assert len({e.phase == "decode" for e in it.entries}) == 1
        assert set(it.stalled) <= set(it.waiting)
    assert any(it.stalled for it in runs["prefill-first"].iterations)  # r2 and r3 arrive while others decode
    assert not any(it.stalled for it in runs["chunked"].iterations)  # Decodes always go first under chunked
    chunked = runs["chunked"].iterations
    assert any(e.phase == "prefill_chunk" for it in chunked for e in it.entries)
    assert any(it.num_prefill_tokens and it.num_decode_tokens for it in chunked)  # mixed passes
    for it in chunked:
        assert it.num_tokens <= 16 and it.token_budget == 16  # the budget is never exceeded
        phases = [e.phase for e in it.entries]
        assert phases == sorted(phases, key=lambda p: p != "decode")  # Decodes first
    workers = {it.worker for it in runs["disaggregated"].iterations}
    assert workers == {"prefill", "decode"}
    for it in runs["disaggregated"].iterations:
        assert all((e.phase == "decode") == (it.worker == "decode") for e in it.entries)


@pytest.mark.slow
def test_tight_kv_budget_preempts_or_waits(runs):
    tight = runs["chunked-tight"]
    assert sum(r.num_preemptions for r in tight.requests) > 0
    assert any(it.preempted for it in tight.iterations)
    assert any(e.recompute for it in tight.iterations for e in it.entries)
    assert all(it.blocks.num_used_blocks <= 11 for it in tight.iterations)
    wait = runs["wait-tight"]  # reserves each request's whole length: never preempts, requests wait instead
    assert sum(r.num_preemptions for r in wait.requests) == 0
    assert any(it.waiting for it in wait.iterations)


def test_two_long_prefills_that_cannot_both_fit_still_finish(default_lm):
    """Chunks of two long prompts would each hold half the blocks and wait forever for the rest;
    the older one preempts the newer instead, and both finish with the solo answer."""
    workload = (WorkloadRequest(0.0, "法国的首都是", 6, True, 40), WorkloadRequest(0.0, "德国的首都是", 6, True, 40))
    run = run_workload(default_lm, workload, ServeConfig(policy="chunked", token_budget=8, block_size=4,
                                                         num_kv_blocks=14))
    assert sum(r.num_preemptions for r in run.requests) > 0
    assert_parity(default_lm, run)
    assert_positions_cover(run)


@pytest.mark.slow
def test_block_tables_follow_the_token_counts(runs):
    for run in runs.values():
        for it in run.iterations:
            snap = it.blocks
            ids = [b for t in snap.tables for b in t.block_ids]
            assert len(ids) == len(set(ids)) == snap.num_used_blocks  # no block in two tables, none lost
            for t in snap.tables:
                assert all(0 < n <= snap.block_size for n in t.tokens_per_block[:-1])
                assert len(t.block_ids) == -(-max(t.num_tokens, 1) // snap.block_size) or t.num_tokens == 0
            assert snap.wasted_slots < snap.block_size * max(1, len(snap.tables))
        assert run.iterations[-1].blocks.num_free_blocks == run.iterations[-1].blocks.num_blocks


def test_engine_core_frees_every_block_it_allocates(default_lm):
    cfg = ServeConfig(policy="chunked", token_budget=8, block_size=4, num_kv_blocks=30)
    seqs = prepare_sequences(default_lm, WORKLOAD, cfg)
    core = EngineCore(default_lm, SchedulerConfig.for_run(cfg), 30, 4)
    for seq in seqs:
        core.scheduler.add(seq)
    t0 = time.perf_counter()
    while core.scheduler.has_work():
        iteration, _ = core.step(lambda: (time.perf_counter() - t0) * 1e3)
        assert iteration.num_tokens <= 8
    assert core.blocks.num_allocated == core.blocks.num_freed > 0
    assert sorted(core.blocks.free_blocks) == list(range(30)) and not core.blocks.tables


@pytest.mark.slow
def test_disaggregated_hand_off_bytes_equal_the_cache_bytes(default_lm, runs):
    run = runs["disaggregated"]
    info = default_lm.info
    handed = {h.request_id: h for h in run.handoffs}
    assert "r4" not in handed  # a one-token answer is done after its Prefill: nothing to hand over
    assert set(handed) == {"r0", "r1", "r2", "r3"}
    for h in run.handoffs:
        record = run.request(h.request_id)
        assert h.num_tokens == record.prompt_len
        assert h.num_bytes == info.kv_bytes_for(h.num_tokens) == h.num_tokens * 2 * 4 * 2 * 32 * 4
        assert h.copy_ms > 0 and h.received_ms >= h.send_start_ms
        nvlink, fast, slow = h.link_estimates
        assert nvlink.ms == pytest.approx(h.num_bytes / 450e9 * 1e3) and nvlink.ms < fast.ms < slow.ms
    assert {link.name for link in run.links} == {"nvlink", "400gbps", "100gbps"}
    import multiprocessing

    assert multiprocessing.active_children() == []  # both workers joined: no orphans


@pytest.mark.slow
def test_a_failing_worker_is_reported_and_nothing_is_left_running(default_lm):
    import dataclasses
    import multiprocessing

    from engine.runtime.serving.disaggregated import WorkerError

    broken = dataclasses.replace(default_lm, path="/nonexistent/model",
                                 info=dataclasses.replace(default_lm.info, model_id="elsewhere"))
    start = time.perf_counter()
    with pytest.raises(WorkerError, match="worker failed: .*model folder not found"):
        run_workload(broken, WORKLOAD[:2], ServeConfig(policy="disaggregated"))
    assert time.perf_counter() - start < 120
    assert multiprocessing.active_children() == []


def test_progress_is_reported_after_every_pass(default_lm):
    seen = []
    run = run_workload(default_lm, WORKLOAD[:2], ServeConfig(policy="chunked"),
                       on_iteration=lambda it, done, total: seen.append((it.end_ms, done, total)))
    assert len(seen) == len(run.iterations) and seen[-1][1:] == (2, 2)
    assert [d for _, d, _ in seen] == sorted(d for _, d, _ in seen)


def test_a_request_that_can_never_fit_is_refused(default_lm):
    cfg = ServeConfig(policy="chunked", block_size=8, num_kv_blocks=4)  # 32 slots
    with pytest.raises(InputError, match="r2 can never fit: it needs 10 blocks") as err:
        run_workload(default_lm, WORKLOAD, cfg)
    assert err.value.key == "never_fits"


def test_serve_config_refuses_bad_values():
    with pytest.raises(InputError, match="--token-budget"):
        ServeConfig(token_budget=0)
    with pytest.raises(InputError, match="--policy"):
        ServeConfig(policy="fastest")


@pytest.mark.slow
def test_arrivals_are_honoured_in_real_time(runs):
    run = runs["one-at-a-time"]
    for record in run.requests:
        assert record.first_scheduled_ms >= record.arrival_ms
        assert record.first_token_ms > record.first_scheduled_ms
        assert record.token_times_ms == tuple(sorted(record.token_times_ms))
    starts = [it.start_ms for it in run.iterations]
    assert starts == sorted(starts)


@pytest.mark.slow
def test_hf_continuous_batching_agrees(default_lm, runs):
    """A second oracle: transformers' own continuous-batching manager, same prompts, greedy."""
    from transformers import AutoModelForCausalLM
    from transformers import GenerationConfig as HFConfig

    model = AutoModelForCausalLM.from_pretrained(default_lm.path, attn_implementation="sdpa").eval()
    if not hasattr(model, "generate_batch"):
        pytest.skip("this transformers has no generate_batch")
    records = [r for r in runs["chunked"].requests if r.ignore_eos]
    cfg = HFConfig(max_new_tokens=max(r.max_new_tokens for r in records), do_sample=False, eos_token_id=-1,
                   pad_token_id=1)
    out = model.generate_batch(inputs=[list(r.prompt_ids) for r in records], generation_config=cfg,
                               progress_bar=False)
    got = [list(o.generated_tokens) for _, o in sorted(out.items(), key=lambda kv: int(kv[0].split("_")[-1]))]
    for record, tokens in zip(records, got):
        assert list(record.output_ids) == tokens[:record.max_new_tokens], record.request_id


@pytest.mark.parametrize("kind", ["llama", "qwen2", "gpt2"])
def test_other_families_match_running_alone(tiny_model_dirs, kind):
    """Random tiny models of other families (GQA or not, RoPE or learned positions): same parity."""
    from engine.runtime.model import load_model

    lm = load_model(tiny_model_dirs[kind], device="cpu")
    workload = (WorkloadRequest(0.0, "The capital of France is", 8, True),
                WorkloadRequest(0.0, "法国的首都是", 6, True, 30),
                WorkloadRequest(1.0, "Prefill reads the whole prompt", 7, True))
    run = run_workload(lm, workload, ServeConfig(policy="chunked", token_budget=8, block_size=4))
    assert_parity(lm, run)
    assert_positions_cover(run)


def test_sliding_window_models_are_refused(tiny_model_dirs):
    from engine.runtime.model import load_model

    lm = load_model(tiny_model_dirs["mistral"], device="cpu")
    with pytest.raises(InputError, match="sliding window") as err:
        run_workload(lm, WORKLOAD[:1], ServeConfig())
    assert err.value.key == "serving_sliding_window"


# A coordinator in a process of its own: a disaggregated run long enough to be killed in the middle of.
COORDINATOR = """
from engine.contract.serving.config import ServeConfig
from engine.contract.serving.workloads import WorkloadRequest
from engine.runtime.model import load_model
from engine.runtime.serving.engine import run_workload
requests = [WorkloadRequest(10.0 * i, "法国的首都是", 120, ignore_eos=True) for i in range(24)]
run_workload(load_model(), requests, ServeConfig(policy="disaggregated"),
             on_iteration=lambda it, done, total: print("pass", flush=True))
"""


def descendants(pid: int) -> set[int]:
    """Every live process below `pid` (read from /proc: parent links)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        try:
            stat = open(f"/proc/{entry}/stat").read()
        except (OSError, ValueError):
            continue
        if entry.isdigit():
            children.setdefault(int(stat[stat.rindex(")") + 2:].split()[1]), []).append(int(entry))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def running(pid: int) -> bool:
    """The process exists and is not a zombie (one that exited, not yet reaped by its new parent)."""
    try:
        stat = open(f"/proc/{pid}/stat").read()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2:].split()[0] != "Z"


@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads processes from /proc")
def test_workers_stop_when_their_coordinator_is_killed():
    """A coordinator killed mid-run (SIGKILL: nothing of it cleans up) leaves no worker behind: each sees its
    parent change and exits (docs/serving.md: workers exit if the coordinator goes away)."""
    coordinator = subprocess.Popen([sys.executable, "-c", COORDINATOR], stdout=subprocess.PIPE, text=True,
                                   cwd=ROOT, start_new_session=True)
    try:
        assert coordinator.stdout.readline() == "pass\n"  # the workers are measuring
        below = descendants(coordinator.pid)
        assert len(below) >= 2, below  # the two workers (and multiprocessing's resource tracker)
        coordinator.kill()
        coordinator.wait()
        deadline = time.monotonic() + 60
        while (alive := {pid for pid in below if running(pid)}) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not alive, alive
    finally:
        os.killpg(coordinator.pid, signal.SIGKILL)

"""What every serving run shares, colocated (engine.py) or disaggregated (disaggregated.py):

    prepare_sequences  tokenize the workload; refuse, before anything runs, a request that cannot be served
    EngineCore         one worker's scheduler + block manager + paged KV store + model, stepped one pass at a time
    make_clock         the run's clock: ms since its start, read after the device finished its queued work
    build_run          the finished sequences and passes -> a ServingRun (engine/contract/serving/trace.py)

engine.py drives one EngineCore in this process; disaggregated.py drives two, one per worker process.
Both import this module; it imports neither.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from engine.contract import limits
from engine.contract.errors import InputError
from engine.contract.prompts import extend_prompt, prompt_token_ids
from engine.contract.serving.metrics import compute_kv_memory, compute_serving_metrics
from engine.runtime.generation import token_pieces
from engine.runtime.hf import device_clock, eos_ids
from engine.runtime.model import LoadedModel
from engine.runtime.presets import available_memory_bytes
from engine.runtime.provenance import this_machine
from engine.runtime.serving.block_manager import BlockManager
from engine.runtime.serving.runner import ModelRunner, new_store
from engine.runtime.serving.scheduler import Scheduler, SchedulerConfig, never_fits
from engine.runtime.serving.sequence import Sequence, Status
from engine.contract.serving.trace import (
    SLO, BatchEntry, Iteration, PrefixLookup, RequestRecord, ServingRun, ServingSettings,
)
from engine.contract.serving.config import ServeConfig, blocks_for
from engine.contract.serving.workloads import WorkloadRequest

# --- requests in --------------------------------------------------------------

def prepare_sequences(lm: LoadedModel, workload: tuple[WorkloadRequest, ...] | list[WorkloadRequest],
                      config: ServeConfig) -> list[Sequence]:
    """Tokenize every request and refuse, before anything runs, one that cannot be served."""
    if not workload:
        raise InputError("bad_workload", "the workload has no requests")
    seqs = []
    for i, req in enumerate(sorted(workload, key=lambda r: r.arrival_ms)):
        text = extend_prompt(lm.tokenizer, req.prompt, req.prompt_tokens) if req.prompt_tokens else req.prompt
        if req.system_tokens:  # the same filler for every request asking this many: a prefix they share
            text = extend_prompt(lm.tokenizer, "\n", req.system_tokens) + text
        ids = prompt_token_ids(lm.tokenizer, text)
        rid = req.request_id or f"r{i}"
        if not ids:
            raise InputError("empty_prompt", f"request {rid}: the prompt has no tokens", request_id=rid)
        seqs.append(Sequence(rid, text, ids, req.max_new_tokens, req.ignore_eos, float(req.arrival_ms)))
    _check_fits(lm, seqs, config)
    return seqs


def _check_fits(lm: LoadedModel, seqs: list[Sequence], config: ServeConfig) -> None:
    if lm.info.sliding_window:  # the runner attends over every cached position
        raise InputError("serving_sliding_window", f"{lm.model_id} uses a sliding window; the serving engine "
                                                   "supports full-attention models only", model=lm.model_id)
    if len({s.request_id for s in seqs}) != len(seqs):
        raise InputError("bad_workload", "two requests have the same request_id")
    num_blocks = config.blocks_for_run(seqs)
    check_kv_memory(lm, num_blocks, config)
    for s in seqs:
        if s.max_num_tokens + 1 > lm.info.max_positions:
            raise InputError("prompt_too_long", f"request {s.request_id}: {len(s.prompt_ids)} prompt tokens + "
                                                f"{s.max_new_tokens} new exceed the model's context "
                                                f"{lm.info.max_positions}", request_id=s.request_id)
        if never_fits(s, num_blocks, config.block_size):
            need = blocks_for(s.max_num_tokens, config.block_size)
            raise InputError("never_fits", f"request {s.request_id} can never fit: it needs {need} blocks of "
                                           f"{config.block_size} tokens ({s.max_num_tokens} positions) and the KV "
                                           f"budget is {num_blocks} blocks", request_id=s.request_id, need=need,
                             num_blocks=num_blocks)


def check_kv_memory(lm: LoadedModel, num_blocks: int, config: ServeConfig) -> None:
    """The KV store every worker allocates (blocks x block size x the model's K/V bytes per token; two
    stores when disaggregated) within KV_MEMORY_FRACTION of the device's free memory, checked before any
    store exists: `serve --kv-blocks 1048576 --block-size 1024` is one line, not 256 GiB asked of torch."""
    stores = 2 if config.policy == "disaggregated" else 1
    need = stores * num_blocks * config.block_size * lm.info.kv_bytes_per_token
    limits.check_bytes(f"the KV store ({num_blocks} blocks x {config.block_size} tokens)", need,
                       available_memory_bytes(lm.device), limits.KV_MEMORY_FRACTION)


# --- one worker's engine --------------------------------------------------------

class EngineCore:
    """A scheduler, a block manager, a paged KV store and a model: steps one pass at a time."""

    def __init__(self, lm: LoadedModel, scheduler_config: SchedulerConfig, num_blocks: int, block_size: int,
                 worker: str = "engine") -> None:
        self.lm, self.worker = lm, worker
        self.blocks = BlockManager(num_blocks, block_size, prefix_caching=scheduler_config.prefix_caching)
        self.scheduler = Scheduler(scheduler_config, self.blocks)
        self.runner = ModelRunner(lm.model, new_store(lm, num_blocks, block_size), self.blocks)
        self.eos = eos_ids(lm)
        self.num_iterations = 0

    def step(self, clock: Callable[[], float]) -> tuple[Iteration, list[Sequence]] | None:
        """Schedule and run one pass; the pass's record and the sequences it finished. None: nothing to run."""
        self.blocks.now_ms = clock()
        batch = self.scheduler.schedule()
        if not batch.works:
            return None
        entries = [(w, w.seq.phase_of(w.num_new), w.start < w.seq.recompute_until) for w in batch.works]
        start = clock()
        with self.lm.lock:
            tokens = self.runner.run(batch.works)
        end = clock()
        finished, records = [], []
        for (work, phase, recompute), token in zip(entries, tokens):
            seq = work.seq
            records.append(BatchEntry(seq.request_id, phase, work.start, work.end, token, recompute))
            if seq.first_scheduled_ms is None:
                seq.first_scheduled_ms = start
            seq.num_computed += work.num_new
            if self.blocks.prefix_caching:  # its full computed blocks get their names: later requests find them
                self.blocks.name_blocks(seq.request_id, seq.tokens, seq.block_hashes(self.blocks.block_size),
                                        seq.num_computed)
            if token is not None:
                seq.append_token(token, end, self.eos)
            if seq.status is Status.FINISHED:
                self.scheduler.finish(seq)
                finished.append(seq)
        scheduled = {w.seq.request_id for w in batch.works}
        waiting = [s.request_id for s in [*self.scheduler.waiting, *self.scheduler.running]
                   if s.request_id not in scheduled]
        stalled = [s.request_id for s in self.scheduler.running if s.request_id not in scheduled]
        held = {s.request_id: s.num_computed for s in self.scheduler.running}
        iteration = Iteration(index=self.num_iterations, worker=self.worker, start_ms=start, end_ms=end,
                              entries=tuple(records), blocks=self.blocks.snapshot(held),
                              token_budget=self.scheduler.config.token_budget, waiting=tuple(waiting),
                              preempted=tuple(batch.preempted), attention_kernel=self.runner.last_kernel,
                              stalled=tuple(stalled), lookups=tuple(batch.lookups),
                              evictions=self.blocks.take_evictions())
        self.num_iterations += 1
        return iteration, finished


def make_clock(lm: LoadedModel, t0: float) -> Callable[[], float]:
    """ms since t0 (perf_counter), after the device finished its queued work."""
    return lambda: (device_clock(lm.device) - t0) * 1e3


# --- the record ---------------------------------------------------------------

def build_run(lm: LoadedModel, seqs: list[Sequence], iterations: list[Iteration], settings: ServingSettings,
              slo: SLO, scenario: str, wall_ms: float, **extra) -> ServingRun:
    pieces: dict[int, str] = {}

    def piece_list(ids: list[int]) -> tuple[str, ...]:
        missing = [i for i in dict.fromkeys(ids) if i not in pieces]
        pieces.update(zip(missing, token_pieces(lm.tokenizer, missing)))
        return tuple(pieces[i] for i in ids)

    def lookup_of(seq: Sequence) -> PrefixLookup:
        found = seq.prefix or PrefixLookup(seq.request_id, len(seq.prompt_ids), 0,
                                           miss="" if settings.prefix_caching else "cache_off")
        return with_pieces(found, piece_list)

    requests = tuple(dataclasses.replace(_record(s, piece_list, lm.tokenizer), prefix=lookup_of(s)) for s in seqs)
    # one index over all workers, in start order (a disaggregated run's two workers number their own passes)
    ordered = sorted(iterations, key=lambda it: (it.start_ms, it.worker))
    iterations = tuple(dataclasses.replace(it, index=i, lookups=tuple(with_pieces(k, piece_list) for k in it.lookups))
                       for i, it in enumerate(ordered))
    return ServingRun(
        scenario=scenario, settings=settings, model=lm.info, requests=requests, iterations=iterations,
        metrics=compute_serving_metrics(requests, slo),
        memory=compute_kv_memory(iterations, requests, settings.block_size, lm.info.kv_bytes_per_token),
        wall_ms=wall_ms, provenance=this_machine(lm.device), **extra,
    )


def with_pieces(lookup: PrefixLookup, piece_list) -> PrefixLookup:
    """A diverged look-up names the two tokens that differ as the page shows them."""
    if lookup.token_id is None or lookup.cached_token_id is None:
        return lookup
    mine, cached = piece_list([lookup.token_id, lookup.cached_token_id])
    return dataclasses.replace(lookup, token_piece=mine, cached_piece=cached)


def _record(seq: Sequence, piece_list, tokenizer) -> RequestRecord:
    times = tuple(seq.token_times_ms)
    return RequestRecord(
        request_id=seq.request_id, prompt=seq.prompt, prompt_ids=tuple(seq.prompt_ids),
        prompt_pieces=piece_list(seq.prompt_ids), output_ids=tuple(seq.output_ids),
        output_pieces=piece_list(seq.output_ids),
        output_text=tokenizer.decode(seq.output_ids, skip_special_tokens=True),
        max_new_tokens=seq.max_new_tokens, ignore_eos=seq.ignore_eos, arrival_ms=seq.arrival_ms,
        first_scheduled_ms=seq.first_scheduled_ms, first_token_ms=times[0], finish_ms=times[-1],
        token_times_ms=times, itl_ms=tuple(b - a for a, b in zip(times, times[1:])),
        stop_reason=seq.stop_reason, num_preemptions=seq.num_preemptions,
    )

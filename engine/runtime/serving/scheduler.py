"""Iteration-level scheduling: before every forward pass, decide which requests get
which positions. Requests join and leave between passes (continuous batching).

    one-at-a-time  the oldest request alone, Prefill then every Decode; the next waits (the baseline)
    prefill-first  new requests' whole Prefills get a pass of their own; running Decodes stall meanwhile
    chunked        Decodes first (one position each), then Prefill chunks, up to `token_budget`
                   positions per pass (SARATHI, arXiv 2308.16369)
    prefill-only / decode-only   the two workers of a disaggregated run (DistServe, arXiv 2401.09670)

KV memory: a request is admitted only when blocks for its next positions are free,
otherwise it waits. A running request that needs a block when none is free
preempts the newest running request (its blocks are freed; it recomputes later,
vLLM's recompute preemption). With on_kv_full="wait", admission instead reserves
each request's whole maximum length, so nothing is ever preempted.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from engine.contract.serving.config import ServeConfig
from engine.contract.serving.config import blocks_for
from engine.runtime.serving.block_manager import BlockManager
from engine.runtime.serving.runner import Work
from engine.runtime.serving.sequence import Sequence, Status

SCHEDULER_POLICIES = ("one-at-a-time", "prefill-first", "chunked", "prefill-only", "decode-only")


@dataclass(frozen=True)
class SchedulerConfig:
    policy: str
    token_budget: int | None = None  # chunked only
    max_num_seqs: int = 256
    on_kv_full: str = "preempt"

    @classmethod
    def for_run(cls, config: ServeConfig, policy: str | None = None) -> SchedulerConfig:
        """The scheduler's part of a run's settings (`policy` overrides it: one worker of a disaggregated run)."""
        return cls(policy=policy or config.policy, token_budget=config.budget, max_num_seqs=config.max_num_seqs,
                   on_kv_full=config.on_kv_full)


@dataclass
class Batch:
    works: list[Work] = field(default_factory=list)
    preempted: list[str] = field(default_factory=list)

    @property
    def num_tokens(self) -> int:
        return sum(w.num_new for w in self.works)


class Scheduler:
    def __init__(self, config: SchedulerConfig, blocks: BlockManager) -> None:
        self.config, self.blocks = config, blocks
        self.waiting: deque[Sequence] = deque()
        self.running: list[Sequence] = []

    def add(self, seq: Sequence) -> None:
        self.waiting.append(seq)

    def add_running(self, seq: Sequence) -> None:
        """A request whose positions are already in this manager's blocks (a KV hand-off)."""
        seq.status = Status.RUNNING
        self.running.append(seq)

    def has_work(self) -> bool:
        return bool(self.waiting or self.running)

    def schedule(self) -> Batch:
        batch = Batch()
        policy = self.config.policy
        if policy == "one-at-a-time":
            if not self.running:
                self._admit(batch, budget=None, max_seqs=1)
            else:
                self._decode(batch, budget=None)
        elif policy in ("prefill-first", "prefill-only"):
            self._admit(batch, budget=None, max_seqs=self.config.max_num_seqs)
            if not batch.works and policy == "prefill-first":
                self._decode(batch, budget=None)  # no new Prefill: the running Decodes get this pass
        elif policy == "decode-only":
            self._decode(batch, budget=None)
            if not batch.works:
                self._admit(batch, budget=None, max_seqs=self.config.max_num_seqs)  # preempted ones recompute
        elif policy == "chunked":
            budget = self.config.token_budget
            self._decode(batch, budget)  # 1) every running Decode, one position each
            self._continue_chunks(batch, budget)  # 2) Prefills already under way
            self._admit(batch, budget, self.config.max_num_seqs)  # 3) new requests, as far as the budget goes
        else:
            raise ValueError(f"unknown scheduling policy {policy!r}")
        return batch

    # --- the steps ---------------------------------------------------------

    def _decode(self, batch: Batch, budget: int | None) -> None:
        for seq in list(self.running):
            if seq not in self.running or not seq.is_decoding:
                continue  # preempted while making room, or still in a chunked Prefill
            if budget is not None and batch.num_tokens + 1 > budget:
                return
            if self._make_room(seq, seq.num_tokens, batch):
                batch.works.append(Work(seq, 1))

    def _continue_chunks(self, batch: Batch, budget: int | None) -> None:
        for seq in list(self.running):
            if seq not in self.running or seq.is_decoding or any(w.seq is seq for w in batch.works):
                continue
            if budget is not None and batch.num_tokens >= budget:
                return
            # a Prefill under way that has no free slot left preempts a newer request, else it would never end
            if self._make_room(seq, seq.num_computed + 1, batch):
                self._add_chunk(batch, seq, budget)

    def _admit(self, batch: Batch, budget: int | None, max_seqs: int) -> None:
        """New (or preempted) requests, oldest first, while blocks, budget and seat count allow."""
        while self.waiting and len(self.running) < max_seqs:
            seq = self.waiting[0]
            if not self._admissible(seq):
                return  # admission waits for blocks; FCFS, so nobody overtakes it
            if not self._add_chunk(batch, seq, budget):
                return
            self.waiting.popleft()
            seq.status = Status.RUNNING
            self.running.append(seq)

    # --- helpers -----------------------------------------------------------

    def _admissible(self, seq: Sequence) -> bool:
        if self.config.on_kv_full != "wait":
            return True
        reserved = sum(self.blocks.blocks_needed(s.request_id, s.max_num_tokens) for s in self.running)
        return self.blocks.blocks_needed(seq.request_id, seq.max_num_tokens) + reserved <= self.blocks.num_free

    def _add_chunk(self, batch: Batch, seq: Sequence, budget: int | None) -> bool:
        """Schedule the next Prefill positions of `seq` that the budget and the free blocks allow."""
        room = seq.num_uncomputed if budget is None else min(seq.num_uncomputed, budget - batch.num_tokens)
        if seq.status is Status.WAITING and budget is None:  # a whole Prefill: all or nothing
            room = room if self.blocks.can_hold(seq.request_id, seq.num_computed + room) else 0
        else:
            held = (len(self.blocks.tables.get(seq.request_id, ())) + self.blocks.num_free) * self.blocks.block_size
            room = min(room, held - seq.num_computed)
        if room <= 0:
            return False
        self.blocks.grow(seq.request_id, seq.num_computed + room)
        batch.works.append(Work(seq, room))
        return True

    def _make_room(self, seq: Sequence, num_tokens: int, batch: Batch) -> bool:
        """Blocks for `num_tokens` positions of `seq`, preempting the newest running requests if needed."""
        while not self.blocks.can_hold(seq.request_id, num_tokens):
            victim = self.running[-1]
            self._preempt(victim, batch)
            if victim is seq:
                return False
        self.blocks.grow(seq.request_id, num_tokens)
        return True

    def _preempt(self, seq: Sequence, batch: Batch) -> None:
        self.running.remove(seq)
        self.blocks.free(seq.request_id)
        seq.preempt()
        batch.works = [w for w in batch.works if w.seq is not seq]
        batch.preempted.append(seq.request_id)
        self.waiting.appendleft(seq)

    def finish(self, seq: Sequence) -> None:
        self.running.remove(seq)
        self.blocks.free(seq.request_id)


def never_fits(seq: Sequence, num_blocks: int, block_size: int) -> bool:
    """Alone with every block, the request still could not hold its longest context."""
    return blocks_for(seq.max_num_tokens, block_size) > num_blocks

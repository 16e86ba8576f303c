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

Prefix caching: a request being admitted first looks its full blocks up in the block
manager's cache (`_look_up`); the blocks found join its table, it starts at the first
position after them, and only the rest is scheduled. Why the look-up stopped where it
did is recorded with it (a PrefixLookup: first seen, diverged at token k, evicted by
whom, being computed by another request right now, too short, or the cache was off).
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field

from engine.contract.serving.config import ServeConfig
from engine.contract.serving.config import blocks_for
from engine.contract.serving.prefix import chain_hash, short
from engine.contract.serving.trace import PrefixLookup
from engine.runtime.serving.block_manager import BlockManager, Match
from engine.runtime.serving.runner import Work
from engine.runtime.serving.sequence import Sequence, Status

@dataclass(frozen=True)
class SchedulerConfig:
    policy: str
    token_budget: int | None = None  # chunked only
    max_num_seqs: int = 256
    on_kv_full: str = "preempt"
    prefix_caching: bool = False

    @classmethod
    def for_run(cls, config: ServeConfig, policy: str | None = None) -> SchedulerConfig:
        """The scheduler's part of a run's settings (`policy` overrides it: one worker of a disaggregated run)."""
        return cls(policy=policy or config.policy, token_budget=config.budget, max_num_seqs=config.max_num_seqs,
                   on_kv_full=config.on_kv_full, prefix_caching=config.prefix_caching)


@dataclass
class Batch:
    works: list[Work] = field(default_factory=list)
    preempted: list[str] = field(default_factory=list)
    lookups: list[PrefixLookup] = field(default_factory=list)  # prefix caching on: the admitted requests' look-ups

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
        """Schedule the next Prefill positions of `seq` that the budget and the free blocks allow (after the
        blocks it finds in the prefix cache, when it is being admitted)."""
        started = time.perf_counter()
        match = self._match(seq) if seq.request_id not in self.blocks.tables else None
        found = match.block_ids if match is not None else ()
        start = seq.num_computed + len(found) * self.blocks.block_size  # num_computed is 0 when admitted
        uncomputed = seq.num_tokens - start
        room = uncomputed if budget is None else min(uncomputed, budget - batch.num_tokens)
        free = self.blocks.num_free - self.blocks.num_idle_in(found)  # taking an idle block leaves one fewer
        num_held = len(self.blocks.tables.get(seq.request_id, ())) + len(found)
        if seq.status is Status.WAITING and budget is None:  # a whole Prefill: all or nothing
            room = room if blocks_for(start + room, self.blocks.block_size) - num_held <= free else 0
        else:
            room = min(room, (num_held + free) * self.blocks.block_size - start)
        if room <= 0:
            return False
        if match is not None and self.config.prefix_caching:
            self.blocks.take(seq.request_id, found)
            seq.num_computed = seq.num_cached = start
            lookup = self._explain(seq, match, started)
            batch.lookups.append(lookup)
            seq.prefix = seq.prefix or lookup
        self.blocks.grow(seq.request_id, start + room)
        batch.works.append(Work(seq, room))
        return True

    def _match(self, seq: Sequence) -> Match:
        return self.blocks.match(seq.tokens, seq.block_hashes(self.blocks.block_size) if self.config.prefix_caching
                                 else [])

    def _explain(self, seq: Sequence, match: Match, started: float) -> PrefixLookup:
        """The look-up's record: what was found, and why it stopped where it did."""
        size = self.blocks.block_size
        fields = {}
        if match.missing is not None:
            fields = self._why_missed(seq, match)
        elif match.num_usable == 0:
            fields = {"miss": "too_short"}
        return PrefixLookup(seq.request_id, seq.num_tokens, len(match.block_ids) * size,
                            tuple(short(h) for h in match.hashes), lookup_ms=(time.perf_counter() - started) * 1e3,
                            start_ms=self.blocks.now_ms, **fields)

    def _why_missed(self, seq: Sequence, match: Match) -> dict:
        """Why block `i` (the first usable one not found) was not in the cache."""
        blocks, i, h = self.blocks, len(match.block_ids), match.missing
        fields = {"miss_block": i}
        if h in blocks.evicted:
            e = blocks.evicted[h]
            return {**fields, "miss": "evicted", "other_request": e.by_request, "evicted_at_ms": e.at_ms}
        holder = next((s for s in self.running if s is not seq and len(blocks.tables.get(s.request_id, ())) > i
                       and s.block_hashes(blocks.block_size)[i:i + 1] == [h]), None)
        if holder is not None:
            return {**fields, "miss": "in_flight", "other_request": holder.request_id}
        parent = match.hashes[i - 1] if i else ""
        size, mine = blocks.block_size, seq.tokens[i * blocks.block_size:(i + 1) * blocks.block_size]
        siblings = [b for b in blocks.known.values() if b.parent == parent]
        if not siblings:
            return {**fields, "miss": "first_seen"}
        best = max(siblings, key=lambda b: (blocks.cached.get(chain_of(b)) is not None, common(b.tokens, mine)))
        j = common(best.tokens, mine)
        return {**fields, "miss": "diverged", "diverged_at": i * size + j, "token_id": mine[j],
                "cached_token_id": best.tokens[j], "other_request": best.request_id}

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


def common(a, b) -> int:
    """How many leading tokens two blocks share."""
    return next((j for j, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def chain_of(block) -> str:
    return chain_hash(block.parent, block.tokens)


def never_fits(seq: Sequence, num_blocks: int, block_size: int) -> bool:
    """Alone with every block, the request still could not hold its longest context."""
    return blocks_for(seq.max_num_tokens, block_size) > num_blocks

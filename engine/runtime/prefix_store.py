"""The lesson engine's prefix cache: a visitor's last runs' KV caches, kept so a later Prefill can start
from the longest one that begins like its prompt (the lesson on prefix caching, run on one request).

    found = store.look_up(scope, prompt_ids)      # which kept run, how many positions, or why none
    cache = found.cache(model)                    # a copy of those positions' K and V, for this request
    ... Prefill feeds prompt_ids[found.num_cached:], Decode as always ...
    store.keep(scope, ids, tensors, started_at_s) # this run's cache, for the next one

Token by token (SGLang's radix cache does the same; the serving engine shares whole blocks, as vLLM):
the K and V of position i depend only on tokens 0..i (the model is causal), so a kept run whose tokens
(its prompt, then its answer but the last token, which was never fed) start with this prompt's first k
tokens holds exactly the K and V this Prefill would compute for them. The last prompt position is always
computed: its logits choose the first output token.

A scope is one visitor's (the app names it per browser session): a visitor never reads another's
prompt through a miss reason, and "run the same prompt again" means their own last run. Kept runs are
evicted least recently used first, across scopes, once their bytes pass the store's budget or their
number MAX_KEPT_RUNS; each scope remembers what it lost, so a miss can say "evicted", and that table
too is bounded (MAX_LOST_SCOPES scopes, MAX_LOST_BYTES, least recently touched scope forgotten first).

Everything the store holds is counted: a run's tensors with each tensor's own overhead, its token ids
(8 bytes each, packed) and its entries in the tables. Kept runs are indexed by scope, so a look-up or a
keep reads only its own scope's few runs, however many scopes there are (bench/worker_prefix_store.py: 100,000
scopes). Thread-safe: one lock around the tables.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from array import array
from collections import OrderedDict, deque
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from engine.contract.trace import PrefixReuse
from engine.runtime import hf

MAX_BYTES = 512 * 1024 * 1024  # K and V kept in all: about 8 runs of 1024 tokens of an 8B-shape preset
RUNS_PER_SCOPE = 4  # a visitor's most recent runs
EVICTED_PER_SCOPE = 16  # evicted runs a scope remembers (token ids only), to name an eviction as a miss
MAX_KEPT_RUNS = 4096  # kept runs in all, whatever their size (a flood of tiny runs in fresh scopes)
MAX_LOST_SCOPES = 4096  # scopes whose evicted runs are remembered
MAX_LOST_BYTES = 32 * 1024 * 1024  # and their token ids, in all
# What the store's own objects cost beside the data (measured: a small CPU tensor takes ~700 bytes of
# memory for 256 bytes of data; a kept run's dataclass, key and two table entries a few hundred bytes).
TENSOR_OVERHEAD_BYTES = 512
RUN_OVERHEAD_BYTES = 512
LOST_OVERHEAD_BYTES = 256
ID_BYTES = 8  # a token id, packed (array "q")

Tensors = tuple[tuple[torch.Tensor, torch.Tensor], ...]  # per layer (K, V), (1, kv_heads, positions, head_dim)


@dataclass(frozen=True)
class Kept:
    """One kept run: the tokens whose K and V it holds, and those tensors."""

    ids: Sequence[int]  # packed (array "q"): 8 bytes an id
    tensors: Tensors
    nbytes: int  # everything it costs: tensors (data and overhead), ids, its entries
    started_at_s: float


@dataclass(frozen=True)
class Lost:
    """A run evicted from a scope: its tokens and times, no tensors."""

    ids: Sequence[int]  # packed, as a kept run's
    started_at_s: float
    evicted_at_s: float

    @property
    def nbytes(self) -> int:
        return len(self.ids) * ID_BYTES + LOST_OVERHEAD_BYTES


@dataclass(frozen=True)
class Found:
    """A look-up's answer: the positions to read (0: none), from which kept run, and the record's fields."""

    num_tokens: int
    num_cached: int
    source: Kept | None
    miss: str = ""
    diverged_at: int | None = None
    token_id: int | None = None  # diverged: this prompt's token there, and the kept run's
    cached_token_id: int | None = None
    lost: Lost | None = None  # evicted: the run that matched further
    kept_runs: int = 0
    match_ms: float = 0.0

    def cache(self, model):
        """A growing cache holding a copy of the reused positions' K and V; None when none are read (the
        runner then starts its own empty one)."""
        if self.source is None or not self.num_cached:
            return None
        return hf.cache_from(model, self.source.tensors, self.num_cached)

    def record(self, pieces, lookup_ms: float) -> PrefixReuse:
        """The trace's PrefixReuse; `pieces(ids)` gives the tokens' readable text (generation.token_pieces)."""
        mine, theirs = (pieces([self.token_id, self.cached_token_id]) if self.miss == "diverged" else ("", ""))
        source = self.lost if self.miss == "evicted" else self.source
        return PrefixReuse(num_tokens=self.num_tokens, num_cached_tokens=self.num_cached, miss=self.miss,
                           diverged_at=self.diverged_at, token_piece=mine[:120], cached_piece=theirs[:120],
                           source_started_at_s=source.started_at_s if source else None,
                           evicted_at_s=self.lost.evicted_at_s if self.miss == "evicted" else None,
                           lookup_ms=lookup_ms, kept_runs=self.kept_runs)


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading tokens a and b share."""
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def unusable(miss: str, prompt_ids: Sequence[int]) -> Found:
    """A look-up that cannot read anything (an engine mode or a model the store does not serve)."""
    return Found(num_tokens=len(prompt_ids), num_cached=0, source=None, miss=miss)


def run_bytes(ids: Sequence[int], tensors: Tensors) -> int:
    """What a kept run costs: each tensor's data and overhead, its packed ids, its entries."""
    data = sum(t.numel() * t.element_size() + TENSOR_OVERHEAD_BYTES for pair in tensors for t in pair)
    return data + len(ids) * ID_BYTES + RUN_OVERHEAD_BYTES


@dataclass
class PrefixStore:
    """Kept runs per scope (most recent last) under one byte budget; see the module docstring.

    `kept`: every run, least recently used first, by (scope, n); `scopes`: the same runs indexed by scope
    (each scope's own LRU order); `lost`: each scope's evicted runs, least recently touched scope first."""

    max_bytes: int = MAX_BYTES
    runs_per_scope: int = RUNS_PER_SCOPE
    max_runs: int = MAX_KEPT_RUNS
    max_lost_scopes: int = MAX_LOST_SCOPES
    max_lost_bytes: int = MAX_LOST_BYTES
    kept: OrderedDict[tuple[str, int], Kept] = field(default_factory=OrderedDict)
    scopes: dict[str, OrderedDict[int, Kept]] = field(default_factory=dict)
    lost: OrderedDict[str, deque[Lost]] = field(default_factory=OrderedDict)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _next: int = 0
    _bytes: int = 0
    _lost_bytes: int = 0

    @property
    def nbytes(self) -> int:
        """The kept runs' bytes, everything counted (the budget `max_bytes` bounds it)."""
        return self._bytes

    @property
    def lost_bytes(self) -> int:
        """The lost table's bytes (bounded by `max_lost_bytes`)."""
        return self._lost_bytes

    def runs(self, scope: str) -> list[Kept]:
        return list(self.scopes.get(scope, {}).values())

    def look_up(self, scope: str, prompt_ids: Sequence[int]) -> Found:
        """The longest kept run of `scope` that begins like `prompt_ids`, and why not more (PREFIX_MISSES)."""
        began = time.perf_counter()
        with self.lock:
            found, n = self._look_up(scope, tuple(prompt_ids))
            if found.source is not None:  # read now: the most recently used
                self.kept.move_to_end((scope, n))
                self.scopes[scope].move_to_end(n)
        return dataclasses.replace(found, match_ms=(time.perf_counter() - began) * 1e3)

    def _look_up(self, scope: str, ids: tuple[int, ...]) -> tuple[Found, int | None]:
        runs, usable = self.scopes.get(scope, {}), max(0, len(ids) - 1)
        n = max(runs, key=lambda k: min(common_prefix(runs[k].ids, ids), usable), default=None)
        best = runs[n] if n is not None else None
        shared = common_prefix(best.ids, ids) if best else 0
        cached = min(shared, usable)
        base = dict(num_tokens=len(ids), num_cached=cached, source=best if cached else None, kept_runs=len(runs))
        if len(ids) <= 1:
            return Found(**{**base, "miss": "too_short"}), n
        if cached == usable:
            return Found(**base), n
        lost = max(self.lost.get(scope, ()), key=lambda g: common_prefix(g.ids, ids), default=None)
        if lost is not None and min(common_prefix(lost.ids, ids), usable) > cached:
            return Found(**base, miss="evicted", lost=lost), n
        if cached and shared < len(best.ids):  # the kept run goes on with another token at `shared`
            return Found(**base, miss="diverged", diverged_at=shared, token_id=ids[shared],
                         cached_token_id=best.ids[shared]), n
        return Found(**base, miss="first_seen"), n

    def keep(self, scope: str, ids: Sequence[int], tensors: Tensors, started_at_s: float) -> None:
        """Keep a finished run's cache (`ids`: the tokens it holds, in order) as the scope's newest; drop
        the scope's runs it contains, then the least recently used runs of any scope past the budget
        (its bytes, or MAX_KEPT_RUNS runs)."""
        packed = array("q", ids)
        nbytes = run_bytes(packed, tensors)
        if not packed or nbytes > self.max_bytes:
            return
        with self.lock:
            older = self.scopes.get(scope, {})
            for n in [n for n, run in older.items() if common_prefix(run.ids, packed) == len(run.ids)]:
                self._drop((scope, n))  # everything it held, the new run holds too
            runs = self.scopes.setdefault(scope, OrderedDict())  # after the drops: an emptied scope is gone
            self._next += 1
            run = Kept(packed, tensors, nbytes, started_at_s)
            self.kept[(scope, self._next)] = runs[self._next] = run
            self._bytes += nbytes
            while len(runs) > self.runs_per_scope:
                self._evict((scope, next(iter(runs))))
            while self._bytes > self.max_bytes or len(self.kept) > self.max_runs:
                self._evict(next(iter(self.kept)))

    def _drop(self, key: tuple[str, int]) -> Kept:
        run = self.kept.pop(key)
        runs = self.scopes[key[0]]
        del runs[key[1]]
        if not runs:
            del self.scopes[key[0]]
        self._bytes -= run.nbytes
        return run

    def _evict(self, key: tuple[str, int]) -> None:
        run = self._drop(key)
        self._remember(key[0], Lost(run.ids, run.started_at_s, time.time()))

    def _remember(self, scope: str, lost: Lost) -> None:
        """A scope's evicted run, kept to name a miss "evicted"; the least recently touched scopes are
        forgotten past MAX_LOST_SCOPES or MAX_LOST_BYTES."""
        table = self.lost.setdefault(scope, deque())
        self.lost.move_to_end(scope)
        table.append(lost)
        self._lost_bytes += lost.nbytes
        if len(table) > EVICTED_PER_SCOPE:
            self._lost_bytes -= table.popleft().nbytes
        while len(self.lost) > self.max_lost_scopes or self._lost_bytes > self.max_lost_bytes:
            _, forgotten = self.lost.popitem(last=False)
            self._lost_bytes -= sum(g.nbytes for g in forgotten)

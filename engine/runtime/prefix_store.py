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
evicted least recently used first, across scopes, once their bytes pass the store's budget; each scope
remembers what it lost, so a miss can say "evicted". Thread-safe: one lock around the tables.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from engine.contract.trace import PrefixReuse
from engine.runtime import hf

MAX_BYTES = 512 * 1024 * 1024  # K and V kept in all: about 8 runs of 1024 tokens of an 8B-shape preset
RUNS_PER_SCOPE = 4  # a visitor's most recent runs
EVICTED_PER_SCOPE = 16  # evicted runs a scope remembers (token ids only), to name an eviction as a miss

Tensors = tuple[tuple[torch.Tensor, torch.Tensor], ...]  # per layer (K, V), (1, kv_heads, positions, head_dim)


@dataclass(frozen=True)
class Kept:
    """One kept run: the tokens whose K and V it holds, and those tensors."""

    ids: tuple[int, ...]
    tensors: Tensors
    nbytes: int
    started_at_s: float


@dataclass(frozen=True)
class Lost:
    """A run evicted from a scope: its tokens and times, no tensors."""

    ids: tuple[int, ...]
    started_at_s: float
    evicted_at_s: float


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


@dataclass
class PrefixStore:
    """Kept runs per scope (most recent last) under one byte budget; see the module docstring."""

    max_bytes: int = MAX_BYTES
    runs_per_scope: int = RUNS_PER_SCOPE
    kept: OrderedDict[tuple[str, int], Kept] = field(default_factory=OrderedDict)  # (scope, n) -> run, LRU order
    lost: dict[str, deque[Lost]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _next: int = 0

    @property
    def nbytes(self) -> int:
        return sum(k.nbytes for k in self.kept.values())

    def runs(self, scope: str) -> list[Kept]:
        return [k for (s, _), k in self.kept.items() if s == scope]

    def look_up(self, scope: str, prompt_ids: Sequence[int]) -> Found:
        """The longest kept run of `scope` that begins like `prompt_ids`, and why not more (PREFIX_MISSES)."""
        began = time.perf_counter()
        with self.lock:
            found = self._look_up(scope, tuple(prompt_ids))
            if found.source is not None:  # read now: the most recently used
                key = next(k for k, v in self.kept.items() if v is found.source)
                self.kept.move_to_end(key)
        return dataclasses.replace(found, match_ms=(time.perf_counter() - began) * 1e3)

    def _look_up(self, scope: str, ids: tuple[int, ...]) -> Found:
        runs, usable = self.runs(scope), max(0, len(ids) - 1)
        best = max(runs, key=lambda k: min(common_prefix(k.ids, ids), usable), default=None)
        shared = common_prefix(best.ids, ids) if best else 0
        cached = min(shared, usable)
        base = dict(num_tokens=len(ids), num_cached=cached, source=best if cached else None, kept_runs=len(runs))
        if len(ids) <= 1:
            return Found(**{**base, "miss": "too_short"})
        if cached == usable:
            return Found(**base)
        lost = max(self.lost.get(scope, ()), key=lambda g: common_prefix(g.ids, ids), default=None)
        if lost is not None and min(common_prefix(lost.ids, ids), usable) > cached:
            return Found(**base, miss="evicted", lost=lost)
        if cached and shared < len(best.ids):  # the kept run goes on with another token at `shared`
            return Found(**base, miss="diverged", diverged_at=shared, token_id=ids[shared],
                         cached_token_id=best.ids[shared])
        return Found(**base, miss="first_seen")

    def keep(self, scope: str, ids: Sequence[int], tensors: Tensors, started_at_s: float) -> None:
        """Keep a finished run's cache (`ids`: the tokens it holds, in order) as the scope's newest; drop
        the scope's runs it contains, then the least recently used runs of any scope past the budget."""
        ids = tuple(ids)
        nbytes = sum(t.numel() * t.element_size() for pair in tensors for t in pair)
        if not ids or nbytes > self.max_bytes:
            return
        with self.lock:
            for key, run in list(self.kept.items()):
                if key[0] == scope and common_prefix(run.ids, ids) == len(run.ids):
                    del self.kept[key]  # everything it held, the new run holds too
            self._next += 1
            self.kept[(scope, self._next)] = Kept(ids, tensors, nbytes, started_at_s)
            while len(self.runs(scope)) > self.runs_per_scope:
                self._evict(next(k for k in self.kept if k[0] == scope))
            while self.nbytes > self.max_bytes:
                self._evict(next(iter(self.kept)))

    def _evict(self, key: tuple[str, int]) -> None:
        run = self.kept.pop(key)
        self.lost.setdefault(key[0], deque(maxlen=EVICTED_PER_SCOPE)).append(
            Lost(run.ids, run.started_at_s, time.time()))

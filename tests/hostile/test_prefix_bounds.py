"""Bounded prefix bookkeeping (engine/runtime/prefix_store.py) and the worker's own prompt cap.

A flood of tiny runs in fresh scopes (a new browser session per run): everything the store holds is
counted in its budget (ids and each tensor's overhead too), kept runs and the lost table's scopes are
capped, and a look-up or a keep reads only its own scope's runs, however many scopes there are
(counted: the prefix comparisons it makes, not its time). A caller's `max_prompt_tokens: null` never
lifts the worker's cap to the model's context.
"""

from __future__ import annotations

from collections import OrderedDict

import pytest
import torch

from engine.contract.errors import InputError
from engine.runtime import prefix_store
from engine.runtime.prefix_store import EVICTED_PER_SCOPE, ID_BYTES, PrefixStore, run_bytes
from engine.runtime.worker.jobs import JobContext, run_trace
from engine.runtime.worker.models import ModelCache, WorkerSettings

SCOPES = 20_000


def tiny(n: int = 4) -> tuple:
    return ((torch.zeros(1, 1, n, 2), torch.zeros(1, 1, n, 2)),)


def flooded(store: PrefixStore, scopes: int = SCOPES) -> PrefixStore:
    for s in range(scopes):
        store.keep(f"visitor-{s}", (s, s + 1, s + 2, s + 3), tiny(), 0.0)
    return store


def test_everything_a_run_holds_is_counted_ids_and_tensor_overhead_too():
    ids = tuple(range(1000))
    empty = ((torch.zeros(0), torch.zeros(0)),)
    assert run_bytes(ids, empty) >= len(ids) * ID_BYTES  # no tensor data: its ids still cost
    store = PrefixStore()
    store.keep("a", ids, empty, 0.0)
    assert store.nbytes == run_bytes(ids, empty)


def test_a_flood_of_fresh_scopes_stays_within_every_cap():
    store = flooded(PrefixStore(max_bytes=1 << 20, max_runs=500, max_lost_scopes=300, max_lost_bytes=64 << 10))
    assert store.nbytes <= store.max_bytes and len(store.kept) <= 500
    assert sum(len(runs) for runs in store.scopes.values()) == len(store.kept)  # the index holds the same runs
    assert len(store.lost) <= 300 and store.lost_bytes <= 64 << 10
    assert store.lost_bytes == sum(g.nbytes for table in store.lost.values() for g in table)


class Counting(OrderedDict):
    """The kept runs' table, counting every entry a look-up or a keep reads through it (a scan of every
    scope's runs reads them all)."""

    read = 0

    def __iter__(self):
        for key in super().__iter__():
            Counting.read += 1
            yield key

    def items(self):
        return ((key, self[key]) for key in self)

    def values(self):
        return (self[key] for key in self)


def test_a_look_up_and_a_keep_read_only_their_own_scope_however_many_scopes_there_are(monkeypatch):
    store = flooded(PrefixStore(max_runs=2 * SCOPES))  # every scope's run kept: a look-up must pass them by
    assert len(store.kept) == SCOPES
    store.kept = Counting(store.kept)
    compared = []
    real = prefix_store.common_prefix
    monkeypatch.setattr(prefix_store, "common_prefix", lambda a, b: compared.append(1) or real(a, b))
    store.keep("mine", (1, 2, 3, 4, 5), tiny(5), 0.0)
    store.keep("mine", (1, 2, 3, 9, 9), tiny(5), 0.0)
    Counting.read, compared[:] = 0, []
    found = store.look_up("mine", (1, 2, 3, 4, 5, 6))
    assert found.num_cached == 5 and found.miss == ""
    assert Counting.read == 0  # not one entry of the 20,000 other scopes' runs
    assert len(compared) <= 2 * (store.runs_per_scope + EVICTED_PER_SCOPE)
    Counting.read, compared[:] = 0, []
    store.keep("mine", (1, 2, 3, 4, 5, 6), tiny(6), 0.0)
    assert Counting.read == 0 and len(compared) <= store.runs_per_scope


def test_an_evicted_run_is_still_named_as_a_miss_within_the_lost_tables_caps():
    store = PrefixStore(runs_per_scope=1)
    store.keep("a", (1, 2, 3, 4), tiny(), 0.0)
    store.keep("a", (7, 8, 9), tiny(3), 0.0)  # pushes the first out of its scope
    assert store.look_up("a", (1, 2, 3, 4, 5)).miss == "evicted"


def test_the_workers_own_prompt_cap_holds_whatever_a_caller_sends(default_lm):
    models = ModelCache(WorkerSettings(presets=False, max_prompt_tokens=8))
    ctx = JobContext(models, model=lambda ref: default_lm, emit=lambda *a, **k: None, cancelled=lambda: False)
    long_prompt = "法国的首都是巴黎。德国的首都是柏林。日本的首都是东京。"
    for asked in (None, 100_000):
        with pytest.raises(InputError) as caught:
            run_trace(ctx, {"model": {"choice": "default", "device": "cpu", "dtype": "auto"}, "prompt": long_prompt,
                            "config": {"max_new_tokens": 2}, "stream": False, "max_prompt_tokens": asked})
        assert caught.value.key == "prompt_too_long" and caught.value.params["limit"] == 8, asked

"""The lesson engine's prefix store under a flood of scopes: memory within its budget, keep and look-up fast.

    python -m bench.worker_prefix_store [--scopes 100000] [--tokens 16]

One visitor's run per scope (a fresh browser session each), `--scopes` of them, into one store with
its default budget (engine/runtime/prefix_store.py: MAX_BYTES for kept runs, MAX_LOST_BYTES for the
lost table, MAX_KEPT_RUNS runs, MAX_LOST_SCOPES scopes). Each run holds `--tokens` positions of the
default model's K and V shape (4 layers, 2 K/V heads, head_dim 32, float32). Every keep is timed, and
after it a look-up of a prompt that begins like it (in its own scope) and one of an evicted scope.
Prints the process's resident memory growth against the store's stated budget, what the store counts,
its tables' sizes, and the keeps' and look-ups' median, p99 and max. Goals: resident growth within
the budget; keep and look-up p99 under 1 ms. Exits 1 when a goal is missed. Before the bounds (issue
43), one keep took 8.9 ms and one look-up 6.1 ms at 10,000 scopes, and 10,000 tiny runs held 89 MiB
for 4.9 MiB counted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import torch

from engine.runtime.prefix_store import PrefixStore

LAYERS, KV_HEADS, HEAD_DIM = 4, 2, 32  # the default model's cache shape
GOAL_MS = 1.0


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def run_tensors(tokens: int) -> tuple:
    return tuple((torch.randn(1, KV_HEADS, tokens, HEAD_DIM), torch.randn(1, KV_HEADS, tokens, HEAD_DIM))
                 for _ in range(LAYERS))


def quantiles(ms: list[float]) -> str:
    ordered = sorted(ms)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return f"median {statistics.median(ordered):.3f} ms, p99 {p99:.3f} ms, max {ordered[-1]:.3f} ms"


def p99(ms: list[float]) -> float:
    return sorted(ms)[min(len(ms) - 1, int(len(ms) * 0.99))]


def flood(store: PrefixStore, scopes: int, tokens: int) -> tuple[list[float], list[float]]:
    keeps, looks = [], []
    for s in range(scopes):
        ids = tuple(range(s, s + tokens))
        tensors = run_tensors(tokens)
        began = time.perf_counter()
        store.keep(f"visitor-{s}", ids, tensors, time.time())
        keeps.append((time.perf_counter() - began) * 1e3)
        for scope in (f"visitor-{s}", f"visitor-{s // 2}"):  # its own, and an older (likely evicted) one
            began = time.perf_counter()
            store.look_up(scope, ids + (7,))
            looks.append((time.perf_counter() - began) * 1e3)
    return keeps, looks


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scopes", type=int, default=100_000)
    parser.add_argument("--tokens", type=int, default=16)
    args = parser.parse_args()
    store = PrefixStore()
    budget = store.max_bytes + store.max_lost_bytes
    run_tensors(args.tokens)  # torch's first allocation, outside the growth measured
    before, began = rss_bytes(), time.perf_counter()
    keeps, looks = flood(store, args.scopes, args.tokens)
    grown, took = rss_bytes() - before, time.perf_counter() - began
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; {args.scopes:,} scopes, "
          f"{args.tokens} tokens a run, {took:.1f} s in all")
    mib = 2 ** 20
    print(f"resident growth {grown / mib:.1f} MiB; budget {budget / mib:.0f} MiB (kept {store.max_bytes / mib:.0f}"
          f" + lost {store.max_lost_bytes / mib:.0f}); counted {store.nbytes / mib:.1f} MiB kept + "
          f"{store.lost_bytes / mib:.1f} MiB lost")
    print(f"kept runs {len(store.kept):,} in {len(store.scopes):,} scopes; lost table {len(store.lost):,} scopes")
    print(f"keep:    {quantiles(keeps)}")
    print(f"look-up: {quantiles(looks)}")
    met = grown <= budget and p99(keeps) < GOAL_MS and p99(looks) < GOAL_MS
    print(f"goal: growth within the budget, keep and look-up p99 under {GOAL_MS:.0f} ms: {'met' if met else 'missed'}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())

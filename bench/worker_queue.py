"""The engine worker's queue: identical labs measured once, lesson runs through a busy worker.

    python -m bench.worker_queue [--runs 30] [--spread-s 3] [--scenario long-prompt-during-chats]
                          [--policies one-at-a-time,prefill-first,chunked] [--repeats 5]

Everything goes through the app's own EngineClient and a real local worker (started by the client,
on the default model), measured side by side in one run:

    labs     one serving lab alone (its policies one after another, as the page sends them), then
             three identical labs started at once; goal: the three done within 1.2x of one alone
             (the worker measures identical waiting work once: engine/runtime/worker/queue.py)
    lessons  `--runs` lesson runs (the page's request: the lesson's prompt, greedy, `--repeats`
             repeats) sent within `--spread-s`, each timed from its call to its first pass; alone,
             then while three different serving labs run; goal: first pass p95 <= 2 s with the labs
             (lesson runs go before long jobs, between a serving run's iterations)

The three labs of the second part run different policies at each moment, so none shares with
another; they are stopped once the lesson runs are done. Prints each part, its ratio or p95 against
its goal, how many measurements the worker made for the lesson runs, and the load average. Exits 1
when a goal is missed. The disaggregated policy is left out by default: its two processes keep their
own clocks, so it cannot pause for a lesson run (it is one unit).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from engine.contract.config import MAX_PROMPT_TOKENS  # noqa: E402
from engine.contract.results import GenerationConfig  # noqa: E402
from engine.contract.serving.workloads import scenario  # noqa: E402
from engine.contract.worker.client import EngineClient, Pass  # noqa: E402
from engine.contract.codec import to_plain  # noqa: E402
from engine.contract.worker.protocol import ModelRef  # noqa: E402
from lesson.inputs import DEFAULT_OUTPUT_LEN, default_prompt  # noqa: E402

MODEL = ModelRef("default", "auto", "auto")
LAB_GOAL, FIRST_PASS_GOAL_S = 1.2, 2.0


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def lab_config(policy: str) -> dict:
    """The serving lab's settings for a policy, as app_support/serving.py sends them (its defaults)."""
    return {"policy": policy, "token_budget": 64 if policy == "chunked" else None, "block_size": 16,
            "num_kv_blocks": None, "on_kv_full": "preempt", "slo": {"ttft_ms": None, "tpot_ms": None}}


def run_lab(client: EngineClient, workload, name: str, policies: list[str], stop: threading.Event | None = None
            ) -> float:
    """One lab: every policy in turn; seconds to the last result (or to `stop`: the call is closed)."""
    started = time.perf_counter()
    requests = [to_plain(r) for r in workload]
    for policy in policies:
        args = {"model": MODEL.to_wire(), "requests": requests, "config": lab_config(policy), "scenario": name}
        events = client.call("serve_workload", args)
        try:
            for kind, _ in events:
                if stop is not None and stop.is_set():
                    return time.perf_counter() - started
                if kind == "done":
                    break
        finally:
            events.close()
    return time.perf_counter() - started


def first_pass_s(client: EngineClient, repeats: int) -> float:
    """The page's lesson run: seconds from the call to its first pass (the Prefill on the page)."""
    cfg = GenerationConfig(max_new_tokens=DEFAULT_OUTPUT_LEN)
    started, first = time.perf_counter(), None
    for event in client.stream_repeats(MODEL, default_prompt("zh"), cfg, repeats=repeats,
                                       max_prompt_tokens=MAX_PROMPT_TOKENS.default):
        if isinstance(event, Pass) and first is None:
            first = time.perf_counter() - started  # read on to the end, as the page does
    if first is None:
        raise RuntimeError("the lesson run ended without a pass")
    return first


def in_threads(jobs: list, spread_s: float = 0.0, seed: int = 0) -> list:
    """Run each job in a thread, started at a random moment within `spread_s`; their results in order."""
    results, rng = [None] * len(jobs), random.Random(seed)
    delays = [rng.uniform(0, spread_s) for _ in jobs]

    def run(i: int) -> None:
        time.sleep(delays[i])
        results[i] = jobs[i]()

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(len(jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def goal(name: str, measured: float, target: float, unit: str) -> bool:
    met = measured <= target
    print(f"  {name}: {measured:.2f}{unit} against {target:.2f}{unit} ({measured / target:.2f}x of the goal, "
          f"{'met' if met else 'MISSED'})")
    return met


def labs_part(client: EngineClient, name: str, policies: list[str]) -> bool:
    workload = scenario(name, 0)
    alone = run_lab(client, workload, name, policies)
    three = in_threads([lambda: run_lab(client, workload, name, policies)] * 3)
    print(f"labs ({name}, {', '.join(policies)}): one alone {alone:.1f} s; three at once "
          f"{', '.join(f'{s:.1f}' for s in three)} s")
    return goal("three labs / one alone", max(three) / alone, LAB_GOAL, "x")


def lessons_part(client: EngineClient, name: str, policies: list[str], runs: int, spread_s: float,
                 repeats: int) -> bool:
    alone = in_threads([lambda: first_pass_s(client, repeats)] * runs, spread_s)
    stop, workload = threading.Event(), scenario(name, 0)
    rotations = [policies[i:] + policies[:i] for i in range(3)]  # a different policy in each lab at any moment
    labs = [threading.Thread(target=run_lab, args=(client, workload, name, r, stop), daemon=True) for r in rotations]
    for t in labs:
        t.start()
    time.sleep(1.0)  # the labs are measuring
    since = time.perf_counter()
    busy = in_threads([lambda: first_pass_s(client, repeats)] * runs, spread_s, seed=1)
    stop.set()
    for t in labs:
        t.join()
    ago = time.perf_counter() - since
    lessons = [j for j in client.queue_history().jobs if j.kind == "lesson" and j.queued_at_s >= -ago]
    print(f"lesson runs ({runs} within {spread_s:.0f} s, {repeats} repeats each), first pass p50 / p95 / max:")
    print(f"  alone:           {percentile(alone, 0.5):.2f} / {percentile(alone, 0.95):.2f} / {max(alone):.2f} s")
    print(f"  with three labs: {percentile(busy, 0.5):.2f} / {percentile(busy, 0.95):.2f} / {max(busy):.2f} s")
    print(f"  the worker measured {len(lessons)} lesson runs for {sum(j.visitors for j in lessons)} calls "
          f"(identical waiting runs share one)")
    return goal("first pass p95 with three labs", percentile(busy, 0.95), FIRST_PASS_GOAL_S, " s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--spread-s", type=float, default=3.0)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--scenario", default="long-prompt-during-chats")
    parser.add_argument("--policies", default="one-at-a-time,prefill-first,chunked")
    args = parser.parse_args()
    policies = [p for p in args.policies.split(",") if p]
    client = EngineClient.from_env(heartbeat_s=0.25)
    try:
        client.load(MODEL)
        first_pass_s(client, 1)  # warm: the first call's connection and the model's first run
        print(f"load average {os.getloadavg()[0]:.1f} at the start")
        ok = labs_part(client, args.scenario, policies)
        ok = lessons_part(client, args.scenario, policies, args.runs, args.spread_s, args.repeats) and ok
        print(f"load average {os.getloadavg()[0]:.1f} at the end")
    finally:
        client.close()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

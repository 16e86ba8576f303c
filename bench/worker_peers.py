"""A well-behaved client's short call beside each hostile peer of the engine worker, against its time alone.

    python -m bench.worker_peers [--cases unread,silent_flood,...] [--rounds 3] [--against DIR]

Each case runs in a child process (tests/hostile/worker_peers.py, the same cases the hostile tests
run): a real worker with test handlers, the short call three times alone (the best kept), then the
hostile peer, and the short call again while the peer is still connected. Prints both times and
their ratio per case, the median of `--rounds` children. Goal: within 1.5x of alone in every case
(before the hardening, a client that stopped reading held every other run for as long as it stayed
connected: over 180 s). Exits 1 when a case misses it.

The crowd cases (crowd_one_name, crowd_own_name, crowd_fresh_names) keep 40 calls waiting from
another replica under one name, under the honest client's own name, or under a fresh name per call;
their ratio is the honest call beside the crowd against beside one well-behaved busy client (one
name, as many calls waiting), goal within 2x. The burst cases (burst:100, burst:300) send that many
calls at the same moment from one host: goal, every one done, none refused, each client's in order.

`--against DIR`: the same cases from another checkout too (the code before a change: `git archive
REV | tar -x -C DIR`), its child and this one's taking turns, so both see the same machine. One
call is tens of milliseconds, so a busy shared machine moves a ratio by itself; the load average
printed says how busy it was.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASES = ("unread", "silent_flood", "idle_keyed", "frames", "threads", "stall", "crowd_one_name", "crowd_own_name",
         "crowd_fresh_names", "burst:100", "burst:300")
GOAL = 1.5
CROWD_GOAL = 2.0  # a crowd case: the honest call beside the crowd, against beside one busy client


def run_case(name: str, root: Path = ROOT) -> dict:
    out = subprocess.run([sys.executable, "-m", "tests.hostile.worker_peers", *name.split(":")], cwd=root,
                         capture_output=True, text=True, timeout=300, check=False)
    if out.returncode != 0:
        raise SystemExit(f"{name} ({root}): the child failed\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(name: str, roots: dict[str, Path], rounds: int) -> dict[str, tuple[float, float, float]]:
    """Per checkout: the medians of (alone s, beside s, ratio) over `rounds` children, taken in turns."""
    got: dict[str, list[dict]] = {label: [] for label in roots}
    for _ in range(rounds):
        for label, root in roots.items():
            got[label].append(run_case(name, root))
    return {label: (statistics.median(baseline(r) for r in runs), statistics.median(r["good_s"] for r in runs),
                    statistics.median(r["good_s"] / baseline(r) for r in runs)) for label, runs in got.items()}


def baseline(result: dict) -> float:
    """What a case's short call is set against: beside one busy client (a crowd case), else alone."""
    return result.get("busy_s", result["alone_s"])


def burst(name: str, rounds: int) -> bool:
    """A burst case's lines: how its calls ended, in order or not, its seconds; True when the goal is met."""
    met = True
    for _ in range(rounds):
        got = run_case(name)
        calls = int(name.split(":")[1])
        ok = got["answers"] == {"done": calls} and got["in_order"]
        print(f"{name:17} {calls} calls at once from one host: {got['answers']}, each client's in order: "
              f"{got['in_order']}, {got['case_s']:.1f} s in all")
        met = met and ok
    return met


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--rounds", type=int, default=1, help="children per case (the medians printed)")
    parser.add_argument("--against", type=Path, help="another checkout, run in turns with this one")
    args = parser.parse_args()
    roots = {"here": ROOT} if args.against is None else {"against": args.against, "here": ROOT}
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"{'case':17} {'code':8} {'alone ms':>9} {'beside ms':>10} {'ratio':>6}  (a crowd case: 'alone' is "
          "beside one busy client)")
    missed = []
    for name in args.cases.split(","):
        if name.startswith("burst"):
            missed += [] if burst(name, args.rounds) else [name]
            continue
        goal = CROWD_GOAL if name.startswith("crowd") else GOAL
        for label, (alone_s, good_s, ratio) in measure(name, roots, args.rounds).items():
            print(f"{name:17} {label:8} {alone_s * 1e3:9.1f} {good_s * 1e3:10.1f} {ratio:6.2f}")
            if ratio > goal and label == "here":
                missed.append(name)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    print(f"goal: within {GOAL}x of alone ({CROWD_GOAL}x of beside one busy client for a crowd; every call of a "
          "burst done): " + ("met" if not missed else f"missed ({', '.join(missed)})"))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())

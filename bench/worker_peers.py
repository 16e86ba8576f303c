"""A well-behaved client's short call beside each hostile peer of the engine worker, against its time alone.

    python bench/worker_peers.py [--cases unread,silent_flood,idle_keyed,frames,threads,stall]

Each case runs in a child process (tests/hostile/worker_peers.py, the same cases the hostile tests
run): a real worker with test handlers, the short call three times alone (the best kept), then the
hostile peer, and the short call again while the peer is still connected. Prints both times and
their ratio per case. Goal: within 1.5x of alone in every case (before the hardening, a client that
stopped reading held every other run for as long as it stayed connected: over 180 s). Exits 1 when
a case misses it. One call is tens of milliseconds, so a busy shared machine moves a ratio by
itself; the load average printed says how busy it was.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASES = ("unread", "silent_flood", "idle_keyed", "frames", "threads", "stall")
GOAL = 1.5


def run_case(name: str) -> dict:
    out = subprocess.run([sys.executable, "-m", "tests.hostile.worker_peers", name], cwd=ROOT, capture_output=True,
                         text=True, timeout=300, check=False)
    if out.returncode != 0:
        raise SystemExit(f"{name}: the child failed\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES))
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"{'case':14} {'alone ms':>9} {'beside ms':>10} {'ratio':>6}")
    missed = []
    for name in args.cases.split(","):
        got = run_case(name)
        ratio = got["good_s"] / got["alone_s"]
        print(f"{name:14} {got['alone_s'] * 1e3:9.1f} {got['good_s'] * 1e3:10.1f} {ratio:6.2f}")
        if ratio > GOAL:
            missed.append(name)
    print(f"goal: within {GOAL}x of alone: " + ("met" if not missed else f"missed ({', '.join(missed)})"))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())

"""What one app replica costs in memory, and what a class leaves in it once it has gone.

    .venv/bin/python -m bench.replica_memory                          # 10 and 100 sessions, then again
    .venv/bin/python -m bench.replica_memory --sessions 100 --rounds 3
    .venv/bin/python -m bench.replica_memory --allocator malloc       # glibc's malloc for Python's objects too

Starts the app (`streamlit run app.py` on a free local port; its pages are run by its engine worker, a process
of its own, not counted here) with a probe in the server's process (bench/replica_probe/sitecustomize.py, on
PYTHONPATH), and opens N sessions at once as bench/classroom.py's tabs do (Streamlit's own websocket protocol,
no browser). Streamlit keeps a closed session for a reconnect (`server.disconnectedSessionTTL`, here `--ttl-s`)
and drops the expired ones when the next session disconnects, so after each round one more session opens and
closes once the TTL is past. Readings: the first view, all N open, just closed, gone; after the last round,
glibc's malloc_trim(0) (what the allocators could give back). Each: the resident memory (VmRSS), the live
objects after a full collection, Python's allocator (its 1 MiB arenas, the bytes in use in them) and glibc's
heap (in use, free).

Judged: once a class has gone, the live objects are within 5 % of the first view's (a class leaves nothing
behind); exit 1 otherwise. The resident memory is printed, not judged (what the allocators keep mapped is
theirs to keep: docs/benchmarks.md). Linux with glibc 2.33 or later (mallinfo2). The server always stops.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import sys
import tempfile
import time
from pathlib import Path


from bench.app_server import ROOT, streamlit_server
from bench.classroom import open_many

PROBE = ROOT / "bench" / "replica_probe"
OBJECTS_GOAL = 1.05  # live objects once a class has gone / at the first view
PROBE_TIMEOUT_S = 120


def read_probe(folder: Path, name: str) -> dict[str, float]:
    """Ask the server's probe for a reading and wait for it."""
    (folder / "ask.part").write_text(name)
    (folder / "ask.part").rename(folder / "ask")
    answer = folder / f"{name}.json"
    deadline = time.monotonic() + PROBE_TIMEOUT_S
    while not answer.exists():
        if time.monotonic() > deadline:
            raise RuntimeError("the server's probe did not answer: is bench/replica_probe on its PYTHONPATH?")
        time.sleep(0.1)
    return json.loads(answer.read_text())


def show(label: str, r: dict[str, float]) -> None:
    print(f"  {label:<40} RSS {r['rss_mib']:6.1f} MiB  objects {r['objects']:>8,}  "
          f"Python's arenas {r['arenas_mib']:5.0f} MiB ({r['in_blocks_mib']:5.1f} in use)  "
          f"heap {r['heap_mib']:5.1f} MiB ({r['heap_used_mib']:5.1f} in use, {r['heap_free_mib']:5.1f} free)")


def one_session(url: str) -> bool:
    """One more tab opens the lesson and closes: True when its page was whole."""
    sessions, _ = asyncio.run(open_many(url, 1, False, None))
    return sessions[0].ok


def measure(url: str, folder: Path, counts: list[int], rounds: int, ttl_s: float) -> bool:
    ok = one_session(url)  # the first visit starts the worker and measures the first view
    first = read_probe(folder, "first")
    show("the first view (one session, closed)", first)
    gone = first
    for round_no in range(1, rounds + 1):
        for n in counts:
            print(f"round {round_no}, {n} sessions at once:")
            at_peak = functools.partial(read_probe, folder, f"open-{round_no}-{n}")
            sessions, during = asyncio.run(open_many(url, n, False, None, at_peak=at_peak))
            failed = [s.errors for s in sessions if not s.ok]
            ok &= not failed
            show(f"{n} open ({n - len(failed)} pages ok)", during)
            time.sleep(2.0)
            show("just closed", read_probe(folder, f"closed-{round_no}-{n}"))
            time.sleep(ttl_s + 1.0)
            ok &= one_session(url)  # its disconnect drops the expired sessions
            time.sleep(1.0)
            gone = read_probe(folder, f"gone-{round_no}-{n}")
            show(f"gone ({ttl_s:.0f} s on, one more came and left)", gone)
    trimmed = read_probe(folder, "trim")
    show("then glibc's malloc_trim(0)", trimmed)
    ratio = gone["objects"] / first["objects"]
    met = ratio <= OBJECTS_GOAL
    print(f"goal live objects once the class has gone / at the first view: {gone['objects']:,} / "
          f"{first['objects']:,} = {ratio:.3f} (<= {OBJECTS_GOAL}: {'met' if met else 'MISSED'})")
    print(f"resident memory kept after the class: {gone['rss_mib'] - first['rss_mib']:+.1f} MiB "
          f"(Python's arenas {gone['arenas_mib'] - first['arenas_mib']:+.0f} MiB, glibc's heap "
          f"{gone['heap_mib'] - first['heap_mib']:+.1f} MiB); after malloc_trim "
          f"{trimmed['rss_mib'] - first['rss_mib']:+.1f} MiB")
    return ok and met


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", default="10,100", help="sessions opened at once, one class per count")
    parser.add_argument("--rounds", type=int, default=2, help="times every count is run (bounded memory: the same)")
    parser.add_argument("--ttl-s", type=float, default=5.0,
                        help="how long Streamlit keeps a closed session (server.disconnectedSessionTTL; 120 shipped)")
    parser.add_argument("--allocator", choices=("python", "malloc"), default="python",
                        help="Python's own small-object allocator (shipped), or glibc's malloc (PYTHONMALLOC=malloc)")
    args = parser.parse_args()
    counts = [int(v) for v in args.sessions.split(",") if v.strip()]
    with tempfile.TemporaryDirectory(prefix="replica_probe_") as folder:
        env = {"PYTHONPATH": str(PROBE), "REPLICA_PROBE_DIR": folder,
               "STREAMLIT_SERVER_DISCONNECTED_SESSION_TTL": str(int(args.ttl_s))}
        if args.allocator == "malloc":
            env["PYTHONMALLOC"] = "malloc"
        with streamlit_server(Path(folder) / "app.log", extra_env=env) as server:
            print(f"app at {server.url} (pid {server.pid}), allocator: {args.allocator}, closed sessions kept "
                  f"{args.ttl_s:.0f} s")
            ok = measure(server.url, Path(folder), counts, args.rounds, args.ttl_s)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

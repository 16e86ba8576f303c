"""The contract codec: a recorded 1024-token lesson trace and a serving run, encoded and decoded at both
boundaries, timed.

    python -m bench.codec                 # 30 rounds
    python -m bench.codec --rounds 100

Each round, interleaved, for the gallery's lesson trace (assets/gallery/cpu/lesson-zh-1024.json) and its
chunked serving run (serving-long-prompt-during-chats-chunked.json):

- the worker boundary: the result written as the worker sends it (engine.contract.worker.protocol.encode),
  then read as the client reads it (protocol.decode, then the client's checked decoder: types, step cap,
  meaning);
- the file boundary: the value written as the engine writes a file (`to_json(indent=None)`), then read as
  an upload is (engine.contract.recorded.read_recorded: bounds, kind, types, meaning).

Prints the median milliseconds of each, over the rounds. Run it before and after a change to the codec in one
sitting (the machine's load noted) and compare the medians: docs/benchmarks.md ("bench/codec.py").
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

GALLERY = Path(__file__).resolve().parent.parent / "assets" / "gallery" / "cpu"
TRACE_FILE = "lesson-zh-1024.json"
SERVING_FILE = "serving-long-prompt-during-chats-chunked.json"


def cases() -> dict:
    """name -> a function doing one encode + decode, each of the four paths."""
    from engine.contract.meaning import check_serving
    from engine.contract.recorded import read_recorded
    from engine.contract.worker import client, protocol

    trace = read_recorded((GALLERY / TRACE_FILE).read_bytes(), 1 << 26).run
    run = read_recorded((GALLERY / SERVING_FILE).read_bytes(), 1 << 26).run
    types = protocol.WORKER_TYPES

    def trace_worker():
        message = protocol.decode(protocol.encode("done", result=trace.to_dict()), types)
        assert client.checked_trace(message["result"]) == trace

    def trace_file():
        assert read_recorded(trace.to_json(indent=None), 1 << 26).run == trace

    def serving_worker():
        message = protocol.decode(protocol.encode("done", result=run.to_json(indent=None)), types)
        assert client.checked("serving run", lambda: type(run).from_json(message["result"]), check_serving) == run

    def serving_file():
        assert read_recorded(run.to_json(indent=None), 1 << 26).run == run

    return {"trace, worker": trace_worker, "trace, file": trace_file, "serving run, worker": serving_worker,
            "serving run, file": serving_file}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30, help="rounds, each timing every path once (default 30)")
    args = parser.parse_args()
    timed = cases()
    times: dict[str, list[float]] = {name: [] for name in timed}
    for _ in range(args.rounds):
        for name, run in timed.items():
            start = time.perf_counter()
            run()
            times[name].append((time.perf_counter() - start) * 1e3)
    print(f"load average {os.getloadavg()[0]:.1f}, {args.rounds} rounds; median ms per encode + decode")
    for name, values in times.items():
        print(f"{name:22} {statistics.median(values):8.2f} ms")


if __name__ == "__main__":
    main()

"""Soak test for the shared classroom server: many visitors, one cached model.

    python -m bench.soak                 # 8 concurrent sessions, then 300 runs
    python -m bench.soak --runs 50 --model tiny --models-dir /srv/models

1. Concurrency: 8 threads (8 "visitors") take the model as the engine worker
   holds it and stream a request each at the same moment. Their
   tokens and step structure must equal the same requests run one by one
   (each request has its own cache, so this holds even without a lock), and
   no two requests' timed passes may overlap: that is what the engine's
   lm.lock protects, so one visitor's pass never inflates another's timings.
2. Memory: 300 consecutive runs in one process, each doing what the page does
   (stream the trace, JSON + CSV export, every diagram). Resident memory
   after the runs must be within 5 % of the memory before them.

Prints both results as ratios / percentages; exits 1 if either fails.
"""

from __future__ import annotations

import argparse
import functools
import gc
import os
import sys
import threading
import time
from unittest import mock


PROMPTS = (
    "法国的首都是", "日本的首都是", "The capital of France is", "Prefill processes",
    "德国位于", "The capital of Peru is", "Decode writes", "意大利的首都是",
)
RSS_LIMIT_PCT = 5.0


def rss_bytes() -> int:
    """Current resident set size (Linux /proc; falls back to peak RSS elsewhere)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


@functools.cache
def cached_model(choice: str):
    """The model exactly as the engine worker holds it (engine.runtime.worker.models.ModelCache: resolved by
    its choice, loaded and warmed once), in this process: the page itself never holds a model."""
    from engine.contract.config import settings_from_env
    from engine.contract.worker.protocol import ModelRef
    from engine.runtime.worker.models import ModelCache, WorkerSettings

    settings = settings_from_env()
    return ModelCache(WorkerSettings.from_env()).load(ModelRef(choice, settings.device, settings.dtype))


def run_one(choice: str, prompt: str, max_new_tokens: int):
    from engine.contract.results import GenerationConfig
    from engine.runtime.generation import stream_trace

    trace = None
    for partial in stream_trace(cached_model(choice), prompt, GenerationConfig(max_new_tokens=max_new_tokens)):
        trace = partial
    return trace


def signature(trace) -> tuple:
    """What must not differ between a concurrent and a serial run."""
    return trace.output_ids, tuple((s.phase, s.context_before, s.context_after, s.input_ids) for s in trace.steps)


def recording_pass_clock(reads: dict[int, list[float]]):
    """Patch the engine's pass clock so every read is also kept, per thread:
    see timed_passes for their order."""
    from engine.runtime import generation

    real_clock = generation.device_clock

    def clock(device):
        now = real_clock(device)
        reads.setdefault(threading.get_ident(), []).append(now)
        return now

    return mock.patch.object(generation, "device_clock", clock)


def timed_passes(reads: list[float]) -> list[tuple[float, float]]:
    """(start, end) of each pass from one request's clock reads: Prefill reads three times (start, its
    logits ready, the first token chosen: engine.runtime.generation._run), every Decode step twice."""
    return [(reads[0], reads[2])] + list(zip(reads[3::2], reads[4::2])) if len(reads) >= 3 else []


def overlapping_pairs(passes: list[list[tuple[float, float]]]) -> tuple[int, int]:
    """(pairs of timed passes from different requests that share a moment, pairs compared)."""
    overlaps = compared = 0
    for i, mine in enumerate(passes):
        for other in passes[i + 1:]:
            for a_start, a_end in mine:
                for b_start, b_end in other:
                    compared += 1
                    overlaps += a_start < b_end and b_start < a_end
    return overlaps, compared


def check_concurrency(choice: str, num_sessions: int, max_new_tokens: int) -> tuple[int, int, int, int, int]:
    """(sessions identical to serial, sessions, most requests in flight at once,
    overlapping pairs of timed passes, pairs compared)."""
    prompts = [PROMPTS[i % len(PROMPTS)] for i in range(num_sessions)]
    serial = [signature(run_one(choice, p, max_new_tokens)) for p in prompts]
    results: list[tuple | None] = [None] * num_sessions
    errors: list[BaseException] = []
    windows: list[tuple[float, float]] = [(0.0, 0.0)] * num_sessions
    idents = [0] * num_sessions
    reads: dict[int, list[float]] = {}
    barrier = threading.Barrier(num_sessions)

    def visitor(i: int) -> None:
        try:
            idents[i] = threading.get_ident()
            barrier.wait()
            start = time.perf_counter()
            results[i] = signature(run_one(choice, prompts[i], max_new_tokens))
            windows[i] = (start, time.perf_counter())
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)

    with recording_pass_clock(reads):
        threads = [threading.Thread(target=visitor, args=(i,)) for i in range(num_sessions)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    if errors:
        raise errors[0]
    same = sum(a == b for a, b in zip(serial, results))
    in_flight = max(sum(s <= start < e for s, e in windows) for start, _ in windows)
    passes = [timed_passes(reads[ident]) for ident in idents]
    if any(len(p) != len(r[1]) for p, r in zip(passes, results)):
        raise RuntimeError("the pass clock was not read once at the start and once at the end of each pass")
    return same, num_sessions, in_flight, *overlapping_pairs(passes)


def page_work(choice: str, prompt: str, max_new_tokens: int) -> None:
    """One visitor's Run, as the page does it (without the browser)."""
    from engine.contract.trace import RequestTrace
    from lesson.downloads import trace_csv

    trace = run_one(choice, prompt, max_new_tokens)
    data = trace.to_json(indent=None)
    trace_csv(trace)
    again = RequestTrace.from_json(data)
    try:
        from lesson.diagrams import DIAGRAMS
    except ImportError:
        return
    for lang in ("zh", "en"):
        for render in DIAGRAMS.values():
            render(again, lang=lang)


def check_memory(choice: str, num_runs: int, max_new_tokens: int) -> tuple[int, int, float]:
    for i in range(10):  # warm-up: allocator pools, lazy imports, first-call caches
        page_work(choice, PROMPTS[i % len(PROMPTS)], max_new_tokens)
    gc.collect()
    before = rss_bytes()
    for i in range(num_runs):
        page_work(choice, PROMPTS[i % len(PROMPTS)], max_new_tokens)
    gc.collect()
    after = rss_bytes()
    return before, after, 100.0 * (after - before) / before


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=8, help="concurrent visitors (default 8)")
    parser.add_argument("--runs", type=int, default=300, help="consecutive runs for the memory check (default 300)")
    parser.add_argument("--max-new-tokens", type=int, default=16)
    parser.add_argument("--model", default="default", help="'default' or a folder name inside --models-dir")
    parser.add_argument("--models-dir", help="sets PREFILL_DECODE_MODELS_DIR for this run")
    args = parser.parse_args(argv)
    if args.models_dir:
        os.environ["PREFILL_DECODE_MODELS_DIR"] = args.models_dir
    import streamlit.logger

    streamlit.logger.set_log_level("error")  # bare mode (no server): silence "no runtime" warnings

    start = time.perf_counter()
    lm = cached_model(args.model)
    load_s = time.perf_counter() - start
    print(f"model: {lm.info.model_id} on {lm.info.device}/{lm.info.dtype} (loaded in {load_s:.1f} s)")

    start = time.perf_counter()
    same, total, in_flight, overlaps, compared = check_concurrency(args.model, args.sessions, args.max_new_tokens)
    print(f"concurrent vs serial: {same}/{total} sessions gave identical tokens and steps "
          f"(ratio {same / total:.2f}; up to {in_flight} requests in flight at once) "
          f"in {time.perf_counter() - start:.1f} s")
    print(f"timed passes of different requests that overlap: {overlaps} of {compared:,} pairs "
          f"(must be 0: the model lock keeps one visitor's pass out of another's timing)")

    start = time.perf_counter()
    before, after, growth = check_memory(args.model, args.runs, args.max_new_tokens)
    elapsed = time.perf_counter() - start
    print(f"memory over {args.runs} runs: RSS {before / 2**20:.1f} MiB -> {after / 2**20:.1f} MiB "
          f"({growth:+.2f} %, limit {RSS_LIMIT_PCT:.0f} %; ratio {after / before:.3f}) in {elapsed:.1f} s")

    ok = same == total and overlaps == 0 and growth < RSS_LIMIT_PCT
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

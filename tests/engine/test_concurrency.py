"""What the model lock protects: timing, not tokens.

Every request has its own KV cache, so concurrent requests get the same tokens
with or without the lock. What the lock buys is honest timing: one request's
forward pass never runs inside another request's measured pass. This test
records each pass's start and end on the engine's own clock, across threads,
and checks that no two requests' timed passes overlap. A control run with the
lock replaced by a no-op must show overlaps, or the check could not fail.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
from unittest import mock

import pytest

import engine.runtime.generation as generation
from engine.contract.results import GenerationConfig
from engine.runtime.generation import generate
from engine.runtime.model import load_model

NUM_REQUESTS = 4
PASS_SLEEP_S = 0.003  # every pass is made this much slower, so an unguarded overlap cannot hide
PROMPTS = ("The capital of France is", "Prefill reads the whole prompt", "法国的首都是", "Decode writes one")
CFG = GenerationConfig(max_new_tokens=6, ignore_eos=True)


@pytest.fixture(scope="module")
def lm(tiny_model_dirs):
    lm = load_model(tiny_model_dirs["llama"], device="cpu", warmup=False)  # our own copy: it gets a hook
    lm.model.register_forward_hook(lambda *_: time.sleep(PASS_SLEEP_S))  # sleeping releases the GIL
    return lm


def run_concurrently(lm) -> tuple[list, list[list[tuple[float, float]]]]:
    """(traces, each request's timed passes as (start, end) on the engine's clock), all requests
    released at the same moment from their own threads."""
    clock_reads: dict[int, list[float]] = {}
    real_clock = generation.device_clock

    def recording_clock(device):
        now = real_clock(device)
        clock_reads.setdefault(threading.get_ident(), []).append(now)
        return now

    traces, idents = [None] * NUM_REQUESTS, [0] * NUM_REQUESTS
    barrier = threading.Barrier(NUM_REQUESTS)

    def request(i: int) -> None:
        idents[i] = threading.get_ident()
        barrier.wait()
        traces[i] = generate(lm, PROMPTS[i], CFG, request_id=f"r{i}")

    with mock.patch.object(generation, "device_clock", recording_clock):
        threads = [threading.Thread(target=request, args=(i,)) for i in range(NUM_REQUESTS)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    windows = []
    for trace, ident in zip(traces, idents):
        reads = clock_reads[ident]
        # the recorded clock reads are exactly this trace's passes: one start and one end each, and in the
        # Prefill one more between them, when the first token was chosen (RequestTrace.first_token_choice_ms)
        assert len(reads) == 2 * len(trace.steps) + 1
        reads = [reads[0], *reads[2:]]
        pairs = list(zip(reads[::2], reads[1::2]))
        assert [(end - start) * 1e3 for start, end in pairs] == pytest.approx([s.duration_ms for s in trace.steps])
        windows.append(pairs)
    return traces, windows


def overlapping_pairs(windows: list[list[tuple[float, float]]]) -> int:
    """Pairs of timed passes from different requests that share some moment."""
    return sum(
        a_start < b_end and b_start < a_end
        for i, passes in enumerate(windows) for other in windows[i + 1:]
        for a_start, a_end in passes for b_start, b_end in other
    )


def test_concurrent_requests_never_overlap_their_timed_passes(lm):
    traces, windows = run_concurrently(lm)
    assert overlapping_pairs(windows) == 0
    # they did run at the same time: some request started before another had finished
    spans = [(w[0][0], w[-1][1]) for w in windows]
    assert overlapping_pairs([[span] for span in spans]) > 0
    assert [t.output_ids for t in traces] == [generate(lm, p, CFG).output_ids for p in PROMPTS]


def test_without_the_lock_the_passes_overlap_but_tokens_do_not_change(lm):
    """The control: proves the check above can fail, and that tokens alone could never show it."""
    unlocked = dataclasses.replace(lm, lock=contextlib.nullcontext())
    traces, windows = run_concurrently(unlocked)
    assert overlapping_pairs(windows) > 0
    assert [t.output_ids for t in traces] == [generate(lm, p, CFG).output_ids for p in PROMPTS]

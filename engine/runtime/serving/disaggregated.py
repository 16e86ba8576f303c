"""Prefill/Decode disaggregation (DistServe, arXiv 2401.09670): two workers, two
model instances, the KV cache handed from one to the other.

    coordinator (this process)   tokenizes, starts both workers, collects their records
    Prefill worker (process 1)   honours arrivals; runs whole Prefills (batched when several
                                 wait); hands each request's K/V to the Decode worker
    Decode worker  (process 2)   takes hand-offs into its own paged blocks; runs continuous
                                 batches of Decode steps

Each worker loads its own copy of the model. On a CPU the two are pinned to
separate cores (os.sched_setaffinity), so a long Prefill no longer shares a core
with the Decodes; with two or more GPUs they run on cuda:0 and cuda:1.

The hand-off goes through host shared memory: the Prefill worker gathers the
request's K/V from its blocks into one tensor `[layers, 2, tokens, kv_heads,
head_dim]` and copies its bytes into a shared segment; the Decode worker copies them
out and scatters them into its own blocks. `Handoff.copy_ms` is that measured
work (pack + unpack); `received_ms - send_start_ms` also holds the time the Decode
worker spent finishing the pass it was in. What the same bytes would take over a
real link is `num_bytes / bandwidth` for the assumed links in `LINKS` (bandwidth
only: no latency, no protocol overhead).

Robustness: every wait has a timeout, a worker that fails reports its error and the
coordinator raises it, workers exit when their parent goes away, and the
coordinator terminates both in a `finally`.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import time
import traceback
from collections import deque
from dataclasses import dataclass
from multiprocessing import shared_memory

import torch

from engine.contract.errors import EngineError
from engine.contract.serving.trace import Handoff, LinkEstimate, LinkSpec
from engine.runtime.model import load_model
from engine.runtime.serving.core import EngineCore, build_run, make_clock, prepare_sequences
from engine.runtime.serving.scheduler import SchedulerConfig

LINKS = (
    LinkSpec("nvlink", "NVLink 4 (H100/H200): 450 GB/s each way", 450e9),
    LinkSpec("400gbps", "400 Gb/s InfiniBand / RoCE: 50 GB/s", 50e9),
    LinkSpec("100gbps", "100 Gb/s Ethernet: 12.5 GB/s", 12.5e9),
)
STARTUP_TIMEOUT_S = 180.0  # loading a model in a fresh process (torch import included)
POLL_S = 0.05


class WorkerError(EngineError):
    """A disaggregated worker failed or stopped answering."""


def link_estimates(num_bytes: int) -> tuple[LinkEstimate, ...]:
    return tuple(LinkEstimate(link.name, link.bytes_per_s, num_bytes / link.bytes_per_s * 1e3) for link in LINKS)


@dataclass(frozen=True)
class WorkerSpec:
    worker: str  # "prefill" or "decode"
    model_path: str | None  # None: the embedded default
    device: str
    dtype: str
    num_blocks: int
    block_size: int
    scheduler_config: SchedulerConfig
    cores: tuple[int, ...]  # () : not pinned
    num_threads: int
    cuda_index: int | None
    parent_pid: int


def plan_cores() -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Split this process's cores in two halves; ((), ()) where pinning is unavailable or one core."""
    if not hasattr(os, "sched_getaffinity"):
        return (), ()
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        return (), ()
    half = len(cores) // 2
    return tuple(cores[:half]), tuple(cores[half:])


# --- the coordinator -------------------------------------------------------------

def run_disaggregated(lm, workload, config, *, scenario: str = "custom", on_iteration=None):
    seqs = prepare_sequences(lm, workload, config)
    num_blocks = config.blocks_for_run(seqs)
    prefill_cores, decode_cores = plan_cores()
    two_gpus = lm.device.type == "cuda" and torch.cuda.device_count() >= 2
    path = None if lm.model_id == "default" else lm.path

    def spec(worker: str, policy: str, cores: tuple[int, ...], cuda_index: int) -> WorkerSpec:
        threads = max(1, min(4, len(cores))) if cores else max(1, torch.get_num_threads() // 2)
        return WorkerSpec(worker, path, lm.device.type, lm.info.dtype, num_blocks, config.block_size,
                          SchedulerConfig.for_run(config, policy), cores, threads, cuda_index if two_gpus else None,
                          os.getpid())

    ctx = mp.get_context("spawn")  # fork after torch started its threads can deadlock
    handoff_out, handoff_in = ctx.Pipe(duplex=False)
    results, go = ctx.Queue(), (ctx.Queue(), ctx.Queue())
    workers = (
        ctx.Process(target=_worker_main, args=(spec("prefill", "prefill-only", prefill_cores, 0), seqs, handoff_in,
                                               results, go[0]), daemon=True, name="prefill-worker"),
        ctx.Process(target=_worker_main, args=(spec("decode", "decode-only", decode_cores, 1), [], handoff_out,
                                               results, go[1]), daemon=True, name="decode-worker"),
    )
    try:
        for w in workers:
            w.start()
        ready = 0
        while ready < 2:
            kind, *rest = _next(results, workers, time.monotonic() + STARTUP_TIMEOUT_S)
            ready += kind == "ready"
        t0 = time.perf_counter()
        for q in go:
            q.put(t0)
        collected = _collect(results, workers, config.timeout_s, len(seqs), on_iteration)
        wall_ms = (time.perf_counter() - t0) * 1e3
    except BaseException:
        _stop(workers, grace_s=0.0)  # a failure (or Ctrl-C): no reason to wait for the other worker
        raise
    _stop(workers, grace_s=5.0)
    finished = {s.request_id: s for s in collected["finished"]}
    ordered = [finished[s.request_id] for s in seqs]
    cores_note = (("prefill", prefill_cores), ("decode", decode_cores)) if prefill_cores else ()
    notes = (f"Prefill worker pinned to cores {list(prefill_cores)}, Decode worker to {list(decode_cores)}"
             if prefill_cores else "workers not pinned (fewer than two cores, or no sched_setaffinity)",
             "hand-off through host shared memory; link times are bytes / assumed bandwidth")
    settings = config.settings(num_blocks, collected["threads"], cores_note)
    return build_run(lm, ordered, collected["iterations"], settings, config.slo, scenario, wall_ms,
                     handoffs=tuple(sorted(collected["handoffs"], key=lambda h: h.send_start_ms)), links=LINKS,
                     notes=notes)


def _next(results, workers, deadline: float):
    """The next message from a worker; raise if one failed, died, or the deadline passed."""
    while True:
        try:
            message = results.get(timeout=POLL_S)
        except queue.Empty:
            for w in workers:
                if w.exitcode not in (None, 0):
                    raise WorkerError("worker_failed", f"the {w.name} stopped (exit code {w.exitcode})") from None
            if time.monotonic() > deadline:
                raise WorkerError("worker_timeout",
                                  "a disaggregated worker stopped answering; stopped the run") from None
            continue
        if message[0] == "error":
            raise WorkerError("worker_failed", f"the {message[1]} worker failed: {message[2]}")
        return message


def _collect(results, workers, timeout_s: float, num_requests: int, on_iteration) -> dict:
    out = {"iterations": [], "finished": [], "handoffs": [], "threads": 1}
    done, deadline = 0, time.monotonic() + timeout_s
    while done < 2:
        kind, *rest = _next(results, workers, deadline)
        if kind == "iteration":
            out["iterations"].append(rest[0])
            if on_iteration is not None:
                on_iteration(rest[0], len(out["finished"]), num_requests)
        elif kind == "finished":
            out["finished"].append(rest[0])
        elif kind == "handoff":
            out["handoffs"].append(rest[0])
        elif kind == "done":
            done += 1
            out["threads"] = max(out["threads"], rest[1])
    return out


def _stop(workers, grace_s: float) -> None:
    """Join both workers; terminate (then kill) any still running after `grace_s`."""
    for w in workers:
        if w.pid is None:
            continue  # never started
        w.join(timeout=grace_s)
        if w.is_alive():
            w.terminate()
            w.join(timeout=5.0)
        if w.is_alive():
            w.kill()
            w.join()


# --- the workers (run in their own processes) ------------------------------------

def _worker_main(spec: WorkerSpec, seqs, conn, results, go) -> None:
    try:
        if spec.cores:
            os.sched_setaffinity(0, spec.cores)
        lm = _load(spec)
        core = EngineCore(lm, spec.scheduler_config, spec.num_blocks, spec.block_size, worker=spec.worker)
        results.put(("ready", spec.worker))
        t0 = _wait_for_start(go, spec.parent_pid)
        loop = _prefill_loop if spec.worker == "prefill" else _decode_loop
        loop(core, lm, t0, seqs, conn, results, spec.parent_pid)
        results.put(("done", spec.worker, torch.get_num_threads()))
    except BaseException:  # report anything, then exit non-zero: the coordinator raises it
        results.put(("error", spec.worker, traceback.format_exc(limit=3).strip().splitlines()[-1]))
        raise SystemExit(1) from None
    finally:
        conn.close()


def _load(spec: WorkerSpec):
    lm = load_model(spec.model_path, device=spec.device, dtype=spec.dtype, num_threads=spec.num_threads,
                    allow_hub=spec.model_path is not None)
    if spec.cuda_index is not None:
        lm.model.to(f"cuda:{spec.cuda_index}")  # in place: lm.device follows the parameters
    return lm


def _wait_for_start(go, parent_pid: int) -> float:
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while True:
        _check_parent(parent_pid)
        try:
            return go.get(timeout=POLL_S)
        except queue.Empty:
            if time.monotonic() > deadline:
                raise TimeoutError("no start signal from the coordinator") from None


def _check_parent(parent_pid: int) -> None:
    if os.getppid() != parent_pid:
        raise SystemExit("the coordinator went away")


def _prefill_loop(core, lm, t0: float, seqs, conn, results, parent_pid: int) -> None:
    clock, pending = make_clock(lm, t0), deque(seqs)
    while pending or core.scheduler.has_work():
        _check_parent(parent_pid)
        while pending and pending[0].arrival_ms <= clock():
            core.scheduler.add(pending.popleft())
        stepped = core.step(clock)
        if stepped is None:
            time.sleep(max(0.0, min(pending[0].arrival_ms - clock(), 1e3 * POLL_S)) / 1e3)
            continue
        iteration, finished = stepped
        results.put(("iteration", iteration))
        for seq in finished:
            results.put(("finished", seq))  # its only token came from the Prefill
        for seq in list(core.scheduler.running):  # every one just prefilled: hand it over
            send_start = clock()
            slots = torch.tensor(core.blocks.slots(seq.request_id, 0, seq.num_computed), device=lm.device)
            kv = core.runner.store.read(slots).cpu().contiguous()  # [layers, 2, tokens, kv_heads, head_dim]
            raw = kv.view(torch.uint8).reshape(-1).numpy()
            shm = shared_memory.SharedMemory(create=True, size=max(1, raw.nbytes))
            shm.buf[:raw.nbytes] = memoryview(raw).cast("B")
            name = shm.name
            shm.close()
            core.scheduler.finish(seq)  # leaves this worker: blocks back to the free list
            header = {"seq": seq, "shm": name, "shape": tuple(kv.shape), "dtype": str(kv.dtype).removeprefix("torch."),
                      "num_bytes": raw.nbytes, "send_start_ms": send_start, "pack_ms": clock() - send_start}
            conn.send(header)
    conn.send(None)  # no more hand-offs


def _decode_loop(core, lm, t0: float, seqs, conn, results, parent_pid: int) -> None:
    clock, inbox, prefill_done = make_clock(lm, t0), deque(), False
    while True:
        _check_parent(parent_pid)
        wait = 0.0 if core.scheduler.has_work() or inbox else POLL_S
        while not prefill_done and conn.poll(wait):
            message = conn.recv()
            if message is None:
                prefill_done = True
            else:
                inbox.append(_unpack(message, clock))
            wait = 0.0
        while inbox and core.blocks.can_hold(inbox[0][0]["seq"].request_id, inbox[0][0]["seq"].num_computed):
            header, kv, unpack_ms = inbox.popleft()
            results.put(("handoff", _admit_handoff(core, lm, header, kv, unpack_ms, clock)))
        if not core.scheduler.has_work():
            if prefill_done and not inbox:
                return
            continue
        stepped = core.step(clock)
        if stepped is None:
            continue
        iteration, finished = stepped
        results.put(("iteration", iteration))
        for seq in finished:
            results.put(("finished", seq))


def _unpack(header: dict, clock):
    """Copy the hand-off out of shared memory at once (so the segment can go)."""
    start = clock()
    shm = shared_memory.SharedMemory(name=header["shm"])
    try:
        raw = torch.frombuffer(shm.buf, dtype=torch.uint8, count=header["num_bytes"]).clone()
    finally:
        shm.close()
        shm.unlink()
    kv = raw.view(getattr(torch, header["dtype"])).reshape(header["shape"])
    return header, kv, clock() - start


def _admit_handoff(core, lm, header: dict, kv, unpack_ms: float, clock) -> Handoff:
    start = clock()
    seq = header["seq"]
    core.blocks.grow(seq.request_id, seq.num_computed)
    slots = torch.tensor(core.blocks.slots(seq.request_id, 0, seq.num_computed), device=lm.device)
    core.runner.store.write(slots, kv.to(lm.device))
    core.scheduler.add_running(seq)
    received = clock()
    copy_ms = header["pack_ms"] + unpack_ms + (received - start)
    return Handoff(seq.request_id, seq.num_computed, header["num_bytes"], header["send_start_ms"], received, copy_ms,
                   link_estimates(header["num_bytes"]))

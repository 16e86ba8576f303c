"""Runners: how one request's forward passes run. The engine mode is the choice of runner.

Every runner has the same interface, and one Decode loop (engine.runtime.generation.passes) drives them all:

    prefill(prompt_ids)       all prompt positions in one pass -> logits (1, vocab)
    decode(token, position)   one new position at `position`   -> logits (1, vocab)
    kv_bytes_per_layer()      bytes its cache holds per layer, measured from the tensors
    verify(ids), drop(n)      eager only: k+1 positions in one pass -> logits (k+1, vocab); take back the
                              last n positions (speculative decoding's rejected drafts, engine/runtime/speculative.py)
    take_kernel()             the attention kernel(s) the last pass ran
    mode, note                the mode that really runs, and why it is less than asked ("" when not)

Why more than one: in eager mode every Decode step is hundreds of small kernel launches issued
one by one from Python (measured on an H200 with the Llama-3.1-8B shape: 1493
launches, 18.2 ms a step against a 3.14 ms memory floor). A Decode step has the
same shapes every time once the cache is preallocated to a fixed length, so the
whole step can be recorded once and replayed with a single launch: what is left
is the time the GPU needs to read the weights and the cache.

    eager     EagerRunner: DynamicCache, grows by one position per pass (the lesson's default)
    static    StaticRunner: StaticCache of a fixed length, same kernels launched one by one
    graph     static + the Decode step captured as a CUDA graph (CUDA only)
    compiled  static + the Decode step compiled by torch.compile, which fuses the
              small element-wise ops (norms, rotary, activation, residual adds)
              into a few generated kernels; on CUDA the compiled step is also
              captured as a graph. The first request of each cache length pays
              the compile (about 20 s for the default model on a 2-core CPU).

Every static mode gives the same greedy tokens as eager (tests check static and
compiled on the CPU; bench/gpu_check.py checks graph and compiled on a GPU). The cache holds its whole
length from the start, so the trace's measured KV bytes are the reserved bytes,
flat from the first pass: that is what preallocation costs (paged KV, in the
serving engine, is the answer to it).

A mode that cannot run here falls back and says why (`StaticRunner.note`): a
failed capture runs without the graph, a failed compile runs the plain step. The
trace records the mode that really ran.

A runner serves one request at a time; a `RunnerPool` keeps one static runner per cache length
(rounded up to a bucket so a captured graph is reused) and hands each request its
own, so two visitors never share a cache. An eager runner is built fresh for each request.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Protocol

import torch

from engine.runtime import hf

BUCKET = 256  # cache lengths are rounded up to this, so one capture serves many requests
WARMUP_STEPS = 3  # eager decode steps on a side stream before capture (CUDA's recommendation)


def bucket_length(needed: int, max_positions: int) -> int:
    """The cache length a request of `needed` positions gets: the next multiple of BUCKET, within the
    model's context."""
    return min(max(BUCKET, -(-needed // BUCKET) * BUCKET), max_positions)


def kv_bytes_per_layer(cache) -> tuple[int, ...]:
    """Bytes held by each layer's K and V tensors, measured from the tensors themselves."""
    sizes = []
    for layer in cache.layers:
        tensors = (getattr(layer, "keys", None), getattr(layer, "values", None))
        sizes.append(sum(t.numel() * t.element_size() for t in tensors if isinstance(t, torch.Tensor)))
    return tuple(sizes)


class Runner(Protocol):
    """What the Decode loop needs from a runner (see the module docstring)."""

    mode: str
    note: str

    def prefill(self, prompt_ids: list[int]) -> torch.Tensor: ...

    def decode(self, token: int, position: int) -> torch.Tensor: ...

    def kv_bytes_per_layer(self) -> tuple[int, ...]: ...

    def take_kernel(self) -> str: ...


class EagerRunner:
    """A growing cache (DynamicCache), one entry per position; each pass issues its kernels one by one."""

    mode = "eager"
    note = ""

    def __init__(self, model: torch.nn.Module, kernels, cache=None) -> None:
        self.model, self.kernels = model, kernels
        self.device = next(model.parameters()).device
        self.cache = hf.new_cache(model) if cache is None else cache  # a given one: a kept prefix's copy

    def prefill(self, prompt_ids: list[int]) -> torch.Tensor:
        """The prompt positions not in the cache yet, in one pass: (1, S) -> logits (1, vocab). All of them,
        unless the cache started from a kept prefix (engine/runtime/prefix_store.py)."""
        return self._forward(prompt_ids)

    def decode(self, token: int, position: int) -> torch.Tensor:
        """One new position; `position` is the cache's length, which the growing cache knows itself."""
        return self._forward([token])

    def verify(self, ids: list[int]) -> torch.Tensor:
        """The token chosen before and k drafts in one pass, after the cache: (1, k+1) -> logits (k+1, vocab),
        row j predicting the token after ids[j]."""
        return self._forward(ids, num_logits=len(ids))

    def drop(self, num_positions: int) -> None:
        """Take back the cache's last `num_positions` positions (drafts the model rejected)."""
        hf.drop_last_positions(self.cache, num_positions)

    def kv_bytes_per_layer(self) -> tuple[int, ...]:
        return kv_bytes_per_layer(self.cache)

    def take_kernel(self) -> str:
        return self.kernels.take()

    def _forward(self, ids: list[int], num_logits: int = 1) -> torch.Tensor:
        out = hf.forward(self.model, torch.tensor([ids], device=self.device), self.cache, logits_to_keep=num_logits)
        self.cache = hf.next_cache(out, self.cache)
        return out.logits[0, -num_logits:, :]  # (num_logits, vocab): (1, vocab) for Prefill and Decode


class StaticRunner:
    """One preallocated cache plus fixed input buffers; Decode replays a CUDA graph when captured."""

    def __init__(self, model: torch.nn.Module, max_len: int, mode: str, kernels) -> None:
        self.model, self.max_len, self.kernels = model, max_len, kernels
        self.device = next(model.parameters()).device
        self.cache = hf.static_cache(model, max_len)
        self._cache_position = hf.accepts(type(model), "cache_position")  # older transformers write by position
        self.ids = torch.zeros((1, 1), dtype=torch.long, device=self.device)
        self.pos = torch.zeros((1, 1), dtype=torch.long, device=self.device)
        self.graph: torch.cuda.CUDAGraph | None = None
        self.logits: torch.Tensor | None = None  # the captured step's output buffer
        self.decode_kernel = ""
        self.capture_error: str | None = None
        self.compile_error: str | None = None
        self.step = self._forward  # the Decode step: the model's forward, or its compiled form
        self.compiled = False
        self.compile_s = 0.0  # how long compiling (and capturing) took: paid once per runner
        with torch.inference_mode():
            self.prefill([0])  # allocates the cache tensors (lazily made on first write)
            self.decode_kernel = self._eager_decode_kernel()
            started = time.perf_counter()
            if mode == "compiled":
                self._compile()
            if mode == "graph" or (mode == "compiled" and self.device.type == "cuda"):
                self._capture()
            self.compile_s = time.perf_counter() - started
            self.reset()

    # --- the two phases -------------------------------------------------
    def prefill(self, prompt_ids: list[int]) -> torch.Tensor:
        """All prompt positions in one eager pass (shapes differ per prompt: never captured). -> (1, vocab)"""
        n = len(prompt_ids)
        x = torch.tensor([prompt_ids], device=self.device)
        positions = torch.arange(n, device=self.device).unsqueeze(0)
        return self._forward(x, positions)[:, -1, :]

    def decode(self, token: int, position: int) -> torch.Tensor:
        """One new position: copy it into the fixed buffers, then replay (or run) the step. -> (1, vocab)"""
        self.ids.fill_(token)
        self.pos.fill_(position)
        if self.graph is not None:
            self.graph.replay()
            return self.logits[:, -1, :]
        return self.step(self.ids, self.pos)[:, -1, :]

    def kv_bytes_per_layer(self) -> tuple[int, ...]:
        """The reserved bytes: the whole length, from the first pass."""
        return kv_bytes_per_layer(self.cache)

    def take_kernel(self) -> str:
        return self.kernels.take() or self.decode_kernel  # a replayed graph runs no Python: nothing logged

    def reset(self) -> None:
        """Empty the cache in place (a captured graph keeps pointing at the same tensors)."""
        with torch.inference_mode():  # the cache tensors were made in inference mode
            self.cache.reset()

    @property
    def mode(self) -> str:
        """The mode that really runs: "compiled" (and on CUDA captured), "graph" or "static"."""
        return "compiled" if self.compiled else "graph" if self.graph is not None else "static"

    @property
    def note(self) -> str:
        """Why a requested mode runs as less than asked ("" when everything worked)."""
        return "; ".join(e for e in (self.compile_error, self.capture_error) if e)

    # --- internals --------------------------------------------------------
    def _forward(self, input_ids: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        options = {"cache_position": positions[0]} if self._cache_position else {}
        return hf.forward(self.model, input_ids, self.cache, position_ids=positions, **options).logits

    def _eager_decode_kernel(self) -> str:
        self.kernels.take()
        self._forward(self.ids, self.pos.fill_(1))
        return self.kernels.take()

    def _compile(self) -> None:
        """Compile the Decode step now (not inside the first timed step). Shapes are fixed, so one
        compile serves every step of this runner; a failure (no C++ compiler, an op Inductor
        cannot handle) leaves the plain step and says why."""
        import torch._dynamo

        # Each cache length (and each model) is a new specialisation of the same code: allow many.
        torch._dynamo.config.cache_size_limit = max(torch._dynamo.config.cache_size_limit, 64)
        step = torch.compile(self._forward, dynamic=False)
        try:
            for i in range(2):  # the first call compiles; the second checks the compiled code runs
                step(self.ids, self.pos.fill_(1 + i))
        except Exception as err:  # noqa: BLE001 - any compiler failure: keep the plain step, record why
            first_line = (str(err).strip().splitlines() or [type(err).__name__])[0]
            self.compile_error = "torch.compile failed: " + first_line[:200]
            return
        self.step, self.compiled = step, True

    def _capture(self) -> None:
        """Record one Decode step. Warm-up runs on a side stream first, as CUDA graphs require;
        a model whose forward cannot be captured (a host sync inside) stays static, and says why."""
        if self.device.type != "cuda":
            self.capture_error = "CUDA graphs need a CUDA device"
            return
        stream = torch.cuda.Stream(self.device)
        stream.wait_stream(torch.cuda.current_stream(self.device))
        try:
            with torch.cuda.stream(stream):
                for i in range(WARMUP_STEPS):
                    self.step(self.ids, self.pos.fill_(1 + i))
            torch.cuda.current_stream(self.device).wait_stream(stream)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                self.logits = self.step(self.ids, self.pos)
            self.graph = graph
        except RuntimeError as err:  # e.g. "operation not permitted when stream is capturing"
            self.graph, self.logits = None, None
            self.capture_error = str(err).splitlines()[0][:200]
            torch.cuda.synchronize(self.device)


@dataclass
class RunnerPool:
    """Free static runners per (cache length, mode). A request takes one and gives it back when done;
    an eager runner is made for its request and dropped after (a growing cache is cheap to start)."""

    free: dict[tuple[int, str], list[StaticRunner]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def acquire(self, model, max_len: int, mode: str, kernels, cache=None) -> Runner:
        """`cache`: eager only, the growing cache to start from (a kept prefix's copy)."""
        if mode == "eager":
            return EagerRunner(model, kernels, cache)
        with self.lock:
            runners = self.free.get((max_len, mode))
            if runners:
                return runners.pop()
        return StaticRunner(model, max_len, mode=mode, kernels=kernels)

    def release(self, runner: Runner, mode: str) -> None:
        if mode == "eager":
            return
        runner.reset()
        with self.lock:
            self.free.setdefault((runner.max_len, mode), []).append(runner)

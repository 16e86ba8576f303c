"""Decode without launch overhead: a preallocated ("static") KV cache, and on CUDA
the Decode step captured once as a CUDA graph and replayed.

Why: in eager mode every Decode step is hundreds of small kernel launches issued
one by one from Python (measured on an H200 with the Llama-3.1-8B shape: 1493
launches, 18.2 ms a step against a 3.14 ms memory floor). A Decode step has the
same shapes every time once the cache is preallocated to a fixed length, so the
whole step can be recorded once and replayed with a single launch: what is left
is the time the GPU needs to read the weights and the cache.

    eager     DynamicCache, grows by one position per pass (the lesson's default)
    static    StaticCache of a fixed length, same kernels launched one by one
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

A runner serves one request at a time; a `RunnerPool` keeps one per cache length
(rounded up to a bucket so a captured graph is reused) and hands each request its
own, so two visitors never share a cache.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import torch

from .trace import ENGINE_MODES as MODES  # defined beside the trace, torch-free, for the CLI

BUCKET = 256  # cache lengths are rounded up to this, so one capture serves many requests
WARMUP_STEPS = 3  # eager decode steps on a side stream before capture (CUDA's recommendation)


def bucket_length(needed: int, max_positions: int) -> int:
    """The cache length a request of `needed` positions gets: the next multiple of BUCKET, within the model's context."""
    return min(max(BUCKET, -(-needed // BUCKET) * BUCKET), max_positions)


class StaticRunner:
    """One preallocated cache plus fixed input buffers; Decode replays a CUDA graph when captured."""

    def __init__(self, model: torch.nn.Module, max_len: int, mode: str, kernels) -> None:
        from transformers import StaticCache

        from .generation import _accepts, _cache_keyword

        self.model, self.max_len, self.kernels = model, max_len, kernels
        self.device = next(model.parameters()).device
        self.cache = StaticCache(config=model.config, max_cache_len=max_len)
        self._cache_kw = _cache_keyword(type(model))
        self._logits_to_keep = _accepts(type(model), "logits_to_keep")
        self._cache_position = _accepts(type(model), "cache_position")  # older transformers write by position
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
        kwargs = {self._cache_kw: self.cache, "use_cache": True, "position_ids": positions}
        if self._cache_position:
            kwargs["cache_position"] = positions[0]
        if self._logits_to_keep:
            kwargs["logits_to_keep"] = 1
        return self.model(input_ids=input_ids, **kwargs).logits

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
            self.compile_error = "torch.compile failed: " + (str(err).strip().splitlines() or [type(err).__name__])[0][:200]
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
    """Free runners per (cache length, mode). A request takes one and gives it back when done."""

    free: dict[tuple[int, str], list[StaticRunner]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def acquire(self, model, max_len: int, mode: str, kernels) -> StaticRunner:
        with self.lock:
            runners = self.free.get((max_len, mode))
            if runners:
                return runners.pop()
        return StaticRunner(model, max_len, mode=mode, kernels=kernels)

    def release(self, runner: StaticRunner, mode: str) -> None:
        runner.reset()
        with self.lock:
            self.free.setdefault((runner.max_len, mode), []).append(runner)

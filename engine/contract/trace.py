"""The trace: what really happened during one request, as plain frozen values.

This module is the contract between the engine and everything that draws or
measures. It holds no tensors and imports no torch, so a trace can be saved as
JSON, loaded on a machine without a model, and drawn by `lesson/`.

Shape of a trace:

    RequestTrace                      one request (prompt -> answer)
      model: ModelInfo                which model, its shape, dtype and device
      prompt_ids / prompt_pieces      the real tokenizer split of the prompt
      output_ids / output_pieces      the answer, token by token
      steps: tuple[Step, ...]         one record per forward pass
        Step(phase="prefill")         all prompt positions in one pass -> token 1
        Step(phase="decode") x N      one new position per pass -> token 2, 3, ...
        Step(phase="verify")          speculative decoding: the last token + k drafts in one pass ->
                                      the drafts the model agrees with, and one token of its own
      provenance: Provenance | None   where and when it was measured (machine, device, versions, date)

Times are milliseconds relative to the request's start (before tokenization),
so TTFT includes tokenization, as a user would feel it.

Metrics follow vLLM's serving benchmark:
    TTFT = time of the first output token - request start
    ITL  = gaps between consecutive output tokens (one per pass that delivered tokens, see below)
    TPOT = (E2EL - TTFT) / (output tokens - 1), when there is more than one
    E2EL = time of the last output token - request start
For one request without speculative decoding the mean ITL equals TPOT (the gaps add up to
E2EL - TTFT), so what ITL adds is its spread: p50 / p90 / p99 / max (see `percentile`).

Several tokens in one pass (a verify pass keeps its accepted drafts and a bonus token): they all
arrive when the pass ends, and each token's time is that pass's end. TPOT still divides by every
token; ITL has one gap per pass that delivered tokens, as vLLM's serving benchmark records one gap
per streamed chunk (and its engine one inter-token latency per iteration). So with speculative
decoding TPOT falls below the mean ITL: a pass costs about one Decode step and brings several tokens.

What a token's wait is made of (`RequestTrace.latency_parts`): the forward pass
itself (`Step.duration_ms`), time the caller of the stream held the loop before
the pass (`Step.consumer_ms`: the app drawing the page), time spent waiting for
the model lock while another request's pass ran (`Step.lock_wait_ms`), and the
rest (tokenizing, the engine's own bookkeeping). The metrics are taken from when
each token was known on the host, so they include all four parts, as the user
of this page felt them; the parts say how much of each wait was which.

A RequestTrace is one request run alone. Batching and chunked prefill, where one
forward pass carries several requests or part of a prompt, are the serving engine's
(engine/contract/serving/trace.py: an Iteration's BatchEntry); every Step still names
its `request_id` and the positions it processed (`context_before` .. `context_after`)
instead of assuming them, as a BatchEntry does.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engine.contract import codec
from engine.contract.codec import TraceFormatError
from engine.contract.limits import MAX_NEW_TOKENS as MAX_TRACE_STEPS
from engine.contract.weights import GROUP_SIZES, WEIGHT_FORMATS

SCHEMA_VERSION = 2
ENGINE_MODES = ("eager", "static", "graph", "compiled")  # engine/runtime/runners.py explains each
# Version 1 traces had no lock_wait_ms / consumer_ms per step; they load with both
# at 0.0 (not recorded) and are upgraded to the current version.
READABLE_SCHEMA_VERSIONS = (1, 2)
PHASES = ("prefill", "decode", "verify")  # verify: speculative decoding's check of k drafted tokens
# Said wherever a trace of a preset (ModelInfo.random_weights) is shown.
RANDOM_WEIGHTS_NOTE = "random weights: times are real, tokens are meaningless"


# Longest text a provenance field may hold: a file from elsewhere cannot fill a caption with a page of text.
PROVENANCE_TEXT_LIMIT = 120


@dataclass(frozen=True)
class Provenance:
    """Where and when a run was measured, so a run drawn on another machine says whose numbers they are.

    Filled by the engine for every run it measures (engine/runtime/provenance.py: `this_machine`); None on a run
    written before this field existed, or measured from outside the engine. No host name, user or path:
    only what explains the times (the processor, the accelerator, the software that ran the model).
    """

    cpu: str  # the processor's model name, e.g. "AMD EPYC 7B13"; "" when the system does not say
    num_cores: int  # logical CPU cores of the machine
    device: str  # where the model ran: "cpu", "cuda", "mps"
    gpu: str  # the accelerator's name (e.g. "NVIDIA H200") when device is a GPU, else ""
    torch_version: str
    transformers_version: str
    recorded_at: str  # UTC, ISO 8601 to the second: "2025-06-01T14:03:12Z"

    def __post_init__(self) -> None:
        for name in ("cpu", "device", "gpu", "torch_version", "transformers_version", "recorded_at"):
            value = getattr(self, name)
            if not isinstance(value, str) or len(value) > PROVENANCE_TEXT_LIMIT:
                raise TraceFormatError(f"provenance {name} must be text of at most {PROVENANCE_TEXT_LIMIT} characters")
        if isinstance(self.num_cores, bool) or not isinstance(self.num_cores, int) or not 0 <= self.num_cores < 1 << 20:
            raise TraceFormatError(f"provenance num_cores must be a whole number, got {self.num_cores!r}")

    @property
    def machine(self) -> str:
        """The machine in words, without a host name: "NVIDIA H200, AMD EPYC 7B13 (16 cores)"."""
        cpu = f"{self.cpu or 'CPU'} ({self.num_cores} cores)" if self.num_cores else (self.cpu or "CPU")
        return f"{self.gpu}, {cpu}" if self.gpu else cpu


@dataclass(frozen=True)
class ModelInfo:
    """The model a trace was recorded on: enough to explain its KV cache size."""

    model_id: str  # "default" for the embedded model, "preset:NAME", else the folder name
    architecture: str  # e.g. "LlamaForCausalLM"
    num_layers: int
    num_heads: int  # query heads
    num_kv_heads: int  # key/value heads (fewer than num_heads under GQA)
    head_dim: int
    hidden_size: int
    vocab_size: int
    max_positions: int  # longest context the model accepts
    num_params: int
    dtype: str  # "float32", "bfloat16", ...
    bytes_per_element: int  # of the KV cache tensors
    device: str  # "cpu", "cuda", "mps"
    # Layers with a sliding window keep only the most recent positions' K and V
    # (Mistral; Gemma's local layers), so their cache stops growing and the
    # measured bytes fall below the formula. Recorded so a figure can say why.
    # Defaults keep traces written before these fields loadable.
    sliding_window: int | None = None  # positions such a layer attends to; None: no layer uses one
    num_sliding_layers: int = 0  # how many of num_layers use that window
    # A real-size shape filled with random numbers (engine/runtime/presets.py, model_id "preset:NAME"):
    # its times are real, its tokens meaningless. Anything that shows this trace must say so.
    random_weights: bool = False
    # How the weights are held (engine/contract/weights.py): "fp32" / "bf16" dense, or "int8" / "int4" packed
    # weight-only; "" in a trace recorded before formats existed (dense, in `dtype`). int4's group size (0 for
    # the others), the bytes of every weight held (packed tensors, scales and zeros, and the rest: embedding,
    # norms, biases; 0 when not recorded), and the matmul kernel the Linear layers call.
    weight_format: str = ""
    weight_group_size: int = 0
    weight_bytes: int = 0
    weight_kernel: str = ""

    def __post_init__(self) -> None:
        if self.weight_format not in ("", "fp16", *WEIGHT_FORMATS):
            raise TraceFormatError(f"unknown weight_format {self.weight_format!r}")
        group_ok = self.weight_group_size in GROUP_SIZES if self.weight_format == "int4" else not self.weight_group_size
        if not group_ok or self.weight_bytes < 0:
            raise TraceFormatError(f"weight_group_size {self.weight_group_size} does not fit {self.weight_format!r}")
        if (self.sliding_window is None) != (self.num_sliding_layers == 0):
            raise TraceFormatError("sliding_window and num_sliding_layers must be set together")
        if not 0 <= self.num_sliding_layers <= self.num_layers:
            raise TraceFormatError(f"num_sliding_layers {self.num_sliding_layers} is not within 0..{self.num_layers}")

    @property
    def kv_bytes_per_token(self) -> int:
        """A full cache's bytes per position: 2 (K and V) x layers x kv_heads x head_dim x bytes per element.

        A formula from the config, not a measurement: a sliding-window model holds
        less once its window is full (compare with the steps' measured kv_bytes).
        """
        return 2 * self.num_layers * self.num_kv_heads * self.head_dim * self.bytes_per_element

    def kv_bytes_for(self, num_tokens: int) -> int:
        return self.kv_bytes_per_token * num_tokens


@dataclass(frozen=True)
class Step:
    """One forward pass of one request.

    Prefill processes every prompt position in one pass; each Decode step
    processes exactly one new position (the token chosen by the step before).

    A verify step (speculative decoding, docs/engine.md) feeds the token chosen before and k drafted
    tokens, input_ids = (that token, *draft_ids): k+1 positions in one pass, like a small Prefill over the
    cache. It keeps the first `num_accepted` drafts (the ones the model agrees with) and then writes one
    token of its own, `output_id` (the bonus token, in place of the first rejected draft or after all k),
    so it delivers `emitted_ids` = accepted drafts + output_id. `context_after` counts the positions the
    pass computed; the rejected drafts' K and V are then dropped, so the cache keeps `context_kept`
    positions (the next step starts there) and `kv_bytes` is measured after that rollback.
    """

    index: int  # 0 for Prefill, then 1, 2, ...
    phase: str  # "prefill" or "decode"
    request_id: str
    input_ids: tuple[int, ...]  # the tokens fed into this pass
    input_pieces: tuple[str, ...]
    output_id: int  # the token this pass chose
    output_piece: str
    context_before: int  # positions already in the KV cache before the pass
    context_after: int  # positions in the KV cache after it
    kv_bytes: int  # measured from the cache tensors after the pass
    kv_bytes_per_layer: tuple[int, ...]
    start_ms: float  # relative to the request's start
    end_ms: float  # when the output token was known on the host
    lock_wait_ms: float = 0.0  # waited for the model lock (another request's pass) just before this pass
    consumer_ms: float = 0.0  # the stream's caller held the loop before this pass (the app drawing); 0 for Prefill
    attention_kernel: str = ""  # the SDPA kernel this pass ran ("flash", "efficient", "math"); "" if unknown
    # Speculative decoding (phase "verify" only; empty on every other step):
    draft_ids: tuple[int, ...] = ()  # the drafter's k guesses, fed after input_ids[0]
    drafter: str = ""  # who guessed them: "ngram" (prompt lookup, engine/contract/speculative.py)
    num_accepted: int = 0  # how many of draft_ids (from the first) the model agreed with
    draft_ms: float = 0.0  # the drafter's own time before this pass (its wait lands in this token's ITL)

    def __post_init__(self) -> None:
        if self.phase not in PHASES:
            raise TraceFormatError(f"unknown phase {self.phase!r}; expected one of {PHASES}")
        if self.context_after - self.context_before != len(self.input_ids):
            raise TraceFormatError("a step's new positions must equal its input tokens")
        verify = self.phase == "verify"
        if verify != bool(self.draft_ids) or (verify and tuple(self.input_ids[1:]) != tuple(self.draft_ids)):
            raise TraceFormatError("a verify step feeds one token and then its drafts; no other step has drafts")
        if not 0 <= self.num_accepted <= len(self.draft_ids):
            raise TraceFormatError(f"{self.num_accepted} accepted of {len(self.draft_ids)} drafts")

    @property
    def emitted_ids(self) -> tuple[int, ...]:
        """The answer's tokens this pass delivered: its accepted drafts, then its own token."""
        return tuple(self.draft_ids[:self.num_accepted]) + (self.output_id,)

    @property
    def emitted_pieces(self) -> tuple[str, ...]:
        return tuple(self.input_pieces[1:1 + self.num_accepted]) + (self.output_piece,)

    @property
    def rejected_ids(self) -> tuple[int, ...]:
        """The drafts after the first disagreement: computed, then dropped from the cache."""
        return tuple(self.draft_ids[self.num_accepted:])

    @property
    def context_kept(self) -> int:
        """Positions the cache holds after the pass: all it computed, but a verify pass's rejected drafts."""
        return self.context_after - len(self.rejected_ids)

    @property
    def num_positions(self) -> int:
        """How many new positions this pass computed (Q, K and V for each)."""
        return self.context_after - self.context_before

    @property
    def positions(self) -> range:
        """The indices of the positions this pass computed."""
        return range(self.context_before, self.context_after)

    @property
    def duration_ms(self) -> float:
        return self.end_ms - self.start_ms


class StepsSoFar(Sequence):
    """The first `length` steps of a stream's append-only step list: a read-only tuple stand-in.

    `stream_trace` yields a trace after every pass. Copying all earlier steps into
    a new tuple each time would cost 1 + 2 + ... + n copies (quadratic in the
    answer's length); instead every partial trace holds one of these views onto
    the single list the stream appends to. A view's length is fixed when it is
    made and the list only grows past it, so what a view shows never changes.
    It compares equal to the tuple of the same steps, slices to tuples, and
    pickles / deep-copies as a plain tuple. The finished trace holds a real tuple.
    """

    __slots__ = ("_items", "_length")

    def __init__(self, items: list[Step], length: int | None = None) -> None:
        self._items = items
        self._length = len(items) if length is None else length
        if not 0 <= self._length <= len(items):
            raise ValueError(f"a view of {self._length} steps over a list of {len(items)}")

    def __len__(self) -> int:
        return self._length

    def __getitem__(self, index):
        if isinstance(index, slice):
            return tuple(self._items[i] for i in range(*index.indices(self._length)))
        if index < 0:
            index += self._length
        if not 0 <= index < self._length:
            raise IndexError("step index out of range")
        return self._items[index]

    def __iter__(self) -> Iterator[Step]:
        return itertools.islice(self._items, self._length)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, (tuple, StepsSoFar)):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other))

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __add__(self, other: tuple) -> tuple:
        return tuple(self) + tuple(other)

    def __reduce__(self):
        return tuple, (tuple(self),)

    def __repr__(self) -> str:
        return f"StepsSoFar({len(self)} steps)"


# Why the lesson engine's Prefill computed more of the prompt than the shortest possible (its last
# position, which yields the first token): PrefixReuse.miss. The serving engine's reasons, per block,
# are engine/contract/serving/prefix.py's MISS_REASONS; these are per token.
PREFIX_MISSES = (
    "too_short",  # a one-token prompt: its only position is the last one, always computed
    "first_seen",  # no kept run starts with this prompt's first token (or, after `num_cached_tokens`, runs on)
    "diverged",  # a kept run matches the first `diverged_at` tokens, then holds another token there
    "evicted",  # a run that matched further was kept, and evicted to make room
    "mode",  # a static engine mode preallocates its cache per request: reuse runs in eager mode only
    "sliding_window",  # the model's sliding-window layers drop old positions: nothing whole to keep
)
PREFIX_SCOPE_CHARS = 64  # longest scope name (GenerationConfig.prefix_scope)


class CachedShare:
    """What a prefix-cache look-up's two counts give (the lesson's PrefixReuse, the serving engine's
    PrefixLookup): the tokens computed, and the share read from the cache."""

    num_tokens: int
    num_cached_tokens: int

    @property
    def num_computed_tokens(self) -> int:
        return self.num_tokens - self.num_cached_tokens

    @property
    def hit_rate(self) -> float:
        return self.num_cached_tokens / self.num_tokens if self.num_tokens else 0.0


@dataclass(frozen=True)
class PrefixReuse(CachedShare):
    """The lesson engine's prefix cache on one run (GenerationConfig.prefix_cache): how many prompt
    positions were read from a kept earlier run's KV cache instead of computed, and for the rest, why.

    Token by token (as SGLang's radix cache), not in blocks as the serving engine (vLLM's automatic
    prefix caching): the K and V of position i depend only on tokens 0..i, so an earlier run whose
    tokens (its prompt and its answer) begin the same way holds them already. The last prompt position
    is always computed: it yields the first output token. Prefill then processes positions
    num_cached_tokens..prompt_len-1 (its Step's context_before is num_cached_tokens).
    """

    num_tokens: int  # prompt tokens looked up
    num_cached_tokens: int  # read from the kept run, never the last one
    miss: str = ""  # "" when every position but the last was read; else one of PREFIX_MISSES
    diverged_at: int | None = None  # diverged: the first position where the kept run holds another token
    token_piece: str = ""  # diverged: this prompt's token there
    cached_piece: str = ""  # diverged: the kept run's token there
    source_started_at_s: float | None = None  # the kept run read from (or, evicted, the one lost): its start
    evicted_at_s: float | None = None  # evicted: when (time.time() seconds)
    lookup_ms: float = 0.0  # measured: finding the kept run and copying its first positions' K and V
    kept_runs: int = 0  # runs this visitor's cache held at the look-up

    def __post_init__(self) -> None:
        for name in ("num_tokens", "num_cached_tokens", "kept_runs"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise TraceFormatError(f"prefix {name} must be a whole number >= 0, got {str(value)[:40]}")
        if self.num_cached_tokens >= max(1, self.num_tokens):
            raise TraceFormatError(f"{self.num_cached_tokens} cached tokens of {self.num_tokens}: the last "
                                   "prompt position is always computed")
        if self.miss and self.miss not in PREFIX_MISSES:
            raise TraceFormatError(f"unknown prefix miss {self.miss[:20]!r}; expected one of {PREFIX_MISSES}")
        if (self.miss == "diverged") != (self.diverged_at is not None):
            raise TraceFormatError("diverged_at is set exactly when the miss is 'diverged'")
        if self.diverged_at is not None and self.diverged_at != self.num_cached_tokens:
            raise TraceFormatError("a diverged prompt reuses exactly the positions before it diverged")
        for name in ("token_piece", "cached_piece"):
            if not isinstance(getattr(self, name), str) or len(getattr(self, name)) > PROVENANCE_TEXT_LIMIT:
                raise TraceFormatError(f"prefix {name} must be text of at most {PROVENANCE_TEXT_LIMIT} characters")
        for name in ("source_started_at_s", "evicted_at_s", "lookup_ms"):
            _optional_number(getattr(self, name))


@dataclass(frozen=True)
class Sampling:
    """How the next token was chosen. temperature 0 means greedy (argmax)."""

    temperature: float = 0.0
    top_k: int = 0  # 0: no top-k filter
    top_p: float = 1.0  # 1.0: no nucleus filter
    seed: int = 0

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0


def attention_kernels(steps: Sequence[Step]) -> tuple[str, ...]:
    """The attention kernels these steps ran, each once, in order (steps that recorded none are skipped)."""
    return tuple(dict.fromkeys(s.attention_kernel for s in steps if s.attention_kernel))


def percentile(values: Sequence[float], p: float) -> float:
    """The p-th percentile (0 <= p <= 100) of `values`, by the call vLLM's serving benchmark makes:
    numpy.percentile's default, the fractional rank r = (n - 1) * p / 100 of the sorted values,
    interpolated linearly between ranks floor(r) and ceil(r). So p0 is the smallest value, p100 the
    largest, p50 the median; with few values, p99 lies just below the largest.
    """
    if not values:
        raise ValueError("the percentile of no values is undefined")
    if not 0 <= p <= 100:
        raise ValueError(f"a percentile is between 0 and 100, got {p}")
    return float(np.percentile(values, p))


@dataclass(frozen=True)
class Metrics:
    """The waits a user feels, in milliseconds (see module docstring).

    Taken from when each token was known on the host, so every wait includes
    whatever ran between passes: on the app's page that is the page's own drawing
    (Step.consumer_ms) and any wait for the model lock (Step.lock_wait_ms).
    `RequestTrace.latency_parts` splits each wait into those parts.
    """

    ttft_ms: float
    tpot_ms: float | None  # None when only one token came out
    itl_ms: tuple[float, ...]
    e2el_ms: float

    @property
    def mean_itl_ms(self) -> float | None:
        """Equal to TPOT for one request with one token per pass; the percentiles below are what ITL adds."""
        return sum(self.itl_ms) / len(self.itl_ms) if self.itl_ms else None

    def itl_percentile_ms(self, p: float) -> float | None:
        return percentile(self.itl_ms, p) if self.itl_ms else None

    @property
    def p50_itl_ms(self) -> float | None:
        return self.itl_percentile_ms(50)

    @property
    def p90_itl_ms(self) -> float | None:
        return self.itl_percentile_ms(90)

    @property
    def p99_itl_ms(self) -> float | None:
        return self.itl_percentile_ms(99)

    @property
    def max_itl_ms(self) -> float | None:
        return max(self.itl_ms) if self.itl_ms else None

    def spread(self) -> dict[str, float | None]:
        """ITL p50 / p90 / p99 / max (ms), for tables and JSON."""
        return {"p50_itl_ms": self.p50_itl_ms, "p90_itl_ms": self.p90_itl_ms,
                "p99_itl_ms": self.p99_itl_ms, "max_itl_ms": self.max_itl_ms}


@dataclass(frozen=True)
class LatencyParts:
    """What one token's wait was made of (ms). The parts add up to the wait:
    TTFT for the first token, that token's ITL for every later one."""

    step_index: int
    pass_ms: float  # the forward pass itself (Step.duration_ms)
    consumer_ms: float  # the stream's caller held the loop (the app drawing the page)
    lock_wait_ms: float  # queued for the model lock behind another request's pass
    other_ms: float  # the rest: tokenizing (first token), the engine's own bookkeeping

    @property
    def total_ms(self) -> float:
        return self.pass_ms + self.consumer_ms + self.lock_wait_ms + self.other_ms


def compute_metrics(token_times_ms: tuple[float, ...] | list[float],
                    arrivals_ms: tuple[float, ...] | list[float] | None = None) -> Metrics:
    """Metrics from the times (ms since request start) each output token appeared.

    `arrivals_ms`: when tokens arrived, once per arrival (one pass's end, however many tokens it brought);
    ITL is the gaps between arrivals (vLLM's rule, see the module docstring). None: one token per arrival.
    """
    if not token_times_ms:
        raise ValueError("a request with no output token has no latency metrics")
    ttft, e2el = token_times_ms[0], token_times_ms[-1]
    arrivals = token_times_ms if arrivals_ms is None else arrivals_ms
    itl = tuple(b - a for a, b in zip(arrivals, arrivals[1:]))
    n = len(token_times_ms)
    tpot = (e2el - ttft) / (n - 1) if n > 1 else None
    return Metrics(ttft_ms=ttft, tpot_ms=tpot, itl_ms=itl, e2el_ms=e2el)


@dataclass(frozen=True)
class RequestTrace:
    """Everything one request did, step by step. Built by `engine.runtime.generation.generate`."""

    request_id: str
    model: ModelInfo
    prompt: str
    prompt_ids: tuple[int, ...]
    prompt_pieces: tuple[str, ...]
    sampling: Sampling
    max_new_tokens: int
    steps: tuple[Step, ...] = ()  # while streaming: a StepsSoFar view that behaves like this tuple
    tokenize_ms: float = 0.0  # time spent turning the prompt into ids
    stop_reason: str | None = None  # None while running, then "eos" or "length"
    output_text: str = ""
    schema_version: int = field(default=SCHEMA_VERSION)
    # "eager" (a growing cache), "static" (preallocated), "graph" (static + a replayed CUDA graph for
    # Decode) or "compiled" (static + torch.compile; captured on CUDA): engine/runtime/runners.py. Written after
    # the fields above so older traces load as "eager".
    engine_mode: str = "eager"
    engine_note: str = ""  # why the mode asked for did not fully run (a failed capture or compile), else ""
    # Building the static runner this request ran on (allocate the cache, torch.compile, capture), once per
    # cache bucket before the first pass; left out of every time above (TTFT starts after it). 0 when eager
    # or when a built runner was free.
    engine_setup_ms: float = 0.0
    provenance: Provenance | None = None  # where and when it was measured; None in older traces
    # The lesson's TTFT, part by part (docs/engine.md): choosing the first token from Prefill's logits
    # (sampling or argmax, with the wait for the device), a part of the Prefill step's duration_ms, and
    # the request's start on the wall clock (time.time() seconds at the moment every *_ms above counts
    # from), so a client on the same machine can place its own times (queue, transmission) beside the
    # engine's. None in traces written before these fields, and where nothing measured them.
    first_token_choice_ms: float | None = None
    started_at_s: float | None = None
    # The lesson engine's prefix cache (PrefixReuse): None when it was off for this run (the default, and
    # every trace written before it existed). When set, Prefill computed only positions
    # prefix.num_cached_tokens.. of the prompt; the ones before came from a kept earlier run.
    prefix: PrefixReuse | None = None

    def __post_init__(self) -> None:
        first = self.steps[0] if len(self.steps) else None
        cached = self.prefix.num_cached_tokens if self.prefix is not None else 0
        if first is not None and first.phase == "prefill" and first.context_before != cached:
            raise TraceFormatError(f"Prefill starts at position {first.context_before}, but {cached} positions "
                                   "came from the prefix cache")
        if self.prefix is not None and self.prefix.num_tokens != len(self.prompt_ids):
            raise TraceFormatError("the prefix look-up covers the whole prompt")
        for name in ("first_token_choice_ms", "started_at_s"):
            _optional_number(getattr(self, name))

    # --- derived views (never stored twice) ---
    @property
    def finished(self) -> bool:
        return self.stop_reason is not None

    @property
    def prompt_len(self) -> int:
        return len(self.prompt_ids)

    @property
    def output_ids(self) -> tuple[int, ...]:
        """The answer: every step's delivered tokens (one each, several for a verify step)."""
        return tuple(token for s in self.steps for token in s.emitted_ids)

    @property
    def output_pieces(self) -> tuple[str, ...]:
        return tuple(piece for s in self.steps for piece in s.emitted_pieces)

    @property
    def prefill(self) -> Step | None:
        return next((s for s in self.steps if s.phase == "prefill"), None)

    @property
    def decode_steps(self) -> tuple[Step, ...]:
        return tuple(s for s in self.steps if s.phase == "decode")

    @property
    def verify_steps(self) -> tuple[Step, ...]:
        return tuple(s for s in self.steps if s.phase == "verify")

    @property
    def tokens_per_pass(self) -> float | None:
        """Tokens delivered per target pass after Prefill (1.0 without speculative decoding); None if none ran."""
        later = self.steps[1:]
        return sum(len(s.emitted_ids) for s in later) / len(later) if later else None

    @property
    def token_times_ms(self) -> tuple[float, ...]:
        """When each output token was known: its pass's end (the tokens of one verify pass share it)."""
        return tuple(s.end_ms for s in self.steps for _ in s.emitted_ids)

    @property
    def metrics(self) -> Metrics | None:
        return compute_metrics(self.token_times_ms, tuple(s.end_ms for s in self.steps)) if self.steps else None

    @property
    def kv_bytes(self) -> int:
        return self.steps[-1].kv_bytes if self.steps else 0

    def latency_parts(self) -> tuple[LatencyParts, ...]:
        """Each token's wait split into its parts (see LatencyParts), one per step.

        The wait before a pass starts at the previous token (request start for
        Prefill); what the consumer and the lock wait do not explain is `other_ms`.
        """
        parts, previous_end = [], 0.0
        for step in self.steps:
            before = step.start_ms - previous_end
            other = max(before - step.consumer_ms - step.lock_wait_ms, 0.0)
            parts.append(LatencyParts(step.index, step.duration_ms, step.consumer_ms, step.lock_wait_ms, other))
            previous_end = step.end_ms
        return tuple(parts)

    # --- JSON in and out (engine.contract.codec) ---
    def to_dict(self) -> dict[str, Any]:
        """The trace's fields as plain values, with its derived values written for readers of the JSON (and
        spreadsheet users) and ignored on load: the steps are the single source of truth."""
        plain = self if isinstance(self.steps, tuple) else dataclasses.replace(self, steps=tuple(self.steps))
        data = codec.to_plain(plain)
        metrics = self.metrics
        data[codec.DERIVED] = {
            "output_ids": list(self.output_ids),
            "output_pieces": list(self.output_pieces),
            "metrics": {**codec.to_plain(metrics), **metrics.spread()} if metrics else None,
            "kv_bytes_per_token": self.model.kv_bytes_per_token,
        }
        return data

    def to_json(self, indent: int | None = 2) -> str:
        return codec.encode(self, indent)

    @staticmethod
    def upgrade(data: Any) -> Any:
        """A trace's parsed JSON before it is built (engine.contract.codec): a version this build reads, upgraded
        to this one (version 1 had no lock_wait_ms / consumer_ms: their defaults, 0.0, say not recorded); its
        steps a list within the engine's cap, counted before one Step is built."""
        if not isinstance(data, dict):
            raise TraceFormatError("a trace is a JSON object")
        version = data.get("schema_version")
        if version not in READABLE_SCHEMA_VERSIONS or isinstance(version, bool):
            raise TraceFormatError(f"trace schema_version {version!r}; this build reads {READABLE_SCHEMA_VERSIONS}")
        steps = data.get("steps")
        if isinstance(steps, list) and len(steps) > MAX_TRACE_STEPS:
            raise TraceFormatError(f"the trace has {len(steps):,} steps; the engine writes at most "
                                   f"{MAX_TRACE_STEPS:,}")
        return {**data, "schema_version": SCHEMA_VERSION} if version != SCHEMA_VERSION else data

    @classmethod
    def from_json(cls, text: str) -> RequestTrace:
        return codec.decode(text, cls)


def _optional_number(value: Any) -> float | None:
    """A finite non-negative number, or None (absent in an older trace). Anything else is refused."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise TraceFormatError(f"expected a finite non-negative number or null, got {str(value)[:40]}")
    return float(value)


STEP_TABLE_COLUMNS = (
    "step", "phase", "positions", "new_positions", "input_tokens", "output_token",
    "start_ms", "end_ms", "ms", "context_after", "kv_bytes", "lock_wait_ms", "consumer_ms", "drafts", "accepted",
)


def step_rows(trace: RequestTrace) -> list[dict[str, Any]]:
    """One flat dict per forward pass: the step table (CLI, CSV export, app)."""
    return [
        {
            "step": s.index,
            "phase": s.phase,
            "positions": f"{s.context_before}..{s.context_after - 1}",
            "new_positions": s.num_positions,
            "input_tokens": " | ".join(s.input_pieces),
            "output_token": s.output_piece,
            "start_ms": round(s.start_ms, 3),
            "end_ms": round(s.end_ms, 3),
            "ms": round(s.duration_ms, 3),
            "context_after": s.context_kept,  # the cache after the pass (a verify pass dropped its rejected drafts)
            "kv_bytes": s.kv_bytes,
            "lock_wait_ms": round(s.lock_wait_ms, 3),
            "consumer_ms": round(s.consumer_ms, 3),
            "drafts": len(s.draft_ids),  # a verify pass: the drafter's guesses (input_tokens after the first)
            "accepted": s.num_accepted,
        }
        for s in trace.steps
    ]

"""The engine's plain dataclasses that a client needs without torch.

What a request asks for (GenerationConfig) and what the lab's measurements return (CacheComparison,
DecodeAttention, DecodeOps). The modules that compute them (generation, compare, overhead) import
them from here, so `engine.runtime.generation.GenerationConfig` and `engine.contract.results.GenerationConfig` are
one class; the engine worker's client (engine/contract/worker/client.py) rebuilds them from plain JSON in a
process that never imports torch (the page's).
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.contract.errors import InputError
from engine.contract.limits import MAX_NEW_TOKENS
from engine.contract.speculative import DRAFTERS, MAX_LOOKUP_N, MAX_SPECULATIVE_TOKENS
from engine.contract.trace import ENGINE_MODES, PREFIX_SCOPE_CHARS, Sampling

PRESET_PREFIX = "preset:"  # a model choice "preset:NAME": a real-size shape, random weights (engine.runtime.presets)


@dataclass(frozen=True)
class GenerationConfig:
    """How long to write and how to choose each token (temperature 0 = greedy)."""

    max_new_tokens: int = 16
    temperature: float = 0.0
    top_k: int = 0  # keep the k most likely tokens; 0 = off
    top_p: float = 1.0  # keep the smallest set with this much probability; 1.0 = off
    seed: int = 0  # makes sampling repeat exactly
    ignore_eos: bool = False  # keep writing past EOS (benchmarks want fixed lengths)
    mode: str = "eager"  # the runner: "eager" (growing cache), "static", "graph" (CUDA), "compiled" (runners.py)
    # The prefix cache (engine/runtime/prefix_store.py, trace.PrefixReuse): keep this run's KV cache under
    # `prefix_scope` (a visitor's own name for their runs), and start its Prefill from the longest kept run
    # of that scope that begins like this prompt. Off: every Prefill computes the whole prompt.
    prefix_cache: bool = False
    prefix_scope: str = ""
    # Speculative decoding (engine/runtime/speculative.py, docs/engine.md): "" off, "ngram" prompt lookup. Each
    # pass after Prefill checks up to `num_speculative_tokens` drafted tokens at once (a verify Step); the
    # prompt lookup matches the last prompt_lookup_max..prompt_lookup_min tokens (vLLM's knobs and defaults).
    speculative: str = ""
    num_speculative_tokens: int = 4
    prompt_lookup_min: int = 1
    prompt_lookup_max: int = 4

    def __post_init__(self) -> None:
        if self.mode not in ENGINE_MODES:
            raise InputError("mode_unknown", f"mode must be one of {', '.join(ENGINE_MODES)}, got {self.mode!r}",
                             value=self.mode, choices=", ".join(ENGINE_MODES))
        if not isinstance(self.max_new_tokens, int) or not 1 <= self.max_new_tokens <= MAX_NEW_TOKENS:
            raise InputError(
                "max_new_tokens_range",
                f"max-new-tokens must be between 1 and {MAX_NEW_TOKENS}, got {self.max_new_tokens}",
                value=self.max_new_tokens, low=1, high=MAX_NEW_TOKENS,
            )
        for name, ok in (
            ("temperature", 0.0 <= self.temperature <= 10.0),
            ("top_k", isinstance(self.top_k, int) and self.top_k >= 0),
            ("top_p", 0.0 < self.top_p <= 1.0),
        ):
            if not ok:
                value = getattr(self, name)
                raise InputError("sampling_range", f"{name}={value} is out of range", name=name, value=value)

        scope = self.prefix_scope
        if not isinstance(self.prefix_cache, bool) or not isinstance(scope, str) or len(scope) > PREFIX_SCOPE_CHARS \
                or not all(c.isascii() and (c.isalnum() or c in "-_.") for c in scope):
            raise InputError("prefix_scope", f"prefix_scope must be up to {PREFIX_SCOPE_CHARS} letters, digits, "
                             f"'-', '_' or '.', got {str(scope)[:40]!r}",
                             value=str(scope)[:40])
        self._check_speculative()

    def _check_speculative(self) -> None:
        """Speculative decoding's knobs, refused in words before any pass (lesson/text/*/errors.py)."""
        if self.speculative not in ("", *DRAFTERS):
            raise InputError("speculative_unknown", f"speculative must be one of {', '.join(DRAFTERS)} (or off), "
                             f"got {str(self.speculative)[:40]!r}", value=str(self.speculative)[:40],
                             choices=", ".join(DRAFTERS))
        k = self.num_speculative_tokens
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_SPECULATIVE_TOKENS:
            raise InputError("speculative_tokens_range", f"num-speculative-tokens must be between 1 and "
                             f"{MAX_SPECULATIVE_TOKENS}, got {k}", value=k, low=1, high=MAX_SPECULATIVE_TOKENS)
        low, high = self.prompt_lookup_min, self.prompt_lookup_max
        if any(isinstance(n, bool) or not isinstance(n, int) for n in (low, high)) \
                or not 1 <= low <= high <= MAX_LOOKUP_N:
            raise InputError("prompt_lookup_range", f"prompt lookup needs 1 <= min <= max <= {MAX_LOOKUP_N}, "
                             f"got min {low}, max {high}", low=low, high=high, limit=MAX_LOOKUP_N)
        if self.speculative and self.mode != "eager":
            # the static modes preallocate one position per Decode step (and capture exactly that shape);
            # a verify pass feeds k+1 positions and then drops some: only the growing cache does both
            raise InputError("speculative_mode", f"speculative decoding runs in eager mode only, not {self.mode}",
                             mode=self.mode)

    @property
    def sampling(self) -> Sampling:
        return Sampling(temperature=self.temperature, top_k=self.top_k, top_p=self.top_p, seed=self.seed)


@dataclass(frozen=True)
class CacheComparison:
    """Per-step times (ms) and FLOPs of one greedy answer, cache off and on.

    Index t is the pass that chose output token t: pass 0 is the Prefill (the same
    work with or without a cache), pass t > 0 a Decode step.
    """

    prompt_len: int
    output_ids: tuple[int, ...]
    off_ms: tuple[float, ...]       # cache off: pass t recomputes prompt_len + t positions
    on_ms: tuple[float, ...]        # cache on: Prefill, then one position per pass
    off_flops: tuple[float, ...]
    on_flops: tuple[float, ...]
    off_positions: tuple[int, ...]  # positions computed in each pass
    on_positions: tuple[int, ...]

    @property
    def num_steps(self) -> int:
        return len(self.output_ids)

    @property
    def off_total_ms(self) -> float:
        return sum(self.off_ms)

    @property
    def on_total_ms(self) -> float:
        return sum(self.on_ms)

    @property
    def off_total_flops(self) -> float:
        return sum(self.off_flops)

    @property
    def on_total_flops(self) -> float:
        return sum(self.on_flops)


@dataclass(frozen=True)
class DecodeAttention:
    """The new position's attention in Decode step `decode_index` (D1 = the first Decode).

    Over positions 0 .. context: the `context` positions before it, then the new one itself.
    `per_head[layer][head][position]`, `mean[layer][position]` (mean over query heads).
    """

    decode_index: int
    context: int                    # cached positions the new query reads
    token_ids: tuple[int, ...]      # the context + 1 tokens at those positions (the last is the new input)
    pieces: tuple[str, ...]         # their readable text (raw: renderers escape it)
    per_head: tuple[tuple[tuple[float, ...], ...], ...]
    mean: tuple[tuple[float, ...], ...]
    num_read: tuple[int, ...] = ()  # per layer: positions its cache held, plus the new one (< context + 1
                                    # for a sliding window, whose dropped positions are 0 in the rows)

    @property
    def num_layers(self) -> int:
        return len(self.per_head)


@dataclass(frozen=True)
class DecodeOps:
    """The operator calls of one eager Decode step, counted as PyTorch dispatched them."""

    calls: int  # every call, views included
    kernels: int  # calls that run a kernel: views and calls that hand back their input unchanged are free
    top: tuple[tuple[str, int], ...]  # the most frequent calls that run a kernel, e.g. ("mul", 41)
    layers: int  # the model's layers, so a page can say "about N per layer"

    @property
    def per_layer(self) -> float:
        return self.kernels / max(1, self.layers)

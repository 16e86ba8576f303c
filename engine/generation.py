"""Prefill and Decode with an explicit KV cache, recorded step by step.

The engine knows token ids, a model and a cache; it knows nothing about drawing.

    1) prefill:      all prompt positions in ONE forward pass  -> cache, first token
    2) decode_step:  exactly ONE new position per forward pass -> cache, next token
                     (the input is the token the previous pass chose, so decode
                      steps of one request form a chain and cannot run in parallel)

The cache is an argument and a result of both functions, never hidden state.
`stream_trace` yields a growing `RequestTrace` after every pass, so an app can
draw while the model runs; `generate` collects the finished trace.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import time
from collections.abc import Iterator
from dataclasses import dataclass

import torch
from transformers import DynamicCache

from .errors import InputError, PhaseError
from .model import LoadedModel
from .prompts import prompt_token_ids
from .static import MODES, bucket_length
from .trace import RequestTrace, Sampling, Step, StepsSoFar

MAX_NEW_TOKENS = 4096  # hard engine cap; apps set lower caps of their own


@dataclass(frozen=True)
class GenerationConfig:
    """How long to write and how to choose each token (temperature 0 = greedy)."""

    max_new_tokens: int = 16
    temperature: float = 0.0
    top_k: int = 0  # keep the k most likely tokens; 0 = off
    top_p: float = 1.0  # keep the smallest set with this much probability; 1.0 = off
    seed: int = 0  # makes sampling repeat exactly
    ignore_eos: bool = False  # keep writing past EOS (benchmarks want fixed lengths)
    mode: str = "eager"  # "eager" (growing cache), "static", "graph" (CUDA), "compiled": engine/static.py

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise InputError("mode_unknown", f"mode must be one of {', '.join(MODES)}, got {self.mode!r}",
                             value=self.mode, choices=", ".join(MODES))
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

    @property
    def sampling(self) -> Sampling:
        return Sampling(temperature=self.temperature, top_k=self.top_k, top_p=self.top_p, seed=self.seed)


# ---------------------------------------------------------------------------
# The two phases
# ---------------------------------------------------------------------------

def new_cache(model) -> DynamicCache:
    """An empty KV cache for one request; it grows by one entry per position."""
    return DynamicCache(config=model.config)


def prefill(model, input_ids: torch.Tensor, cache: DynamicCache) -> tuple[torch.Tensor, DynamicCache]:
    """Process every prompt position in one pass.  input_ids: (1, S) -> logits (1, vocab).

    Only the last position's logits are kept: the first output token is
    predicted there. The other positions still matter: their K and V fill the cache.
    """
    if cache.get_seq_length() != 0:
        raise PhaseError(f"prefill starts from an empty cache; this one holds {cache.get_seq_length()} positions")
    if input_ids.dim() != 2 or input_ids.shape[-1] < 1:
        raise PhaseError(f"prefill needs input_ids of shape (1, S) with S >= 1, got {tuple(input_ids.shape)}")
    return _forward(model, input_ids, cache)


def decode_step(model, input_ids: torch.Tensor, cache: DynamicCache) -> tuple[torch.Tensor, DynamicCache]:
    """Process exactly one new position; its query reads every cached K/V.  (1, 1) -> (1, vocab)."""
    if input_ids.dim() != 2 or input_ids.shape[-1] != 1:
        raise PhaseError(f"a decode step feeds exactly one new token: shape (1, 1), got {tuple(input_ids.shape)}")
    if cache.get_seq_length() == 0:
        raise PhaseError("a decode step reads the cache that prefill filled; this cache is empty")
    return _forward(model, input_ids, cache)


def _forward(model, input_ids: torch.Tensor, cache: DynamicCache) -> tuple[torch.Tensor, DynamicCache]:
    start = cache.get_seq_length()
    num_new = input_ids.shape[-1]
    position_ids = torch.arange(start, start + num_new, device=input_ids.device).unsqueeze(0)  # (1, S)
    kwargs = {_cache_keyword(type(model)): cache, "use_cache": True, "position_ids": position_ids}
    if _accepts(type(model), "logits_to_keep"):
        kwargs["logits_to_keep"] = 1
    out = model(input_ids=input_ids, **kwargs)
    next_cache = getattr(out, "cache", None) or getattr(out, "past_key_values", None) or cache
    return out.logits[:, -1, :], next_cache  # (1, vocab)


@functools.cache
def _accepts(model_cls, name: str) -> bool:
    return name in inspect.signature(model_cls.forward).parameters


@functools.cache
def _cache_keyword(model_cls) -> str:
    """transformers >= 5.24 names the forward argument `cache` (and warns on the old name)."""
    return "cache" if _accepts(model_cls, "cache") else "past_key_values"


def kv_bytes_per_layer(cache: DynamicCache) -> tuple[int, ...]:
    """Bytes held by each layer's K and V tensors, measured from the tensors themselves."""
    sizes = []
    for layer in cache.layers:
        tensors = (getattr(layer, "keys", None), getattr(layer, "values", None))
        sizes.append(sum(t.numel() * t.element_size() for t in tensors if isinstance(t, torch.Tensor)))
    return tuple(sizes)


# ---------------------------------------------------------------------------
# Choosing the next token
# ---------------------------------------------------------------------------

def choose_token(logits: torch.Tensor, cfg: GenerationConfig, generator: torch.Generator | None) -> int:
    """Greedy argmax at temperature 0, else temperature / top-k / top-p sampling."""
    if cfg.temperature == 0.0:
        return int(logits[0].argmax())
    logits = logits[0].float().cpu() / cfg.temperature  # (vocab,) sampled on the CPU: same on any device
    if cfg.top_k:
        kth = torch.topk(logits, min(cfg.top_k, logits.numel())).values[-1]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if cfg.top_p < 1.0:
        sorted_logits, order = torch.sort(logits, descending=True)
        cumulative = torch.softmax(sorted_logits, dim=-1).cumsum(-1)
        drop = cumulative - torch.softmax(sorted_logits, dim=-1) >= cfg.top_p  # keep the first token always
        logits = logits.masked_fill(drop.scatter(0, order, drop), float("-inf"))
    return int(torch.multinomial(torch.softmax(logits, dim=-1), 1, generator=generator))


def _eos_ids(lm: LoadedModel) -> frozenset[int]:
    ids = set()
    for value in (lm.tokenizer.eos_token_id, getattr(lm.model.generation_config, "eos_token_id", None)):
        ids.update(value if isinstance(value, (list, tuple)) else [value] if value is not None else [])
    return frozenset(ids)


# ---------------------------------------------------------------------------
# The loop: 1) prefill, 2) decode until EOS or max_new_tokens
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class _Pass:
    input_ids: tuple[int, ...]
    output_id: int
    context_before: int
    context_after: int
    start: float | None  # perf_counter seconds, only when recording
    end: float | None
    kv_bytes_per_layer: tuple[int, ...]
    stop_reason: str | None  # set on the last pass
    lock_wait_s: float = 0.0  # time spent waiting to acquire the model lock before this pass
    attention_kernel: str = ""  # the SDPA kernel(s) this pass ran (engine/attention.py)
    mode: str = "eager"  # the engine mode that really ran (a failed graph capture runs "static")
    note: str = ""  # why the mode asked for did not fully run (StaticRunner.note)
    setup_s: float = 0.0  # first pass only: building this request's runner (allocate, compile, capture)


def _passes(lm: LoadedModel, prompt_ids: list[int], cfg: GenerationConfig, record: bool) -> Iterator[_Pass]:
    if cfg.mode != "eager":
        yield from _static_passes(lm, prompt_ids, cfg, record)
        return
    model, device = lm.model, lm.device
    cache = new_cache(model)
    generator = torch.Generator().manual_seed(cfg.seed) if cfg.temperature > 0 else None
    eos = frozenset() if cfg.ignore_eos else _eos_ids(lm)
    fed = list(prompt_ids)
    for i in range(cfg.max_new_tokens):
        before = cache.get_seq_length()
        asked = time.perf_counter()
        with lm.lock:  # one timed pass at a time on this model: another request's pass makes us queue here
            lock_wait_s = time.perf_counter() - asked
            with torch.inference_mode():
                start = _clock(device) if record else None
                x = torch.tensor([fed], device=device)  # (1, S) for prefill, (1, 1) for decode
                logits, cache = prefill(model, x, cache) if i == 0 else decode_step(model, x, cache)
                token = choose_token(logits, cfg, generator)  # .item(): waits for the device
                end = _clock(device) if record else None
                kv = kv_bytes_per_layer(cache) if record else ()
                kernel = lm.kernels.take()
        stop = "eos" if token in eos else "length" if i == cfg.max_new_tokens - 1 else None
        yield _Pass(tuple(fed), token, before, before + len(fed), start, end, kv, stop, lock_wait_s, kernel)
        if stop:
            return
        fed = [token]  # the chain: the next pass can only start from this token


def _static_passes(lm: LoadedModel, prompt_ids: list[int], cfg: GenerationConfig, record: bool) -> Iterator[_Pass]:
    """The same loop on a preallocated cache; Decode replays a CUDA graph in "graph" mode and runs the
    torch.compile'd step in "compiled" mode (engine/static.py)."""
    if cfg.mode == "graph" and lm.device.type != "cuda":
        raise InputError("graph_needs_cuda", f"graph mode needs a CUDA GPU; this model runs on {lm.device.type}",
                         device=lm.device.type)
    max_len = bucket_length(len(prompt_ids) + cfg.max_new_tokens, lm.info.max_positions)
    with lm.lock:  # building a runner runs the model (and may capture a graph): not inside another pass's time
        built = time.perf_counter()
        runner = lm.runners.acquire(lm.model, max_len, cfg.mode, lm.kernels)
        setup_s = time.perf_counter() - built  # about 0 when a pooled runner was free
    try:
        generator = torch.Generator().manual_seed(cfg.seed) if cfg.temperature > 0 else None
        eos = frozenset() if cfg.ignore_eos else _eos_ids(lm)
        fed, position = list(prompt_ids), 0
        for i in range(cfg.max_new_tokens):
            asked = time.perf_counter()
            with lm.lock:
                lock_wait_s = time.perf_counter() - asked
                with torch.inference_mode():
                    start = _clock(lm.device) if record else None
                    logits = runner.prefill(fed) if i == 0 else runner.decode(fed[0], position)
                    token = choose_token(logits, cfg, generator)
                    end = _clock(lm.device) if record else None
                    kv = kv_bytes_per_layer(runner.cache) if record else ()  # reserved: the whole length
                    kernel = lm.kernels.take() or runner.decode_kernel  # a replayed graph runs no Python
            before, position = position, position + len(fed)
            stop = "eos" if token in eos else "length" if i == cfg.max_new_tokens - 1 else None
            yield _Pass(tuple(fed), token, before, position, start, end, kv, stop, lock_wait_s, kernel, runner.mode,
                        runner.note, setup_s if i == 0 else 0.0)
            if stop:
                return
            fed = [token]
    finally:
        lm.runners.release(runner, cfg.mode)


def _clock(device: torch.device) -> float:
    """Host time after the device finished its queued work (CUDA runs asynchronously)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()
    return time.perf_counter()


def generate_ids(lm: LoadedModel, prompt_ids: list[int], cfg: GenerationConfig) -> list[int]:
    """The same loop with recording off: token ids only (benchmarks, warm-up)."""
    return [p.output_id for p in _passes(lm, prompt_ids, cfg, record=False)]


def generate_ids_no_cache(lm: LoadedModel, prompt_ids: list[int], cfg: GenerationConfig) -> list[int]:
    """Recompute every position at every step, no KV cache: the "before" picture.

    Same tokens as the cached loop, but step t processes prompt_len + t positions.
    """
    return [token for token, _ in no_cache_passes(lm, prompt_ids, cfg, record=False)]


def no_cache_passes(
    lm: LoadedModel, prompt_ids: list[int], cfg: GenerationConfig, record: bool,
) -> Iterator[tuple[int, float | None]]:
    """The cache-off loop, one (token, pass ms or None) per pass: pass t feeds all
    prompt_len + t positions again. Timed like `_passes`: under the model lock, after
    a device synchronize."""
    generator = torch.Generator().manual_seed(cfg.seed) if cfg.temperature > 0 else None
    eos = frozenset() if cfg.ignore_eos else _eos_ids(lm)
    ids = list(prompt_ids)
    for _ in range(cfg.max_new_tokens):
        with lm.lock, torch.inference_mode():
            start = _clock(lm.device) if record else None
            x = torch.tensor([ids], device=lm.device)  # (1, prompt_len + t): every position again
            logits = lm.model(input_ids=x, use_cache=False).logits[:, -1, :]  # (1, vocab)
            token = choose_token(logits, cfg, generator)
            ms = (_clock(lm.device) - start) * 1e3 if record else None
        yield token, ms
        if token in eos:
            return
        ids.append(token)


# ---------------------------------------------------------------------------
# Recording: token pieces, prompt checks, the trace
# ---------------------------------------------------------------------------

def token_pieces(tokenizer, ids: list[int] | tuple[int, ...]) -> tuple[str, ...]:
    """Readable text of each token on its own.

    A token that is only part of a character (a byte of a multi-byte UTF-8
    character) decodes to U+FFFD; show its raw vocabulary entry (e.g. <0xE5>)
    instead. A leading word marker (SentencePiece's U+2581, GPT-2's U+0120)
    becomes a visible leading space. An id the tokenizer does not have (a
    random-weight preset borrows a smaller tokenizer) shows as <id N>.
    """
    raw = tokenizer.convert_ids_to_tokens(list(ids))
    pieces = []
    for token_id, token in zip(ids, raw):
        if token is None:
            pieces.append(f"<id {token_id}>")
            continue
        text = tokenizer.decode([token_id])
        if "\ufffd" in text or (not text and token):
            text = str(token)
        elif token and token[0] in "\u2581\u0120" and not text.startswith(" "):
            text = " " + text
        pieces.append(text)
    return tuple(pieces)


def check_prompt_text(prompt: str) -> None:
    """Cheap checks that need no model: a prompt must have some visible text."""
    if not isinstance(prompt, str) or not prompt.strip():
        raise InputError("empty_prompt", "the prompt is empty")


def encode_prompt(lm: LoadedModel, prompt: str, cfg: GenerationConfig, max_prompt_tokens: int | None = None) -> list[int]:
    """Token ids of the prompt (with the tokenizer's special tokens), checked against the context and any cap."""
    check_prompt_text(prompt)
    ids = prompt_token_ids(lm.tokenizer, prompt)
    if not ids:
        raise InputError("empty_prompt", "the prompt has no tokens")
    limit = lm.info.max_positions - cfg.max_new_tokens
    if max_prompt_tokens is not None:
        limit = min(limit, max_prompt_tokens)
    if len(ids) > limit:
        raise InputError(
            "prompt_too_long",
            f"the prompt has {len(ids)} tokens; at most {max(limit, 0)} fit "
            f"(context {lm.info.max_positions}, {cfg.max_new_tokens} new tokens)",
            num_tokens=len(ids), limit=max(limit, 0),
        )
    return ids


def stream_trace(
    lm: LoadedModel,
    prompt: str,
    cfg: GenerationConfig = GenerationConfig(),
    *,
    request_id: str = "r0",
    max_prompt_tokens: int | None = None,
) -> Iterator[RequestTrace]:
    """Run one request and yield its trace after every forward pass.

    Each yielded trace is complete up to that pass; the last has `stop_reason`.
    Times are ms since this call started, so TTFT includes tokenization.

    Linear in the answer's length: the steps live in one list that only grows,
    and each partial trace holds a fixed-length view of it (`StepsSoFar`), so no
    step is copied per yield. The finished trace holds a plain tuple.

    The model waits while the caller works between two yields (the app drawing
    the page). That time is real, and lands in the next token's ITL; it is
    recorded in the next step's `consumer_ms` so it is never hidden inside a
    metric: pass times (`duration_ms`) exclude it, ITL includes it, and the
    figures draw it as its own slice. Likewise `lock_wait_ms` is only the time
    spent queued for the model lock, not tokenizing or building the trace.
    """
    t0 = time.perf_counter()
    prompt_ids = encode_prompt(lm, prompt, cfg, max_prompt_tokens)
    tokenize_ms = (time.perf_counter() - t0) * 1e3
    trace = RequestTrace(
        request_id=request_id, model=lm.info, prompt=prompt, prompt_ids=tuple(prompt_ids),
        prompt_pieces=token_pieces(lm.tokenizer, prompt_ids), sampling=cfg.sampling,
        max_new_tokens=cfg.max_new_tokens, tokenize_ms=tokenize_ms,
    )
    steps: list[Step] = []  # append-only: every partial trace views a prefix of it
    pieces: dict[int, str] = {}  # token id -> its piece: answers repeat tokens (。 的 the), decoding costs ~75 µs
    consumer_s = 0.0  # how long the caller held the loop after the previous yield
    for index, p in enumerate(_passes(lm, prompt_ids, cfg, record=True)):
        if p.setup_s:
            # A runner is built once per cache bucket and then pooled, as a server compiles and captures at
            # start-up: the request's clock skips it, so TTFT is the request's own, and the trace says how long.
            t0 += p.setup_s
            trace = dataclasses.replace(trace, engine_setup_ms=p.setup_s * 1e3)
        # A decode step's input is the token the step before chose: reuse its piece.
        input_pieces = steps[-1].output_piece if steps else trace.prompt_pieces
        if p.output_id not in pieces:
            pieces[p.output_id] = token_pieces(lm.tokenizer, [p.output_id])[0]
        steps.append(_to_step(p, index, request_id, t0, input_pieces, pieces[p.output_id], consumer_s))
        if index == 0 and (p.mode, p.note) != (trace.engine_mode, trace.engine_note):
            trace = dataclasses.replace(trace, engine_mode=p.mode, engine_note=p.note)
        if p.stop_reason:
            text = lm.tokenizer.decode([s.output_id for s in steps], skip_special_tokens=True)
            yield dataclasses.replace(trace, steps=tuple(steps), stop_reason=p.stop_reason, output_text=text)
            return
        partial = dataclasses.replace(trace, steps=StepsSoFar(steps))
        handed = time.perf_counter()
        yield partial
        consumer_s = time.perf_counter() - handed  # the caller's work; the next pass starts right after


def _to_step(
    p: _Pass, index: int, request_id: str, t0: float, input_pieces: str | tuple[str, ...], output_piece: str,
    consumer_s: float,
) -> Step:
    return Step(
        index=index,
        phase="prefill" if index == 0 else "decode",
        request_id=request_id,
        input_ids=p.input_ids,
        input_pieces=input_pieces if isinstance(input_pieces, tuple) else (input_pieces,),
        output_id=p.output_id,
        output_piece=output_piece,
        context_before=p.context_before,
        context_after=p.context_after,
        kv_bytes=sum(p.kv_bytes_per_layer),
        kv_bytes_per_layer=p.kv_bytes_per_layer,
        start_ms=(p.start - t0) * 1e3,
        end_ms=(p.end - t0) * 1e3,
        lock_wait_ms=p.lock_wait_s * 1e3,
        consumer_ms=consumer_s * 1e3,
        attention_kernel=p.attention_kernel,
    )


def generate(lm: LoadedModel, prompt: str, cfg: GenerationConfig = GenerationConfig(), **kwargs) -> RequestTrace:
    """Run one request to the end and return its finished trace."""
    trace = None
    for trace in stream_trace(lm, prompt, cfg, **kwargs):
        pass
    return trace

"""Prefill and Decode with an explicit KV cache, recorded step by step.

The engine knows token ids, a model and a cache; it knows nothing about drawing.

    1) prefill:      all prompt positions in ONE forward pass  -> cache, first token
    2) decode_step:  exactly ONE new position per forward pass -> cache, next token
                     (the input is the token the previous pass chose, so decode
                      steps of one request form a chain and cannot run in parallel)
       or verify:    with speculative decoding (cfg.speculative), that token plus k guessed
                     ones in one pass, keeping the guesses the model agrees with
                     (engine/runtime/speculative.py): the chain, several links per pass

The cache is an argument and a result of both functions, never hidden state.
`passes` is the one Decode loop, for every engine mode: the runner it takes
(engine/runtime/runners.py: eager, static, graph, compiled) holds the request's cache and
runs each of the two phases; the loop chooses tokens, times passes and stops.
`stream_trace` yields a growing `RequestTrace` after every pass, so an app can
draw while the model runs; `generate` collects the finished trace.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch

from engine.contract.errors import InputError, PhaseError
from engine.contract.prompts import prompt_token_ids
from engine.contract.results import GenerationConfig
from engine.contract.trace import PrefixReuse, RequestTrace, Step, StepsSoFar
from engine.runtime import hf
from engine.runtime.hf import Cache, device_clock, eos_ids
from engine.runtime.model import LoadedModel
from engine.runtime.prefix_store import Found, Tensors, unusable
from engine.runtime.provenance import this_machine
from engine.runtime.runners import Runner, bucket_length
from engine.runtime.sampling import choose_token
from engine.runtime.speculative import Draft, accept, drafter_for
from engine.runtime.untimed import untimed

# ---------------------------------------------------------------------------
# The two phases
# ---------------------------------------------------------------------------

def prefill(model, input_ids: torch.Tensor, cache: Cache) -> tuple[torch.Tensor, Cache]:
    """Process every prompt position in one pass.  input_ids: (1, S) -> logits (1, vocab).

    Only the last position's logits are kept: the first output token is
    predicted there. The other positions still matter: their K and V fill the cache.
    """
    if cache.get_seq_length() != 0:
        raise PhaseError(f"prefill starts from an empty cache; this one holds {cache.get_seq_length()} positions")
    if input_ids.dim() != 2 or input_ids.shape[-1] < 1:
        raise PhaseError(f"prefill needs input_ids of shape (1, S) with S >= 1, got {tuple(input_ids.shape)}")
    return _forward(model, input_ids, cache)


def decode_step(model, input_ids: torch.Tensor, cache: Cache) -> tuple[torch.Tensor, Cache]:
    """Process exactly one new position; its query reads every cached K/V.  (1, 1) -> (1, vocab)."""
    if input_ids.dim() != 2 or input_ids.shape[-1] != 1:
        raise PhaseError(f"a decode step feeds exactly one new token: shape (1, 1), got {tuple(input_ids.shape)}")
    if cache.get_seq_length() == 0:
        raise PhaseError("a decode step reads the cache that prefill filled; this cache is empty")
    return _forward(model, input_ids, cache)


def _forward(model, input_ids: torch.Tensor, cache: Cache) -> tuple[torch.Tensor, Cache]:
    out = hf.forward(model, input_ids, cache)  # positions after the cache's length; last position's logits only
    return out.logits[:, -1, :], hf.next_cache(out, cache)  # (1, vocab)


# ---------------------------------------------------------------------------
# The loop: 1) prefill, 2) decode until EOS or max_new_tokens
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Pass:
    """One forward pass of the Decode loop, as it ran."""

    input_ids: tuple[int, ...]  # what it fed: the whole prompt (Prefill), the token chosen before (+ drafts)
    output_id: int  # the token it chose (a verify pass: its own, after the accepted drafts)
    context_before: int  # positions in the cache before it
    context_after: int
    start: float | None  # perf_counter seconds after the device finished, only when recording
    end: float | None
    kv_bytes_per_layer: tuple[int, ...]  # () when not recording
    stop_reason: str | None  # set on the last pass: "eos" or "length"
    lock_wait_s: float = 0.0  # time spent waiting to acquire the model lock before this pass
    attention_kernel: str = ""  # the SDPA kernel(s) this pass ran (engine/runtime/attention.py)
    mode: str = "eager"  # the engine mode that really ran (a failed graph capture runs "static")
    note: str = ""  # why the mode asked for did not fully run (StaticRunner.note)
    setup_s: float = 0.0  # first pass only: building this request's runner (allocate, compile, capture)
    chosen: float | None = None  # Prefill only, when recording: the device had the logits, the choice began
    draft_ids: tuple[int, ...] = ()  # a verify pass: the drafts it checked (input_ids[1:])
    num_accepted: int = 0  # how many of them it kept
    draft_s: float = 0.0  # the drafter's time before this pass
    drafter: str = ""  # who drafted (GenerationConfig.speculative), on a verify pass

    @property
    def emitted_ids(self) -> tuple[int, ...]:
        """The answer's tokens this pass wrote: the drafts it kept, then its own."""
        return self.draft_ids[:self.num_accepted] + (self.output_id,)


@dataclass(frozen=True)
class PrefixStart:
    """Where a Prefill starts when the prefix cache holds part of its prompt (engine/runtime/prefix_store.py):
    `cache` already holds positions 0..num_cached-1, so the pass feeds only prompt_ids[num_cached:].
    `keep(ids, tensors)`, if set, takes the run's cache after its last pass (for the next run)."""

    num_cached: int
    cache: object | None
    keep: Callable[[tuple[int, ...], Tensors], None] | None = None


def passes(lm: LoadedModel, prompt_ids: list[int], cfg: GenerationConfig, record: bool,
           start: PrefixStart | None = None, draft: LoadedModel | None = None) -> Iterator[Pass]:
    """The Decode loop, for every engine mode: 1) prefill, 2) decode until EOS or max_new_tokens.

    The runner (engine/runtime/runners.py) is the mode: it owns the cache and runs each pass. `record`
    reads the device clock and the cache's bytes around every pass; off, only tokens come out. `start`:
    the prefix cache's part (eager mode only), else every prompt position is computed. `draft`: the draft model
    of cfg.speculative "draft" (a smaller model with the target's tokenizer), loaded by the caller.
    """
    cached = start.num_cached if start else 0
    runner, setup_s = _take_runner(lm, len(prompt_ids) + cfg.max_new_tokens, cfg.mode, start.cache if start else None)
    try:
        outputs: list[int] = []
        for p in _run(lm, runner, prompt_ids, cfg, record, setup_s, cached, draft):
            outputs.extend(p.emitted_ids)
            if p.stop_reason and start is not None and start.keep is not None:
                _keep(runner, tuple(prompt_ids) + tuple(outputs[:-1]), start.keep)
            yield p
    finally:
        lm.runners.release(runner, cfg.mode)


def _keep(runner: Runner, ids: tuple[int, ...], keep: Callable[[tuple[int, ...], Tensors], None]) -> None:
    """After the last pass (outside every timed pass): the cache holds the prompt and the answer but its last
    token (never fed); hand its tensors on for the next run's Prefill."""
    if runner.cache.get_seq_length() == len(ids):
        keep(ids, hf.cache_tensors(runner.cache))


def _take_runner(lm: LoadedModel, num_positions: int, mode: str, cache=None) -> tuple[Runner, float]:
    """This request's runner, and how long building it took (0 for eager, about 0 for a pooled one).
    `cache`: eager only, the growing cache to start from (a kept prefix's copy)."""
    if mode == "eager":  # a fresh growing cache: nothing to build, nothing to wait for
        return lm.runners.acquire(lm.model, num_positions, mode, lm.kernels, cache), 0.0
    if mode == "graph" and lm.device.type != "cuda":
        raise InputError("graph_needs_cuda", f"graph mode needs a CUDA GPU; this model runs on {lm.device.type}",
                         device=lm.device.type)
    max_len = bucket_length(num_positions, lm.info.max_positions)
    with lm.lock, untimed():  # building a runner runs the model (and may capture a graph): in no pass's time
        built = time.perf_counter()
        runner = lm.runners.acquire(lm.model, max_len, mode, lm.kernels)
        return runner, time.perf_counter() - built


def _run(lm: LoadedModel, runner: Runner, prompt_ids: list[int], cfg: GenerationConfig, record: bool,
         setup_s: float, cached: int = 0, draft: LoadedModel | None = None) -> Iterator[Pass]:
    device = lm.device
    generator = torch.Generator().manual_seed(cfg.seed) if cfg.temperature > 0 else None
    eos = frozenset() if cfg.ignore_eos else eos_ids(lm)
    _check_speculative(lm, cfg)
    drafter = drafter_for(lm, cfg, draft)
    fed, position = list(prompt_ids[cached:]), cached  # the positions the cache does not hold yet
    history, index = list(prompt_ids), 0  # the prompt and the answer so far: what a drafter reads
    while True:
        drafted, num_left = time.perf_counter(), cfg.max_new_tokens - (len(history) - len(prompt_ids))
        guess = drafter.propose(history, num_left, eos, generator) if index and drafter else Draft(())
        drafts, draft_s = guess.ids, time.perf_counter() - drafted if guess.ids else 0.0
        asked = time.perf_counter()
        with lm.lock:  # one timed pass at a time on this model: another request's pass makes us queue here
            lock_wait_s = time.perf_counter() - asked
            with torch.inference_mode():
                start = device_clock(device) if record else None
                chosen = None
                if drafts:
                    num_accepted, token = _verify(runner, fed, guess, cfg, generator)
                else:
                    logits = runner.prefill(fed) if index == 0 else runner.decode(fed[0], position)
                    # Prefill's logits are on the host's clock here (one synchronize per request): what follows,
                    # choosing the first token, is its own part of TTFT (RequestTrace.first_token_choice_ms)
                    chosen = device_clock(device) if record and index == 0 else None
                    num_accepted, token = 0, choose_token(logits, cfg, generator)  # .item(): waits for the device
                end = device_clock(device) if record else None
                kv = runner.kv_bytes_per_layer() if record else ()
                kernel = runner.take_kernel()
        fed = fed + list(drafts)
        before, position = position, position + len(fed) - (len(drafts) - num_accepted)
        history += [*drafts[:num_accepted], token]
        done = len(history) - len(prompt_ids) >= cfg.max_new_tokens
        stop = "eos" if token in eos else "length" if done else None
        yield Pass(input_ids=tuple(fed), output_id=token, context_before=before, context_after=before + len(fed),
                   start=start, end=end, kv_bytes_per_layer=kv, stop_reason=stop, lock_wait_s=lock_wait_s,
                   attention_kernel=kernel, mode=runner.mode, note=runner.note, setup_s=setup_s if index == 0 else 0.0,
                   chosen=chosen, draft_ids=drafts, num_accepted=num_accepted, draft_s=draft_s,
                   drafter=drafter.name if drafts else "")
        if stop:
            return
        fed, index = [token], index + 1  # the chain: the next pass can only start from this token


def _verify(runner: Runner, fed: list[int], guess: Draft, cfg: GenerationConfig,
            generator: torch.Generator | None) -> tuple[int, int]:
    """A verify pass: fed[0] and the drafts in one pass, the rejected drafts' K and V dropped before it ends
    (part of the pass: its cost is speculative decoding's). -> (drafts kept, the token chosen)."""
    num_accepted, token = accept(runner.verify(fed + list(guess.ids)), guess, cfg, generator)
    runner.drop(len(guess.ids) - num_accepted)
    return num_accepted, token


def _check_speculative(lm: LoadedModel, cfg: GenerationConfig) -> None:
    """What only the model can tell: a sliding-window layer's cache cannot take positions back."""
    if cfg.speculative and lm.info.sliding_window is not None:
        raise InputError("speculative_sliding_window", "speculative decoding cannot roll back a sliding-window "
                         "cache", window=lm.info.sliding_window)


def generate_ids(lm: LoadedModel, prompt_ids: list[int], cfg: GenerationConfig) -> list[int]:
    """The same loop with recording off: token ids only (benchmarks, warm-up)."""
    return [token for p in passes(lm, prompt_ids, cfg, record=False) for token in p.emitted_ids]


def no_cache_passes(
    lm: LoadedModel, prompt_ids: list[int], cfg: GenerationConfig, record: bool,
) -> Iterator[tuple[int, float | None]]:
    """The cache-off loop, one (token, pass ms or None) per pass: pass t feeds all
    prompt_len + t positions again. Timed like `passes`: under the model lock, after
    a device synchronize."""
    generator = torch.Generator().manual_seed(cfg.seed) if cfg.temperature > 0 else None
    eos = frozenset() if cfg.ignore_eos else eos_ids(lm)
    ids = list(prompt_ids)
    for _ in range(cfg.max_new_tokens):
        with lm.lock, torch.inference_mode():
            start = device_clock(lm.device) if record else None
            x = torch.tensor([ids], device=lm.device)  # (1, prompt_len + t): every position again
            logits = hf.forward(lm.model, x, None, logits_to_keep=None).logits[:, -1, :]  # (1, vocab)
            token = choose_token(logits, cfg, generator)
            ms = (device_clock(lm.device) - start) * 1e3 if record else None
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


def encode_prompt(lm: LoadedModel, prompt: str, cfg: GenerationConfig,
                  max_prompt_tokens: int | None = None) -> list[int]:
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


def look_up_prefix(lm: LoadedModel, prompt_ids: list[int], cfg: GenerationConfig) -> Found:
    """The prefix cache's answer for this prompt (cfg.prefix_cache on): the longest kept run of the
    scope, or why none can serve it (a static engine mode, a sliding-window model)."""
    if cfg.mode != "eager":
        return unusable("mode", prompt_ids)
    if lm.info.sliding_window is not None:
        return unusable("sliding_window", prompt_ids)
    return lm.prefixes.look_up(cfg.prefix_scope, prompt_ids)


def _prefix_start(lm: LoadedModel, prompt_ids: list[int], cfg: GenerationConfig, found: Found | None,
                  keep: bool, started_at_s: float) -> tuple[PrefixStart | None, PrefixReuse | None]:
    """With the prefix cache on: where Prefill starts (a copy of the kept positions) and the trace's record
    (look-up and copy timed). `found`: a look-up made earlier (repeats share one); `keep`: keep this run."""
    if not cfg.prefix_cache:
        return None, None
    found = found if found is not None else look_up_prefix(lm, prompt_ids, cfg)
    began = time.perf_counter()
    cache = found.cache(lm.model)
    lookup_ms = found.match_ms + (time.perf_counter() - began) * 1e3
    keeper = None
    if keep and found.miss not in ("mode", "sliding_window"):
        keeper = functools.partial(lm.prefixes.keep, cfg.prefix_scope, started_at_s=started_at_s)
    reuse = found.record(lambda ids: token_pieces(lm.tokenizer, ids), lookup_ms)
    return PrefixStart(found.num_cached, cache, keeper), reuse


def stream_trace(
    lm: LoadedModel,
    prompt: str,
    cfg: GenerationConfig = GenerationConfig(),
    *,
    request_id: str = "r0",
    max_prompt_tokens: int | None = None,
    found: Found | None = None,
    keep: bool = True,
    draft: LoadedModel | None = None,
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

    With `cfg.prefix_cache`, Prefill starts from the scope's longest kept run that begins like the prompt
    (trace.prefix); the run is then kept (`keep`). `found`: a look-up made before (repeats share one).
    `draft`: the draft model of cfg.speculative "draft" (engine/runtime/speculative.py).
    """
    provenance = this_machine(lm.device)  # where and when: read before the request's clock starts
    t0, started_at_s = time.perf_counter(), time.time()  # the request's start, on both clocks
    prompt_ids = encode_prompt(lm, prompt, cfg, max_prompt_tokens)
    tokenize_ms = (time.perf_counter() - t0) * 1e3
    start, reuse = _prefix_start(lm, prompt_ids, cfg, found, keep, started_at_s)
    trace = RequestTrace(
        request_id=request_id, model=lm.info, prompt=prompt, prompt_ids=tuple(prompt_ids),
        prompt_pieces=token_pieces(lm.tokenizer, prompt_ids), sampling=cfg.sampling,
        max_new_tokens=cfg.max_new_tokens, tokenize_ms=tokenize_ms, provenance=provenance,
        started_at_s=started_at_s, prefix=reuse,
    )
    steps: list[Step] = []  # append-only: every partial trace views a prefix of it
    pieces: dict[int, str] = {}  # token id -> its piece: answers repeat tokens (。 的 the), decoding costs ~75 µs
    consumer_s = 0.0  # how long the caller held the loop after the previous yield
    for index, p in enumerate(passes(lm, prompt_ids, cfg, record=True, start=start, draft=draft)):
        if index == 0:
            trace, t0 = _after_prefill(trace, p, t0, started_at_s)
        input_pieces = _input_pieces(lm, p, steps[-1] if steps else None, trace.prompt_pieces, pieces)
        steps.append(_to_step(p, index, request_id, t0, input_pieces, pieces[p.output_id], consumer_s))
        if p.stop_reason:
            text = lm.tokenizer.decode([t for s in steps for t in s.emitted_ids], skip_special_tokens=True)
            yield dataclasses.replace(trace, steps=tuple(steps), stop_reason=p.stop_reason, output_text=text)
            return
        partial = dataclasses.replace(trace, steps=StepsSoFar(steps))
        handed = time.perf_counter()
        yield partial
        consumer_s = time.perf_counter() - handed  # the caller's work; the next pass starts right after


def _input_pieces(lm: LoadedModel, p: Pass, previous: Step | None, prompt_pieces: tuple[str, ...],
                  pieces: dict[int, str]) -> tuple[str, ...]:
    """The pieces of what pass `p` fed (and, in `pieces`, of every token it names). A decode step's input is
    the token the step before chose: its piece is reused; a verify pass's drafts follow it. Prefill's are the
    prompt's from the first position it computed (after any the prefix cache held)."""
    for token in (p.output_id, *p.draft_ids):
        if token not in pieces:  # answers repeat tokens (。 的 the), decoding costs ~75 µs
            pieces[token] = token_pieces(lm.tokenizer, [token])[0]
    first = (previous.output_piece,) if previous is not None else prompt_pieces[p.context_before:]
    return first + tuple(pieces[d] for d in p.draft_ids)


def _after_prefill(trace: RequestTrace, p: Pass, t0: float, started_at_s: float) -> tuple[RequestTrace, float]:
    """The trace's fields the first pass settles, and the request's clock (moved past a runner's set-up)."""
    if p.setup_s:
        # A runner is built once per cache bucket and then pooled, as a server compiles and captures at
        # start-up: the request's clock skips it, so TTFT is the request's own, and the trace says how long.
        t0 += p.setup_s
        trace = dataclasses.replace(trace, engine_setup_ms=p.setup_s * 1e3, started_at_s=started_at_s + p.setup_s)
    if p.chosen is not None:  # Prefill: its logits were ready at p.chosen, the first token at p.end
        trace = dataclasses.replace(trace, first_token_choice_ms=(p.end - p.chosen) * 1e3)
    if (p.mode, p.note) != (trace.engine_mode, trace.engine_note):
        trace = dataclasses.replace(trace, engine_mode=p.mode, engine_note=p.note)
    return trace, t0


def _to_step(
    p: Pass, index: int, request_id: str, t0: float, input_pieces: tuple[str, ...], output_piece: str,
    consumer_s: float,
) -> Step:
    return Step(
        index=index,
        phase="prefill" if index == 0 else "verify" if p.draft_ids else "decode",
        request_id=request_id,
        input_ids=p.input_ids,
        input_pieces=input_pieces,
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
        draft_ids=p.draft_ids,
        drafter=p.drafter,
        num_accepted=p.num_accepted,
        draft_ms=p.draft_s * 1e3,
    )


def generate(lm: LoadedModel, prompt: str, cfg: GenerationConfig = GenerationConfig(), **kwargs) -> RequestTrace:
    """Run one request to the end and return its finished trace."""
    trace = None
    for trace in stream_trace(lm, prompt, cfg, **kwargs):  # noqa: B007 - the last one yielded is the finished trace
        pass
    return trace

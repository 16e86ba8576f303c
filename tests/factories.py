"""Synthetic values for tests that must not need a model (renderers, app views, metrics).

Traces: the numbers are shaped like a real CPU run of the default model: Prefill costs
more than a Decode step, Decode steps are similar, KV bytes grow by a fixed amount per
position, except in a sliding-window layer, which holds at most its window. Real traces
come from `engine.runtime.generation.generate` in engine tests.

Serving runs: `make_run` plays a tiny scheduler over made-up times: each pass costs
`pass_ms(tokens) = base_ms + per_token_ms * tokens`, so a long Prefill makes a long
pass and the Decodes in it (or waiting behind it) see an ITL spike, as on the real
engine. Policies: "one-at-a-time", "prefill-first", "chunked" (decodes first, then
prefill chunks up to the budget) and "disaggregated" (a prefill worker and a decode
worker, each request's KV handed over between them). `client_run` is a run observed
from outside a server: requests only, no iterations. Their numbers are synthetic, used
only to check the drawings' structure.

Also: cache on/off comparisons, one prompt run in several engine modes, cost floors and
sweeps, the vLLM result file that the import and the serving lab read, and a Gate: a measured
method for an engine worker that holds its runner until a test opens it.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import threading
from dataclasses import replace
from pathlib import Path

from engine.contract.cost import DEVICE_SPECS, ModelShape, trace_floors
from engine.contract.results import CacheComparison, DecodeAttention
from engine.contract.serving.metrics import compute_kv_memory, compute_serving_metrics
from engine.contract.serving.trace import (
    SLO, BatchEntry, BlockSnapshot, BlockTable, Handoff, Iteration, KVMemory, LinkEstimate, LinkSpec, RequestRecord,
    ServingRun, ServingSettings,
)
from engine.contract.sweep import Sweep, SweepPoint
from engine.contract.trace import ModelInfo, RequestTrace, Sampling, Step

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_MODEL_CONFIG = ROOT / "assets" / "default_model" / "config.json"
HAS_DEFAULT_MODEL = DEFAULT_MODEL_CONFIG.is_file()  # the embedded default model is built
VLLM_RESULT = Path(__file__).resolve().parent / "serving" / "fixtures" / "vllm_result.json"

TINY_MODEL = ModelInfo(
    model_id="synthetic",
    architecture="LlamaForCausalLM",
    num_layers=4,
    num_heads=8,
    num_kv_heads=2,
    head_dim=32,
    hidden_size=256,
    vocab_size=2048,
    max_positions=2048,
    num_params=3_000_000,
    dtype="float32",
    bytes_per_element=4,
    device="cpu",
)

# Mistral-style: every layer attends to (and caches) only the last 8 positions.
SLIDING_MODEL = replace(TINY_MODEL, model_id="synthetic-sliding", architecture="MistralForCausalLM",
                        sliding_window=8, num_sliding_layers=TINY_MODEL.num_layers)


def layer_kv_bytes(model: ModelInfo, positions: int) -> tuple[int, ...]:
    """Each layer's cache bytes after `positions` positions; the first num_sliding_layers
    layers hold at most sliding_window of them."""
    per_position = model.kv_bytes_per_token // model.num_layers
    return tuple(
        per_position * (min(positions, model.sliding_window) if layer < model.num_sliding_layers else positions)
        for layer in range(model.num_layers))


def make_trace(
    prompt_pieces: tuple[str, ...] = ("法国", "的", "首都", "是"),
    output_pieces: tuple[str, ...] = ("巴黎", "。"),
    *,
    model: ModelInfo = TINY_MODEL,
    prompt: str | None = None,
    prefill_ms_per_position: float = 0.5,
    decode_ms: float = 2.0,
    tokenize_ms: float = 0.3,
    stop_reason: str | None = "length",
) -> RequestTrace:
    """A finished (or, with stop_reason=None, running) trace with made-up times."""
    prompt_ids = tuple(range(10, 10 + len(prompt_pieces)))
    output_ids = tuple(range(500, 500 + len(output_pieces)))
    steps, clock, context = [], tokenize_ms, 0
    for i, (out_id, out_piece) in enumerate(zip(output_ids, output_pieces)):
        if i == 0:
            phase, ids, pieces = "prefill", prompt_ids, prompt_pieces
            duration = 1.0 + prefill_ms_per_position * len(ids)
        else:
            phase, ids, pieces = "decode", (output_ids[i - 1],), (output_pieces[i - 1],)
            duration = decode_ms
        after = context + len(ids)
        steps.append(Step(
            index=i, phase=phase, request_id="r0", input_ids=ids, input_pieces=pieces,
            output_id=out_id, output_piece=out_piece, context_before=context, context_after=after,
            kv_bytes=sum(layer_kv_bytes(model, after)),
            kv_bytes_per_layer=layer_kv_bytes(model, after),
            start_ms=clock, end_ms=clock + duration,
        ))
        clock, context = clock + duration, after
    return RequestTrace(
        request_id="r0", model=model, prompt=prompt if prompt is not None else "".join(prompt_pieces),
        prompt_ids=prompt_ids, prompt_pieces=prompt_pieces, sampling=Sampling(),
        max_new_tokens=len(output_pieces), steps=tuple(steps), tokenize_ms=tokenize_ms,
        stop_reason=stop_reason, output_text="".join(output_pieces),
    )


def make_speculative_trace(plan: tuple[tuple[int, int], ...] = ((4, 2), (0, 0), (3, 3), (2, 0)),
                           *, model: ModelInfo = TINY_MODEL, verify_ms: float = 2.4) -> RequestTrace:
    """A finished trace with verify passes (speculative decoding) and made-up times: Prefill, then one pass per
    (num drafts, num accepted) in `plan`; (0, 0) is a plain Decode step. Drafts are ids 600+, the answer 500+."""
    prompt_pieces = ("The", " capital", " of", " France", " is", " Paris", ".", " The")
    base = make_trace(prompt_pieces, ("▁capital",), model=model)
    steps, clock = [base.steps[0]], base.steps[0].end_ms
    fed, fed_piece, context, next_id = 500, "▁capital", base.steps[0].context_after, 501
    for index, (num_drafts, num_accepted) in enumerate(plan, start=1):
        drafts = tuple(range(600 + 10 * index, 600 + 10 * index + num_drafts))
        pieces = tuple(f"d{d}" for d in drafts)
        after = context + 1 + num_drafts
        kept = context + 1 + num_accepted
        duration = verify_ms if num_drafts else 2.0
        steps.append(Step(
            index=index, phase="verify" if num_drafts else "decode", request_id="r0", input_ids=(fed, *drafts),
            input_pieces=(fed_piece, *pieces), output_id=next_id, output_piece=f"o{next_id}", context_before=context,
            context_after=after, kv_bytes=sum(layer_kv_bytes(model, kept)),
            kv_bytes_per_layer=layer_kv_bytes(model, kept), start_ms=clock + 0.1, end_ms=clock + 0.1 + duration,
            draft_ids=drafts, drafter="ngram" if num_drafts else "", num_accepted=num_accepted,
            draft_ms=0.05 if num_drafts else 0.0,
        ))
        clock, context, fed, fed_piece, next_id = clock + 0.1 + duration, kept, next_id, f"o{next_id}", next_id + 1
    trace = replace(base, steps=tuple(steps))
    return replace(trace, max_new_tokens=len(trace.output_ids), output_text="".join(trace.output_pieces))


def make_long_trace(prompt_len: int = 4096, output_len: int = 512) -> RequestTrace:
    """The scale case: thousands of positions."""
    prompt = tuple(f"t{i}" for i in range(prompt_len))
    output = tuple(f"o{i}" for i in range(output_len))
    return make_trace(prompt, output, prefill_ms_per_position=0.05)


def build_bos_tokenizer(folder, texts: tuple[str, ...] = (
    "The capital of France is Paris. The capital of Germany is Berlin.",
    "法国的首都是巴黎。德国的首都是柏林。",
)):
    """A Llama-style tokenizer that puts a BOS `<s>` in front of every prompt, as real Llama
    and Gemma tokenizers do (the template lives in its tokenizer.json, like theirs).

    At most 400 entries, so it fits the tiny random models' vocabulary. Saved to `folder`.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    specials = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="first")
    tok.decoder = decoders.Sequence([
        decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(" ", 1, 0),
    ])
    tok.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=400, special_tokens=specials, show_progress=False))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", bos_token="<s>", eos_token="</s>",
                                   pad_token="</s>", add_bos_token=True)
    fast.save_pretrained(folder)
    return fast


# ---------------------------------------------------------------------------
# Serving runs
# ---------------------------------------------------------------------------

LINKS = (LinkSpec("nvlink", "NVLink 4: 450 GB/s", 450e9), LinkSpec("100gbps", "100 Gb/s Ethernet: 12.5 GB/s", 12.5e9))

# (request_id, arrival_ms, prompt_len, max_new_tokens): four chats, then one long prompt
LONG_PROMPT_DURING_CHATS = (("r0", 0.0, 4, 12), ("r1", 2.0, 5, 12), ("r2", 4.0, 4, 12), ("r3", 6.0, 5, 12),
                            ("r4", 20.0, 200, 3))


class _Seq:
    def __init__(self, rid, arrival, prompt_len, max_new):
        self.rid, self.arrival, self.prompt_len, self.max_new = rid, arrival, prompt_len, max_new
        self.computed, self.times, self.first_scheduled = 0, [], None

    @property
    def done(self):
        return len(self.times) >= self.max_new

    @property
    def length(self):
        return self.prompt_len + len(self.times)


def _blocks(held: dict, block_size: int, num_blocks: int, owners: dict) -> BlockSnapshot:
    """Blocks assigned in request order, ids from a fixed per-request base (stable across passes)."""
    tables = []
    for rid, tokens in held.items():
        n = -(-tokens // block_size)
        fill = tuple(min(block_size, tokens - i * block_size) for i in range(n))
        tables.append(BlockTable(rid, tuple(owners[rid] + i for i in range(n)), fill))
    used = sum(len(t.block_ids) for t in tables)
    return BlockSnapshot(block_size, num_blocks, num_blocks - used, tuple(tables))


def _pass_work(policy: str, arrived: list[_Seq], budget: int | None) -> list[tuple[_Seq, str, int, int]]:
    """What one pass computes under `policy`: (seq, phase, start, end) per scheduled request."""
    if policy == "one-at-a-time":
        s = arrived[0]
        return [(s, "prefill", 0, s.prompt_len) if s.computed == 0 else (s, "decode", s.length - 1, s.length)]
    if policy == "prefill-first":
        new = [s for s in arrived if s.computed == 0]
        if new:
            return [(s, "prefill", 0, s.prompt_len) for s in new]
        return [(s, "decode", s.length - 1, s.length) for s in arrived]
    work, room = [], budget  # chunked: decodes first, then prefill chunks up to the budget
    for s in arrived:
        if s.computed >= s.prompt_len:
            work.append((s, "decode", s.length - 1, s.length))
            room -= 1
    for s in arrived:
        if s.computed < s.prompt_len and room > 0:
            end = min(s.prompt_len, s.computed + room)
            phase = "prefill" if s.computed == 0 and end == s.prompt_len else "prefill_chunk"
            work.append((s, phase, s.computed, end))
            room -= end - s.computed
    return work


def _run_pass(work, start: float, end: float) -> tuple[BatchEntry, ...]:
    """Advance each scheduled request by its share of a pass from `start` to `end`; its batch entries."""
    entries = []
    for s, phase, b, e in work:
        if s.first_scheduled is None:
            s.first_scheduled = start
        s.computed = max(s.computed, e)
        out = None
        if e >= s.prompt_len:
            s.times.append(end)
            out = 7
        entries.append(BatchEntry(s.rid, phase, b, e, out))
    return tuple(entries)


def make_run(spec=LONG_PROMPT_DURING_CHATS, policy: str = "chunked", *, token_budget: int = 32, block_size: int = 4,
             base_ms: float = 2.0, per_token_ms: float = 0.05, slo: SLO = SLO(), prompt_text: str = "法国的首都是",
             scenario: str = "synthetic") -> ServingRun:
    """A serving run of `spec` ((request_id, arrival_ms, prompt_len, max_new_tokens) each) under `policy`,
    on made-up pass times (`base_ms + per_token_ms * tokens`)."""
    if policy == "disaggregated":
        return _disaggregated(spec, block_size, base_ms, per_token_ms, slo, prompt_text, scenario)
    seqs = [_Seq(*s) for s in spec]
    max_len = {s.rid: s.prompt_len + s.max_new for s in seqs}
    owners, base = {}, 0
    for s in seqs:
        owners[s.rid] = base
        base += -(-max_len[s.rid] // block_size)
    num_blocks = base
    budget = token_budget if policy == "chunked" else None
    clock, iterations = 0.0, []
    while not all(s.done for s in seqs):
        arrived = [s for s in seqs if s.arrival <= clock and not s.done]
        if not arrived:
            clock = min(s.arrival for s in seqs if not s.done)
            continue
        work = _pass_work(policy, arrived, budget)
        tokens = sum(e - b for _, _, b, e in work)
        start, end = clock, clock + base_ms + per_token_ms * tokens
        entries = _run_pass(work, start, end)
        scheduled = {s.rid for s, *_ in work}
        held = {s.rid: min(s.computed, s.length) for s in seqs if s.first_scheduled is not None and not s.done}
        waiting = tuple(s.rid for s in arrived if s.rid not in scheduled)
        iterations.append(Iteration(len(iterations), "engine", start, end, entries,
                                    _blocks(held, block_size, num_blocks, owners), budget, waiting))
        clock = end + 0.1
    settings = ServingSettings(policy=policy, block_size=block_size, num_kv_blocks=num_blocks, token_budget=budget)
    return _finish(seqs, iterations, settings, slo, prompt_text, scenario)


def _record(s: _Seq, prompt_text: str) -> RequestRecord:
    times = tuple(s.times)
    return RequestRecord(
        request_id=s.rid, prompt=prompt_text, prompt_ids=tuple(range(3, 3 + s.prompt_len)),
        prompt_pieces=tuple("p" for _ in range(s.prompt_len)), output_ids=tuple(7 for _ in times),
        output_pieces=tuple("巴" for _ in times), output_text="巴" * len(times), max_new_tokens=s.max_new,
        ignore_eos=True, arrival_ms=s.arrival, first_scheduled_ms=s.first_scheduled, first_token_ms=times[0],
        finish_ms=times[-1], token_times_ms=times, itl_ms=tuple(b - a for a, b in zip(times, times[1:])),
        stop_reason="length")


def _finish(seqs, iterations, settings, slo, prompt_text, scenario, **extra) -> ServingRun:
    requests = tuple(_record(s, prompt_text) for s in seqs)
    iterations = tuple(replace(it, index=i) for i, it in enumerate(sorted(iterations, key=lambda it: it.start_ms)))
    memory = compute_kv_memory(iterations, requests, settings.block_size, TINY_MODEL.kv_bytes_per_token)
    return ServingRun(scenario=scenario, settings=settings, model=TINY_MODEL, requests=requests,
                      iterations=iterations, metrics=compute_serving_metrics(requests, slo), memory=memory,
                      wall_ms=max(s.times[-1] for s in seqs), **extra)


def _disaggregated(spec, block_size, base_ms, per_token_ms, slo, prompt_text, scenario) -> ServingRun:
    """Prefill worker: one request's prompt per pass, in arrival order; then a hand-off of
    `copy_ms`; decode worker: one pass for every request that has its KV, as often as needed."""
    seqs = [_Seq(*s) for s in spec]
    owners = {s.rid: i * 64 for i, s in enumerate(seqs)}
    num_blocks = 64 * len(seqs)
    iterations, handoffs, ready = [], [], {}
    clock = 0.0
    for s in sorted(seqs, key=lambda s: s.arrival):
        start = max(clock, s.arrival)
        end = start + base_ms + per_token_ms * s.prompt_len
        s.first_scheduled, s.computed = start, s.prompt_len
        s.times.append(end)
        iterations.append(Iteration(0, "prefill", start, end, (BatchEntry(s.rid, "prefill", 0, s.prompt_len, 7),),
                                    _blocks({s.rid: s.prompt_len}, block_size, num_blocks, owners)))
        num_bytes = s.prompt_len * TINY_MODEL.kv_bytes_per_token
        received = end + 0.5
        handoffs.append(Handoff(s.rid, s.prompt_len, num_bytes, end, received, 0.5,
                                tuple(LinkEstimate(link.name, link.bytes_per_s, num_bytes / link.bytes_per_s * 1e3)
                                      for link in LINKS)))
        ready[s.rid] = received
        clock = end + 0.1
    clock = min(ready.values())
    while not all(s.done for s in seqs):
        batch = [s for s in seqs if not s.done and ready[s.rid] <= clock]
        if not batch:
            clock = min(ready[s.rid] for s in seqs if not s.done)
            continue
        start, end = clock, clock + base_ms + per_token_ms * len(batch)
        entries = []
        for s in batch:
            entries.append(BatchEntry(s.rid, "decode", s.length - 1, s.length, 7))
            s.times.append(end)
        held = {s.rid: s.length for s in seqs if ready[s.rid] <= clock and not s.done}
        iterations.append(Iteration(0, "decode", start, end, tuple(entries),
                                    _blocks(held, block_size, num_blocks, owners)))
        clock = end + 0.1
    settings = ServingSettings(policy="disaggregated", block_size=block_size, num_kv_blocks=num_blocks,
                               worker_cores=(("prefill", (0,)), ("decode", (1,))))
    return _finish(seqs, iterations, settings, slo, prompt_text, scenario, handoffs=tuple(handoffs), links=LINKS,
                   notes=("Prefill worker pinned to cores [0], Decode worker to [1]",))


def client_run(spec=LONG_PROMPT_DURING_CHATS, *, gap_ms: float = 3.0, ttft_ms: float = 10.0) -> ServingRun:
    """A run seen from a client: arrival, first token, token times, finish; no iterations, no blocks."""
    seqs = []
    for rid, arrival, prompt_len, max_new in spec:
        s = _Seq(rid, arrival, prompt_len, max_new)
        s.first_scheduled = arrival
        s.times = [arrival + ttft_ms + prompt_len * 0.1 + i * gap_ms for i in range(max_new)]
        seqs.append(s)
    settings = ServingSettings(policy="chunked", block_size=16, num_kv_blocks=1)
    requests = tuple(_record(s, "") for s in seqs)
    return ServingRun(scenario="client", settings=settings, model=TINY_MODEL, requests=requests, iterations=(),
                      metrics=compute_serving_metrics(requests), memory=KVMemory(16, 0, 0, 0, 0, 0, 0.0, 0.0),
                      notes=("measured from the client",))


# ---------------------------------------------------------------------------
# Serving records with hand-made timestamps
# ---------------------------------------------------------------------------

# The embedded default model's ModelInfo, as a serving run records it.
DEFAULT_MODEL_INFO = ModelInfo(model_id="default", architecture="LlamaForCausalLM", num_layers=4, num_heads=8,
                               num_kv_heads=2, head_dim=32, hidden_size=256, vocab_size=2989, max_positions=4096,
                               num_params=3_536_384, dtype="float32", bytes_per_element=4, device="cpu")


def make_record(rid: str, arrival: float, times: list[float], prompt_len: int = 4, max_new: int = 8) -> RequestRecord:
    """A finished request that arrived at `arrival` and got one token at each of `times` (ms)."""
    return RequestRecord(
        request_id=rid, prompt="p", prompt_ids=tuple(range(prompt_len)), prompt_pieces=("p",) * prompt_len,
        output_ids=tuple(range(len(times))), output_pieces=("x",) * len(times), output_text="x" * len(times),
        max_new_tokens=max_new, ignore_eos=False, arrival_ms=arrival, first_scheduled_ms=arrival + 1.0,
        first_token_ms=times[0], finish_ms=times[-1], token_times_ms=tuple(times),
        itl_ms=tuple(b - a for a, b in zip(times, times[1:])), stop_reason="eos",
    )


# ---------------------------------------------------------------------------
# Cache on vs off
# ---------------------------------------------------------------------------

def fake_comparison(num_steps: int = 6, prompt_len: int = 5) -> CacheComparison:
    """Cache off recomputes every position (FLOPs and time grow per step); cache on computes one."""
    off_flops = tuple(1e6 * (prompt_len + t) for t in range(num_steps))
    return CacheComparison(
        prompt_len=prompt_len, output_ids=tuple(range(num_steps)),
        off_ms=tuple(2.0 + t for t in range(num_steps)), on_ms=(2.0,) + (0.5,) * (num_steps - 1),
        off_flops=off_flops, on_flops=(off_flops[0],) + (2e5,) * (num_steps - 1),
        off_positions=tuple(prompt_len + t for t in range(num_steps)),
        on_positions=(prompt_len,) + (1,) * (num_steps - 1),
    )


def fake_attention(context: int = 4, pieces=None) -> DecodeAttention:
    """A Decode step's attention spread evenly over `context` + 1 positions, two layers of two heads."""
    pieces = pieces or tuple(f"p{i}" for i in range(context + 1))
    row = tuple(1.0 / (context + 1) for _ in range(context + 1))
    return DecodeAttention(2, context, tuple(range(context + 1)), pieces, ((row, row), (row, row)), (row, row))


# ---------------------------------------------------------------------------
# One prompt run in several engine modes
# ---------------------------------------------------------------------------

MODE_FLOORS = [0.5] + [0.9] * 9  # the Prefill's floor, then each Decode step's
EAGER_MS = (3.9, 3.8, 4.4, 3.7, 3.8, 3.9, 4.6, 3.8, 3.9)
STATIC_MS = tuple(ms + 0.3 for ms in EAGER_MS)
COMPILED_MS = (2.6, 2.5, 2.7, 2.6, 3.1, 2.6, 2.5, 2.6, 2.6)


def make_mode_run(mode: str, decode_ms: tuple[float, ...], *, ran: str | None = None, note: str = "",
                  kernel: str = "flash", model=TINY_MODEL) -> RequestTrace:
    """A run of the default prompt in engine mode `mode` (or fallen back to `ran`) with these Decode times."""
    trace = make_trace(output_pieces=tuple(f"t{i}" for i in range(len(decode_ms) + 1)), model=model)
    steps, clock = [], trace.steps[0].start_ms
    for step in trace.steps:
        ms = step.duration_ms if step.phase == "prefill" else decode_ms[step.index - 1]
        steps.append(dataclasses.replace(step, start_ms=clock, end_ms=clock + ms, attention_kernel=kernel))
        clock += ms
    return dataclasses.replace(trace, steps=tuple(steps), engine_mode=ran or mode, engine_note=note)


def make_mode_runs(**extra) -> dict[str, RequestTrace]:
    """{"eager", "static", "compiled"} runs of one prompt (EAGER_MS, STATIC_MS, COMPILED_MS), plus `extra`."""
    return {"eager": make_mode_run("eager", EAGER_MS), "static": make_mode_run("static", STATIC_MS),
            "compiled": make_mode_run("compiled", COMPILED_MS), **extra}


# ---------------------------------------------------------------------------
# Cost floors and sweeps
# ---------------------------------------------------------------------------

@functools.cache
def default_shape() -> ModelShape:
    """The embedded default model's shape, read from its config.json."""
    return ModelShape.from_config(json.loads(DEFAULT_MODEL_CONFIG.read_text()), name="default")


def make_floors(spec: str = "h200", **kwargs):
    """The cost model's floors for a made-up 64-position, 6-token run of the default model on `spec`."""
    trace = make_trace(("a",) * 64, ("x",) * 6, prefill_ms_per_position=0.2, decode_ms=3.0)
    return trace_floors(trace, default_shape(), DEVICE_SPECS[spec], **kwargs)


def make_sweep(kind: str = "prefill", random_weights: bool = False) -> Sweep:
    """A three-point sweep (8, 64, 512) of `kind` with made-up times, compute-bound floors."""
    prefill = kind == "prefill"
    points = tuple(SweepPoint(value=v, new_positions=v if prefill else 1, context=0 if prefill else 8,
                              batch=1, times_ms=(1.0 + v / 100, 1.1 + v / 100, 1.3 + v / 100), median_ms=1.1 + v / 100,
                              floor_ms=v / 1000, compute_ms=v / 1000, memory_ms=v / 2000, bound="compute",
                              flops=2e6 * v, bytes=1e6) for v in (8, 64, 512))
    return Sweep(kind=kind, model_id="default", random_weights=random_weights, device="cpu", dtype="float32",
                 device_spec="spec", weight_dtype="fp32", kv_dtype="fp32", repeats=3, batch_context=0, points=points)


def make_sweep_at(kind: str, medians_ms: dict[int, float]) -> Sweep:
    """A sweep of `kind` whose point `value` has the median `medians_ms[value]` (its repeats that and ±1 %)."""
    batch, prefill = kind == "decode-batch", kind == "prefill"
    points = tuple(SweepPoint(value=v, new_positions=v if prefill else 1, context=0 if prefill else 128 if batch else v,
                              batch=v if batch else 1, times_ms=(ms * 0.99, ms, ms * 1.01), median_ms=ms,
                              floor_ms=ms / 10, compute_ms=ms / 10, memory_ms=ms / 20, bound="memory", flops=2e6 * v,
                              bytes=1e6)
                   for v, ms in sorted(medians_ms.items()))
    return Sweep(kind=kind, model_id="default", random_weights=False, device="cpu", dtype="float32",
                 device_spec="spec", weight_dtype="fp32", kv_dtype="fp32", repeats=3,
                 batch_context=128 if batch else 0, points=points)


class Gate:
    """A measured method for an engine worker (start_in_thread(measured={..., "gate": gate})) that holds
    the worker's runner until the test opens it, so queue tests do not depend on the machine's speed.
    It honours cancellation."""

    def __init__(self) -> None:
        self.entered, self.opened = threading.Event(), threading.Event()

    def reset(self) -> None:
        self.entered.clear()
        self.opened.clear()

    def __call__(self, ctx, args):
        self.entered.set()
        while not self.opened.wait(0.005):
            ctx.check_cancelled()
        return "opened"

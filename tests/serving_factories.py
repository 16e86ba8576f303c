"""Synthetic ServingRun values for the serving figures' tests (no model, no torch).

`make_run` plays a tiny scheduler over made-up times: each pass costs
`pass_ms(tokens) = base_ms + per_token_ms * tokens`, so a long Prefill makes a long
pass and the Decodes in it (or waiting behind it) see an ITL spike, as on the real
engine. Policies: "one-at-a-time", "prefill-first", "chunked" (decodes first, then
prefill chunks up to the budget) and "disaggregated" (a prefill worker and a decode
worker, each request's KV handed over between them). `client_run` is a run observed
from outside a server: requests only, no iterations.

The numbers are synthetic, used only to check the drawing's structure.
"""

from __future__ import annotations

from dataclasses import replace

from engine.serving.metrics import compute_kv_memory, compute_serving_metrics
from engine.serving.trace import (
    SLO, BatchEntry, BlockSnapshot, BlockTable, Handoff, Iteration, KVMemory, LinkEstimate, LinkSpec, RequestRecord,
    ServingRun, ServingSettings,
)
from tests.factories import TINY_MODEL

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


def make_run(spec=LONG_PROMPT_DURING_CHATS, policy: str = "chunked", *, token_budget: int = 32, block_size: int = 4,
             base_ms: float = 2.0, per_token_ms: float = 0.05, slo: SLO = SLO(), prompt_text: str = "法国的首都是",
             scenario: str = "synthetic") -> ServingRun:
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
        work = []  # (seq, phase, start, end)
        if policy == "one-at-a-time":
            s = arrived[0]
            work.append((s, "prefill", 0, s.prompt_len) if s.computed == 0 else (s, "decode", s.length - 1, s.length))
        elif policy == "prefill-first":
            new = [s for s in arrived if s.computed == 0]
            if new:
                work = [(s, "prefill", 0, s.prompt_len) for s in new]
            else:
                work = [(s, "decode", s.length - 1, s.length) for s in arrived]
        else:
            room = budget
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
        tokens = sum(e - b for _, _, b, e in work)
        start, end = clock, clock + base_ms + per_token_ms * tokens
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
        scheduled = {s.rid for s, *_ in work}
        held = {s.rid: min(s.computed, s.length) for s in seqs if s.first_scheduled is not None and not s.done}
        waiting = tuple(s.rid for s in arrived if s.rid not in scheduled)
        iterations.append(Iteration(len(iterations), "engine", start, end, tuple(entries),
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

"""Any trace as Chrome Trace Event JSON: opens in ui.perfetto.dev and chrome://tracing.

    request_trace_events(trace)  one request (engine/contract/trace.py RequestTrace); with felt= (the page's
                                 lesson.diagrams.ttft_parts.FeltTimes) its visitor's parts of TTFT too
    serving_run_events(run)      a serving run (engine/contract/serving/trace.py ServingRun), in-process or
                                 observed from the client (no iterations)
    to_perfetto_json(x)          either of them -> the JSON text to save as NAME.perfetto.json
    check_trace_events(doc)      the format's required fields, as a list of problems ([] = fine)

The Trace Event format (the "JSON Object Format" of Google's Trace Event Format document,
which Perfetto's JSON importer reads): {"traceEvents": [...], "displayTimeUnit": "ms"}; each
event has `ph` (phase), `ts` (microseconds), `pid`, `tid`, `name`; complete slices (ph "X")
also `dur` (microseconds); counters (ph "C") carry their values in `args` (one series per
key); metadata (ph "M") names processes and threads (`process_name`, `thread_name`,
`*_sort_index`); instants (ph "i") mark a moment, `s` = "t" for their thread.

Layout (what a student sees in Perfetto):
    process 1 "requests"  one request: its track (tokenize, the prefix cache's look-up when it was on, the
                          passes), and "TTFT, part by part" (the TTFT bar's parts as slices,
                          lesson.diagrams.ttft_parts: tokenizing, waiting inside the engine, the Prefill
                          pass's forward computation, choosing the first token, under "TTFT as the engine
                          measured it"; with the page's felt times also the engine worker's queue before
                          them and the trip to the page and the page after, under "TTFT as the visitor
                          felt it", and every time then counts from the page's send)
                          a serving run: one thread (track) per request: waiting, Prefill / Prefill chunk /
                          Decode slices (in-process), KV hand-off, a "prefix-cache look-up"
                          before a Prefill (prefix caching on: its cached tokens), or, observed from the
                          client, "until first token" and "streaming" with a tick per chunk
    process 2 "workers"   one thread per worker ("engine", or "prefill" and "decode"): one
                          slice per forward pass; counters "batch size" and "KV bytes" per worker
    process 3 "server"    client-observed runs only: counters from the server's /metrics, when
                          the probe sampled them (running / waiting requests, KV-cache usage)

Times: every trace's own milliseconds since its clock started, times 1000. Words in the
slices come from the trace (token pieces, request ids) as JSON strings, never as markup.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from engine.contract.limits import dump_json
from engine.contract.serving.trace import ServingRun
from engine.contract.trace import RequestTrace

from .diagrams.ttft_parts import ENGINE_KINDS, KINDS, FeltTimes, TtftParts, ttft_parts
from .formats import fmt_ms
from .text import label, table_for

REQUESTS_PID, WORKERS_PID, SERVER_PID = 1, 2, 3
PHASE_NAMES = {"prefill": "Prefill", "prefill_chunk": "Prefill chunk", "decode": "Decode", "verify": "Verify"}
_PHASES_WITH_DUR = {"X"}
_KNOWN_PHASES = {"X", "B", "E", "i", "I", "C", "M", "b", "e", "n", "s", "t", "f"}


def _us(ms: float) -> float:
    """Milliseconds -> the format's microseconds (3 decimals: nanoseconds)."""
    return round(ms * 1000.0, 3) + 0.0  # + 0.0: never -0.0 (a time moved back to the origin)


def _meta(pid: int, tid: int, kind: str, value: Any) -> dict[str, Any]:
    key = "name" if kind.endswith("_name") else "sort_index"
    return {"ph": "M", "pid": pid, "tid": tid, "ts": 0, "name": kind, "args": {key: value}}


def _slice(pid: int, tid: int, name: str, start_ms: float, end_ms: float, cat: str,
           args: Mapping[str, Any] | None = None) -> dict[str, Any]:
    event = {"ph": "X", "pid": pid, "tid": tid, "ts": _us(start_ms), "dur": max(_us(end_ms) - _us(start_ms), 0.0),
             "name": name, "cat": cat}
    if args:
        event["args"] = dict(args)
    return event


def _counter(pid: int, name: str, at_ms: float, values: Mapping[str, float]) -> dict[str, Any]:
    return {"ph": "C", "pid": pid, "tid": 0, "ts": _us(at_ms), "name": name, "args": dict(values)}


def _instant(pid: int, tid: int, name: str, at_ms: float, args: Mapping[str, Any] | None = None) -> dict[str, Any]:
    event = {"ph": "i", "s": "t", "pid": pid, "tid": tid, "ts": _us(at_ms), "name": name, "cat": "token"}
    if args:
        event["args"] = dict(args)
    return event


def _document(events: list[dict[str, Any]], other: Mapping[str, Any]) -> dict[str, Any]:
    return {"traceEvents": events, "displayTimeUnit": "ms", "otherData": dict(other)}


# --- one request ----------------------------------------------------------------

def request_trace_events(trace: RequestTrace, felt: FeltTimes | None = None) -> dict[str, Any]:
    """One request: its track (tokenize, waits for the model lock, Prefill, Decode steps), TTFT's parts
    (the engine's; with `felt`, the page's times around the run, the visitor's too: then every time counts
    from the page's send), the engine's track (one slice per forward pass), counters for KV bytes and batch size."""
    rid, m = trace.request_id, trace.model
    events = [
        _meta(REQUESTS_PID, 0, "process_name", "requests"), _meta(REQUESTS_PID, 0, "process_sort_index", 1),
        _meta(REQUESTS_PID, 1, "thread_name", f"request {rid}"),
        _meta(WORKERS_PID, 0, "process_name", "workers"), _meta(WORKERS_PID, 0, "process_sort_index", 2),
        _meta(WORKERS_PID, 1, "thread_name", "engine"),
    ]
    if trace.tokenize_ms > 0:
        events.append(_slice(REQUESTS_PID, 1, "tokenize", 0.0, trace.tokenize_ms, "host"))
    events += _prefix_lookup(trace)
    events.append(_counter(WORKERS_PID, "batch size", 0.0, {"engine": 0}))
    events.append(_counter(WORKERS_PID, "KV bytes", 0.0, {"engine": 0}))
    for step in trace.steps:
        if step.lock_wait_ms > 0:  # queued behind another request's pass
            events.append(_slice(REQUESTS_PID, 1, "waiting (model lock)", step.start_ms - step.lock_wait_ms,
                                 step.start_ms, "waiting"))
        name = "Prefill" if step.phase == "prefill" else f"{PHASE_NAMES[step.phase]} {step.index}"
        args = {"positions": f"{step.context_before}..{step.context_after - 1}", "new_positions": step.num_positions,
                "output_token": step.output_piece, "output_id": step.output_id, "kv_bytes": step.kv_bytes,
                "attention_kernel": step.attention_kernel or "n/a"}
        if step.phase == "verify":  # speculative decoding: what was guessed, and how much of it was kept
            args |= {"drafter": step.drafter, "draft_ids": list(step.draft_ids), "num_accepted": step.num_accepted}
        events.append(_slice(REQUESTS_PID, 1, name, step.start_ms, step.end_ms, step.phase, args))
        events.append(_slice(WORKERS_PID, 1, f"pass {step.index}: {PHASE_NAMES[step.phase]}", step.start_ms,
                             step.end_ms, step.phase, {"request_id": rid, "tokens": step.num_positions}))
        events.append(_counter(WORKERS_PID, "batch size", step.start_ms, {"engine": 1}))
        events.append(_counter(WORKERS_PID, "batch size", step.end_ms, {"engine": 0}))
        events.append(_counter(WORKERS_PID, "KV bytes", step.end_ms, {"engine": step.kv_bytes}))
    parts = ttft_parts(trace, felt) if trace.prefill is not None else None
    events += _ttft_track(parts) if parts is not None else []
    origin_ms = parts.queue_ms if parts is not None and parts.felt else 0.0
    other = {"source": "prefill-decode RequestTrace", "model": m.model_id, "device": m.device, "dtype": m.dtype,
             "engine_mode": trace.engine_mode, "engine_note": trace.engine_note or "none",
             "engine_setup_ms": round(trace.engine_setup_ms, 3), "prompt_tokens": trace.prompt_len,
             "output_tokens": len(trace.steps), "time_origin": "the request's start (before tokenization)"}
    if origin_ms:  # the queue came first: the page's send is time 0
        events = [e if e["ph"] == "M" else {**e, "ts": _us(e["ts"] / 1000.0 + origin_ms)} for e in events]
        other["time_origin"] = "the page's send of the request (the request's own clock starts after the queue)"
        other["visitor_parts"] = "measured by the page on the run it streamed (run 1 of its repeats)"
    return _document(events, other)


def _prefix_lookup(trace: RequestTrace) -> list[dict[str, Any]]:
    """The lesson engine's prefix-cache look-up (trace.prefix), right after tokenizing, where it ran: how many
    prompt positions it read and why not more; nothing when the cache was off."""
    p = trace.prefix
    if p is None:
        return []
    end = min(trace.tokenize_ms + p.lookup_ms, trace.prefill.start_ms if trace.prefill else math.inf)
    return [_slice(REQUESTS_PID, 1, "prefix-cache look-up", trace.tokenize_ms, end, "lookup",
                   {"cached_tokens": p.num_cached_tokens, "computed_tokens": p.num_computed_tokens,
                    "prompt_tokens": p.num_tokens, "miss": p.miss or "none"})]


TTFT_TID = 2  # the request's second track: TTFT, part by part


def _ttft_track(parts: TtftParts) -> list[dict[str, Any]]:
    """TTFT's parts as slices end to end in the order the time passed (the TTFT bar's, in its English
    words), on the request's clock (the queue before its 0), under one slice per total."""
    table = table_for("en")
    events = [_meta(REQUESTS_PID, TTFT_TID, "thread_name", "TTFT, part by part")]
    spans, at = [], (-parts.queue_ms if parts.felt else 0.0)
    for kind in KINDS if parts.felt else ENGINE_KINDS:
        ms = parts.part_ms(kind)
        if ms is not None:
            spans.append((kind, at, at + ms))
            at += ms
    engine = [s for s in spans if s[0] in ENGINE_KINDS]
    totals = [(label(table, "ttft_parts_engine", ms=fmt_ms(parts.engine_ttft_ms)), engine[0][1], engine[-1][2])]
    if parts.felt:
        totals.insert(0, (label(table, "ttft_parts_felt", ms=fmt_ms(parts.felt_ttft_ms)), spans[0][1], spans[-1][2]))
    events += [_slice(REQUESTS_PID, TTFT_TID, name, start, end, "ttft") for name, start, end in totals]
    for kind, start, end in spans:
        by = "engine" if kind in ENGINE_KINDS else "page"
        events.append(_slice(REQUESTS_PID, TTFT_TID, label(table, f"ttft_part_{kind}"), start, end, "ttft",
                             {"part": kind, "ms": round(end - start, 3), "measured_by": by}))
    return events


# --- a serving run --------------------------------------------------------------

def _request_tids(run: ServingRun) -> dict[str, int]:
    return {r.request_id: i for i, r in enumerate(run.requests, start=1)}


def serving_run_events(run: ServingRun, server_samples: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """A serving run: one track per request, one per worker, counters for batch size and KV bytes.

    `server_samples` (a client-observed run): [{"t_ms": ..., "values": {"running": 3, ...}}, ...]
    from the probe's /metrics sampling; each key becomes a counter series of the "server" process.
    """
    tids = _request_tids(run)
    workers = list(dict.fromkeys(it.worker for it in run.iterations))
    wtid = {w: i for i, w in enumerate(workers, start=1)}
    events = [_meta(REQUESTS_PID, 0, "process_name", "requests"), _meta(REQUESTS_PID, 0, "process_sort_index", 1)]
    for record in run.requests:
        tid = tids[record.request_id]
        events += [_meta(REQUESTS_PID, tid, "thread_name", f"request {record.request_id}"),
                   _meta(REQUESTS_PID, tid, "thread_sort_index", tid)]
    if workers:
        events += [_meta(WORKERS_PID, 0, "process_name", "workers"), _meta(WORKERS_PID, 0, "process_sort_index", 2)]
        events += [_meta(WORKERS_PID, wtid[w], "thread_name", w) for w in workers]
    events += _request_slices(run, tids)
    events += _worker_slices(run, wtid)
    if server_samples:
        events += [_meta(SERVER_PID, 0, "process_name", "server /metrics (sampled by the client)"),
                   _meta(SERVER_PID, 0, "process_sort_index", 3)]
        for sample in server_samples:
            for key, value in sample["values"].items():
                if value is not None:
                    events.append(_counter(SERVER_PID, key, sample["t_ms"], {key: value}))
    other = {"source": "prefill-decode ServingRun", "scenario": run.scenario,
             "policy": run.settings.policy if run.iterations else "not observable (client view)",
             "model": run.model.model_id, "device": run.model.device, "requests": len(run.requests),
             "forward_passes": len(run.iterations), "notes": list(run.notes),
             "time_origin": "the run's clock start (ms 0 = when arrivals began)"}
    return _document(events, other)


def _request_slices(run: ServingRun, tids: Mapping[str, int]) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    handoffs = {h.request_id: h for h in run.handoffs}
    passes: dict[str, list[tuple[float, float, str, dict[str, Any]]]] = {rid: [] for rid in tids}
    stalled: dict[str, list[tuple[float, float]]] = {rid: [] for rid in tids}  # admitted, given no positions
    for it in run.iterations:
        for rid in getattr(it, "stalled", ()):
            if rid in stalled:
                stalled[rid].append((it.start_ms, it.end_ms))
        for k in it.lookups:  # prefix caching: the look-up while this pass was scheduled, before its Prefill
            if k.request_id in tids:
                events.append(_slice(REQUESTS_PID, tids[k.request_id], "prefix-cache look-up", k.start_ms,
                                     min(k.start_ms + k.lookup_ms, it.start_ms), "lookup",
                                     {"tokens": k.num_tokens, "cached_tokens": k.num_cached_tokens,
                                      "computed_tokens": k.num_computed_tokens, "miss": k.miss or "none"}))
        for e in it.entries:
            if e.request_id in passes:
                args = {"pass": it.index, "worker": it.worker, "positions": f"{e.start}..{e.end - 1}",
                        "new_positions": e.num_tokens, "recompute": e.recompute}
                passes[e.request_id].append((it.start_ms, it.end_ms, e.phase, args))
    for record in run.requests:
        tid = tids[record.request_id]
        if not run.iterations:  # observed from the client: no view inside the server's passes
            events += _observed_request(record, tid)
            continue
        own = list(passes[record.request_id])
        h = handoffs.get(record.request_id)
        if h is not None:  # between its Prefill (one worker) and its first Decode (the other)
            own.append((h.send_start_ms, h.received_ms, "handoff",
                        {"tokens": h.num_tokens, "bytes": h.num_bytes, "copy_ms": h.copy_ms,
                         **{f"{e.name}_ms": e.ms for e in h.link_estimates}}))
        # Waiting: from arrival to its first pass, and between its passes.
        previous_end = record.arrival_ms
        for start, end, phase, args in sorted(own, key=lambda p: p[0]):
            if start > previous_end:
                label = "waiting (queued)" if previous_end == record.arrival_ms else "waiting (not in this pass)"
                if any(a < start and b > previous_end for a, b in stalled[record.request_id]):
                    label = "stalled (holds its KV blocks, no positions in a pass)"
                events.append(_slice(REQUESTS_PID, tid, label, previous_end, start, "waiting"))
            name = "KV hand-off" if phase == "handoff" else PHASE_NAMES[phase]
            events.append(_slice(REQUESTS_PID, tid, name, start, end, phase, args))
            previous_end = max(previous_end, end)
    return events


def _observed_request(record, tid: int) -> list[dict[str, Any]]:
    """A request seen only from the client: sent -> first piece -> last piece, a tick per piece."""
    events = [_slice(REQUESTS_PID, tid, "until first token (queue + Prefill, not separable)", record.arrival_ms,
                     record.first_token_ms, "waiting", {"ttft_ms": record.ttft_ms, "prompt_tokens": record.prompt_len})]
    if record.finish_ms > record.first_token_ms:
        events.append(_slice(REQUESTS_PID, tid, "streaming (Decode)", record.first_token_ms, record.finish_ms,
                             "decode", {"pieces": len(record.output_pieces), "tpot_ms": record.tpot_ms}))
    for i, (t, piece) in enumerate(zip(record.token_times_ms, record.output_pieces)):
        events.append(_instant(REQUESTS_PID, tid, f"piece {i}", t, {"text": piece}))
    return events


def _worker_slices(run: ServingRun, wtid: Mapping[str, int]) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    kv_per_token = run.model.kv_bytes_per_token
    for worker in wtid:
        events.append(_counter(WORKERS_PID, f"batch size ({worker})", 0.0, {"requests": 0}))
    for it in run.iterations:
        name = f"pass {it.index}: {it.num_prefill_tokens} prefill + {it.num_decode_tokens} decode tokens"
        args = {"requests": [e.request_id for e in it.entries], "waiting": list(it.waiting),
                "preempted": list(it.preempted), "token_budget": it.token_budget,
                "used_blocks": it.blocks.num_used_blocks, "free_blocks": it.blocks.num_free_blocks}
        events.append(_slice(WORKERS_PID, wtid[it.worker], name, it.start_ms, it.end_ms, "pass", args))
        events.append(_counter(WORKERS_PID, f"batch size ({it.worker})", it.start_ms,
                               {"requests": len(it.entries)}))
        events.append(_counter(WORKERS_PID, f"batch size ({it.worker})", it.end_ms, {"requests": 0}))
        events.append(_counter(WORKERS_PID, f"KV bytes ({it.worker})", it.end_ms,
                               {"bytes": it.blocks.num_used_tokens * kv_per_token}))
    return events


# --- either -------------------------------------------------------------------

def trace_events(trace: RequestTrace | ServingRun, server_samples: Sequence[Mapping[str, Any]] = (),
                 felt: FeltTimes | None = None) -> dict:
    if isinstance(trace, ServingRun):
        return serving_run_events(trace, server_samples)
    if isinstance(trace, RequestTrace):
        return request_trace_events(trace, felt)
    raise TypeError(f"not a trace: {type(trace).__name__}")


def to_perfetto_json(trace: RequestTrace | ServingRun, server_samples: Sequence[Mapping[str, Any]] = (),
                     felt: FeltTimes | None = None) -> str:
    """The Chrome Trace Event JSON text (save as NAME.perfetto.json; open in ui.perfetto.dev). A time that
    is not finite is refused (engine.contract.errors.LimitError), never written as NaN or Infinity, which the
    format's JSON readers cannot parse. `felt`: a request's visitor's parts of TTFT, as the page measured them."""
    return dump_json(trace_events(trace, server_samples, felt), ensure_ascii=False, separators=(",", ":"))


def check_trace_events(doc: Any) -> list[str]:
    """Problems with a Trace Event document against the format's required fields ([] = none)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        return ["not a JSON object with a traceEvents list"]
    problems = []
    for i, event in enumerate(doc["traceEvents"]):
        problems += [f"event {i}: {p}" for p in _event_problems(event)]
    return problems


def _event_problems(event: Any) -> Iterable[str]:
    if not isinstance(event, dict):
        yield "not an object"
        return
    for key, kind in (("ph", str), ("name", str), ("pid", int), ("tid", int)):
        if not isinstance(event.get(key), kind) or isinstance(event.get(key), bool):
            yield f"{key} missing or not a {kind.__name__}"
    ph = event.get("ph")
    if ph not in _KNOWN_PHASES:
        yield f"unknown ph {ph!r}"
    ts = event.get("ts")
    if not isinstance(ts, (int, float)) or isinstance(ts, bool) or ts < 0:
        yield "ts missing or not a number of microseconds >= 0"
    if ph in _PHASES_WITH_DUR:
        dur = event.get("dur")
        if not isinstance(dur, (int, float)) or isinstance(dur, bool) or dur < 0:
            yield "an X event needs dur (microseconds >= 0)"
    if ph == "C":
        args = event.get("args")
        if not isinstance(args, dict) or not args or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) for v in args.values()):
            yield "a counter needs args with numeric values"
    if ph == "M":
        args = event.get("args")
        if event.get("name") in ("process_name", "thread_name") and not (
                isinstance(args, dict) and isinstance(args.get("name"), str)):
            yield "a name metadata event needs args.name"
    if ph == "i" and event.get("s", "t") not in ("g", "p", "t"):
        yield "an instant's scope s must be g, p or t"

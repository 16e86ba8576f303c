"""Measure any OpenAI-compatible streaming endpoint from the client: vLLM, SGLang, `transformers serve`.

    python -m engine probe --endpoint http://127.0.0.1:8000 --model NAME --scenario burst-16 --json

(the command line is engine/cli/probe.py; this module measures)

Each workload request (engine/contract/serving/workloads.py) is sent at its arrival time with
`stream: true` on its own thread (`--concurrency N`: at most N in flight, the others wait
for a slot on the client, as `vllm bench serve --max-concurrency` does); the client clock
reads every streamed chunk as it arrives. From those times the run gets the lesson's
metrics, with the same code as the in-process engine (engine/contract/serving/metrics.py):

    arrival_ms      when the request was sent (ms since the probe's clock started)
    first_token_ms  when the first chunk carrying text arrived
    finish_ms       when the last one did;  itl_ms: the gaps between consecutive chunks

A chunk is what the server chose to flush: usually one token, sometimes several tokens or
part of one (a server batches what is ready), so `output_pieces` are the streamed chunks and
there is one ITL between each two, as in vLLM's benchmark. The token counts the server
reports (`usage`, asked for with stream_options.include_usage) are kept beside them.

Observed from the client: no view inside the server's passes. Queueing and Prefill are one
wait (TTFT); the result is a ServingRun with no iterations, so the serving figures and
metrics apply unchanged. A client sees no token ids: `prompt_ids` and `output_ids` are empty, and
the record's `output_count` is the number of streamed pieces, its `prompt_count` the prompt tokens
the server reported (0 when it did not): counts, never a sequence of that many placeholders.
The run's `settings.policy` is OBSERVED_POLICY ("observed"): the server's scheduling is not
observable from here; block size and KV blocks are placeholders the record requires (notes say so).

Where the server exposes Prometheus `/metrics` (vLLM, SGLang), it is sampled during the run:
running and waiting requests and KV-cache usage (vllm:num_requests_running,
vllm:num_requests_waiting, vllm:kv_cache_usage_perc or the older vllm:gpu_cache_usage_perc;
sglang:num_running_reqs, sglang:num_queue_reqs, sglang:token_usage), summed over label sets
(usage: averaged).

Bad input gives one message naming the request it hit (`ProbeError`, an EngineError with a
key for the app's translation), and the other requests' results are kept: an unreachable
URL, a model the server does not serve, an HTTP error, a stream cut before its end, a chunk
that is not JSON, a server that sends nothing for `timeout_s` seconds, a field of the wrong
type (`choices[0].text` that is not a string, `usage` that is not an object, a token count
that is not a whole number or is over engine.contract.limits.PROBE_MAX_USAGE_TOKENS).

A reply costs little whatever it says (the bounds are engine/contract/limits.py's PROBE_*): each
request has a deadline, `timeout_s` plus PROBE_SECONDS_PER_TOKEN per max_tokens, that holds
however slowly the server trickles (a watchdog shuts the socket down, so a blocked read
returns); its stream may have PROBE_CHUNKS_PER_TOKEN x max_tokens + PROBE_CHUNK_SLACK data
chunks, PROBE_BYTES_PER_CHUNK bytes per allowed chunk (at most PROBE_MAX_STREAM_BYTES) and
PROBE_MAX_LINE_BYTES per line, read one line at a time; past any of them the request is cut
and its message says which bound and after how many pieces. GET /v1/models and each /metrics
scrape have a deadline and a body cap of their own. A token count stays a count (the record's
prompt length), never a sequence of that length.

The API key is read only from the environment variable the user names; it is sent as a Bearer
header and never stored, printed or written: KeyMask, applied where every reply is parsed,
replaces it with *** in everything that came from the server before anything is kept (error
text, every string of every JSON chunk, the streamed pieces, also a key split across pieces).

Standard library only (http.client, threading): the probe runs wherever Python does. By concern:

    endpoint.py    the endpoint URL and ProbeConfig (the settings, the key's variable)
    transport.py   bounded HTTP: StreamLimits, the Watchdog, bounded_get
    keymask.py     KeyMask, the API key replaced by *** in all a server sends
    sse.py         one request's Server-Sent Events, read within its bounds
    fields.py      a chunk's fields checked for their JSON types and counts
    prometheus.py  the /metrics sampler thread
    prefix_check.py  the prefix cache by the usage's cached_tokens and by /metrics' counters: agree?
    errors.py      ProbeError, connection_cause, a server's error text as one line
    probe.py       run_probe and what it returns (this module)
"""

from __future__ import annotations

import http.client
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

from engine.contract.interop.endpoint import Endpoint, ProbeConfig
from engine.contract.interop.errors import MAX_SHOWN_CHARS, ProbeError, connection_cause, error_detail
from engine.contract.interop.keymask import KeyMask
from engine.contract.interop.observed import OBSERVED_NOTE, observed_model, observed_run
from engine.contract.interop.prefix_check import PrefixCacheCheck, check_prefix_cache
from engine.contract.interop.prometheus import Sampler, ServerMetrics
from engine.contract.interop.sse import Stream, request_body, stream_one
from engine.contract.interop.transport import bounded_get
from engine.contract.limits import (PROBE_MAX_ERROR_BYTES, PROBE_MAX_MODELS_BYTES, PROBE_MODELS_DEADLINE_S, dump_json,
                                    load_json)
from engine.contract.serving.trace import RequestRecord, ServingRun
from engine.contract.serving.workloads import WorkloadRequest

PLACEHOLDER_NOTE = ("policy \"observed\"; block size and KV blocks are placeholders the serving record "
                    "requires: the server's scheduling and memory are not observable from the client")


# --- what a probe returns ------------------------------------------------------

@dataclass(frozen=True)
class ProbeRequest:
    """What the client saw of one request beyond the ServingRun's record of it."""

    request_id: str
    planned_arrival_ms: float  # the workload's arrival; arrival_ms is when it was really sent
    prompt_tokens: int | None  # the server's usage count (None: not reported)
    completion_tokens: int | None
    finish_reason: str | None  # "stop", "length", ... as the server said
    num_events: int  # SSE data events read (text chunks, role / usage / finish chunks)
    cached_tokens: int | None = None  # usage.prompt_tokens_details.cached_tokens (None: not reported)


@dataclass(frozen=True)
class ProbeFailure:
    request_id: str
    key: str  # ProbeError key (e.g. "probe_http"): err_<key> in lesson/text
    message: str  # one English line, the key masked
    planned_arrival_ms: float
    pieces_received: int  # chunks with text that arrived before it failed
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ProbeResult:
    endpoint: str  # without any user:password part
    api: str
    model: str
    run: ServingRun  # requests that finished; metrics from engine/contract/serving/metrics.py
    requests: tuple[ProbeRequest, ...]
    failures: tuple[ProbeFailure, ...]
    server_metrics: ServerMetrics

    def to_dict(self) -> dict[str, Any]:
        extra = {p.request_id: p for p in self.requests}
        per_request = []
        for r in self.run.requests:
            p = extra[r.request_id]
            per_request.append({
                "request_id": r.request_id, "arrival_ms": r.arrival_ms, "first_token_ms": r.first_token_ms,
                "finish_ms": r.finish_ms, "itl_ms": list(r.itl_ms), "output_pieces": list(r.output_pieces),
                "token_times_ms": list(r.token_times_ms), "ttft_ms": r.ttft_ms, "tpot_ms": r.tpot_ms,
                "e2el_ms": r.e2el_ms, "output_text": r.output_text, "stop_reason": r.stop_reason,
                **{k: v for k, v in asdict(p).items() if k != "request_id"},
            })
        return {
            "kind": "probe_result", "endpoint": self.endpoint, "api": self.api, "model": self.model,
            "note": OBSERVED_NOTE, "requests": per_request, "failures": [asdict(f) for f in self.failures],
            "metrics": asdict(self.run.metrics), "server_metrics": asdict(self.server_metrics),
            "prefix_cache": {**asdict(self.prefix_cache), "sentence": self.prefix_cache.sentence},
            "run": self.run.to_dict(),
        }

    def to_json(self, indent: int | None = 2) -> str:
        return dump_json(self.to_dict(), ensure_ascii=False, indent=indent)

    @property
    def prefix_cache(self) -> PrefixCacheCheck:
        """The server's prefix cache by the usage and by /metrics, and whether they agree (prefix_check.py)."""
        sm = self.server_metrics
        return check_prefix_cache([p.cached_tokens for p in self.requests], [p.prompt_tokens for p in self.requests],
                                  sm.prefix_first, sm.prefix_last, sm.prefix_names)

    def server_samples(self) -> list[dict[str, Any]]:
        """For lesson.perfetto: [{"t_ms", "values"}, ...]."""
        return [{"t_ms": s.t_ms, "values": s.values} for s in self.server_metrics.samples]


# --- the run -----------------------------------------------------------------------

def check_model(cfg: ProbeConfig, ep: Endpoint, headers: dict[str, str], mask: KeyMask) -> str | None:
    """GET /v1/models: refuse a model the server does not list, and an unreachable server, before sending.
    A server without the list (404) is probed anyway; the requests then say what went wrong. A list that
    cannot be read (not JSON, over PROBE_MAX_MODELS_BYTES, an id that is not a string) is probed anyway
    too: the returned note says the model name was not checked (None when it was, or there is no list).
    The whole exchange has a deadline: --timeout, at most PROBE_MODELS_DEADLINE_S."""
    where, deadline = "GET /v1/models", min(cfg.timeout_s, PROBE_MODELS_DEADLINE_S)
    try:
        status, raw = bounded_get(ep, ep.base_path + "/models", headers, deadline, PROBE_MAX_MODELS_BYTES)
    except TimeoutError:
        raise ProbeError("probe_timeout", f"{where}: no answer within {deadline:g} s", request_id=where,
                         timeout_s=deadline) from None
    except (OSError, http.client.HTTPException) as err:
        reason = mask(str(err) or type(err).__name__)
        raise ProbeError("probe_unreachable", f"{where}: cannot reach {ep.shown} ({reason})", request_id=where,
                         endpoint=ep.shown, reason=reason, cause=connection_cause(err)) from None
    if status in (401, 403):
        detail = error_detail((raw or b"")[:PROBE_MAX_ERROR_BYTES], mask)
        raise ProbeError("probe_http", f"{where}: the server answered HTTP {status}: {detail}", request_id=where,
                         status=status, detail=detail)
    if status != 200:
        return None
    served, why = served_models(raw, mask)
    if served is None:
        return f"{where}: {why}; the model name was not checked"
    if served and cfg.model not in served:
        shown = ", ".join(s[:MAX_SHOWN_CHARS] for s in served[:8]) + (" …" if len(served) > 8 else "")
        raise ProbeError("probe_model", f"the server does not serve the model {cfg.model!r}; it serves: {shown}",
                         model=cfg.model, served=shown)
    return None


def served_models(raw: bytes | None, mask: KeyMask) -> tuple[list[str] | None, str]:
    """The model ids a /v1/models body lists, masked, or (None, why the list cannot be read)."""
    if raw is None:
        return None, f"the list is over {PROBE_MAX_MODELS_BYTES} bytes"
    try:
        data = mask.json(load_json(raw.decode("utf-8", "replace")))
    except ValueError:  # not JSON, or over a JSON limit
        return None, "the list is not JSON"
    entries = data.get("data") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        return None, "the list has no data array"
    ids = []
    for i, entry in enumerate(entries):
        model_id = entry.get("id") if isinstance(entry, dict) else None
        if not isinstance(model_id, str):
            return None, f"data[{i}].id is not a string"
        ids.append(model_id)
    return ids, ""


Stretch = Callable[[str, int], str]  # (prompt, target tokens) -> the prompt stretched with the lesson's filler


def _prompts(workload: tuple[WorkloadRequest, ...], stretch: Stretch | None) -> list[str]:
    """Each request's text; `prompt_tokens` stretches it with the lesson's filler (needs `stretch`)."""
    if not any(r.prompt_tokens for r in workload):
        return [r.prompt for r in workload]
    if stretch is None:
        raise ProbeError("bad_probe_setting", "a request sets prompt_tokens but no tokenizer was given to count them",
                         name="prompt_tokens")
    return [stretch(r.prompt, r.prompt_tokens) if r.prompt_tokens else r.prompt for r in workload]


def run_probe(cfg: ProbeConfig, workload: tuple[WorkloadRequest, ...], *, scenario: str = "probe",
              stretch: Stretch | None = None, progress=None) -> ProbeResult:
    """Send `workload` to the endpoint at its arrival times and measure every stream from the client.
    `stretch(prompt, n)` stretches prompts with prompt_tokens (the CLI: the embedded model's tokenizer in
    this process; the app: the engine worker's, so no torch here), so the server's own count may differ:
    its usage is kept. `progress(done, total)` is called after each request."""
    ep = Endpoint.parse(cfg.endpoint)
    key = cfg.api_key()
    mask = KeyMask(key)
    headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    model_note = check_model(cfg, ep, headers, mask)
    prompts = _prompts(workload, stretch)
    ids = [r.request_id or f"r{i}" for i, r in enumerate(workload)]
    streams = [Stream() for _ in workload]
    errors: list[ProbeError | None] = [None] * len(workload)
    lock, finished = threading.Lock(), [0]

    def one(i: int) -> None:
        try:
            body = request_body(cfg, workload[i], prompts[i])
            stream_one(cfg, ep, ids[i], workload[i], body, headers, streams[i], mask)
        except ProbeError as err:
            errors[i] = err
        except Exception as err:  # noqa: BLE001 - a request's own failure, never the others'
            errors[i] = ProbeError("probe_unreachable", f"{ids[i]}: {type(err).__name__}: {mask(str(err))[:200]}",
                                   request_id=ids[i], endpoint=ep.shown, reason=type(err).__name__,
                                   cause=connection_cause(err))
        with lock:
            finished[0] += 1
            if progress is not None:
                progress(finished[0], len(workload))

    t0 = time.perf_counter()
    sampler = Sampler(ep, headers, cfg.metrics_interval_s, t0, mask)
    sampler.start()
    order = sorted(range(len(workload)), key=lambda i: workload[i].arrival_ms)
    with ThreadPoolExecutor(max_workers=cfg.concurrency or len(workload), thread_name_prefix="probe") as pool:
        for i in order:  # send at the arrival times (a slot permitting)
            delay = t0 + workload[i].arrival_ms / 1e3 - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            pool.submit(one, i)
    wall_ms = (time.perf_counter() - t0) * 1e3
    server = sampler.stop()
    return _result(cfg, ep, workload, prompts, ids, streams, errors, t0, wall_ms, server, scenario, model_note)


def _result(cfg, ep, workload, prompts, ids, streams, errors, t0, wall_ms, server, scenario,
            model_note=None) -> ProbeResult:
    records, extras, failures = [], [], []
    for req, prompt, rid, s, err in zip(workload, prompts, ids, streams, errors):
        if err is not None:
            failures.append(ProbeFailure(rid, err.key, str(err), req.arrival_ms, len(s.pieces),
                                         {k: v for k, v in err.params.items()}))
            continue
        records.append(_record(req, prompt, rid, s, t0))
        extras.append(ProbeRequest(rid, req.arrival_ms, s.prompt_tokens, s.completion_tokens, s.finish_reason,
                                   s.events, s.cached_tokens))
    records.sort(key=lambda r: r.arrival_ms)
    notes = [OBSERVED_NOTE, PLACEHOLDER_NOTE, f"endpoint {ep.shown}, {cfg.api} API, "
             f"concurrency {cfg.concurrency or 'unlimited'}, timeout {cfg.timeout_s:g} s without a byte"]
    if model_note:
        notes.append(model_note)
    if failures:
        notes.append(f"{len(failures)} of {len(workload)} requests failed; metrics cover the others")
    if any(r.prompt_tokens for r in workload):
        notes.append("prompts stretched to prompt_tokens with the embedded model's tokenizer; the server's own "
                     "count is in usage (the record's prompt_count is the count it reported)")
    run = observed_run(scenario, observed_model(cfg.model, "(remote server)", ep.shown), records, wall_ms=wall_ms,
                       notes=notes, slo=cfg.slo)
    return ProbeResult(ep.shown, cfg.api, cfg.model, run, tuple(extras), tuple(failures), server)


def _record(req: WorkloadRequest, prompt: str, rid: str, s: Stream, t0: float) -> RequestRecord:
    """One measured stream as a RequestRecord: times in ms since `t0`; no ids (a client sees none), their counts."""
    def ms(t: float) -> float:
        return (t - t0) * 1e3

    times = [ms(t) for t in s.times]
    prompt_n = s.prompt_tokens
    sent = ms(s.sent)
    return RequestRecord(
        request_id=rid, prompt=prompt, prompt_ids=(), prompt_count=prompt_n or 0, prompt_pieces=(),
        output_ids=(), output_count=len(times), output_pieces=tuple(s.pieces), output_text="".join(s.pieces),
        max_new_tokens=req.max_new_tokens, ignore_eos=req.ignore_eos, arrival_ms=sent, first_scheduled_ms=sent,
        first_token_ms=times[0] if times else sent, finish_ms=times[-1] if times else sent,
        token_times_ms=tuple(times), itl_ms=tuple(b - a for a, b in zip(times, times[1:])),
        stop_reason="length" if s.finish_reason == "length" else "eos",
    )

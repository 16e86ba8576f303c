"""Measure any OpenAI-compatible streaming endpoint from the client: vLLM, SGLang, `transformers serve`.

    python -m engine probe --endpoint http://127.0.0.1:8000 --model NAME --scenario burst-16 --json

(the command line is engine/cli/probe.py; this module measures)

Each workload request (engine/serving/workloads.py) is sent at its arrival time with
`stream: true` on its own thread (`--concurrency N`: at most N in flight, the others wait
for a slot on the client, as `vllm bench serve --max-concurrency` does); the client clock
reads every streamed chunk as it arrives. From those times the run gets the lesson's
metrics, with the same code as the in-process engine (engine/serving/metrics.py):

    arrival_ms      when the request was sent (ms since the probe's clock started)
    first_token_ms  when the first chunk carrying text arrived
    finish_ms       when the last one did;  itl_ms: the gaps between consecutive chunks

A chunk is what the server chose to flush: usually one token, sometimes several tokens or
part of one (a server batches what is ready), so `output_pieces` are the streamed chunks and
there is one ITL between each two, as in vLLM's benchmark. The token counts the server
reports (`usage`, asked for with stream_options.include_usage) are kept beside them.

Observed from the client: no view inside the server's passes. Queueing and Prefill are one
wait (TTFT); the result is a ServingRun with no iterations, so the serving figures and
metrics apply unchanged. A client sees no token ids: `output_ids` holds -1 per streamed
piece and `prompt_ids` -1 per prompt token the server reported (none when it did not).
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
that is not JSON, a server that sends nothing for `timeout_s` seconds. The API key is read
only from the environment variable the user names; it is sent as a Bearer header and never
stored, printed or written (any echo of it in a server's error text is masked).

Standard library only (http.client, threading): the probe runs wherever Python does.
"""

from __future__ import annotations

import errno
import http.client
import json
import math
import os
import re
import socket
import ssl
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

from ..errors import EngineError, InputError
from ..prompts import extend_prompt
from ..serving.trace import SLO, RequestRecord, ServingRun
from ..serving.workloads import WorkloadRequest
from .observed import OBSERVED_NOTE, observed_model, observed_run

APIS = ("completions", "chat")
PLACEHOLDER_NOTE = ("policy \"observed\"; block size and KV blocks are placeholders the serving record "
                    "requires: the server's scheduling and memory are not observable from the client")
MAX_DETAIL_CHARS = 300  # of a server's error text, in a message
MAX_ERROR_BODY = 4096
MAX_LINE = 4 << 20  # one SSE line; a longer one is cut and then fails as a chunk that is not JSON
# Prometheus names -> the lesson's series (summed over label sets; *_usage averaged)
SERVER_SERIES = {
    "running": ("vllm:num_requests_running", "sglang:num_running_reqs"),
    "waiting": ("vllm:num_requests_waiting", "sglang:num_queue_reqs"),
    "kv_cache_usage": ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "sglang:token_usage"),
}


class ProbeError(EngineError):
    """One request (or the whole probe) could not be measured; `params["request_id"]` names it."""


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


@dataclass(frozen=True)
class ProbeFailure:
    request_id: str
    key: str  # ProbeError key (e.g. "probe_http"): err_<key> in lesson/text
    message: str  # one English line, the key masked
    planned_arrival_ms: float
    pieces_received: int  # chunks with text that arrived before it failed
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ServerSample:
    t_ms: float  # since the probe's clock started
    values: dict[str, float | None]  # running, waiting, kv_cache_usage (None: the server lacks that one)


@dataclass(frozen=True)
class ServerMetrics:
    url: str
    available: bool
    reason: str  # why not sampled ("HTTP 404", "no vLLM or SGLang metric names"), "" when sampled
    names: dict[str, str] = field(default_factory=dict)  # series -> the Prometheus name found
    samples: tuple[ServerSample, ...] = ()


@dataclass(frozen=True)
class ProbeResult:
    endpoint: str  # without any user:password part
    api: str
    model: str
    run: ServingRun  # requests that finished; metrics from engine/serving/metrics.py
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
            "run": self.run.to_dict(),
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=indent)

    def server_samples(self) -> list[dict[str, Any]]:
        """For lesson.perfetto: [{"t_ms", "values"}, ...]."""
        return [{"t_ms": s.t_ms, "values": s.values} for s in self.server_metrics.samples]


# --- the endpoint ----------------------------------------------------------------

@dataclass(frozen=True)
class Endpoint:
    scheme: str
    host: str
    port: int
    base_path: str  # ".../v1"

    @classmethod
    def parse(cls, url: str) -> "Endpoint":
        parts = urllib.parse.urlsplit(url.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ProbeError("probe_endpoint", f"the endpoint must be an http:// or https:// URL, got {_shown(url)!r}",
                             endpoint=_shown(url))
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            raise ProbeError("probe_endpoint", f"the endpoint has a bad port: {_shown(url)!r}",
                             endpoint=_shown(url)) from None
        path = parts.path.rstrip("/")
        if not path.endswith("/v1"):
            path += "/v1"
        return cls(parts.scheme, parts.hostname, port, path)

    @property
    def shown(self) -> str:
        """The URL without credentials, for messages and results."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}{self.base_path}"

    def connection(self, timeout_s: float) -> http.client.HTTPConnection:
        if self.scheme == "https":
            return http.client.HTTPSConnection(self.host, self.port, timeout=timeout_s,
                                               context=ssl.create_default_context())
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout_s)


CONNECTION_CAUSES = ("refused", "no_host", "reset", "tls", "protocol", "other")


def connection_cause(err: BaseException) -> str:
    """Why a connection failed, as one of CONNECTION_CAUSES (a page words it; the OS text stays detail)."""
    if isinstance(err, ConnectionRefusedError) or getattr(err, "errno", None) == errno.ECONNREFUSED:
        return "refused"
    if isinstance(err, socket.gaierror):
        return "no_host"
    if isinstance(err, (ConnectionResetError, ConnectionAbortedError, BrokenPipeError)):
        return "reset"
    if isinstance(err, ssl.SSLError):
        return "tls"
    if isinstance(err, http.client.HTTPException):
        return "protocol"
    return "other"


def _shown(url: str) -> str:
    """A URL with any user:password@ removed."""
    parts = urllib.parse.urlsplit(url)
    if parts.username or parts.password:
        netloc = parts.netloc.rsplit("@", 1)[1]
        return urllib.parse.urlunsplit(parts._replace(netloc=netloc))
    return url


@dataclass(frozen=True)
class ProbeConfig:
    endpoint: str
    model: str
    api: str = "completions"
    concurrency: int | None = None  # most requests in flight; None: no limit
    timeout_s: float = 60.0  # seconds without a byte from the server before a request fails
    api_key_env: str | None = None  # the NAME of the environment variable holding the key
    send_ignore_eos: bool = True  # vLLM / SGLang accept ignore_eos; transformers serve refuses unknown fields
    metrics_interval_s: float = 0.25
    temperature: float = 0.0
    slo: SLO = SLO()

    def __post_init__(self) -> None:
        if self.api not in APIS:
            raise InputError("bad_probe_setting", f"--api must be one of {', '.join(APIS)}, got {self.api!r}",
                             name="api")
        if self.concurrency is not None and self.concurrency < 1:
            raise InputError("bad_probe_setting", f"--concurrency must be at least 1, got {self.concurrency}",
                             name="concurrency")
        if not (self.timeout_s > 0 and math.isfinite(self.timeout_s)):
            raise InputError("bad_probe_setting", f"--timeout must be a positive number of seconds, got "
                                                  f"{self.timeout_s}", name="timeout")
        if not self.model.strip():
            raise InputError("bad_probe_setting", "--model is empty", name="model")
        Endpoint.parse(self.endpoint)

    def api_key(self) -> str | None:
        if self.api_key_env is None:
            return None
        key = os.environ.get(self.api_key_env)
        if not key:
            raise ProbeError("probe_api_key_env", f"the environment variable {self.api_key_env} is not set "
                                                  "(it should hold the API key)", name=self.api_key_env)
        return key


# --- one request -------------------------------------------------------------------

class _Stream:
    """What one request's stream delivered so far (kept when it fails part-way)."""

    def __init__(self) -> None:
        self.sent: float | None = None  # perf_counter seconds
        self.times: list[float] = []
        self.pieces: list[str] = []
        self.finish_reason: str | None = None
        self.usage: dict[str, Any] | None = None
        self.events = 0


def _body(cfg: ProbeConfig, req: WorkloadRequest, prompt: str) -> dict[str, Any]:
    body: dict[str, Any] = {"model": cfg.model, "max_tokens": req.max_new_tokens, "stream": True,
                            "stream_options": {"include_usage": True}, "temperature": cfg.temperature}
    if cfg.api == "chat":
        body["messages"] = [{"role": "user", "content": prompt}]
    else:
        body["prompt"] = prompt
    if req.ignore_eos and cfg.send_ignore_eos:
        body["ignore_eos"] = True  # vLLM's and SGLang's extension: write max_tokens tokens
    return body


def _detail(raw: bytes, mask) -> str:
    """A server's error body as one short line: its JSON message when it has one."""
    text = raw.decode("utf-8", "replace")
    try:
        data = json.loads(text)
        if isinstance(data, dict):
            err = data.get("error", data.get("detail", data.get("message", text)))
            text = err.get("message", json.dumps(err)) if isinstance(err, dict) else str(err)
        elif isinstance(data, str):  # {"error": "text"} as transformers serve streams it
            text = data
    except json.JSONDecodeError:
        pass
    text = " ".join(mask(text).split())
    return text[:MAX_DETAIL_CHARS] + ("…" if len(text) > MAX_DETAIL_CHARS else "")


def _stream_one(cfg: ProbeConfig, ep: Endpoint, rid: str, body: dict[str, Any], headers: dict[str, str],
                stream: _Stream, mask) -> None:
    """Send one request and read its Server-Sent Events; raises ProbeError naming `rid`."""
    path = ep.base_path + ("/chat/completions" if cfg.api == "chat" else "/completions")
    conn = ep.connection(cfg.timeout_s)
    try:
        try:
            stream.sent = time.perf_counter()
            conn.request("POST", path, body=json.dumps(body).encode("utf-8"), headers=headers)
            resp = conn.getresponse()
        except (socket.timeout, TimeoutError):
            raise ProbeError("probe_timeout", f"{rid}: no answer within {cfg.timeout_s:g} s", request_id=rid,
                             timeout_s=cfg.timeout_s) from None
        except (OSError, http.client.HTTPException) as err:
            reason = mask(str(err) or type(err).__name__)
            raise ProbeError("probe_unreachable", f"{rid}: cannot reach {ep.shown} ({reason})", request_id=rid,
                             endpoint=ep.shown, reason=reason, cause=connection_cause(err)) from None
        if resp.status != 200:
            detail = _detail(resp.read(MAX_ERROR_BODY), mask)
            raise ProbeError("probe_http", f"{rid}: the server answered HTTP {resp.status}: {detail}",
                             request_id=rid, status=resp.status, detail=detail)
        _read_events(cfg, rid, resp, stream, mask)
    finally:
        conn.close()


def _read_events(cfg: ProbeConfig, rid: str, resp, stream: _Stream, mask) -> None:
    done = False
    while True:
        try:
            line = resp.readline(MAX_LINE)
        except (socket.timeout, TimeoutError):
            raise ProbeError("probe_timeout", f"{rid}: no answer within {cfg.timeout_s:g} s (after "
                                              f"{len(stream.pieces)} pieces)", request_id=rid,
                             timeout_s=cfg.timeout_s) from None
        except (OSError, http.client.HTTPException):  # IncompleteRead, reset: the stream was cut
            line = b""
        now = time.perf_counter()
        if not line:
            break
        text = line.decode("utf-8", "replace").strip()
        if not text.startswith("data:"):
            continue  # blank separators, ": keep-alive" comments, event: / id: fields
        data = text[5:].strip()
        if data == "[DONE]":
            done = True
            break
        stream.events += 1
        try:
            chunk = json.loads(data)
        except json.JSONDecodeError:
            shown = mask(data)[:80]
            raise ProbeError("probe_bad_chunk", f"{rid}: a streamed chunk is not JSON: {shown!r}", request_id=rid,
                             chunk=shown) from None
        if not isinstance(chunk, dict):
            raise ProbeError("probe_bad_chunk", f"{rid}: a streamed chunk is not a JSON object", request_id=rid,
                             chunk=mask(data)[:80])
        if "error" in chunk:
            detail = _detail(json.dumps(chunk["error"]).encode(), mask)
            raise ProbeError("probe_stream_error", f"{rid}: the server reported an error in the stream: {detail}",
                             request_id=rid, detail=detail)
        if chunk.get("usage"):
            stream.usage = chunk["usage"]
        for choice in chunk.get("choices") or ():
            piece = choice.get("text") if cfg.api == "completions" else (choice.get("delta") or {}).get("content")
            if piece:
                stream.times.append(now)
                stream.pieces.append(piece)
            if choice.get("finish_reason"):
                stream.finish_reason = choice["finish_reason"]
    if stream.finish_reason is None and not done:
        raise ProbeError("probe_cut", f"{rid}: the stream ended before the answer did (after "
                                      f"{len(stream.pieces)} pieces)", request_id=rid, pieces=len(stream.pieces))


# --- Prometheus /metrics ---------------------------------------------------------

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})?\s+(\S+)(?:\s+\S+)?$")


def parse_prometheus(text: str) -> dict[str, list[float]]:
    """Prometheus text exposition -> name -> the values of its label sets (comments skipped)."""
    out: dict[str, list[float]] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if not m:
            continue
        try:
            value = float(m.group(3))
        except ValueError:
            continue
        out.setdefault(m.group(1), []).append(value)
    return out


def server_values(parsed: dict[str, list[float]]) -> tuple[dict[str, str], dict[str, float | None]]:
    """The lesson's series from one scrape: (series -> name used, series -> value or None)."""
    names, values = {}, {}
    for series, candidates in SERVER_SERIES.items():
        name = next((n for n in candidates if n in parsed and parsed[n]), None)
        if name is None:
            values[series] = None
            continue
        vals = [v for v in parsed[name] if math.isfinite(v)]
        names[series] = name
        if not vals:
            values[series] = None
        else:
            values[series] = sum(vals) / len(vals) if series == "kv_cache_usage" else sum(vals)
    return names, values


def _scrape(ep: Endpoint, headers: dict[str, str], timeout_s: float) -> tuple[int, str]:
    conn = ep.connection(timeout_s)
    try:
        conn.request("GET", "/metrics", headers=headers)
        resp = conn.getresponse()
        return resp.status, resp.read(4 << 20).decode("utf-8", "replace")
    finally:
        conn.close()


class _Sampler:
    """Samples /metrics on its own thread every `interval_s` while the run lasts."""

    def __init__(self, ep: Endpoint, headers: dict[str, str], interval_s: float, t0: float) -> None:
        self.ep, self.headers, self.interval_s, self.t0 = ep, headers, interval_s, t0
        self.url = f"{ep.scheme}://{ep.host}:{ep.port}/metrics"
        self.samples: list[ServerSample] = []
        self.names: dict[str, str] = {}
        self.reason = ""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        try:
            status, text = _scrape(self.ep, self.headers, min(self.interval_s * 8, 5.0))
        except (OSError, http.client.HTTPException) as err:
            self.reason = f"cannot read /metrics ({type(err).__name__})"
            return
        if status != 200:
            self.reason = f"HTTP {status}"
            return
        names, values = server_values(parse_prometheus(text))
        if not names:
            self.reason = "no vLLM or SGLang metric names"
            return
        self.names = names
        self.samples.append(ServerSample(self._ms(), values))
        self._thread = threading.Thread(target=self._loop, name="probe-metrics", daemon=True)
        self._thread.start()

    def _ms(self) -> float:
        return (time.perf_counter() - self.t0) * 1e3

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._sample_once()

    def _sample_once(self) -> None:
        try:
            status, text = _scrape(self.ep, self.headers, min(self.interval_s * 8, 5.0))
        except (OSError, http.client.HTTPException):
            return  # a missed sample is a gap, not a zero
        if status == 200:
            self.samples.append(ServerSample(self._ms(), server_values(parse_prometheus(text))[1]))

    def stop(self) -> ServerMetrics:
        if self._thread is not None:
            self._stop.set()
            self._thread.join(timeout=10)
            self._sample_once()  # the state after the last request
        return ServerMetrics(self.url, bool(self.names), self.reason, dict(self.names), tuple(self.samples))


# --- the run -----------------------------------------------------------------------

def check_model(cfg: ProbeConfig, ep: Endpoint, headers: dict[str, str], mask) -> None:
    """GET /v1/models: refuse a model the server does not list, and an unreachable server, before sending.
    A server without the list (404) is probed anyway; the requests then say what went wrong."""
    conn = ep.connection(min(cfg.timeout_s, 30.0))
    try:
        conn.request("GET", ep.base_path + "/models", headers=headers)
        resp = conn.getresponse()
        status, raw = resp.status, resp.read(1 << 20)
    except (socket.timeout, TimeoutError):
        raise ProbeError("probe_timeout", f"GET /v1/models: no answer within {min(cfg.timeout_s, 30.0):g} s",
                         request_id="GET /v1/models", timeout_s=min(cfg.timeout_s, 30.0)) from None
    except (OSError, http.client.HTTPException) as err:
        reason = mask(str(err) or type(err).__name__)
        raise ProbeError("probe_unreachable", f"GET /v1/models: cannot reach {ep.shown} ({reason})",
                         request_id="GET /v1/models", endpoint=ep.shown, reason=reason,
                         cause=connection_cause(err)) from None
    finally:
        conn.close()
    if status in (401, 403):
        detail = _detail(raw, mask)
        raise ProbeError("probe_http", f"GET /v1/models: the server answered HTTP {status}: {detail}",
                         request_id="GET /v1/models", status=status, detail=detail)
    if status != 200:
        return
    try:
        served = [m["id"] for m in json.loads(raw)["data"]]
    except (ValueError, KeyError, TypeError):
        return
    if served and cfg.model not in served:
        shown = ", ".join(served[:8]) + (" …" if len(served) > 8 else "")
        raise ProbeError("probe_model", f"the server does not serve the model {cfg.model!r}; it serves: {shown}",
                         model=cfg.model, served=shown)


def _prompts(workload: tuple[WorkloadRequest, ...], tokenizer) -> list[str]:
    """Each request's text; `prompt_tokens` stretches it with the lesson's filler (needs a tokenizer)."""
    if not any(r.prompt_tokens for r in workload):
        return [r.prompt for r in workload]
    if tokenizer is None:  # optional and heavy: only a stretched prompt needs transformers (and torch)
        from transformers import AutoTokenizer

        from ..model import DEFAULT_MODEL_DIR

        tokenizer = AutoTokenizer.from_pretrained(str(DEFAULT_MODEL_DIR))
    return [extend_prompt(tokenizer, r.prompt, r.prompt_tokens) if r.prompt_tokens else r.prompt for r in workload]


def run_probe(cfg: ProbeConfig, workload: tuple[WorkloadRequest, ...], *, scenario: str = "probe",
              tokenizer=None, progress=None) -> ProbeResult:
    """Send `workload` to the endpoint at its arrival times and measure every stream from the client.
    `tokenizer` stretches prompts with prompt_tokens (default: the embedded model's, so the server's own
    count may differ: its usage is kept). `progress(done, total)` is called after each request."""
    ep = Endpoint.parse(cfg.endpoint)
    key = cfg.api_key()

    def mask(text: str) -> str:
        return text.replace(key, "***") if key else text

    headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    check_model(cfg, ep, headers, mask)
    prompts = _prompts(workload, tokenizer)
    ids = [r.request_id or f"r{i}" for i, r in enumerate(workload)]
    streams = [_Stream() for _ in workload]
    errors: list[ProbeError | None] = [None] * len(workload)
    lock, finished = threading.Lock(), [0]

    def one(i: int) -> None:
        try:
            _stream_one(cfg, ep, ids[i], _body(cfg, workload[i], prompts[i]), headers, streams[i], mask)
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
    sampler = _Sampler(ep, headers, cfg.metrics_interval_s, t0)
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
    return _result(cfg, ep, workload, prompts, ids, streams, errors, t0, wall_ms, server, scenario)


def _result(cfg, ep, workload, prompts, ids, streams, errors, t0, wall_ms, server, scenario) -> ProbeResult:
    records, extras, failures = [], [], []
    for req, prompt, rid, s, err in zip(workload, prompts, ids, streams, errors):
        if err is not None:
            failures.append(ProbeFailure(rid, err.key, str(err), req.arrival_ms, len(s.pieces),
                                         {k: v for k, v in err.params.items()}))
            continue
        usage = s.usage or {}
        records.append(_record(req, prompt, rid, s, t0))
        extras.append(ProbeRequest(rid, req.arrival_ms, usage.get("prompt_tokens"), usage.get("completion_tokens"),
                                   s.finish_reason, s.events))
    records.sort(key=lambda r: r.arrival_ms)
    notes = [OBSERVED_NOTE, PLACEHOLDER_NOTE, f"endpoint {ep.shown}, {cfg.api} API, "
             f"concurrency {cfg.concurrency or 'unlimited'}, timeout {cfg.timeout_s:g} s without a byte"]
    if failures:
        notes.append(f"{len(failures)} of {len(workload)} requests failed; metrics cover the others")
    if any(r.prompt_tokens for r in workload):
        notes.append("prompts stretched to prompt_tokens with the embedded model's tokenizer; the server's own "
                     "count is in usage (prompt_ids holds one -1 per token it reported)")
    run = observed_run(scenario, observed_model(cfg.model, "(remote server)", ep.shown), records, wall_ms=wall_ms,
                       notes=notes, slo=cfg.slo)
    return ProbeResult(ep.shown, cfg.api, cfg.model, run, tuple(extras), tuple(failures), server)


def _record(req: WorkloadRequest, prompt: str, rid: str, s: _Stream, t0: float) -> RequestRecord:
    """One measured stream as a RequestRecord: times in ms since `t0`, -1 for every id a client cannot see."""
    def ms(t: float) -> float:
        return (t - t0) * 1e3

    times = [ms(t) for t in s.times]
    prompt_n = (s.usage or {}).get("prompt_tokens")
    sent = ms(s.sent)
    return RequestRecord(
        request_id=rid, prompt=prompt, prompt_ids=(-1,) * int(prompt_n or 0), prompt_pieces=(),
        output_ids=(-1,) * len(times), output_pieces=tuple(s.pieces), output_text="".join(s.pieces),
        max_new_tokens=req.max_new_tokens, ignore_eos=req.ignore_eos, arrival_ms=sent, first_scheduled_ms=sent,
        first_token_ms=times[0] if times else sent, finish_ms=times[-1] if times else sent,
        token_times_ms=tuple(times), itl_ms=tuple(b - a for a, b in zip(times, times[1:])),
        stop_reason="length" if s.finish_reason == "length" else "eos",
    )

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

Standard library only (http.client, threading): the probe runs wherever Python does.
"""

from __future__ import annotations

import contextlib
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
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

from engine.contract.errors import EngineError, InputError, LimitError
from engine.contract.limits import (MAX_MAGNITUDE, PROBE_BYTES_PER_CHUNK, PROBE_CHUNK_SLACK, PROBE_CHUNKS_PER_TOKEN,
                      PROBE_MAX_ERROR_BYTES, PROBE_MAX_LINE_BYTES, PROBE_MAX_METRICS_BYTES, PROBE_MAX_MODELS_BYTES,
                      PROBE_MAX_STREAM_BYTES, PROBE_MAX_USAGE_TOKENS, PROBE_METRICS_DEADLINE_S, PROBE_MODELS_DEADLINE_S,
                      PROBE_SECONDS_PER_TOKEN, check_count, dump_json, load_json)
from engine.contract.interop.observed import OBSERVED_NOTE, observed_model, observed_run
from engine.contract.serving.trace import SLO, RequestRecord, ServingRun
from engine.contract.serving.workloads import WorkloadRequest

APIS = ("completions", "chat")
PLACEHOLDER_NOTE = ("policy \"observed\"; block size and KV blocks are placeholders the serving record "
                    "requires: the server's scheduling and memory are not observable from the client")
MAX_DETAIL_CHARS = 300  # of a server's error text, in a message
MAX_SHOWN_CHARS = 80  # of a server's value (a chunk, a field), in a message
MAX_REASON_CHARS = 100  # of a finish_reason kept
MASK = "***"
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
            "run": self.run.to_dict(),
        }

    def to_json(self, indent: int | None = 2) -> str:
        return dump_json(self.to_dict(), ensure_ascii=False, indent=indent)

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
    def parse(cls, url: str) -> Endpoint:
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
    timeout_s: float = 60.0  # seconds without a byte before a request fails (its deadline: stream_limits)
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


# --- what one reply may cost -----------------------------------------------------

@dataclass(frozen=True)
class StreamLimits:
    """What one request's stream may cost: seconds in all, data chunks, bytes in all and per line."""

    deadline_s: float
    max_chunks: int
    max_bytes: int
    max_line: int


def stream_limits(max_tokens: int, timeout_s: float) -> StreamLimits:
    """The bounds of a request for `max_tokens` tokens (engine/contract/limits.py's PROBE_*): `timeout_s` plus
    PROBE_SECONDS_PER_TOKEN per token in all; PROBE_CHUNKS_PER_TOKEN chunks per token plus
    PROBE_CHUNK_SLACK; PROBE_BYTES_PER_CHUNK bytes per allowed chunk, at most PROBE_MAX_STREAM_BYTES."""
    chunks = PROBE_CHUNKS_PER_TOKEN * max_tokens + PROBE_CHUNK_SLACK
    return StreamLimits(deadline_s=timeout_s + PROBE_SECONDS_PER_TOKEN * max_tokens, max_chunks=chunks,
                        max_bytes=min(PROBE_MAX_STREAM_BYTES, PROBE_BYTES_PER_CHUNK * chunks),
                        max_line=PROBE_MAX_LINE_BYTES)


class Watchdog:
    """Shuts a connection's socket down once `seconds` have passed, so a read blocked on a server that
    trickles (each byte within the silence timeout) returns; `passed` then says the deadline is why.

    The socket timeout bounds one silence; this bounds the whole exchange. Only the socket is shut
    down (both ways), never closed under the reading thread: its read ends with an EOF or an error.
    `connect()` opens the connection and keeps its socket: http.client lets go of its own reference
    once a reply says "Connection: close", while the reply's reads still use it."""

    def __init__(self, conn: http.client.HTTPConnection, seconds: float) -> None:
        self.conn, self.seconds = conn, seconds
        self.end = time.monotonic() + seconds
        self._fired = False
        self._sock: socket.socket | None = None
        self._timer = threading.Timer(seconds, self._cut)
        self._timer.daemon = True

    def __enter__(self) -> Watchdog:
        self._timer.start()
        return self

    def __exit__(self, *exc) -> None:
        self._timer.cancel()

    @property
    def passed(self) -> bool:
        return self._fired or time.monotonic() >= self.end

    def connect(self) -> None:
        self.conn.connect()  # within the socket timeout, which is never longer than the deadline
        self._sock = self.conn.sock
        if self._fired:  # the deadline passed while connecting
            self._cut()

    def _cut(self) -> None:
        self._fired = True
        sock = self._sock or self.conn.sock
        if sock is not None:
            with contextlib.suppress(OSError):  # socket.socket's own shutdown: an SSL socket keeps its state
                socket.socket.shutdown(sock, socket.SHUT_RDWR)


def bounded_get(ep: Endpoint, path: str, headers: dict[str, str], deadline_s: float,
                max_bytes: int) -> tuple[int, bytes | None]:
    """GET `path` within `deadline_s` in all (a trickle included), reading at most `max_bytes` of body:
    (status, body), the body None when it is longer. Raises TimeoutError past the deadline (or after
    `deadline_s` of silence), OSError or http.client.HTTPException when the connection fails."""
    conn = ep.connection(deadline_s)
    with Watchdog(conn, deadline_s) as dog:
        try:
            dog.connect()
            conn.request("GET", path, headers=headers)
            resp = conn.getresponse()
            raw = resp.read(max_bytes + 1)
        except (OSError, http.client.HTTPException):
            if dog.passed:
                raise TimeoutError(f"no answer within {deadline_s:g} s") from None
            raise
        finally:
            conn.close()
        if dog.passed:  # the cut ended the read early: what came is not the whole body
            raise TimeoutError(f"no answer within {deadline_s:g} s")
    return resp.status, raw if len(raw) <= max_bytes else None


# --- the API key, masked in whatever a server sends --------------------------------

class KeyMask:
    """The one mask at the boundary where replies are parsed: the API key replaced by *** in
    everything a server sent, before any of it is kept. Called on a string; `json` masks every
    string (keys too) of a parsed JSON value; `pieces` masks the streamed pieces as one text, so a
    key split across pieces is caught: "".join(mask.pieces(p)) == mask("".join(p)).
    Without a key everything passes unchanged."""

    def __init__(self, key: str | None) -> None:
        self.key = key or None

    def __call__(self, text: str) -> str:
        return text.replace(self.key, MASK) if self.key else text

    def json(self, value: Any) -> Any:
        if not self.key or value is None or isinstance(value, (bool, int, float)):
            return value
        if isinstance(value, str):
            return self(value)
        if isinstance(value, list):
            return [self.json(v) for v in value]
        return {self.json(k): self.json(v) for k, v in value.items()}  # a dict: parsed JSON holds nothing else

    def pieces(self, pieces: list[str]) -> list[str]:
        joined = "".join(pieces)
        if not self.key or self.key not in joined:
            return list(pieces)
        spans, at = [], joined.find(self.key)
        while at >= 0:
            spans.append((at, at + len(self.key)))
            at = joined.find(self.key, at + len(self.key))
        out, start, k = [], 0, 0
        for piece in pieces:
            end, parts, cur = start + len(piece), [], start
            while k < len(spans) and spans[k][0] < end:
                a, b = spans[k]
                parts.append(joined[cur:max(cur, a)])
                if a >= start:
                    parts.append(MASK)  # the key starts in this piece: its mask goes here
                cur = min(b, end)
                if b > end:
                    break  # the key goes on into the next piece
                k += 1
            parts.append(joined[cur:end])
            out.append("".join(parts))
            start = end
        return out


# --- the fields of a reply -------------------------------------------------------------

JSON_TYPES = {dict: "object", list: "array", str: "string", bool: "boolean", int: "number", float: "number",
              type(None): "null"}


def _shown_value(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)  # a value of a parsed line: at most PROBE_MAX_LINE_BYTES
    return text if len(text) <= MAX_SHOWN_CHARS else text[:MAX_SHOWN_CHARS - 1] + "…"


def typed(rid: str, name: str, value: Any, kind: type) -> Any:
    """`value` when it is absent (None) or of JSON type `kind` (dict, list or str), else
    ProbeError("probe_bad_field") naming the request and the field."""
    if value is None or isinstance(value, kind):
        return value
    expected, got = JSON_TYPES[kind], JSON_TYPES.get(type(value), type(value).__name__)
    shown = _shown_value(value)
    raise ProbeError("probe_bad_field", f"{rid}: in a streamed chunk, {name} should be a JSON {expected}, got "
                                        f"{got} {shown}", request_id=rid, field=name, expected=expected, got=got,
                     value=shown)


def token_count(rid: str, name: str, value: Any) -> int | None:
    """A usage count: absent (None), or a whole number in 0..PROBE_MAX_USAGE_TOKENS, else
    ProbeError("probe_bad_count") naming the request and the field."""
    if value is None:
        return None
    try:
        return check_count(name, value, PROBE_MAX_USAGE_TOKENS)
    except LimitError as err:
        shown = err.params["value"]
        raise ProbeError("probe_bad_count", f"{rid}: in a streamed chunk, {name} should be a whole number from 0 "
                                            f"to {PROBE_MAX_USAGE_TOKENS}, got {shown}", request_id=rid, field=name,
                         value=shown, limit=PROBE_MAX_USAGE_TOKENS) from None


# --- one request -------------------------------------------------------------------

class _Stream:
    """What one request's stream delivered so far (kept when it fails part-way)."""

    def __init__(self) -> None:
        self.sent: float | None = None  # perf_counter seconds
        self.times: list[float] = []
        self.pieces: list[str] = []
        self.finish_reason: str | None = None
        self.prompt_tokens: int | None = None  # the server's usage counts (None: not reported)
        self.completion_tokens: int | None = None
        self.events = 0
        self.bytes = 0


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
        data = load_json(text)
        if isinstance(data, dict):
            err = data.get("error", data.get("detail", data.get("message", text)))
            text = err.get("message", json.dumps(err)) if isinstance(err, dict) else str(err)
        elif isinstance(data, str):  # {"error": "text"} as transformers serve streams it
            text = data
    except ValueError:  # not JSON, or JSON over a limit (LimitError): the text as it came
        pass
    text = " ".join(mask(str(text)).split())
    return text[:MAX_DETAIL_CHARS] + ("…" if len(text) > MAX_DETAIL_CHARS else "")


def _past_deadline(rid: str, limits: StreamLimits, max_tokens: int, stream: _Stream) -> ProbeError:
    n = len(stream.pieces)
    return ProbeError("probe_deadline", f"{rid}: still not finished at its deadline of {limits.deadline_s:g} s "
                                        f"(the timeout plus {PROBE_SECONDS_PER_TOKEN:g} s per token, max_tokens "
                                        f"{max_tokens}); cut after {n} pieces", request_id=rid,
                      deadline_s=limits.deadline_s, max_tokens=max_tokens, pieces=n)


def _stream_one(cfg: ProbeConfig, ep: Endpoint, rid: str, req: WorkloadRequest, body: dict[str, Any],
                headers: dict[str, str], stream: _Stream, mask: KeyMask) -> None:
    """Send one request and read its Server-Sent Events within its StreamLimits; raises ProbeError naming `rid`."""
    path = ep.base_path + ("/chat/completions" if cfg.api == "chat" else "/completions")
    limits = stream_limits(req.max_new_tokens, cfg.timeout_s)
    conn = ep.connection(cfg.timeout_s)
    stream.sent = time.perf_counter()
    with Watchdog(conn, limits.deadline_s) as dog:
        try:
            resp = _send(cfg, ep, rid, conn, path, body, headers, mask, dog, lambda: _past_deadline(
                rid, limits, req.max_new_tokens, stream))
            if resp.status != 200:
                try:
                    raw = resp.read(PROBE_MAX_ERROR_BYTES)
                except (OSError, http.client.HTTPException):  # cut, or past the deadline: the status says enough
                    raw = b""
                detail = _detail(raw, mask)
                raise ProbeError("probe_http", f"{rid}: the server answered HTTP {resp.status}: {detail}",
                                 request_id=rid, status=resp.status, detail=detail)
            try:
                _read_events(cfg, rid, resp, stream, mask, limits, dog, req.max_new_tokens)
            finally:
                stream.pieces = mask.pieces(stream.pieces)
        finally:
            conn.close()


def _send(cfg, ep, rid, conn, path, body, headers, mask, dog, past_deadline):
    """POST the request and read the status line and headers (a trickle there meets the deadline too)."""
    try:
        dog.connect()
        conn.request("POST", path, body=json.dumps(body).encode("utf-8"), headers=headers)
        return conn.getresponse()
    except TimeoutError:
        if dog.passed:
            raise past_deadline() from None
        raise ProbeError("probe_timeout", f"{rid}: no answer within {cfg.timeout_s:g} s", request_id=rid,
                         timeout_s=cfg.timeout_s) from None
    except (OSError, http.client.HTTPException) as err:
        if dog.passed:
            raise past_deadline() from None
        reason = mask(str(err) or type(err).__name__)
        raise ProbeError("probe_unreachable", f"{rid}: cannot reach {ep.shown} ({reason})", request_id=rid,
                         endpoint=ep.shown, reason=reason, cause=connection_cause(err)) from None


def _read_events(cfg: ProbeConfig, rid: str, resp, stream: _Stream, mask: KeyMask, limits: StreamLimits,
                 dog: Watchdog, max_tokens: int) -> None:
    done = False
    while True:
        line = _next_line(cfg, rid, resp, stream, limits, dog, max_tokens)
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
        if stream.events > limits.max_chunks:
            n = len(stream.pieces)
            raise ProbeError("probe_too_many_chunks", f"{rid}: more than {limits.max_chunks} chunks for max_tokens "
                                                      f"{max_tokens}; cut after {n} pieces", request_id=rid,
                             limit=limits.max_chunks, max_tokens=max_tokens, pieces=n)
        _take_chunk(cfg.api, rid, _parse_chunk(rid, data, mask), stream, now)
    if stream.finish_reason is None and not done:
        raise ProbeError("probe_cut", f"{rid}: the stream ended before the answer did (after "
                                      f"{len(stream.pieces)} pieces)", request_id=rid, pieces=len(stream.pieces))


def _next_line(cfg, rid, resp, stream: _Stream, limits: StreamLimits, dog: Watchdog, max_tokens: int) -> bytes:
    """The next line of the stream, at most its line and byte bounds; b"" at its end (or where it was cut)."""
    room = min(limits.max_line, limits.max_bytes - stream.bytes)
    try:
        line = resp.readline(room + 1)
    except TimeoutError:
        if dog.passed:
            raise _past_deadline(rid, limits, max_tokens, stream) from None
        raise ProbeError("probe_timeout", f"{rid}: no answer within {cfg.timeout_s:g} s (after "
                                          f"{len(stream.pieces)} pieces)", request_id=rid,
                         timeout_s=cfg.timeout_s) from None
    except (OSError, http.client.HTTPException, ValueError):  # IncompleteRead, reset: the stream was cut
        line = b""
    if dog.passed:
        raise _past_deadline(rid, limits, max_tokens, stream)
    stream.bytes += len(line)
    if len(line) > room:
        n = len(stream.pieces)
        if room == limits.max_line:
            raise ProbeError("probe_line_too_long", f"{rid}: a streamed line is over {limits.max_line} bytes; cut "
                                                    f"after {n} pieces", request_id=rid, limit=limits.max_line,
                             pieces=n)
        raise ProbeError("probe_too_big", f"{rid}: the stream is over {limits.max_bytes} bytes; cut after {n} "
                                          "pieces", request_id=rid, limit=limits.max_bytes, pieces=n)
    return line


# engine.contract.limits.load_json's refusals -> the probe's key and words (a chunk's own limit, its request named)
CHUNK_LIMITS = {"limit_json_depth": ("probe_chunk_depth", "is nested deeper than {limit} levels"),
                "limit_json_number": ("probe_chunk_number", "has a number longer than {limit} characters"),
                "limit_not_finite": ("probe_chunk_not_finite", "holds a number that is not finite")}


def _parse_chunk(rid: str, data: str, mask: KeyMask) -> dict[str, Any]:
    """One data line as a JSON object, bounded (engine.contract.limits.load_json) and masked; an error chunk raised."""
    try:
        chunk = load_json(data)
    except LimitError as err:
        key, words = CHUNK_LIMITS.get(err.key, CHUNK_LIMITS["limit_json_depth"])
        limit = err.params.get("limit", "")
        raise ProbeError(key, f"{rid}: a streamed chunk {words.format(limit=limit)}", request_id=rid,
                         limit=limit) from None
    except ValueError:  # json.JSONDecodeError
        shown = mask(data)[:MAX_SHOWN_CHARS]
        raise ProbeError("probe_bad_chunk", f"{rid}: a streamed chunk is not JSON: {shown!r}", request_id=rid,
                         chunk=shown) from None
    chunk = mask.json(chunk)
    if not isinstance(chunk, dict):
        raise ProbeError("probe_bad_chunk", f"{rid}: a streamed chunk is not a JSON object", request_id=rid,
                         chunk=mask(data)[:MAX_SHOWN_CHARS])
    if "error" in chunk:
        detail = _detail(json.dumps(chunk["error"]).encode(), mask)
        raise ProbeError("probe_stream_error", f"{rid}: the server reported an error in the stream: {detail}",
                         request_id=rid, detail=detail)
    return chunk


def _take_chunk(api: str, rid: str, chunk: dict[str, Any], stream: _Stream, now: float) -> None:
    """Keep a chunk's text, finish reason and usage counts, each checked for its JSON type first."""
    usage = chunk.get("usage")
    if usage is not None and usage != {}:  # vLLM sends "usage": null until the last chunk
        typed(rid, "usage", usage, dict)
        stream.prompt_tokens = token_count(rid, "usage.prompt_tokens", usage.get("prompt_tokens"))
        stream.completion_tokens = token_count(rid, "usage.completion_tokens", usage.get("completion_tokens"))
    for i, choice in enumerate(typed(rid, "choices", chunk.get("choices"), list) or ()):
        typed(rid, f"choices[{i}]", choice, dict)
        if api == "completions":
            piece = typed(rid, f"choices[{i}].text", choice.get("text"), str)
        else:
            delta = typed(rid, f"choices[{i}].delta", choice.get("delta"), dict) or {}
            piece = typed(rid, f"choices[{i}].delta.content", delta.get("content"), str)
        if piece:
            stream.times.append(now)
            stream.pieces.append(piece)
        reason = typed(rid, f"choices[{i}].finish_reason", choice.get("finish_reason"), str)
        if reason:
            stream.finish_reason = reason[:MAX_REASON_CHARS]


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
        value = None if not vals else sum(vals) / len(vals) if series == "kv_cache_usage" else sum(vals)
        # 1e308 + 1e308 is inf: a value that is not finite, or beyond what a saved run may hold, is no value
        values[series] = value if value is not None and abs(value) <= MAX_MAGNITUDE else None
    return names, values


class _Sampler:
    """Samples /metrics on its own thread every `interval_s` while the run lasts; each scrape within
    its own deadline (8 intervals, at most PROBE_METRICS_DEADLINE_S) and PROBE_MAX_METRICS_BYTES."""

    def __init__(self, ep: Endpoint, headers: dict[str, str], interval_s: float, t0: float,
                 mask: KeyMask | None = None) -> None:
        self.ep, self.headers, self.interval_s, self.t0 = ep, headers, interval_s, t0
        self.mask = mask or KeyMask(None)
        self.url = f"{ep.scheme}://{ep.host}:{ep.port}/metrics"
        self.samples: list[ServerSample] = []
        self.names: dict[str, str] = {}
        self.reason = ""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _scrape(self) -> tuple[int, str | None]:
        """(status, the masked text, None when over PROBE_MAX_METRICS_BYTES)."""
        status, raw = bounded_get(self.ep, "/metrics", self.headers, min(self.interval_s * 8, PROBE_METRICS_DEADLINE_S),
                                  PROBE_MAX_METRICS_BYTES)
        return status, None if raw is None else self.mask(raw.decode("utf-8", "replace"))

    def start(self) -> None:
        try:
            status, text = self._scrape()
        except (OSError, http.client.HTTPException) as err:
            self.reason = f"cannot read /metrics ({type(err).__name__})"
            return
        if status != 200:
            self.reason = f"HTTP {status}"
            return
        if text is None:
            self.reason = f"/metrics is over {PROBE_MAX_METRICS_BYTES} bytes"
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
            status, text = self._scrape()
        except (OSError, http.client.HTTPException):
            return  # a missed sample is a gap, not a zero
        if status == 200 and text is not None:
            self.samples.append(ServerSample(self._ms(), server_values(parse_prometheus(text))[1]))

    def stop(self) -> ServerMetrics:
        if self._thread is not None:
            self._stop.set()
            self._thread.join(timeout=10)
            self._sample_once()  # the state after the last request
        return ServerMetrics(self.url, bool(self.names), self.reason, dict(self.names), tuple(self.samples))


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
        detail = _detail((raw or b"")[:PROBE_MAX_ERROR_BYTES], mask)
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
    streams = [_Stream() for _ in workload]
    errors: list[ProbeError | None] = [None] * len(workload)
    lock, finished = threading.Lock(), [0]

    def one(i: int) -> None:
        try:
            _stream_one(cfg, ep, ids[i], workload[i], _body(cfg, workload[i], prompts[i]), headers, streams[i], mask)
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
    sampler = _Sampler(ep, headers, cfg.metrics_interval_s, t0, mask)
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
                                   s.events))
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


def _record(req: WorkloadRequest, prompt: str, rid: str, s: _Stream, t0: float) -> RequestRecord:
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

"""One request: POST it and read its Server-Sent Events within its StreamLimits.

Each `data:` line is one chunk, parsed bounded (engine.contract.limits.load_json) and masked
(KeyMask) before anything is kept; a chunk carrying text is a streamed piece, timed by the
client clock as it arrives. Past any bound (deadline, chunks, bytes, line) the request is cut
and its ProbeError says which bound and after how many pieces; what arrived is kept in Stream.
"""

from __future__ import annotations

import http.client
import json
import time
from typing import Any

from engine.contract.errors import LimitError
from engine.contract.interop.endpoint import Endpoint, ProbeConfig
from engine.contract.interop.errors import MAX_SHOWN_CHARS, ProbeError, connection_cause, error_detail
from engine.contract.interop.fields import token_count, typed
from engine.contract.interop.keymask import KeyMask
from engine.contract.interop.transport import StreamLimits, Watchdog, stream_limits
from engine.contract.limits import PROBE_MAX_ERROR_BYTES, PROBE_SECONDS_PER_TOKEN, load_json
from engine.contract.serving.workloads import WorkloadRequest

MAX_REASON_CHARS = 100  # of a finish_reason kept


class Stream:
    """What one request's stream delivered so far (kept when it fails part-way)."""

    def __init__(self) -> None:
        self.sent: float | None = None  # perf_counter seconds
        self.times: list[float] = []
        self.pieces: list[str] = []
        self.finish_reason: str | None = None
        self.prompt_tokens: int | None = None  # the server's usage counts (None: not reported)
        self.completion_tokens: int | None = None
        self.cached_tokens: int | None = None  # usage.prompt_tokens_details.cached_tokens (None: not reported)
        self.events = 0
        self.bytes = 0


def request_body(cfg: ProbeConfig, req: WorkloadRequest, prompt: str) -> dict[str, Any]:
    body: dict[str, Any] = {"model": cfg.model, "max_tokens": req.max_new_tokens, "stream": True,
                            "stream_options": {"include_usage": True}, "temperature": cfg.temperature}
    if cfg.api == "chat":
        body["messages"] = [{"role": "user", "content": prompt}]
    else:
        body["prompt"] = prompt
    if req.ignore_eos and cfg.send_ignore_eos:
        body["ignore_eos"] = True  # vLLM's and SGLang's extension: write max_tokens tokens
    return body


def _past_deadline(rid: str, limits: StreamLimits, max_tokens: int, stream: Stream) -> ProbeError:
    n = len(stream.pieces)
    return ProbeError("probe_deadline", f"{rid}: still not finished at its deadline of {limits.deadline_s:g} s "
                                        f"(the timeout plus {PROBE_SECONDS_PER_TOKEN:g} s per token, max_tokens "
                                        f"{max_tokens}); cut after {n} pieces", request_id=rid,
                      deadline_s=limits.deadline_s, max_tokens=max_tokens, pieces=n)


def stream_one(cfg: ProbeConfig, ep: Endpoint, rid: str, req: WorkloadRequest, body: dict[str, Any],
                headers: dict[str, str], stream: Stream, mask: KeyMask) -> None:
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
                detail = error_detail(raw, mask)
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


def _read_events(cfg: ProbeConfig, rid: str, resp, stream: Stream, mask: KeyMask, limits: StreamLimits,
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


def _next_line(cfg, rid, resp, stream: Stream, limits: StreamLimits, dog: Watchdog, max_tokens: int) -> bytes:
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
        detail = error_detail(json.dumps(chunk["error"]).encode(), mask)
        raise ProbeError("probe_stream_error", f"{rid}: the server reported an error in the stream: {detail}",
                         request_id=rid, detail=detail)
    return chunk


def _take_chunk(api: str, rid: str, chunk: dict[str, Any], stream: Stream, now: float) -> None:
    """Keep a chunk's text, finish reason and usage counts, each checked for its JSON type first."""
    usage = chunk.get("usage")
    if usage is not None and usage != {}:  # vLLM sends "usage": null until the last chunk
        typed(rid, "usage", usage, dict)
        stream.prompt_tokens = token_count(rid, "usage.prompt_tokens", usage.get("prompt_tokens"))
        stream.completion_tokens = token_count(rid, "usage.completion_tokens", usage.get("completion_tokens"))
        details = typed(rid, "usage.prompt_tokens_details", usage.get("prompt_tokens_details"), dict)
        if details:  # the prompt tokens the server's prefix cache held (engine/contract/interop/prefix_check.py)
            stream.cached_tokens = token_count(rid, "usage.prompt_tokens_details.cached_tokens",
                                               details.get("cached_tokens"))
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

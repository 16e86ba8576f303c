"""A server's Prometheus /metrics, sampled on its own thread while a probe runs.

Where the server exposes it (vLLM, SGLang): running and waiting requests and KV-cache usage
(vllm:num_requests_running, vllm:num_requests_waiting, vllm:kv_cache_usage_perc or the older
vllm:gpu_cache_usage_perc; sglang:num_running_reqs, sglang:num_queue_reqs, sglang:token_usage),
summed over label sets (usage: averaged). Each scrape has a deadline and a body cap of its own.
vLLM's prefix-cache counters (vllm:prefix_cache_queries / _hits) are kept at the first and the last
scrape, for engine/contract/interop/prefix_check.py.
"""

from __future__ import annotations

import http.client
import math
import re
import threading
import time
from dataclasses import dataclass, field

from engine.contract.interop.endpoint import Endpoint
from engine.contract.interop.keymask import KeyMask
from engine.contract.interop.prefix_check import prefix_counters
from engine.contract.interop.transport import bounded_get
from engine.contract.limits import MAX_MAGNITUDE, PROBE_MAX_METRICS_BYTES, PROBE_METRICS_DEADLINE_S

# Prometheus names -> the lesson's series (summed over label sets; *_usage averaged)
SERVER_SERIES = {
    "running": ("vllm:num_requests_running", "sglang:num_running_reqs"),
    "waiting": ("vllm:num_requests_waiting", "sglang:num_queue_reqs"),
    "kv_cache_usage": ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "sglang:token_usage"),
}


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
    prefix_names: dict[str, str] = field(default_factory=dict)  # prefix-cache counters found: series -> name
    prefix_first: dict[str, float] = field(default_factory=dict)  # their values at the first scrape
    prefix_last: dict[str, float] = field(default_factory=dict)  # and at the last one


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


class Sampler:
    """Samples /metrics on its own thread every `interval_s` while the run lasts; each scrape within
    its own deadline (8 intervals, at most PROBE_METRICS_DEADLINE_S) and PROBE_MAX_METRICS_BYTES."""

    def __init__(self, ep: Endpoint, headers: dict[str, str], interval_s: float, t0: float,
                 mask: KeyMask | None = None) -> None:
        self.ep, self.headers, self.interval_s, self.t0 = ep, headers, interval_s, t0
        self.mask = mask or KeyMask(None)
        self.url = f"{ep.scheme}://{ep.host}:{ep.port}/metrics"
        self.samples: list[ServerSample] = []
        self.names: dict[str, str] = {}
        self.prefix_names: dict[str, str] = {}
        self.prefix_first: dict[str, float] = {}
        self.prefix_last: dict[str, float] = {}
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
        parsed = parse_prometheus(text)
        self.prefix_names, self.prefix_first = prefix_counters(parsed)
        self.prefix_last = dict(self.prefix_first)
        names, values = server_values(parsed)
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
            parsed = parse_prometheus(text)
            self.samples.append(ServerSample(self._ms(), server_values(parsed)[1]))
            self.prefix_last = prefix_counters(parsed)[1] or self.prefix_last

    def stop(self) -> ServerMetrics:
        if self._thread is not None:
            self._stop.set()
            self._thread.join(timeout=10)
            self._sample_once()  # the state after the last request
        return ServerMetrics(self.url, bool(self.names), self.reason, dict(self.names), tuple(self.samples),
                             dict(self.prefix_names), dict(self.prefix_first), dict(self.prefix_last))

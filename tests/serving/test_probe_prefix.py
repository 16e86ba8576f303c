"""The probe reads a real server's prefix cache two ways (the OpenAI usage's
prompt_tokens_details.cached_tokens, vLLM's Prometheus prefix-cache counters) and says whether they
agree, disagree, or which one is missing; against a small stdlib server that answers like vLLM."""

from __future__ import annotations

import contextlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from engine.contract.interop.endpoint import ProbeConfig
from engine.contract.interop.prefix_check import check_prefix_cache, prefix_counters
from engine.contract.interop.probe import run_probe
from engine.contract.interop.prometheus import parse_prometheus
from engine.contract.serving.workloads import WorkloadRequest

PROMPT_TOKENS, CACHED = 40, 32


class PrefixServer(BaseHTTPRequestHandler):
    """A vLLM-like server: every request after the first reports CACHED of its PROMPT_TOKENS cached, and
    /metrics counts the same hits (plus `extra_hits` per request: another client's requests meanwhile)."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _send(self, status: int, raw: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_GET(self):
        s = self.server
        if self.path == "/v1/models":
            return self._send(200, json.dumps({"data": [{"id": "toy"}]}).encode(), "application/json")
        if self.path == "/metrics" and s.counters:
            with s.lock:
                hits, queries = s.hits, s.queries
            text = (f'vllm:prefix_cache_queries_total{{engine="0",model_name="toy"}} {queries:.1f}\n'
                    f'vllm:prefix_cache_hits_total{{engine="0",model_name="toy"}} {hits:.1f}\n'
                    'vllm:num_requests_running{engine="0",model_name="toy"} 0.0\n')
            return self._send(200, text.encode(), "text/plain")
        return self._send(404, b"{}", "application/json")

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        s = self.server
        with s.lock:
            cached = CACHED if s.served else 0
            s.served += 1
            s.hits += cached + s.extra_hits  # another client's hits land meanwhile
            s.queries += PROMPT_TOKENS
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        usage = {"prompt_tokens": PROMPT_TOKENS, "completion_tokens": 1}
        if s.details is not None:
            usage["prompt_tokens_details"] = s.details(cached)
        for data in ({"choices": [{"index": 0, "text": "巴黎", "finish_reason": "length"}]},
                     {"choices": [], "usage": usage}):
            self.wfile.write(f"data: {json.dumps(data)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()


@contextlib.contextmanager
def prefix_server(counters: bool = True, details=lambda cached: {"cached_tokens": cached}, extra_hits: float = 0):
    server = ThreadingHTTPServer(("127.0.0.1", 0), PrefixServer)
    server.daemon_threads = True
    server.counters, server.details, server.extra_hits = counters, details, extra_hits
    server.served = server.hits = server.queries = 0
    server.lock = threading.Lock()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


WORK = tuple(WorkloadRequest(30.0 * i, "法国的首都是", 1, request_id=f"r{i}") for i in range(3))


def probe(url: str):
    return run_probe(ProbeConfig(url, "toy", send_ignore_eos=False, metrics_interval_s=0.05), WORK)


def test_usage_and_metrics_agree():
    with prefix_server() as url:
        result = probe(url)
    check = result.prefix_cache
    assert sorted(r.cached_tokens for r in result.requests) == [0, CACHED, CACHED]  # the first to reach it: 0
    assert check.verdict == "agree" and check.usage_cached_tokens == 2 * CACHED == check.metrics_hits
    assert check.metrics_queries == 3 * PROMPT_TOKENS and check.usage_requests == 3
    assert "they agree" in check.sentence
    data = json.loads(result.to_json())
    assert data["prefix_cache"]["verdict"] == "agree" and data["prefix_cache"]["sentence"] == check.sentence
    assert sorted(r["cached_tokens"] for r in data["requests"]) == [0, CACHED, CACHED]


@pytest.mark.parametrize("server, verdict", [
    ({"extra_hits": 100}, "disagree"),  # another client's hits count in /metrics too
    ({"details": None}, "usage_missing"),  # vLLM without --enable-prompt-tokens-details
    ({"counters": False}, "metrics_missing"),
    ({"counters": False, "details": None}, "both_missing"),
])
def test_the_probe_says_when_they_disagree_or_one_is_missing(server, verdict):
    with prefix_server(**server) as url:
        check = probe(url).prefix_cache
    assert check.verdict == verdict
    if verdict == "disagree":
        assert "DISAGREE" in check.sentence and check.metrics_hits - check.usage_cached_tokens == 300
    if verdict in ("usage_missing", "both_missing"):
        assert "--enable-prompt-tokens-details" in check.sentence


def test_a_bad_cached_count_is_one_message_naming_the_field():
    with prefix_server(details=lambda cached: {"cached_tokens": "many"}) as url:
        result = probe(url)
    assert result.failures and result.failures[0].key == "probe_bad_count"
    assert "prompt_tokens_details.cached_tokens" in result.failures[0].message
    with prefix_server(details=lambda cached: [cached]) as url:
        result = probe(url)
    assert result.failures and result.failures[0].key == "probe_bad_field"
    assert "prompt_tokens_details" in result.failures[0].message


def test_counters_are_read_summed_finite_and_a_restart_is_no_count():
    parsed = parse_prometheus('vllm:prefix_cache_hits_total{engine="0"} 3\nvllm:prefix_cache_hits_total{engine="1"} 4\n'
                              "vllm:prefix_cache_queries 10\nvllm:prefix_cache_queries NaN\n")
    names, values = prefix_counters(parsed)
    assert values == {"hits": 7.0, "queries": 10.0} and names["hits"] == "vllm:prefix_cache_hits_total"
    restarted = check_prefix_cache([5], [10], {"hits": 100.0, "queries": 200.0}, {"hits": 5.0, "queries": 10.0},
                                   names)
    assert restarted.verdict == "metrics_missing" and restarted.metrics_hits is None


def test_the_page_words_the_verdict_in_both_languages():
    from lesson.prefix_views import probe_prefix_words
    from lesson.text import t

    with prefix_server(extra_hits=100) as url:
        data = json.loads(probe(url).to_json())
    en, zh = probe_prefix_words(data["prefix_cache"], "en"), probe_prefix_words(data["prefix_cache"], "zh")
    assert "64 of 120 prompt tokens were cached" in en and t("en", "pc_probe_verdict_disagree") in en
    assert t("zh", "pc_probe_verdict_disagree") in zh and "364" in zh
    assert probe_prefix_words(None, "en") is None  # an older probe result
    assert probe_prefix_words({"verdict": "<b>", "usage_cached_tokens": 1}, "en") is None
    odd = probe_prefix_words({"verdict": "agree", "usage_cached_tokens": "1e999", "metrics_hits": float("inf")}, "en")
    assert "— of —" in odd and "counted — hit tokens" in odd

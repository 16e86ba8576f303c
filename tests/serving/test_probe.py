"""The client-side probe (engine/contract/interop/probe.py).

Against a real `transformers serve` process (transformers' own OpenAI-compatible server) on the
embedded default model: token counts and metric invariants. Error cases against small stdlib
http.server handlers that misbehave on purpose (cut streams, non-JSON chunks, HTTP errors, a
server that never answers, an error inside the stream), one request each among good ones, so
the others' results must survive. API keys: read from the named variable only, never printed
or written, masked when a server echoes them.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from bench.app_server import free_port
from engine import cli as engine_main
from engine.cli.probe import default_stretch
from engine.contract.interop.observed import OBSERVED_NOTE
from engine.contract.interop.endpoint import ProbeConfig
from engine.contract.interop.errors import ProbeError
from engine.contract.interop.probe import ProbeResult, run_probe
from engine.contract.interop.prometheus import parse_prometheus, server_values
from engine.contract.serving.trace import ServingRun
from engine.contract.serving.workloads import WorkloadRequest
from engine.runtime.model import DEFAULT_MODEL_DIR
from lesson.perfetto import check_trace_events, serving_run_events
from tests.fake_server import METRICS_TEXT, Misbehaving, misbehaving

SECRET = "sk-test-0123456789abcdef-not-a-real-key"


def _monotone(d) -> bool:
    return d.p50 <= d.p90 <= d.p99 <= d.max


# ---------------------------------------------------------------------------
# a real server: transformers serve on the embedded default model
# ---------------------------------------------------------------------------

TRANSFORMERS_CLI = Path(sys.executable).with_name("transformers")
HAS_SERVE = TRANSFORMERS_CLI.exists() and (DEFAULT_MODEL_DIR / "model.safetensors").exists()
needs_serve = pytest.mark.skipif(not HAS_SERVE,
                                 reason="needs `transformers serve` (pip install 'transformers[serving]') and the "
                                        "embedded default model")


@pytest.fixture(scope="module")
def transformers_serve():
    """`transformers serve` pinned to the default model on CPU, on a free port; killed (whole group) at the end."""
    port = free_port()
    log = open(os.devnull, "wb")
    proc = subprocess.Popen([str(TRANSFORMERS_CLI), "serve", str(DEFAULT_MODEL_DIR), "--device", "cpu",
                             "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"],
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                            env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            if proc.poll() is not None:
                pytest.fail(f"transformers serve exited with {proc.returncode} before it was ready")
            try:
                with urllib.request.urlopen(f"{url}/v1/models", timeout=2) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("transformers serve was not ready within 180 s")
            time.sleep(0.5)
        yield url
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=20)
        log.close()
        assert proc.returncode is not None  # no orphan left behind


@needs_serve
@pytest.mark.slow
def test_probe_measures_transformers_serve(transformers_serve):
    model = str(DEFAULT_MODEL_DIR)
    workload = (WorkloadRequest(0.0, "法国的首都是", 8), WorkloadRequest(0.0, "The capital of Germany is", 8),
                WorkloadRequest(30.0, "意大利的首都是", 8), WorkloadRequest(60.0, "The capital of Spain is", 8))
    cfg = ProbeConfig(transformers_serve, model, concurrency=2, timeout_s=120, send_ignore_eos=False)
    result = run_probe(cfg, workload, scenario="capitals")
    assert result.failures == ()
    run = ServingRun.from_json(result.run.to_json())  # the serving record, round-tripped
    assert run.iterations == () and OBSERVED_NOTE in run.notes
    answers = {r.request_id: r.output_text for r in run.requests}
    assert answers["r0"].startswith("巴黎") and "Berlin" in answers["r1"]  # the default model's real answers
    extra = {p.request_id: p for p in result.requests}
    for r in run.requests:
        n = len(r.output_pieces)
        assert n >= 1 and len(r.itl_ms) == n - 1 == len(r.token_times_ms) - 1
        assert r.ttft_ms <= r.e2el_ms and r.arrival_ms <= r.first_token_ms <= r.finish_ms
        assert list(r.token_times_ms) == sorted(r.token_times_ms)
        # the server's own count: every streamed piece is at least one token (EOS adds one without text)
        assert extra[r.request_id].completion_tokens >= n
        assert extra[r.request_id].prompt_tokens == r.prompt_len > 0
    assert sum(len(r.itl_ms) for r in run.requests) >= 1
    m = run.metrics
    assert m.num_completed == 4 and m.itl.count == sum(len(r.output_pieces) - 1 for r in run.requests)
    for d in (m.ttft, m.e2el, m.itl):
        assert _monotone(d)
    assert m.ttft.max <= m.e2el.max
    assert not result.server_metrics.available and result.server_metrics.reason == "HTTP 404"
    assert check_trace_events(serving_run_events(run)) == []


@needs_serve
@pytest.mark.slow
def test_wrong_model_name_is_refused_before_sending(transformers_serve):
    with pytest.raises(ProbeError) as err:
        run_probe(ProbeConfig(transformers_serve, "no-such-model", send_ignore_eos=False),
                  (WorkloadRequest(0.0, "法国的首都是", 4),))
    assert err.value.key == "probe_model" and "no-such-model" in str(err.value)
    assert str(DEFAULT_MODEL_DIR) in str(err.value)  # says what the server does serve


@needs_serve
@pytest.mark.slow
def test_cli_against_transformers_serve(transformers_serve, capsys):
    status = engine_main.main(["probe", "--endpoint", transformers_serve, "--model", str(DEFAULT_MODEL_DIR),
                               "--scenario", "capital-questions", "--no-ignore-eos", "--concurrency", "4",
                               "--timeout", "120", "--json"])
    out = capsys.readouterr().out
    assert status == 0
    data = json.loads(out)
    assert data["kind"] == "probe_result" and len(data["requests"]) == 8 and data["failures"] == []
    for r in data["requests"]:  # engine serve's per-request keys, with output_pieces
        assert {"request_id", "arrival_ms", "first_token_ms", "finish_ms", "itl_ms", "output_pieces"} <= set(r)
        assert len(r["itl_ms"]) == len(r["output_pieces"]) - 1
    assert ServingRun.from_dict(data["run"]).metrics.num_completed == 8


@needs_serve
@pytest.mark.slow
def test_ignore_eos_is_refused_by_transformers_serve_with_a_clear_message(transformers_serve):
    """transformers serve rejects fields it does not know (vLLM's ignore_eos): each request says so."""
    result = run_probe(ProbeConfig(transformers_serve, str(DEFAULT_MODEL_DIR), timeout_s=60),
                       (WorkloadRequest(0.0, "法国的首都是", 4, ignore_eos=True),
                        WorkloadRequest(0.0, "德国的首都是", 4)))
    assert [f.request_id for f in result.failures] == ["r0"]
    assert result.failures[0].key == "probe_http" and "422" in result.failures[0].message
    assert "ignore_eos" in result.failures[0].message
    assert [r.request_id for r in result.run.requests] == ["r1"]  # the other request is kept


# ---------------------------------------------------------------------------
# servers that misbehave on purpose (tests/fake_server.py), for the error cases
# ---------------------------------------------------------------------------

SILENCE_S = 2.0  # the timeout of the hanging cases: far below the fake server's HANG_S


def _workload(*prompts: str) -> tuple[WorkloadRequest, ...]:
    return tuple(WorkloadRequest(0.0, p, 3) for p in prompts)


@pytest.mark.parametrize("prompt, key, words", [
    ("cut", "probe_cut", "the stream ended before the answer did (after 2 pieces)"),
    ("nonjson", "probe_bad_chunk", "a streamed chunk is not JSON: '<html>oops</html>'"),
    ("http500", "probe_http", "the server answered HTTP 500: the engine died"),
    ("wrong-model", "probe_http", "the server answered HTTP 404: The model `toy` does not exist."),
    ("hang", "probe_timeout", "no answer within 2 s"),
    ("hangmid", "probe_timeout", "no answer within 2 s (after 1 pieces)"),
    ("streamerror", "probe_stream_error", "the server reported an error in the stream: out of memory"),
    ("streamerror-text", "probe_stream_error", "the server reported an error in the stream: CUDA error: "
                                               "device-side assert"),
])
@pytest.mark.parametrize("api", ["completions", "chat"])
def test_each_bad_request_gets_one_message_and_the_others_are_kept(prompt, key, words, api):
    """One timeout holds for all three requests, so the good ones need a margin too: the hanging cases time
    out after SILENCE_S (far above a busy machine's pause; 0.5 s timed a good request out under load), the
    others after 30 s they never wait. The three are sent at once: the two measured come in either order."""
    timeout_s = SILENCE_S if key == "probe_timeout" else 30.0
    with misbehaving() as url:
        result = run_probe(ProbeConfig(url, "toy", api=api, timeout_s=timeout_s), _workload("ok", prompt, "ok"))
    assert [f.request_id for f in result.failures] == ["r1"]
    failure = result.failures[0]
    assert failure.key == key and failure.message == f"r1: {words}"
    assert "\n" not in failure.message and failure.params["request_id"] == "r1"
    assert sorted(r.request_id for r in result.run.requests) == ["r0", "r2"]
    for r in result.run.requests:
        assert r.output_pieces == ("巴", "黎", "。") and r.output_text == "巴黎。" and r.stop_reason == "length"
        assert len(r.itl_ms) == 2
    assert result.run.metrics.num_completed == 2 and result.run.metrics.itl.count == 4


def test_unreachable_server_is_one_clear_message():
    port = free_port()  # nothing listens there now
    with pytest.raises(ProbeError) as err:
        run_probe(ProbeConfig(f"http://127.0.0.1:{port}", "toy", timeout_s=2), _workload("ok"))
    assert err.value.key == "probe_unreachable"
    assert str(err.value).startswith(f"GET /v1/models: cannot reach http://127.0.0.1:{port}/v1 (")


def test_bad_settings_are_refused_before_anything_is_sent():
    for kwargs, words in (({"endpoint": "ftp://x"}, "http:// or https://"), ({"timeout_s": 0}, "--timeout"),
                          ({"concurrency": 0}, "--concurrency"), ({"api": "embeddings"}, "--api"),
                          ({"endpoint": "http://h:99999"}, "bad port")):
        with pytest.raises((ProbeError, ValueError), match=words.replace("+", r"\+")):
            ProbeConfig(**{"endpoint": "http://127.0.0.1:1", "model": "toy", **kwargs})


def test_concurrency_limits_requests_in_flight_and_metrics_are_sampled():
    """Three slow streams with --concurrency 2: the third waits for a slot (its send time is later);
    the server's running-request gauge, sampled from /metrics, sees 2 at most and at least once 2."""
    with misbehaving(with_metrics=True) as url:
        cfg = ProbeConfig(url, "toy", concurrency=2, timeout_s=5, metrics_interval_s=0.05)
        result = run_probe(cfg, _workload("slow", "slow", "slow"))
    assert result.failures == ()
    sent = sorted(r.arrival_ms for r in result.run.requests)
    first_done = min(r.finish_ms for r in result.run.requests)
    assert sent[2] >= first_done - 1.0  # sent only once a slot was free
    sm = result.server_metrics
    assert sm.available and sm.names == {"running": "vllm:num_requests_running",
                                         "waiting": "vllm:num_requests_waiting",
                                         "kv_cache_usage": "vllm:kv_cache_usage_perc"}
    running = [s.values["running"] for s in sm.samples]
    assert max(running) == 2 and running[-1] == 0
    assert all(s.values["kv_cache_usage"] == pytest.approx(s.values["running"] / 10) for s in sm.samples)
    times = [s.t_ms for s in sm.samples]
    assert times == sorted(times) and len(times) >= 5
    doc = serving_run_events(result.run, result.server_samples())
    assert check_trace_events(doc) == []
    assert any(e["ph"] == "C" and e["name"] == "running" and e["args"]["running"] == 2 for e in doc["traceEvents"])


def test_arrivals_are_honoured():
    with misbehaving() as url:
        result = run_probe(ProbeConfig(url, "toy"), (WorkloadRequest(0.0, "ok", 3), WorkloadRequest(300.0, "ok", 3)))
    r0, r1 = result.run.request("r0"), result.run.request("r1")  # in order of their real sends: r0 may be late
    # Each request is sent at its planned time on the probe's clock, never before it. (Comparing the two
    # sends with each other is flaky: a busy machine can send r0 late while r1 keeps its time.)
    assert 0.0 <= r0.arrival_ms < 1000.0
    assert 300.0 - 1.0 <= r1.arrival_ms < 300.0 + 1000.0  # not sent at once with r0: it waited its turn
    extra = {p.request_id: p for p in result.requests}
    assert extra["r1"].planned_arrival_ms == 300.0 and extra["r1"].completion_tokens == 3


def test_prometheus_text_is_parsed_over_label_sets():
    text = METRICS_TEXT.format(running=3.0, usage=0.5) + (
        'vllm:num_requests_running{engine="1",model_name="m"} 2.0\n'
        'vllm:kv_cache_usage_perc{engine="1",model_name="m"} 0.25\n'
        "sglang:num_queue_reqs 7\n# a comment\nbroken line here\nvllm:num_requests_waiting NaN\n")
    parsed = parse_prometheus(text)
    assert parsed["vllm:num_requests_running"] == [3.0, 2.0] and parsed["vllm:prompt_tokens_total"] == [1234.0]
    names, values = server_values(parsed)
    assert values == {"running": 5.0, "waiting": 0.0, "kv_cache_usage": pytest.approx(0.375)}
    assert names["waiting"] == "vllm:num_requests_waiting"  # vLLM's name found first; NaN ignored
    sglang = server_values(parse_prometheus('sglang:num_running_reqs{tp_rank="0"} 4\nsglang:token_usage 0.5\n'))
    assert sglang[1] == {"running": 4.0, "waiting": None, "kv_cache_usage": 0.5}


# ---------------------------------------------------------------------------
# the API key
# ---------------------------------------------------------------------------

def test_api_key_comes_from_the_named_variable_and_is_never_shown(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("PROBE_TEST_KEY", SECRET)
    workload = tmp_path / "w.jsonl"
    workload.write_text("\n".join(json.dumps({"arrival_ms": 0, "prompt": p, "max_new_tokens": 3})
                                  for p in ("ok", "echo-auth", "nonjson")), encoding="utf-8")
    Misbehaving.seen_auth.clear()
    with misbehaving(with_metrics=True) as url:
        status = engine_main.main(["probe", "--endpoint", url, "--model", "toy", "--workload", str(workload),
                                   "--api-key-env", "PROBE_TEST_KEY", "--json"])
        captured = capsys.readouterr()
        assert status == 1  # some requests failed; the rest were measured
        assert f"Bearer {SECRET}" in Misbehaving.seen_auth  # it was sent
        assert SECRET not in captured.out and SECRET not in captured.err
        data = json.loads(captured.out)
        assert [r["request_id"] for r in data["requests"]] == ["r0"]
        echo = next(f for f in data["failures"] if f["request_id"] == "r1")
        assert echo["message"] == "r1: the server answered HTTP 401: bad key Bearer ***"
        run = ServingRun.from_dict(data["run"])
        perfetto = json.dumps(serving_run_events(run))
        assert SECRET not in perfetto and SECRET not in run.to_json()
        # text output too
        assert engine_main.main(["probe", "--endpoint", url, "--model", "toy", "--workload", str(workload),
                                 "--api-key-env", "PROBE_TEST_KEY"]) == 1
        captured = capsys.readouterr()
        assert SECRET not in captured.out + captured.err and "failed: r1: the server answered HTTP 401" in captured.out


def test_a_missing_key_variable_is_one_line_and_exit_2(monkeypatch, capsys):
    monkeypatch.delenv("PROBE_NO_SUCH_VAR", raising=False)
    with misbehaving() as url:
        status = engine_main.main(["probe", "--endpoint", url, "--model", "toy", "--scenario", "burst-16",
                                   "--api-key-env", "PROBE_NO_SUCH_VAR"])
    err = capsys.readouterr().err
    assert status == 2
    assert err.strip() == "error: the environment variable PROBE_NO_SUCH_VAR is not set (it should hold the API key)"


def test_credentials_in_the_url_are_not_kept():
    with misbehaving() as url:
        port = url.rsplit(":", 1)[1]
        result = run_probe(ProbeConfig(f"http://user:{SECRET}@127.0.0.1:{port}", "toy"), _workload("ok"))
    assert SECRET not in result.to_json() and result.endpoint == f"http://127.0.0.1:{port}/v1"


def test_result_json_round_trips_into_a_serving_run():
    with misbehaving() as url:
        result = run_probe(ProbeConfig(url, "toy"), _workload("ok", "cut"))
    data = json.loads(result.to_json())
    assert data["note"] == OBSERVED_NOTE
    assert data["requests"][0]["output_pieces"] == ["巴", "黎", "。"]
    assert data["failures"][0]["pieces_received"] == 2
    run = ServingRun.from_dict(data["run"])
    assert run == result.run and run.metrics.num_completed == 1
    assert isinstance(result, ProbeResult)


def test_server_metrics_figure_draws_what_was_sampled():
    from engine.contract.interop.prometheus import ServerMetrics, ServerSample
    from lesson.charts.probe import server_metrics_figure, server_metrics_note

    samples = (ServerSample(0.0, {"running": 0.0, "waiting": 0.0, "kv_cache_usage": 0.0}),
               ServerSample(50.0, {"running": 2.0, "waiting": 1.0, "kv_cache_usage": 0.25}),
               ServerSample(100.0, {"running": 1.0, "waiting": 0.0, "kv_cache_usage": None}))
    sm = ServerMetrics("http://h/metrics", True, "", {"running": "vllm:num_requests_running",
                                                      "kv_cache_usage": "vllm:kv_cache_usage_perc"}, samples)
    fig = server_metrics_figure(sm, "en")
    assert [tr.name for tr in fig.data] == ["running requests", "KV-cache usage"]  # no waiting series: not exposed
    assert list(fig.data[0].y) == [0.0, 2.0, 1.0] and list(fig.data[0].x) == [0.0, 50.0, 100.0]
    assert list(fig.data[1].y) == [0.0, 25.0, None]  # a missing value is a gap, not a zero
    assert server_metrics_note(sm, "en") is None
    assert server_metrics_figure(sm, "zh").data[0].name == "运行中的请求"
    big = server_metrics_figure(sm, "en", classroom=True).layout  # classroom: no text under the body size
    assert big.font.size == 21 and big.legend.font.size == 21 and big.xaxis.tickfont.size == 21
    assert big.yaxis.tickfont.size == 21 and big.yaxis2.tickfont.size == 21 and big.yaxis2.overlaying == "y"
    assert fig.layout.font.size is None  # the default: plotly's own sizes
    absent = ServerMetrics("http://h/metrics", False, "HTTP 404")
    assert server_metrics_note(absent, "en") == ("This server's /metrics was not sampled (HTTP 404): only the "
                                                 "client's times are known.")


def test_prompt_tokens_stretch_the_prompt_with_the_lessons_filler():
    from transformers import AutoTokenizer

    Misbehaving.seen_prompts.clear()
    with misbehaving() as url:
        workload = (WorkloadRequest(0.0, "ok", 3, prompt_tokens=40),)
        result = run_probe(ProbeConfig(url, "toy"), workload, stretch=default_stretch(workload))
    tok = AutoTokenizer.from_pretrained(str(DEFAULT_MODEL_DIR))
    sent = Misbehaving.seen_prompts[-1]
    assert sent.endswith("ok") and len(tok(sent)["input_ids"]) == 40  # what the app's slider would build
    assert result.run.requests[0].prompt == sent
    assert any("stretched to prompt_tokens" in n for n in result.run.notes)

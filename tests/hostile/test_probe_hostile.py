"""The probe against a hostile OpenAI-compatible server (tests/hostile/fake_openai.py): every reply costs
a bounded time and memory, a bad one fails only its own request (naming the bound or the field), and
an API key a server echoes is never written out (engine/contract/interop/probe.py, engine/contract/limits.py PROBE_*).

Each case asserts the outcome, the time it took and, for the replies that are large on purpose, the
peak memory of a child process under an address-space ceiling (tests/hostile/bounded.py).
"""

from __future__ import annotations

import json
import random
import time

import pytest

from engine import cli as engine_main
from engine.contract.interop.endpoint import ProbeConfig
from engine.contract.interop.errors import ProbeError
from engine.contract.interop.keymask import KeyMask
from engine.contract.interop.probe import run_probe
from engine.contract.interop.prometheus import parse_prometheus, server_values
from engine.contract.interop.transport import stream_limits
from engine.contract.limits import PROBE_MAX_LINE_BYTES, PROBE_MAX_USAGE_TOKENS
from engine.contract.serving.trace import ServingRun
from engine.contract.serving.workloads import WorkloadRequest
from lesson.messages import remote_message
from lesson.perfetto import serving_run_events
from tests.app.apptest import APP, SERVING_LAB, fresh_settings, needs_model  # noqa: F401  (a fixture)
from tests.hostile.bounded import python
from tests.hostile.fake_openai import hostile

SECRET = "sk-hostile-0123456789abcdef-not-a-real-key"
LIFETIME_S = 30.0  # the fake server's own end: code that never lets go of a stream is stopped here
TIMEOUT_S = 2.0  # seconds of silence a request may have: the good ones beside a hostile one, on a busy machine too


def _probe(url: str, *prompts: str, max_tokens: int = 3, api: str = "completions", **cfg):
    """(result, seconds) of the probe of one request per prompt, all sent at once."""
    workload = tuple(WorkloadRequest(0.0, p, max_tokens) for p in prompts)
    start = time.monotonic()
    result = run_probe(ProbeConfig(url, "toy", api=api, **{"timeout_s": TIMEOUT_S, **cfg}), workload)
    return result, time.monotonic() - start


def _only_r1_failed(result, key: str):
    """The one failure (r1's, with `key`); the good requests around it measured in full."""
    assert [(f.request_id, f.key) for f in result.failures] == [("r1", key)], result.failures
    good = sorted(r.request_id for r in result.run.requests)
    assert "r1" not in good and good, good
    for r in result.run.requests:
        assert r.output_pieces == ("巴", "黎", "。") and r.stop_reason == "length"
    failure = result.failures[0]
    assert "\n" not in failure.message and failure.message.startswith("r1: ")
    return failure


# --- streams that never end, trickle, or are huge ----------------------------------------------

@pytest.mark.parametrize("api", ["completions", "chat"])
def test_an_endless_stream_is_cut_at_its_chunk_cap(api):
    """A piece every 5 ms for max_tokens 4 (before: 44 s and 8414 pieces, until the server quit)."""
    with hostile(lifetime_s=LIFETIME_S) as url:
        result, seconds = _probe(url, "ok", "endless", "ok", max_tokens=4, api=api)
    failure = _only_r1_failed(result, "probe_too_many_chunks")
    limit = stream_limits(4, TIMEOUT_S).max_chunks
    assert failure.message == f"r1: more than {limit} chunks for max_tokens 4; cut after {limit} pieces"
    assert failure.params == {"request_id": "r1", "limit": limit, "max_tokens": 4, "pieces": limit}
    assert seconds < 10


@pytest.mark.parametrize("prompt", ["trickle", "trickle-head"])
def test_a_trickling_stream_is_cut_at_its_deadline(prompt):
    """One byte every 0.2 s is never silent for the 2 s timeout (before: alive until the server quit);
    the request's deadline (the timeout plus a second per max_tokens) holds, in the body or the headers."""
    deadline = stream_limits(1, TIMEOUT_S).deadline_s
    assert deadline == pytest.approx(3.0)
    with hostile(lifetime_s=LIFETIME_S) as url:
        result, seconds = _probe(url, "ok", prompt, "ok", max_tokens=1)
    failure = _only_r1_failed(result, "probe_deadline")
    assert failure.message.startswith("r1: still not finished at its deadline of 3 s (the timeout plus 1 s per "
                                      "token, max_tokens 1); cut after ")
    assert failure.params["deadline_s"] == deadline and failure.params["max_tokens"] == 1
    assert deadline - 0.1 <= seconds < deadline + 3


def test_endless_keep_alive_comments_are_cut_at_the_stream_byte_cap():
    with hostile(lifetime_s=LIFETIME_S) as url:
        result, seconds = _probe(url, "ok", "keepalive", "ok")
    failure = _only_r1_failed(result, "probe_too_big")
    assert failure.params["limit"] == stream_limits(3, TIMEOUT_S).max_bytes
    assert failure.message == f"r1: the stream is over {failure.params['limit']} bytes; cut after 0 pieces"
    assert seconds < 10


CHILD = """
import json, sys, time
from engine.contract.interop.endpoint import ProbeConfig
from engine.contract.interop.probe import run_probe
from engine.contract.serving.workloads import WorkloadRequest
url, prompt, max_tokens = sys.argv[1], sys.argv[2], int(sys.argv[3])
start = time.monotonic()
result = run_probe(ProbeConfig(url, "toy", timeout_s=2),
                   (WorkloadRequest(0.0, "ok", 3), WorkloadRequest(0.0, prompt, max_tokens)))
size = len(result.to_json())
hwm = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({"seconds": time.monotonic() - start, "failures": [[f.request_id, f.key] for f in result.failures],
                  "measured": [r.request_id for r in result.run.requests], "json_bytes": size, "peak_mb": hwm / 1024}))
"""


@pytest.mark.parametrize("prompt, max_tokens, key", [
    ("huge-body", 3, "probe_too_big"),  # 200 MB of 64 KB pieces (before: read whole, 2 GB)
    ("huge-line", 512, "probe_line_too_long"),  # one 200 MB line, never a newline
    ("huge-body", 4096, "probe_too_big"),  # the largest max_tokens a workload may ask: the byte cap still holds
])
def test_a_huge_reply_costs_bounded_memory_and_time(prompt, max_tokens, key):
    """In a child under a 512 MB address-space ceiling: r1 is cut, r0 kept, the result small. The peak is
    the child's own (VmHWM after its exec: rusage's maxrss would count the forked test process too)."""
    with hostile(lifetime_s=LIFETIME_S) as url:
        outcome = python("-c", CHILD, url, prompt, str(max_tokens), memory_mb=512, timeout_s=40,
                         env={"MALLOC_ARENA_MAX": "2"})
    assert outcome.returncode == 0, outcome.describe()
    data = json.loads(outcome.stdout)
    assert data["failures"] == [["r1", key]] and data["measured"] == ["r0"], outcome.describe()
    assert data["seconds"] < 10 and data["json_bytes"] < 100_000, outcome.describe()
    assert data["peak_mb"] < 200, outcome.describe()


def test_a_line_over_its_cap_is_named_as_a_line():
    assert stream_limits(512, TIMEOUT_S).max_bytes > PROBE_MAX_LINE_BYTES  # the line cap is the one that binds
    with hostile(lifetime_s=LIFETIME_S) as url:
        result, seconds = _probe(url, "ok", "huge-line", max_tokens=512)
    assert [(f.request_id, f.key, f.message) for f in result.failures] == [
        ("r1", "probe_line_too_long", f"r1: a streamed line is over {PROBE_MAX_LINE_BYTES} bytes; cut after 0 pieces")]
    assert seconds < 10


# --- fields of the wrong type, counts over the limit ---------------------------------------------

BAD_FIELDS = [
    ("text-int", "completions", "probe_bad_field", "in a streamed chunk, choices[0].text should be a JSON string, "
                                                   "got number 123"),
    ("text-int", "chat", "probe_bad_field", "in a streamed chunk, choices[0].delta.content should be a JSON "
                                            "string, got number 123"),
    ("choices-str", "completions", "probe_bad_field", 'choices should be a JSON array, got string "abc"'),
    ("choice-int", "chat", "probe_bad_field", "choices[0] should be a JSON object, got number 7"),
    ("delta-list", "chat", "probe_bad_field", "choices[0].delta should be a JSON object, got array []"),
    ("delta-list", "completions", "probe_bad_field", "choices[0].text should be a JSON string, got array []"),
    ("finish-int", "completions", "probe_bad_field", "choices[0].finish_reason should be a JSON string, got "
                                                     "number 7"),
    ("usage-list", "completions", "probe_bad_field", "usage should be a JSON object, got array [4, 3]"),
    ("usage-list", "chat", "probe_bad_field", "usage should be a JSON object, got array [4, 3]"),
    ("usage-str", "completions", "probe_bad_count", f"usage.prompt_tokens should be a whole number from 0 to "
                                                    f"{PROBE_MAX_USAGE_TOKENS}, got 'four'"),
    ("usage-float", "completions", "probe_bad_count", "usage.prompt_tokens should be a whole number from 0 to "
                                                      f"{PROBE_MAX_USAGE_TOKENS}, got 50000000.0"),
    ("usage-huge", "chat", "probe_bad_count", "usage.prompt_tokens should be a whole number from 0 to "
                                              f"{PROBE_MAX_USAGE_TOKENS}, got 50000000"),
    ("deep", "completions", "probe_chunk_depth", "a streamed chunk is nested deeper than 64 levels"),
    ("longnum", "completions", "probe_chunk_number", "a streamed chunk has a number longer than 100 "
                                                     "characters"),
    ("nan", "chat", "probe_chunk_not_finite", "a streamed chunk holds a number that is not finite"),
]


@pytest.mark.parametrize("prompt, api, key, words", BAD_FIELDS)
def test_a_field_of_the_wrong_type_fails_only_its_request(prompt, api, key, words):
    """Before: a traceback, and every request's result lost."""
    with hostile(lifetime_s=LIFETIME_S) as url:
        result, seconds = _probe(url, "ok", prompt, "ok", api=api)
    failure = _only_r1_failed(result, key)
    assert words in failure.message, failure.message
    assert seconds < 10
    for lang in ("zh", "en"):  # the page words it, naming the request and the field
        text = remote_message(ProbeError(failure.key, failure.message, **failure.params), lang)
        assert "`r1`" in text and "{" not in text
        if "field" in failure.params:
            assert failure.params["field"] in text


def test_a_large_usage_count_is_kept_as_a_count():
    """prompt_tokens 1e6 (within the limit) costs nothing: a count, not a million placeholders
    (before: (-1,) * prompt_tokens; 5e7 took 61 s, 5 GB and 700 MB of JSON)."""
    with hostile(lifetime_s=LIFETIME_S) as url:
        result, seconds = _probe(url, "usage-big")
    assert result.failures == ()
    (record,) = result.run.requests
    assert record.prompt_len == 1_000_000 and record.prompt_ids == () and record.num_output_tokens == 3
    text = result.to_json()
    assert len(text) < 50_000 and seconds < 10
    assert result.requests[0].prompt_tokens == 1_000_000 and result.requests[0].completion_tokens == 3
    assert ServingRun.from_json(result.run.to_json()).requests[0].prompt_len == 1_000_000
    assert result.run.metrics.total_input_tokens == 1_000_000


def test_the_cli_prints_the_other_requests_when_replies_are_bad(tmp_path, capsys):
    """Exit 1, the good request in --json on stdout, one `error:` line per bad one (before: a traceback
    and an empty stdout)."""
    workload = tmp_path / "w.jsonl"
    workload.write_text("\n".join(json.dumps({"arrival_ms": 0, "prompt": p, "max_new_tokens": 3})
                                  for p in ("ok", "text-int", "usage-str", "endless")), encoding="utf-8")
    with hostile(lifetime_s=LIFETIME_S) as url:
        status = engine_main.main(["probe", "--endpoint", url, "--model", "toy", "--workload", str(workload),
                                   "--timeout", "2", "--json"])
    out, err = capsys.readouterr()
    assert status == 1 and "Traceback" not in err
    data = json.loads(out)
    assert [r["request_id"] for r in data["requests"]] == ["r0"]
    assert sorted(f["key"] for f in data["failures"]) == ["probe_bad_count", "probe_bad_field",
                                                           "probe_too_many_chunks"]
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 3 and all(line.startswith(("error: r1: ", "error: r2: ", "error: r3: ")) for line in errors)


# --- an echoed API key -------------------------------------------------------------------------

def test_an_echoed_key_is_masked_in_everything_written(monkeypatch, capsys, tmp_path):
    """The key streamed whole and split over three pieces, in usage, in finish_reason and in the models
    list (before: 5 times in --json, and in the Perfetto file)."""
    monkeypatch.setenv("HOSTILE_PROBE_KEY", SECRET)
    workload = tmp_path / "w.jsonl"
    workload.write_text("\n".join(json.dumps({"arrival_ms": 0, "prompt": p, "max_new_tokens": 8})
                                  for p in ("echo-key", "ok")), encoding="utf-8")
    with hostile(models="echo-key", lifetime_s=LIFETIME_S) as url:
        status = engine_main.main(["probe", "--endpoint", url, "--model", "toy", "--workload", str(workload),
                                   "--api-key-env", "HOSTILE_PROBE_KEY", "--json"])
        out, err = capsys.readouterr()
        result = run_probe(ProbeConfig(url, "toy", api_key_env="HOSTILE_PROBE_KEY", timeout_s=2),
                           (WorkloadRequest(0.0, "echo-key", 8),))
        with pytest.raises(ProbeError) as refused:  # a model it does not list: the list is in the message
            run_probe(ProbeConfig(url, "nope", api_key_env="HOSTILE_PROBE_KEY"), (WorkloadRequest(0.0, "ok", 3),))
    assert status == 0 and SECRET not in out + err
    assert json.loads(out)["requests"][0]["output_text"] == "key *** *** end" and out.count("***") >= 5
    (record,) = result.run.requests
    assert record.output_text == "key *** *** end"
    assert record.output_pieces == ("key *** ", "***", "", "", " end")  # the split key: masked where it starts
    assert result.requests[0].finish_reason == "length ***"
    written = [result.to_json(), result.run.to_json(), json.dumps(serving_run_events(result.run)),
               str(refused.value), repr(refused.value.params)]
    assert not [w for w in written if SECRET in w]
    assert "listed ***" in str(refused.value)


def test_the_mask_catches_a_key_split_anywhere():
    mask = KeyMask(SECRET)
    rng = random.Random(7)
    for _ in range(300):
        text = rng.choice(["", "a", "中文"]) + SECRET + rng.choice(["", " b ", SECRET[:5]]) + SECRET * rng.randint(0, 2)
        cuts = sorted(rng.sample(range(1, len(text)), rng.randint(0, min(12, len(text) - 1))))
        pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]
        masked = mask.pieces(pieces)
        assert len(masked) == len(pieces) and "".join(masked) == mask(text)
        assert SECRET not in "".join(masked)
    assert KeyMask(None).pieces(["a", SECRET]) == ["a", SECRET]  # no key: nothing to mask
    assert mask.json({SECRET: [1, SECRET + "x", {"k": None}]}) == {"***": [1, "***x", {"k": None}]}


# --- the models list and /metrics ----------------------------------------------------------------

@pytest.mark.parametrize("models", ["hang", "trickle"])
def test_a_hanging_models_list_is_one_message_in_bounded_time(models):
    """A list whose body never comes, or comes a byte every 0.1 s (before: held for ever by a trickle)."""
    with hostile(models=models, lifetime_s=LIFETIME_S) as url:
        start = time.monotonic()
        with pytest.raises(ProbeError) as err:
            run_probe(ProbeConfig(url, "toy", timeout_s=1), (WorkloadRequest(0.0, "ok", 3),))
        seconds = time.monotonic() - start
    assert err.value.key == "probe_timeout" and str(err.value) == "GET /v1/models: no answer within 1 s"
    assert seconds < 6


@pytest.mark.parametrize("models, why", [("id-int", "data[1].id is not a string"),
                                         ("huge", "the list is over 1048576 bytes")])
def test_an_unreadable_models_list_is_probed_anyway_with_a_note(models, why):
    """Before: an id that is not a string crashed the probe (TypeError) when the model was not listed."""
    with hostile(models=models, lifetime_s=LIFETIME_S) as url:
        result, seconds = _probe(url, "ok", "ok")
        assert result.failures == () and len(result.run.requests) == 2
        assert f"GET /v1/models: {why}; the model name was not checked" in result.run.notes
        unlisted = run_probe(ProbeConfig(url, "not-listed", timeout_s=TIMEOUT_S), (WorkloadRequest(0.0, "ok", 3),))
        assert len(unlisted.run.requests) == 1  # this server answers any name: the requests say what it did
    assert seconds < 10


@pytest.mark.parametrize("metrics, interval_s, reason", [("hang", 0.05, "cannot read /metrics (TimeoutError)"),
                                                         ("trickle", 0.05, "cannot read /metrics (TimeoutError)"),
                                                         ("huge", 0.5, "/metrics is over 4194304 bytes")])
def test_a_hostile_metrics_endpoint_costs_a_bounded_time(metrics, interval_s, reason):
    """/metrics that never finishes (a byte every 0.2 s: before, the probe waited for it for ever), or is huge.
    A scrape's deadline is 8 intervals: 0.4 s cuts the silent ones short, 4 s lets a busy machine read the
    huge one up to its cap (in 0.4 s it timed out first under load)."""
    with hostile(metrics=metrics, lifetime_s=LIFETIME_S) as url:
        result, seconds = _probe(url, "ok", "ok", metrics_interval_s=interval_s)
    assert result.failures == () and len(result.run.requests) == 2
    assert not result.server_metrics.available and result.server_metrics.reason == reason
    assert seconds < 6


def test_metric_values_that_overflow_are_no_value():
    text = ('vllm:num_requests_running{a="1"} 1e308\nvllm:num_requests_running{a="2"} 1e308\n'
            "vllm:num_requests_waiting 2\n")
    _, values = server_values(parse_prometheus(text))
    assert values == {"running": None, "waiting": 2.0, "kv_cache_usage": None}


# --- the app: its session state, its page and its Perfetto download ------------------------------

@needs_model
@pytest.mark.slow
@pytest.mark.usefixtures("fresh_settings")
def test_the_app_keeps_no_echoed_key_and_words_a_bad_reply(monkeypatch):
    """The serving lab's probe panel against the echoing server, with the key lent by a variable the
    operator allows: neither the session state nor the page nor the Perfetto download holds the key,
    and a request with a wrong field is one message in the page's language (the others kept)."""
    from streamlit.testing.v1 import AppTest

    from app_support.serving_remote import perfetto_json

    monkeypatch.setenv("PREFILL_DECODE_PROBE_API_KEY", SECRET)
    monkeypatch.setenv("PREFILL_DECODE_SERVING_MAX_NEW_TOKENS", "16")
    at = AppTest.from_file(APP, default_timeout=300)
    at.run()
    at.switch_page(SERVING_LAB).run()
    at.radio(key="sl_source").set_value("jsonl").run()
    at.text_area(key="sl_jsonl").set_value("\n".join(json.dumps({"arrival_ms": 0, "prompt": p, "max_new_tokens": 8})
                                                     for p in ("echo-key", "text-int")))
    at.toggle(key="sl_probe_ignore_eos").set_value(False)
    at.text_input(key="sl_probe_key_env").set_value("PREFILL_DECODE_PROBE_API_KEY")
    with hostile(models="echo-key", lifetime_s=120) as url:
        at.text_input(key="sl_probe_endpoint").set_value(url)
        at.text_input(key="sl_probe_model").set_value("toy")
        at.button(key="sl_probe_run").click()
        at.run()
    assert not at.exception, [e.value for e in at.exception]
    stored = at.session_state["sl_probe"]
    data = json.loads(stored)
    assert [r["request_id"] for r in data["requests"]] == ["r0"] and data["requests"][0]["output_text"] == \
        "key *** *** end"
    samples = json.dumps([{"t_ms": s["t_ms"], "values": s["values"]} for s in data["server_metrics"]["samples"]])
    download = perfetto_json(json.dumps(data["run"]), samples)
    page = "\n".join(str(e.value) for kind in ("markdown", "warning", "error", "caption", "info")
                     for e in getattr(at, kind))
    assert SECRET not in stored and SECRET not in download and SECRET not in page
    assert "***" in download  # the masked text is what the download holds
    words = remote_message(ProbeError("probe_bad_field", **data["failures"][0]["params"]), "zh")
    assert words in page and "`choices[0].text`" in words

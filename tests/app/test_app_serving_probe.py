"""The serving lab's view of servers outside this process (AppTest): the "measure a real server"
panel, the vLLM result upload and the Perfetto downloads (app_support/serving_remote.py).

The probe against a real `transformers serve` is tested in tests/serving/test_probe.py; here the page's
wiring runs against the small stdlib SSE server of tests/fake_server.py (`misbehaving`: it streams 巴 黎 。
for a normal prompt and cuts the stream for the prompt "cut"), so one request is measured and
one fails, and the page must show both.
"""

from __future__ import annotations

import json
import re

import pytest

from app_support.serving_remote import check_probe_request
from bench.app_server import free_port
from engine.contract.config import ProbeSettings
from engine.contract.errors import RemoteError
from lesson.messages import code_span, remote_message, technical_detail
from lesson.perfetto import check_trace_events
from lesson.text import t
from tests.app.apptest import APP, SERVING_LAB, kept, needs_model, serving_lab_page
from tests.factories import VLLM_RESULT, client_run, make_run
from tests.fake_server import misbehaving

# --- pure parts ------------------------------------------------------------------------

def test_probe_settings_from_env():
    assert ProbeSettings.from_env({}) == ProbeSettings()
    assert ProbeSettings.from_env({}).allow == ("localhost", "127.0.0.1", "::1")
    off = ProbeSettings.from_env({"PREFILL_DECODE_PROBE": "0",
                                  "PREFILL_DECODE_PROBE_ALLOW": " 10.0., GPU-Box ,.lab.org",
                                  "PREFILL_DECODE_PROBE_KEY_VARS": "MY_KEY", "PREFILL_DECODE_VLLM_MAX_MB": "x"})
    assert not off.enabled and off.allow == ("10.0.", "gpu-box", ".lab.org") and off.key_vars == ("MY_KEY",)
    assert off.vllm_max_mb == 20.0
    assert [off.host_allowed(h) for h in ("10.0.3.4", "10.00.1.1", "gpu-box", "GPU-BOX", "gpu-box.evil", "a.lab.org",
                                          "lab.org.evil.com", "localhost")] == [True, False, True, True, False, True,
                                                                                False, False]
    default = ProbeSettings()
    assert default.host_allowed("127.0.0.1") and default.host_allowed("[::1]") and default.host_allowed("LocalHost")
    assert not default.host_allowed("localhost.example.com") and not default.host_allowed("127.0.0.2")
    assert not off.host_allowed("10.0.example.com")  # an address prefix matches addresses, not names
    assert ProbeSettings(allow=("*",)).host_allowed("example.com")


def test_disallowed_hosts_and_key_variables_are_refused_in_both_languages():
    settings = ProbeSettings()
    check_probe_request("http://127.0.0.1:8000", "", settings)
    check_probe_request("http://localhost:8000/v1", "OPENAI_API_KEY", settings)
    with pytest.raises(RemoteError) as err:
        check_probe_request("http://example.com:8000", "", settings)
    zh, en = remote_message(err.value, "zh"), remote_message(err.value, "en")
    assert "`example.com`" in zh and "PREFILL_DECODE_PROBE_ALLOW" in zh and "not one this app may probe" in en
    with pytest.raises(RemoteError) as err:
        check_probe_request("http://127.0.0.1:8000", "AWS_SECRET_ACCESS_KEY", settings)
    assert "`AWS_SECRET_ACCESS_KEY`" in remote_message(err.value, "en")  # inline code: shown as typed
    from engine.contract.interop.errors import ProbeError

    with pytest.raises(ProbeError) as err:
        check_probe_request("ftp://127.0.0.1/", "", settings)
    assert remote_message(err.value, "en") == t("en", "err_probe_endpoint", endpoint="`ftp://127.0.0.1/`")


def live_markup(markdown: str) -> list[str]:
    """What Streamlit's Markdown could turn into a link or HTML once the code spans are taken out:
    link or image syntax, an autolink (<http...>, http://, www.), an HTML tag."""
    outside = re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "", markdown)
    return re.findall(r"\]\(|<https?:|https?://[^\s]|www\.\w|<a\b|<img\b|<script\b", outside, flags=re.I)


@pytest.mark.parametrize("value", ["http://127.0.0.1:9/[x](http://evil.example)", "http://127.0.0.1:8000",
                                   "a`b``c http://evil.example/`", "`http://x.y`", "<a href=http://e.x>e</a>",
                                   "www.evil.example", "![i](http://e.x/i.png)"])
def test_a_typed_value_is_inline_code_never_a_link(value):
    span = code_span(value)
    assert live_markup(span) == [] and live_markup("see " + span + " now") == []
    fence = re.match(r"`+", span).group()
    inner = span[len(fence):-len(fence)]
    assert "`" * len(fence) not in inner  # no run of backticks inside can close the span early
    assert inner.strip() == value.strip()


def test_the_probes_messages_hold_no_live_link_and_no_os_english():
    from engine.contract.interop.errors import ProbeError

    typed = "http://127.0.0.1:9/[x](http://evil.example)"
    err = ProbeError("probe_unreachable", "GET /v1/models: cannot reach ... ([Errno 111] Connection refused)",
                     request_id="GET /v1/models", endpoint=typed, reason="[Errno 111] Connection refused",
                     cause="refused")
    for lang in ("zh", "en"):
        words = remote_message(err, lang)
        assert live_markup(words) == [], words
        assert "Errno" not in words and "Connection refused" not in words
        assert t(lang, "sl_probe_cause_refused") in words
    assert "连接被拒绝" in remote_message(err, "zh") and "nothing answered" in remote_message(err, "en")
    assert technical_detail(err) == "[Errno 111] Connection refused"  # kept, for the technical-detail expander
    for key, params in (("probe_endpoint", {"endpoint": typed}), ("probe_model", {"model": typed, "served": typed}),
                        ("probe_http", {"request_id": "r0", "status": 500, "detail": typed}),
                        ("probe_stream_error", {"request_id": typed, "detail": typed})):
        for lang in ("zh", "en"):
            assert live_markup(remote_message(ProbeError(key, "x", **params), lang)) == []


def test_connection_causes_are_classified():
    import socket
    import ssl

    from engine.contract.interop.errors import connection_cause

    assert connection_cause(ConnectionRefusedError(111, "Connection refused")) == "refused"
    assert connection_cause(socket.gaierror(-2, "Name or service not known")) == "no_host"
    assert connection_cause(ConnectionResetError()) == "reset"
    assert connection_cause(ssl.SSLError()) == "tls"
    assert connection_cause(OSError("odd")) == "other"


@pytest.mark.parametrize("text, why", [
    ('{"not":"vllm"}', "missing"), ("[1,2,3", "not_json"), ("[1, 2]", "not_object"),
    ('{"input_lens": [1, 2], "output_lens": [1, 2], "ttfts": [0.1, 0.2], "itls": [[0.01]]}', "length_mismatch"),
    ('{"input_lens": [1], "output_lens": [1], "ttfts": [-1], "itls": [[0.01]]}', "not_number"),
    ('{"input_lens": [1], "output_lens": [1], "ttfts": [0.1], "itls": [[0.01]], "errors": ["boom"]}',
     "all_failed"),
    ('{"input_lens": [1], "output_lens": [1], "ttfts": [0.1], "itls": [[0.01]], "request_rate": -1}', "bad_rate"),
])
def test_vllm_refusals_read_in_the_pages_language(text, why):
    from engine.contract.interop.vllm_import import VllmResultError, read_vllm_result

    with pytest.raises(VllmResultError) as err:
        read_vllm_result(text)
    assert err.value.params["why"] == why
    zh, en = remote_message(err.value, "zh"), remote_message(err.value, "en")
    assert zh.startswith("这个 vLLM 结果文件无法读取：") and en.startswith("This vLLM result file cannot be read: ")
    english = ("missing", "not JSON", "entries but", "Expecting", "delimiter", "not a number", "failed", "should be",
               "request_rate is")
    outside = re.sub(r"`[^`]*`", "", zh)  # the file's own data (field names, values) is inline code
    assert not [w for w in english if w in outside], zh
    assert zh != en and "{" not in zh and "{" not in en



# --- the page ----------------------------------------------------------------------------

@pytest.fixture
def lab(monkeypatch):
    yield from serving_lab_page(monkeypatch, {"PREFILL_DECODE_SERVING_MAX_REQUESTS": "6",
                                              "PREFILL_DECODE_SERVING_MAX_NEW_TOKENS": "16",
                                              # 10 kB: the fixture fits, a padded copy does not
                                              "PREFILL_DECODE_VLLM_MAX_MB": "0.01"})


def _probe(at, endpoint: str, model: str = "toy"):
    at.text_input(key="sl_probe_endpoint").set_value(endpoint)
    at.text_input(key="sl_probe_model").set_value(model)
    at.button(key="sl_probe_run").click()
    return at.run()


def _errors(at) -> list[str]:
    return [e.value for e in at.error]


@needs_model
def test_probe_panel_measures_a_streaming_server_and_keeps_the_failed_requests_message(lab):
    assert not lab.exception
    words = "\n".join(str(c.value) for c in lab.caption)
    assert t("zh", "sl_probe_allowed", hosts="localhost, 127.0.0.1, ::1") in words
    lab.radio(key="sl_source").set_value("jsonl").run()
    lab.text_area(key="sl_jsonl").set_value('{"arrival_ms": 0, "prompt": "法国的首都是", "max_new_tokens": 3}\n'
                                            '{"arrival_ms": 5, "prompt": "cut", "max_new_tokens": 3}').run()
    lab.toggle(key="sl_probe_ignore_eos").set_value(False)
    with misbehaving(with_metrics=True) as url:
        _probe(lab, url)
    assert not lab.exception, [e.value for e in lab.exception]
    assert _errors(lab) == []
    data = json.loads(kept(lab, "sl_probe").result.to_json())  # as its download holds it
    assert [r["request_id"] for r in data["requests"]] == ["r0"] and data["requests"][0]["output_pieces"] == \
        ["巴", "黎", "。"]
    assert [w.value for w in lab.warning] == [t("zh", "sl_probe_failed", n=1, total=2)]
    markdown = "\n".join(str(m.value) for m in lab.markdown)
    assert t("zh", "err_probe_cut", request_id="`r1`", pieces=2) in markdown
    assert t("zh", "probe_observed_note") in [i.value for i in lab.info]
    frame = lab.dataframe[0].value
    assert list(frame.columns) == ["指标", "从客户端观测"] and frame.iloc[0, 1] == "1/1"
    assert len(lab.get("image")) == 1 + 1  # the Gantt, and the engine's own queue above it
    assert len(lab.get("plotly_chart")) == 1  # the server's /metrics: running, waiting, KV usage
    button = next(b for b in lab.get("download_button") if b.key == "sl_perfetto_probe")
    assert button.proto.label == t("zh", "download_perfetto")
    from engine.contract.serving.trace import ServingRun
    from lesson.perfetto import serving_run_events

    run = ServingRun.from_dict(data["run"])
    assert run.settings.policy == "observed"
    assert check_trace_events(serving_run_events(run)) == []


@needs_model
def test_probe_bad_url_unreachable_and_disallowed_host_are_messages(lab, monkeypatch):
    lab.radio(key="sl_source").set_value("jsonl").run()
    _probe(lab, "ftp://127.0.0.1:8000")
    assert not lab.exception
    assert _errors(lab) == [t("zh", "err_probe_endpoint", endpoint="`ftp://127.0.0.1:8000`")]
    _probe(lab, "http://example.com:8000")
    assert _errors(lab) == [t("zh", "sl_err_probe_host", host="`example.com`",
                              hosts="`localhost, 127.0.0.1, ::1`")]
    port = free_port()  # nothing listens there
    _probe(lab, f"http://127.0.0.1:{port}/[x](http://evil.example)")
    assert not lab.exception
    errors = _errors(lab)
    assert errors == [t("zh", "sl_err_probe_unreachable", request_id="`GET /v1/models`",
                        endpoint=f"`http://127.0.0.1:{port}/[x](http://evil.example)/v1`",
                        cause=t("zh", "sl_probe_cause_refused"))], errors
    assert live_markup(errors[0]) == [] and "Errno" not in errors[0]
    detail = [e for e in lab.expander if e.label == t("zh", "sl_probe_technical")]
    assert detail and "Connection refused" in detail[0].code[0].value  # the OS words, labelled as detail
    lab.text_input(key="sl_probe_key_env").set_value("HOME")
    _probe(lab, "http://127.0.0.1:8000")
    assert len(_errors(lab)) == 1 and "PREFILL_DECODE_PROBE_KEY_VARS" in _errors(lab)[0]
    monkeypatch.delenv("VLLM_API_KEY", raising=False)  # a lendable name, but not set on this server
    lab.text_input(key="sl_probe_key_env").set_value("VLLM_API_KEY")
    _probe(lab, "http://127.0.0.1:8000")
    assert _errors(lab) == [t("zh", "err_probe_api_key_env", name="`VLLM_API_KEY`")]
    assert kept(lab, "sl_probe") is None


@needs_model
def test_probe_panel_is_hidden_when_the_server_says_so(monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("PREFILL_DECODE_PROBE", "0")
    at = AppTest.from_file(APP, default_timeout=300)
    at.run()
    at.switch_page(SERVING_LAB).run()
    assert not at.exception
    keys = {b.key for b in at.button}
    assert "sl_run" in keys and "sl_probe_run" not in keys
    assert t("zh", "sl_vllm_title") in [h.value for h in at.subheader]  # the upload stays: it sends nothing


@needs_model
def test_vllm_upload_draws_the_file_and_compares_its_summary(lab):
    raw = VLLM_RESULT.read_bytes()
    lab.file_uploader(key="sl_vllm_file").set_value(("bench.json", raw, "application/json")).run()
    assert not lab.exception, [e.value for e in lab.exception]
    assert _errors(lab) == []
    from engine.contract.interop.vllm_import import read_vllm_result

    imp = read_vllm_result(raw.decode(), name="bench")
    assert len(lab.get("image")) == 1 + 1  # the Gantt, and the engine's own queue above it
    frames = [d.value for d in lab.dataframe]
    compare = frames[-1]
    assert list(compare.columns)[:3] == ["数字", "文件中", "重新计算"] and len(compare) == len(imp.comparisons)
    assert frames[0].iloc[0, 1] == f"{len(imp.run.requests)}/{len(imp.run.requests)}"
    verdict = [s.value for s in lab.success] + [w.value for w in lab.warning]
    assert any(str(len(imp.comparisons)) in v for v in verdict)
    assert any(b.key == "sl_perfetto_vllm" for b in lab.get("download_button"))
    lab.toggle(key="sl_hover_vllm").set_value(True).run()  # the Gantt with hover
    assert not lab.exception and len(lab.get("plotly_chart")) == 1 and len(lab.get("image")) == 1  # the queue's


def test_the_labs_figures_fold_in_classroom_mode():
    """serving_svg / observed_gantt_svg with classroom=True: the column's width, body-size text."""
    import re
    import xml.etree.ElementTree as ET

    from app_support.run_store import ServingSet
    from app_support.serving import serving_svg
    from app_support.serving_remote import observed_gantt_svg
    from lesson.style import CLASSROOM_MIN_FONT, CLASSROOM_WIDTH

    run = make_run(policy="disaggregated")
    shown = ServingSet((run,), (run.to_json(),))
    svgs = [serving_svg(name, shown, 0, "zh", True) for name in ("gantt", "batch", "kv")]
    svgs.append(observed_gantt_svg(client_run().to_json(), "en", True))
    for svg in svgs:
        assert float(ET.fromstring(svg).get("width")) <= CLASSROOM_WIDTH
        assert min(float(s) for s in re.findall(r'font-size="([\d.]+)"', svg)) >= CLASSROOM_MIN_FONT
    assert float(ET.fromstring(serving_svg("gantt", shown, 0, "zh")).get("width")) > CLASSROOM_WIDTH  # normal


@needs_model
def test_bad_vllm_uploads_are_messages(lab):
    uploader = lab.file_uploader(key="sl_vllm_file")
    uploader.set_value(("bench.json", b'{"ttfts": [0.1]}', "application/json")).run()
    assert not lab.exception
    errors = _errors(lab)
    assert errors == [t("zh", "err_vllm_result", reason=t("zh", "sl_vllm_why_missing",
                                                          fields="`input_lens, output_lens, itls`"))]
    lab.file_uploader(key="sl_vllm_file").set_value(("bench.json", b"\xff\xfe{", "application/json")).run()
    assert _errors(lab) == [t("zh", "sl_vllm_not_text")]
    lab.file_uploader(key="sl_vllm_file").set_value(("bench.json", b" " * 20_000 + b"{}", "application/json")).run()
    assert _errors(lab) == [t("zh", "sl_vllm_too_big", mb="0.02", limit="0.01")]
    assert not lab.exception

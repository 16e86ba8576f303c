"""lesson.messages: every error key a page words, in zh and en, filled, safe, and never a traceback."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from string import Formatter

import pytest

from engine.contract.errors import CapError, EngineError, InputError, KeyedError, ModelLoadError, RemoteError
from engine.contract.interop.errors import CONNECTION_CAUSES, ProbeError
from engine.contract.interop.probe import ProbeFailure
from engine.contract.worker.errors import EngineWorkerError, WorkerRestarted
from lesson import messages
from lesson.messages import (
    ENGINE_ERROR_KEYS, PROBE_KEYS, SERVING_ERROR_KEYS, WORKER_ERROR_KEYS, code_span, data_field,
    error_message, remote_message, serving_message, technical_detail,
)
from lesson.text import LANGUAGES, TEXTS, t

ROOT = Path(__file__).resolve().parents[2]
# The errors whose key is its text key (engine.contract.errors.CapError and RemoteError), raised by the serving lab
CAP_KEYS = ("sl_cap_requests", "sl_cap_prompt", "sl_cap_answer", "sl_cap_arrival")
REFUSAL_KEYS = ("sl_err_probe_host", "sl_err_probe_key_name")
UNFILLED = re.compile(r"\{[a-z_]+\}")


def fields(key: str) -> set[str]:
    """The `{name}` fields the text `key` expects (the same in both languages)."""
    names = [{name for _, name, _, _ in Formatter().parse(TEXTS[lang][key]) if name} for lang in LANGUAGES]
    assert names[0] == names[1], key
    return names[0]


def params_for(key: str, skip: tuple[str, ...] = ()) -> dict[str, str]:
    """A distinct plain value for every field of the text `key`."""
    return {name: "v" + name.replace("_", "") for name in sorted(fields(key)) if name not in skip}


def internal(lang: str, kind: str) -> str:
    return t(lang, "err_internal", kind=kind)


def check(words: str, lang: str, other: str) -> None:
    """Filled (no `{field}` left), not the fallback, and not the other language's words."""
    assert isinstance(words, str) and words, lang
    assert not UNFILLED.search(words), words
    assert "err_internal" not in words and words != other


def test_the_module_needs_neither_streamlit_nor_the_app():
    code = "import sys, lesson.messages; print(sorted(m for m in ('streamlit', 'app_support') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize("key", ENGINE_ERROR_KEYS)
def test_every_engine_key_is_worded_on_the_lesson_page(key):
    cls = ModelLoadError if key in ("model_not_found", "not_a_model", "model_load_failed", "pickle_weights_only",
                                    "device_unavailable", "preset_too_large") else InputError
    err = cls(key, "the engine's English", **params_for(f"err_{key}"))
    zh, en = error_message(err, "zh"), error_message(err, "en")
    for lang, words, other in (("zh", zh, en), ("en", en, zh)):
        check(words, lang, other)
        assert words != internal(lang, cls.__name__)
        for value in params_for(f"err_{key}").values():
            assert value in words, (key, value)
        assert "the engine's English" not in words


@pytest.mark.parametrize("key", WORKER_ERROR_KEYS)
def test_every_engine_worker_key_is_worded_on_every_page(key):
    text_key = "err_engine_restarted_run" if key == "engine_restarted" else f"err_{key}"
    params = params_for(text_key)
    err = EngineWorkerError(key, "the worker's English", **params, reason="the OS's words", during_run=True)
    for translate in (error_message, serving_message, remote_message):
        zh, en = translate(err, "zh"), translate(err, "en")
        for lang, words, other in (("zh", zh, en), ("en", en, zh)):
            check(words, lang, other)
            assert all(value in words for value in params.values()), (key, words)
            assert "English" not in words and "the OS" not in words


def test_a_restarted_worker_says_whether_this_run_was_lost():
    for lang in LANGUAGES:
        during = error_message(WorkerRestarted(-9, True), lang)
        before = error_message(WorkerRestarted(None, False), lang)
        assert during == t(lang, "err_engine_restarted_run", exit_code=r"\-9")
        assert before == t(lang, "err_engine_restarted", exit_code="?")


def test_lesson_page_values_are_escaped_and_paths_cut():
    err = ModelLoadError("not_a_model", "x", path="/srv/models/*bold*_[x](e.org)")
    words = error_message(err, "en")
    assert "/srv" not in words and r"\*bold\*\_\[x\]\(e\.org\)" in words
    assert error_message(InputError("mode_unknown", "x", value="a" * 500, choices="eager"), "en").count("a") < 260


def test_an_unknown_key_or_a_plain_exception_is_the_fallback_never_its_text():
    for err in (KeyError("secret"), EngineError("no_such_key", "secret"), RuntimeError("secret")):
        for lang in LANGUAGES:
            for translate in (error_message, serving_message, remote_message):
                words = translate(err, lang)
                assert words == internal(lang, messages.escape_markdown(type(err).__name__))
                assert "secret" not in words


@pytest.mark.parametrize("key", SERVING_ERROR_KEYS)
def test_every_serving_key_is_worded_in_the_serving_lab(key):
    err = InputError(key, "detail <b>x</b> http://e.org", **params_for(f"sl_err_{key}", skip=("detail",)))
    zh, en = serving_message(err, "zh"), serving_message(err, "en")
    for lang, words, other in (("zh", zh, en), ("en", en, zh)):
        check(words, lang, other)
        for value in params_for(f"sl_err_{key}", skip=("detail",)).values():
            assert f"`{value}`" in words, (key, value)  # a typed id: inline code, never a link
        if "detail" in fields(f"sl_err_{key}"):
            assert code_span(err) in words  # the engine's own detail, as code


def workload_whys() -> list[str]:
    return sorted(k.removeprefix("sl_wl_why_") for k in TEXTS["en"] if k.startswith("sl_wl_why_"))


@pytest.mark.parametrize("why", workload_whys())
def test_every_workload_refusal_is_worded(why):
    data = params_for(f"sl_wl_why_{why}")
    whole = InputError("bad_workload", "English reason", why=why, reason="English reason", **data)
    line = InputError("bad_workload_line", "English reason", why=why, reason="English reason", line=7, **data)
    for lang in LANGUAGES:
        for err in (whole, line):
            words = serving_message(err, lang)
            assert not UNFILLED.search(words) and "English reason" not in words
            assert all(f"`{v}`" in words for v in data.values()), (why, words)
            assert t(lang, f"sl_wl_why_{why}", **{k: f"`{v}`" for k, v in data.items()}) in words
        assert "7" in serving_message(line, lang)


def test_a_workload_refusal_without_words_for_its_why_says_other():
    err = InputError("bad_workload", "x", why="never_heard_of", reason="x")
    assert serving_message(err, "en") == t("en", "sl_err_bad_workload", detail=t("en", "sl_wl_why_other"))


@pytest.mark.parametrize("key", CAP_KEYS)
def test_every_cap_is_worded_with_its_numbers(key):
    err = CapError(key, n=2000, limit=1024)
    zh, en = serving_message(err, "zh"), serving_message(err, "en")
    for lang, words, other in (("zh", zh, en), ("en", en, zh)):
        check(words, lang, other)
        assert "2000" in words and "1024" in words
    assert remote_message(err, "en") == en  # the probe panel says a cap the same way


@pytest.mark.parametrize("key", REFUSAL_KEYS)
def test_every_probe_refusal_is_worded(key):
    err = RemoteError(key, **params_for(key))
    zh, en = remote_message(err, "zh"), remote_message(err, "en")
    for lang, words, other in (("zh", zh, en), ("en", en, zh)):
        check(words, lang, other)
        assert all(f"`{v}`" in words for v in params_for(key).values())


@pytest.mark.parametrize("key", PROBE_KEYS)
def test_every_probe_key_is_worded(key):
    text_key = f"sl_err_{key}" if key in ("probe_timeout", "probe_unreachable") else f"err_{key}"
    data = params_for(text_key, skip=("cause",))
    err = ProbeError(key, "English", cause="refused", reason="[Errno 111] Connection refused", **data)
    zh, en = remote_message(err, "zh"), remote_message(err, "en")
    for lang, words, other in (("zh", zh, en), ("en", en, zh)):
        check(words, lang, other)
        assert all(f"`{v}`" in words for v in data.values()), (key, words)
        assert "Errno" not in words  # an OS error's words are technical detail, not the message


@pytest.mark.parametrize("cause", CONNECTION_CAUSES)
def test_every_connection_cause_is_worded(cause):
    err = ProbeError("probe_unreachable", "x", request_id="r0", endpoint="http://h:1", cause=cause, reason="OS words")
    for lang in LANGUAGES:
        assert t(lang, f"sl_probe_cause_{cause}") in remote_message(err, lang)
    assert technical_detail(err) == "OS words"
    unknown = ProbeError("probe_unreachable", "x", request_id="r0", endpoint="e", cause="gremlins")
    assert t("en", "sl_probe_cause_other") in remote_message(unknown, "en")


def test_a_bad_probe_setting_shows_its_detail_as_code():
    err = InputError("bad_probe_setting", "concurrency must be 1 or more, got -1")
    for lang in LANGUAGES:
        assert remote_message(err, lang) == t(lang, "sl_err_bad_probe_setting", detail=code_span(err))


def vllm_whys() -> list[str]:
    return sorted(k.removeprefix("sl_vllm_why_") for k in TEXTS["en"] if k.startswith("sl_vllm_why_"))


@pytest.mark.parametrize("why", vllm_whys())
def test_every_vllm_refusal_is_worded(why):
    data = params_for(f"sl_vllm_why_{why}")
    err = KeyedError("vllm_result", "English", why=why, reason="English reason", **data)
    zh, en = remote_message(err, "zh"), remote_message(err, "en")
    for lang, words, other in (("zh", zh, en), ("en", en, zh)):
        check(words, lang, other)
        assert "English reason" not in words and all(f"`{v}`" in words for v in data.values())


def test_a_probes_failed_request_reads_as_its_error():
    """The serving lab draws a probe's failures as they came back (engine.contract.interop.probe.ProbeFailure):
    a key and params, as an error has."""
    params = {"request_id": "r3", "status": 503, "detail": "busy"}
    failure = ProbeFailure("r3", "probe_http", "HTTP 503", 0.0, 0, params)
    assert remote_message(failure, "en") == remote_message(ProbeError("probe_http", **params), "en")
    assert "`r3`" in remote_message(failure, "zh") and "503" in remote_message(failure, "zh")
    assert technical_detail(failure) == ""


def test_data_fields_are_numbers_or_inline_code():
    assert data_field(3) == "3" and data_field(2.5) == "2.5" and data_field(True) == "`True`"
    assert data_field("http://e.org") == "`http://e.org`"
    assert code_span("a`b") == "``a`b``" and code_span("") == "`∅`"


def test_keyed_errors_share_one_base():
    for err in (InputError("k", "m"), ModelLoadError("k", "m"), ProbeError("k", "m"), CapError("k"), RemoteError("k")):
        assert isinstance(err, KeyedError) and isinstance(err, ValueError) and err.key == "k"
    assert str(CapError("sl_cap_requests", n=1, limit=0)) == "sl_cap_requests"
    assert str(InputError("k", "one English line", n=1)) == "one English line"
    assert InputError("k", "m", n=1).params == {"n": 1}

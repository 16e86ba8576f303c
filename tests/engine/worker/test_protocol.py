"""The worker's wire format without a worker: versioned messages, addresses, tokens, errors across
the wire, and the engine's result types through JSON and back (equal to what went in)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.contract.cost import DEVICE_SPECS, DeviceSpec
from engine.contract.errors import EngineError, InputError, ModelLoadError
from engine.contract.serving.config import ServeConfig
from engine.contract.serving.trace import SLO
from engine.contract.trace import Step
from engine.contract.codec import CodecError, convert, to_plain
from engine.runtime.overhead import DecodeOps
from engine.runtime.worker import jobs
from engine.contract.worker.errors import (
    ProtocolError, ProtocolVersionError, WorkerFailure, WorkerRestarted, error_from_wire, error_to_wire,
)
from engine.contract.worker.protocol import (
    CLIENT_TYPES, PROTOCOL_VERSION, WORKER_TYPES, ModelRef, decode, encode,
    parse_address, read_token,
)
from tests.factories import default_shape, fake_attention, fake_comparison, make_trace

TOKEN = "s3cret-token-0123456789abcdef"


def test_every_message_carries_the_protocol_version():
    message = json.loads(encode("queued", ahead=2))
    assert message == {"v": PROTOCOL_VERSION, "type": "queued", "ahead": 2}
    assert decode(encode("queued", ahead=2), WORKER_TYPES)["ahead"] == 2


@pytest.mark.parametrize("version", [None, 0, PROTOCOL_VERSION + 1, "1"])
def test_another_version_is_refused_naming_both(version):
    frame = json.dumps({"v": version, "type": "call"}).encode()
    with pytest.raises(ProtocolVersionError) as caught:
        decode(frame, CLIENT_TYPES)
    assert caught.value.key == "protocol_version"
    assert caught.value.params == {"ours": PROTOCOL_VERSION, "theirs": str(version)}


@pytest.mark.parametrize("frame", [b"\xff\xfe", b"not json", b"[1, 2]",
                                   json.dumps({"v": PROTOCOL_VERSION, "type": "done"}).encode()])
def test_a_malformed_or_unexpected_message_is_refused(frame):
    with pytest.raises(ProtocolError) as caught:
        decode(frame, CLIENT_TYPES)  # "done" is the worker's message, never the client's
    assert caught.value.key == "protocol_malformed"


@pytest.mark.parametrize("text, expected", [("gpu-box:8600", ("gpu-box", 8600)), ("10.0.0.7:1", ("10.0.0.7", 1)),
                                            (" [::1]:8600 ", ("::1", 8600))])
def test_addresses_parse(text, expected):
    assert parse_address(text) == expected


@pytest.mark.parametrize("text", ["gpu-box", ":8600", "gpu-box:", "gpu-box:port", "gpu-box:70000", "gpu-box:0"])
def test_a_bad_address_is_refused_with_its_key(text):
    with pytest.raises(EngineError) as caught:
        parse_address(text)
    assert caught.value.key == "engine_address"


def test_the_token_is_read_from_its_file_first_then_the_environment(tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n", encoding="utf-8")
    environ = {"PREFILL_DECODE_ENGINE_TOKEN": "another-token-abcdefgh"}
    assert read_token(token_file, environ) == TOKEN.encode()
    assert read_token(None, environ) == b"another-token-abcdefgh"
    assert read_token(None, {}) is None


def test_a_short_or_unreadable_token_is_refused_without_saying_it(tmp_path):
    short = tmp_path / "short"
    short.write_text("abc123", encoding="utf-8")
    with pytest.raises(EngineError) as caught:
        read_token(short, {})
    assert caught.value.key == "engine_token_short" and "abc123" not in str(caught.value)
    assert "abc123" not in json.dumps(caught.value.params)
    with pytest.raises(EngineError) as caught:
        read_token(tmp_path / "missing", {})
    assert caught.value.key == "engine_token_file"


def test_model_refs_travel_as_plain_text_only():
    ref = ModelRef("preset:qwen2.5-0.5b", "cpu", "bfloat16")
    assert ModelRef.from_wire(json.loads(json.dumps(ref.to_wire()))) == ref
    for bad in (None, "default", {"choice": "default", "device": 3, "dtype": "auto"}):
        with pytest.raises(ProtocolError):
            ModelRef.from_wire(bad)


# --- errors across the wire -------------------------------------------------------------

def test_an_engine_error_comes_back_as_the_same_class_with_its_key_and_params():
    sent = InputError("prompt_too_long", "the prompt has 9000 tokens", num_tokens=9000, limit=1024)
    back = error_from_wire(json.loads(json.dumps(error_to_wire(sent))))
    assert type(back) is InputError
    assert (back.key, back.params, str(back)) == ("prompt_too_long", {"num_tokens": 9000, "limit": 1024}, str(sent))


def test_a_worker_error_with_its_own_constructor_comes_back_too():
    back = error_from_wire(json.loads(json.dumps(error_to_wire(WorkerRestarted(-9, True)))))
    assert type(back) is WorkerRestarted and back.params == {"exit_code": -9, "during_run": True}


def test_params_that_json_cannot_carry_become_text():
    wire = error_to_wire(ModelLoadError("model_not_found", "missing", path=Path("/x"), ratio=float("inf")))
    assert json.loads(json.dumps(wire))["params"] == {"path": "/x", "ratio": "inf"}


def test_an_unexpected_error_becomes_a_worker_failure_naming_its_class():
    back = error_from_wire(error_to_wire(RuntimeError("CUDA error: out of memory\nmore lines")))
    assert type(back) is WorkerFailure
    assert back.params == {"error": "RuntimeError", "reason": "CUDA error: out of memory"}


@pytest.mark.parametrize("name", ["os.system", "builtins.ValueError", "engine.nowhere.Missing",
                                  "engine.contract.trace.Step", None, 3])
def test_only_keyed_engine_classes_are_rebuilt(name):
    back = error_from_wire({"class": name, "key": "empty_prompt", "params": {}, "message": "the prompt is empty"})
    assert type(back) is EngineError and back.key == "empty_prompt"


# --- the engine's results through JSON --------------------------------------------------

@pytest.mark.parametrize("value", [
    fake_comparison(), fake_attention(), default_shape(), DecodeOps(calls=300, kernels=245, top=(("mul", 41),),
                                                                    layers=4),
    DEVICE_SPECS["h100"],
    DeviceSpec("this machine (measured)", 1e12, 2e12, 3e11, source="measured", spec=DEVICE_SPECS["h200"]),
    ServeConfig(policy="chunked", token_budget=64, slo=SLO(ttft_ms=200.0)),
], ids=lambda v: type(v).__name__)
def test_results_come_back_equal(value):
    assert convert(json.loads(json.dumps(to_plain(value))), type(value)) == value


def test_a_step_comes_back_equal_from_the_fields_the_worker_sends():
    step = make_trace().steps[1]
    assert convert(json.loads(json.dumps(jobs.step_plain(step))), Step) == step


def test_a_field_of_another_shape_is_refused():
    data = to_plain(default_shape())
    with pytest.raises(CodecError, match="no field `surprise`"):
        convert({**data, "surprise": 1}, type(default_shape()))

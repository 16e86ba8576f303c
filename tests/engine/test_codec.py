"""The contract's one codec (engine/contract/codec.py): round trips, strict types, no unknown key at any depth,
the JSON bounds with their own keys, an older version upgraded, a class's own keyed refusal kept."""

from __future__ import annotations

import json

import pytest

from engine.contract.codec import CodecError, convert, decode, encode
from engine.contract.cost import DEVICE_SPECS, DeviceSpec
from engine.contract.errors import InputError, LimitError
from engine.contract.serving.config import ServeConfig
from engine.contract.trace import SCHEMA_VERSION, RequestTrace, TraceFormatError
from tests.factories import make_trace


def plain_trace() -> dict:
    return json.loads(make_trace().to_json())


def test_a_trace_round_trips_and_its_derived_values_are_ignored_on_the_way_back():
    trace = make_trace()
    assert decode(encode(trace), RequestTrace) == trace
    assert decode(encode(trace).encode("utf-8"), RequestTrace) == trace
    assert "derived" in json.loads(encode(trace))


@pytest.mark.parametrize("mutate, words", [
    (lambda d: d["steps"][0].update(colour="red"), "no field `colour`"),  # nested two deep
    (lambda d: d["model"].update(surprise=1), "no field `surprise`"),
    (lambda d: d.update(surprise=1), "no field `surprise`"),
    (lambda d: d["model"].update(num_layers=True), "Expected `int`, got `bool`"),
    (lambda d: d["steps"][0].update(start_ms="soon"), "Expected `float`, got `str`"),
    (lambda d: d["steps"][0].update(input_ids=[1.5]), "Expected `int`, got `float`"),
    (lambda d: d["steps"][0].pop("end_ms"), "missing required field `end_ms`"),
    (lambda d: d["steps"][0].update(phase="think"), "unknown phase"),  # the class's own __post_init__
])
def test_a_value_of_the_wrong_shape_is_refused_naming_the_field(mutate, words):
    data = plain_trace()
    mutate(data)
    with pytest.raises(CodecError, match=words):
        convert(data, RequestTrace)
    with pytest.raises(TraceFormatError):  # what the readers catch
        decode(json.dumps(data), RequestTrace)


@pytest.mark.parametrize("text, key", [
    ('{"a": NaN}', "limit_not_finite"),
    ('{"a": -Infinity}', "limit_not_finite"),
    ('{"a": 1e400}', "limit_not_finite"),
    ("[" * 100_000 + "]" * 100_000, "limit_json_depth"),
    ('{"a": ' + "9" * 5000 + "}", "limit_json_number"),
])
def test_the_json_bounds_keep_their_keys(text, key):
    with pytest.raises(LimitError) as caught:
        decode(text, RequestTrace)
    assert caught.value.key == key


def test_malformed_json_is_a_codec_error():
    with pytest.raises(CodecError, match="not JSON"):
        decode("{not json", RequestTrace)


def test_a_non_finite_number_is_never_written():
    with pytest.raises(LimitError):
        encode({"a": float("nan")})


def test_a_version_1_trace_is_upgraded_and_an_unknown_version_refused_in_words():
    data = plain_trace()
    data["schema_version"] = 1
    for step in data["steps"]:
        del step["lock_wait_ms"], step["consumer_ms"]
    old = convert(data, RequestTrace)
    assert old.schema_version == SCHEMA_VERSION and old.steps[1].lock_wait_ms == 0.0
    data["schema_version"] = 99
    with pytest.raises(TraceFormatError, match="schema_version 99"):
        convert(data, RequestTrace)
    data["schema_version"] = True  # not version 1
    with pytest.raises(TraceFormatError, match="schema_version True"):
        convert(data, RequestTrace)


def test_a_keyed_refusal_of_the_class_itself_is_raised_as_it_is():
    with pytest.raises(InputError) as caught:
        convert({"policy": "nope"}, ServeConfig)
    assert caught.value.key == "bad_serve_setting"


def test_a_class_that_holds_itself_round_trips():
    spec = DeviceSpec("this machine (measured)", 1e12, 2e12, 3e11, source="measured", spec=DEVICE_SPECS["h200"])
    assert convert(json.loads(encode(spec)), DeviceSpec) == spec

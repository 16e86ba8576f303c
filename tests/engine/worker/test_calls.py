"""The one table of kinds of call (engine/contract/worker/calls.py) holds the worker and the client
together: every kind has its handler and its client methods, and nothing has one without a kind."""

from __future__ import annotations

import collections.abc
import inspect
import typing

import pytest

from engine.contract.engine_queue import JOB_KINDS
from engine.contract.results import GenerationConfig
from engine.contract.worker import calls, client
from engine.contract.worker.calls import CALLS, CallKind
from engine.contract.worker.client import STALL_CHECKED, EngineClient
from engine.contract.worker.protocol import LIGHT_METHODS, MEASURED_METHODS, ModelRef
from engine.runtime.worker import jobs, queue

PLUMBING = {"from_env", "named", "close", "call"}  # EngineClient's methods that are not one kind of call
MODEL = ModelRef("default", "auto", "auto")
CONFIG = GenerationConfig(max_new_tokens=2)
CALLERS = {  # one call of each client method, with arguments of the right shape
    "stream_trace": lambda c: list(c.stream_trace(MODEL, "p", CONFIG)),
    "stream_repeats": lambda c: list(c.stream_repeats(MODEL, "p", CONFIG, repeats=2)),
    "generate": lambda c: c.generate(MODEL, "p", CONFIG),
    "modes": lambda c: c.modes(MODEL, "p", num_tokens=2, modes=["eager"]),
    "weight_formats": lambda c: c.weight_formats(MODEL, steps=2, rounds=1),
    "compare_cache": lambda c: c.compare_cache(MODEL, [1, 2], 2),
    "decode_attention": lambda c: c.decode_attention(MODEL, [1], [2], 0),
    "sweep": lambda c: c.sweep(MODEL, "prefill", (1, 2)),
    "serve_workload": lambda c: c.serve_workload(MODEL, [], {"policy": "fcfs"}),
    "decode_ops": lambda c: c.decode_ops(MODEL),
    "host_us_per_call": lambda c: c.host_us_per_call("cpu"),
    "machine_spec": lambda c: c.machine_spec("cpu"),
    "load": lambda c: c.load(MODEL),
    "describe": lambda c: c.describe(MODEL),
    "model_shape": lambda c: c.model_shape(MODEL),
    "model_choices": lambda c: c.model_choices(),
    "token_preview": lambda c: c.token_preview(MODEL, "p", 4),
    "queue_history": lambda c: c.queue_history(),
    "ping": lambda c: c.ping(),
}


def client_calls() -> set[str]:
    return {name for name, _ in inspect.getmembers(EngineClient, inspect.isfunction)
            if not name.startswith("_")} - PLUMBING


def test_every_kind_has_a_handler_and_every_handler_a_kind():
    assert set(jobs.HANDLERS) == set(CALLS)
    assert set(jobs.MEASURED) == MEASURED_METHODS == {n for n, k in CALLS.items() if k.lane != "light"}
    assert set(jobs.LIGHT) == LIGHT_METHODS == {n for n, k in CALLS.items() if k.lane == "light"}
    assert not MEASURED_METHODS & LIGHT_METHODS


def test_every_kind_has_client_methods_and_every_client_call_a_kind():
    named = [method for kind in CALLS.values() for method in kind.client]
    assert len(named) == len(set(named)), "a client method is named by two kinds"
    assert set(named) == client_calls() == set(CALLERS)


@pytest.mark.parametrize("method", sorted(CALLERS))
def test_each_client_method_sends_its_kind(method, monkeypatch):
    sent = []

    def call(self, kind, args):
        sent.append(kind)
        yield "done", {"result": None}

    monkeypatch.setattr(EngineClient, "call", call)
    try:
        CALLERS[method](EngineClient(("127.0.0.1", 1), b"k" * 16))
    except Exception:  # noqa: BLE001 - a None result is refused; only the method sent matters here
        pass
    assert [CALLS[name] for name in sent] == [kind for kind in CALLS.values() if method in kind.client]


@pytest.mark.parametrize("name", sorted(CALLS))
def test_a_kind_result_is_what_its_client_methods_return(name):
    kind = CALLS[name]
    for method in kind.client:
        returned = typing.get_type_hints(getattr(EngineClient, method), vars(client))["return"]
        streamed = {collections.abc.Iterator[client.Event]} if kind.streams else set()
        assert returned in {kind.result} | streamed, method


def test_the_queue_and_the_client_read_the_table():
    assert {n for n in CALLS if calls.lane_of(n) == "short"} == {"trace", "trace_repeats", "compare_cache",
                                                                 "decode_attention", "decode_ops"}
    assert calls.lane_of("a test's own method") == "long" and calls.history_kind("gate") == "other"
    assert queue.SHARED_METHODS == MEASURED_METHODS  # every measured kind is determined by its arguments
    assert STALL_CHECKED == MEASURED_METHODS - {"load"}  # a load is not a measurement
    assert {k.history for k in CALLS.values()} <= set(JOB_KINDS)


def test_a_kind_in_no_lane_is_refused():
    with pytest.raises(ValueError, match="lane"):
        CallKind("x", "medium", dict, "x", ("x",))

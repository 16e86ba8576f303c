"""A pool of engine workers (PREFILL_DECODE_ENGINE=A,B): the addresses read, and each call's worker chosen.

No worker runs here: the queue lengths are given, so the rule is tested on its own (shortest queue,
ties in turn, a silent worker passed over) and the client is checked to ask the pool for every call.
"""

from __future__ import annotations

import socket

import pytest

from engine.contract.worker import client as client_module
from engine.contract.worker.client import EngineClient, queue_length
from engine.contract.worker.errors import WorkerSetupError, WorkerUnreachable
from engine.contract.worker.pool import MAX_POOL_WORKERS, WorkerPool, parse_addresses

A, B, C = ("127.0.0.1", 8601), ("127.0.0.1", 8602), ("gpu-box", 8600)
TOKEN_ENV = {"PREFILL_DECODE_ENGINE_TOKEN": "a-token-of-at-least-16-chars"}


def test_addresses_are_read_in_order_each_once():
    assert parse_addresses("127.0.0.1:8601") == (A,)
    assert parse_addresses(" 127.0.0.1:8601 , gpu-box:8600,127.0.0.1:8601,") == (A, C)


@pytest.mark.parametrize("text", ["", " , ", "127.0.0.1", "a:1,b", "a:99999", ",".join(["h:1"] * 2 + ["x"])])
def test_a_bad_address_list_is_one_setup_error(text):
    with pytest.raises(WorkerSetupError):
        parse_addresses(text)


def test_a_pool_has_a_bound():
    many = ",".join(f"h:{1000 + i}" for i in range(MAX_POOL_WORKERS + 1))
    with pytest.raises(WorkerSetupError, match="at most"):
        parse_addresses(many)


def test_the_shortest_queue_is_chosen():
    lengths = {A: 3, B: 0, C: 1}
    pool = WorkerPool((A, B, C), lengths.get)
    assert {pool.choose() for _ in range(6)} == {B}


def test_equal_queues_take_turns():
    pool = WorkerPool((A, B, C), lambda address: 0)  # workers that report no length count as 0
    assert [pool.choose() for _ in range(6)] == [A, B, C, A, B, C]


def test_a_silent_worker_is_passed_over_while_another_answers():
    pool = WorkerPool((A, B), lambda address: None if address == A else 5)
    assert {pool.choose() for _ in range(4)} == {B}
    nobody = WorkerPool((A, B), lambda address: None)  # none answers: in turn (the call then fails there)
    assert [nobody.choose() for _ in range(3)] == [A, B, A]


def test_from_env_makes_a_pool_only_for_several_addresses():
    one = EngineClient.from_env({"PREFILL_DECODE_ENGINE": "127.0.0.1:8601", **TOKEN_ENV})
    assert one.pool is None and one.address == A
    two = EngineClient.from_env({"PREFILL_DECODE_ENGINE": "127.0.0.1:8601,127.0.0.1:8602", **TOKEN_ENV})
    assert two.pool is not None and two.pool.addresses == (A, B)


def test_every_call_asks_the_pool(monkeypatch):
    """The address of each call (EngineClient.address, read when a call connects) is the pool's choice."""
    lengths = {A: 2, B: 0}
    monkeypatch.setattr(client_module, "queue_length", lambda address, token: lengths[address])
    client = EngineClient.from_env({"PREFILL_DECODE_ENGINE": "127.0.0.1:8601,127.0.0.1:8602", **TOKEN_ENV})
    assert client.address == B
    lengths.update({A: 0, B: 4})
    assert client.address == A


def test_a_worker_that_does_not_answer_has_no_queue_length():
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert queue_length(("127.0.0.1", port), b"a-token-of-at-least-16-chars") is None


@pytest.mark.parametrize("answer,length", [({"queue_length": 3}, 3), ({}, 0), ({"queue_length": -1}, 0),
                                           ({"queue_length": "7"}, 0), ({"queue_length": True}, 0)])
def test_a_reported_queue_length_is_read_as_a_count(monkeypatch, answer, length):
    monkeypatch.setattr(EngineClient, "ping", lambda self: answer)
    assert queue_length(A, b"a-token-of-at-least-16-chars") == length


def test_an_unreachable_ping_is_none(monkeypatch):
    def unreachable(self):
        raise WorkerUnreachable("127.0.0.1:8601", "refused")

    monkeypatch.setattr(EngineClient, "ping", unreachable)
    assert queue_length(A, b"a-token-of-at-least-16-chars") is None

"""The engine worker, served from threads of this test process, driven through EngineClient.

What it proves: every call the app makes gives through the worker what the in-process engine
gives (same tokens, same results); the queue is first in, first out, tells each waiting client
its place, and drops a call whose client cancels or closes; the key is required both ways;
another protocol version is refused; eight clients at once each get their own answer.

A "gate" method (a test handler that holds the runner until released) makes the queue tests
independent of how fast the machine is.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from multiprocessing.connection import Client, Listener
from types import SimpleNamespace

import pytest

from engine.contract.cost import ModelShape
from engine.contract.errors import InputError, ModelLoadError
from engine.contract.prompts import extend_prompt, prompt_token_ids
from engine.contract.results import GenerationConfig
from engine.contract.serving.config import ServeConfig
from engine.contract.serving.workloads import WorkloadRequest, questions
from engine.contract.worker.client import Done, EngineClient, Pass, Progress, Queued, Started, Waiting
from engine.contract.worker.errors import ProtocolVersionError, RunCancelled, WorkerAuthError
from engine.contract.worker.protocol import PROTOCOL_VERSION, WORKER_TYPES, Channel, ModelRef, connect, decode
from engine.runtime.compare import compare_cache, decode_attention
from engine.runtime.generation import generate
from engine.runtime.generation import token_pieces
from engine.runtime.model import load_model
from engine.runtime.overhead import count_decode_ops
from engine.runtime.serving.engine import run_workload
from engine.runtime.worker.jobs import MEASURED
from engine.runtime.worker.models import WorkerSettings
from engine.runtime.worker.server import start_in_thread
from tests.factories import Gate

DEFAULT = ModelRef("default", "cpu", "auto")
PROMPT = "法国的首都是"
WAIT_S = 60.0  # generous: a loaded 2-core machine; every wait ends as soon as its condition holds


@pytest.fixture(scope="module")
def served(tiny_model_dirs):
    """A worker on 127.0.0.1 (a free port) whose models folder holds the tiny models."""
    key = secrets.token_hex(16).encode()
    gate = Gate()
    settings = WorkerSettings(models_dir=tiny_model_dirs["llama"].parent, presets=False, max_prompt_tokens=64)
    running = start_in_thread(key, settings, measured={**MEASURED, "gate": gate})
    client = EngineClient(running.address, key)
    client.load(DEFAULT)
    yield SimpleNamespace(worker=running.worker, address=running.address, key=key, gate=gate, client=client)
    gate.opened.set()
    running.close()


@pytest.fixture
def gate(served):
    served.gate.reset()
    yield served.gate
    served.gate.opened.set()  # never leave the runner held for the next test
    wait_for(lambda: len(served.worker.queue) == 0)


def wait_for(condition, timeout_s: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def hold_runner(served) -> threading.Thread:
    """Start a gate call from a thread and wait until it runs."""
    thread = threading.Thread(target=lambda: list(served.client.call("gate", {})), daemon=True)
    thread.start()
    assert served.gate.entered.wait(WAIT_S)
    return thread


# --- the same results as the in-process engine ------------------------------------------

def test_streamed_tokens_equal_the_in_process_engines(served, default_lm):
    cfg = GenerationConfig(max_new_tokens=12, ignore_eos=True)
    events = list(served.client.stream_trace(DEFAULT, PROMPT, cfg))
    expected = generate(default_lm, PROMPT, cfg)
    assert isinstance(events[0], Queued) and isinstance(events[1], Started) and isinstance(events[-1], Done)
    passes = [e.trace for e in events if isinstance(e, Pass)]
    final = events[-1].result
    assert len(passes) == 12 and passes[-1] == final and final.finished
    assert final.output_ids == expected.output_ids and final.output_text == expected.output_text
    assert (final.prompt_ids, final.prompt_pieces, final.model) == (expected.prompt_ids, expected.prompt_pieces,
                                                                    expected.model)
    for n, partial in enumerate(passes[:-1], start=1):  # each partial is the final's first n steps
        assert not partial.finished and tuple(partial.steps) == final.steps[:n]


def test_repeats_stream_run_one_then_give_every_run_in_one_call(served, default_lm):
    cfg = GenerationConfig(max_new_tokens=4, ignore_eos=True)
    events = list(served.client.stream_repeats(DEFAULT, PROMPT, cfg, repeats=3))
    kinds = [type(e).__name__ for e in events]
    assert kinds == ["Queued", "Started", "Pass", "Pass", "Pass", "Pass", "Progress", "Progress", "Progress", "Done"]
    passes, runs = [e.trace for e in events if isinstance(e, Pass)], events[-1].result
    assert passes[-1].finished and passes[-1] == runs[0]  # the page has run 1's answer before the repeats end
    assert not any(p.finished for p in passes[:-1])
    assert [(e.done, e.total) for e in events if isinstance(e, Progress)] == [(1, 3), (2, 3), (3, 3)]
    expected = generate(default_lm, PROMPT, cfg).output_ids
    assert len(runs) == 3 and all(r.finished and r.output_ids == expected for r in runs)
    with pytest.raises(InputError):
        list(served.client.stream_repeats(DEFAULT, PROMPT, cfg, repeats=0))


def test_a_finished_trace_survives_the_wire_exactly(served):
    trace = served.client.generate(DEFAULT, "The capital of France is", GenerationConfig(max_new_tokens=6))
    assert type(trace).from_json(trace.to_json()) == trace
    assert trace.to_json(indent=None) == type(trace).from_json(trace.to_json(indent=None)).to_json(indent=None)


def test_a_tiny_models_tokens_equal_the_in_process_engines(served, tiny_model_dirs):
    cfg = GenerationConfig(max_new_tokens=8, ignore_eos=True)
    expected = generate(load_model(tiny_model_dirs["qwen2"], device="cpu", warmup=False), "Prefill reads", cfg)
    got = served.client.generate(ModelRef("qwen2", "cpu", "auto"), "Prefill reads", cfg)
    assert got.output_ids == expected.output_ids and got.model.model_id == "qwen2"


def test_sampled_tokens_repeat_through_the_worker(served, default_lm):
    cfg = GenerationConfig(max_new_tokens=8, temperature=1.0, top_k=20, top_p=0.9, seed=7, ignore_eos=True)
    assert served.client.generate(DEFAULT, PROMPT, cfg).output_ids == generate(default_lm, PROMPT, cfg).output_ids


def test_cache_on_off_and_attention_equal_the_in_process_engines(served, default_lm):
    ids = prompt_token_ids(default_lm.tokenizer, PROMPT)
    comparison = served.client.compare_cache(DEFAULT, ids, 4)
    assert comparison.output_ids == compare_cache(default_lm, ids, 4).output_ids
    assert len(comparison.off_ms) == len(comparison.on_ms) == 4
    attention = served.client.decode_attention(DEFAULT, ids, comparison.output_ids, 2)
    assert attention == decode_attention(default_lm, ids, comparison.output_ids, 2)  # no clock in it: all equal


def test_engine_modes_write_the_same_tokens_in_one_queued_call(served, default_lm):
    progress = []
    runs = served.client.modes(DEFAULT, PROMPT, num_tokens=4, modes=("eager", "static"), on_event=progress.append)
    expected = generate(default_lm, PROMPT, GenerationConfig(max_new_tokens=4, ignore_eos=True)).output_ids
    assert {mode: run.output_ids for mode, run in runs.items()} == {"eager": expected, "static": expected}
    assert runs["static"].engine_mode == "static"
    assert [e for e in progress if isinstance(e, Progress)] == [Progress(1, 2), Progress(2, 2)]


def test_a_sweep_reports_each_point_and_keeps_its_shape(served):
    progress = []
    sweep = served.client.sweep(DEFAULT, "decode-context", (8, 32), repeats=2, on_event=progress.append)
    assert [p.value for p in sweep.points] == [8, 32] and all(len(p.times_ms) == 2 for p in sweep.points)
    assert sweep.kind == "decode-context" and sweep.model_id == "default"
    assert [e for e in progress if isinstance(e, Progress)] == [Progress(1, 2), Progress(2, 2)]


def test_a_serving_run_gives_each_request_the_in_process_engines_tokens(served, default_lm):
    requests = [WorkloadRequest(0.0, q, 4, ignore_eos=True) for q in questions()[:3]]
    config = ServeConfig(policy="chunked", token_budget=16)
    progress = []
    run = served.client.serve_workload(DEFAULT, requests, config, scenario="test", on_event=progress.append)
    expected = run_workload(default_lm, requests, config, scenario="test")
    assert [r.output_ids for r in run.requests] == [r.output_ids for r in expected.requests]
    assert run.scenario == "test" and run.settings.policy == "chunked"
    # progress in answer tokens written, of the workload's budget (3 x 4): a page can say how far the run is
    steps = [e for e in progress if isinstance(e, Progress)]
    assert steps[-1] == Progress(12, 12) and len(steps) >= 2 and steps[0].done < 12
    assert all(a.done <= b.done and b.total == 12 for a, b in zip(steps, steps[1:]))


def test_the_labs_model_facts_equal_the_in_process_ones(served, default_lm):
    assert served.client.describe(DEFAULT).info == default_lm.info
    assert served.client.model_shape(DEFAULT) == ModelShape.from_config(default_lm.model.config, name="default")
    assert served.client.decode_ops(DEFAULT) == count_decode_ops(default_lm)
    assert served.client.host_us_per_call("cpu") > 0
    assert served.client.machine_spec("cpu").source == "measured"
    assert served.client.model_choices("cpu") == ("default", "gpt2", "llama", "mistral", "qwen2", "tokenizer")


def test_the_token_preview_is_the_engines_split(served, default_lm):
    preview = served.client.token_preview(DEFAULT, PROMPT, 24)
    stretched = extend_prompt(default_lm.tokenizer, PROMPT, 24)
    assert preview.prompt == stretched and preview.natural == len(prompt_token_ids(default_lm.tokenizer, PROMPT))
    assert preview.pieces == token_pieces(default_lm.tokenizer, prompt_token_ids(default_lm.tokenizer, stretched))


def test_engine_errors_come_back_as_their_own_class(served):
    with pytest.raises(InputError) as caught:
        served.client.generate(DEFAULT, "   ", GenerationConfig())
    assert caught.value.key == "empty_prompt"
    with pytest.raises(InputError) as caught:
        served.client.generate(DEFAULT, PROMPT, GenerationConfig(), max_prompt_tokens=1)
    assert caught.value.key == "prompt_too_long" and caught.value.params["limit"] == 1
    for forged in ("../../etc", "/etc", "preset:qwen2.5-0.5b"):  # presets are off on this worker
        with pytest.raises(ModelLoadError) as caught:
            served.client.generate(ModelRef(forged, "cpu", "auto"), PROMPT, GenerationConfig())
        assert caught.value.key == "model_not_found"


# --- the queue ---------------------------------------------------------------------------

def first_events(iterator, count: int) -> list:
    return [next(iterator) for _ in range(count)]


def test_waiting_clients_see_their_place_and_run_in_order(served, gate):
    held = hold_runner(served)
    cfg = GenerationConfig(max_new_tokens=3, ignore_eos=True)
    second = served.client.stream_trace(DEFAULT, PROMPT, cfg)
    assert first_events(second, 1) == [Queued(ahead=1)]
    third = served.client.stream_trace(DEFAULT, "The capital of France is", cfg)
    assert first_events(third, 1) == [Queued(ahead=2)]
    finished = []

    def drain(name, events):
        rest = list(events)
        finished.append((name, rest))

    threads = [threading.Thread(target=drain, args=(name, it)) for name, it in (("second", second), ("third", third))]
    for t in threads:
        t.start()
    gate.opened.set()
    for t in threads + [held]:
        t.join(WAIT_S)
    rest = dict(finished)
    assert isinstance(rest["second"][0], Started)  # nothing ahead once the gate left: it starts at once
    assert rest["third"][0] == Queued(ahead=1) and isinstance(rest["third"][1], Started)
    assert rest["second"][0].at <= rest["third"][1].at  # the worker's clock: the second started first
    assert isinstance(rest["second"][-1], Done) and isinstance(rest["third"][-1], Done)


def test_ping_reports_the_queue_a_pool_of_workers_picks_by(served, gate):
    assert served.client.ping()["queue_length"] == 0
    held = hold_runner(served)
    assert served.client.ping()["queue_length"] == 1  # the held call runs: light calls still answer
    gate.opened.set()
    held.join(WAIT_S)


def test_closing_a_queued_call_takes_it_out_of_the_queue(served, gate):
    hold_runner(served)
    queued = served.client.stream_trace(DEFAULT, PROMPT, GenerationConfig(max_new_tokens=2))
    assert first_events(queued, 1) == [Queued(ahead=1)]
    wait_for(lambda: len(served.worker.queue) == 2)
    queued.close()  # a page rerun or closed: the generator is closed, so is its connection
    wait_for(lambda: len(served.worker.queue) == 1)  # only the gate is left
    after = served.client.stream_trace(DEFAULT, PROMPT, GenerationConfig(max_new_tokens=2))
    assert first_events(after, 1) == [Queued(ahead=1)]  # the closed one no longer counts
    after.close()


def test_a_cancel_message_takes_a_queued_call_out_and_says_so(served, gate):
    hold_runner(served)
    channel = Channel(connect(served.address, served.key), WORKER_TYPES)
    channel.send("call", method="trace", args={"model": DEFAULT.to_wire(), "prompt": PROMPT, "config": {}})
    assert channel.recv()["type"] == "queued"
    channel.send("cancel")
    assert channel.recv()["type"] == "cancelled"
    channel.close()
    wait_for(lambda: len(served.worker.queue) == 1)


def test_a_heartbeat_client_hears_waiting_while_queued_and_a_raising_listener_cancels(served, gate):
    hold_runner(served)
    client = EngineClient(served.address, served.key, heartbeat_s=0.02)
    heard = []

    def listener(event):  # a page that is rerun while it waits: Streamlit raises from its next redraw
        heard.append(event)
        if heard.count(Waiting()) == 3 and Queued(ahead=1) in heard:
            raise KeyboardInterrupt("the page stopped")

    with pytest.raises(KeyboardInterrupt):
        client.sweep(DEFAULT, "decode-context", (8,), repeats=1, on_event=listener)
    assert [e for e in heard if e != Waiting()] == [Queued(ahead=1)]  # then nothing but heartbeats
    wait_for(lambda: len(served.worker.queue) == 1)  # the sweep left the queue; only the gate is left
    stream = client.stream_trace(DEFAULT, PROMPT, GenerationConfig(max_new_tokens=2))
    assert next(e for e in stream if e != Waiting()) == Queued(ahead=1)  # a heartbeat may come before it
    assert next(stream) == Waiting()  # held behind the gate: only heartbeats
    stream.close()
    assert served.client.heartbeat_s is None  # a client made without one never says Waiting


def test_a_running_call_stops_at_its_next_pass_when_its_client_leaves(served, gate):
    gate.opened.set()  # no gate in this test: the run itself holds the runner
    events = served.client.stream_trace(DEFAULT, PROMPT, GenerationConfig(max_new_tokens=4000, ignore_eos=True))
    seen = first_events(events, 4)  # queued, started, two passes
    assert isinstance(seen[-1], Pass) and len(seen[-1].trace.steps) == 2
    events.close()
    wait_for(lambda: len(served.worker.queue) == 0, timeout_s=10.0)  # 4000 passes would take far longer
    assert served.client.generate(DEFAULT, PROMPT, GenerationConfig(max_new_tokens=2)).finished


def test_a_cancel_message_stops_a_running_call_and_says_so(served, gate):
    channel = Channel(connect(served.address, served.key), WORKER_TYPES)
    channel.send("call", method="gate", args={})
    assert [channel.recv()["type"] for _ in range(2)] == ["queued", "started"]
    channel.send("cancel")
    # the worker's heartbeat ("alive", every second while a call runs) may come first on a busy machine
    kind = channel.recv()["type"]
    while kind == "alive":
        kind = channel.recv()["type"]
    assert kind == "cancelled"
    channel.close()


def test_a_call_the_worker_cancels_raises_run_cancelled_in_the_client(served, gate):
    events = served.client.call("gate", {})
    assert [next(events)[0] for _ in range(2)] == ["queued", "started"]
    served.worker.queue.running.cancelled.set()  # as a cancel message or a closed connection would
    with pytest.raises(RunCancelled) as caught:
        next(events)
    assert caught.value.key == "run_cancelled"


def test_eight_clients_at_once_each_get_their_own_tokens(served, default_lm):
    prompts = questions()[:8]
    cfg = GenerationConfig(max_new_tokens=6, ignore_eos=True)
    expected = {p: generate(default_lm, p, cfg).output_ids for p in prompts}
    got, start = {}, threading.Barrier(len(prompts))

    def ask(prompt):
        start.wait()
        got[prompt] = served.client.generate(DEFAULT, prompt, cfg).output_ids

    threads = [threading.Thread(target=ask, args=(p,)) for p in prompts]
    for t in threads:
        t.start()
    for t in threads:
        t.join(WAIT_S)
    assert got == expected and len(set(expected.values())) > 1  # different prompts, different answers


# --- the key and the version -------------------------------------------------------------

def test_a_wrong_token_is_refused(served, caplog):
    wrong = EngineClient(served.address, b"not-the-key-0123456789")
    with caplog.at_level("INFO", logger="prefill_decode.worker"):
        with pytest.raises(WorkerAuthError) as caught:
            wrong.ping()
        wait_for(lambda: "wrong or missing token" in caplog.text, timeout_s=10.0)
    assert caught.value.key == "engine_refused"
    assert served.key.decode() not in caplog.text and "not-the-key" not in caplog.text


def test_a_client_without_a_token_gets_no_answer(served):
    conn = Client(served.address, family="AF_INET")  # no authkey: no challenge answered
    conn.send_bytes(json.dumps({"v": PROTOCOL_VERSION, "type": "call", "method": "ping", "args": {}}).encode())
    replies = []
    try:
        while True:
            replies.append(conn.recv_bytes(256))
    except (EOFError, OSError):
        pass
    conn.close()
    assert replies and replies[0].startswith(b"#CHALLENGE#")  # the worker's challenge, then nothing but failure
    assert not any(b'"done"' in r for r in replies)


def test_a_worker_that_does_not_hold_the_key_is_refused_by_the_client(served):
    impostor = Listener(("127.0.0.1", 0), family="AF_INET", authkey=b"the-impostors-own-key")
    threading.Thread(target=lambda: _accept_quietly(impostor), daemon=True).start()
    with pytest.raises(WorkerAuthError):
        EngineClient(impostor.address, served.key).ping()
    impostor.close()


def _accept_quietly(listener):
    try:
        listener.accept()
    except Exception:  # noqa: BLE001 - the client's refusal ends the impostor's handshake
        pass


def test_another_protocol_version_is_refused_by_the_worker(served):
    channel = Channel(connect(served.address, served.key), WORKER_TYPES)
    channel.conn.send_bytes(json.dumps({"v": PROTOCOL_VERSION + 1, "type": "call", "method": "ping"}).encode())
    reply = decode(channel.conn.recv_bytes(), WORKER_TYPES)
    channel.close()
    assert reply["type"] == "error" and reply["error"]["key"] == "protocol_version"
    assert reply["error"]["params"] == {"ours": PROTOCOL_VERSION, "theirs": str(PROTOCOL_VERSION + 1)}


def test_a_worker_of_another_version_is_refused_by_the_client(served):
    listener = Listener(("127.0.0.1", 0), family="AF_INET", authkey=served.key)

    def newer_worker():
        conn = listener.accept()
        conn.recv_bytes()
        conn.send_bytes(json.dumps({"v": PROTOCOL_VERSION + 1, "type": "done", "result": {}}).encode())
        conn.close()

    threading.Thread(target=newer_worker, daemon=True).start()
    with pytest.raises(ProtocolVersionError) as caught:
        EngineClient(listener.address, served.key).ping()
    listener.close()
    assert caught.value.params["theirs"] == str(PROTOCOL_VERSION + 1)

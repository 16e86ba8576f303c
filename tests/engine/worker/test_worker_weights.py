"""A model's weights format through the worker: a ModelRef names it, the worker's cache keeps one model per
format (int4's default group size resolved, so "int4" and "int4 g64" are one model), a trace of an int8 model
records int8 and gives the tokens the in-process engine gives, and a format the engine refuses comes back as
its own worded InputError, in zh and en."""

from __future__ import annotations

import json
import secrets

import pytest

from engine.contract.errors import InputError
from engine.contract.format_runs import LIVE_FORMATS, live_units
from engine.contract.results import GenerationConfig
from engine.contract.worker.client import EngineClient, Progress
from engine.contract.worker.errors import ProtocolError
from engine.contract.worker.protocol import ModelRef
from engine.runtime.generation import generate
from engine.runtime.model import load_model
from engine.runtime.worker.jobs import MEASURED
from engine.runtime.worker.models import WorkerSettings, cache_key
from engine.runtime.worker.server import start_in_thread
from lesson.text import t

PROMPT = "法国的首都是"
CFG = GenerationConfig(max_new_tokens=6, ignore_eos=True)


@pytest.fixture(scope="module")
def served():
    key = secrets.token_hex(16).encode()
    running = start_in_thread(key, WorkerSettings(presets=False, max_prompt_tokens=16), measured=MEASURED)
    yield running.worker, EngineClient(running.address, key)
    running.close()


def test_an_int8_trace_through_the_worker_records_int8_and_the_in_process_tokens(served):
    worker, client = served
    got = client.generate(ModelRef("default", "cpu", "auto", "int8"), PROMPT, CFG)
    expected = generate(load_model(device="cpu", weights="int8", warmup=False), PROMPT, CFG)
    assert got.model.weight_format == "int8" and got.model.weight_group_size == 0
    assert got.model.weight_kernel == expected.model.weight_kernel and got.model.weight_kernel != "aten.linear"
    assert got.model.weight_bytes == expected.model.weight_bytes
    assert got.output_ids == expected.output_ids
    dense = client.generate(ModelRef("default", "cpu", "auto"), PROMPT, CFG)
    # the embedding lookup stays fp32: less than a quarter is not what int8 holds here
    assert dense.model.weight_format == "fp32" and dense.model.weight_bytes > 2 * got.model.weight_bytes


def test_the_cache_keeps_one_model_per_format_with_int4s_group_resolved(served):
    worker, client = served
    plain = client.generate(ModelRef("default", "cpu", "auto", "int4"), PROMPT, CFG)
    named = client.generate(ModelRef("default", "cpu", "auto", "int4", 64), PROMPT, CFG)
    assert plain.model.weight_group_size == named.model.weight_group_size == 64
    assert worker.models.loaded(ModelRef("default", "cpu", "auto", "int4")) is \
        worker.models.loaded(ModelRef("default", "cpu", "auto", "int4", 64))
    assert worker.models.loaded(ModelRef("default", "cpu", "auto", "int4", 32)) is None
    small = client.generate(ModelRef("default", "cpu", "auto", "int4", 32), PROMPT, CFG)
    assert small.model.weight_group_size == 32 and small.model.weight_bytes > named.model.weight_bytes


@pytest.mark.parametrize(("ref", "key"), [
    (ModelRef("default", "cpu", "auto", "int3"), "weights_unknown"),
    (ModelRef("default", "cpu", "auto", "int4", 48), "weights_group_size"),
    (ModelRef("default", "cpu", "auto", "int8", 64), "weights_group_size"),
    (ModelRef("default", "cpu", "float32", "bf16"), "weights_dtype"),
])
def test_a_refused_format_comes_back_as_its_worded_input_error(served, ref, key):
    worker, client = served
    with pytest.raises(InputError) as caught:
        client.generate(ref, PROMPT, CFG)
    assert caught.value.key == key
    for lang in ("zh", "en"):
        words = t(lang, f"err_{key}", **caught.value.params)
        assert ref.weights in words and "{" not in words
    assert worker.models.loaded(ref) is None


def test_a_dense_ref_keys_and_travels_as_before_formats_existed():
    old = ModelRef("default", "cpu", "auto")
    assert old.to_wire() == {"choice": "default", "device": "cpu", "dtype": "auto"}
    assert ModelRef.from_wire(old.to_wire()) == old and cache_key(old) == old
    assert cache_key(ModelRef("default", "cpu", "auto", "int4")) == ModelRef("default", "cpu", "auto", "int4", 64)
    packed = ModelRef("preset:qwen2.5-0.5b", "cpu", "auto", "int4", 32)
    assert ModelRef.from_wire(json.loads(json.dumps(packed.to_wire()))) == packed
    for bad in ({**old.to_wire(), "weights": 8}, {**old.to_wire(), "weights": "int4", "group_size": "64"},
                {**old.to_wire(), "weights": "int4", "group_size": True}):
        with pytest.raises(ProtocolError):
            ModelRef.from_wire(bad)


def test_the_weight_formats_call_measures_every_live_format_with_a_progress_event_per_unit(served):
    worker, client = served
    events = []
    runs = client.weight_formats(ModelRef("default", "cpu", "auto"), steps=2, rounds=2, on_event=events.append)
    progress = [(e.done, e.total) for e in events if isinstance(e, Progress)]
    assert progress == [(n, len(live_units(rounds=2))) for n in range(1, len(live_units(rounds=2)) + 1)]
    rows = runs.embedded.rows
    assert [(r.weights, r.group_size) for r in rows] == list(LIVE_FORMATS) and runs.preset is None
    assert (runs.steps, runs.rounds) == (2, 2) and rows[0].mean_kl == 0.0 and rows[0].top1 == 1.0
    int8 = load_model(device="cpu", weights="int8", warmup=False)
    assert runs.embedded.row("int8").weight_bytes == int8.info.weight_bytes
    assert all(r.capitals_right is not None and r.answer_zh for r in rows)
    assert all(r.matmul_ms > 0 and r.floor_ms > 0 and len(r.kl_positions) > 100 for r in rows)
    fp32, int4 = rows[0], rows[-1]
    assert fp32.floor_ms / int4.floor_ms == pytest.approx(fp32.read_bytes / int4.read_bytes)  # one bandwidth
    assert worker.models.loaded(ModelRef("default", "cpu", "auto", "bf16")) is None  # the run's models are its own
    for steps, rounds in ((0, 1), (2, 99)):
        with pytest.raises(InputError) as caught:
            client.weight_formats(ModelRef("default", "cpu", "auto"), steps=steps, rounds=rounds)
        assert caught.value.key == "format_run_bounds"
        assert "{" not in t("zh", "err_format_run_bounds", **caught.value.params)

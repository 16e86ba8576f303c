"""Provenance: every run says where and when it was measured; it round-trips, older files without it
still load, and a file's provenance of the wrong shape is refused."""

from __future__ import annotations

import dataclasses
import json
import re
import socket

import pytest

from engine.contract.codec import convert
from engine.contract.serving.trace import ServingRun
from engine.contract.sweep import Sweep
from engine.contract.trace import PROVENANCE_TEXT_LIMIT, Provenance, RequestTrace, TraceFormatError
from engine.runtime.provenance import this_machine
from tests.factories import HAS_DEFAULT_MODEL, make_run, make_sweep, make_trace

SAMPLE = Provenance(cpu="AMD EPYC 7B13", num_cores=16, device="cuda", gpu="NVIDIA H200", torch_version="2.13.0",
                    transformers_version="5.24.0", recorded_at="2025-06-01T14:03:12Z")


def test_this_machine_names_the_processor_versions_and_time_but_no_host():
    made = this_machine("cpu")
    assert made.device == "cpu" and made.gpu == "" and made.num_cores >= 1
    assert made.torch_version.startswith("2.") and made.transformers_version
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", made.recorded_at)
    assert socket.gethostname() not in json.dumps(dataclasses.asdict(made))
    assert f"({made.num_cores} cores)" in made.machine


def test_machine_reads_gpu_then_cpu():
    assert SAMPLE.machine == "NVIDIA H200, AMD EPYC 7B13 (16 cores)"
    assert dataclasses.replace(SAMPLE, gpu="", cpu="").machine == "CPU (16 cores)"


@pytest.mark.parametrize("make, cls", [(make_trace, RequestTrace), (make_run, ServingRun), (make_sweep, Sweep)])
def test_provenance_round_trips_and_older_files_load_without_it(make, cls):
    run = dataclasses.replace(make(), provenance=SAMPLE)
    again = cls.from_json(run.to_json())
    assert again == run and again.provenance == SAMPLE
    older = json.loads(run.to_json())
    del older["provenance"]  # written before the field existed
    assert cls.from_json(json.dumps(older)).provenance is None


@pytest.mark.parametrize("change", [
    {"hostname": "lab-7"},  # a field the schema does not have
    {"cpu": 3},
    {"cpu": "x" * (PROVENANCE_TEXT_LIMIT + 1)},
    {"num_cores": "16"},
    {"num_cores": True},
    {"num_cores": -1},
])
def test_a_provenance_of_the_wrong_shape_is_refused(change):
    data = json.loads(dataclasses.replace(make_trace(), provenance=SAMPLE).to_json())
    data["provenance"].update(change)
    with pytest.raises(TraceFormatError):
        convert(data, RequestTrace)


def test_a_provenance_that_is_not_an_object_is_refused():
    data = json.loads(make_trace().to_json())
    for bad in ("cpu", ["cpu"], 3):
        data["provenance"] = bad
        with pytest.raises(TraceFormatError):
            convert(data, RequestTrace)
    data["provenance"] = {k: v for k, v in dataclasses.asdict(SAMPLE).items() if k != "gpu"}
    with pytest.raises(TraceFormatError):
        convert(data, RequestTrace)


needs_model = pytest.mark.skipif(not HAS_DEFAULT_MODEL, reason="needs assets/default_model")


@needs_model
def test_every_run_the_engine_measures_says_where_and_when(default_lm):
    from engine.contract.results import GenerationConfig
    from engine.contract.serving.config import ServeConfig
    from engine.contract.serving.workloads import WorkloadRequest
    from engine.runtime.generation import generate
    from engine.runtime.serving.engine import run_workload
    from engine.runtime.sweep import run_sweep

    trace = generate(default_lm, "法国的首都是", GenerationConfig(max_new_tokens=2))
    run = run_workload(default_lm, (WorkloadRequest(0.0, "法国的首都是", 2, True),), ServeConfig(policy="chunked"))
    sweep = run_sweep(default_lm, "prefill", (4,), repeats=1)
    for made in (trace.provenance, run.provenance, sweep.provenance):
        assert made is not None and made.device == "cpu" and made.torch_version and made.recorded_at
    assert RequestTrace.from_json(trace.to_json()).provenance == trace.provenance

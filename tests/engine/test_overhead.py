"""engine/runtime/overhead.py: the operator calls of one Decode step, and what one call costs."""

from __future__ import annotations

import pytest
import torch

from engine.runtime.overhead import DecodeOps, OpCounter, count_decode_ops, per_op_host_us


@pytest.fixture(scope="module")
def lm():
    from engine.runtime.model import load_model
    from engine.runtime.model import DEFAULT_MODEL_DIR

    if not (DEFAULT_MODEL_DIR / "config.json").is_file():
        pytest.skip("the embedded default model is missing")
    return load_model(None, device="cpu", dtype="float32")


def test_the_counter_tells_views_and_no_op_casts_from_kernels():
    with torch.inference_mode(), OpCounter() as c:  # the engine counts under inference mode too
        x = torch.ones(4, 4)
        x.view(16)  # a view: no kernel
        x.to(torch.float32)  # already float32: hands x back, no kernel
        x.t()
        y = x + 1  # a kernel
        y.add_(1)  # in place: returns its input, but it is a kernel
        x.to(torch.float64)  # a real cast: a kernel
        torch.split(x, 2)  # views in a tuple
    assert sum(c.calls.values()) == 8, c.calls
    assert c.kernels == {"ones": 1, "add": 1, "add_": 1, "to": 1}, c.kernels


def test_a_decode_step_is_tens_of_kernel_calls_per_layer(lm):
    ops = count_decode_ops(lm)
    assert isinstance(ops, DecodeOps) and ops.layers == lm.info.num_layers
    assert ops.calls > ops.kernels > 10 * ops.layers  # norms, projections, rotary, attention, MLP per layer
    assert 10 < ops.per_layer < 200
    names = dict(ops.top)
    assert "linear" in names or "mm" in names or "addmm" in names  # the projections are there
    assert sum(names.values()) <= ops.kernels
    assert ops == count_decode_ops(lm)  # a count, not a timing: the same every time
    assert lm.kernels.used == []  # the counting passes leave no kernel names for the next request


def test_one_call_costs_microseconds_and_more_calls_cost_more_time(lm):
    us = per_op_host_us("cpu", calls=500, repeats=3)
    assert 0.05 < us < 5000

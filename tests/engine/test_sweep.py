"""engine/contract/sweep.py and `python -m engine sweep`: measured points, JSON, the CLI's exit codes,
and the lesson's claim on the default model: Prefill grows with n, a Decode step hardly with c.

No test compares measured times (a shared 2-core CPU is noisy): the claim is checked as work here and
timed by bench/phase_growth.py.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from engine.cli import main
from engine.contract.cost import DEVICE_SPECS
from engine.contract.errors import InputError
from engine.contract.sweep import DEFAULT_POINTS, KINDS, Sweep, SweepPoint, check_points, format_sweep
from engine.runtime.sweep import run_sweep
from tests.factories import HAS_DEFAULT_MODEL, ROOT

needs_model = pytest.mark.skipif(not HAS_DEFAULT_MODEL, reason="needs assets/default_model")


def test_points_are_sorted_unique_and_cut_at_the_models_context():
    assert check_points("prefill", None, max_positions=4096) == (
        (8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096), (8192,))
    assert check_points("decode-context", (4096, 8, 8), max_positions=4096) == ((8,), (4096,))  # + its own position
    assert check_points("decode-batch", None, max_positions=16) == (DEFAULT_POINTS["decode-batch"], ())
    assert check_points("prefill", (8, 64, 512), cap=100) == ((8, 64), (512,))


@pytest.mark.parametrize("kind, points", [("prefill", ()), ("prefill", (0,)), ("decode-batch", (65,)),
                                          ("decode-context", (-3,)), ("prefill", (True,)), ("sideways", None)])
def test_bad_points_are_input_errors(kind, points):
    with pytest.raises(InputError):
        check_points(kind, points)


@needs_model
def test_a_sweep_measures_every_point_and_round_trips_json(default_lm):
    seen = []
    sweep = run_sweep(default_lm, "decode-batch", (1, 4), repeats=2, batch_context=16,
                      device_spec=DEVICE_SPECS["h100"], progress=lambda i, n, p: seen.append((i, n, p.value)))
    assert seen == [(1, 2, 1), (2, 2, 4)]
    assert [p.batch for p in sweep.points] == [1, 4] and all(p.context == 16 for p in sweep.points)
    for point in sweep.points:
        assert len(point.times_ms) == 2 and all(t > 0 for t in point.times_ms)
        assert min(point.times_ms) <= point.median_ms <= max(point.times_ms)
        assert 0 < point.floor_ms < point.median_ms  # an H100's floor for a 3.5M model: far below a CPU pass
        assert point.tokens_per_s == pytest.approx(point.batch / (point.median_ms / 1e3))
    assert sweep.points[1].flops == pytest.approx(4 * sweep.points[0].flops)
    assert sweep.device_spec == DEVICE_SPECS["h100"].name and sweep.batch_context == 16
    again = Sweep.from_json(sweep.to_json())
    assert again == sweep and isinstance(again.points[0], SweepPoint)
    assert "batch" in format_sweep(sweep).splitlines()[3]
    with pytest.raises(ValueError):
        Sweep.from_json(json.dumps({"schema": "something else"}))


@needs_model
def test_a_progress_callback_that_raises_stops_the_sweep(default_lm):
    class Stop(Exception):
        pass

    def stop(i, n, point):
        raise Stop

    with pytest.raises(Stop):
        run_sweep(default_lm, "prefill", (8, 16, 32), repeats=1, progress=stop)


@needs_model
def test_no_point_fits_is_a_clear_error(default_lm):
    with pytest.raises(InputError, match="no sweep point fits"):
        run_sweep(default_lm, "prefill", (8192,), repeats=1)
    with pytest.raises(InputError, match="repeats"):
        run_sweep(default_lm, "prefill", (8,), repeats=0)


@needs_model
def test_prefill_work_grows_with_n_while_a_decode_steps_work_hardly_grows_with_context(default_lm):
    """The lesson's claim as the work each measured pass does, which load cannot move: Prefill of 512
    positions computes 512 new positions (about 64x the FLOPs of 8), a Decode step at context 512 still one
    (a small factor over context 8). The times themselves are bench/phase_growth.py's (measured side by
    side: about 14x for Prefill, 1.1x for a Decode step on the 2-core CPU)."""
    spec = DEVICE_SPECS["h100"]  # the floors' roofs: fixed, so nothing here measures the machine
    prefill = run_sweep(default_lm, "prefill", (8, 512), repeats=1, device_spec=spec)
    decode = run_sweep(default_lm, "decode-context", (8, 512), repeats=1, device_spec=spec)
    p8, p512 = prefill.points
    d8, d512 = decode.points
    assert [(p.new_positions, p.context) for p in prefill.points] == [(8, 0), (512, 0)]
    assert [(p.new_positions, p.context) for p in decode.points] == [(1, 8), (1, 512)]
    assert all(len(p.times_ms) == 1 and p.median_ms > 0 for p in prefill.points + decode.points)
    assert p512.flops > 50 * p8.flops, (p8.flops, p512.flops)
    assert d512.flops < 2 * d8.flops and d512.bytes < 2 * d8.bytes, (d8, d512)
    assert p512.flops / p8.flops > 20 * (d512.flops / d8.flops)


def _exit_code(argv) -> int:
    try:
        return main(argv)
    except SystemExit as done:  # argparse's own errors (an unknown --kind)
        return done.code


@pytest.mark.parametrize("argv", [
    ["sweep", "--kind", "prefill", "--points", "8,x"], ["sweep", "--kind", "prefill", "--points", "0"],
    ["sweep", "--kind", "decode-batch", "--points", "1,128"], ["sweep", "--kind", "up"],
    ["sweep", "--kind", "prefill", "--points", ","], ["sweep", "--kind", "prefill", "--repeats", "x"],
])
def test_cli_bad_values_exit_2_with_one_line(argv, capsys):
    assert _exit_code(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error:"), err


@pytest.mark.slow
@needs_model
def test_cli_json_in_a_real_process():
    done = subprocess.run([sys.executable, "-m", "engine", "sweep", "--kind", "decode-context", "--points", "8,64",
                           "--repeats", "2", "--device-spec", "l4", "--json"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    sweep = Sweep.from_json(done.stdout)
    assert sweep.kind == "decode-context" and [p.context for p in sweep.points] == [8, 64]
    assert sweep.device_spec == DEVICE_SPECS["l4"].name and sweep.model_id == "default"
    assert "2/2" in done.stderr  # progress goes to stderr, the JSON alone to stdout


@pytest.mark.slow
def test_cli_bad_model_exits_2_in_a_real_process(tmp_path):
    done = subprocess.run([sys.executable, "-m", "engine", "sweep", "--kind", "prefill", "--model",
                           str(tmp_path / "missing"), "--points", "8"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "error:" in done.stderr
    assert KINDS == ("prefill", "decode-context", "decode-batch")

"""The trace contract: JSON round trips, metric formulas, and the one-way import rule."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from engine.trace import (
    SCHEMA_VERSION, RequestTrace, Step, TraceFormatError, compute_metrics, step_rows,
)
from tests.factories import make_long_trace, make_trace


def test_json_round_trip_is_exact():
    trace = make_trace()
    again = RequestTrace.from_json(trace.to_json())
    assert again == trace
    assert again.to_json() == trace.to_json()


def test_sliding_window_fields_round_trip_and_older_traces_still_load():
    from tests.factories import SLIDING_MODEL

    sliding = make_trace(model=SLIDING_MODEL)
    assert RequestTrace.from_json(sliding.to_json()).model == SLIDING_MODEL
    older = json.loads(make_trace().to_json())  # a schema-1 trace written before the window fields existed
    for name in ("sliding_window", "num_sliding_layers"):
        del older["model"][name]
    assert RequestTrace.from_dict(older) == make_trace()


@pytest.mark.parametrize("fields", [
    {"sliding_window": 8}, {"num_sliding_layers": 2}, {"sliding_window": 8, "num_sliding_layers": 5},
])
def test_model_info_rejects_half_a_sliding_window(fields):
    data = json.loads(make_trace().to_json())
    data["model"].update(fields)  # the synthetic model has 4 layers
    with pytest.raises(TraceFormatError):
        RequestTrace.from_dict(data)


def test_json_is_plain_and_readable():
    data = json.loads(make_trace().to_json())
    assert data["schema_version"] == SCHEMA_VERSION
    assert data["steps"][0]["phase"] == "prefill"
    assert data["derived"]["output_pieces"] == ["巴黎", "。"]
    assert "巴黎" in make_trace().to_json()  # not \\u-escaped: readable in an editor


def test_metrics_follow_vllm_definitions():
    # tokens appear at 10, 12, 15, 19 ms after the request started
    m = compute_metrics([10.0, 12.0, 15.0, 19.0])
    assert m.ttft_ms == 10.0 and m.e2el_ms == 19.0
    assert m.itl_ms == (2.0, 3.0, 4.0)
    assert m.tpot_ms == pytest.approx((19.0 - 10.0) / 3)
    assert m.mean_itl_ms == pytest.approx(3.0)


def test_one_token_has_no_tpot():
    m = compute_metrics([7.5])
    assert m.ttft_ms == m.e2el_ms == 7.5 and m.tpot_ms is None and m.itl_ms == () and m.mean_itl_ms is None


def test_metrics_recomputed_from_step_times():
    trace = make_trace(("a", "b", "c"), ("x", "y", "z", "w"))
    ends = [s.end_ms for s in trace.steps]
    m = trace.metrics
    assert m.ttft_ms == ends[0] and m.e2el_ms == ends[-1]
    assert m.itl_ms == pytest.approx([b - a for a, b in zip(ends, ends[1:])])
    assert m.tpot_ms == pytest.approx(sum(m.itl_ms) / len(m.itl_ms))


def test_derived_views():
    trace = make_trace()
    assert trace.prompt_len == 4 and trace.output_pieces == ("巴黎", "。")
    assert trace.prefill.num_positions == 4 and [s.num_positions for s in trace.decode_steps] == [1]
    assert list(trace.steps[1].positions) == [4]
    assert trace.kv_bytes == trace.model.kv_bytes_for(5)


@pytest.mark.parametrize("bad", ["[]", "{}", "not json", json.dumps({"schema_version": 999})])
def test_bad_json_is_refused_with_a_format_error(bad):
    with pytest.raises(TraceFormatError):
        RequestTrace.from_json(bad)


def test_step_rejects_unknown_phase_and_inconsistent_positions():
    step = make_trace().steps[0]
    fields = {f: getattr(step, f) for f in step.__dataclass_fields__}
    with pytest.raises(TraceFormatError):
        Step(**{**fields, "phase": "chunked"})
    with pytest.raises(TraceFormatError):
        Step(**{**fields, "context_after": step.context_after + 1})


def test_step_rows_one_per_pass():
    rows = step_rows(make_long_trace(100, 20))
    assert len(rows) == 20 and rows[0]["new_positions"] == 100 and rows[1]["positions"] == "100..100"


def test_engine_and_lesson_import_without_streamlit_and_trace_without_torch():
    code = (
        "import sys, engine.trace\n"
        "assert 'torch' not in sys.modules, 'engine.trace must not need torch'\n"
        "import engine, engine.generation, lesson\n"
        "import lesson.diagrams\n"
        "assert 'streamlit' not in sys.modules, [m for m in sys.modules if 'streamlit' in m]\n"
        "assert 'plotly' not in sys.modules, 'only lesson.charts (the app) may import plotly'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)

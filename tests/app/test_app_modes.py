"""The bottleneck lab's engine modes section and the lesson's engine caption, through
AppTest on the default model; then the section's pure helpers (lesson/engine_modes.py) on made-up runs."""

from __future__ import annotations

import dataclasses
import re

import pytest

from app_support.modes import last_compile_s
from engine.contract.config import ServerSettings, settings_from_env
from lesson.diagrams.modes import mode_summaries
from lesson.engine_modes import engine_caption, modes_explanations, modes_table, offered_modes
from lesson.text import t
from tests.app.apptest import APP, LAB, assert_healthy, needs_model, read_on, texts
from tests.factories import make_trace


@pytest.fixture
def app(monkeypatch):
    from streamlit.testing.v1 import AppTest

    return AppTest.from_file(APP, default_timeout=300).run()


def _table(at):
    """The modes table: the dataframe whose first column is the mode (and what ran, if it fell back)."""
    col = t("zh", "modes_col_mode")
    return next(df.value for df in at.table if col in df.value.columns)


def _pick(at, *modes):
    for mode in ("eager", "static", "compiled"):
        box = at.checkbox(key=f"modes_pick_{mode}")
        box.set_value(mode in modes)
    return at.run()


@needs_model
def test_the_lab_counts_the_calls_and_compares_eager_with_static(app):
    at = app.switch_page(LAB).run()
    assert_healthy(at)
    assert t("zh", "modes_title") in texts(at, "subheader")
    counted = re.search(r"\*\*(\d+)\*\* 次算子调用，其中 \*\*(\d+)\*\*", texts(at, "markdown"))
    calls, kernels = map(int, counted.groups())
    assert calls > kernels > 4 * 20  # the default model: 4 layers of norms, rotary, attention, MLP (about 40 each)
    assert "µs" in texts(at, "markdown") and t("zh", "modes_metric_estimate") in [m.label for m in at.metric]
    assert t("zh", "modes_not_run") in texts(at, "caption")
    graph = at.checkbox(key="modes_pick_graph")
    assert graph.disabled and graph.value is False  # a CPU: no CUDA graphs, and the page says why
    assert t("zh", "modes_graph_off", device="cpu") in texts(at, "caption")
    # the quick modes are ticked; compiled, whose first run compiles for tens of seconds, waits to be asked for
    assert [at.checkbox(key=f"modes_pick_{m}").value for m in ("eager", "static", "compiled")] == [True, True, False]
    assert t("zh", "modes_compile_time") in texts(at, "caption")  # its real cost, measured, before the click
    at = _pick(at, "eager", "static")
    at.button(key="modes_run").click().run()
    assert_healthy(at)
    table = _table(at)
    assert list(table[t("zh", "modes_col_mode")]) == ["eager", "static"]  # both ran as asked
    assert list(table[t("zh", "modes_col_same")]) == ["—", "✓"]  # greedy: static writes eager's tokens
    kernels = [pair.split(" / ") for pair in table[t("zh", "modes_col_kernels")]]
    assert {k for pair in kernels for k in pair} <= {"flash", "efficient", "math"}
    assert all(v.endswith("×") for v in table[t("zh", "modes_col_floor")])  # measured ÷ this machine's floor
    assert len(at.get("plotly_chart")) == 3  # the roofline, floor vs measured, and the modes
    names = [b.proto.label for b in at.get("download_button")]
    assert t("zh", "modes_download") in names
    assert t("zh", "modes_why_graph_cpu", device="cpu")[:12] in texts(at, "markdown")
    kept = at.session_state["modes_results"]
    assert len(kept) == 1 and set(next(iter(kept.values()))["runs"]) == {"eager", "static"}


@pytest.mark.slow
@needs_model
def test_compiled_runs_once_and_says_what_ran(app):
    """The first compiled run compiles (seconds on the CPU); the table says it really ran compiled."""
    at = app.switch_page(LAB).run()
    at = _pick(at, "eager", "compiled")
    at.button(key="modes_run").click().run(timeout=600)
    assert_healthy(at)
    table = _table(at)
    assert list(table[t("zh", "modes_col_mode")]) == ["eager", "compiled"]  # no "→": it really ran compiled
    assert list(table[t("zh", "modes_col_same")]) == ["—", "✓"]
    built = last_compile_s(at.session_state["modes_results"])
    at.run()  # the picks are drawn before the click's run: the next draw quotes its build
    assert built is not None and t("zh", "modes_compile_time_last", s=f"{built:.0f}") in texts(at, "caption")


@needs_model
def test_compile_off_hides_the_compiled_mode(monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("PREFILL_DECODE_COMPILE", "0")
    at = AppTest.from_file(APP, default_timeout=300).run()
    at.switch_page(LAB).run()
    assert_healthy(at)
    keys = {box.key for box in at.checkbox}
    assert "modes_pick_eager" in keys and "modes_pick_compiled" not in keys
    assert t("zh", "modes_compile_off") in texts(at, "caption")


@needs_model
def test_forged_mode_picks_are_repaired_not_raised(app):
    app.session_state["modes_pick_static"] = "yes"  # set before the lab's widgets exist, as a forged session would
    app.session_state["modes_pick_graph"] = True  # graph on a CPU: never checked
    at = app.switch_page(LAB).run()
    assert_healthy(at)
    assert at.checkbox(key="modes_pick_static").value is True
    assert at.checkbox(key="modes_pick_graph").value is False


@needs_model
def test_the_lesson_says_which_engine_and_attention_kernel_ran(app):
    read_on(app)  # the reader came to the sections below the first screen
    assert_healthy(app)
    captions = texts(app, "caption")
    assert "引擎：eager · 注意力内核：Prefill " in captions
    assert t("zh", "modes_kernel_na") not in captions.split("引擎：eager")[1].splitlines()[0]  # recorded, not n/a


# ---------------------------------------------------------------------------
# The pure helpers
# ---------------------------------------------------------------------------

def _run(mode: str, decode_ms: float, *, ran: str | None = None, note: str = "", kernel: str = "flash",
         other_last_token: bool = False, setup_ms: float = 0.0):
    trace = make_trace(output_pieces=("a", "b", "c", "d"), decode_ms=decode_ms)
    steps = [dataclasses.replace(s, attention_kernel=kernel) for s in trace.steps]
    if other_last_token:
        steps[-1] = dataclasses.replace(steps[-1], output_id=steps[-1].output_id + 1)
    return dataclasses.replace(trace, steps=tuple(steps), engine_mode=ran or mode, engine_note=note,
                               engine_setup_ms=setup_ms)


def test_settings_read_the_compile_switch():
    assert settings_from_env({}).compile_mode is True
    for off in ("0", "false", "off", " NO "):
        assert settings_from_env({"PREFILL_DECODE_COMPILE": off}).compile_mode is False


def test_graph_is_offered_with_a_reason_off_cuda_and_compiled_only_when_allowed():
    on = settings_from_env({})
    off = dataclasses.replace(on, compile_mode=False)
    assert [m for m, _ in offered_modes("cpu", on, "en")] == ["eager", "static", "graph", "compiled"]
    assert dict(offered_modes("cpu", on, "en"))["graph"] == t("en", "modes_graph_off", device="cpu")
    assert dict(offered_modes("cuda", on, "en"))["graph"] is None
    assert [m for m, _ in offered_modes("cpu", off, "zh")] == ["eager", "static", "graph"]
    assert isinstance(on, ServerSettings)


def test_the_table_says_what_ran_and_whether_the_tokens_match():
    runs = {"eager": _run("eager", 4.0), "static": _run("static", 4.4),
            "compiled": _run("compiled", 4.1, ran="static", note="torch.compile failed: no compiler",
                             other_last_token=True)}
    rows = mode_summaries(runs, [0.5, 1.0, 1.0, 1.0])
    table = modes_table(rows, "en")
    assert [r["Mode (→ what ran, if it fell back)"] for r in table] == ["eager", "static", "compiled → static"]
    assert [r["Same tokens"] for r in table] == ["—", "✓", "✗"]
    assert table[2]["Why it fell back"] == "torch.compile failed: no compiler"
    assert table[0]["Decode ÷ floor"] == "4.0×" and table[1]["Decode ÷ floor"] == "4.4×"
    assert table[0]["Attention (Prefill / Decode)"] == "flash / flash"
    no_fallback = modes_table(mode_summaries({"eager": runs["eager"], "static": runs["static"]}), "en")
    assert "Why it fell back" not in no_fallback[0]  # the column only when a mode fell back


def test_the_explanations_follow_the_numbers():
    runs = {"eager": _run("eager", 4.0), "static": _run("static", 4.4), "compiled": _run("compiled", 2.5)}
    rows = mode_summaries(runs, [0.5, 1.0, 1.0, 1.0])
    words = "\n".join(modes_explanations(rows, runs, "cpu", "en", estimate_ms=0.7))
    assert "static was slower than eager" in words
    assert "compiled removed 1.5 ms of a 4.0 ms eager step" in words
    assert "graph is missing" in words
    assert "2.5× the floor" in words
    faster_static = {"eager": _run("eager", 4.0), "static": _run("static", 3.0), "compiled": _run("compiled", 4.5)}
    rows = mode_summaries(faster_static, None)
    words = "\n".join(modes_explanations(rows, faster_static, "cuda", "en"))
    assert "static was slower" not in words and "not faster than eager" in words
    assert "graph is missing" not in words and "the floor" not in words


def test_the_engine_caption_names_the_mode_and_the_kernels():
    assert engine_caption(_run("compiled", 2.0), "en") == (
        "Engine: compiled · attention kernel: Prefill flash, Decode flash")
    old = _run("eager", 2.0, kernel="")  # a trace saved before kernels were recorded
    assert engine_caption(old, "zh") == "引擎：eager · 注意力内核：Prefill 未记录，Decode 未记录"


def test_a_runner_built_before_the_request_is_shown_apart_and_explained():
    runs = {"eager": _run("eager", 4.0), "compiled": _run("compiled", 2.5, setup_ms=5210.0)}
    rows = mode_summaries(runs, None)
    table = modes_table(rows, "en")
    assert [r["Runner built (once)"] for r in table] == ["—", "5.21 s"]
    words = "\n".join(modes_explanations(rows, runs, "cpu", "en"))
    assert "compiled spent 5.21 s building its runner before the request" in words and "TTFT" in words
    reused = {"eager": _run("eager", 4.0), "compiled": _run("compiled", 2.5, setup_ms=0.01)}
    assert "building its runner" not in "\n".join(modes_explanations(mode_summaries(reused, None), reused, "cpu", "en"))
    assert modes_table(mode_summaries(reused, None), "zh")[1]["准备执行器（一次）"] == "—"

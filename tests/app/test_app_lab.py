"""The multipage app (app.py + app_pages/) and the bottleneck lab page, through AppTest,
then the lab's pure helpers (lesson/lab.py) on made-up floors.

The lesson stays the default page (the browser tests open `streamlit run app.py` and find
it); the lab shares its run through st.session_state.
"""

from __future__ import annotations

import re

import pytest

from engine.contract.config import Limits, ServerSettings, settings_from_env
from engine.contract.cost import DEVICE_SPECS, ModelShape, trace_floors
from lesson.lab import (
    LAB_DTYPES, lab_agreement_text, lab_cost_table, lab_dtype_rows, lab_prediction_text, lab_sweep_caption,
)
from lesson.text import t
from tests.app.apptest import APP, LAB, LESSON, assert_healthy, needs_model, read_on, texts
from tests.factories import make_trace

CONFIG = {"model_type": "llama", "hidden_size": 256, "intermediate_size": 688, "num_hidden_layers": 4,
          "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 32, "vocab_size": 2989,
          "tie_word_embeddings": True, "max_position_embeddings": 4096}


@pytest.fixture
def app(monkeypatch):
    from streamlit.testing.v1 import AppTest

    from app_support import resources

    monkeypatch.setenv("PREFILL_DECODE_SWEEP_MAX_POSITIONS", "64")  # small sweeps: a test measures them
    monkeypatch.setenv("PREFILL_DECODE_SWEEP_MAX_BATCH", "4")
    for cached in (resources.server_settings, resources.sweep_store):
        cached.clear()
    yield AppTest.from_file(APP, default_timeout=300).run()
    for cached in (resources.server_settings, resources.sweep_store):
        cached.clear()


# ---------------------------------------------------------------------------
# Navigation
# ---------------------------------------------------------------------------

@needs_model
def test_the_lesson_is_the_default_page_and_links_to_the_lab(app):
    read_on(app)  # the reader came to the sections below the first screen
    assert_healthy(app)
    assert app.button(key="run") is not None  # the lesson's run panel
    assert app.session_state["trace_json"] is not None
    links = [link for link in app.get("page_link") if link.proto.page == "bottleneck_lab"]
    assert links and links[0].proto.label == t("zh", "lab_link")
    assert t("zh", "toc") in texts(app, "markdown")  # the lesson's contents, in the sidebar


@needs_model
def test_the_lab_shares_the_run_and_the_lessons_settings_survive_a_visit(app):
    app.text_area(key="prompt").set_value("巴黎是").run()
    app.slider(key="output_len").set_value(5).run()
    app.button(key="run").click().run()
    run = app.session_state["trace_json"]
    app.switch_page(LAB).run()
    assert_healthy(app)
    assert t("zh", "lab_title") in texts(app, "header")
    assert app.session_state["trace_json"] == run  # the same run, not a new one
    assert t("zh", "toc") not in texts(app, "markdown")  # the lesson's contents belong to the lesson
    app.switch_page(LESSON).run()
    assert_healthy(app)
    assert app.text_area(key="prompt").value == "巴黎是" and app.slider(key="output_len").value == 5
    assert app.session_state["trace_json"] == run


# ---------------------------------------------------------------------------
# The lab page
# ---------------------------------------------------------------------------

def literal(template: str) -> str:
    """A sentence template's longest stretch without a {field}: what any filled-in copy of it contains."""
    return max(re.split(r"\{[a-z_]+\}", template), key=len)


@needs_model
def test_the_lab_says_which_bound_the_cost_model_predicts_and_why_the_cpu_disagrees(app):
    app.switch_page(LAB).run()
    assert_healthy(app)
    words = texts(app, "markdown")
    assert t("zh", "lab_bound_memory") in words and "FLOP/B" in words  # a tiny Prefill and Decode: memory
    note = texts(app, "info")
    # CPU + tiny model: the per-pass cost the model leaves out, said when a pass reached under
    # OVERHEAD_EFFICIENCY of its floor; on a busy machine the roofs measure low and a pass can "agree"
    # instead: the sentence follows the measured numbers, whichever they were (lesson.lab.lab_agreement_text)
    said = {key for key in ("lab_agrees", "lab_overhead", "lab_under_floor")
            if literal(t("zh", key)) in note}
    assert said and (("lab_overhead" in said) == (t("zh", "lab_overhead_why")[:20] in note)), note
    table = app.table[0].value
    assert list(table[t("zh", "lab_col_pass")])[0] == t("zh", "phase_prefill") and len(table) == 2
    assert len(app.get("plotly_chart")) == 2  # roofline and floor vs measured
    svg = app.get("download_button")
    names = [b.proto.label for b in svg]
    assert t("zh", "lab_download_roofline") in names and t("zh", "lab_download_step_floors") in names


@needs_model
def test_the_dtype_knob_moves_the_floor_and_turns_the_check_into_a_preview(app):
    app.switch_page(LAB).run()
    col = t("zh", "lab_col_floor")
    fp32 = list(app.table[0].value[col])
    app.selectbox(key="lab_weight_dtype").set_value("int4").run()
    assert_healthy(app)
    int4 = list(app.table[0].value[col])
    assert int4 != fp32
    assert t("zh", "lab_other_dtype", weights="int4", kv="fp32") in texts(app, "info")
    app.selectbox(key="lab_device_spec").set_value("h200").run()
    assert_healthy(app)
    assert t("zh", "lab_other_device", device="").split("{")[0][:6] in texts(app, "info")
    assert "H200" in texts(app, "markdown")


@needs_model
def test_a_datasheet_device_or_a_preview_draws_the_prediction_alone(app):
    import json

    app.switch_page(LAB).run()
    measured = t("zh", "lab_col_efficiency")
    assert measured in app.table[0].value.columns  # this machine, the run's dtypes: measured vs floor
    roofline = json.loads(app.get("plotly_chart")[0].proto.spec)
    assert len(roofline["data"][1]["x"]) == 1  # this run's Prefill, under this machine's roofs
    for key, value in (("lab_device_spec", "h100"), ("lab_device_spec", "this"), ("lab_weight_dtype", "int4")):
        app.selectbox(key=key).set_value(value).run()
        assert_healthy(app)
        if (app.selectbox(key="lab_device_spec").value, app.selectbox(key="lab_weight_dtype").value) == ("this",
                                                                                                        "fp32"):
            continue
        table = app.table[0].value
        assert measured not in table.columns and t("zh", "lab_col_measured_here") in table.columns
        roofline, bars = (json.loads(c.proto.spec) for c in app.get("plotly_chart")[:2])
        assert not roofline["data"][1].get("x") and not roofline["data"][2].get("x")  # no measured point
        assert not bars["data"][0].get("y")  # no measured bar beside the predicted floors
        assert t("zh", "lab_prediction_only").split("{")[0] in texts(app, "caption")


@needs_model
def test_forged_knob_values_are_repaired_not_raised(app):
    app.session_state["lab_weight_dtype"] = "fp8"  # set before the lab's widgets exist, as a forged session would
    app.session_state["lab_device_spec"] = "../etc"
    app.session_state["lab_sweep_kind"] = "sideways"
    app.switch_page(LAB).run()
    assert_healthy(app)
    assert app.selectbox(key="lab_weight_dtype").value in LAB_DTYPES
    assert app.selectbox(key="lab_device_spec").value == "this" and app.radio(key="lab_sweep_kind").value == "prefill"


@needs_model
def test_a_sweep_runs_once_with_the_servers_caps_and_is_kept(app):
    app.switch_page(LAB).run()
    assert app.select_slider(key="lab_sweep_up_to").options == ["8", "16", "32", "64"]  # capped at 64 positions
    app.select_slider(key="lab_sweep_up_to").set_value(32).run()
    assert t("zh", "lab_sweep_not_run") in texts(app, "caption")
    app.button(key="lab_sweep_run").click().run()
    assert_healthy(app)
    assert len(app.get("plotly_chart")) == 3
    caption = texts(app, "caption")
    variants = ("lab_sweep_caption_prefill", "lab_sweep_caption_prefill_flat", "lab_sweep_caption_prefill_noise")
    assert any(t("zh", key).split("{")[0] in caption for key in variants) and "32" in caption
    assert t("zh", "lab_sweep_kept").split("{")[0] in caption  # a kept sweep says when it was measured
    app.run()
    assert app.button(key="lab_sweep_run").disabled  # kept: the next visitor does not measure again
    assert len(app.get("plotly_chart")) == 3
    from app_support import resources
    from engine.contract.sweep import Sweep

    (sweep_json,) = resources.sweep_store().results.values()
    kept = Sweep.from_json(sweep_json)
    assert [p.value for p in kept.points] == [8, 16, 32] and kept.repeats >= 5
    assert all(len(p.times_ms) == kept.repeats for p in kept.points)
    app.button(key="lab_sweep_again").click().run()  # measure again: a new sweep replaces the kept one
    assert_healthy(app)
    (again,) = resources.sweep_store().results.values()
    assert again != sweep_json and [p.value for p in Sweep.from_json(again).points] == [8, 16, 32]
    app.radio(key="lab_sweep_kind").set_value("decode-batch").run()
    assert app.select_slider(key="lab_sweep_up_to").options == ["1", "2", "4"]  # capped at batch 4
    assert not app.button(key="lab_sweep_run").disabled


@needs_model
def test_cache_compare_and_attention_moved_to_the_lab(app):
    assert not [b for b in app.button if b.key == "cache_compare"]
    app.switch_page(LAB).run()
    assert app.button(key="cache_compare") is not None


@needs_model
def test_a_model_picked_after_the_run_is_not_costed_with_the_runs_numbers(served_settings):
    """On the session's models folder (tests/app/conftest.py), whose copy_of_default is the default
    model's twin: its engine worker is the one the app tests already share."""
    from streamlit.testing.v1 import AppTest

    twin = "copy_of_default"
    at = AppTest.from_file(APP, default_timeout=300).run()
    at.selectbox(key="model_choice").set_value(twin).run()
    at.switch_page(LAB).run()  # the page's own first view follows the picked model
    assert_healthy(at)
    assert at.session_state["trace_args"].model_choice == twin and len(at.get("plotly_chart")) == 2
    at.switch_page(LESSON).run()
    at.button(key="run").click().run()  # a run the visitor asked for stays, whatever is picked next
    at.selectbox(key="model_choice").set_value("default").run()
    at.switch_page(LAB).run()
    assert_healthy(at)
    shown = twin.replace("_", "\\_")  # escaped for Markdown
    assert t("zh", "lab_other_model", run_model=shown, model="default") in texts(at, "info")
    assert len(at.get("plotly_chart")) == 0  # no roofline of one model's run on another's shape


@needs_model
def test_presets_that_fit_are_offered_labelled_and_can_be_hidden(request, fresh_settings):
    from streamlit.testing.v1 import AppTest

    request.getfixturevalue("served_settings")  # presets on: the session's local worker
    for offered in (True, False):
        if not offered:  # PREFILL_DECODE_PRESETS is the worker's too: the session's worker with presets off
            request.getfixturevalue("use_thread_engine")
            fresh_settings()
        at = AppTest.from_file(APP, default_timeout=300).run()
        options = at.selectbox(key="model_choice").options
        presets = [o for o in options if o.startswith("preset:")]
        assert bool(presets) == offered, options
        if offered:
            assert all(t("zh", "preset_choice", name="")[-4:] in o for o in presets)
        else:  # a forged choice of a hidden preset goes back to the default, with a message
            forged = AppTest.from_file(APP, default_timeout=300)
            forged.session_state["model_choice"] = "preset:qwen2.5-0.5b"
            forged.run()
            assert forged.session_state["model_choice"] == "default"
            assert "qwen2" in texts(forged, "warning")  # escaped for Markdown: preset\\:qwen2\\.5…


# ---------------------------------------------------------------------------
# Pure helpers
# ---------------------------------------------------------------------------

def _floors(spec="h200", **kwargs):
    trace = make_trace(("a",) * 600, ("x",) * 5, prefill_ms_per_position=0.05, decode_ms=3.0)
    return trace_floors(trace, ModelShape.from_config(CONFIG, name="default"), DEVICE_SPECS[spec], **kwargs)


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_prediction_names_both_bounds_with_their_intensities(lang):
    floors = _floors("h200", weight_dtype="bf16")
    words = lab_prediction_text(floors, lang)
    prefill, decode = floors.steps[0], floors.steps[2]
    assert f"{prefill.intensity:,.1f}" in words and f"{decode.intensity:,.2f}" in words
    assert f"{floors.ridge_intensity:,.1f}" in words and "{" not in words
    assert t(lang, f"lab_bound_{prefill.bound}") in words and t(lang, "lab_bound_memory") in words
    rows = lab_cost_table(floors, lang)
    assert [r[t(lang, "lab_col_bound")] for r in rows] == [t(lang, f"lab_bound_{s.bound}") for s in
                                                             (prefill, decode)]


def test_the_agreement_note_tells_overhead_from_agreement():
    slow = _floors("l4")  # an L4's floor for a CPU-timed pass: the CPU is far slower
    words = lab_agreement_text(slow, "en", measured_here=True)
    assert t("en", "lab_overhead_why") in words
    fast = trace_floors(make_trace(("a",) * 600, ("x",) * 3, prefill_ms_per_position=1e-6, decode_ms=0.1),
                        ModelShape.from_config(CONFIG), DEVICE_SPECS["l4"])
    assert 0.3 <= fast.steps[1].efficiency <= 1
    assert "agrees" in lab_agreement_text(fast, "en", measured_here=True)
    too_fast = trace_floors(make_trace(("a",) * 600, ("x",) * 3, prefill_ms_per_position=1e-6, decode_ms=1e-4),
                            ModelShape.from_config(CONFIG), DEVICE_SPECS["l4"])  # 100 ns: under its floor
    assert "under its floor" in lab_agreement_text(too_fast, "en", measured_here=True)
    assert lab_agreement_text(slow, "en", measured_here=False).startswith("These floors are for")
    assert "preview" in lab_agreement_text(slow, "en", measured_here=True, as_run=False)


def test_the_dtype_preview_halves_the_memory_bound_decode_floor():
    by_dtype = {d: _floors("h200", weight_dtype=d, kv_dtype="bf16") for d in LAB_DTYPES}
    rows = lab_dtype_rows(by_dtype, "en")
    assert [r["Weights"] for r in rows] == list(LAB_DTYPES)
    floors = [by_dtype[d].steps[2].floor_ms for d in LAB_DTYPES]
    assert floors == sorted(floors, reverse=True) and floors[1] < 0.6 * floors[0]


def test_sweep_caption_quotes_first_and_last_points():
    from engine.contract.sweep import Sweep, SweepPoint

    points = tuple(SweepPoint(value=v, new_positions=1, context=128, batch=v, times_ms=(2.0 * v ** 0.2,),
                              median_ms=2.0 * v ** 0.2, floor_ms=0.5, compute_ms=0.1, memory_ms=0.5, bound="memory",
                              flops=1.0, bytes=1.0) for v in (1, 64))
    sweep = Sweep("decode-batch", "default", False, "cpu", "float32", "spec", "fp32", "fp32", 3, 128, points, (128,))
    words = lab_sweep_caption(sweep, "en")
    assert "×" in words and "64" in words and "128" in words and "{" not in words


def test_lab_settings_are_checked():
    s = settings_from_env({"PREFILL_DECODE_PRESETS": "0", "PREFILL_DECODE_SWEEP_MAX_POSITIONS": "99999",
                           "PREFILL_DECODE_SWEEP_MAX_BATCH": "x"})
    assert not s.presets and s.sweep_max_positions == 8192 and s.sweep_max_batch == 64
    assert settings_from_env({}).presets and settings_from_env({}).sweep_max_positions == 1024


def test_sweep_points_follow_the_model_and_the_caps():
    from app_support.lab import sweep_points

    settings = ServerSettings(Limits(), None, "auto", "auto", sweep_max_positions=512, sweep_max_batch=16)
    assert sweep_points("prefill", 4096, settings)[-1] == 512
    assert sweep_points("decode-context", 512, settings)[-1] == 256  # + the step's own position
    assert sweep_points("decode-batch", 4096, settings) == (1, 2, 4, 8, 16)


def test_a_measure_again_is_taken_by_one_measurement():
    import threading

    from app_support.resources import taken

    asked = threading.Event()
    assert not taken(asked)
    asked.set()
    assert taken(asked) and not taken(asked)  # the next draw keeps the new roofs


@needs_model
def test_measure_again_benchmarks_this_machine_anew(app):
    from app_support import resources

    app.switch_page(LAB).run()
    before = resources.device_spec("this", "cpu")  # measured once in the engine worker, kept by the page
    assert resources.device_spec("this", "cpu") == before
    app.button(key="lab_measure_again").click().run()
    assert_healthy(app)
    after = resources.device_spec("this", "cpu")
    assert after != before and after.source == "measured"  # a new benchmark in the worker, not the kept one
    assert t("zh", "lab_this_roofs").split("{")[0] in texts(app, "caption")

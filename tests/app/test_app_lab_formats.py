"""The bottleneck lab's weight-dtype knob runs the real engine (AppTest; the worker is real): the shown answer's
prompt run with int8 and int4 weights, each run kept for every visitor and set against its floor on this
machine's roofs, in both languages; a datasheet device leaves the engine out (the cost model's what-if stays)."""

from __future__ import annotations

from app_support.lab import engine_format_store
from lesson.text import t
from tests.app.apptest import LAB, assert_healthy, needs_model, shown_trace, texts


@needs_model
def test_the_dtype_knob_runs_the_engine_in_that_format_and_sets_it_against_its_floor(app):
    engine_format_store().runs.clear()
    app.switch_page(LAB).run()
    assert t("zh", "lab_formats_none") in texts(app, "caption")
    for weights in ("int8", "int4"):
        app.selectbox(key="lab_weight_dtype").set_value(weights).run()
        app.button(key="lab_formats_run").click().run()
        assert_healthy(app)
    kept = {key[-1]: trace for key, trace in engine_format_store().runs.items()}
    assert set(kept) == {"int8", "int4"}
    assert kept["int8"].model.weight_format == "int8" and kept["int4"].model.weight_group_size == 64
    assert kept["int4"].model.weight_bytes < kept["int8"].model.weight_bytes
    (table,) = [tb.value for tb in app.table if t("zh", "lab_col_held") in tb.value.columns]
    assert list(table[t("zh", "lab_col_weights")]) == ["int8", "int4 g64"]
    assert t("zh", "lab_formats_roofline_caption") in texts(app, "caption")
    app.radio(key="lang").set_value("en").run()  # the first view's answer is now the English one: its own runs
    assert_healthy(app)
    assert t("en", "lab_formats_title") in texts(app, "markdown")
    shown = shown_trace(app)["prompt"]
    if shown != next(iter(kept.values())).prompt:
        assert t("en", "lab_formats_none") in texts(app, "caption")
        app.button(key="lab_formats_run").click().run()  # the knob still says int4
        assert_healthy(app)
    (table,) = [tb.value for tb in app.table if t("en", "lab_col_held") in tb.value.columns]
    assert "int4 g64" in list(table[t("en", "lab_col_weights")])
    assert t("en", "lab_dtype_preview") in [e.label for e in app.expander]
    app.selectbox(key="lab_device_spec").set_value("h200").run()
    assert_healthy(app)
    assert t("en", "lab_formats_other_machine") in texts(app, "caption")

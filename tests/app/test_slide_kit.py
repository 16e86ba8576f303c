"""The slide kit's buttons: the lesson page offers every figure of its run in one zip, and what the button
builds when clicked (app_support/slide_kit.py) holds every figure of the run or of the serving runs."""

from __future__ import annotations

import io
import zipfile

from app_support import slide_kit
from lesson.slides import LESSON_FIGURES, run_set_tag
from lesson.text import t
from tests.app.apptest import assert_healthy, needs_model
from tests.factories import make_run, make_trace


def names(data: bytes) -> list[str]:
    return zipfile.ZipFile(io.BytesIO(data)).namelist()


def test_the_lesson_zip_holds_every_figure_of_the_run_named_by_its_number():
    trace = make_trace(prompt="<script>x</script>")
    listed = names(slide_kit.lesson_zip(trace, "en", "run4", True, (6, 3), "20250601-120000"))
    svgs = sorted(n for n in listed if n.endswith(".svg"))
    assert svgs == sorted(f"run4_{figure}_en.svg" for figure, *_ in LESSON_FIGURES)
    assert "slides.html" in listed
    if slide_kit.png_problem() is None:  # this server draws PNGs: one per figure
        assert len([n for n in listed if n.endswith(".png")]) == len(svgs)


def test_the_serving_zip_names_carry_the_scenario_and_run_set():
    jsons = tuple(make_run(policy=p, scenario="burst-16").to_json(indent=None) for p in ("prefill-first", "chunked"))
    listed = names(slide_kit.serving_zip(jsons, "zh", False))
    tag = run_set_tag(jsons)
    assert f"serving_burst-16_{tag}_metrics_zh.svg" in listed
    assert f"serving_burst-16_{tag}_prefill-first_gantt_zh.svg" in listed


@needs_model
def test_the_lesson_page_offers_the_slide_kit(app):
    assert_healthy(app)
    buttons = [b for b in app.get("download_button") if b.label == t("zh", "kit_download")]
    assert len(buttons) == 1


def test_the_weight_formats_zip_holds_each_figure_and_the_slides():
    import io
    import zipfile

    from app_support.slide_kit import formats_zip
    from tests.lesson.test_quantization import make_runs

    names = zipfile.ZipFile(io.BytesIO(formats_zip(make_runs(), "en", False))).namelist()
    for figure in ("format_kl", "format_time"):
        assert any(n.endswith(f"weight-formats_{figure}_en.svg") for n in names)
    assert any(n.endswith("slides.html") for n in names)

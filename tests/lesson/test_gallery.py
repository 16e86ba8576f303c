"""The shipped gallery (assets/gallery/<machine>/index.json): every run loads through the engine's own
readers and is drawn by every figure its index names, in Chinese and in English."""

from __future__ import annotations

import pytest

from engine.contract.recorded import FIGURES, KINDS, gallery_indexes, load_entry, read_index
from lesson.charts.lab import sweep_figure
from lesson.diagrams import DIAGRAMS, render_cache_compare, render_sweep
from lesson.diagrams.batch_composition import render_batch_composition
from lesson.diagrams.kv_blocks import render_kv_blocks
from lesson.diagrams.serving_gantt import render_serving_gantt
from lesson.diagrams.serving_metrics import render_serving_metrics
from lesson.recorded import entry_label
from tests.factories import ROOT
from tests.svg import SVG, all_text, parse

GALLERY = ROOT / "assets" / "gallery"
MAX_BYTES = 5_000_000
ENTRIES = [entry for index in gallery_indexes(GALLERY) for entry in read_index(index)]
SERVING = {"gantt": render_serving_gantt, "batch": render_batch_composition, "kv": render_kv_blocks,
           "metrics": lambda run, lang: render_serving_metrics([run], lang=lang)}


def drawn(kind: str, figure: str, run, lang: str) -> str:
    """Figure `figure` of a recorded run of `kind`, by the renderer the pages draw it with."""
    if kind == "trace":
        return DIAGRAMS[figure](run, lang=lang)
    if kind == "serving_run":
        return SERVING[figure](run, lang=lang)
    if kind == "sweep" and figure == "sweep":
        return render_sweep(run, lang=lang)
    assert (kind, figure) == ("cache_comparison", "cache_compare")
    return render_cache_compare(run.comparison, lang=lang, model_id=run.model_id)


def test_the_cpu_gallery_is_shipped_with_every_kind_and_stays_small():
    cpu = [e for e in ENTRIES if e.folder.name == "cpu"]
    assert {e.kind for e in cpu} == set(KINDS)
    assert {e.name for e in cpu} >= {"lesson-zh-4", "lesson-zh-1024", "lesson-en-4", "lesson-en-1024"}
    size = sum(p.stat().st_size for p in (GALLERY / "cpu").iterdir())
    assert size < 700_000, f"the CPU gallery is {size:,} bytes"


# Beside a folder's runs: the weight formats measured side by side on that machine (python -m bench.quantization
# --record), a table of numbers rather than a run any page opens, read by the lesson's last section.
COMPANIONS = {"weight-formats.json"}


def test_every_file_of_a_gallery_folder_is_in_its_index():
    for index in gallery_indexes(GALLERY):
        listed = {e.file for e in read_index(index)} | {"index.json"} | COMPANIONS
        assert {p.name for p in index.parent.iterdir()} == listed


def test_a_trace_is_drawn_by_every_lesson_figure():
    """The figures a gallery index names for a trace (engine.contract.recorded.FIGURES, which `python -m
    engine record` writes into the indexes) are exactly the lesson's (lesson.diagrams.DIAGRAMS)."""
    assert set(FIGURES["trace"]) == set(DIAGRAMS)


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: f"{e.folder.name}/{e.name}")
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_every_gallery_run_loads_and_every_figure_draws(entry, lang):
    recorded = load_entry(entry, MAX_BYTES)
    assert recorded.provenance is not None and recorded.provenance == entry.provenance
    assert entry.figures == FIGURES[entry.kind]
    for figure in entry.figures:
        root = parse(drawn(entry.kind, figure, recorded.run, lang))
        assert root.tag == f"{SVG}svg" and all_text(root).strip(), figure
    if entry.kind == "sweep":  # the lab's interactive figure of the same sweep
        assert sweep_figure(recorded.run, lang).data
    assert entry_label(entry, lang) and "{" not in entry_label(entry, lang)



def test_the_gallery_folder_is_where_the_app_looks():
    from app_support.gallery import GALLERY_ROOT  # the app's module: streamlit, imported by this test only

    assert GALLERY_ROOT == GALLERY

"""The bottleneck lab's roof rule (lesson/lab.py, the roofline figures): a measured pass is drawn only
under the roofs of the machine that measured it, in the dtypes it ran; anywhere else the figures draw
the cost model's prediction alone, and no floor ÷ measured ratio is formed."""

from __future__ import annotations

import dataclasses
import re
import xml.etree.ElementTree as ET

import pytest

from engine.contract.cost import DEVICE_SPECS, trace_floors
from engine.contract.trace import Provenance
from lesson.charts.lab import roofline_figure, step_floors_figure
from lesson.diagrams import render_roofline, render_step_floors
from lesson.lab import lab_agreement_text, lab_cost_table, lab_prediction_only, lab_roofs_are_the_runs
from lesson.text import TEXTS, device_label, t
from tests.factories import default_shape, make_trace

CPU = Provenance(cpu="AMD EPYC", num_cores=2, device="cpu", gpu="", torch_version="2", transformers_version="5",
                 recorded_at="2025-06-01T14:03:12Z")
H200 = dataclasses.replace(CPU, device="cuda", gpu="NVIDIA H200")


def run(provenance=None):
    trace = make_trace(("a",) * 64, ("x",) * 6, prefill_ms_per_position=0.2, decode_ms=3.0)
    return dataclasses.replace(trace, provenance=provenance)


def _classes(svg: str, cls: str) -> list[ET.Element]:
    return [e for e in ET.fromstring(svg).iter() if cls in (e.get("class") or "").split() and e.get("data-step")]


@pytest.mark.parametrize(("provenance", "key", "as_run", "expected"), [
    (CPU, "this", True, True),  # this machine's roofs, the run's dtypes: compare
    (CPU, "this", False, False),  # a preview in other dtypes
    (CPU, "h100", True, False),  # a CPU run never sits under a datasheet's roofs
    (None, "h200", True, False),  # an older run that does not say where it ran
    (H200, "h200", True, True),  # run on an H200: H200's datasheet is its own machine's roofs
    (H200, "h100", True, False),
    (H200, "h200", False, False),
])
def test_the_run_is_compared_only_with_the_roofs_of_the_machine_that_measured_it(provenance, key, as_run, expected):
    assert lab_roofs_are_the_runs(run(provenance), key, as_run) is expected


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_a_datasheet_device_gets_the_prediction_alone_in_the_svg_figures(lang):
    floors = lab_prediction_only(trace_floors(run(CPU), default_shape(), DEVICE_SPECS["h100"]))
    roofline = render_roofline(floors, lang=lang)
    assert not _classes(roofline, "measured") and not _classes(roofline, "gap")  # nothing measured under H100
    assert len(_classes(roofline, "floor")) == len(floors.steps)  # every pass's prediction, on the roof
    note = TEXTS[lang]["rf_prediction_note"].format(device=device_label(floors.device_name, lang))
    assert "".join(note.split()) in "".join("".join(ET.fromstring(roofline).itertext()).split())  # wrapped lines
    bars = render_step_floors(floors, lang=lang)
    assert not _classes(bars, "measured-bar") and len(_classes(bars, "floor-mark")) == len(floors.steps)
    assert TEXTS[lang]["fl_title_prediction"] in bars
    for svg in (roofline, bars):
        assert "nan" not in svg and "%" not in "".join(ET.fromstring(svg).itertext())  # no ratio to a foreign time


def test_a_datasheet_device_gets_the_prediction_alone_in_the_plotly_figures():
    floors = lab_prediction_only(trace_floors(run(CPU), default_shape(), DEVICE_SPECS["h100"]))
    fig = roofline_figure(floors, "en")
    assert len(fig.data[1].x) == len(fig.data[2].x) == 0 and not fig.data[1].showlegend
    assert len(fig.data[3].x) == 1 and len(fig.data[4].x) == len(floors.steps) - 1  # the floors, on the roofs
    assert t("en", "rf_prediction_tag") in fig.layout.title.text
    assert not any("nan" in str(w) for trace in fig.data for w in (trace.hovertext or ()))
    bars = step_floors_figure(floors, "zh")
    assert len(bars.data[0].y) == 0 and list(bars.data[1].y) == [s.floor_ms for s in floors.steps]
    compared = roofline_figure(trace_floors(run(CPU), default_shape(), DEVICE_SPECS["h100"]), "en")
    assert len(compared.data[1].x) == 1 and t("en", "rf_prediction_tag") not in compared.layout.title.text


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_table_keeps_this_machines_time_as_its_own_and_forms_no_ratio(lang):
    floors = trace_floors(run(CPU), default_shape(), DEVICE_SPECS["h100"])
    rows = lab_cost_table(floors, lang, compared=False)
    assert all(t(lang, "lab_col_efficiency") not in row for row in rows)
    assert all(row[t(lang, "lab_col_measured_here")] for row in rows)  # the time stays, named as this machine's
    assert not any("%" in str(v) for row in rows for v in row.values())
    assert all(t(lang, "lab_col_efficiency") in row for row in lab_cost_table(floors, lang))


AGREEMENT_WORDS = {"under": {"en": "under its floor", "zh": "低于它的下限"},
                   "agrees": {"en": "the measurement agrees", "zh": "和预测一致"},
                   "overhead": {"en": "but the floor is only", "zh": "下限只有"}}


@pytest.mark.parametrize("lang", ["zh", "en"])
@pytest.mark.parametrize("share", [0.05, 0.29, 0.3, 0.9, 1.0, 1.5, 5.0])
def test_the_agreement_sentence_reads_sensibly_for_any_share_of_the_floor(share, lang):
    floors = trace_floors(run(CPU), default_shape(), DEVICE_SPECS["h100"])
    steps = tuple(dataclasses.replace(s, measured_ms=s.floor_ms / share) for s in floors.steps)
    words = lab_agreement_text(dataclasses.replace(floors, steps=steps), lang, measured_here=True)
    chosen = "under" if share > 1 else "agrees" if share >= 0.3 else "overhead"
    for variant, phrases in AGREEMENT_WORDS.items():
        assert (phrases[lang] in words) == (variant == chosen), (variant, words)
    assert not re.search(r"only 0\.\d+× slower|慢 0\.\d+ 倍", words), words

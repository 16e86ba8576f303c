"""`python -m lesson.export`: files written, one-line errors, no traceback."""

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from engine.contract.trace import RequestTrace
from lesson import export
from lesson.diagrams import DIAGRAMS, SCHEMATIC_DIAGRAMS
from tests.factories import ROOT, make_trace


def _assert_standalone_svg(path: Path) -> None:
    data = path.read_text(encoding="utf-8")
    assert data.startswith("<?xml")
    root = ET.fromstring(data.encode("utf-8"))
    assert root.get("version") == "1.1" and root.get("viewBox") and root.get("width") and root.get("height")
    assert "href" not in data and "http://" not in data.replace('xmlns="http://www.w3.org/2000/svg"', "").replace(
        'xmlns:ev="http://www.w3.org/2001/xml-events"', "").replace('xmlns:xlink="http://www.w3.org/1999/xlink"', "")


def test_schematic_export_needs_no_model(tmp_path):
    out = subprocess.run([sys.executable, "-m", "lesson.export", "--out", str(tmp_path), "--schematic", "6", "3",
                          "--lang", "en"], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"{n}.svg" for n in SCHEMATIC_DIAGRAMS)
    for path in tmp_path.iterdir():
        _assert_standalone_svg(path)


def test_trace_export_writes_every_diagram_and_the_trace(tmp_path, monkeypatch, capsys):
    trace = make_trace()
    monkeypatch.setattr(export, "run_engine", lambda prompt, n, model, *speculative: trace)
    assert export.main(["--out", str(tmp_path / "x"), "--lang", "en"]) == 0
    names = {p.name for p in (tmp_path / "x").iterdir()}
    assert names == {f"{n}.svg" for n in (*DIAGRAMS, "roofline", "step_floors")} | {"trace.json"}  # floors: after a run
    for name in DIAGRAMS:
        _assert_standalone_svg(tmp_path / "x" / f"{name}.svg")
    assert RequestTrace.from_json((tmp_path / "x" / "trace.json").read_text(encoding="utf-8")) == trace
    assert len(capsys.readouterr().out.splitlines()) == len(names)


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_trace_export_writes_ttfts_parts_and_says_it_has_only_the_engines(tmp_path, monkeypatch, lang):
    """The TTFT bar was drawn by the page alone: the export and the slide kit (lesson.diagrams.DIAGRAMS) left it
    out. A trace alone has the engine's parts (tokenize .. choosing the first token); the figure says so."""
    from lesson.text import label, table_for
    from tests.svg import all_text

    monkeypatch.setattr(export, "run_engine", lambda prompt, n, model, *speculative: make_trace())
    assert export.main(["--out", str(tmp_path), "--lang", lang]) == 0
    path = tmp_path / "ttft_parts.svg"
    _assert_standalone_svg(path)
    words = all_text(ET.fromstring(path.read_bytes()))
    assert label(table_for(lang), "ttft_parts_only_engine_trace") in words
    assert label(table_for(lang), "ttft_part_queue") not in words  # no visitor's part without the page


@pytest.mark.parametrize("argv", [
    [],
    ["--out", "o", "--lang", "fr"],
    ["--out", "o", "--max-new-tokens", "0"],
    ["--out", "o", "--max-new-tokens", "many"],
    ["--out", "o", "--schematic", "4"],
    ["--out", "o", "--schematic", "-1", "3"],
    ["--out", "o", "--bogus"],
])
def test_bad_arguments_give_one_line(argv, capsys):
    assert export.main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and err.startswith("error: ") and "Traceback" not in err


def test_empty_prompt_is_one_line(tmp_path, capsys):
    assert export.main(["--out", str(tmp_path), "--prompt", "   "]) == 1
    assert capsys.readouterr().err.strip() == "error: the prompt is empty; pass some text with --prompt"


def test_engine_errors_are_one_line(tmp_path, monkeypatch, capsys):
    from engine.contract.errors import ModelLoadError

    def fail(prompt, n, model, *speculative):
        raise ModelLoadError("model_missing", f"model folder not found: {model}")

    monkeypatch.setattr(export, "run_engine", fail)
    assert export.main(["--out", str(tmp_path), "--model", "/no/such/folder"]) == 1
    assert capsys.readouterr().err.strip() == "error: model folder not found: /no/such/folder"


def test_unwritable_out_is_one_line(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert export.main(["--out", str(blocker / "sub"), "--schematic", "2", "2"]) == 1
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_real_engine_run_with_a_tiny_model(tmp_path, tiny_model_dirs, capsys):
    """One real forward-pass run end to end (random tiny Llama, real tokenizer), in this process."""
    pytest.importorskip("torch")
    assert export.main(["--out", str(tmp_path), "--model", str(tiny_model_dirs["llama"]), "--max-new-tokens", "3",
                        "--prompt", "法国的首都是"]) == 0, capsys.readouterr().err
    trace = RequestTrace.from_json((tmp_path / "trace.json").read_text(encoding="utf-8"))
    assert len(trace.steps) >= 1 and json.loads((tmp_path / "trace.json").read_text())["prompt"] == "法国的首都是"
    for name in DIAGRAMS:
        _assert_standalone_svg(tmp_path / f"{name}.svg")


def test_a_speculative_run_exports_its_verify_passes(tmp_path, capsys):
    pytest.importorskip("torch")
    prompt = ("An LLM answers a prompt in two phases called Prefill and Decode. Prefill reads the whole prompt in one "
              "forward pass. An LLM answers a prompt")
    assert export.main(["--out", str(tmp_path), "--prompt", prompt, "--max-new-tokens", "12", "--lang", "en",
                        "--speculative", "ngram"]) == 0, capsys.readouterr().err
    trace = RequestTrace.from_json((tmp_path / "trace.json").read_text(encoding="utf-8"))
    assert trace.verify_steps
    assert 'class="phase-badge verify"' in (tmp_path / "timeline.svg").read_text(encoding="utf-8")
    _assert_standalone_svg(tmp_path / "acceptance.svg")


def test_bad_model_folder_from_the_real_engine(tmp_path, capsys):
    """The real engine's refusal, called in this process (a child would only add torch's imports)."""
    assert export.main(["--out", str(tmp_path), "--model", str(tmp_path / "missing")]) == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and err.startswith("error: ") and "Traceback" not in err


def test_formats_export_measures_the_formats_and_draws_their_kl(tmp_path, monkeypatch):
    from engine.contract.format_runs import FormatRuns
    from tests.lesson.test_quantization import make_runs

    runs = make_runs()
    monkeypatch.setattr(export, "run_engine", lambda prompt, n, model, *speculative: make_trace())
    monkeypatch.setattr(export, "measure_formats", lambda: runs)
    assert export.main(["--out", str(tmp_path), "--lang", "en", "--formats"]) == 0
    _assert_standalone_svg(tmp_path / "format_kl.svg")
    _assert_standalone_svg(tmp_path / "format_time.svg")
    assert FormatRuns.from_json((tmp_path / "weight-formats.json").read_text(encoding="utf-8")) == runs
    assert "held-out" in (tmp_path / "format_kl.svg").read_text(encoding="utf-8")

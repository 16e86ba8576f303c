"""`python -m engine record`: the gallery set, recorded on this machine, reads back through the engine's own
readers; the index says what each file is; re-recording replaces the set."""

from __future__ import annotations

import json

import pytest

from engine.cli import main
from engine.contract.prompts import LESSON_PROMPTS
from engine.contract.recorded import FIGURES, INDEX_SCHEMA, KINDS, gallery_indexes, load_entry, read_index
from engine.contract.trace import Provenance
from engine.runtime.record import Recorded, machine_folder, write_gallery
from lesson.inputs import default_prompt
from tests.factories import make_trace

GPU = Provenance(cpu="AMD EPYC", num_cores=16, device="cuda", gpu="NVIDIA H200", torch_version="2.13.0",
                 transformers_version="5.24.0", recorded_at="2025-06-01T14:03:12Z")


def test_the_recorded_example_is_the_lessons():
    assert {lang: default_prompt(lang) for lang in LESSON_PROMPTS} == LESSON_PROMPTS  # one definition, both read it


def test_a_machine_names_its_folder_without_spaces():
    assert machine_folder(GPU) == "cuda-nvidia-h200"
    assert machine_folder(Provenance("AMD EPYC", 2, "cpu", "", "2.13.0", "5.24.0", "2025-06-01T14:03:12Z")) == "cpu"


def test_record_quick_on_a_tiny_model_writes_an_index_whose_files_load(tiny_model_dirs, tmp_path, capsys):
    assert main(["record", "--out", str(tmp_path), "--quick", "--model", str(tiny_model_dirs["llama"]),
                 "--device", "cpu"]) == 0
    index = tmp_path / "cpu" / "index.json"
    assert capsys.readouterr().out.strip() == str(index)
    assert gallery_indexes(tmp_path) == (index,)
    data = json.loads(index.read_text(encoding="utf-8"))
    assert data["schema"] == INDEX_SCHEMA and data["recorded_with"] == "python -m engine record --quick"
    entries = read_index(index)
    assert {e.kind for e in entries} == set(KINDS)
    assert [e.name for e in entries if e.kind == "trace"] == ["lesson-zh-4", "lesson-zh-32", "lesson-en-4",
                                                             "lesson-en-32"]
    for entry in entries:
        recorded = load_entry(entry, 5_000_000)
        assert recorded.kind == entry.kind and entry.figures == FIGURES[entry.kind]
        assert recorded.provenance == entry.provenance and recorded.provenance.device == "cpu"
    stretched = load_entry(next(e for e in entries if e.name == "lesson-zh-32"), 5_000_000).run
    assert stretched.prompt_len == 32 and stretched.prompt.endswith(LESSON_PROMPTS["zh"])  # the app's stretch


def test_recording_again_replaces_the_set_the_index_listed(tmp_path):
    trace = make_trace()
    first = [Recorded("old-run", "trace", {"lang": "zh"}, None, trace.to_json(indent=None))]
    write_gallery(tmp_path / "cpu", first, "test")
    (tmp_path / "cpu" / "notes.txt").write_text("kept", encoding="utf-8")  # not the index's: left alone
    write_gallery(tmp_path / "cpu", [Recorded("new-run", "trace", {}, None, trace.to_json(indent=None))], "test")
    assert sorted(p.name for p in (tmp_path / "cpu").iterdir()) == ["index.json", "new-run.json", "notes.txt"]


def test_a_run_name_that_is_not_a_plain_file_name_is_refused(tmp_path):
    with pytest.raises(ValueError):
        write_gallery(tmp_path, [Recorded("../escape", "trace", {}, None, "{}")], "test")

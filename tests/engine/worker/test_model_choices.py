"""Which models a client may name (engine/runtime/worker/models.py): "default", the folders directly
inside the worker's models folder, and the presets; a forged name, a path, a hidden folder, a file,
a folder posing as a preset or a symlink leading out of the folder is refused (the app's model
picker lists only what the worker offers: app_support.resources.model_choices)."""

from __future__ import annotations

import pytest

from engine.contract.errors import ModelLoadError
from engine.runtime.worker.models import WorkerSettings, folder_choices, resolve_choice


def test_model_choices_are_names_in_the_models_folder_only(tmp_path):
    (tmp_path / "tiny").mkdir()
    (tmp_path / ".hidden").mkdir()
    (tmp_path / "notes.txt").write_text("x")
    assert folder_choices(tmp_path) == ["tiny"]
    assert folder_choices(None) == folder_choices(tmp_path / "missing") == []
    settings = WorkerSettings(models_dir=tmp_path, presets=False)
    assert resolve_choice("default", settings) == (None, None)
    assert resolve_choice("tiny", settings) == (str(tmp_path / "tiny"), tmp_path)
    for forged in ("../tiny", "/etc", str(tmp_path / "tiny"), ".hidden", "notes.txt", "preset:qwen2.5-0.5b"):
        with pytest.raises(ModelLoadError):
            resolve_choice(forged, settings)


def test_a_symlink_leading_out_of_the_models_folder_is_not_a_choice(tmp_path):
    models, elsewhere = tmp_path / "models", tmp_path / "elsewhere"
    (models / "real").mkdir(parents=True)
    elsewhere.mkdir()
    (models / "escape").symlink_to(elsewhere, target_is_directory=True)
    (models / "root").symlink_to("/", target_is_directory=True)
    (models / "alias").symlink_to(models / "real", target_is_directory=True)  # stays inside: fine
    assert folder_choices(models) == ["alias", "real"]
    for name in ("escape", "root"):
        with pytest.raises(ModelLoadError):
            resolve_choice(name, WorkerSettings(models_dir=models))


def test_a_folder_cannot_pose_as_a_preset(tmp_path):
    (tmp_path / "preset:fake").mkdir()
    settings = WorkerSettings(models_dir=tmp_path, presets=True)
    assert folder_choices(tmp_path) == []
    assert resolve_choice("preset:qwen2.5-0.5b", settings) == ("preset:qwen2.5-0.5b", None)
    for forged in ("preset:fake", "preset:no-such-model"):
        with pytest.raises(ModelLoadError):
            resolve_choice(forged, settings)

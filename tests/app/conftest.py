"""The lesson page through AppTest on a server whose models folder holds one real and one broken model.

Modules that need other server settings define their own `app` fixture, which takes the place
of this one in that module. The pages run no model here: the app starts a local engine worker (a
child process) on its first call, one per worker setting (app_support.resources.worker_key), and
every forward pass runs there."""

from __future__ import annotations

import os
import shutil

import pytest
from streamlit.testing.v1 import AppTest

from engine.runtime.model import DEFAULT_MODEL_DIR
from tests.app.apptest import APP, fresh_settings  # noqa: F401  (a fixture, asked for below)


def link_or_copy(src: str, dst: str) -> None:
    """A hard link, or a copy on another file system (a symlink out of the models folder is refused)."""
    try:
        os.link(src, dst)
    except OSError:  # another file system
        shutil.copy2(src, dst)


@pytest.fixture(scope="session")
def served_models(tmp_path_factory):
    """One models folder for the whole session, so every page in it talks to one engine worker (the
    app's client is keyed by the worker's settings, the models folder among them: a folder per test
    would start a worker per test, about 10 s each here)."""
    models = tmp_path_factory.mktemp("served") / "models"
    models.mkdir()
    # hard links (or a copy): a symlink out of the models folder is refused, by design
    shutil.copytree(DEFAULT_MODEL_DIR, models / "copy_of_default", copy_function=link_or_copy)
    (models / "not_a_model").mkdir()
    (models / "not_a_model" / "readme.txt").write_text("just a folder")
    (models / "broken_weights").mkdir()  # looks like a model, but its files are garbage
    (models / "broken_weights" / "config.json").write_text("{not json")
    (models / "broken_weights" / "model.safetensors").write_bytes(b"\0" * 16)
    return models


@pytest.fixture(autouse=True)
def settings_read_afresh(request):
    """Every app test reads the server's settings afresh, and forgets them after (apptest.fresh_settings)."""
    request.getfixturevalue("fresh_settings")


@pytest.fixture
def served_settings(monkeypatch, served_models):
    """The server's settings for the app tests: the shared models folder (one real and one broken model),
    short answers and prompts; read afresh by the page, and forgotten again after the test."""
    monkeypatch.setenv("PREFILL_DECODE_MODELS_DIR", str(served_models))
    monkeypatch.setenv("PREFILL_DECODE_MAX_NEW_TOKENS", "32")
    monkeypatch.setenv("PREFILL_DECODE_MAX_PROMPT_TOKENS", "256")


@pytest.fixture
def app(served_settings):
    """A fresh page on a server whose models folder holds one real and one broken model."""
    return AppTest.from_file(APP, default_timeout=180).run()

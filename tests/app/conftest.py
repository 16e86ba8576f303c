"""The lesson page through AppTest on a server whose models folder holds one real and one broken model.

Modules that need other server settings define their own `app` fixture, which takes the place
of this one in that module. The pages run no model here: the app starts a local engine worker (a
child process) on its first call, one per worker setting (app_support.resources.worker_key), and
every forward pass runs there. Tests that need a worker of other settings (presets off, a tokenizer
with a BOS, a runner held by a gate) share `thread_engine`, served from this process's threads: no
second child process importing torch."""

from __future__ import annotations

import os
import secrets
import shutil
from types import SimpleNamespace

import pytest
from streamlit.testing.v1 import AppTest

from engine.contract.worker.client import EngineClient
from engine.contract.worker.protocol import ModelRef, format_address
from engine.runtime.model import DEFAULT_MODEL_DIR
from engine.runtime.worker.jobs import MEASURED
from engine.runtime.worker.models import WorkerSettings
from engine.runtime.worker.server import start_in_thread
from tests.app.apptest import APP, fresh_settings, scan_components_once  # noqa: F401  (a fixture, asked for below)
from tests.factories import Gate, build_bos_tokenizer


def link_or_copy(src: str, dst: str) -> None:
    """A hard link, or a copy on another file system (a symlink out of the models folder is refused)."""
    try:
        os.link(src, dst)
    except OSError:  # another file system
        shutil.copy2(src, dst)


scan_components_once()  # every AppTest run of this folder would scan the installed packages again


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


@pytest.fixture(scope="session")
def thread_engine(tmp_path_factory, tiny_model_dirs):
    """One engine worker served from this process's threads for the whole session, which a page reaches
    as a remote worker (`use_thread_engine`): presets off, prompts up to 64 tokens, a models folder
    holding `llama_bos` (a tiny Llama whose tokenizer adds a BOS), and a `gate` method that holds its
    runner until a test opens it (tests.factories.Gate); the default model loaded first (a light call,
    such as the page's token preview, must not wait behind the gate)."""
    models = tmp_path_factory.mktemp("thread_engine") / "models"
    folder = models / "llama_bos"
    folder.mkdir(parents=True)
    for name in ("config.json", "generation_config.json", "model.safetensors"):
        shutil.copy(tiny_model_dirs["llama"] / name, folder / name)
    build_bos_tokenizer(folder)
    key, gate = secrets.token_hex(16), Gate()
    running = start_in_thread(key.encode(), WorkerSettings(models_dir=models, presets=False, max_prompt_tokens=64),
                              measured={**MEASURED, "gate": gate})
    client = EngineClient(running.address, key.encode())
    client.load(ModelRef("default", "auto", "auto"))
    yield SimpleNamespace(worker=running.worker, address=format_address(running.address), key=key, gate=gate,
                          client=client, models=models)
    gate.opened.set()
    running.close()


@pytest.fixture
def use_thread_engine(monkeypatch, thread_engine):
    """The page's engine is `thread_engine` (PREFILL_DECODE_ENGINE and its token; presets off for the page too)."""
    monkeypatch.setenv("PREFILL_DECODE_ENGINE", thread_engine.address)
    monkeypatch.setenv("PREFILL_DECODE_ENGINE_TOKEN", thread_engine.key)
    monkeypatch.setenv("PREFILL_DECODE_PRESETS", "0")
    return thread_engine


@pytest.fixture(autouse=True)
def one_models_folder(monkeypatch, served_models):
    """Every page of this folder on the session's models folder unless a test sets its own, so the pages
    that need no settings of their own share one local engine worker (a worker per models folder)."""
    monkeypatch.setenv("PREFILL_DECODE_MODELS_DIR", str(served_models))


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

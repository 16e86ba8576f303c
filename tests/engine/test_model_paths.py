"""Which models load, from where: the network only when asked, nothing outside the allowed folder,
and a loaded model that requests share is frozen."""

from __future__ import annotations

import dataclasses
import shutil
import socket
import time

import pytest
from huggingface_hub import constants

import engine.runtime.model
from engine.contract.errors import ModelLoadError
from engine.runtime.model import load_model
from engine.runtime.model import hub_reachable


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def online(monkeypatch):
    """As if HF_HUB_OFFLINE were unset (conftest sets it), with the hub at `ENDPOINT`."""
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    return lambda url: monkeypatch.setattr(constants, "ENDPOINT", url)


@pytest.mark.parametrize("name", ["models/my-model", "Qwen/Qwen2.5-0.5B"])
def test_a_missing_folder_is_never_fetched_by_default(name, monkeypatch, online):
    """What the app gets: a folder that does not exist is "not found", even when it looks like a hub id."""
    online(f"http://127.0.0.1:{closed_port()}")
    monkeypatch.setattr(engine.runtime.model, "hub_reachable", lambda *a: pytest.fail("the hub was contacted"))
    with pytest.raises(ModelLoadError) as err:
        load_model(name)
    assert err.value.key == "model_not_found" and "folder not found" in str(err.value)


def test_a_hub_id_with_the_hub_unreachable_fails_in_seconds(online):
    """Asked to fetch (the CLI does), with no hub: one short probe, then the local cache only."""
    online(f"http://127.0.0.1:{closed_port()}")
    start = time.perf_counter()
    with pytest.raises(ModelLoadError) as err:
        load_model("nobody/no-such-model", allow_hub=True)
    assert time.perf_counter() - start < 15  # the hub's retries took ~26 s; a busy CPU adds seconds, not that
    assert err.value.key == "model_load_failed" and "cannot be reached" in str(err.value)


def test_the_hub_probe_gives_up_on_a_silent_server(online):
    """A server that accepts and never answers (like a hung DNS lookup) costs the probe's timeout, no more."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        online(f"http://127.0.0.1:{silent.getsockname()[1]}")
        start = time.perf_counter()
        assert hub_reachable(timeout_s=0.5) is False
        assert time.perf_counter() - start < 5  # the 0.5 s timeout, not a library default of 10 s or more


def test_the_hub_probe_counts_any_http_answer_as_reachable(online):
    """A 404 is still the network answering; HF_HUB_OFFLINE=1 means not reachable, without trying."""
    import http.server
    import threading

    server = http.server.HTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)  # 501 to a HEAD
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        online(f"http://127.0.0.1:{server.server_port}")
        assert hub_reachable(timeout_s=2) is True
        constants.HF_HUB_OFFLINE = True  # restored by the fixture's monkeypatch
        assert hub_reachable(timeout_s=2) is False
    finally:
        server.shutdown()
        server.server_close()


def test_a_symlink_out_of_the_models_folder_is_refused(tmp_path, tiny_model_dirs):
    models = tmp_path / "models"
    models.mkdir()
    (models / "linked").symlink_to(tiny_model_dirs["llama"], target_is_directory=True)
    with pytest.raises(ModelLoadError) as err:
        load_model(models / "linked", within=models, warmup=False)
    assert err.value.key == "model_not_found" and "outside" in str(err.value)
    # a real folder inside loads; not once one of its files links out
    shutil.copytree(tiny_model_dirs["llama"], models / "real")
    assert load_model(models / "real", within=models, warmup=False).model_id == "real"
    (models / "real" / "model.safetensors").unlink()
    (models / "real" / "model.safetensors").symlink_to(tiny_model_dirs["llama"] / "model.safetensors")
    with pytest.raises(ModelLoadError, match="outside"):
        load_model(models / "real", within=models, warmup=False)
    with pytest.raises(ModelLoadError, match="outside"):
        load_model(models / "real" / ".." / "..", within=models, warmup=False)


def test_a_loaded_model_is_frozen_with_its_load_time(tiny_model_dirs):
    lm = load_model(tiny_model_dirs["gpt2"], device="cpu")
    assert lm.load_ms > 0
    for name, value in (("load_ms", 0.0), ("lock", None), ("model", None)):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(lm, name, value)

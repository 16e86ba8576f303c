"""Hostile model folders: a config.json that declares a million layers (or -1), weights no machine holds,
a corrupt safetensors header, an index whose weight_map points outside the folder, links out of it,
and a hub that answers and then stalls. Each is refused before anything is allocated, in one line (CLI,
exit 2) or one message (app), naming the entry, never where it points; the heavy ones run in a child
process under a memory ceiling."""

from __future__ import annotations

import http.server
import json
import shutil
import threading
import time

import pytest

from engine.contract.errors import LimitError, ModelLoadError
from engine.runtime.model import load_model
from tests.hostile.bounded import assert_case_one_line, assert_one_line, each_in_one_child, python

SECONDS, PEAK_MB = 60, 900  # the child imports torch and transformers (about 300 MB) before it refuses


@pytest.fixture
def folder(tmp_path, tiny_model_dirs):
    """A copy of the tiny Llama, to spoil."""
    path = tmp_path / "models" / "spoiled"
    shutil.copytree(tiny_model_dirs["llama"], path)
    return path


def set_config(folder, **fields) -> None:
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    (folder / "config.json").write_text(json.dumps({**config, **fields}), encoding="utf-8")


SHAPES = {
    "a million layers": ({"num_hidden_layers": 1_000_000}, "num_hidden_layers"),
    "1e6 layers (a float)": ({"num_hidden_layers": 1e6}, "num_hidden_layers"),
    "a negative layer count": ({"num_hidden_layers": -1}, "num_hidden_layers"),
    "a vocabulary of 1e9": ({"vocab_size": 10**9}, "vocab_size"),
    "weights no machine holds": ({"num_hidden_layers": 1000, "hidden_size": 65536, "intermediate_size": 262144,
                                  "num_attention_heads": 512, "num_key_value_heads": 512}, "weights"),
}


@pytest.mark.slow  # one child process that imports torch and transformers (spoiled_traces)
@pytest.mark.parametrize("name", list(SHAPES))
def test_a_declared_shape_over_the_limits_is_refused_before_loading(name, spoiled_traces):
    assert_refused(spoiled_traces, name, SHAPES[name][1])


@pytest.mark.slow  # a child process that imports torch and transformers
def test_the_cost_model_reads_the_declared_shape_first(folder):
    set_config(folder, num_hidden_layers=10**12)  # AutoConfig would build a list of 10**12 layer types
    outcome = python("-m", "engine", "cost", "--prompt-len", "4", "--context", "4", "--model", str(folder),
                     "--device-spec", "h200")
    assert_one_line(outcome, 2, "num_hidden_layers", seconds=SECONDS, peak_mb=PEAK_MB)


APP_LOAD = """
import sys
from pathlib import Path
from engine.runtime.model import load_model
from lesson.messages import error_message
try:
    load_model(sys.argv[1], within=Path(sys.argv[1]).parent, warmup=False)
except Exception as err:
    print(type(err).__name__, error_message(err, "zh"), error_message(err, "en"), sep="\\n")
    sys.exit(3)
"""


@pytest.mark.slow  # a child process that imports torch and transformers
@pytest.mark.parametrize("name", ["a million layers", "weights no machine holds"])
def test_the_app_says_why_in_both_languages(name, folder):
    set_config(folder, **SHAPES[name][0])
    outcome = python("-c", APP_LOAD, str(folder))
    assert outcome.returncode == 3 and outcome.seconds < SECONDS and outcome.peak_mb < PEAK_MB, outcome.describe()
    kind, zh, en = outcome.stdout.splitlines()[:3]
    assert kind == "LimitError" and "GiB" in en + zh or "1024" in en, outcome.stdout
    assert "Something went wrong" not in en and "出了点问题" not in zh, outcome.stdout


def spoil_header(folder, header: bytes, length: int | None = None) -> None:
    path = folder / "model.safetensors"
    data = path.read_bytes()
    body = data[8 + int.from_bytes(data[:8], "little"):]
    size = len(header) if length is None else length
    path.write_bytes(size.to_bytes(8, "little") + header + body)


CORRUPT = {
    "a header longer than the file": lambda f: spoil_header(f, b"{}", length=10**12),
    "a header that is not JSON": lambda f: spoil_header(f, b"\xff\xfe not json"),
    "a tensor past the file's end": lambda f: spoil_header(
        f, json.dumps({"lm_head.weight": {"dtype": "F32", "shape": [10**6, 10**6],
                                          "data_offsets": [0, 4 * 10**12]}}).encode()),
    "an empty file": lambda f: (f / "model.safetensors").write_bytes(b""),
}


@pytest.mark.slow  # one child process that imports torch and transformers (spoiled_traces)
@pytest.mark.parametrize("name", list(CORRUPT))
def test_a_corrupt_safetensors_file_is_one_line(name, spoiled_traces):
    assert_refused(spoiled_traces, name, "model.safetensors")


@pytest.fixture(scope="module")
def spoiled_traces(tmp_path_factory, tiny_model_dirs):
    """`python -m engine trace` on every SHAPES and CORRUPT case, each spoiling a copy of the tiny Llama of its own,
    in one bounded child (bounded.each_in_one_child): (the child's Outcome, {case: CaseRun})."""
    root = tmp_path_factory.mktemp("spoiled")
    cases = {**{name: lambda f, fields=fields: set_config(f, **fields) for name, (fields, _) in SHAPES.items()},
             **CORRUPT}
    argvs = {}
    for number, (name, spoil) in enumerate(cases.items()):
        folder = root / f"models{number}" / "spoiled"
        shutil.copytree(tiny_model_dirs["llama"], folder)
        spoil(folder)
        argvs[name] = ["trace", "--model", str(folder), "--max-new-tokens", "2"]
    return each_in_one_child("from engine.cli import main", argvs, root, timeout_s=SECONDS)


def assert_refused(spoiled_traces, name: str, word: str) -> None:
    """Case `name` of spoiled_traces refused as a refusal must be: exit 2, one line on stderr naming `word`, no
    traceback; the child that ran every case within the time and memory bounds."""
    child, runs = spoiled_traces
    assert_case_one_line(child, runs[name], 2, word, seconds=SECONDS, peak_mb=PEAK_MB)


# --- confinement: every file loading reads stays in the folder ----------------------------------

def shard_with_index(folder, name: str) -> None:
    """The folder's weights named by an index (as a sharded checkpoint is) under `name`."""
    tensors = json.loads((folder / "model.safetensors").read_bytes()[8:8 + int.from_bytes(
        (folder / "model.safetensors").read_bytes()[:8], "little")])
    index = {"metadata": {}, "weight_map": {t: name for t in tensors if t != "__metadata__"}}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index), encoding="utf-8")


def test_an_index_naming_weights_outside_the_folder_is_refused(folder, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.copy(folder / "model.safetensors", outside / "model.safetensors")
    shard_with_index(folder, "../../outside/model.safetensors")
    for within in (None, folder.parent):
        with pytest.raises(ModelLoadError) as err:
            load_model(folder, within=within, warmup=False)
        assert err.value.key == "not_a_model" and "outside" in str(err.value)
        assert str(tmp_path) not in str(err.value)  # the refusal names the entry, not the machine's layout


def test_an_index_naming_a_missing_shard_reveals_no_path(folder, tmp_path):
    shard_with_index(folder, "model-00001-of-00002.safetensors")
    with pytest.raises(ModelLoadError) as err:
        load_model(folder, warmup=False)
    assert "model-00001-of-00002.safetensors" in str(err.value) and str(tmp_path) not in str(err.value)


def test_an_index_naming_its_own_shard_still_loads(folder):
    shard_with_index(folder, "model.safetensors")
    assert load_model(folder, warmup=False).model_id == "spoiled"


@pytest.mark.parametrize("entry", ["model.safetensors", "tokenizer.json", "config.json"])
def test_a_file_linked_out_of_the_folder_is_refused_without_saying_where(entry, folder, tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    shutil.move(folder / entry, outside / entry)
    (folder / entry).symlink_to(outside / entry)
    with pytest.raises(ModelLoadError) as err:
        load_model(folder, warmup=False)
    assert entry in str(err.value) and "outside" in str(err.value) and str(outside) not in str(err.value)


def test_a_hub_cache_snapshot_whose_files_link_to_its_blobs_loads(tiny_model_dirs, tmp_path):
    repo = tmp_path / "hub" / "models--org--tiny"
    snapshot = repo / "snapshots" / "0123abc"
    (repo / "blobs").mkdir(parents=True)
    snapshot.mkdir(parents=True)
    for i, file in enumerate(sorted(tiny_model_dirs["llama"].iterdir())):
        shutil.copy(file, repo / "blobs" / f"blob{i}")
        (snapshot / file.name).symlink_to(f"../../blobs/blob{i}")
    assert load_model(snapshot, warmup=False).model_id == "0123abc"


# --- a hub that answers, then stalls ---------------------------------------------------------

class Stalling(http.server.BaseHTTPRequestHandler):
    """Answers HEAD at once (the reachability probe), then never finishes a GET."""

    def do_HEAD(self):  # noqa: N802 - http.server's naming
        self.send_response(200)
        self.end_headers()

    def do_GET(self):  # noqa: N802
        self.send_response(200)
        self.send_header("Content-Length", "1000000")
        self.end_headers()
        self.wfile.write(b"{")
        time.sleep(30)

    def log_message(self, *args):
        pass


HUB_LOAD = """
import sys, time
from engine.runtime.model import load_model
start = time.monotonic()
try:
    load_model("org/stalled-model", allow_hub=True, hub_timeout_s=float(sys.argv[1]), warmup=False)
except Exception as err:
    print(type(err).__name__, err.key, round(time.monotonic() - start, 1))
    print(err)
    sys.exit(3)
"""


@pytest.mark.slow  # a child process that imports torch and transformers
def test_a_stalling_hub_costs_the_fetch_deadline_not_forever(tmp_path):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Stalling)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        env = {"HF_ENDPOINT": f"http://127.0.0.1:{server.server_port}", "HF_HUB_OFFLINE": "0",
               "TRANSFORMERS_OFFLINE": "0", "HF_HOME": str(tmp_path / "hf")}
        outcome = python("-c", HUB_LOAD, "3", env=env, timeout_s=90)
    finally:
        server.shutdown()
        server.server_close()
    assert outcome.returncode == 3, outcome.describe()
    kind, key, _ = outcome.stdout.split("\n")[0].split()
    assert (kind, key) == ("ModelLoadError", "model_load_failed") and "within 3 s" in outcome.stdout
    assert outcome.seconds < 45, outcome.describe()  # imports + the 3 s deadline, not the hub's minutes


def test_limits_are_errors_a_page_can_word():
    assert issubclass(LimitError, ValueError)

"""Real worker processes: the app's local worker (started, killed, replaced) and a worker started by
hand with a token file (wrong or missing tokens refused; the token in no output, no file, no
command line). Each test starts a fresh Python that imports torch: seconds, so marked slow."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.contract.results import GenerationConfig
from engine.contract.worker.client import EngineClient, Pass
from engine.contract.worker.errors import WorkerAuthError, WorkerRestarted, WorkerSilent, WorkerUnreachable
from engine.contract.worker.local import PACKAGE_ROOT, LocalWorker
from engine.contract.worker.protocol import ModelRef

pytestmark = pytest.mark.slow
DEFAULT = ModelRef("default", "cpu", "auto")
TOKEN = "remote-token-" + "7f3a9c2e5b1d8046" * 2  # what must appear nowhere but in its own file
STARTUP_S = 180.0


def wait_dead(pid: int, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while Path(f"/proc/{pid}").exists() and "zombie" not in _state(pid):
        assert time.monotonic() < deadline, f"process {pid} did not exit"
        time.sleep(0.02)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/status").read_text().split("State:")[1].split("\n")[0].lower()
    except (OSError, IndexError):
        return "zombie"


@pytest.fixture
def local():
    client = EngineClient(None, None, local=LocalWorker(device="cpu"))
    yield client
    client.close()


def test_a_killed_local_worker_is_replaced_and_the_next_call_says_so(local):
    first = local.ping()["pid"]
    assert local.local.pid == first
    os.kill(first, signal.SIGKILL)
    with pytest.raises(WorkerRestarted) as caught:
        local.ping()
    assert caught.value.key == "engine_restarted"
    assert caught.value.params == {"exit_code": -signal.SIGKILL, "during_run": False}
    second = local.ping()["pid"]  # the call after the message runs on the new worker
    assert second != first and local.local.pid == second
    assert local.generate(DEFAULT, "法国的首都是", GenerationConfig(max_new_tokens=4)).finished


def test_a_worker_killed_during_a_run_fails_that_run_only(local):
    local.load(DEFAULT)
    events = local.stream_trace(DEFAULT, "法国的首都是", GenerationConfig(max_new_tokens=4000, ignore_eos=True))
    for event in events:
        if isinstance(event, Pass):
            break
    os.kill(local.local.pid, signal.SIGKILL)
    with pytest.raises(WorkerRestarted) as caught:
        for _ in events:
            pass
    assert caught.value.params["during_run"] is True
    assert local.generate(DEFAULT, "The capital of France is", GenerationConfig(max_new_tokens=3)).finished


def test_the_local_key_is_on_no_command_line_and_in_no_environment(local):
    pid = local.ping()["pid"]
    key = local.local.authkey
    assert key not in Path(f"/proc/{pid}/cmdline").read_bytes()
    assert key not in Path(f"/proc/{pid}/environ").read_bytes()


def test_the_local_worker_exits_when_the_app_stops(local):
    pid = local.ping()["pid"]
    local.close()
    wait_dead(pid)


# --- a worker started by hand, with a token file ----------------------------------------

def start_worker(tmp_path: Path, *args: str, env: dict | None = None) -> tuple[subprocess.Popen, Path]:
    log = tmp_path / "worker.log"
    proc = subprocess.Popen([sys.executable, "-m", "engine.runtime.worker", *args], cwd=tmp_path, env=env or _env(),
                            stdout=log.open("wb"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    return proc, log


def _env() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFILL_DECODE_ENGINE")}
    env["PYTHONPATH"] = str(PACKAGE_ROOT)
    return env


def listening_port(proc: subprocess.Popen, log: Path) -> int:
    deadline = time.monotonic() + STARTUP_S
    while time.monotonic() < deadline:
        found = re.search(r"listening on 127\.0\.0\.1:(\d+)", log.read_text(errors="replace"))
        if found:
            return int(found.group(1))
        assert proc.poll() is None, log.read_text(errors="replace")
        time.sleep(0.05)
    raise AssertionError("the worker did not start listening")


def test_a_remote_client_needs_the_workers_token_and_the_token_is_never_written(tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n", encoding="utf-8")
    proc, log = start_worker(tmp_path, "--port", "0", "--token-file", str(token_file), "--preload", "none")
    try:
        address = ("127.0.0.1", listening_port(proc, log))
        with pytest.raises(WorkerAuthError):
            EngineClient(address, b"a-wrong-token-of-enough-length").ping()
        assert EngineClient(address, TOKEN.encode()).ping()["pid"] == proc.pid
        assert TOKEN.encode() not in Path(f"/proc/{proc.pid}/cmdline").read_bytes()
    finally:
        proc.terminate()
        proc.wait(30)
    text = log.read_text(errors="replace")
    assert "wrong or missing token" in text
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p != token_file]
    assert written and not any(TOKEN.encode() in p.read_bytes() for p in written)


def test_a_worker_without_a_token_does_not_start(tmp_path):
    for host in ("0.0.0.0", "127.0.0.1"):
        proc, log = start_worker(tmp_path, "--host", host, "--port", "0")
        assert proc.wait(60) == 2
        assert "needs a token" in log.read_text()


def test_a_stuck_local_worker_is_replaced_and_the_page_is_told_to_run_again(local):
    first = local.ping()["pid"]
    os.kill(first, signal.SIGSTOP)  # alive, but answering nothing (not even its heartbeat)
    try:
        stuck = EngineClient(None, None, local=local.local, silence_s=3.0)
        with pytest.raises(WorkerSilent) as caught:
            stuck.ping()  # the key challenge itself goes unanswered: connect's deadline, then replaced
    except WorkerUnreachable as err:  # the handshake timed out first: the same advice, the same replacement
        caught = None
        assert err.params["local"] is True
    finally:
        with contextlib.suppress(ProcessLookupError):  # killed already: the replacement came first
            os.kill(first, signal.SIGCONT)
    if caught is not None:
        assert caught.value.params["local"] is True
    wait_dead(first)  # the stuck one was killed ...
    assert local.ping()["pid"] not in (first, None)  # ... and the next call runs on a new one

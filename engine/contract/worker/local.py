"""A worker on this machine, started and watched by the app: `python -m engine.runtime.worker` as a child.

Both sides of the hand-over live here:

    parent (LocalWorker)                          child (python -m engine.runtime.worker --stdin-key)
    a random key (secrets), never on the command line, in no file and no log
    Popen(..., stdin=PIPE, stdout=PIPE)  ------>  read_stdin_key(): the key is stdin's first line
                                                  bind 127.0.0.1, port 0 (the system picks a free one)
    wait for the ready line            <-------  {"v": 1, "ready": true, "port": N, "pid": P} on stdout
    keep stdin open                               exit_when_stdin_closes(): EOF = the app has gone
    stop(): terminate, then kill                  (a killed app leaves no worker behind)

The key travels through the child's inherited stdin pipe only, so no other process can read it
from the child's command line (`ps`) or from its environment (/proc/PID/environ). The child's
stderr is the app's: its log lines appear with the app's.

Supervision: `ensure_alive()` before each call. A worker that died is replaced at once (a new
process, a new key) and the call that found it out raises WorkerRestarted, which a page
translates; the next call runs on the new worker. What the page keeps (finished runs, cached
figures) is the page's and is not lost.
"""

from __future__ import annotations

import atexit
import json
import os
import queue
import secrets
import subprocess
import sys
import threading
from collections.abc import Mapping
from pathlib import Path

from engine.contract.worker.errors import WorkerRestarted, WorkerStartError
from engine.contract.worker.protocol import PROTOCOL_VERSION

STARTUP_TIMEOUT_S = 180.0  # a fresh process imports torch and loads (and warms) the model
STOP_GRACE_S = 5.0
DYING_GRACE_S = 5.0  # a failed connection: how long a worker that is exiting may take to be gone
PACKAGE_ROOT = Path(__file__).resolve().parents[3]  # the folder holding engine/: the child imports from it
CHILD_ENV_DROPPED = ("PREFILL_DECODE_ENGINE", "PREFILL_DECODE_ENGINE_TOKEN", "PREFILL_DECODE_ENGINE_TOKEN_FILE")


class LocalWorker:
    """One local worker process, (re)started on demand. Thread-safe: a page's sessions share it."""

    def __init__(self, *, preload: tuple[str, ...] = ("default",), device: str = "auto", dtype: str = "auto",
                 environ: Mapping[str, str] | None = None, startup_timeout_s: float = STARTUP_TIMEOUT_S) -> None:
        self.preload, self.device, self.dtype = preload, device, dtype
        self.startup_timeout_s = startup_timeout_s
        self._environ = dict(os.environ if environ is None else environ)
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._ready: queue.Queue = queue.Queue()
        self._port: int | None = None
        self.authkey = b""
        self.generation = 0  # how many processes have been started: a call that began on another one lost it
        self.last_exit_code: int | None = None
        atexit.register(self.stop)

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    def address(self) -> tuple[str, int]:
        """Where the worker listens; starts it (and waits until it is ready) when needed."""
        with self._lock:
            if self._proc is None:
                self._start()
            if self._port is None:
                self._port = self._wait_ready()
            return "127.0.0.1", self._port

    def ensure_alive(self, during_run: bool = False, since: int | None = None, grace_s: float = 0.0) -> None:
        """If the worker has exited, start a new one and raise WorkerRestarted. `since`: the generation
        a failed call began on; a newer one means another call found the death first (raised too).
        `grace_s`: after a failed connection, how long to let a dying worker finish exiting (a killed
        process keeps its socket until its last thread has gone)."""
        with self._lock:
            if self._proc is not None and grace_s > 0:
                try:
                    self._proc.wait(grace_s)
                except subprocess.TimeoutExpired:
                    pass  # alive: the failure was something else
            if self._proc is not None and self._proc.poll() is not None:
                self.last_exit_code = self._proc.returncode
                self._start()
            elif since is None or since == self.generation:
                return
        raise WorkerRestarted(self.last_exit_code, during_run)

    def replace_stuck(self, since: int | None) -> bool:
        """A worker that is alive but stopped answering (a call heard nothing, not even its heartbeat):
        kill it and start a new one now, so the next call runs (the page says to run again). `since`:
        the generation the call began on; a newer one was started already. True when one was replaced."""
        with self._lock:
            if self._proc is None or (since is not None and since != self.generation):
                return False
            if self._proc.poll() is None:
                self._proc.kill()
                self._proc.wait()
            self.last_exit_code = self._proc.returncode
            self._start()
            return True

    def stop(self) -> None:
        """Stop the worker (at exit too): terminate, then kill if it has not gone in STOP_GRACE_S."""
        with self._lock:
            proc, self._proc, self._port = self._proc, None, None
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()

    # --- inside the lock ------------------------------------------------------------

    def _start(self) -> None:
        self.authkey = secrets.token_hex(32).encode("ascii")
        self.generation += 1
        command = [sys.executable, "-m", "engine.runtime.worker", "--host", "127.0.0.1", "--port", "0", "--stdin-key",
                   "--device", self.device, "--dtype", self.dtype]
        for choice in self.preload:
            command += ["--preload", choice]
        env = {k: v for k, v in self._environ.items() if k not in CHILD_ENV_DROPPED}
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PACKAGE_ROOT), env.get("PYTHONPATH", "")) if p)
        self._proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        self._proc.stdin.write(self.authkey + b"\n")
        self._proc.stdin.flush()  # the pipe stays open: the child exits when it closes
        self._port, self._ready = None, queue.Queue()
        threading.Thread(target=_read_ready, args=(self._proc, self._ready), daemon=True).start()

    def _wait_ready(self) -> int:
        try:
            line = self._ready.get(timeout=self.startup_timeout_s)
        except queue.Empty:
            raise WorkerStartError(f"no ready line within {self.startup_timeout_s:.0f} s") from None
        try:
            ready = json.loads(line)
            if ready.get("v") != PROTOCOL_VERSION or not ready.get("ready"):
                raise ValueError(line)
            return int(ready["port"])
        except (ValueError, KeyError, TypeError, AttributeError):
            code = self._proc.poll() if self._proc is not None else None
            raise WorkerStartError(f"it exited (code {code}) before it was ready" if line == ""
                                   else "its first line was not a ready line") from None


def _read_ready(proc: subprocess.Popen, ready: queue.Queue) -> None:
    """The child's first stdout line ("" when it exits first)."""
    ready.put(proc.stdout.readline().decode("utf-8", "replace"))


# --- the child's side ---------------------------------------------------------------

def read_stdin_key() -> bytes:
    """The key the parent wrote as stdin's first line (the line's bytes, newline dropped)."""
    line = sys.stdin.buffer.readline().strip()
    if not line:
        raise WorkerStartError("--stdin-key: stdin held no key")
    return line


def exit_when_stdin_closes() -> threading.Thread:
    """Exit this process when the parent's end of stdin closes (the parent exited or was killed)."""
    def watch() -> None:
        while sys.stdin.buffer.read(1 << 10):
            pass
        os._exit(0)  # no cleanup owed: the models are in memory only

    watcher = threading.Thread(target=watch, name="engine-parent-watch", daemon=True)
    watcher.start()
    return watcher


def announce_ready(port: int) -> None:
    """The ready line on stdout; stdout then points at stderr, so nothing else lands in the parent's pipe."""
    sys.stdout.write(json.dumps({"v": PROTOCOL_VERSION, "ready": True, "port": port, "pid": os.getpid()}) + "\n")
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())

"""Start the app (`streamlit run app.py`) on a free local port, wait until it answers, always stop it.

Shared by the browser tests and the benchmarks that drive a real browser (bench/settle.py,
bench/replica_memory.py). Operator settings (PREFILL_DECODE_*) are cleared so a run measures
the app as it ships; `extra_env` puts back the ones a caller wants.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
START_TIMEOUT_S = 90


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass(frozen=True)
class AppServer:
    url: str
    pid: int


@contextlib.contextmanager
def streamlit_server(log_path: Path | None = None, extra_env: dict[str, str] | None = None,
                     root: Path = ROOT) -> Iterator[AppServer]:
    """The running app; RuntimeError if it does not answer /_stcore/health within START_TIMEOUT_S. `root`: the
    checkout whose app.py runs (another one, to measure a change against it side by side)."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFILL_DECODE_")} | (extra_env or {})
    with open(log_path or os.devnull, "w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "app.py", "--server.address", "127.0.0.1",
             "--server.port", str(port), "--server.headless", "true", "--browser.gatherUsageStats", "false"],
            cwd=root, stdout=log, stderr=subprocess.STDOUT, env=env,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + START_TIMEOUT_S
            while True:
                try:
                    if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok":
                        break
                except OSError:
                    if time.monotonic() > deadline or proc.poll() is not None:
                        raise RuntimeError(f"streamlit did not start; see {log_path or 'its output'}") from None
                    time.sleep(0.5)
            yield AppServer(url, proc.pid)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

"""A classroom on one machine: engine worker(s), several app replicas, and HAProxy in front of them.

    .venv/bin/python deploy/classroom.py --replicas 2                # http://127.0.0.1:8500
    .venv/bin/python deploy/classroom.py --replicas 4 --workers 2 --bind 0.0.0.0 --port 80
    make classroom REPLICAS=2

What it starts, in order, and stops again (in reverse) on Ctrl-C or SIGTERM:
1. `--workers` engine workers (`python -m engine worker`, each on a free local port, one job at a time),
   sharing one random token written to a file only this user can read (never printed);
2. `--replicas` Streamlit replicas of app.py on free local ports, each a client of every worker
   (PREFILL_DECODE_ENGINE=HOST:PORT,HOST:PORT: the client sends each call to the shortest queue);
3. HAProxy from the system's packages (`apt-get install haproxy`) with deploy/haproxy.cfg.template:
   sticky sessions by cookie, websockets passed through, each replica's /_stcore/health checked.

When all of them answer it prints one line of JSON on stdout, `{"ready": true, "url": ..., "replicas":
[...], "workers": [...]}`, then watches them: a worker or a replica that exits is started again on its
own port with its own settings (one line on stderr says which), and the rest keep serving; HAProxy marks
a dead replica down within about a second and sends its visitors to another (`option redispatch`). Only
when HAProxy itself exits, or a process exits again within RESTART_WINDOW_S of its restart
MAX_RESTARTS times, does the classroom stop. The operator's other PREFILL_DECODE_* settings (models folder,
limits) pass to every process. docs/operators.md#several-replicas-behind-a-proxy says how many replicas
a class needs.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import secrets
import shutil
import signal
import socket
import string
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.contract.errors import EngineError  # noqa: E402
from engine.contract.worker.client import EngineClient  # noqa: E402

TEMPLATE = Path(__file__).with_name("haproxy.cfg.template")
START_TIMEOUT_S = 240  # a worker loads and warms the default model first (about 10 s alone, longer on busy cores)
RESTART_WINDOW_S = 60.0  # a process that exits again this soon after a restart counts towards MAX_RESTARTS
MAX_RESTARTS = 5  # restarts in a row, each within the window, before the classroom gives up
WATCH_S = 0.5  # how often the processes are looked at


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(check, timeout_s: float, what: str, procs: list[subprocess.Popen]) -> None:
    """Poll `check()` until it is true; RuntimeError after `timeout_s` or when a started process exits."""
    deadline = time.monotonic() + timeout_s
    while not check():
        dead = [" ".join(map(str, p.args[:4])) for p in procs if p.poll() is not None]
        if dead or time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not start" + (f" ({dead[0]} exited)" if dead else ""))
        time.sleep(0.3)


def worker_answers(port: int, token: bytes) -> bool:
    """The engine worker on `port` answers a ping with this classroom's token."""
    try:
        EngineClient(("127.0.0.1", port), token, connect_timeout_s=2.0).ping()
        return True
    except (EngineError, OSError, EOFError):
        return False


def healthy(url: str) -> bool:
    try:
        return urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok"
    except OSError:
        return False


def haproxy_config(bind: str, port: int, replica_ports: list[int]) -> str:
    """The proxy's config: the template with this set's address and one `server` line per replica."""
    servers = "\n".join(f"    server r{i} 127.0.0.1:{p} check inter 500ms fall 2 rise 1 cookie r{i}"
                        for i, p in enumerate(replica_ports, start=1))
    return string.Template(TEMPLATE.read_text(encoding="utf-8")).substitute(bind=bind, port=port, servers=servers)


def child_env(extra: dict[str, str]) -> dict[str, str]:
    """This environment (the operator's settings) with the engine's address and token file set."""
    return {k: v for k, v in os.environ.items() if k not in ("PREFILL_DECODE_ENGINE", "PREFILL_DECODE_ENGINE_TOKEN")} \
        | extra


@dataclasses.dataclass
class Watched:
    """A started process: its name in the log, how to start it again, when it last started, its restarts."""

    name: str
    args: list[str]
    env: dict[str, str]
    started: float = dataclasses.field(default_factory=time.monotonic)
    restarts: int = 0


class Classroom:
    """The started processes (workers, replicas, the proxy), stopped in reverse order by `stop()`."""

    def __init__(self, folder: Path, log=None) -> None:
        self.folder, self.log = folder, log
        self.procs: list[subprocess.Popen] = []
        self.watched: dict[int, Watched] = {}  # id(proc) -> what started it, to start it again
        self.token_file = folder / "engine-token"
        self.token_file.touch(mode=0o600)
        self.token = secrets.token_urlsafe(32)
        self.token_file.write_text(self.token + "\n", encoding="utf-8")

    def start(self, args: list[str], env: dict[str, str], name: str = "") -> subprocess.Popen:
        proc = subprocess.Popen(args, cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
                                stdout=self.log or subprocess.DEVNULL, stderr=subprocess.STDOUT)
        self.procs.append(proc)
        self.watched[id(proc)] = Watched(name or args[-1], args, env)
        return proc

    def pids(self) -> dict[str, int]:
        """Each running process's pid by its name ("the replica on 8501"): for an operator; a test kills one."""
        return {self.watched[id(p)].name: p.pid for p in self.procs if id(p) in self.watched}

    def watch_once(self) -> str | None:
        """Start again every worker and replica that exited (same port, same settings); None while the
        classroom serves, else why it cannot go on (HAProxy stopped, or a process keeps exiting)."""
        for i, proc in enumerate(self.procs):
            if proc.poll() is None:
                continue
            watched = self.watched.pop(id(proc))
            if watched.name == "haproxy":
                return "haproxy stopped"
            now = time.monotonic()
            watched.restarts = watched.restarts + 1 if now - watched.started < RESTART_WINDOW_S else 1
            if watched.restarts > MAX_RESTARTS:
                return f"{watched.name} exited {MAX_RESTARTS} times in a row"
            print(f"{watched.name} exited (code {proc.returncode}); starting it again", file=sys.stderr, flush=True)
            self.start(watched.args, watched.env, watched.name)
            self.procs[i] = self.procs.pop()  # start() appended it: it takes the dead one's place (stop's order)
            self.watched[id(self.procs[i])].restarts = watched.restarts
        return None

    def workers(self, count: int) -> list[str]:
        """Start `count` engine workers; their HOST:PORT addresses once each accepts connections."""
        ports = [free_port() for _ in range(count)]
        for port in ports:
            self.start([sys.executable, "-m", "engine", "worker", "--host", "127.0.0.1", "--port", str(port),
                        "--token-file", str(self.token_file)], child_env({}), f"the engine worker on {port}")
        for port in ports:
            wait_until(lambda p=port: worker_answers(p, self.token.encode()), START_TIMEOUT_S,
                       f"the engine worker on port {port}", self.procs)
        return [f"127.0.0.1:{p}" for p in ports]

    def replicas(self, count: int, engines: list[str]) -> list[int]:
        """Start `count` app replicas, clients of `engines`; their ports once each is healthy."""
        ports = [free_port() for _ in range(count)]
        env = child_env({"PREFILL_DECODE_ENGINE": ",".join(engines),
                         "PREFILL_DECODE_ENGINE_TOKEN_FILE": str(self.token_file)})
        for port in ports:
            self.start([sys.executable, "-m", "streamlit", "run", "app.py", "--server.address", "127.0.0.1",
                        "--server.port", str(port), "--server.headless", "true",
                        "--browser.gatherUsageStats", "false"], env, f"the replica on {port}")
        for port in ports:
            wait_until(lambda p=port: healthy(f"http://127.0.0.1:{p}"), START_TIMEOUT_S, f"the replica on {port}",
                       self.procs)
        return ports

    def proxy(self, bind: str, port: int, replica_ports: list[int], haproxy: str) -> str:
        """Write the proxy's config, check it (`haproxy -c`), start HAProxy; its URL once it is healthy."""
        cfg = self.folder / "haproxy.cfg"
        cfg.write_text(haproxy_config(bind, port, replica_ports), encoding="utf-8")
        subprocess.run([haproxy, "-c", "-q", "-f", str(cfg)], check=True)
        self.start([haproxy, "-db", "-f", str(cfg)], dict(os.environ), "haproxy")
        url = f"http://127.0.0.1:{port}"
        wait_until(lambda: healthy(url), 30, "haproxy", self.procs)
        return url

    def stop(self) -> None:
        for proc in reversed(self.procs):
            proc.terminate()
        for proc in reversed(self.procs):
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=2, help="app replicas (about one per core; default 2)")
    parser.add_argument("--workers", type=int, default=1, help="engine workers (one per GPU; default 1)")
    parser.add_argument("--bind", default="127.0.0.1", help="the proxy's address (0.0.0.0: every network)")
    parser.add_argument("--port", type=int, default=8500, help="the proxy's port (default 8500)")
    parser.add_argument("--log", default="", help="a file for every process's output (default: none)")
    args = parser.parse_args(argv)
    if not 1 <= args.replicas <= 64 or not 1 <= args.workers <= 16:
        parser.error("--replicas is 1 to 64 and --workers 1 to 16")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    haproxy = shutil.which("haproxy")
    if haproxy is None:
        print("error: haproxy is not installed (Debian: apt-get install haproxy)", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # stopped like Ctrl-C: the finally below runs
    with tempfile.TemporaryDirectory(prefix="classroom-") as folder, \
            open(args.log or os.devnull, "a", encoding="utf-8") as log:
        room = Classroom(Path(folder), log)
        try:
            engines = room.workers(args.workers)
            ports = room.replicas(args.replicas, engines)
            url = room.proxy(args.bind, args.port, ports, haproxy)
            print(json.dumps({"ready": True, "url": url, "replicas": [f"http://127.0.0.1:{p}" for p in ports],
                              "workers": engines, "pids": room.pids()}), flush=True)
            while (why := room.watch_once()) is None:
                time.sleep(WATCH_S)
            print(f"error: {why}; stopping the rest", file=sys.stderr)
            return 1
        except (RuntimeError, subprocess.CalledProcessError) as err:
            print(f"error: {err}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            return 0
        finally:
            room.stop()


if __name__ == "__main__":
    sys.exit(main())

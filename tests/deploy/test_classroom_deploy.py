"""deploy/classroom.py: two app replicas behind HAProxy, both clients of one engine worker, driven through the proxy.

The whole set starts as an operator starts it (`make classroom` runs the same script): the proxy answers
the health check, a new browser gets a sticky cookie naming its replica, and each replica, reached through
the proxy by its cookie, serves a whole lesson page over Streamlit's websocket (the timeline figure drawn
from a run the worker measured). Needs HAProxy from the system's packages; .ci/run installs it.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from email.message import Message
from pathlib import Path

import pytest

from bench.app_server import free_port
from bench.classroom import Hold, open_session
from deploy.classroom import healthy

ROOT = Path(__file__).resolve().parents[2]
READY_TIMEOUT_S = 400  # a worker and two replicas start on a busy 2-core machine

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("haproxy") is None,
                                 reason="haproxy is not installed (Debian: apt-get install haproxy; .ci/run does)")]


def ready_line(proc: subprocess.Popen) -> dict:
    """The script's ready line (JSON), read from a thread so a stuck start fails the test instead of hanging."""
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: lines.put(proc.stdout.readline()), daemon=True).start()
    try:
        line = lines.get(timeout=READY_TIMEOUT_S)
    except queue.Empty:
        raise AssertionError("deploy/classroom.py was not ready in time") from None
    assert line, f"deploy/classroom.py stopped: {proc.stderr.read()[-2000:]}"
    return json.loads(line)


@pytest.fixture(scope="module")
def classroom(tmp_path_factory):
    log = tmp_path_factory.mktemp("classroom") / "classroom.log"
    port = free_port()
    proc = subprocess.Popen([sys.executable, "deploy/classroom.py", "--replicas", "2", "--workers", "1",
                             "--port", str(port), "--log", str(log)], cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        yield ready_line(proc) | {"log": log, "proc": proc}
    finally:
        proc.terminate()
        assert proc.wait(timeout=60) == 0  # everything it started is stopped with it


def get(url: str, cookie: str = "") -> tuple[bytes, Message]:
    """The body and the headers (looked up in any case: HAProxy writes the ones it adds in lower case)."""
    request = urllib.request.Request(url, headers={"Cookie": cookie} if cookie else {})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return answer.read(), answer.headers


def test_the_proxy_answers_and_pins_a_new_browser_to_a_replica(classroom):
    assert classroom["ready"] and len(classroom["replicas"]) == 2 and len(classroom["workers"]) == 1
    body, headers = get(classroom["url"] + "/_stcore/health")
    assert body == b"ok"
    page, headers = get(classroom["url"] + "/")
    assert b"<html" in page.lower()
    cookies = [c.split(";")[0] for c in headers.get_all("Set-Cookie", [])]
    cookie = next(c for c in cookies if c.startswith("PDREPLICA="))  # PDREPLICA=rN: every later request goes there
    assert cookie == f"PDREPLICA={headers['X-Replica']}"
    for _ in range(3):
        assert get(classroom["url"] + "/_stcore/health", cookie)[1]["X-Replica"] == headers["X-Replica"]


def test_each_replica_serves_a_whole_lesson_through_the_proxy(classroom):
    """One websocket session per replica, sent there by its cookie: each gets the page and its figure."""

    async def both():
        hold = Hold(2)
        tasks = [asyncio.create_task(open_session(classroom["url"], False, hold, {"Cookie": f"PDREPLICA={name}"}))
                 for name in ("r1", "r2")]
        await hold.all_arrived.wait()
        hold.release.set()
        return await asyncio.gather(*tasks)

    # In a thread of its own: a test process may already hold a running event loop (playwright's, after the
    # browser lane), and asyncio.run refuses to start inside one.
    with ThreadPoolExecutor(max_workers=1) as pool:
        sessions = pool.submit(lambda: asyncio.run(both())).result()
    assert [s.replica for s in sessions] == ["r1", "r2"]  # sticky: each went where its cookie says
    for session in sessions:
        assert session.ok, session.errors  # its page settled, the timeline drawn, no error or exception
    assert "Traceback" not in classroom["log"].read_text(errors="replace")


def served_by(url: str, cookie: str) -> str:
    """The replica that answers a health check sent with `cookie` ("" when none answers)."""
    try:
        return get(url + "/_stcore/health", cookie)[1]["X-Replica"] or ""
    except OSError:
        return ""


def gone(pid: int) -> bool:
    """The process has exited (or is a zombie its parent has not reaped yet)."""
    try:
        return "zombie" in Path(f"/proc/{pid}/status").read_text().split("State:")[1].split("\n")[0].lower()
    except (OSError, IndexError):
        return True


def test_a_replica_killed_mid_run_is_started_again_and_the_class_keeps_serving(classroom):
    """Last but one in this file: it kills r2 of the shared classroom while a session on it runs."""
    url, port = classroom["url"], classroom["replicas"][1].rsplit(":", 1)[1]
    pid = classroom["pids"][f"the replica on {port}"]

    async def killed_mid_run():
        hold = Hold(1)
        session = asyncio.create_task(open_session(url, True, hold, {"Cookie": "PDREPLICA=r2"}))
        await asyncio.sleep(3.0)  # its page is drawing, or its run measuring
        os.kill(pid, signal.SIGKILL)
        hold.release.set()
        return await asyncio.wait_for(session, 300)

    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(lambda: asyncio.run(killed_mid_run())).result()  # it ends (with its error), never hangs
        began, answers = time.monotonic(), []
        while not (gone(pid) and healthy(classroom["replicas"][1])):  # started again on its own port
            answers.append(served_by(url, "PDREPLICA=r2"))  # r2's visitors meanwhile: r2 held, or r1
            assert time.monotonic() - began < READY_TIMEOUT_S, answers[-5:]
            time.sleep(0.5)
        assert all(answers), answers  # every request of a visitor of the dead replica was answered
        assert classroom["proc"].poll() is None  # the classroom did not stop for it
    assert served_by(url, "PDREPLICA=r1") == "r1" and healthy(url)  # the rest of the class: served as before
    print(f"r2 back {time.monotonic() - began:.0f} s after its kill; its visitors' requests answered by "
          f"{sorted(set(answers))}")


def test_a_killed_worker_is_started_again_on_its_port_while_the_replicas_serve(classroom):
    """Last in this file: the engine worker killed; the replicas serve on, and it listens again."""
    port = classroom["workers"][0].rsplit(":", 1)[1]
    pid = classroom["pids"][f"the engine worker on {port}"]
    os.kill(pid, signal.SIGKILL)
    assert healthy(classroom["url"])  # the replicas serve on while the worker starts again
    began = time.monotonic()
    while not (gone(pid) and listens(int(port))):
        assert time.monotonic() - began < READY_TIMEOUT_S
        time.sleep(0.5)
    assert classroom["proc"].poll() is None  # the classroom did not stop for it


def listens(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        return True
    except OSError:
        return False

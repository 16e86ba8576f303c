"""The app as a client of the engine worker.

What it proves: the page says its place in the worker's queue and that its run waited; a page
stopped while it waits (rerun or closed: AppTest stops it as Streamlit does) takes its run out of
the queue; a worker that refuses this server's token is said in the page's language, with no token
on the page; a killed local worker is replaced, the page says so, nothing else is lost and the next
run is good; eight sessions at once each get their own tokens. (That the app's own process imports no
torch, on every page and action: tests/app/test_app_no_torch.py.)

Two kinds of worker: the app's own local one (a child process, as `make app` runs it: the `app`
fixture of conftest.py), and one served from this test process's threads that the app reaches as a
remote worker (PREFILL_DECODE_ENGINE with its token), whose runner a Gate holds, so the queue tests
do not depend on the machine's speed.
"""

from __future__ import annotations

import os
import signal
import threading
import time
import xml.etree.ElementTree as ET
from contextlib import closing
from pathlib import Path
from types import SimpleNamespace

import pytest
from streamlit.testing.v1 import AppTest

from app_support import frame, resources
from engine.contract.config import settings_from_env
from engine.contract.results import GenerationConfig
from engine.contract.serving.workloads import questions
from engine.contract.worker.client import Done, Queued, Started, Waiting
from engine.contract.worker.errors import WorkerAuthError, WorkerRestarted
from engine.contract.worker.protocol import ModelRef
from lesson.messages import error_message
from lesson.text import t
from tests.app.apptest import APP, assert_healthy, needs_model, shown_trace, texts

WAIT_S = 120.0  # generous: a loaded 2-core machine; every wait ends as soon as its condition holds
PAGE_MODEL = ModelRef("default", "auto", "auto")  # what the page names the default model by (device, dtype: auto)


def wait_for(condition, timeout_s: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


@pytest.fixture
def held_engine(thread_engine):
    """The session's worker in this process's threads (conftest.thread_engine), its gate closed."""
    thread_engine.gate.reset()
    yield thread_engine
    thread_engine.gate.opened.set()  # never leave the runner held for the next test


@pytest.fixture
def remote_page(monkeypatch, held_engine):
    """A page whose engine is `held_engine` (PREFILL_DECODE_ENGINE and its token), its first view drawn."""
    monkeypatch.setenv("PREFILL_DECODE_ENGINE", held_engine.address)
    monkeypatch.setenv("PREFILL_DECODE_ENGINE_TOKEN", held_engine.key)
    monkeypatch.setenv("PREFILL_DECODE_MAX_NEW_TOKENS", "8")
    monkeypatch.setenv("PREFILL_DECODE_REPEATS", "1")
    held_engine.gate.reset()
    page = AppTest.from_file(APP, default_timeout=180).run()
    assert_healthy(page)
    yield page
    held_engine.gate.opened.set()  # never leave the runner held for the next test
    wait_for(lambda: len(held_engine.worker.queue) == 0)


def hold_runner(engine) -> threading.Thread:
    """Another visitor's measured run: a gate call from a thread, waited for until it runs."""
    thread = threading.Thread(target=lambda: list(engine.client.call("gate", {})), daemon=True)
    thread.start()
    assert engine.gate.entered.wait(WAIT_S)
    return thread


# --- the queue ----------------------------------------------------------------------

@needs_model
def test_a_run_behind_another_visitors_run_waits_its_turn_and_says_it_waited(remote_page, held_engine):
    remote_page.slider(key="output_len").set_value(3)
    remote_page.checkbox(key="ignore_eos").check().run()
    other = hold_runner(held_engine)
    remote_page.button(key="run").click()
    page_run = threading.Thread(target=remote_page.run)
    page_run.start()
    wait_for(lambda: len(held_engine.worker.queue) == 2)  # the other visitor's run, then this page's
    held_engine.gate.opened.set()
    page_run.join(WAIT_S)
    other.join(WAIT_S)
    assert_healthy(remote_page)
    assert len(shown_trace(remote_page)["steps"]) == 3
    assert t("zh", "engine_queue_waited", ahead=1) in texts(remote_page, "caption")


@needs_model
def test_a_page_stopped_while_it_waits_takes_its_run_out_of_the_queue(remote_page, held_engine):
    hold_runner(held_engine)
    most, watching = [0], threading.Event()

    def watch() -> None:
        while not watching.is_set():
            most[0] = max(most[0], len(held_engine.worker.queue))
            time.sleep(0.002)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    remote_page.button(key="run").click()
    with pytest.raises(RuntimeError, match="timed out"):  # AppTest stops the script as Streamlit does on a rerun
        remote_page.run(timeout=10)
    wait_for(lambda: len(held_engine.worker.queue) == 1)  # only the other visitor's run is left
    watching.set()
    watcher.join()
    assert most[0] == 2  # the page's run was queued, and left


@needs_model
def test_a_visitor_who_joins_a_run_under_way_gets_it_whole_and_its_ttft_bar_says_why_it_has_the_engines_parts(
        remote_page, held_engine):
    """Identical work is measured once, and a visitor may join it while it runs: that visitor pressed Run after
    the run's clock started, so its queue reads below zero. Its TTFT bar drew an error there (100 sessions
    pressing Run at once: 20 of them); it draws the engine's parts and says why."""
    other = AppTest.from_file(APP, default_timeout=180).run()  # a second visitor, the same settings
    assert_healthy(other)
    model = held_engine.worker.models.loaded(PAGE_MODEL)
    with model.lock:  # the first visitor's run starts, and waits for the model inside its measurement
        remote_page.button(key="run").click()
        first = threading.Thread(target=remote_page.run)
        first.start()
        wait_for(lambda: held_engine.worker.queue.running is not None)
        time.sleep(0.05)  # the second visitor presses Run later than the run's clock started
        other.button(key="run").click()
        second = threading.Thread(target=other.run)
        second.start()
        wait_for(lambda: len(held_engine.worker.queue.running.waiters) == 2)  # it joined the run under way
    first.join(WAIT_S)
    second.join(WAIT_S)
    for page in (remote_page, other):
        assert_healthy(page)
    assert shown_trace(other)["steps"] == shown_trace(remote_page)["steps"]  # one measurement, whole for both
    assert t("zh", "engine_measured_once", n=2, time="")[:8] in texts(other, "caption") + texts(other, "info")
    other.toggle(key="raw_svg_ttft_parts").set_value(True).run()
    (bar,) = [c.value for c in other.code if c.language == "xml" and "ttft-parts" in c.value[:300]]
    words = "".join(ET.fromstring(bar).itertext()).replace(" ", "")
    assert t("zh", "ttft_parts_only_engine_unclocked")[:20] in words


def test_the_queue_place_counts_down_and_is_cleared_when_the_run_starts():
    drawn = []
    slot = SimpleNamespace(info=lambda words, icon=None: drawn.append(words), empty=lambda: drawn.append(None))
    place = frame.QueuePlace("en", slot)
    for event in (Queued(2), Waiting(), Queued(1), Started(), Waiting()):
        place(event)
    assert drawn == [t("en", "engine_queue_place", ahead=2)] * 2 + [t("en", "engine_queue_place_one"), None, None]
    assert place.waited == 2 and "2 runs are ahead of yours" in drawn[0]


@needs_model
def test_a_worker_that_refuses_the_token_is_said_in_the_pages_language(monkeypatch, held_engine):
    wrong = "x" * 32
    monkeypatch.setenv("PREFILL_DECODE_ENGINE", held_engine.address)
    monkeypatch.setenv("PREFILL_DECODE_ENGINE_TOKEN", wrong)
    page = AppTest.from_file(APP, default_timeout=180).run()
    assert not page.exception
    assert error_message(WorkerAuthError(held_engine.address), "zh") in texts(page, "error")
    shown = "\n".join(texts(page, kind) for kind in ("error", "markdown", "caption", "info", "warning"))
    assert wrong not in shown and held_engine.key not in shown


# --- the app's own local worker ---------------------------------------------------------

def gone(pid: int) -> bool:
    """The process has exited (a zombie until its parent reaps it counts as gone)."""
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


@needs_model
def test_a_killed_worker_is_replaced_the_page_says_so_and_nothing_else_is_lost(app):
    first = app.session_state["run_id"]  # the first view, kept for every visitor
    local = resources.client().local
    old = resources.client().ping()["pid"]  # the page's answers may all be kept: make sure its worker runs
    assert old == local.pid
    os.kill(old, signal.SIGKILL)
    wait_for(lambda: gone(old))
    app.button(key="run").click().run()
    assert not app.exception
    assert error_message(WorkerRestarted(-signal.SIGKILL, False), "zh") in texts(app, "error")
    assert app.session_state["run_id"] == first  # the page still shows its run
    app.button(key="run").click().run()  # on the new worker
    assert_healthy(app)
    assert local.pid != old and app.session_state["run_id"] != first  # measured anew
    other = AppTest.from_file(APP, default_timeout=180).run()
    assert other.session_state["run_id"] == first  # another visitor's first view: kept, not measured again


@needs_model
def test_eight_sessions_at_once_each_get_their_own_tokens(app):
    settings = settings_from_env()
    ref = resources.get_model("default", settings.device, settings.dtype).ref
    cfg = GenerationConfig(max_new_tokens=4, ignore_eos=True)
    prompts = questions()[:8]
    tokens: dict[str, tuple[int, ...]] = {}

    def session(prompt: str) -> None:  # a session's thread: the run panel's call, through the app's one client
        with closing(resources.stream_runs(ref, prompt, cfg, repeats=1, max_prompt_tokens=256)) as events:
            tokens[prompt] = next(e.result for e in events if isinstance(e, Done))[0].output_ids

    threads = [threading.Thread(target=session, args=(prompt,)) for prompt in prompts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT_S)
    assert sorted(tokens) == sorted(prompts)
    for prompt in prompts:  # each its own answer: the one it gets alone
        assert tokens[prompt] == resources.client().generate(ref, prompt, cfg).output_ids
    assert len(set(tokens.values())) > 1

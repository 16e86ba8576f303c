"""Helpers for driving the app through Streamlit's AppTest: the script paths, the skip mark for
tests that need the embedded default model, readers of what a run put on the page, and the scan of
installed components done once per test process (`scan_components_once`)."""

from __future__ import annotations

import functools
import json

import pytest

from tests.factories import HAS_DEFAULT_MODEL, ROOT

APP = str(ROOT / "app.py")
LESSON = "app_pages/lesson.py"
LAB = "app_pages/bottleneck_lab.py"
SERVING_LAB = "app_pages/serving_lab.py"
EXERCISES = "app_pages/exercises.py"

needs_model = pytest.mark.skipif(not HAS_DEFAULT_MODEL, reason="the embedded default model is not built yet")


def texts(at, kind: str) -> str:
    """Every element of `kind` ("markdown", "caption", "header", ...) on the page, one per line."""
    return "\n".join(str(e.value) for e in getattr(at, kind))


def stored_run(at):
    """The run the page shows: the session's id looked up in the process's run store (app_support/run_store.py;
    AppTest runs the page in this process)."""
    from app_support import run_store

    return run_store.store().get(at.session_state["run_id"])


def kept(at, key: str):
    """The value of the store whose id the session keeps under `key` ("sl_runs", "sl_probe"), or None."""
    from app_support import run_store

    return run_store.store().get(at.session_state[key]) if key in at.session_state else None


def shown_trace(at) -> dict:
    """The run the page shows, its trace as plain data (what its JSON download holds)."""
    return json.loads(stored_run(at).trace.to_json())


def put_run(at, trace, headline=None, origin: str = "measured", args=None):
    """Make `trace` (with its repeats' `headline`) the session's run, as the run panel stores one; returns it.
    `args`: the arguments it ran with (by default the stored run's before, so the page does not call it stale)."""
    from app_support import run_store

    before = stored_run(at) if at.session_state["run_id"] else None
    run = run_store.StoredRun(trace, args or (before.args if before else None), origin, "20250601-120000",
                              headline=headline)
    at.session_state["run_id"] = run_store.store().put(run)
    return run


def read_on(at):
    """Press the lesson's "read on" button, as the page does when the reader scrolls near it
    (app_support/sections.read_on): from this run on the whole lesson is drawn. Returns `at`."""
    return at.button(key="read_on").click().run()


def assert_healthy(at) -> None:
    """No exception and no error message on the page."""
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


@pytest.fixture
def fresh_settings():
    """The server's settings read afresh: resources.server_settings' cached read is forgotten before the
    test and after it, so the page reads the environment the test set (monkeypatch.setenv before the page
    first reads it) and the next test reads its own. Automatic in tests/app/ (its conftest); elsewhere
    import it and ask for it. Its value forgets the read once more, for a change made after a page ran."""
    from app_support import resources

    resources.server_settings.clear()
    yield resources.server_settings.clear
    resources.server_settings.clear()


def serving_lab_page(monkeypatch, env: dict[str, str]):
    """Yield a session on the serving lab of a server with `env` set (read afresh: `fresh_settings`):
    the body of the serving lab fixtures."""
    from streamlit.testing.v1 import AppTest

    for name, value in env.items():
        monkeypatch.setenv(name, value)
    at = AppTest.from_file(APP, default_timeout=300)
    at.run()
    at.switch_page(SERVING_LAB).run()
    yield at


def scan_components_once() -> None:
    """Every AppTest run asks Streamlit to scan the installed packages for components (their metadata
    parsed, about 0.5 CPU-s a time here, more than most pages cost to draw); the packages do not change
    during a test session, so the first scan's answer is kept for the rest. Idempotent."""
    from streamlit.components.v2 import manifest_scanner

    scan = manifest_scanner.scan_component_manifests
    if not hasattr(scan, "cache_info"):
        manifest_scanner.scan_component_manifests = functools.lru_cache(maxsize=1)(scan)


def num_deltas(at) -> int:
    """How many elements the page sent: every element and every block (a container, a column, an expander)
    under the page's roots, each one websocket message (a Streamlit delta) from the server to the browser."""
    def count(node) -> int:
        return sum(1 + count(child) for child in getattr(node, "children", {}).values())

    return sum(count(root) for root in at._tree.children.values())

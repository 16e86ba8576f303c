"""The lanes' exit codes: `make test` and `make test-fast` fail when pytest fails or collects no test (its exit
5), and .ci/run stops at the first command that fails. pytest itself is stood in for by `sh -c 'exit N'`
(the Makefile's PYTEST variable), so no test suite runs here."""

from __future__ import annotations

import os
import shutil
import subprocess
from types import SimpleNamespace

import pytest

from bench.ci_under_load import Burners, pytest_summary
from tests.conftest import (
    ONE_PROCESS_FOLDERS, PRIORITY, FolderOrFile, costliest_units_first, pytest_runtest_setup, work_unit,
)
from tests.factories import ROOT

needs_make = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def make_with_pytest_exiting(target: str, code: int) -> subprocess.CompletedProcess:
    # setup's stamp is older than pyproject.toml after an edit: -o keeps make from reinstalling here
    return subprocess.run(["make", "-o", "setup", "-o", ".venv/.installed", "-o", "browser-deps", target,
                           f"PYTEST=sh -c 'exit {code}'"], cwd=ROOT, capture_output=True, text=True, timeout=60)


@needs_make
@pytest.mark.parametrize("target", ["test", "test-fast"])
@pytest.mark.parametrize("code, fails", [(0, False), (1, True), (5, True)])
def test_a_lane_fails_when_pytest_fails_or_collects_nothing(target, code, fails):
    done = make_with_pytest_exiting(target, code)
    assert (done.returncode != 0) == fails, (done.stdout, done.stderr)
    assert ("error: no tests ran" in done.stdout) == (code == 5)


def test_ci_stops_at_the_first_failure_and_runs_lint_then_every_test():
    lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert "set -euo pipefail" in lines  # any failing command (make lint, make test) fails the run
    assert lines.index("make lint") < lines.index("make test")
    assert lines[-1] == "make test"


def test_the_lanes_hand_out_whole_files_and_the_one_process_folders_whole():
    app = "tests/app/"
    assert work_unit("tests/app/test_app.py::test_x[a]") == work_unit("tests/app/test_slide_kit.py::test_y") == app
    assert work_unit("tests/browser/test_svg_browser.py::test_z") == "tests/browser/"
    assert work_unit("tests/engine/test_cli.py::test_a") == work_unit("tests/engine/test_cli.py::test_b[1]")
    assert work_unit("tests/engine/test_cli.py::test_a") != work_unit("tests/engine/test_cost.py::test_a")
    assert all((ROOT / folder).is_dir() for folder in ONE_PROCESS_FOLDERS)
    assert FolderOrFile._split_scope(None, "tests/app/test_app.py::test_x") == app
    # the lanes ask for that scheduler (tests/conftest.py makes it for --dist loadfile), handing units out in order
    for target in ("test", "test-fast"):
        done = subprocess.run(["make", "-n", "-o", "setup", "-o", ".venv/.installed", "-o", "browser-deps", target],
                              cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert "--dist loadfile --no-loadscope-reorder" in done.stdout, done.stdout


def fake_item(nodeid: str, slow: bool = False) -> SimpleNamespace:
    return SimpleNamespace(nodeid=nodeid, get_closest_marker=lambda name: object() if slow and name == "slow" else None)


def test_the_costliest_units_are_handed_out_first_each_in_its_own_order():
    ids = [("tests/engine/test_a.py::one", False), ("tests/engine/test_a.py::two", True),
           ("tests/browser/test_x.py::x", True), ("tests/lesson/test_b.py::one", True),
           ("tests/lesson/test_b.py::two", True), ("tests/lesson/test_b.py::three", False),
           ("tests/app/test_y.py::y", False), ("tests/test_c.py::c", False), ("tests/engine/test_d.py::d", True)]
    order = [item.nodeid for item in costliest_units_first([fake_item(*pair) for pair in ids])]
    assert order == ["tests/app/test_y.py::y", "tests/browser/test_x.py::x",  # the one-process folders
                     "tests/lesson/test_b.py::one", "tests/lesson/test_b.py::two", "tests/lesson/test_b.py::three",
                     "tests/engine/test_a.py::one", "tests/engine/test_a.py::two",  # one slow test: collection order
                     "tests/engine/test_d.py::d", "tests/test_c.py::c"]


def test_a_test_process_leaves_the_browser_lanes_priority_for_its_next_unit():
    try:
        os.setpriority(os.PRIO_PROCESS, 0, PRIORITY - 1)
    except PermissionError:
        pytest.skip("raising a priority needs root here")
    try:
        pytest_runtest_setup(fake_item("tests/browser/test_x.py::x"))
        assert os.getpriority(os.PRIO_PROCESS, 0) == PRIORITY - 1  # still in the browser lane
        pytest_runtest_setup(fake_item("tests/engine/test_a.py::one"))
        assert os.getpriority(os.PRIO_PROCESS, 0) == PRIORITY
    finally:
        os.setpriority(os.PRIO_PROCESS, 0, PRIORITY)


def test_the_ci_under_load_bench_reads_pytests_summary_and_holds_its_burners_to_the_target():
    log = "lint ok\n" + "=" * 10 + " 1 failed, 3650 passed, 2 skipped in 612.30s (0:10:12) " + "=" * 10 + "\n"
    assert pytest_summary(log) == "1 failed, 3650 passed, 2 skipped"
    assert pytest_summary("3497 passed in 107.54s (0:01:47)\n") == "3497 passed"
    assert pytest_summary("make: *** [Makefile:66: lint] Error 1\n") == "no pytest summary"
    burners = Burners(target=4.0, most=1)
    try:
        burners.adjust(4.2)  # near the target: nothing to do
        assert burners.procs == []
        burners.adjust(2.0)
        burners.adjust(2.0)  # at most `most`
        assert len(burners.procs) == 1 and burners.procs[0].poll() is None
        burners.adjust(5.0)
        assert burners.procs == []
    finally:
        burners.close()
    quiet = Burners(target=0.0, most=4)
    quiet.adjust(0.0)
    assert quiet.procs == []


def make_dry_run(*args: str) -> str:
    done = subprocess.run(["make", "-n", "-o", "setup", "-o", ".venv/.installed", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, env={k: v for k, v in os.environ.items()
                                                                           if k != "PORT"})
    assert done.returncode == 0, done.stderr
    return done.stdout


@needs_make
def test_make_app_listens_on_port_and_the_classroom_keeps_its_own_default():
    """`make app` ignored PORT= (only `make classroom` read it): a second app on 8501 could not be moved."""
    assert "--server.port 8501" in make_dry_run("app")
    assert "--server.port 8502" in make_dry_run("app", "PORT=8502")
    assert "--port 8500" in make_dry_run("classroom")  # the classroom's proxy keeps its default
    assert "--port 9000" in make_dry_run("classroom", "PORT=9000")

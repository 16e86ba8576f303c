"""The lanes' exit codes: `make test` and `make test-fast` fail when pytest fails or collects no test (its exit
5), and .ci/run stops at the first command that fails. pytest itself is stood in for by `sh -c 'exit N'`
(the Makefile's PYTEST variable), so no test suite runs here."""

from __future__ import annotations

import shutil
import subprocess

import pytest

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

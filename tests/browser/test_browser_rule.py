"""CI's rule for the real-browser tests: with PREFILL_DECODE_REQUIRE_BROWSER=1, a missing
chromium fails every browser test loudly; without it, they skip. Checked by running the
browser modules in a child pytest that is pointed at a chromium that does not exist."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.factories import ROOT

BROWSER_MODULES = (
    "tests/browser/test_app_browser.py", "tests/browser/test_svg_browser.py", "tests/browser/test_classroom_browser.py",
)


def run_browser_tests(tmp_path: Path, require: bool) -> tuple[int, dict[str, int]]:
    """(exit code, {"tests", "failures", "errors", "skipped"}) of the browser modules without a browser."""
    env = {**os.environ, "PREFILL_DECODE_CHROMIUM": str(tmp_path / "no-chromium")}
    env.pop("PREFILL_DECODE_REQUIRE_BROWSER", None)
    if require:
        env["PREFILL_DECODE_REQUIRE_BROWSER"] = "1"
    report = tmp_path / f"report_{require}.xml"
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}",
                          *BROWSER_MODULES], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    suite = ET.parse(report).getroot().find("testsuite")
    return out.returncode, {k: int(suite.get(k)) for k in ("tests", "failures", "errors", "skipped")}


@pytest.mark.slow
@pytest.mark.parametrize("require", [True, False])
def test_every_browser_test_fails_in_ci_and_skips_elsewhere(tmp_path, require):
    code, counts = run_browser_tests(tmp_path, require)
    assert counts["tests"] >= 8, counts  # every test was collected: none vanished in a module-level skip
    if require:
        assert code == 1 and counts["skipped"] == 0, counts
        assert counts["failures"] + counts["errors"] == counts["tests"], counts
    else:
        assert code == 0 and counts["skipped"] == counts["tests"], counts

"""A bench script runs as `python bench/NAME.py`, which puts bench/ first on sys.path: a file there named like a
standard-library module (a queue.py there did) replaces that module for every bench script and everything it
imports."""

from __future__ import annotations

import sys

from tests.factories import ROOT


def test_no_bench_file_shadows_a_standard_module():
    names = {path.stem for path in (ROOT / "bench").glob("*.py")}
    assert names & set(sys.stdlib_module_names) == set()

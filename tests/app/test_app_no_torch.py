"""No torch in the app's process, on every page and action: tests/app/no_torch_tour.py, in a fresh interpreter,
opens every page and runs every lab action (the lesson's run and its cache comparison, the roofs, a sweep,
the engine modes, every serving policy, the probe of a real server with stretched prompts, an exercise),
then reports the heavy modules it imported: none, since every pass and every token count is the worker's. Its
lesson's first view and Run are kept in the history (two runs): the app's process ran no model, the worker did."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.app.apptest import needs_model
from tests.factories import ROOT

SMALL = {"PREFILL_DECODE_MAX_NEW_TOKENS": "4", "PREFILL_DECODE_MAX_PROMPT_TOKENS": "64", "PREFILL_DECODE_REPEATS": "1",
         "PREFILL_DECODE_SWEEP_MAX_POSITIONS": "64", "PREFILL_DECODE_SWEEP_MAX_BATCH": "4",
         "PREFILL_DECODE_SERVING_MAX_REQUESTS": "4", "PREFILL_DECODE_SERVING_MAX_NEW_TOKENS": "8",
         "PREFILL_DECODE_SERVING_MAX_PROMPT_TOKENS": "64"}


@pytest.mark.slow
@needs_model
def test_no_page_and_no_action_imports_torch_or_transformers():
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFILL_DECODE_")} | SMALL
    done = subprocess.run([sys.executable, "tests/app/no_torch_tour.py"], capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=1500)
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-3000:])
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["heavy"] == [], report
    assert {"lesson: run", "lesson: 2 runs kept", "bottleneck lab: sweep", "bottleneck lab: engine modes",
            "serving lab: every policy", "serving lab: probe a real server"} <= set(report["steps"]), report["steps"]

"""Every page and every lab action in one app process; prints which of torch / transformers it imported.

Run by tests/app/test_app_no_torch.py in a fresh interpreter (the test process itself holds torch):
    python tests/app/no_torch_tour.py
The app's local engine worker is a child process: what it imports is its own. The tour uses small
settings (the environment the test gives) so every action is short; each step must leave the page
without an exception. Its last line is JSON: {"heavy": [...], "steps": [...]}.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from streamlit.testing.v1 import AppTest  # noqa: E402

from tests.fake_server import misbehaving  # noqa: E402

HEAVY = ("torch", "transformers", "safetensors", "tokenizers")
LAB, SERVING_LAB, EXERCISES = "app_pages/bottleneck_lab.py", "app_pages/serving_lab.py", "app_pages/exercises.py"
WORKLOAD = ('{"arrival_ms": 0, "prompt": "法国的首都是", "max_new_tokens": 3}\n'
            '{"arrival_ms": 5, "prompt": "日本的首都是", "max_new_tokens": 3, "prompt_tokens": 24}')


def checked(at: AppTest, step: str, steps: list[str]) -> AppTest:
    """The page after `step`: no exception on it (else the tour stops with its message)."""
    if at.exception:
        raise SystemExit(f"{step}: {[e.value for e in at.exception]}")
    steps.append(step)
    return at


def lesson(at: AppTest, steps: list[str]) -> None:
    checked(at.run(), "lesson: first view", steps)
    checked(at.button(key="run").click().run(), "lesson: run", steps)
    if at.error:  # the run measured, not refused
        raise SystemExit(f"lesson: run: {[e.value for e in at.error]}")
    steps.append(f"lesson: {len(at.session_state['history'])} runs kept")  # the first view's and the Run's
    checked(at.button(key="read_on").click().run(), "lesson: read on (the sections below the first screen)", steps)
    checked(at.button(key="show_difference").click().run(), "lesson: show the difference", steps)
    if any(b.key == "cache_compare" for b in at.button):
        checked(at.button(key="cache_compare").click().run(), "lesson: cache on vs off", steps)
    checked(at.toggle(key="classroom").set_value(True).run(), "lesson: classroom mode", steps)
    checked(at.button(key="class_next").click().run(), "lesson: classroom step", steps)
    checked(at.toggle(key="classroom").set_value(False).run(), "lesson: classroom mode off", steps)


def bottleneck_lab(at: AppTest, steps: list[str]) -> None:
    checked(at.switch_page(LAB).run(), "bottleneck lab: open", steps)
    checked(at.button(key="lab_measure_again").click().run(), "bottleneck lab: roofs measured again", steps)
    checked(at.select_slider(key="lab_sweep_up_to").set_value(32).run(), "bottleneck lab: sweep size", steps)
    checked(at.button(key="lab_sweep_run").click().run(), "bottleneck lab: sweep", steps)
    if any(b.key == "cache_compare" for b in at.button):
        checked(at.button(key="cache_compare").click().run(), "bottleneck lab: cache on vs off", steps)
    checked(at.button(key="modes_run").click().run(timeout=600), "bottleneck lab: engine modes", steps)


def serving_lab(at: AppTest, steps: list[str]) -> None:
    checked(at.switch_page(SERVING_LAB).run(), "serving lab: open", steps)
    checked(at.radio(key="sl_source").set_value("jsonl").run(), "serving lab: pasted workload", steps)
    checked(at.text_area(key="sl_jsonl").set_value(WORKLOAD).run(), "serving lab: workload typed", steps)
    checked(at.button(key="sl_run").click().run(timeout=600), "serving lab: every policy", steps)
    with misbehaving() as url:  # a real server's probe, its prompts stretched to prompt_tokens by the worker
        at.text_input(key="sl_probe_endpoint").set_value(url)
        at.text_input(key="sl_probe_model").set_value("toy")
        checked(at.button(key="sl_probe_run").click().run(), "serving lab: probe a real server", steps)


def exercises(at: AppTest, steps: list[str]) -> None:
    checked(at.switch_page(EXERCISES).run(), "exercises: open", steps)
    for choice in [r for r in at.radio if str(r.key).startswith("ex_answer_")][:1]:  # a choice answered
        choice.set_value(choice.options[0]).run()
    if any(b.key == "ex_lock" and not b.disabled for b in at.button):
        checked(at.button(key="ex_lock").click().run(), "exercises: answer locked", steps)


def main() -> int:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    steps: list[str] = []
    for tour in (lesson, bottleneck_lab, serving_lab, exercises):
        tour(at, steps)
    print(json.dumps({"heavy": sorted(m for m in HEAVY if m in sys.modules), "steps": steps}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The browser's timing goals, which no test compares: steps, the replay's pace, the first screen.

    python -m bench.browser_timing [--no-run]

Runs the four browser tests that record their seconds in tests/artifacts/ (in one pytest session: one
Streamlit server, one chromium), then reads what they recorded and prints each against its goal:

- a classroom step by key, the median of seven: under 1 s, and their p95: at most 0.5 s (test_app_browser.py);
- a presenter-view step, the median of 30 per projector size, and their p95: each at most 0.5 s
  (test_presenter_browser.py);
- the replay at "1 s a pass": each gap between passes within 0.5-4 s (test_compare_browser.py);
- on a reload, the widgets within 3 s of the text (test_presenter_browser.py).

The tests themselves check only what load cannot move (every step seen, in order, the figure's place).
Each row also prints the ratio of the measured seconds to the goal's (to the pace, for the replay).
`--no-run` reads the files of an earlier run. Exits 1 when a goal is missed or a file is missing.
"""

from __future__ import annotations

import argparse
import ast
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "tests" / "artifacts"
TESTS = (
    "tests/browser/test_app_browser.py::test_classroom_steps_with_the_keyboard",
    "tests/browser/test_presenter_browser.py::test_the_presenter_view_fits_each_figure_keeps_its_height_and_steps_fast",
    "tests/browser/test_presenter_browser.py::"
    "test_the_first_screen_at_1440x900_shows_the_whole_timeline_and_the_widgets_come_with_the_text",
    "tests/browser/test_compare_browser.py::test_the_replay_paces_the_tokens_and_says_it_is_a_replay",
)


def numbers(text: str) -> list[float]:
    return [float(word) for word in text.split()]


def presenter_steps(path: Path) -> list[float]:
    line = next(line for line in path.read_text().splitlines() if line.startswith("steps (s): "))
    return numbers(line.removeprefix("steps (s): "))


def p95(values: list[float]) -> float:
    """The 95th percentile, interpolated between the sorted values (of seven steps: near the slowest)."""
    return statistics.quantiles(values, n=20, method="inclusive")[18]


def rows() -> list[tuple[str, float, float, str, bool]]:
    """(what, measured seconds, the goal's seconds, goal, met) for every recorded measurement."""
    out = []
    steps = numbers((ARTIFACTS / "classroom_step_seconds.txt").read_text())
    classroom = statistics.median(steps)
    out.append(("classroom step, median", classroom, 1.0, "< 1.0 s", classroom < 1.0))
    out.append(("classroom step, p95", p95(steps), 0.5, "<= 0.5 s", p95(steps) <= 0.5))
    for size in ("1280x720", "1024x768"):
        steps = presenter_steps(ARTIFACTS / f"presenter_{size}.txt")
        median = statistics.median(steps)
        out.append((f"presenter step {size}, median", median, 0.5, "<= 0.5 s", median <= 0.5))
        out.append((f"presenter step {size}, p95", p95(steps), 0.5, "<= 0.5 s", p95(steps) <= 0.5))
    for i, gap in enumerate(numbers((ARTIFACTS / "replay_seconds.txt").read_text()), start=1):
        out.append((f"replay gap {i} -> {i + 1} (1 s a pass)", gap, 1.0, "0.5-4 s", 0.5 < gap < 4.0))
    seen = ast.literal_eval((ARTIFACTS / "first_screen_seconds.txt").read_text())
    gap = seen["widgets"] - seen["text"]
    out.append(("first screen: widgets after text", gap, 3.0, "< 3.0 s", gap < 3.0))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-run", action="store_true", help="read the files an earlier run left")
    args = parser.parse_args()
    if not args.no_run:
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *TESTS], cwd=ROOT)
        if done.returncode != 0:
            print("the browser tests failed: see above")
            return 1
    try:
        measured = rows()
    except (OSError, StopIteration, KeyError, ValueError, SyntaxError) as err:
        print(f"a recorded measurement is missing or unreadable ({err}); run without --no-run")
        return 1
    print(f"| {'measurement':<36} | {'s':>6} | {'goal':<8} | {'s / goal':>8} | met |")
    print(f"|{'-' * 38}|{'-' * 8}|{'-' * 10}|{'-' * 10}|-----|")
    for what, seconds, limit, goal, met in measured:
        print(f"| {what:<36} | {seconds:6.2f} | {goal:<8} | {seconds / limit:8.2f} | {'yes' if met else 'MISSED'} |")
    return 0 if all(met for *_, met in measured) else 1


if __name__ == "__main__":
    sys.exit(main())

"""Where the classroom's stepping stands, and where a clicker's next / back take it.

A run of `total` forward passes is stepped pass 1 .. total. One step past the last pass is the run's
end: the screen says what comes next (the same prompt stretched, or nothing) instead of starting it,
so a clicker pressed once too often never starts a 1024-token run the lecturer did not ask for. Only
"next" pressed again at the end starts what the screen named; "back" at the end returns to the last pass.

Pure: the page keeps the position in its session (app_support/stepping.py, app_support/presenter.py).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ClassPosition:
    """The passes shown (1 .. total) and whether the stepping stands past the last one (the run's end)."""

    step: int
    at_end: bool = False


def clamped(position: ClassPosition, total: int) -> ClassPosition:
    """`position` within a run of `total` passes: the end only right after its last pass (a stale end
    mark from a run before, whose step a new run set back to 1, is dropped)."""
    step = max(1, min(total, position.step))
    return ClassPosition(step, position.at_end and step == total)


def step_forward(position: ClassPosition, total: int, next_offered: bool) -> tuple[ClassPosition, bool]:
    """(the position after "next", whether "next" now starts what comes after this run). At the last
    pass "next" goes to the end; at the end it starts what comes next, if anything does (`next_offered`)."""
    here = clamped(position, total)
    if here.at_end:
        return here, next_offered
    if here.step == total:
        return ClassPosition(total, at_end=True), False
    return ClassPosition(here.step + 1), False


def step_back(position: ClassPosition, total: int) -> ClassPosition:
    """The position after "back": from the end to the last pass, else a pass back (never before pass 1)."""
    here = clamped(position, total)
    if here.at_end:
        return ClassPosition(total)
    return ClassPosition(max(1, here.step - 1))

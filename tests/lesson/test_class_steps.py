"""The classroom's stepping past a run's last pass (lesson/class_steps.py): "next" at the last pass stands at
the run's end and starts nothing; only "next" at the end starts what comes next (the stretched prompt, a
1024-token run the lecturer must not start by one press too many), and "back" at the end is the last pass."""

from __future__ import annotations

import pytest

from lesson.class_steps import ClassPosition, clamped, step_back, step_forward


def test_next_walks_the_passes_then_stops_at_the_end_without_starting_anything():
    position, started = ClassPosition(1), False
    seen = []
    for _ in range(3):
        position, started = step_forward(position, 3, next_offered=True)
        seen.append((position, started))
    assert seen == [(ClassPosition(2), False), (ClassPosition(3), False), (ClassPosition(3, at_end=True), False)]


@pytest.mark.parametrize("offered", [True, False])
def test_next_at_the_end_starts_only_what_is_offered_and_stays_there(offered):
    assert step_forward(ClassPosition(3, at_end=True), 3, next_offered=offered) == (ClassPosition(3, True), offered)


def test_back_from_the_end_is_the_last_pass_and_never_before_the_first():
    assert step_back(ClassPosition(3, at_end=True), 3) == ClassPosition(3)
    assert step_back(ClassPosition(3), 3) == ClassPosition(2)
    assert step_back(ClassPosition(1), 3) == ClassPosition(1)


def test_a_stale_end_of_an_earlier_run_is_dropped():
    # a new run set the step back to 1 (or a longer run came): its end mark belonged to the run before
    assert clamped(ClassPosition(1, at_end=True), 9) == ClassPosition(1)
    assert clamped(ClassPosition(3, at_end=True), 9) == ClassPosition(3)
    assert clamped(ClassPosition(10**9), 4) == ClassPosition(4)
    assert step_forward(ClassPosition(3, at_end=True), 9, next_offered=True) == (ClassPosition(4), False)

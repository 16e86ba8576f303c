"""First screens first (app_support/first_screens.py): the rest of a page waits while another session is
still before its first figure, never longer than its bound, and a session that fails still stops counting."""

from __future__ import annotations

import threading
import time

import pytest

from app_support import first_screens


def test_the_rest_waits_for_an_opening_session_and_goes_on_when_it_has_its_figure():
    drawn, released = threading.Event(), []

    def opening_session():
        with first_screens.opening(True):
            drawn.wait(5)

    other = threading.Thread(target=opening_session)
    other.start()
    while first_screens.opening_now() == 0:
        time.sleep(0.001)
    waiter = threading.Thread(target=lambda: released.append(first_screens.after_first_figure(5.0)))
    waiter.start()
    time.sleep(0.05)
    assert waiter.is_alive() and not released  # still waiting: the other session has no figure yet
    drawn.set()
    other.join(5)
    waiter.join(5)
    assert released == [True] and first_screens.opening_now() == 0


def test_the_wait_is_bounded_and_zero_never_waits():
    with first_screens.opening(True):
        assert first_screens.after_first_figure(0.01) is False  # gave up: the page goes on
        assert first_screens.after_first_figure(0) is False
    assert first_screens.after_first_figure(0) is True


def test_a_session_that_fails_stops_counting_and_a_later_run_is_not_counted():
    with pytest.raises(RuntimeError), first_screens.opening(True):
        raise RuntimeError("the page broke before its figure")
    assert first_screens.opening_now() == 0
    with first_screens.opening(False):
        assert first_screens.opening_now() == 0


def test_the_rest_of_a_page_is_drawn_a_few_sessions_at_a_time_and_never_waits_forever():
    inside, most, lock, go = [0], [0], threading.Lock(), threading.Event()

    def session():
        with first_screens.rest_of_page(5.0):
            with lock:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
            go.wait(5)
            with lock:
                inside[0] -= 1

    threads = [threading.Thread(target=session) for _ in range(first_screens.REST_AT_ONCE + 3)]
    for thread in threads:
        thread.start()
    time.sleep(0.1)
    assert inside[0] == first_screens.REST_AT_ONCE  # the others wait their turn
    go.set()
    for thread in threads:
        thread.join(5)
    assert most[0] == first_screens.REST_AT_ONCE and inside[0] == 0
    held = [first_screens.rest_of_page(5.0) for _ in range(first_screens.REST_AT_ONCE)]
    for turn in held:
        turn.__enter__()
    began = time.monotonic()
    with first_screens.rest_of_page(0.05):  # every place taken: after its bound it goes on without one
        assert time.monotonic() - began >= 0.05
    for turn in held:
        turn.__exit__(None, None, None)

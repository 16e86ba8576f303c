"""One forward pass at a time: the classroom's stepping and the slow-motion replay of the last run.

Both show the stored run (app_support/run_store.py) as far as the passes shown so far: a RunView
(view_of), cut at draw time and never written back, and every figure draws that view on the whole
run's axes (RunView.full), so stepping never rescales a figure. The run panel reads the replay's
position once per page run (replay_step) into `replay_shown` (app_support/state.py).

    classroom mode  the teacher steps by hand: sidebar buttons (classroom_controls), or the keyboard
    replay          the run's own measured token times, stretched to a pace (lesson.runs.REPLAY_PACES);
                    replay_tick() at the end of the page starts the timer that draws its next pass
"""

from __future__ import annotations

import time

import streamlit as st

from lesson.class_steps import ClassPosition, step_back, step_forward
from lesson.runs import REPLAY_PACES, replay_position, replay_times_s
from lesson.text import t

from . import presenter, run_store
from .class_position import class_position, end_note, keep_position, position_words
from .run_store import RunView, StoredRun
from .ui import classroom_keyboard

REPLAY_HOLD_S = 1.0  # the whole answer stays up this long before the replay ends
REPLAY_TIMER_S = 0.1  # how often the browser asks whether the replay's next pass is due


# --- what the page shows now ------------------------------------------------------------

def view_of(run: StoredRun) -> RunView:
    """The stored run as this page run shows it: as far as the replay has come while it runs, the classroom's
    step in classroom mode, else the whole run. The one place the shown step is decided."""
    ss = st.session_state
    if ss.pending_class_step is not None:  # a link's step (app_support/links.py): set once the run it steps is stored
        ss.class_step, ss.pending_class_step = ss.pending_class_step, None
    replay = ss.replay_shown
    if not ss.classroom and replay is None:
        return run_store.whole_view(run)
    step = replay if replay is not None else int(ss.class_step)
    return RunView(run, max(1, min(step, run.num_passes)), stepping=True)


# --- classroom mode: the teacher steps ------------------------------------------------------

def classroom_controls(lang: str, slot) -> None:
    """Buttons at the top of the sidebar (always in reach while the teacher scrolls),
    pressed also by the keyboard: → / Page Down, ← / Page Up, Home, End (ui.classroom_keyboard)."""
    run = run_store.current()
    if not st.session_state.classroom or run is None:
        return
    total = run.num_passes
    with slot:
        st.toggle(t(lang, "presenter"), key="presenter", help=t(lang, "presenter_help"))
        if st.session_state.presenter:  # the presenter view steps with its own buttons, which the keys press
            presenter.sidebar_controls(lang)
            st.caption(t(lang, "presenter_keys"))
            classroom_keyboard()
            st.divider()
            return
        position = class_position(total)
        stretched = presenter.stretch_offered(total, total)  # what comes after this run's last pass, if anything
        _next_button(lang, position, total, stretched)
        st.button(t(lang, "classroom_prev"), key="class_prev", width="stretch", icon=":material/skip_previous:",
                  on_click=_class_back, args=(total,))
        st.button(t(lang, "classroom_reset"), key="class_reset", width="stretch", icon=":material/first_page:",
                  on_click=_set_class_step, args=(1, total, False))
        st.button(t(lang, "classroom_all"), key="class_all", width="stretch", icon=":material/last_page:",
                  on_click=_set_class_step, args=(total, total, False))
        with st.container(key="class_position"):  # browser tests read the step here
            st.progress(position.step / total, text=position_words(lang, position, run.trace))
        if position.at_end:
            end_note(lang, total, stretched)
        st.caption(t(lang, "classroom_keys"))
        classroom_keyboard()
        st.divider()
    if st.session_state.pop("class_stepped", False):
        nonce = f"// {time.time():.3f}"  # new content each step: the browser runs it again
        st.html(f"\n<script>\n{nonce}\n{BRING_STEPPED_FIGURE_JS}\n</script>\n", unsafe_allow_javascript=True)


# After a step: the timeline (the figure stepped) brought up to the window's top when the page is scrolled
# above it, so its new pass is on screen (at 1280x720 the first screen showed its first row only); a
# lecturer who scrolled down to another figure stays there. Fixed code, no user text.
BRING_STEPPED_FIGURE_JS = """setTimeout(function () {
  var box = document.querySelector('.st-key-figure-timeline');
  if (!box) { return; }
  var r = box.getBoundingClientRect();
  if (r.top > 0 && r.bottom > window.innerHeight) { box.scrollIntoView({block: 'start'}); }
}, 80);"""


def _set_class_step(value: int, total: int, relative: bool) -> None:
    """Button callback: runs before the page, so every part shows the same step."""
    current = max(1, min(total, int(st.session_state.class_step)))
    st.session_state.class_step = max(1, min(total, current + value if relative else value))
    st.session_state.class_at_end = False
    st.session_state.class_stepped = True


def _next_button(lang: str, position: ClassPosition, total: int, stretched: int | None) -> None:
    """"Next": a pass on, or the run's end after its last pass; at the end, the stretched prompt if it is
    offered (named on the button and in the note above it), else nothing (the button is off)."""
    if position.at_end and stretched is not None:
        st.button(t(lang, "classroom_stretch", num_tokens=stretched), key="class_next", type="primary",
                  width="stretch", icon=":material/compare_arrows:", on_click=_class_next, args=(total, True))
    else:
        st.button(t(lang, "classroom_step"), key="class_next", type="primary", width="stretch",
                  icon=":material/skip_next:", on_click=_class_next, args=(total, False), disabled=position.at_end)


def _class_next(total: int, next_offered: bool) -> None:
    position, start_next = step_forward(class_position(total), total, next_offered)
    if start_next:
        st.session_state.class_at_end = False
        presenter.stretch()
        return
    keep_position(position)
    st.session_state.class_stepped = True


def _class_back(total: int) -> None:
    keep_position(step_back(class_position(total), total))
    st.session_state.class_stepped = True


# --- the replay: the run's measured token times, stretched -------------------------------------

# The replay's clock (wall seconds): one name, so a test can hold it still and move it by hand, and the
# passes it shows do not depend on how fast that machine draws a page.
replay_clock = time.time


def replay_step(run: StoredRun | None) -> int | None:
    """The passes the replay shows now (None: no replay). Read once per page run (run_panel),
    so every figure on the page shows the same pass; a finished replay ends itself."""
    ss = st.session_state
    if ss.replay_from is None or run is None or ss.classroom:
        ss.replay_from = None
        return None
    times = replay_times_s(run.trace, ss.replay_pace)
    elapsed, last = replay_clock() - ss.replay_from, ss.replay_last
    if elapsed > times[-1] + REPLAY_HOLD_S and last == len(times):
        ss.replay_from, ss.replay_finished = None, len(times)
        return None
    position = replay_position(times, elapsed)
    fixed = REPLAY_PACES[ss.replay_pace][0] == "fixed"
    if last is not None and position > last and (fixed or position == len(times)):
        # Even when the page draws slower than the pace: a fixed pace shows every pass, each for its full
        # time, and any pace shows the whole answer for its hold before the replay ends.
        position = last + 1 if fixed else position
        ss.replay_from = replay_clock() - times[position - 1]
    ss.replay_last = position
    return position


def _start_replay() -> None:
    st.session_state.replay_from, st.session_state.replay_last = replay_clock(), None


def _stop_replay() -> None:
    st.session_state.replay_from = None


def replay_controls(lang: str) -> None:
    """Pace and start / stop, under the answer. Off in classroom mode (the teacher steps by hand)."""
    if st.session_state.classroom or run_store.current() is None:
        return
    with st.container(horizontal=True, vertical_alignment="bottom"):  # one block, not three (test_page_size)
        st.selectbox(t(lang, "replay_pace"), list(REPLAY_PACES), key="replay_pace",
                     format_func=lambda key: t(lang, f"replay_pace_{key}"), help=t(lang, "replay_pace_help"),
                     placeholder=t(lang, "choose_option"))
        if st.session_state.replay_shown is None:
            st.button(t(lang, "replay_start"), key="replay_start", icon=":material/slow_motion_video:",
                      on_click=_start_replay)
        else:
            st.button(t(lang, "replay_stop"), key="replay_stop", icon=":material/stop:", on_click=_stop_replay)


def replay_tick() -> None:
    """Last on the page: while a replay runs, note when its next pass is due and start the timer
    (_replay_timer) that draws the page again then.

    Not st.rerun() at the end of each run: Streamlit removes what an earlier run drew and a later
    one did not only when a run ends without a rerun, so a replay drawn by reruns kept the finished
    run's banner, a second summary and the start button on screen for its whole length."""
    ss = st.session_state
    run = run_store.current()
    if ss.replay_shown is None or ss.replay_from is None or run is None:
        return
    times = replay_times_s(run.trace, ss.replay_pace)
    elapsed = replay_clock() - ss.replay_from
    upcoming = [when for when in (*times, times[-1] + REPLAY_HOLD_S + 0.05) if when > elapsed]
    ss.replay_due_at = ss.replay_from + (upcoming[0] if upcoming else elapsed)
    _replay_timer()


@st.fragment(run_every=REPLAY_TIMER_S)
def _replay_timer() -> None:
    """Runs with the page (the next pass is not due yet: nothing to do), then every REPLAY_TIMER_S
    on its own; once the next pass is due, the whole page is drawn again. The page stops calling
    it when the replay ends, and Streamlit then stops its timer."""
    ss = st.session_state
    if ss.replay_from is not None and replay_clock() >= ss.replay_due_at:
        ss.replay_due_at = float("inf")  # one redraw per pass, however many ticks land before it starts
        st.rerun()

"""Where the classroom's stepping stands (st.session_state.class_step and class_at_end, read through
lesson.class_steps) and the words for it: shared by the sidebar's stepping (stepping.py) and the presenter
view (presenter.py), so both say the same at the run's end."""

from __future__ import annotations

import streamlit as st

from engine.contract.trace import RequestTrace
from lesson.class_steps import ClassPosition, clamped
from lesson.run_words import pass_phase
from lesson.text import t


def class_position(total: int) -> ClassPosition:
    """Where the classroom's stepping stands in a run of `total` passes."""
    ss = st.session_state
    return clamped(ClassPosition(int(ss.class_step), bool(ss.class_at_end)), total)


def keep_position(position: ClassPosition) -> None:
    st.session_state.class_step, st.session_state.class_at_end = position.step, position.at_end


def position_words(lang: str, position: ClassPosition, trace: RequestTrace) -> str:
    """"Showing forward pass 2 of 3 (Decode 1)" (a verify pass: "Verify 1", zh 验证 1: lesson.run_words.pass_phase),
    or at the run's end "End of this run: all 3 passes shown"."""
    total = len(trace.steps)
    if position.at_end:
        return t(lang, "classroom_end_position", total=total)
    step = position.step
    return t(lang, "classroom_position", shown=step, total=total, phase=pass_phase(trace, step, lang))


def end_note(lang: str, total: int, stretched: int | None, presenting: bool = False) -> None:
    """At the run's end: what the next "next" does (the stretched prompt, or nothing), and that ← goes back."""
    if stretched is None:
        st.info(t(lang, "classroom_end_nothing", total=total), icon=":material/flag:")
    elif presenting:  # the presenter view runs nothing: the run panel is on the lesson page
        st.info(t(lang, "presenter_end_next", total=total, num_tokens=stretched), icon=":material/flag:")
    else:
        st.info(t(lang, "classroom_end_next", total=total, num_tokens=stretched), icon=":material/flag:")

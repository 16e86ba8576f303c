"""The presenter view (classroom mode): one of the lesson's figures per screen, stepped a forward pass at a time.

In classroom mode the sidebar's "presenter view" switch replaces the lesson page's body with this view:
a row of controls (the pass before / after, where the stepping stands) and the figure, drawn landscape
in the classroom's type (PRESENTER_WIDTH units wide) and scaled by the page's CSS to fit the window
(ui.PRESENTER_CSS: 1280x720 and 1024x768 without scrolling). The sidebar picks the figure and holds its
speaker notes, the lesson's sentence for that figure (lesson.slides.LESSON_FIGURES). Every figure keeps
the whole run's size at every pass (its `full=`), so nothing moves while stepping.

The view is a fragment: a step redraws it alone, not the whole lesson page (a step then takes well
under 0.5 s). The keys press its buttons (ui.CLASSROOM_KEYS: → Space Enter Page Down next, ← Page Up
Backspace back, Home / End the first and last pass, ↓ ↑ the figure: the page is drawn again for another
figure, Esc leaves the view). After the last pass "next" stands at the run's end, which says what comes next.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import streamlit as st

from engine.contract.trace import RequestTrace
from lesson.alt_text import figure_alt, with_run_note
from lesson.diagrams import DIAGRAMS, RUN_NOTED, render_animation
from lesson.slides import LESSON_FIGURES
from lesson.spread import run_label
from lesson.style import classroom_style
from lesson.text import t

from lesson.class_steps import ClassPosition, step_back, step_forward
from lesson.inputs import is_default_prompt

from . import pass_floors, run_store, state
from .class_position import class_position, end_note, keep_position, position_words
from .resources import server_settings
from .run_store import RunView, StoredRun
from .ui import error_boundary

PRESENTER_WIDTH = 1280  # units: a landscape figure in the classroom's type, for a 16:9 or 4:3 projector
STEPLESS = ("ttft_parts",)  # TTFT is over after the first pass: nothing to step through, not a presenter figure
# (figure, its section's heading, the lesson's sentence for it): the lesson's figures a run draws, in order
FIGURES = tuple((figure, title, notes) for figure, title, _, notes in LESSON_FIGURES
                if figure in DIAGRAMS and figure not in STEPLESS)


@functools.lru_cache(maxsize=256)
def presenter_svg(name: str, view: RunView, lang: str, run_note: str = "",
                  floors_ms: tuple[float, ...] | None = None) -> tuple[str, str]:
    """(the figure of the passes `view` shows on the whole run's axes and size, its alt text); `run_note`:
    which of the run's repeats it is (lesson.spread.run_label), on the figures that say it (RUN_NOTED).

    The animation is its still frame at the step (lesson.diagrams.animation, still=True): the passes
    shown so far, the last one framed and its caption shown, so it says the pass the controls name
    (looping, it started again at Prefill whatever the step)."""
    trace, full = view.trace, view.whole
    style = classroom_style(width=PRESENTER_WIDTH)
    noted = {"run_note": run_note} if run_note and name in RUN_NOTED else {}
    if name == "animation":
        svg = render_animation(trace, lang=lang, full=full, style=style, still=True, **noted)
    else:  # the timeline draws each pass's floor (`floors_ms`, on this machine's roofs) over its bar
        floors = {"floors_ms": floors_ms} if floors_ms is not None and name == "timeline" else {}
        svg = DIAGRAMS[name](trace, lang=lang, full=full, style=style, **noted, **floors)
    return svg, with_run_note(figure_alt(name, trace, lang), noted.get("run_note", ""))


def shown_passes(total: int) -> int:
    """The classroom's step, within the run."""
    return max(1, min(total, int(st.session_state.class_step)))


def stretch_offered(step: int, total: int) -> int | None:
    """At the last pass of the lesson's own example (its short prompt, not stretched yet), the next step
    is the stretched prompt ("show the difference": the same prompt after the lesson's sentences, at the
    server's longest): the prompt length it runs at, else None."""
    longest = server_settings().limits.max_prompt_tokens
    run = run_store.current()
    if step < total or _widget_value("prompt_len") or not is_default_prompt(_widget_value("prompt")) or run is None:
        return None
    return longest if run.trace.prompt_len < longest else None


def _widget_value(key: str):
    """A run panel's widget value, also where the page does not draw the panel (the presenter view's
    fragment, whose runs do not put back what Streamlit forgot: state.keep_widget_values)."""
    ss = st.session_state
    return ss[key] if key in ss else ss.get(state.KEPT, {}).get(key, state.DEFAULTS[key])


def stretch() -> None:
    """The next step after the default example: its prompt stretched and run (the run starts at Prefill)."""
    st.session_state.class_at_end = False
    state.show_the_difference(server_settings().limits)


def _step(value: int, total: int, relative: bool) -> None:
    current = shown_passes(total)
    keep_position(ClassPosition(max(1, min(total, current + value if relative else value))))


def _next(total: int) -> None:
    """→ in the presenter view: a pass on, and after the last pass the run's end, which says what comes
    next; nothing starts from here (the run panel is on the lesson page)."""
    keep_position(step_forward(class_position(total), total, next_offered=False)[0])


def _back(total: int) -> None:
    keep_position(step_back(class_position(total), total))


def _leave() -> None:
    """Esc: back to the scrolling lesson page (the toggle's value, set before the page draws it)."""
    st.session_state.presenter = False


def _figure(delta: int) -> None:
    index = int(st.session_state.presenter_figure) if isinstance(st.session_state.presenter_figure, int) else 0
    st.session_state.presenter_figure = max(0, min(len(FIGURES) - 1, index + delta))


@st.fragment
def presenter_view(lang: str, run: StoredRun, link_box: Callable[[], None] | None = None) -> None:
    """The pass controls and the figure at the classroom's step; a step redraws this alone, and with it
    `link_box`, the sidebar's link to this view (drawn from the fragment, which Streamlit allows for a
    container the fragment also wrote on the page's full run), so the link's step is the step shown."""
    ss = st.session_state
    total = run.num_passes
    if ss.pending_class_step is not None:  # a link's step (app_support/links.py), as the lesson page applies it
        ss.class_step, ss.pending_class_step, ss.class_at_end = ss.pending_class_step, None, False
    _figure(0)  # a forged or stale figure number back in range
    name = FIGURES[ss.presenter_figure][0]
    _pass_controls(lang, total, run.trace)
    step = shown_passes(total)
    with error_boundary(lang, "err_diagram"):
        run_note = run_label(run.headline, lang)  # the stored run: which repeat
        floors_ms = pass_floors.step_floors_ms(run.trace) if name == "timeline" else None
        svg, alt = presenter_svg(name, RunView(run, step, stepping=True), lang, run_note, floors_ms)
        with st.container(key="presenter-figure"):  # ui.PRESENTER_CSS fits it to the window
            st.image(svg, width="stretch", alt=alt)
    if link_box is not None:
        link_box()


def _pass_controls(lang: str, total: int, trace: RequestTrace) -> None:
    """One row: the pass before (← / Page Up), where the stepping stands, the pass after (→ / Page Down).
    Past the last pass (the run's end) the middle says what comes next instead of the progress bar."""
    position = class_position(total)
    with st.container(key="presenter-controls"):
        back, middle, forward = st.columns([1, 3, 1], vertical_alignment="center")
        back.button(t(lang, "presenter_prev"), key="pres_prev", icon=":material/skip_previous:",
                    help=t(lang, "presenter_prev_help"), on_click=_back, args=(total,), width="stretch")
        with middle.container(key="presenter-position"):  # browser tests read the step here
            if position.at_end:
                end_note(lang, total, stretch_offered(total, total), presenting=True)
            else:
                st.progress(position.step / total, text=position_words(lang, position, trace))
        forward.button(t(lang, "presenter_next"), key="pres_next", icon=":material/skip_next:", type="primary",
                       help=t(lang, "presenter_next_help"), on_click=_next, args=(total,), width="stretch",
                       disabled=position.at_end)
    with st.container(key="presenter-jumps"):  # Home / End press these (hidden: ui.PRESENTER_CSS)
        st.button(t(lang, "classroom_reset"), key="pres_first", on_click=_step, args=(1, total, False))
        st.button(t(lang, "classroom_all"), key="pres_last", on_click=_step, args=(total, total, False))


def sidebar_controls(lang: str) -> None:
    """In the sidebar: which figure (↑ ↓ press the hidden buttons), and that figure's speaker notes:
    the lesson's own sentence for it (trusted Markdown from lesson.text)."""
    _figure(0)
    st.radio(t(lang, "presenter_figure"), range(len(FIGURES)), key="presenter_figure",
             format_func=lambda k: t(lang, FIGURES[k][1]))
    with st.container(key="presenter-figure-keys"):  # hidden: ui.PRESENTER_CSS
        st.button(t(lang, "presenter_fig_prev_help"), key="pres_fig_prev", on_click=_figure, args=(-1,))
        st.button(t(lang, "presenter_fig_next_help"), key="pres_fig_next", on_click=_figure, args=(1,))
        # Esc presses this: outside the view's fragment, so the whole page is drawn again without the view
        st.button(t(lang, "presenter_leave"), key="pres_leave", on_click=_leave)
    with st.expander(t(lang, "presenter_notes"), icon=":material/speaker_notes:", expanded=True):
        st.markdown(t(lang, FIGURES[st.session_state.presenter_figure][2]))

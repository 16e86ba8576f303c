"""What every page shares around its body: the header, the one-shot messages, the sidebar, the model,
and the place of a page's call in the engine worker's queue.

app.py draws the header, the messages and the sidebar before the page's body; each page's
body starts by loading its model (load_model, in the engine worker), which also shows the model's
caption in the sidebar. A page whose call waits for other visitors' runs says how many are ahead
(QueuePlace).
"""

from __future__ import annotations

import datetime
import logging
from pathlib import Path

import streamlit as st

from engine.contract.config import ServerSettings
from engine.contract.worker.client import Queued, Shared, Started, Waiting
from engine.contract.worker.errors import EngineWorkerError
from lesson.formats import escape_markdown, fmt_bytes, fmt_count
from lesson.messages import error_message
from lesson.text import LANGUAGE_NAMES, LANGUAGES, t

from . import resources, state
from .ui import join_paragraphs

log = logging.getLogger("prefill_decode.app")

# (anchor, title key) in page order: the sidebar's table of contents.
CONTENTS = (
    ("timeline", "sec_timeline"), ("run", "run_title"), ("prefill", "sec_prefill"), ("decode", "sec_decode"),
    ("speculative", "spec_title"), ("blocks", "sec_blocks"), ("bottleneck", "sec_bottleneck"), ("waits", "sec_waits"),
    ("compare", "sec_compare"),
    ("many", "sec_many"), ("summary", "sec_summary"), ("animation", "sec_animation"), ("references", "sec_references"),
    ("review", "sec_review"),
)


def header(lang: str) -> None:
    with st.container(key="page-header"):  # the presenter view hides it (ui.PRESENTER_CSS)
        _header(lang)


def _header(lang: str) -> None:
    title_col, switch_col = st.columns([5, 2], vertical_alignment="bottom")
    with title_col:
        st.caption(t(lang, "kicker"))
        st.title(t(lang, "title"), anchor="top")
    with switch_col:
        st.radio(
            t(lang, "language"), LANGUAGES, key="lang", horizontal=True,
            format_func=LANGUAGE_NAMES.__getitem__, on_change=state.language_changed,
        )
        st.toggle(t(lang, "classroom"), key="classroom", help=t(lang, "classroom_help"), on_change=_classroom_changed)


def _classroom_changed() -> None:
    """Entering classroom mode starts the stepping at Prefill; leaving shows everything."""
    st.session_state.class_step = 1 if st.session_state.classroom else 10**9


def show_flash(lang: str) -> None:
    for key, params in state.pop_flash():
        params = dict(params)
        if "name_key" in params:
            params["name"] = t(lang, params.pop("name_key"))
        st.warning(t(lang, key, **{k: escape_markdown(str(v)) for k, v in params.items()}))


def sidebar(lang: str, settings: ServerSettings, contents: bool = True):
    """Settings, limits and (on the lesson page) its contents. Returns a slot at the top for the classroom buttons."""
    with st.sidebar:
        classroom_slot = st.container()
        st.subheader(t(lang, "sidebar_title"))
        choices = resources.model_choices(settings.device, settings.dtype)  # what the engine worker offers
        presets = resources.preset_choices(settings.device, settings.dtype)
        st.selectbox(
            t(lang, "model"), list(choices), key="model_choice",
            help=t(lang, "model_help"),  # options are folder names (language-neutral; "default" = embedded)
            placeholder=t(lang, "choose_option"),  # Streamlit's own is English
            format_func=lambda c: t(lang, "preset_choice", name=c) if c in presets else c,
        )
        _sampling(lang, locked=st.session_state.classroom)
        limits = settings.limits
        st.caption(t(lang, "limits", max_prompt_tokens=limits.max_prompt_tokens,
                     max_prompt_chars=limits.max_prompt_chars, max_new_tokens=limits.max_new_tokens))
        st.button(t(lang, "reset_defaults"), key="reset_defaults", help=t(lang, "reset_defaults_help"),
                  icon=":material/restart_alt:", width="stretch", on_click=state.reset_to_defaults, args=(limits,))
        if contents:
            st.markdown(join_paragraphs(f"**{t(lang, 'toc')}**",
                                        "\n".join(f"- [{t(lang, key)}](#{anchor})" for anchor, key in CONTENTS)))
    return classroom_slot


def _sampling(lang: str, locked: bool) -> None:
    """The sampling settings; classroom mode locks them (greedy, seed 0: a demo repeats exactly)."""
    with st.expander(t(lang, "sampling"), expanded=False):
        if locked:
            st.caption(t(lang, "sampling_locked"))
        st.slider(t(lang, "temperature"), 0.0, 2.0, step=0.05, key="temperature", disabled=locked)
        st.number_input(t(lang, "top_k"), 0, 1000, step=1, key="top_k", disabled=locked)
        st.slider(t(lang, "top_p"), 0.05, 1.0, step=0.05, key="top_p", disabled=locked)
        st.number_input(t(lang, "seed"), 0, 2**31 - 1, step=1, key="seed", disabled=locked)


def load_model(lang: str, settings: ServerSettings):
    """The model for this run (loaded in the engine worker: resources.EngineModel), shown with its caption,
    or None (with a message) when it cannot be loaded.

    A listed folder that fails to load sends the picker back to the default; a worker that cannot be
    reached (or was started again) leaves the picker alone: the message says what happened.
    """
    choice = st.session_state.model_choice
    try:
        with st.spinner(t(lang, "loading_model")):
            lm = resources.get_model(choice, settings.device, settings.dtype)
    except Exception as err:  # noqa: BLE001 - becomes a message, never a traceback
        log.warning("model %r failed to load: %s", choice, err)
        if choice != "default" and not isinstance(err, EngineWorkerError):
            state.flash(f"err_{err.key}" if getattr(err, "key", None) else "err_internal",
                        **_flash_params(err))
            st.session_state.reset_model_choice = True  # applied before the picker is drawn again
            st.rerun()
        st.error(error_message(err, lang))
        return None
    if lm.info.random_weights:  # a preset: said above everything its run shows
        st.warning(t(lang, "random_weights_note"), icon=":material/casino:")
    model_caption(lang, lm)
    return lm


def _flash_params(err: Exception) -> dict:
    """A load failure's params for the message shown after the rerun: its data without the engine's
    English (`reason`), a path cut to its last part; at least the error's kind."""
    params = {k: str(v) for k, v in (getattr(err, "params", None) or {}).items() if k != "reason"}
    if params.get("path"):
        params["path"] = Path(params["path"]).name
    return params or {"kind": type(err).__name__}


def model_caption(lang: str, lm) -> None:
    info = lm.info
    with st.sidebar:
        sliding = None
        if info.sliding_window is not None:  # the per-token figure above holds only until the window is full
            sliding = t(lang, "kv_sliding_window", sliding=info.num_sliding_layers, layers=info.num_layers,
                        window=f"{info.sliding_window:,}")
        st.markdown(join_paragraphs(
            t(lang, "model_in_use", model_id=escape_markdown(info.model_id),
              architecture=escape_markdown(info.architecture), num_layers=info.num_layers,
              num_params=fmt_count(info.num_params)),
            t(lang, "device_dtype", device=info.device, dtype=info.dtype,
              kv_per_token=fmt_bytes(info.kv_bytes_per_token)),
            sliding))


class QueuePlace:
    """An engine call's place in the worker's queue, said in `slot` while it waits ("2 runs are ahead of
    yours") and cleared when it starts. Give it every event of the call (an EngineClient `on_event`):
    on each heartbeat (Waiting) it redraws, and Streamlit stops a page that was rerun or closed at a
    redraw, which closes the call and takes it out of the queue. `waited`: the most runs that were ahead.
    `shared`: the worker's Shared event when one measurement served several visitors (shared_note says so)."""

    def __init__(self, lang: str, slot=None) -> None:
        self.lang = lang
        self.slot = st.empty() if slot is None else slot
        self.ahead = self.waited = 0
        self.shared: Shared | None = None

    def __call__(self, event) -> None:
        if isinstance(event, Shared):
            self.shared = event
            return
        if isinstance(event, Queued):
            self.ahead = event.ahead
            self.waited = max(self.waited, event.ahead)
        elif isinstance(event, Started):
            self.ahead = 0
        elif not isinstance(event, Waiting):
            return  # a pass or progress: the caller draws it
        if self.ahead:
            key = "engine_queue_place_one" if self.ahead == 1 else "engine_queue_place"
            self.slot.info(t(self.lang, key, ahead=self.ahead), icon=":material/hourglass_top:")
        else:
            self.slot.empty()

    def shared_note(self) -> str | None:
        """The note "measured once for N visitors at HH:MM:SS" (the server's clock); None for a run of its own."""
        if self.shared is None or self.shared.visitors < 2:
            return None
        when = datetime.datetime.fromtimestamp(self.shared.measured_at).strftime("%H:%M:%S")
        return t(self.lang, "engine_measured_once", n=self.shared.visitors, time=when)

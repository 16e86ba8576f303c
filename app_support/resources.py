"""What the page caches, and its one way to the engine: the engine worker's client.

- `client()`: one EngineClient per server process (`engine_client`, st.cache_resource), shared by
  every session (thread-safe: each call opens a connection of its own). PREFILL_DECODE_ENGINE=HOST:PORT
  names a worker started elsewhere (its token from PREFILL_DECODE_ENGINE_TOKEN_FILE or _TOKEN);
  unset, the app starts a local worker on its first call and stops it at exit. Every forward pass a
  page shows runs there, one at a time (docs/worker.md): this process imports no torch (only the
  serving lab's probe, stretching a prompt with the embedded tokenizer, loads transformers).
- `get_model`: the page's view of a model the worker holds (EngineModel: the ModelRef a call names it
  by, its ModelInfo and device), loaded and warmed there once; `model_choices`: what the worker offers.
- token splits and comparisons: `st.cache_data`, keyed by plain arguments (strings and numbers), so
  repeated demos cost nothing. A finished run is a StoredRun (app_support/run_store.py), kept once per
  process and looked up by id; the first view is one per request (`finished_run`, st.cache_resource: the
  same value to every visitor). The lesson's figures (SVGs, their words, the latency chart) are keyed by
  the RunView they draw (a stored run, hashed by identity, at a step): `functools.lru_cache`, so every
  session showing the same run gets the same drawing, without Streamlit's per-call hashing and copying.
  They are this process's: a worker that dies and is started again takes none of them with it.

Nothing cached here draws: Streamlit replays a cached function's elements, so a call that shows its
queue place (the lesson's run, the lab's sweep and modes) is made by the page (`client()`), not here.
"""

from __future__ import annotations

import datetime
import functools
import hashlib
import logging
import os
import threading
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from engine.contract import config, cost
from engine.contract.config import EngineSettings, ServerSettings, settings_from_env
from engine.contract.results import PRESET_PREFIX, GenerationConfig
from engine.contract.trace import ModelInfo
from engine.contract.worker.client import Done, EngineClient, Event
from engine.contract.worker.protocol import ModelRef
from lesson.alt_text import attention_alt, figure_alt
from lesson.diagrams import DIAGRAMS, RUN_NOTED, render_attention, render_blocks_schematic, render_cache_compare
from lesson.downloads import download_stem, run_stamp
from lesson.inputs import DEFAULT_MODEL_CHOICE
from lesson.recorded import recorded_stamp
from lesson.spread import shown_run
from lesson.style import DEFAULT_STYLE, classroom_style, phone_style

from .run_store import RunArgs, RunView, StoredRun

log = logging.getLogger("prefill_decode.app")

# A call that has heard nothing for this long tells its page (Waiting), which redraws: Streamlit stops a
# script whose page was rerun or closed only at a redraw, so its queued call is cancelled within this time.
HEARTBEAT_S = 0.25


@st.cache_resource(show_spinner=False)
def server_settings() -> ServerSettings:
    """Operator settings, read once per process from the environment."""
    return settings_from_env()


# --- the engine worker ---------------------------------------------------------------

def worker_key(settings: ServerSettings) -> tuple:
    """What decides which worker the app talks to, and what a local one reads from the environment: the
    remote address (or "" for a local worker) and its token (the file's path, a fingerprint of the
    variable's value: never the token), the models folder, presets on or off, device, dtype and torch
    threads. One value per server process; tests change them, and each gets its own client."""
    engine = EngineSettings.from_env()
    token = hashlib.sha256(config.read_text(os.environ, config.ENGINE_TOKEN).encode()).hexdigest()[:16]
    return (engine.address, config.read_text(os.environ, config.ENGINE_TOKEN_FILE), token,
            str(settings.models_dir or ""), settings.presets, settings.device, settings.dtype, engine.num_threads)


@st.cache_resource(show_spinner=False, max_entries=8, on_release=EngineClient.close)
def engine_client(key: tuple) -> EngineClient:
    """The process's client (for `key`: worker_key): a remote worker's, or a local worker's, started on the
    first call and stopped when the app exits (or when this entry is released). A server reads its settings
    once, so it holds one; up to 8 are kept so that a test process, whose tests change the settings, does
    not stop and start again the workers its other tests share (each start: torch's imports and a model)."""
    log.info("engine worker: %s", key[0] or "local (started by the app)")
    return EngineClient.from_env(heartbeat_s=HEARTBEAT_S)


def client() -> EngineClient:
    """The engine worker's client every page calls (thread-safe; see engine_client), named for this page
    session (a digest of its id), so the worker takes the visitors' runs in turns."""
    base = engine_client(worker_key(server_settings()))
    ctx = get_script_run_ctx(suppress_warning=True)  # None off a page's own thread (a background job)
    if ctx is None:
        return base
    return base.named(hashlib.sha256(ctx.session_id.encode()).hexdigest()[:12])


@dataclass(frozen=True)
class EngineModel:
    """A model the engine worker holds, as a page knows it: the name its calls give it (`ref`), its
    ModelInfo, the device it runs on (torch's name: "cpu", "cuda:0") and its load time. The weights
    and the tokenizer stay in the worker."""

    ref: ModelRef
    info: ModelInfo
    device: str
    load_ms: float

    @property
    def device_type(self) -> str:
        return self.device.split(":")[0]


def get_model(model_choice: str, device: str, dtype: str) -> EngineModel:
    """The model, loaded and warmed in the engine worker (through its queue) once per process and
    worker setting. Raises EngineError: a folder the worker refuses, a worker that cannot be reached."""
    return _loaded(worker_key(server_settings()), model_choice, device, dtype)


@st.cache_resource(show_spinner=False, max_entries=8)
def _loaded(key: tuple, model_choice: str, device: str, dtype: str) -> EngineModel:
    log.info("loading model %r on %s/%s in the engine worker", model_choice, device, dtype)
    ref = ModelRef(model_choice, device, dtype)
    described = client().load(ref)
    return EngineModel(ref, described.info, described.device, described.load_ms)


def model_choices(device: str, dtype: str) -> tuple[str, ...]:
    """The models the engine worker offers ("default", its folders, the presets it can hold), presets
    left out when this server's PREFILL_DECODE_PRESETS=0. Only "default" while the worker cannot be
    asked (the model's load then says why); a failure is not kept, the next page asks again."""
    try:
        offered = _offered(worker_key(server_settings()), device, dtype)
    except Exception as err:  # noqa: BLE001 - the default alone is a safe answer; the load shows the message
        log.warning("model choices not available: %s", err)
        return (DEFAULT_MODEL_CHOICE,)
    presets = server_settings().presets
    return tuple(c for c in offered if presets or not c.startswith(PRESET_PREFIX))


@st.cache_resource(show_spinner=False, max_entries=8)
def _offered(key: tuple, device: str, dtype: str) -> tuple[str, ...]:
    return client().model_choices(device, dtype)


def preset_choices(device: str, dtype: str) -> tuple[str, ...]:
    """The real-size presets (random weights) among model_choices, as picker choices."""
    return tuple(c for c in model_choices(device, dtype) if c.startswith(PRESET_PREFIX))


def generation_config(max_new_tokens: int, temperature: float, top_k: int, top_p: float, seed: int,
                      ignore_eos: bool) -> GenerationConfig:
    return GenerationConfig(max_new_tokens=max_new_tokens, temperature=temperature, top_k=top_k, top_p=top_p,
                            seed=seed, ignore_eos=ignore_eos)


def stream_runs(ref: ModelRef, prompt: str, cfg: GenerationConfig, *, repeats: int,
                max_prompt_tokens: int) -> Iterator[Event]:
    """One request `repeats` times in one queued call: Queued / Started / Waiting, run 1's Pass per
    forward pass, a Progress per finished run, then Done(every run's trace). Close it (a page that
    stops) and the call leaves the worker's queue, or stops at its next pass."""
    return client().stream_repeats(ref, prompt, cfg, repeats=repeats, max_prompt_tokens=max_prompt_tokens)


@st.cache_resource(show_spinner=False, max_entries=64)
def finished_run(
    model_choice: str, device: str, dtype: str, prompt: str, max_new_tokens: int,
    temperature: float, top_k: int, top_p: float, seed: int, max_prompt_tokens: int, ignore_eos: bool = False,
    repeats: int = 1,
) -> StoredRun:
    """A whole request run `repeats` times (engine.runtime.repeats, in the worker; the first view, before any
    Run, and the exercises' runs): one StoredRun per request and process, the same value to every visitor.
    Its trace is the repeat nearest the medians (lesson.spread.shown_run), with every repeat's numbers.
    Plain arguments (RunArgs.plain()): Streamlit's cache keys on them."""
    args = RunArgs(model_choice, device, dtype, prompt, max_new_tokens, temperature, top_k, top_p, seed,
                   max_prompt_tokens, ignore_eos)
    cfg = generation_config(args.max_new_tokens, args.temperature, args.top_k, args.top_p, args.seed,
                            args.ignore_eos)
    with closing(stream_runs(ModelRef(args.model_choice, args.device, args.dtype), args.prompt, cfg,
                             repeats=repeats, max_prompt_tokens=args.max_prompt_tokens)) as events:
        runs = next(event.result for event in events if isinstance(event, Done))
    trace, numbers = shown_run(runs)
    stamp = recorded_stamp(trace.provenance) if trace.provenance is not None else run_stamp(datetime.datetime.now())
    return StoredRun(trace, args, "first_view", stamp, headline=numbers)


@st.cache_data(show_spinner=False, max_entries=256)
def prompt_preview(
    model_choice: str, device: str, dtype: str, prompt: str, target_tokens: int,
) -> tuple[str, tuple[str, ...], int]:
    """(the prompt the model will get, its real token pieces, the typed prompt's token count).

    Counts and pieces are the engine's own (engine.contract.prompts.prompt_token_ids, in the worker),
    so a tokenizer's BOS shows in the split and counts toward the target.
    A target above the typed prompt's length extends it with filler text
    (engine.contract.prompts.extend_prompt); otherwise the prompt is used as typed.
    """
    preview = client().token_preview(ModelRef(model_choice, device, dtype), prompt, target_tokens)
    return preview.prompt, preview.pieces, preview.natural


def count_tokens(lm: EngineModel, text: str) -> int:
    """The tokens the model gets for `text` (engine.contract.prompts.count_tokens, in the worker; cached)."""
    return prompt_preview(lm.ref.choice, lm.ref.device, lm.ref.dtype, text, 0)[2]


@st.cache_resource(show_spinner=False, max_entries=8)
def model_shape(model_choice: str, device: str, dtype: str):
    """The model's shape for the cost model (engine.contract.cost.ModelShape, read from its config in the worker)."""
    return client().model_shape(ModelRef(model_choice, device, dtype))


def figure_style(classroom: bool, phone: bool = False):
    """The diagrams' style: the default, or classroom mode's (every label at least the page's
    body text at 1280x720, folded to the column's width instead of shrunk: lesson.style), or a phone's
    (`phone`: a 358 px column, labels 12 px: the timeline's narrow layout)."""
    return classroom_style() if classroom else phone_style() if phone else DEFAULT_STYLE


# --- a classroom step's neighbours drawn ahead ------------------------------------------------------
# A step's page run drew its stepping figures afresh (0.31 s of a step's 0.5-2 s at load 10, measured with
# AppTest: 6 figure cache misses; 0.05 s with every figure cached). So each page run notes the figure calls it
# made on a stepping view (this thread's, in call order), and once drawn, one daemon thread makes the same calls
# for the steps either side: the next key press finds them cached (the caches are shared by every session).
_asked = threading.local()
_AHEAD_LOCK = threading.Lock()  # one drawing-ahead thread at a time: a second page run's waits its turn


def _note(kind: str, view: RunView, args: tuple) -> None:
    if view.stepping:
        calls = getattr(_asked, "calls", None)
        if calls is None:
            calls = _asked.calls = []
        calls.append((kind, view, args))


def draw_neighbours_ahead() -> threading.Thread | None:
    """After a page run: the stepping figures it drew, drawn for the step before and after (in the background;
    returns the thread, None when this page run drew no stepping figure)."""
    calls, _asked.calls = getattr(_asked, "calls", None) or [], []
    if not calls:
        return None
    thread = threading.Thread(target=_draw_ahead, args=(calls,), name="draw-step-ahead", daemon=True)
    thread.start()
    return thread


def _draw_ahead(calls: list) -> None:
    with _AHEAD_LOCK:
        for delta in (1, -1):  # the next step first: a lecturer mostly goes forward
            for kind, view, args in calls:
                step = view.step + delta
                if not 1 <= step <= view.run.num_passes:
                    continue
                near = RunView(view.run, step, stepping=True)
                try:
                    _diagram_svg(args[0], near, *args[1:]) if kind == "svg" else _latency_figure(near, *args)
                except Exception:  # noqa: BLE001 - drawing ahead is a guess: the page draws (and reports) it itself
                    log.debug("drawing a step ahead failed", exc_info=True)


def figure_cache_info() -> tuple:
    """(the SVG figures' cache_info, the latency charts'): how many were found drawn, how many drawn."""
    return _diagram_svg.cache_info(), _latency_figure.cache_info()


def diagram_svg(name: str, view: RunView, lang: str, classroom: bool = False, run_note: str = "",
                floors_ms: tuple[float, ...] | None = None, phone: bool = False) -> str:
    """`_diagram_svg`, cached; a stepping view's call noted for draw_neighbours_ahead."""
    _note("svg", view, (name, lang, classroom, run_note, floors_ms, phone))
    return _diagram_svg(name, view, lang, classroom, run_note, floors_ms, phone)


@functools.lru_cache(maxsize=256)
def _diagram_svg(name: str, view: RunView, lang: str, classroom: bool = False, run_note: str = "",
                 floors_ms: tuple[float, ...] | None = None, phone: bool = False) -> str:
    """One diagram of the passes `view` shows, as an SVG string, on the whole run's axes while it steps.
    `classroom`: the classroom style (larger type, folded layouts). `run_note`: which repeat the run
    is ("median run 3 of 5 (...)"), drawn on the figures in lesson.diagrams.RUN_NOTED. `floors_ms`: each
    pass's floor on this machine's roofs (app_support.pass_floors.step_floors_ms), drawn by the timeline."""
    noted = {"run_note": run_note} if run_note and name in RUN_NOTED else {}
    if floors_ms is not None and name == "timeline":
        noted["floors_ms"] = floors_ms
    return DIAGRAMS[name](view.trace, lang=lang, full=view.full, style=figure_style(classroom, phone), **noted)


@functools.lru_cache(maxsize=256)
def diagram_words(name: str, view: RunView, lang: str) -> tuple[str, str]:
    """(the diagram's alt text, its download file name without extension)."""
    return figure_alt(name, view.trace, lang), f"{download_stem(view.trace, view.run.stamp)}_{name}"


@functools.lru_cache(maxsize=512)
def schematic_svg(prompt_len: int, output_len: int, lang: str, classroom: bool = False) -> str:
    """The block sketch for the two sliders; no model involved."""
    return render_blocks_schematic(prompt_len, output_len, lang=lang, style=figure_style(classroom))


def latency_figure(view: RunView, lang: str, classroom: bool = False, run_note: str = ""):
    """`_latency_figure`, cached; a stepping view's call noted for draw_neighbours_ahead."""
    _note("latency", view, (lang, classroom, run_note))
    return _latency_figure(view, lang, classroom, run_note)


@functools.lru_cache(maxsize=64)
def _latency_figure(view: RunView, lang: str, classroom: bool = False, run_note: str = ""):
    """The latency chart (a plotly Figure, built once per view, language and style and shared by every
    session: st.plotly_chart only serializes it; never mutate it); `run_note` as for diagram_svg."""
    from lesson.charts.run import latency_figure as make_figure

    return make_figure(view.trace, lang, full=view.full, classroom=classroom, run_note=run_note)


# Cache on vs off (engine.runtime.compare): keyed by the shown run's model and prompt ids, not by its trace,
# so every run with the same prompt shares one comparison.

@st.cache_data(show_spinner=False, max_entries=16)
def cache_comparison(model_choice: str, device: str, dtype: str, prompt_ids: tuple[int, ...], max_new_tokens: int):
    """The same greedy answer with the KV cache off, then on (engine.runtime.compare.CacheComparison, in the worker)."""
    return client().compare_cache(ModelRef(model_choice, device, dtype), list(prompt_ids), max_new_tokens)


@st.cache_data(show_spinner=False, max_entries=32)
def cache_compare_svg(model_choice: str, device: str, dtype: str, prompt_ids: tuple[int, ...], max_new_tokens: int,
                      lang: str, classroom: bool = False) -> str:
    """That comparison drawn: per pass, time and FLOPs, off beside on."""
    comparison = cache_comparison(model_choice, device, dtype, prompt_ids, max_new_tokens)
    model_id = get_model(model_choice, device, dtype).info.model_id
    return render_cache_compare(comparison, lang=lang, model_id=model_id, style=figure_style(classroom))


@st.cache_data(show_spinner=False, max_entries=64)
def decode_attention_svg(model_choice: str, device: str, dtype: str, prompt_ids: tuple[int, ...],
                         output_ids: tuple[int, ...], decode_index: int, lang: str,
                         classroom: bool = False) -> tuple[str, str]:
    """(the attention map of Decode step `decode_index` of that answer, its alt text)."""
    lm = get_model(model_choice, device, dtype)
    attention = client().decode_attention(lm.ref, list(prompt_ids), output_ids, decode_index)  # in the worker
    svg = render_attention(attention, lang=lang, model_id=lm.info.model_id, style=figure_style(classroom))
    return svg, attention_alt(attention, lang)


# The bottleneck lab: the roofs of a device, and the sweeps already measured on this server.

@st.cache_resource(show_spinner=False, max_entries=8)
def device_spec(key: str, device: str):
    """A datasheet (engine.contract.cost.DEVICE_SPECS), or "this": the machine the model runs on (the engine
    worker's), measured there once per worker (a short copy and matmul benchmark,
    engine.runtime.machine.measure_this_machine), anew after "measure again"."""
    if key == "this":
        return client().machine_spec(device, fresh=taken(roofs_asked_again()))
    return cost.DEVICE_SPECS[key]


@st.cache_resource(show_spinner=False)
def roofs_asked_again() -> threading.Event:
    """Set by "measure again", taken by the next measurement (shared by every session)."""
    return threading.Event()


def taken(asked: threading.Event) -> bool:
    """Whether `asked` was set, clearing it. Cleared after it was seen set, so an ask made meanwhile is
    answered by the measurement that follows; two sessions taking it at once both measure anew (harmless)."""
    if not asked.is_set():
        return False
    asked.clear()
    return True


def measure_again() -> None:
    """The lab's "measure again" callback: this machine's roofs are benchmarked anew in the worker
    (about a second) on the next draw, for every visitor of this process (a busy moment measures them low)."""
    roofs_asked_again().set()
    device_spec.clear()


class SweepStore:
    """Finished sweeps as JSON, keyed by (model, device, dtype, kind, points, repeats, context);
    the oldest is dropped past `max_entries`. Sessions put from their own threads (`lock`); the
    measuring itself is queued in the engine worker, one measured call at a time."""

    def __init__(self, max_entries: int = 24) -> None:
        self.results: dict[tuple, str] = {}
        self.lock = threading.Lock()
        self.max_entries = max_entries

    def put(self, key: tuple, sweep_json: str) -> None:
        with self.lock:
            self.results[key] = sweep_json
            while len(self.results) > self.max_entries:
                self.results.pop(next(iter(self.results)))


@st.cache_resource(show_spinner=False)
def sweep_store() -> SweepStore:
    """Shared by every visitor of this process: a sweep measured once is shown to all."""
    return SweepStore()

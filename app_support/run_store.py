"""The app's runs: each finished run one frozen value, held once per process and looked up by its id.

JSON is for the wire and the disk (engine/contract): a run arrives from the engine worker as a
RequestTrace, or from a file, and is kept here as a StoredRun (the trace every view draws, its
repeats' headline numbers, the page's own times around run 1's first token, where it came from).
A session keeps only the run's id (st.session_state.run_id, and its history's ids); every page
(the lesson, the presenter view, the bottleneck lab, the slide kit) looks the same value up:

    run = run_store.current()              # the session's run, or None (none yet, or no longer kept)
    view = RunView(run, step, stepping)    # what a page run shows of it: the passes so far
    view.trace                             # that prefix (run_at_step: cut once, shared), never written back

The labs' results are kept the same way, each a frozen value named by id in the session: the serving
lab's runs (ServingSet), a probe of a real server (ProbeShown), a recorded run opened in a lab
(RecordedLab); `keep(key, value)` and `kept_of(kind, key)`.

The store is bounded: at most `max_runs` values no live session holds, the least recently used
dropped first. A session holds its current run and its history's runs (hold), through a RunHolder
kept in its state: when Streamlit drops a closed session, its holder goes and so does the hold.
Thread-safe: Streamlit draws every session in a thread of its own.
"""

from __future__ import annotations

import functools
import secrets
import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field

import streamlit as st

from engine.contract.interop.probe import ProbeResult
from engine.contract.serving.trace import ServingRun
from engine.contract.trace import RequestTrace
from lesson.answer import truncate_trace
from lesson.diagrams.ttft_parts import FeltTimes
from lesson.spread import Headline

ORIGINS = ("measured", "first_view", "recorded")  # run for this visitor now; the server's first view; a file
MAX_UNHELD_RUNS = 64  # runs no live session holds, kept for a session that comes back to one (LRU beyond)


@dataclass(frozen=True)
class RunArgs:
    """Everything that determines a trace, as plain values (the first view's cache key)."""

    model_choice: str
    device: str
    dtype: str
    prompt: str
    max_new_tokens: int
    temperature: float
    top_k: int
    top_p: float
    seed: int
    max_prompt_tokens: int
    ignore_eos: bool = False  # keep writing past end of sequence: the length slider is then exact
    prefix_cache: bool = False  # start Prefill from this visitor's kept runs (engine/runtime/prefix_store.py)

    def plain(self) -> tuple:
        """The arguments in resources.finished_run's order."""
        return (self.model_choice, self.device, self.dtype, self.prompt, self.max_new_tokens, self.temperature,
                self.top_k, self.top_p, self.seed, self.max_prompt_tokens, self.ignore_eos)


@dataclass(frozen=True, eq=False)  # eq=False: a run is itself (hashed by identity: a cheap cache key)
class StoredRun:
    """One run as every page shows it. `trace`: the repeat every view draws (lesson.spread.shown_run);
    `headline`: the numbers of all its repeats (None: one run); `felt`: the page's times around run 1's
    first token, and `first_run`: run 1 itself where another repeat is drawn (the TTFT bar draws one run's
    parts only); `args`: what measures it again here; `stamp`: when it ran ("YYYYmmdd-HHMMSS")."""

    trace: RequestTrace
    args: RunArgs | None
    origin: str
    stamp: str
    headline: Headline | None = None
    felt: FeltTimes | None = None
    first_run: RequestTrace | None = None
    id: str = field(default_factory=lambda: secrets.token_hex(8))

    def __post_init__(self) -> None:
        if self.origin not in ORIGINS:
            raise ValueError(f"a run's origin is one of {ORIGINS}, not {self.origin!r}")

    @property
    def num_passes(self) -> int:
        return len(self.trace.steps)

    @property
    def felt_run(self) -> RequestTrace:
        """The repeat the page timed (`felt`): run 1."""
        return self.first_run if self.first_run is not None else self.trace


@dataclass(frozen=True, eq=False)
class ServingSet:
    """The serving lab's runs of one workload, one per policy (and, with prefix caching on, the same workload's
    run with it off), parsed once; `jsons`: their wire form, for what leaves the process (the downloads, the
    slide kit) and the run set's tag in file names (lesson.slides.run_set_tag)."""

    runs: tuple[ServingRun, ...]
    jsons: tuple[str, ...]
    prefix_off: ServingRun | None = None
    id: str = field(default_factory=lambda: secrets.token_hex(8))


@dataclass(frozen=True, eq=False)
class ProbeShown:
    """The last probe of a real server, as it came back (no key in it: masked in all a server sent, KeyMask)."""

    result: ProbeResult
    id: str = field(default_factory=lambda: secrets.token_hex(8))


@dataclass(frozen=True, eq=False)
class RecordedLab:
    """A recorded sweep or cache comparison opened in the bottleneck lab (app_support/gallery.py), parsed once."""

    kind: str  # "sweep" | "cache_compare"
    value: object  # engine.contract.sweep.Sweep | engine.contract.recorded.RecordedComparison
    id: str = field(default_factory=lambda: secrets.token_hex(8))


Stored = StoredRun | ServingSet | ProbeShown | RecordedLab  # what the store keeps, each by its `id`


class RunHolder:
    """A session's hold on its runs: lives in its session state and dies with it (a weak key of the store)."""

    __slots__ = ("__weakref__",)


class RunStore:
    """Runs by id: every run a live holder holds, and at most `max_runs` others (least recently used out)."""

    def __init__(self, max_runs: int = MAX_UNHELD_RUNS) -> None:
        if max_runs < 1:
            raise ValueError(f"max_runs must be at least 1, not {max_runs}")
        self.max_runs = max_runs
        self.runs: OrderedDict[str, Stored] = OrderedDict()
        self.holds: weakref.WeakKeyDictionary[RunHolder, frozenset[str]] = weakref.WeakKeyDictionary()
        self.lock = threading.Lock()

    def put(self, run: Stored) -> str:
        """Keep `run` (again: the same run put twice is kept once); returns its id."""
        with self.lock:
            self.runs[run.id] = run
            self.runs.move_to_end(run.id)
            self._drop_unheld()
        return run.id

    def get(self, run_id: object) -> Stored | None:
        """The run kept under `run_id`, now the most recently used; None when none is (dropped, or forged)."""
        if not isinstance(run_id, str):
            return None
        with self.lock:
            run = self.runs.get(run_id)
            if run is not None:
                self.runs.move_to_end(run_id)
            return run

    def hold(self, holder: RunHolder, run_ids: Iterable[str]) -> None:
        """`holder`'s runs from now on (its session's current run and history): never dropped while it lives."""
        with self.lock:
            self.holds[holder] = frozenset(run_ids)
            self._drop_unheld()

    def _drop_unheld(self) -> None:
        held = set().union(*self.holds.values())
        unheld = [run_id for run_id in self.runs if run_id not in held]  # oldest first
        for run_id in unheld[: max(0, len(unheld) - self.max_runs)]:
            del self.runs[run_id]

    def __len__(self) -> int:
        return len(self.runs)


@functools.cache  # not st.cache_resource: a page looks it up many times a run, and Streamlit's wrapper costs
def store() -> RunStore:
    """The process's one store, shared by every session."""
    return RunStore()


@functools.lru_cache(maxsize=256)
def run_at_step(run: StoredRun, step: int) -> RequestTrace:
    """The run as it stood after `step` forward passes (classroom stepping, the replay): cut once per run and
    step, shared by every figure and session; the whole run for a step at or past its end."""
    return run.trace if step >= run.num_passes else truncate_trace(run.trace, max(1, step))


@dataclass(frozen=True)
class RunView:
    """What one page run shows of a stored run: its first `step` passes; `stepping`: the classroom or the
    replay steps through it, so every figure keeps the whole run's axes (`full`). Hashable: a figure cache key."""

    run: StoredRun
    step: int
    stepping: bool = False

    @property
    def trace(self) -> RequestTrace:
        """The passes shown."""
        return run_at_step(self.run, self.step)

    @property
    def whole(self) -> RequestTrace:
        """The whole run, whatever the step: what the headline, the TTFT bar and the lab quote."""
        return self.run.trace

    @property
    def full(self) -> RequestTrace | None:
        """The run the figures take their axes from while stepping, else None."""
        return self.run.trace if self.stepping else None

    @property
    def is_whole(self) -> bool:
        return self.step >= self.run.num_passes

    @property
    def headline(self) -> Headline | None:
        """The repeats' numbers, only where the whole run is shown (a prefix has numbers of its own)."""
        return self.run.headline if self.is_whole else None


def whole_view(run: StoredRun) -> RunView:
    return RunView(run, run.num_passes)


# --- a session's runs ------------------------------------------------------------------------------

def current() -> StoredRun | None:
    """The session's run (st.session_state.run_id) from the store; None before any run, or once the
    store no longer has it (the page then says so: run_panel.trace_to_show)."""
    return kept_of(StoredRun, "run_id")


def kept_of(kind: type, key: str):
    """The value of `kind` whose id the session keeps under `key`, or None (none, dropped, or forged)."""
    value = store().get(st.session_state.get(key))
    return value if isinstance(value, kind) else None


def keep(key: str, value: ServingSet | ProbeShown | RecordedLab | None) -> None:
    """`value` kept in the store, its id the session's under `key` (None: nothing kept there)."""
    st.session_state[key] = store().put(value) if value is not None else None
    hold_session_runs()


HELD_KEYS = ("run_id", "sl_runs", "sl_probe", "recorded_lab", "recorded_serving",  # keys naming a stored value
             "spec_run_id", "spec_plain_id")


def hold_session_runs() -> None:
    """The session's current run, its history's runs and its labs' values held in the store while it lives."""
    ss = st.session_state
    holder = ss.get("run_holder")
    if not isinstance(holder, RunHolder):
        holder = ss.run_holder = RunHolder()
    ids = [ss.get(key) for key in HELD_KEYS if isinstance(ss.get(key), str)]
    ids += [entry.stored_id for entry in ss.get("history") or ()]
    store().hold(holder, ids)


def current_origin() -> str | None:
    """Where the session's run came from (ORIGINS), or None without one."""
    run = current()
    return run.origin if run is not None else None

"""Recorded runs read back: any trace, serving run, sweep or cache comparison the engine wrote, and the
gallery of them (one index.json per machine, written by `python -m engine record`, engine/runtime/record.py).

    recorded = read_recorded(data, max_bytes)     # one file's bytes or text -> RecordedRun (or a refusal)
    recorded.kind, recorded.runs, recorded.provenance, recorded.json (canonical JSON: a cache key)
    for entry in read_index(folder / "index.json"): load_entry(entry, max_bytes)

A file may come from anywhere (an upload), so it is read in a fixed order, each step bounded:
its size against `max_bytes`, UTF-8, JSON through engine.contract.limits.load_json (depth, number length,
no NaN or Infinity), its kind from its own markers, a trace's step count (before one step is built),
the contract's one codec (engine.contract.codec: each class's upgrade of an older version, every value
against its field's type, strict, no unknown field: a string where a time belongs would only fail
later, inside a figure), then its meaning (engine.contract.meaning:
times finite, non-negative and in order, lists that belong together of one length, a sweep kind the
engine measures; every wall-clock time between 1970 and WALL_CLOCK_LIMIT_S, so a page can show it as
a time of day; a serving run's prefix records within their requests' tokens and whole blocks,
engine/contract/serving/prefix_check.py). Each refusal is one RecordedFileError: key "recorded_file", `why` names the
step, and the page words it in its language (lesson.messages).

No torch: a run recorded on a GPU machine is drawn on a laptop (a cache comparison's class is one of
engine.contract.results' plain types).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.contract import codec
from engine.contract.errors import InputError, LimitError
from engine.contract.limits import load_json
from engine.contract.meaning import MAX_TRACE_STEPS, MeaningError, check_comparison, check_serving, check_sweep, \
    check_trace
from engine.contract.results import CacheComparison
from engine.contract.serving.prefix_check import check_prefix_records
from engine.contract.serving.trace import ServingRun
from engine.contract.sweep import SCHEMA as SWEEP_SCHEMA
from engine.contract.sweep import Sweep
from engine.contract.trace import Provenance, RequestTrace, TraceFormatError

KINDS = ("trace", "serving_run", "sweep", "cache_comparison")
# The figures each kind is drawn by (names of lesson.diagrams.DIAGRAMS for a trace; the serving lab's
# figures and its metric table; the sweep figure; cache on vs off). A gallery index lists them per run.
FIGURES = {
    "trace": ("timeline", "blocks", "kv_growth", "latency", "review_map", "animation", "ttft_parts"),
    "serving_run": ("gantt", "batch", "kv", "metrics"),
    "sweep": ("sweep",),
    "cache_comparison": ("cache_compare",),
}
INDEX_SCHEMA = "prefill-decode.gallery/1"
COMPARISON_SCHEMA = "prefill-decode.cache-comparison/1"
MAX_SERVING_RUNS = 8  # serving runs in one file: the serving lab's download holds one per policy
MAX_INDEX_ENTRIES = 64
FILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}\.json")  # an index names files in its own folder only
# A wall-clock time (time.time() seconds) a page shows as a time of day: 1970 to 3000-01-01 UTC, well
# inside what datetime can turn into a date in any time zone (a year past 9999 raises ValueError).
WALL_CLOCK_LIMIT_S = 32_503_680_000.0
LIMIT_WHYS = {"limit_json_depth": "too_deep", "limit_json_number": "long_number", "limit_not_finite": "not_finite"}


class RecordedFileError(InputError):
    """A file that is not a recorded run this build can open. key "recorded_file"; `why` is one of
    too_large, not_text, not_json, too_deep, long_number, not_finite, unknown_kind, invalid, too_many,
    wrong_kind, missing (and over_cap: a page's own cap, app_support/gallery.py); other params: `kind`,
    `expected`, `mb`, `limit`, `n`."""

    def __init__(self, why: str, message: str, **params: Any) -> None:
        super().__init__("recorded_file", message, why=why, **params)


@dataclass(frozen=True)
class RecordedComparison:
    """Cache on vs off as recorded (engine.contract.results.CacheComparison), with its model and provenance."""

    model_id: str
    comparison: CacheComparison
    provenance: Provenance | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "cache_comparison", "schema": COMPARISON_SCHEMA, **codec.to_plain(self)}

    def to_json(self, indent: int | None = 2) -> str:
        return codec.encode(self, indent)

    @staticmethod
    def upgrade(data: Any) -> Any:
        """Its parsed JSON before it is built (engine.contract.codec): the schema marker, then the fields."""
        if not isinstance(data, dict) or data.get("schema") != COMPARISON_SCHEMA:
            raise TraceFormatError(f"not a cache comparison ({COMPARISON_SCHEMA})")
        return {k: v for k, v in data.items() if k not in ("kind", "schema")}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RecordedComparison:
        return codec.convert(data, cls)


@dataclass(frozen=True)
class RecordedRun:
    """One recorded file, read and checked: its kind and its run(s) (several only for serving runs)."""

    kind: str  # one of KINDS
    runs: tuple  # RequestTrace | ServingRun | Sweep | RecordedComparison, at least one

    @property
    def run(self):
        return self.runs[0]

    @property
    def provenance(self) -> Provenance | None:
        return self.run.provenance

    @property
    def jsons(self) -> tuple[str, ...]:
        """Each run as the engine writes it, on one line: what the app's caches key on."""
        return tuple(run.to_json(indent=None) for run in self.runs)

    @property
    def json(self) -> str:
        return self.jsons[0]


def read_recorded(data: bytes | str, max_bytes: int) -> RecordedRun:
    """One file's content as a RecordedRun, or a RecordedFileError saying which check refused it."""
    size = len(data.encode("utf-8") if isinstance(data, str) else data)
    if size > max_bytes:
        raise RecordedFileError("too_large", f"the file has {size:,} bytes; at most {max_bytes:,} are read",
                                mb=round(size / 1e6, 2), limit=round(max_bytes / 1e6, 2))
    try:
        text = data if isinstance(data, str) else data.decode("utf-8")
    except UnicodeDecodeError:
        raise RecordedFileError("not_text", "the file is not UTF-8 text") from None
    parsed = _parse(text)
    kind = kind_of(parsed)
    steps = parsed.get("steps") if kind == "trace" else None
    if isinstance(steps, list) and len(steps) > MAX_TRACE_STEPS:  # before one step is built
        raise RecordedFileError("too_many", f"the trace has {len(steps):,} steps; at most {MAX_TRACE_STEPS}",
                                n=len(steps), limit=MAX_TRACE_STEPS)
    try:
        runs = _build(kind, parsed)
        for run in runs:
            check_meaning(kind, run)
    except (TraceFormatError, MeaningError, LimitError) as err:
        raise RecordedFileError("invalid", f"not a valid {kind}: {err}", kind=kind) from None
    return RecordedRun(kind, runs)


def check_meaning(kind: str, run: Any) -> None:
    """A run's numbers checked for meaning (engine.contract.meaning), by its kind; MeaningError if not."""
    if kind == "trace":
        check_trace(run)
        check_wall_clocks(run)
    elif kind == "serving_run":
        check_serving(run)
        check_prefix_records(run)
    elif kind == "sweep":
        check_sweep(run)
    else:
        check_comparison(run.comparison)


def check_wall_clocks(trace: RequestTrace) -> None:
    """A trace's wall-clock times (its start, its prefix record's source run and eviction): each None, or
    a finite number of seconds from 0 to WALL_CLOCK_LIMIT_S; MeaningError if not."""
    prefix = trace.prefix
    clocks = {"started_at_s": trace.started_at_s,
              "prefix.source_started_at_s": prefix.source_started_at_s if prefix else None,
              "prefix.evicted_at_s": prefix.evicted_at_s if prefix else None}
    for name, at in clocks.items():
        if at is not None and not 0.0 <= at <= WALL_CLOCK_LIMIT_S:  # NaN fails the comparison too
            raise MeaningError(f"{name} must be a wall-clock time from 0 to {WALL_CLOCK_LIMIT_S:.0f} s "
                               f"(the year 3000), not {str(at)[:40]}")


def _parse(text: str) -> Any:
    try:
        return load_json(text)
    except LimitError as err:
        raise RecordedFileError(LIMIT_WHYS.get(err.key, "not_json"), str(err)) from None
    except (json.JSONDecodeError, RecursionError):
        raise RecordedFileError("not_json", "the file is not JSON") from None


def kind_of(data: Any) -> str:
    """Which of KINDS a parsed file is, from its own markers. A list of serving runs (the serving lab's
    download), or `python -m engine serve --policy all --json`'s {"runs": [...]}, is "serving_run"."""
    if isinstance(data, dict) and set(data) == {"runs"} and isinstance(data["runs"], list):
        data = data["runs"]
    if isinstance(data, list) and data and all(isinstance(d, dict) and d.get("kind") == "serving_run" for d in data):
        if len(data) > MAX_SERVING_RUNS:
            raise RecordedFileError("too_many", f"{len(data)} serving runs in one file; at most {MAX_SERVING_RUNS}",
                                    n=len(data), limit=MAX_SERVING_RUNS)
        return "serving_run"
    if isinstance(data, dict):
        if data.get("kind") in ("serving_run", "cache_comparison"):
            return data["kind"]
        if data.get("schema") == SWEEP_SCHEMA:
            return "sweep"
        if "steps" in data and "schema_version" in data:
            return "trace"
    raise RecordedFileError("unknown_kind", "JSON, but not a trace, serving run, sweep or cache comparison")


def _build(kind: str, data: Any) -> tuple:
    """The run(s) of a file of `kind`, built by the contract's one codec (engine.contract.codec: the class's
    upgrade, its types, no unknown field)."""
    if isinstance(data, dict) and set(data) == {"runs"}:
        data = data["runs"]
    if kind == "serving_run":
        return tuple(codec.convert(d, ServingRun) for d in (data if isinstance(data, list) else [data]))
    return (codec.convert(data, {"trace": RequestTrace, "sweep": Sweep}.get(kind, RecordedComparison)),)


# --- the gallery: one folder per machine, an index.json in each -------------------------------

@dataclass(frozen=True)
class GalleryEntry:
    """One run of a gallery index: where its file is, what it is, what draws it."""

    folder: Path  # the index's folder; the run's file is folder / file
    name: str  # unique in its index, e.g. "lesson-zh-1024"
    kind: str  # one of KINDS
    file: str  # a bare file name in `folder`
    figures: tuple[str, ...]
    about: tuple[tuple[str, str | int], ...]  # plain facts for a label: ("lang", "zh"), ("prompt_tokens", 1024)
    provenance: Provenance | None

    @property
    def path(self) -> Path:
        return self.folder / self.file

    def fact(self, key: str, default: str | int = "") -> str | int:
        return dict(self.about).get(key, default)


def gallery_indexes(root: Path) -> tuple[Path, ...]:
    """Every index.json under `root` (assets/gallery/<device>/index.json), in name order."""
    return tuple(sorted(root.glob("*/index.json"))) if root.is_dir() else ()


def read_index(path: Path, max_bytes: int = 1_000_000) -> tuple[GalleryEntry, ...]:
    """The entries of one gallery index; a RecordedFileError("invalid") when it is not one."""
    try:
        data = load_json(_read_bounded(path, max_bytes).decode("utf-8"))
        if not isinstance(data, dict) or data.get("schema") != INDEX_SCHEMA or not isinstance(data.get("runs"), list):
            raise TypeError(f"not a gallery index ({INDEX_SCHEMA})")
        entries = tuple(_entry(path.parent, e) for e in data["runs"][:MAX_INDEX_ENTRIES])
    except (TypeError, ValueError, KeyError, UnicodeDecodeError) as err:
        if isinstance(err, RecordedFileError):
            raise
        raise RecordedFileError("invalid", f"{path}: {err}", kind="index") from None
    return entries


def _entry(folder: Path, e: Any) -> GalleryEntry:
    if not isinstance(e, dict) or e.get("kind") not in KINDS or not FILE_NAME.fullmatch(str(e.get("file"))):
        raise TypeError("an index entry needs a known kind and a bare .json file name")
    about = e.get("about", {})
    if not isinstance(about, dict) or not all(isinstance(v, (str, int)) and not isinstance(v, bool)
                                              for v in about.values()):
        raise TypeError("an entry's about holds plain facts (text or whole numbers)")
    provenance = codec.convert(e.get("provenance"), Provenance | None)
    return GalleryEntry(folder, str(e["name"]), e["kind"], e["file"], tuple(str(f) for f in e.get("figures", ())),
                        tuple((str(k), v) for k, v in about.items()), provenance)


def load_entry(entry: GalleryEntry, max_bytes: int) -> RecordedRun:
    """The run an index entry names, read like any file, and of the kind the index says."""
    recorded = read_recorded(_read_bounded(entry.path, max_bytes), max_bytes)
    if recorded.kind != entry.kind:
        raise RecordedFileError("wrong_kind", f"{entry.file} is a {recorded.kind}, its index says {entry.kind}",
                                kind=recorded.kind, expected=entry.kind)
    return recorded


def _read_bounded(path: Path, max_bytes: int) -> bytes:
    """A file's bytes, refused unread when it is over `max_bytes` (one byte more is read, never the rest)."""
    try:
        with path.open("rb") as f:
            data = f.read(max_bytes + 1)
    except OSError:
        raise RecordedFileError("missing", f"cannot read {path.name}") from None
    if len(data) > max_bytes:
        size = path.stat().st_size
        raise RecordedFileError("too_large", f"{path.name} has {size:,} bytes; at most {max_bytes:,} are read",
                                mb=round(size / 1e6, 2), limit=round(max_bytes / 1e6, 2))
    return data

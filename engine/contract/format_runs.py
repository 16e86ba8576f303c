"""The weight formats side by side, as measured by bench/quantization.py and kept as a file for the lesson's
last section (assets/gallery/cpu/weight-formats.json): no torch, so any page can read it.

    runs = FormatRuns.from_json(text)          # refused (MeaningError) unless every number can be true
    runs.embedded.row("int4", 64).decode_median_ms, runs.preset.speedup("int8")

One `ModelFormats` per model (the embedded one, with its quality against fp32; a real-size preset, random
weights: times only), each `FormatRow` one format measured in the same interleaved run.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass

from engine.contract import limits
from engine.contract.meaning import MeaningError
from engine.contract.weights import GROUP_SIZES, WEIGHT_FORMATS

KIND = "weight_formats"
SCHEMA_VERSION = 1
MAX_KL_POSITIONS = 2048  # per format: the held-out lines hold about 540 positions
LIVE_FORMATS = (("fp32", 0), ("bf16", 0), ("int8", 0), ("int4", 64))  # what the lesson's live run compares


def live_units(formats=LIVE_FORMATS, rounds: int = 3, quality_measured: bool = True) -> tuple[str, ...]:
    """The phases of a live run's units in order, as its progress events count them (engine.runtime.format_run):
    each format loaded, each interleaved round timed, each format's quality; a page names each one."""
    n = len(formats)
    return ("load",) * n + ("round",) * rounds + (("quality",) * n if quality_measured else ())


@dataclass(frozen=True)
class FormatRow:
    weights: str                 # "fp32", "bf16", "int8", "int4"
    group_size: int              # int4's; 0 for the others
    weight_bytes: int            # every weight held
    read_bytes: int              # what one Decode step reads of them (engine.runtime.weights.decode_read_bytes)
    decode_median_ms: float      # the engine's own Decode step times, over every round
    decode_p90_ms: float
    mean_kl: float | None = None    # nats, against fp32 on the held-out text; None on random weights
    top1: float | None = None       # share of positions with fp32's most likely next token
    capitals_right: int | None = None  # of FormatRuns.capitals_asked
    answer_zh: str = ""          # the greedy answer to 法国的首都是 ("" on random weights)
    answer_en: str = ""
    # KL against fp32 (nats) at each position of the held-out lines, one after another (at most MAX_KL_POSITIONS);
    # () on random weights and in files recorded before it was kept
    kl_positions: tuple[float, ...] = ()
    # Where a Decode step's time goes (None in files recorded before): the step's matrices multiplied alone, one
    # token each, as timed (ms), and the weights' memory floor (read_bytes at the run's measured bandwidth, ms)
    matmul_ms: float | None = None
    floor_ms: float | None = None

    def __post_init__(self) -> None:
        if not all(v is None or (limits.is_number(v) and math.isfinite(v) and v > 0)
                   for v in (self.matmul_ms, self.floor_ms)):
            raise MeaningError(f"{self.weights}: the matmuls' time and the floor are positive numbers")
        object.__setattr__(self, "kl_positions", tuple(self.kl_positions))  # a list, as JSON reads it
        if len(self.kl_positions) > MAX_KL_POSITIONS or not all(
                limits.is_number(v) and math.isfinite(v) and v >= 0 for v in self.kl_positions):
            raise MeaningError(f"{self.weights}: at most {MAX_KL_POSITIONS} finite, non-negative KL values")
        group_ok = self.group_size in GROUP_SIZES if self.weights == "int4" else self.group_size == 0
        if self.weights not in WEIGHT_FORMATS or not group_ok:
            raise MeaningError(f"no weight format {self.weights!r} with group size {self.group_size!r}")
        numbers = (self.weight_bytes, self.read_bytes, self.decode_median_ms, self.decode_p90_ms,
                   *(v for v in (self.mean_kl, self.top1, self.capitals_right) if v is not None))
        if not all(limits.is_number(v) and math.isfinite(v) and v >= 0 for v in numbers):
            raise MeaningError(f"{self.label}: every number must be finite and not negative")
        if self.decode_median_ms <= 0 or (self.top1 is not None and self.top1 > 1):
            raise MeaningError(f"{self.label}: a Decode step takes time and agreement is a share")

    @property
    def label(self) -> str:
        return f"{self.weights} g{self.group_size}" if self.group_size else self.weights


@dataclass(frozen=True)
class ModelFormats:
    model_id: str
    random_weights: bool
    rows: tuple[FormatRow, ...]

    def __post_init__(self) -> None:
        if not self.rows or self.rows[0].weights != "fp32":
            raise MeaningError(f"{self.model_id}: the fp32 run every ratio is taken against comes first")

    def row(self, weights: str, group_size: int = 0) -> FormatRow | None:
        return next((r for r in self.rows if (r.weights, r.group_size) == (weights, group_size)), None)

    def time_parts(self, row: FormatRow) -> tuple[float, float, float] | None:
        """(floor, kernel time beyond the floor, the rest of the pass) of `row`'s median Decode step, ms, summing
        to the median; None without the matmuls timed. A part the measurement left below zero (a floor above the
        matmuls on a busy machine) is 0 and the next part takes what is left."""
        if row.matmul_ms is None or row.floor_ms is None:
            return None
        floor = min(row.floor_ms, row.matmul_ms, row.decode_median_ms)
        kernel = min(row.matmul_ms, row.decode_median_ms) - floor
        return floor, kernel, row.decode_median_ms - floor - kernel

    def speedup(self, weights: str, group_size: int = 0) -> float:
        """fp32's Decode step median over this format's: how many times faster the format ran."""
        return self.rows[0].decode_median_ms / self.row(weights, group_size).decode_median_ms

    def bytes_ratio(self, weights: str, group_size: int = 0) -> float:
        """fp32's bytes read per Decode step over this format's."""
        return self.rows[0].read_bytes / self.row(weights, group_size).read_bytes


@dataclass(frozen=True)
class FormatRuns:
    embedded: ModelFormats
    preset: ModelFormats | None
    capitals_asked: int          # questions of the quiz (12 countries x 2 languages)
    steps: int                   # Decode steps per answer
    rounds: int
    threads: int
    cpu: str                     # the processor, as a run's provenance names it
    torch_version: str
    recorded_at: str             # UTC, ISO 8601
    load_average: float          # the machine's 1-minute load when the run ended (other jobs share the cores)

    def to_json(self) -> str:
        return json.dumps({"kind": KIND, "schema_version": SCHEMA_VERSION, **dataclasses.asdict(self)},
                          ensure_ascii=False, indent=1)

    @classmethod
    def from_json(cls, text: str) -> FormatRuns:
        """A file as bench/quantization.py --record writes it; MeaningError for anything else."""
        try:
            data = limits.load_json(text)
            if data.pop("kind") != KIND or data.pop("schema_version") != SCHEMA_VERSION:
                raise MeaningError("not a weight-formats file of this version")
            models = {name: _model(data.pop(name)) for name in ("embedded", "preset")}
            return cls(**models, **data)
        except (ValueError, TypeError, KeyError, AttributeError) as err:  # JSONDecodeError, a LimitError too
            raise MeaningError(f"not a readable weight-formats file: {err}") from None


def _model(data: dict | None) -> ModelFormats | None:
    if data is None:
        return None
    return ModelFormats(data["model_id"], bool(data["random_weights"]), tuple(FormatRow(**r) for r in data["rows"]))

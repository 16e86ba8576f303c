"""The lesson's headline numbers over repeated runs: the median, with the fastest and the slowest run.

One forward pass on a shared machine can take anything: another program (another visitor's
page, the server's own work) may hold the cores in the middle of it. So the page runs the same
request N times (engine.runtime.repeats) and quotes the median, with the range beside it:

    runs = engine.runtime.repeats.measure(lm, prompt, cfg, repeats=5)   # runs[0] is the streamed one
    trace, numbers = shown_run(runs)            # the one run the page shows, and every run's numbers
    numbers.shown_numbers.prefill_ms            # the shown run's own numbers: what every view quotes
    numbers.prefill_ms.low, numbers.prefill_ms.high, numbers.n   # the range over the runs, beside them
    run_label(numbers, lang)                    # "median run 3 of 5 (over the 5 runs Prefill 4.1–9.0 ms, ...)"
    verdict(numbers, prompt_len)                # "noise", "same_work", "alike" or "apart"

One run, one set of numbers (the page's rule): after every repeat has finished, every figure, card,
sentence, alt text, step log, slide kit, export, history entry and link shows ONE run, the one whose
passes are nearest the medians (`nearest_median`): for pass i of the passes every run has, take the
median m_i of that pass's time over the runs; run r's distance is the sum over i of |ln(ms_ri / m_i)|
(a run twice as slow and one half as fast are equally far); the nearest run is shown, the earliest of
equal ones. Its numbers are real numbers of one run, so the timeline's bars, the cards and the
sentences agree with each other; each says which run it is and the range over all the runs. While run
1 streams, the page draws run 1 and says "run 1 of N, measuring…".

Per run: Prefill's pass, the median of its Decode steps (one slow step does not move it), TTFT
and TPOT. Across runs: the median of each and its min..max (`Spread`). The ratio's median is
median Prefill / median Decode step, so a sentence that quotes all three never contradicts
itself; its range is the per-run ratios' min..max (which always holds that median: if every
run's Prefill is at least r times its Decode step, so is the median's).

`outlier_indices` flags the repeats of one measured point that sit far from the others (the
bottleneck lab's sweeps). Pure: plain numbers in, plain numbers out; no streamlit, no torch.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from engine.contract.trace import RequestTrace, percentile

from .formats import format_ms
from .text import t

ALIKE_BELOW = 3.0  # below ~3x the two phases look alike: a small model's fixed cost per pass dominates
OUTLIER_IQR = 1.5  # Tukey's fences: beyond the quartiles by 1.5 x the interquartile range
OUTLIER_MEDIAN_FACTOR = 2.0  # a repeat above twice the median is always flagged
OUTLIER_MIN_SHARE = 0.1  # ...and none within 10 % of the median (a tight cluster's fences are sub-percent)
SCHEMA = "prefill-decode.headline/1"


@dataclass(frozen=True)
class Spread:
    """One number over n runs: its median and the fastest and slowest run (low <= median <= high)."""

    median: float
    low: float
    high: float
    n: int

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread:
        if not values:
            raise ValueError("the spread of no values is undefined")
        return cls(statistics.median(values), min(values), max(values), len(values))


@dataclass(frozen=True)
class RunNumbers:
    """One run's headline numbers, in milliseconds (None where the run had no Decode step)."""

    prefill_ms: float  # the Prefill pass
    decode_ms: float | None  # the median of the run's Decode steps
    ttft_ms: float
    tpot_ms: float | None
    num_passes: int  # Prefill and Decode steps: tells a whole run from a prefix of it

    @property
    def ratio(self) -> float | None:
        """Prefill over a Decode step, for this run."""
        return self.prefill_ms / self.decode_ms if self.decode_ms else None


def run_numbers(trace: RequestTrace) -> RunNumbers:
    """The headline numbers of one finished (or partial) trace. Raises ValueError without a Prefill."""
    prefill, metrics = trace.prefill, trace.metrics
    if prefill is None or metrics is None:
        raise ValueError("a run without a Prefill pass has no headline numbers")
    decodes = [s.duration_ms for s in trace.decode_steps]
    return RunNumbers(prefill.duration_ms, statistics.median(decodes) if decodes else None, metrics.ttft_ms,
                      metrics.tpot_ms, len(trace.steps))


@dataclass(frozen=True)
class Headline:
    """The headline numbers of N runs of one request; `runs[shown]` is the run the page shows
    (`nearest_median`); the Spreads are over every run."""

    runs: tuple[RunNumbers, ...]
    shown: int = 0  # index into runs (0-based): the run every view draws and quotes

    def __post_init__(self) -> None:
        if not self.runs:
            raise ValueError("a headline needs at least one run")
        if isinstance(self.shown, bool) or not isinstance(self.shown, int) or not 0 <= self.shown < len(self.runs):
            raise ValueError(f"the shown run must be one of the {len(self.runs)} runs, got {self.shown!r}")

    @property
    def shown_numbers(self) -> RunNumbers:
        """The shown run's own numbers: what every card and sentence quotes."""
        return self.runs[self.shown]

    @property
    def n(self) -> int:
        return len(self.runs)

    @property
    def prefill_ms(self) -> Spread:
        return Spread.of([r.prefill_ms for r in self.runs])

    @property
    def ttft_ms(self) -> Spread:
        return Spread.of([r.ttft_ms for r in self.runs])

    @property
    def decode_ms(self) -> Spread | None:
        return _spread_or_none([r.decode_ms for r in self.runs])

    @property
    def tpot_ms(self) -> Spread | None:
        return _spread_or_none([r.tpot_ms for r in self.runs])

    @property
    def ratio(self) -> Spread | None:
        """Median Prefill / median Decode step, with the per-run ratios' min..max (see the module doc)."""
        decode, ratios = self.decode_ms, [r.ratio for r in self.runs]
        if decode is None or decode.median <= 0 or None in ratios:
            return None
        return Spread(self.prefill_ms.median / decode.median, min(ratios), max(ratios), self.n)

    def belongs_to(self, trace: RequestTrace) -> bool:
        """True when `trace` is the shown run of these runs (the page's stored spread is of the run
        it shows, never of a prefix of it or of another run)."""
        try:
            return run_numbers(trace) == self.shown_numbers
        except ValueError:
            return False

    def to_json(self) -> str:
        return json.dumps({"schema": SCHEMA, "runs": [asdict(r) for r in self.runs], "shown": self.shown})

    @classmethod
    def from_json(cls, text: str) -> Headline:
        """Read back; a headline written before `shown` existed showed its first run."""
        data = json.loads(text)
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            raise ValueError(f"not a headline ({SCHEMA})")
        return cls(tuple(RunNumbers(**r) for r in data["runs"]), data.get("shown", 0))


def _spread_or_none(values: list[float | None]) -> Spread | None:
    return None if None in values else Spread.of(values)


def headline(traces: Sequence[RequestTrace], shown: int | None = None) -> Headline:
    """The headline numbers of these runs of one request, showing run `shown` (by default the
    run nearest the medians: `nearest_median`)."""
    return Headline(tuple(run_numbers(r) for r in traces), nearest_median(traces) if shown is None else shown)


MIN_PASS_MS = 1e-6  # a pass timed at 0 ms (a coarse clock) is read as this, so its logarithm exists


def nearest_median(traces: Sequence[RequestTrace]) -> int:
    """The index of the run whose passes are nearest the medians (the module's rule): for pass i of
    the passes every run has, m_i = the median over the runs of that pass's ms; run r's distance is
    sum_i |ln(ms_ri / m_i)|; the smallest wins, the earliest of equal ones. One run: 0."""
    if not traces:
        raise ValueError("no runs to choose from")
    num_passes = min(len(r.steps) for r in traces)
    times = [[max(s.duration_ms, MIN_PASS_MS) for s in list(r.steps)[:num_passes]] for r in traces]
    medians = [statistics.median(run[i] for run in times) for i in range(num_passes)]
    distances = [sum(abs(math.log(ms / m)) for ms, m in zip(run, medians)) for run in times]
    return min(range(len(traces)), key=lambda r: (distances[r], r))


def shown_run(traces: Sequence[RequestTrace]) -> tuple[RequestTrace, Headline]:
    """The run the page shows (nearest the medians) and the headline numbers of all of them: the one
    place a view's run is chosen."""
    numbers = headline(traces)
    return traces[numbers.shown], numbers


def run_label(numbers: Headline | None, lang: str) -> str:
    """What a figure, a card or a sentence says about the run it shows: "median run 3 of 5 (over the
    5 runs Prefill 4.1–9.0 ms, a Decode step 2.0–3.1 ms)"; "" for a single run (nothing to choose)."""
    if numbers is None or numbers.n < 2:
        return ""
    prefill, decode = numbers.prefill_ms, numbers.decode_ms
    ranges = t(lang, "shown_run_prefill", low=format_ms(prefill.low), high=format_ms(prefill.high))
    if decode is not None:
        ranges = t(lang, "shown_run_both", prefill=ranges,
                   decode=t(lang, "shown_run_decode", low=format_ms(decode.low), high=format_ms(decode.high)))
    return t(lang, "shown_run_label", k=numbers.shown + 1, n=numbers.n, ranges=ranges)


def verdict(numbers: Headline, prompt_len: int) -> str | None:
    """Which sentence the shown run's Prefill / Decode step calls for (None without a Decode step):

    - "same_work": a one-position prompt: Prefill computes one position, as a Decode step does
    - "noise": a Decode step took as long as Prefill or longer, which the lesson says it cannot
      (Prefill computes every prompt position, a Decode step one): this machine's noise
    - "alike": Prefill under ALIKE_BELOW times a Decode step (a small model's fixed cost per pass)
    - "apart": at least that
    """
    ratio = numbers.shown_numbers.ratio
    if ratio is None:
        return None
    if prompt_len <= 1:
        return "same_work"
    if ratio <= 1.0:
        return "noise"
    return "alike" if ratio < ALIKE_BELOW else "apart"


def outlier_indices(values: Sequence[float]) -> tuple[int, ...]:
    """The repeats that sit far from the others: beyond Tukey's fences (1.5 x IQR past the
    quartiles) and more than 10 % from the median, or above twice the median. Fewer than
    three values have no "others" to be far from: none is flagged."""
    if len(values) < 3:
        return ()
    q1, median, q3 = (percentile(values, p) for p in (25, 50, 75))
    low, high = q1 - OUTLIER_IQR * (q3 - q1), q3 + OUTLIER_IQR * (q3 - q1)
    return tuple(i for i, v in enumerate(values)
                 if ((v < low or v > high) and abs(v - median) > OUTLIER_MIN_SHARE * median)
                 or v > OUTLIER_MEDIAN_FACTOR * median)


def trend_outliers(values: Sequence[float], work: Sequence[float]) -> tuple[int, ...]:
    """The passes far from what the others predict for their work (FLOPs): `outlier_indices` over each
    value divided by a robust line through (work, value) (Theil-Sen: the median of the pairwise slopes,
    which a few stragglers cannot tilt). Passes doing the same work reduce to `outlier_indices` itself; a
    trend (cache off: each step recomputes one more position) is not mistaken for noise."""
    if len(values) < 3:
        return ()
    slopes = [(values[j] - values[i]) / (work[j] - work[i]) for i in range(len(values))
              for j in range(i + 1, len(values)) if work[j] != work[i]]
    slope = statistics.median(slopes) if slopes else 0.0
    intercept = statistics.median(v - slope * w for v, w in zip(values, work))
    expected = [intercept + slope * w for w in work]
    if min(expected) <= 0:  # no line to compare with: the plain rule
        return outlier_indices(values)
    return outlier_indices([v / e for v, e in zip(values, expected)])


def point_spread(times: Sequence[float]) -> tuple[float, float, tuple[float, ...]]:
    """(fastest, slowest) of one point's repeats that are not outliers, and the outliers' times in order."""
    flagged = set(outlier_indices(times))
    kept = [v for i, v in enumerate(times) if i not in flagged] or list(times)
    return min(kept), max(kept), tuple(times[i] for i in sorted(flagged))

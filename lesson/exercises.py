"""Predict, then measure: short exercises that follow the lesson, graded from measured numbers.

    ctx = Context(max_prompt_tokens=1024, model=trace.model)
    exercise = EXERCISES[0]
    specs = exercise.plan(ctx)                  # what to run: plain specs (TraceRun, CacheRun, SweepRun, ServeRun)
    results = [run(spec) for spec in specs]     # the app runs them: a RequestTrace, CacheComparison, Sweep, ServingRun
    grade(exercise, answer, results)            # -> Grade: right or not, what was measured, the numbers quoted

Pure: no streamlit, no model. A student answers before anything runs; the grader reads only the
measured results (trace, cache comparison, sweep or serving run fields), so the same answer can be
right on one machine and wrong on another, and the explanation quotes this machine's numbers beside
the lesson's own sentence. Every word is in lesson.text (area "exercises"): an exercise `key` has
`ex_<key>_title`, `ex_<key>_q` (the question, filled from `question_params`), `ex_<key>_rule` (how it
is graded), `ex_<key>_explain` (filled from the measured numbers) and, for a choice,
`ex_<key>_opt_<option>`.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from engine.contract.trace import ModelInfo, RequestTrace

from .diagrams.serving_gantt import policy_label, scenario_label
from .formats import fmt_bytes, fmt_count, fmt_ms, format_number
from .inputs import default_prompt
from .slides import plain_text
from .svgtext import piece_label
from .text import t

# --- what to run --------------------------------------------------------------------


@dataclass(frozen=True)
class TraceRun:
    """One request of the lesson's example prompt (in the page's language), greedy, seed 0."""

    prompt_tokens: int = 0  # stretched with the lesson's filler to this many tokens; 0: as written
    max_new_tokens: int = 8
    ignore_eos: bool = True  # keep writing past end of sequence: the answer is exactly max_new_tokens long


@dataclass(frozen=True)
class CacheRun:
    """The same greedy answer with the KV cache off, then on (engine.runtime.compare.compare_cache)."""

    prompt_tokens: int
    max_new_tokens: int


@dataclass(frozen=True)
class SweepRun:
    """A measured sweep (engine.runtime.sweep.run_sweep): `kind` at each of `points`."""

    kind: str  # "prefill", "decode-context" or "decode-batch"
    points: tuple[int, ...]


@dataclass(frozen=True)
class ServeRun:
    """A serving scenario (engine.contract.serving.workloads) under one policy, the lab's default settings."""

    scenario: str
    policy: str
    prefix_caching: bool = False  # the run's prefix cache (ServeConfig.prefix_caching)


RunSpec = TraceRun | CacheRun | SweepRun | ServeRun


# --- answers ------------------------------------------------------------------------


@dataclass(frozen=True)
class Choice:
    """Pick one of `options` (ids; their words: ex_<key>_opt_<option>)."""

    options: tuple[str, ...]


@dataclass(frozen=True)
class Number:
    """A number in `unit` (words: ex_unit_<unit>). Right when it is the measured value rounded
    (`exact`), within `rel_tol` of it (a fraction), or within a factor `factor` of it either way."""

    unit: str
    exact: bool = False
    rel_tol: float = 0.0
    factor: float = 0.0

    def accepted(self, measured: float) -> tuple[float, float]:
        """The lowest and highest answer graded right when `measured` was measured."""
        if self.exact:
            return float(round(measured)), float(round(measured))
        if self.factor:
            return measured / self.factor, measured * self.factor
        return measured - abs(measured) * self.rel_tol, measured + abs(measured) * self.rel_tol

    def accepts(self, answer: float, measured: float) -> bool:
        low, high = self.accepted(measured)
        return low <= answer <= high


@dataclass(frozen=True)
class Context:
    """What a question and its runs depend on: this server's caps and the model the page runs."""

    max_prompt_tokens: int = 1024
    max_new_tokens: int = 128
    sweep_max_positions: int = 1024
    sweep_max_batch: int = 64
    model: ModelInfo | None = None


@dataclass(frozen=True)
class Measured:
    """What the runs say: the answer they give (an option id, or a number in the unit) and the
    numbers the explanation quotes (already formatted)."""

    value: str | float
    params: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Exercise:
    """One question. `plan`: what to run under these caps; `measure`: the results (in plan's order)
    -> the measured answer; `question_params`: the numbers the question quotes; `lesson_key`: the
    lesson's sentence the explanation stands on; `section`: the lesson's section it follows."""

    key: str
    section: str
    form: Choice | Number
    lesson_key: str
    plan: Callable[[Context], tuple[RunSpec, ...]]
    measure: Callable[[Sequence[object]], Measured]
    question_params: Callable[[Context], dict[str, object]] = lambda ctx: {}


@dataclass(frozen=True)
class Grade:
    """The student's answer beside the measured one: `low`..`high` is what a number answer could be."""

    key: str
    answer: str | float
    measured: str | float
    correct: bool
    low: float | None = None
    high: float | None = None
    params: dict[str, str] = field(default_factory=dict)


class NotGradable(ValueError):
    """The runs cannot answer the question (an answer shorter than asked, a missing point)."""


def grade(exercise: Exercise, answer: str | float, results: Sequence[object]) -> Grade:
    """Grade `answer` against what `results` (the runs of exercise.plan, in order) measured."""
    measured = exercise.measure(results)
    form = exercise.form
    if isinstance(form, Choice):
        if answer not in form.options:
            raise ValueError(f"{answer!r} is not one of {form.options}")
        return Grade(exercise.key, answer, measured.value, answer == measured.value, params=measured.params)
    value = float(answer)
    low, high = form.accepted(float(measured.value))
    return Grade(exercise.key, value, float(measured.value), form.accepts(value, float(measured.value)), low, high,
                 measured.params)


# --- helpers the graders share ------------------------------------------------------

def ratio(a: float, b: float) -> float:
    """a / b, with a zero or negative time read as no ratio at all (0) rather than a crash."""
    return a / b if b > 0 else 0.0


def times(value: float) -> str:
    return f"{value:.1f}×" if value < 100 else f"{value:,.0f}×"


def _trace(results: Sequence[object], index: int = 0) -> RequestTrace:
    trace = results[index]
    if not isinstance(trace, RequestTrace) or not trace.steps:
        raise NotGradable("a run with at least one forward pass is needed")
    return trace


def _tpot(trace: RequestTrace) -> float:
    metrics = trace.metrics
    if metrics is None or metrics.tpot_ms is None:
        raise NotGradable("TPOT needs at least two output tokens")
    return metrics.tpot_ms


def _point_ms(sweep, value: int) -> float:
    for point in sweep.points:
        if point.value == value:
            return point.median_ms
    raise NotGradable(f"the sweep has no point {value}")




# --- the exercises, in the lesson's order --------------------------------------------

def _answer_len(ctx: Context, wanted: int = 8) -> int:
    return max(1, min(wanted, ctx.max_new_tokens))


def measure_first_token_phase(results: Sequence[object]) -> Measured:
    """The phase of the pass that chose output token 0 (each pass chooses one token: steps[0])."""
    trace = _trace(results)
    first = trace.steps[0]
    return Measured(first.phase, {"positions": str(first.num_positions), "ttft": fmt_ms(trace.metrics.ttft_ms)})


def measure_decode_passes(results: Sequence[object]) -> Measured:
    trace = _trace(results)
    return Measured(float(len(trace.decode_steps)), {"num_tokens": str(len(trace.steps)),
                                                     "num_passes": str(len(trace.steps))})


def measure_decode_positions(results: Sequence[object]) -> Measured:
    """The median number of positions a Decode pass fed into the model."""
    decodes = _trace(results).decode_steps
    if not decodes:
        raise NotGradable("an answer of at least two tokens has a Decode step")
    value = statistics.median(step.num_positions for step in decodes)
    return Measured(float(value), {"first": str(decodes[0].context_before), "last": str(decodes[-1].context_before),
                                   "num_decode": str(len(decodes))})


def measure_kv_bytes_more(results: Sequence[object]) -> Measured:
    """KiB the cache grew from after the Prefill to after the last pass (the cache tensors, measured)."""
    trace = _trace(results)
    first, last = trace.steps[0], trace.steps[-1]
    extra = last.context_kept - first.context_kept  # positions the cache holds (a verify pass drops its rejected)
    if extra < 1:
        raise NotGradable("an answer of at least two tokens adds positions to the cache")
    grown = last.kv_bytes - first.kv_bytes
    hand = trace.model.kv_bytes_per_token  # 2 (K and V) × layers × KV heads × head dimension × bytes: by hand
    return Measured(grown / 1024, {"extra": str(extra), "grown": fmt_bytes(grown),
                                   "per_token": fmt_bytes(round(grown / extra)),
                                   "hand": fmt_bytes(hand * extra) if hand else "—"})


def cache_off_estimate(prompt_len: int, num_tokens: int) -> float:
    """Positions computed with the cache off (P, P+1, ... P+N-1) over those with it on (P, then 1 each)."""
    off = num_tokens * prompt_len + num_tokens * (num_tokens - 1) / 2
    return off / (prompt_len + num_tokens - 1)


def measure_cache_off_flops(results: Sequence[object]) -> Measured:
    comparison = results[0]
    if not getattr(comparison, "num_steps", 0):
        raise NotGradable("the comparison made no token")
    value = ratio(comparison.off_total_flops, comparison.on_total_flops)
    return Measured(value, {
        "off_flops": fmt_count(int(comparison.off_total_flops)), "on_flops": fmt_count(int(comparison.on_total_flops)),
        "ratio": times(value), "estimate": times(cache_off_estimate(comparison.prompt_len, comparison.num_steps)),
        "off_ms": fmt_ms(comparison.off_total_ms), "on_ms": fmt_ms(comparison.on_total_ms),
        "prompt_len": str(comparison.prompt_len), "num_tokens": str(comparison.num_steps)})


CONTEXT_MUCH, CONTEXT_LITTLE = 2.0, 1.15  # a Decode step at the long context over the short: "much", "a little"


def measure_decode_step_context(results: Sequence[object]) -> Measured:
    """One Decode step at the sweep's longest context against its shortest, by the medians."""
    sweep = results[0]
    values = sorted(point.value for point in sweep.points)
    if len(values) < 2:
        raise NotGradable("the sweep needs two contexts")
    short_ms, long_ms = _point_ms(sweep, values[0]), _point_ms(sweep, values[-1])
    grew = ratio(long_ms, short_ms)
    value = "much" if grew >= CONTEXT_MUCH else "little" if grew >= CONTEXT_LITTLE else "same"
    return Measured(value, {"short": str(values[0]), "long": str(values[-1]), "short_ms": fmt_ms(short_ms),
                            "long_ms": fmt_ms(long_ms), "ratio": times(grew)})


def measure_batch_throughput(results: Sequence[object]) -> Measured:
    """Tokens per second of one batched Decode step of the largest batch over a batch of one."""
    sweep = results[0]
    batches = sorted(point.value for point in sweep.points)
    if len(batches) < 2:
        raise NotGradable("the sweep needs two batch sizes")
    one_ms, many_ms = _point_ms(sweep, batches[0]), _point_ms(sweep, batches[-1])
    one_rate, many_rate = ratio(1000 * batches[0], one_ms), ratio(1000 * batches[-1], many_ms)
    value = ratio(many_rate, one_rate)
    return Measured(value, {"batch": str(batches[-1]), "one_ms": fmt_ms(one_ms), "many_ms": fmt_ms(many_ms),
                            "one_rate": f"{one_rate:,.0f}", "many_rate": f"{many_rate:,.0f}", "ratio": times(value)})


GREW_MORE = 1.5  # one metric's growth at least this many times the other's: it "grew more"


def _short_long(results: Sequence[object]) -> dict[str, float]:
    short, long = _trace(results, 0), _trace(results, 1)
    return {"ttft_short": short.metrics.ttft_ms, "ttft_long": long.metrics.ttft_ms, "tpot_short": _tpot(short),
            "tpot_long": _tpot(long), "short_len": short.prompt_len, "long_len": long.prompt_len}


def _short_long_params(m: dict[str, float]) -> dict[str, str]:
    return {"ttft_short": fmt_ms(m["ttft_short"]), "ttft_long": fmt_ms(m["ttft_long"]),
            "tpot_short": fmt_ms(m["tpot_short"]), "tpot_long": fmt_ms(m["tpot_long"]),
            "ttft_ratio": times(ratio(m["ttft_long"], m["ttft_short"])),
            "tpot_ratio": times(ratio(m["tpot_long"], m["tpot_short"])),
            "short_len": str(int(m["short_len"])), "long_len": str(int(m["long_len"]))}


def measure_ttft_vs_tpot(results: Sequence[object]) -> Measured:
    """Which grew more from the short prompt to the long one: TTFT, TPOT, or neither (by GREW_MORE)."""
    m = _short_long(results)
    ttft, tpot = ratio(m["ttft_long"], m["ttft_short"]), ratio(m["tpot_long"], m["tpot_short"])
    value = "ttft" if ttft >= GREW_MORE * tpot else "tpot" if tpot >= GREW_MORE * ttft else "same"
    return Measured(value, _short_long_params(m))


def measure_ttft_growth(results: Sequence[object]) -> Measured:
    m = _short_long(results)
    return Measured(ratio(m["ttft_long"], m["ttft_short"]), _short_long_params(m))


ITL_APART = 1.25  # one policy's p99 ITL at least this many times the other's


def measure_p99_itl(results: Sequence[object]) -> Measured:
    """Where the p99 ITL is higher when the long prompt lands: prefill-first (results[0]) or chunked."""
    first, chunked = results[0].metrics.itl.p99, results[1].metrics.itl.p99
    apart = ratio(first, chunked)
    value = "prefill_first" if apart >= ITL_APART else "chunked" if apart and apart <= 1 / ITL_APART else "same"
    return Measured(value, {"first": fmt_ms(first), "chunked": fmt_ms(chunked), "ratio": times(apart)})


PREFIX_APART = 1.5  # the second request's TTFT at least this many times smaller (or larger) with the cache


def measure_prefix_second_ttft(results: Sequence[object]) -> Measured:
    """The second request's TTFT without the cache (results[0]) against with it (results[1])."""
    off, on = results[0].requests[1], results[1].requests[1]
    apart = ratio(off.ttft_ms, on.ttft_ms)
    value = "smaller" if apart >= PREFIX_APART else "larger" if apart and apart <= 1 / PREFIX_APART else "same"
    cached = on.prefix.num_cached_tokens if on.prefix else 0
    return Measured(value, {"off": fmt_ms(off.ttft_ms), "on": fmt_ms(on.ttft_ms), "ratio": times(apart),
                            "cached": str(cached), "prompt": str(on.prompt_len)})


def measure_prefix_near_miss(results: Sequence[object]) -> Measured:
    """Of the requests after the first, which read nothing from the cache (the near-miss scenario)."""
    second, third = results[0].requests[1:3]
    missed = [not (r.prefix and r.prefix.num_cached_tokens) for r in (second, third)]
    value = {(True, False): "second", (False, True): "third", (True, True): "both"}.get(tuple(missed), "neither")
    p = second.prefix
    return Measured(value, {"c2": str(p.num_cached_tokens if p else 0), "p2": str(second.prompt_len),
                            "c3": str(third.prefix.num_cached_tokens if third.prefix else 0),
                            "p3": str(third.prompt_len), "k": str(p.diverged_at if p and p.diverged_at is not None
                                                                 else "—"),
                            "mine": piece_label(p.token_piece) if p else "", "cached": piece_label(p.cached_piece)
                            if p else ""})


def _model_params(ctx: Context) -> dict[str, object]:
    model = ctx.model
    if model is None:
        return {"layers": "?", "kv_heads": "?", "head_dim": "?", "bytes": "?", "dtype": "?"}
    return {"layers": model.num_layers, "kv_heads": model.num_kv_heads, "head_dim": model.head_dim,
            "bytes": model.bytes_per_element, "dtype": model.dtype}


def _context_points(ctx: Context) -> tuple[int, ...]:
    longest = min(512, ctx.sweep_max_positions, (ctx.model.max_positions - 1) if ctx.model else 512)
    return (8, longest) if longest > 8 else ()


def _long_prompt(ctx: Context) -> int:
    return min(1024, ctx.max_prompt_tokens)


def _short_and_long(ctx: Context) -> tuple[RunSpec, ...]:
    n = _answer_len(ctx)
    return (TraceRun(0, n), TraceRun(_long_prompt(ctx), n)) if n >= 2 else ()


def _kv_extra(ctx: Context) -> int:
    return min(32, ctx.max_new_tokens - 1)


def _cache_plan(ctx: Context) -> tuple[int, int]:
    return min(32, ctx.max_prompt_tokens), _answer_len(ctx, 16)


LONG_PROMPT_SCENARIO = "long-prompt-during-chats"
SHARED_PROMPT_SCENARIO = "shared-system-prompt"


def _with_and_without_cache(ctx: Context) -> tuple[RunSpec, ...]:
    """The shared-system-prompt scenario with the prefix cache off, then on (its prompts are ~520 tokens)."""
    if ctx.max_prompt_tokens < 600:
        return ()
    return ServeRun(SHARED_PROMPT_SCENARIO, "chunked"), ServeRun(SHARED_PROMPT_SCENARIO, "chunked", True)

EXERCISES: tuple[Exercise, ...] = (
    Exercise("first_token_phase", "timeline", Choice(("prefill", "decode")), "timeline_2",
             lambda ctx: (TraceRun(0, _answer_len(ctx)),), measure_first_token_phase),
    Exercise("decode_passes", "timeline", Number("passes", exact=True), "timeline_1",
             lambda ctx: (TraceRun(0, _answer_len(ctx)),), measure_decode_passes,
             lambda ctx: {"n": _answer_len(ctx)}),
    Exercise("decode_positions", "decode", Number("positions", exact=True), "decode_1",
             lambda ctx: (TraceRun(0, _answer_len(ctx)),) if _answer_len(ctx) >= 2 else (), measure_decode_positions),
    Exercise("kv_bytes_more", "decode", Number("kib", rel_tol=0.05), "prefill_1",
             lambda ctx: (TraceRun(0, 1 + _kv_extra(ctx)),) if _kv_extra(ctx) >= 1 else (), measure_kv_bytes_more,
             lambda ctx: {"extra": _kv_extra(ctx), **_model_params(ctx)}),
    Exercise("cache_off_flops", "decode", Number("times", factor=1.5), "decode_2",
             lambda ctx: (CacheRun(*_cache_plan(ctx)),) if _cache_plan(ctx)[1] >= 2 else (), measure_cache_off_flops,
             lambda ctx: dict(zip(("prompt", "n"), _cache_plan(ctx)))),
    Exercise("decode_step_context", "bottleneck", Choice(("much", "little", "same")), "bottleneck_1",
             lambda ctx: (SweepRun("decode-context", _context_points(ctx)),) if _context_points(ctx) else (),
             measure_decode_step_context,
             lambda ctx: {"short": 8, "long": (_context_points(ctx) or (8, 8))[-1]}),
    Exercise("batch_throughput", "bottleneck", Number("times", factor=1.5), "decode_3",
             lambda ctx: (SweepRun("decode-batch", (1, min(8, ctx.sweep_max_batch))),) if ctx.sweep_max_batch >= 2
             else (), measure_batch_throughput, lambda ctx: {"batch": min(8, ctx.sweep_max_batch)}),
    Exercise("ttft_vs_tpot", "waits", Choice(("ttft", "tpot", "same")), "waits_1", _short_and_long,
             measure_ttft_vs_tpot, lambda ctx: {"long": _long_prompt(ctx), "n": _answer_len(ctx)}),
    Exercise("ttft_growth", "waits", Number("times", factor=2.0), "prefill_2", _short_and_long, measure_ttft_growth,
             lambda ctx: {"long": _long_prompt(ctx), "n": _answer_len(ctx)}),
    Exercise("p99_itl", "many", Choice(("prefill_first", "chunked", "same")), "bottleneck_2",
             lambda ctx: (ServeRun(LONG_PROMPT_SCENARIO, "prefill-first"), ServeRun(LONG_PROMPT_SCENARIO, "chunked")),
             measure_p99_itl),
    Exercise("prefix_second_ttft", "many", Choice(("smaller", "same", "larger")), "prefix_1",
             _with_and_without_cache, measure_prefix_second_ttft),
    Exercise("prefix_near_miss", "many", Choice(("second", "third", "both", "neither")), "prefix_2",
             lambda ctx: (ServeRun("near-miss", "chunked", True),) if ctx.max_prompt_tokens >= 256 else (),
             measure_prefix_near_miss),
)
BY_KEY = {exercise.key: exercise for exercise in EXERCISES}


# --- in words -----------------------------------------------------------------------

def title(exercise: Exercise, lang: str) -> str:
    return t(lang, f"ex_{exercise.key}_title")


def question(exercise: Exercise, lang: str, ctx: Context) -> str:
    """The question, its numbers filled in for these caps and this model (Markdown, our own words)."""
    return t(lang, f"ex_{exercise.key}_q", **exercise.question_params(ctx))


def option_words(exercise: Exercise, option: str, lang: str) -> str:
    return t(lang, f"ex_{exercise.key}_opt_{option}")


def answer_words(exercise: Exercise, value: str | float, lang: str) -> str:
    """An answer as the page says it: the option's words, or the number with its unit."""
    if isinstance(exercise.form, Choice):
        return option_words(exercise, str(value), lang)
    return t(lang, "ex_number_unit", value=format_number(float(value)), unit=t(lang, f"ex_unit_{exercise.form.unit}"))


def describe(spec: RunSpec, lang: str) -> str:
    """What the app runs for a spec, in words."""
    if isinstance(spec, TraceRun):
        if not spec.prompt_tokens:
            return t(lang, "ex_run_trace_natural", prompt=default_prompt(lang), n=spec.max_new_tokens)
        return t(lang, "ex_run_trace", p=spec.prompt_tokens, n=spec.max_new_tokens)
    if isinstance(spec, CacheRun):
        return t(lang, "ex_run_cache", p=spec.prompt_tokens, n=spec.max_new_tokens)
    if isinstance(spec, SweepRun):
        points = ", ".join(str(p) for p in spec.points)
        return t(lang, f"ex_run_sweep_{spec.kind.replace('-', '_')}", points=points)
    return t(lang, "ex_run_serve", scenario=scenario_label(lang, spec.scenario), policy=policy_label(lang, spec.policy))


def rule(exercise: Exercise, lang: str) -> str:
    """How it is graded, in words."""
    form = exercise.form
    if isinstance(form, Number):
        tolerance = ("ex_tolerance_exact" if form.exact else "ex_tolerance_factor" if form.factor
                     else "ex_tolerance_rel")
        return t(lang, f"ex_{exercise.key}_rule") + " " + t(
            lang, tolerance, factor=format_number(form.factor), percent=format_number(100 * form.rel_tol))
    return t(lang, f"ex_{exercise.key}_rule")


def verdict(exercise: Exercise, result: Grade, lang: str) -> str:
    """"Right / Not this time: you said …, measured …" with the accepted range for a number."""
    said, got = answer_words(exercise, result.answer, lang), answer_words(exercise, result.measured, lang)
    line = t(lang, "ex_right" if result.correct else "ex_wrong", answer=said, measured=got)
    if result.low is not None and result.low != result.high:
        unit = t(lang, f"ex_unit_{exercise.form.unit}")
        line += " " + t(lang, "ex_accepted", low=format_number(result.low), high=format_number(result.high), unit=unit)
    return line


def explanation(exercise: Exercise, result: Grade, lang: str) -> tuple[str, str]:
    """(what this machine measured, in words; the lesson's own sentence it stands on, as plain text)."""
    return t(lang, f"ex_{exercise.key}_explain", **result.params), plain_text(t(lang, exercise.lesson_key))


def progress(results: dict[str, Grade]) -> tuple[int, int]:
    """(exercises answered and graded, of them right)."""
    graded = [r for r in results.values() if isinstance(r, Grade)]
    return len(graded), sum(1 for r in graded if r.correct)


def question_sheet(lang: str, ctx: Context, *, with_key: bool = True) -> str:
    """Every exercise as a Markdown sheet for a lecturer: the question, its options or a blank with the unit,
    what the app runs; with `with_key`, how each is graded and the lesson's sentence behind it."""
    lines = [f"# {t(lang, 'ex_sheet_title')}", "", t(lang, "ex_sheet_intro"), ""]
    for number, exercise in enumerate(EXERCISES, start=1):
        lines += [f"## {number}. {title(exercise, lang)}", "", question(exercise, lang, ctx), ""]
        if isinstance(exercise.form, Choice):
            lines += [f"- [ ] {option_words(exercise, o, lang)}" for o in exercise.form.options]
        else:
            lines.append(t(lang, "ex_sheet_blank", unit=t(lang, f"ex_unit_{exercise.form.unit}")))
        specs = exercise.plan(ctx)
        runs = "; ".join(describe(s, lang) for s in specs) if specs else t(lang, "ex_unavailable")
        lines += ["", f"*{t(lang, 'ex_sheet_runs')}* {runs}", ""]
    if with_key:
        lines += [f"## {t(lang, 'ex_sheet_key')}", ""]
        for number, exercise in enumerate(EXERCISES, start=1):
            lines += [f"{number}. **{title(exercise, lang)}**: {rule(exercise, lang)} "
                      f"*{t(lang, 'ex_lesson_says')}* {plain_text(t(lang, exercise.lesson_key))}"]
    return "\n".join(lines) + "\n"

"""Plain helpers behind the app's views: limits, model folders, numbers, words.

Nothing here imports streamlit or torch, so every rule the page follows (caps,
which folders a visitor may pick, how a number reads in Chinese) is testable
without a browser or a model. Errors become words in lesson.messages.
"""

from __future__ import annotations

import csv
import dataclasses
import datetime
import io
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from engine.config import ServerSettings
from engine.cost import DEVICE_SPECS, spec_for_device_name
from engine.trace import STEP_TABLE_COLUMNS, RequestTrace, step_rows

from .spread import Headline, Spread, fmt_ratio, headline, point_spread, verdict
from .svgtext import fmt_bytes, fmt_count, fmt_ms, visible
from .text import device_label, t

DEFAULT_PROMPTS = {"zh": "法国的首都是", "en": "The capital of France is"}  # -> 巴黎。 / " Paris."
DEFAULT_PROMPT = DEFAULT_PROMPTS["zh"]
DEFAULT_OUTPUT_LEN = 8
DEFAULT_MODEL_CHOICE = "default"


# ---------------------------------------------------------------------------
# Model folders: a visitor picks a name from a list, never types a path
# ---------------------------------------------------------------------------

def list_model_choices(models_dir: Path | None, presets: Sequence[str] = ()) -> list[str]:
    """"default", the names of the folders directly inside `models_dir`, then `presets`
    ("preset:NAME" ids the server offers: app_support.resources.preset_choices).

    The allowlist is the folder itself, not wherever its links point: an entry
    that resolves outside `models_dir` (a symlink to /etc, to a home folder) is
    left out. The engine checks again when it loads (load_model(within=...)).
    """
    names: list[str] = []
    if models_dir is not None and models_dir.is_dir():
        try:
            root = models_dir.resolve()
            names = sorted(p.name for p in models_dir.iterdir() if not p.name.startswith(".") and _inside(p, root))
        except OSError:
            names = []
    folders = [n for n in names if n != DEFAULT_MODEL_CHOICE and not n.startswith(PRESET_PREFIX)]
    return [DEFAULT_MODEL_CHOICE] + folders + [p for p in presets if p.startswith(PRESET_PREFIX)]


def _inside(entry: Path, root: Path) -> bool:
    """A folder whose real location (symlinks followed) is under `root`."""
    target = entry.resolve()
    return root in target.parents and target.is_dir()


PRESET_PREFIX = "preset:"  # engine.presets.PRESET_PREFIX: a real-size shape with random weights


def resolve_model_choice(choice: str, models_dir: Path | None, presets: Sequence[str] = ()) -> str | None:
    """The folder to load for a listed choice (None = embedded default).

    Raises KeyError for anything not in the current listing, so a forged
    session value cannot reach `../../etc` or an arbitrary server path.
    """
    if choice == DEFAULT_MODEL_CHOICE:
        return None
    if choice not in list_model_choices(models_dir, presets):
        raise KeyError(choice)
    if choice.startswith(PRESET_PREFIX):
        return choice  # built in code by engine.presets: no folder
    return str(models_dir / choice)


def default_prompt(lang: str) -> str:
    """The lesson's running example in `lang` (Chinese for anything unknown)."""
    return DEFAULT_PROMPTS.get(lang, DEFAULT_PROMPT)


def is_default_prompt(prompt: object) -> bool:
    """True when the prompt is one of the lesson's own examples, i.e. nothing the visitor typed."""
    return isinstance(prompt, str) and prompt.strip() in DEFAULT_PROMPTS.values()


# ---------------------------------------------------------------------------
# Input checks
# ---------------------------------------------------------------------------

def clamp(value: int, low: int, high: int) -> int:
    return max(low, min(high, value))


def as_int_in_range(value: object, low: int, high: int, default: int) -> tuple[int, bool]:
    """(a usable int within [low, high], whether the input was already fine)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return default, False
    if value != value:  # NaN
        return default, False
    fixed = clamp(int(value), low, high)
    return fixed, fixed == value


# ---------------------------------------------------------------------------
# Numbers and text for the page
# ---------------------------------------------------------------------------

def format_ms(ms: float | None) -> str:
    """The diagrams' millisecond format (lesson.svgtext.fmt_ms), plus seconds and "—" for the page."""
    if ms is None:
        return "—"
    return f"{ms / 1000:.2f} s" if ms >= 1000 else fmt_ms(ms)


format_bytes = fmt_bytes  # one byte format for the page and the figures
format_count = fmt_count


def escape_markdown(text: str) -> str:
    """Backslash-escape Markdown and HTML punctuation so user text shows as typed."""
    return re.sub(r"([\\`*_{}\[\]()#+\-.!|<>~$:&])", r"\\\1", text)


def shown_piece(piece: str) -> str:
    """A token piece for the page: newline and tab as ⏎ and ⇥, every other control or
    bidi character visible as in the figures (lesson.svgtext.visible)."""
    return visible(piece.replace("\n", "⏎").replace("\t", "⇥"))


def token_split_text(pieces: tuple[str, ...] | list[str]) -> str:
    """Pieces joined with a visible bar."""
    return " │ ".join(shown_piece(p) for p in pieces)


def markdown_table(rows: list[list[str]]) -> str:
    """A Markdown table from the lesson's own (trusted) header + rows."""
    header, *body = rows
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in body]
    return "\n".join(lines)


@dataclass(frozen=True)
class MetricCard:
    key: str  # "ttft", "tpot", "itl", "e2el"
    label: str
    value: str
    definition: str
    spread: str = ""  # "median of 5 runs (5.2 ms–8.0 ms)", "the run shown (one run)", or "" for a single run


def metric_cards(trace: RequestTrace, lang: str, numbers: Headline | None = None) -> list[MetricCard]:
    """TTFT / TPOT / ITL p99 / E2EL, formatted, each with its one-line definition.

    For one request the mean ITL always equals TPOT, so the ITL card shows what
    ITL adds instead: its p99, with p50 / p90 / max in the card's definition.
    A one-token answer has no gap to measure: TPOT and ITL read "—", and their
    definitions say why (a short value, so the card never cuts a sentence).

    `numbers`: the headline numbers of N runs of this request (lesson.spread), whose first run
    is `trace`. With N > 1, TTFT and TPOT read the median of the runs and say their range and
    N; ITL p99 and E2EL stay the shown run's, and say so.
    """
    metrics = trace.metrics
    if metrics is None:
        return []
    na = t(lang, "metric_na")
    values = {
        "ttft": format_ms(metrics.ttft_ms),
        "tpot": format_ms(metrics.tpot_ms) if metrics.tpot_ms is not None else na,
        "itl": format_ms(metrics.p99_itl_ms) if metrics.itl_ms else na,
        "e2el": format_ms(metrics.e2el_ms),
    }
    definitions = {k: t(lang, f"metric_{k}_def") for k in values}
    if metrics.tpot_ms is None:
        definitions["tpot"] = t(lang, "metric_tpot_one_token")
    if metrics.itl_ms:
        definitions["itl"] = t(lang, "metric_itl_spread", n=len(metrics.itl_ms), p50=format_ms(metrics.p50_itl_ms),
                               p90=format_ms(metrics.p90_itl_ms), max=format_ms(metrics.max_itl_ms))
    else:
        definitions["itl"] = t(lang, "metric_itl_one_token")
    spreads = dict.fromkeys(values, "")
    if numbers is not None and numbers.n > 1:
        spreads.update(itl=t(lang, "metric_this_run"), e2el=t(lang, "metric_this_run"))
        for key, spread in (("ttft", numbers.ttft_ms), ("tpot", numbers.tpot_ms)):
            if spread is not None:
                values[key], spreads[key] = format_ms(spread.median), spread_text(spread, lang)
    return [MetricCard(k, t(lang, f"metric_{k}"), v, definitions[k], spreads[k]) for k, v in values.items()]


def spread_text(spread: Spread, lang: str) -> str:
    """"median of 5 runs (5.2 ms–8.0 ms)": a number's median over runs, with its range."""
    return t(lang, "metric_spread", n=spread.n, low=format_ms(spread.low), high=format_ms(spread.high))


PAGE_NOTE_MIN_MS = 0.1  # the page's drawing, summed over the run, worth a sentence


def page_drawing_note(trace: RequestTrace, lang: str) -> str | None:
    """How much of the waits was this page's own drawing (the model waited meanwhile).

    The metrics include it, as a user of the page felt it; the pass times do not
    (see engine.generation.stream_trace). None when it is too small to mention.
    """
    drawn_ms = [s.consumer_ms for s in trace.steps]
    total = sum(drawn_ms)
    if total < PAGE_NOTE_MIN_MS:
        return None
    gaps = sum(ms >= PAGE_NOTE_MIN_MS for ms in drawn_ms)
    return t(lang, "page_drawing_note", ms=format_ms(total), n=gaps)


def metric_gap_notes(trace: RequestTrace, lang: str) -> tuple[str, ...]:
    """Why Prefill's pass time sits next to a slightly larger TTFT, and a Decode pass next to
    a slightly larger ITL (issue 8): the waits count time outside the passes. From the trace's
    own times; a note only where there is something to explain."""
    metrics, prefill, decodes = trace.metrics, trace.prefill, trace.decode_steps
    if metrics is None or prefill is None:
        return ()
    notes = [t(lang, "gap_note_prefill", prefill=format_ms(prefill.duration_ms), ttft=format_ms(metrics.ttft_ms),
               wait=format_ms(metrics.ttft_ms - prefill.duration_ms), tokenize=format_ms(trace.tokenize_ms))]
    if decodes and metrics.itl_ms:
        decode_ms = sum(s.duration_ms for s in decodes) / len(decodes)
        itl_ms = sum(metrics.itl_ms) / len(metrics.itl_ms)
        notes.append(t(lang, "gap_note_decode", decode=format_ms(decode_ms), itl=format_ms(itl_ms),
                       gap=format_ms(itl_ms - decode_ms)))
    return tuple(notes)


def bottleneck_live_text(trace: RequestTrace, lang: str, numbers: Headline | None = None) -> str | None:
    """The real Prefill beside a real Decode step, in words, and what their ratio means.

    `numbers`: N runs of this request (lesson.spread; the first is `trace`); without them, the
    one run `trace`. The sentence follows lesson.spread.verdict on the medians: alike (a small
    model's fixed cost per pass), apart, the same work (a one-position prompt), or this
    machine's noise (a Decode step at or above Prefill: the lesson says it cannot be), which
    shows the runs' range and asks to measure again. None without a Decode step.
    """
    prefill = trace.prefill
    if prefill is None or not trace.decode_steps:
        return None
    numbers = numbers if numbers is not None else headline((trace,))
    ratio, kind = numbers.ratio, verdict(numbers, prefill.num_positions)
    if ratio is None or kind is None:
        return None
    prefill_ms, decode_ms = numbers.prefill_ms, numbers.decode_ms
    fields = dict(prefill_ms=format_ms(prefill_ms.median), prompt_len=prefill.num_positions,
                  per_position=format_ms(prefill_ms.median / prefill.num_positions),
                  decode_ms=format_ms(decode_ms.median))
    if numbers.n > 1:
        words = [t(lang, "bottleneck_live_repeats", n=numbers.n, prefill_range=_range_ms(prefill_ms),
                   decode_range=_range_ms(decode_ms), **fields)]
    else:
        words = [t(lang, "bottleneck_live", **fields)]
    m = trace.model
    words.append(t(lang, f"bottleneck_{kind}", ratio=fmt_ratio(ratio.median), prompt_len=prefill.num_positions,
                   model=escape_markdown(m.model_id), params=fmt_count(m.num_params), device=m.device, dtype=m.dtype))
    if numbers.n > 1:
        low, high = fmt_ratio(ratio.low), fmt_ratio(ratio.high)
        words.append(t(lang, "bottleneck_ratio_same" if low == high else "bottleneck_ratio_range", n=numbers.n,
                       low=low, high=high))
    return " ".join(words)


def bottleneck_contradicts(trace: RequestTrace, numbers: Headline | None = None) -> bool:
    """True when the medians contradict the lesson (a Decode step at or above Prefill on a prompt
    of several positions): the page then offers to measure again."""
    prefill = trace.prefill
    if prefill is None or not trace.decode_steps:
        return False
    return verdict(numbers if numbers is not None else headline((trace,)), prefill.num_positions) == "noise"


def _range_ms(spread: Spread) -> str:
    return f"{format_ms(spread.low)}–{format_ms(spread.high)}"


def sampling_text(trace: RequestTrace, lang: str) -> str:
    s = trace.sampling
    return t(lang, "greedy") if s.greedy else t(lang, "sampled", temperature=s.temperature, seed=s.seed)


def trace_summary(trace: RequestTrace, lang: str) -> str:
    return t(
        lang, "showing_trace", prompt_len=trace.prompt_len, output_len=len(trace.steps),
        model_id=escape_markdown(trace.model.model_id), sampling=sampling_text(trace, lang),
    )


def step_log_line(trace: RequestTrace, index: int, lang: str) -> str:
    """One Markdown line for the live log: what a forward pass took in and gave out."""
    step = trace.steps[index]
    if step.phase == "prefill":
        return t(lang, "log_prefill", num_positions=step.num_positions, piece=_piece(step.output_piece),
                 ms=format_ms(step.duration_ms))
    return t(lang, "log_decode", index=step.index, piece=_piece(step.output_piece), ms=format_ms(step.duration_ms))


def _piece(piece: str) -> str:
    # The templates wrap {piece} in single backticks; a code span must not hold one.
    return shown_piece(piece).replace("`", "ˋ") or " "


QUEUE_NOTE_MIN_MS = 1.0  # an uncontended lock is taken in microseconds; a real queue is far longer


def queue_wait_ms(trace: RequestTrace) -> float | None:
    """How long the request's passes waited for the model's lock, in total.

    Only the lock wait the engine measured around each pass (Step.lock_wait_ms:
    another visitor's pass was running), never tokenizing, building token
    pieces or assembling the trace. Returns None when it is too short to mention.
    """
    wait = sum(s.lock_wait_ms for s in trace.steps)
    return wait if wait >= QUEUE_NOTE_MIN_MS else None


def queue_note(trace: RequestTrace, lang: str) -> str | None:
    """The page's sentence about queueing, or None when the request did not queue."""
    waited = queue_wait_ms(trace)
    if waited is None:
        return None
    return t(lang, "queued_for", ms=format_ms(waited), prefill_ms=format_ms(trace.steps[0].lock_wait_ms))


def stop_reason_text(trace: RequestTrace, lang: str) -> str:
    return t(lang, "stop_eos") if trace.stop_reason == "eos" else t(lang, "stop_length")


# A special token's piece as tokenizers spell it: </s>, <|endoftext|>, <eos> (one "word" in angle brackets);
# a raw byte's piece (<0xE5>) is part of a character, never skipped.
SPECIAL_PIECE = re.compile(r"<(?!0x[0-9A-Fa-f]{2}>)[^\s<>]+>")


def truncate_trace(trace: RequestTrace, num_steps: int) -> RequestTrace:
    """The trace as it stood after `num_steps` forward passes (classroom stepping). Its answer is
    the pieces so far without the special tokens the finished answer's decoding skipped (an </s>
    that ended the run, or the many a run past the end of sequence writes), as normal mode shows it."""
    num_steps = clamp(num_steps, 1, len(trace.steps))
    if num_steps == len(trace.steps):
        return trace
    steps = trace.steps[:num_steps]
    text = "".join(s.output_piece for s in steps
                   if not (SPECIAL_PIECE.fullmatch(s.output_piece) and s.output_piece not in trace.output_text))
    return dataclasses.replace(trace, steps=steps, stop_reason=None, output_text=text)


def first_end_of_sequence(trace: RequestTrace) -> int | None:
    """The index of the first pass, before the last one, whose token the finished answer's decoding
    skipped (an end of sequence): the model had ended its answer there and wrote on past it
    (ignore_eos). None while streaming, or when the run stopped at its first end of sequence."""
    if not trace.finished:
        return None
    return next((s.index for s in trace.steps[:-1]
                 if SPECIAL_PIECE.fullmatch(s.output_piece) and s.output_piece not in trace.output_text), None)


def past_eos_note(trace: RequestTrace, lang: str) -> str | None:
    """Why an answer written past its end of sequence reads as unrelated text (the default model's
    training data: one fact per document, then </s>); None when it was not."""
    index = first_end_of_sequence(trace)
    if index is None:
        return None
    key = "past_eos_default" if trace.model.model_id == DEFAULT_MODEL_CHOICE else "past_eos_other"
    return t(lang, key, n=index + 1, ignore_eos=t(lang, "ignore_eos"))


def answer_text(trace: RequestTrace) -> str:
    """The answer as the page shows it: the decoded text of a finished run or of a prefix of one
    (truncate_trace: special tokens left out), else (still streaming) the pieces so far."""
    return trace.output_text if trace.finished or trace.output_text else "".join(trace.output_pieces)


# The step table's columns (engine.trace.STEP_TABLE_COLUMNS) as the page and the CSV name them:
# every measurement carries its unit, every count says it is one (a new engine column keeps its name).
TABLE_HEADERS = {
    "step": "step_index",
    "phase": "phase",  # "prefill" / "decode"
    "positions": "positions_first_to_last",  # "0..3": the positions this pass computed
    "new_positions": "num_new_positions",
    "input_tokens": "input_pieces",  # the token pieces fed in, joined with " | "
    "output_token": "output_piece",
    "start_ms": "start_ms",  # since the request started
    "end_ms": "end_ms",
    "ms": "pass_ms",
    "context_after": "num_cached_positions_after",
    "kv_bytes": "kv_cache_bytes",
    "lock_wait_ms": "lock_wait_ms",
    "consumer_ms": "page_drawing_ms",
}
CSV_BOM = "\ufeff"  # spreadsheet programs read UTF-8 (巴黎, ▁Paris) only when the file starts with it
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # what makes a spreadsheet read a cell as a formula


def step_table(trace: RequestTrace) -> list[dict]:
    """The step table (engine.trace.step_rows) with the headers above."""
    return [{TABLE_HEADERS.get(k, k): v for k, v in row.items()} for row in step_rows(trace)]


def csv_cell(value):
    """A text cell a spreadsheet will not read as a formula (OWASP, CSV injection): a text starting with
    = + - @, a tab or a carriage return gets a leading quote; numbers are left as they are."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def trace_csv(trace: RequestTrace) -> str:
    """The step table as CSV text, starting with a UTF-8 byte-order mark; every text cell through csv_cell
    (a prompt starting with = is shown as text, never run as a formula)."""
    buffer = io.StringIO()
    headers = [TABLE_HEADERS.get(k, k) for k in STEP_TABLE_COLUMNS]
    # CRLF, as RFC 4180 and spreadsheets write it: a cell holding a lone CR (a token piece can) is then
    # quoted, so no program splits the row there and reads what follows as a new cell
    writer = csv.DictWriter(buffer, fieldnames=headers, lineterminator="\r\n")
    writer.writeheader()
    writer.writerows({k: csv_cell(v) for k, v in row.items()} for row in step_table(trace))
    return CSV_BOM + buffer.getvalue()


def download_stem(trace: RequestTrace, stamp: str) -> str:
    """A file name (no extension) that tells runs apart: lengths, then when it ran.

    `stamp` is the run's local time as "YYYYmmdd-HHMMSS" (see run_stamp).
    """
    return f"prefill-decode_prompt{trace.prompt_len}_answer{len(trace.steps)}_{stamp}"


def run_stamp(when: datetime.datetime) -> str:
    return when.strftime("%Y%m%d-%H%M%S")


# ---------------------------------------------------------------------------
# Figures in words: the alt text of each diagram (what it shows, its key numbers)
# ---------------------------------------------------------------------------

ALT_QUOTE_CHARS = 40  # a quoted prompt or answer in an alt text keeps at most this many characters


def _quoted(text: str, keep_end: bool = False) -> str:
    """Visible text, cut to ALT_QUOTE_CHARS (a stretched prompt keeps its end, the part that asks)."""
    shown = " ".join(shown_piece(text).split())
    if len(shown) <= ALT_QUOTE_CHARS:
        return shown
    return "…" + shown[-ALT_QUOTE_CHARS + 1:] if keep_end else shown[:ALT_QUOTE_CHARS - 1] + "…"


def _alt_numbers(trace: RequestTrace) -> dict[str, object]:
    """Every number any figure's alt text quotes, formatted for the page."""
    metrics, prefill = trace.metrics, trace.prefill
    answer = answer_text(trace)
    return {
        "prompt": _quoted(trace.prompt, keep_end=True), "answer": _quoted(answer),
        "first": _quoted(trace.steps[0].output_piece) if trace.steps else "",
        "prompt_len": trace.prompt_len, "output_len": len(trace.steps), "num_passes": len(trace.steps),
        "num_decode": len(trace.decode_steps), "num_positions": sum(s.num_positions for s in trace.steps),
        "prefill_ms": format_ms(prefill.duration_ms if prefill else None),
        "ttft": format_ms(metrics.ttft_ms if metrics else None),
        "e2el": format_ms(metrics.e2el_ms if metrics else None),
        "tpot": format_ms(metrics.tpot_ms if metrics else None),
        "p50": format_ms(metrics.p50_itl_ms if metrics and metrics.itl_ms else None),
        "p99": format_ms(metrics.p99_itl_ms if metrics and metrics.itl_ms else None),
        "max": format_ms(metrics.max_itl_ms if metrics and metrics.itl_ms else None),
        "num_layers": trace.model.num_layers, "per_token": format_bytes(trace.model.kv_bytes_per_token),
        "prefill_bytes": format_bytes(prefill.kv_bytes if prefill else 0), "final_bytes": format_bytes(trace.kv_bytes),
        "num_tokens": trace.steps[-1].context_after if trace.steps else 0,
    }


FIGURE_ALT_KEYS = {name: f"alt_{name}" for name in
                   ("timeline", "blocks", "kv_growth", "latency", "animation", "review_map")}


def figure_alt(name: str, trace: RequestTrace, lang: str) -> str:
    """The text alternative of the live diagram `name` (lesson.diagrams.DIAGRAMS) for `trace`.

    Plain text for an <img alt>: a screen reader reads it, a browser never parses it.
    """
    return t(lang, FIGURE_ALT_KEYS[name], **_alt_numbers(trace))


def schematic_alt(prompt_len: int, output_len: int, lang: str) -> str:
    """The text alternative of the block sketch (lesson.diagrams.render_blocks_schematic)."""
    return t(lang, "alt_blocks_schematic", prompt_len=prompt_len, num_decode=output_len - 1,
             num_passes=output_len, num_positions=prompt_len + output_len - 1)


def _compare_numbers(comparison) -> dict[str, object]:
    """The totals of an engine.compare.CacheComparison, formatted for the page (measured, never made up)."""
    return {
        "prompt_len": comparison.prompt_len, "num_tokens": comparison.num_steps,
        "off_ms": format_ms(comparison.off_total_ms), "on_ms": format_ms(comparison.on_total_ms),
        "off_flops": format_count(int(comparison.off_total_flops)),
        "on_flops": format_count(int(comparison.on_total_flops)),
    }


def cache_compare_alt(comparison, lang: str) -> str:
    """The text alternative of the cache on/off figure (lesson.diagrams.render_cache_compare)."""
    return t(lang, "alt_cache_compare", **_compare_numbers(comparison))


def cache_compare_caption(comparison, lang: str) -> str:
    """One line under that figure: the totals off vs on and how many times more the cache-off run cost
    (and, when it cost no more time, why: a short run's fixed cost per pass, and noise)."""
    time_ratio = comparison.off_total_ms / comparison.on_total_ms if comparison.on_total_ms > 0 else math.inf
    flops_ratio = comparison.off_total_flops / comparison.on_total_flops if comparison.on_total_flops > 0 else math.inf
    words = t(lang, "cache_compare_caption", time_ratio=f"{time_ratio:.1f}", flops_ratio=f"{flops_ratio:.1f}",
              **_compare_numbers(comparison))
    if time_ratio <= 1.0:  # the cache-off run was as fast or faster: say why, or the ratio reads as nonsense
        words += " " + t(lang, "cache_compare_no_saving")
    return words


def attention_alt(attention, lang: str) -> str:
    """The text alternative of one Decode step's attention map (lesson.diagrams.render_attention)."""
    return t(lang, "alt_attention", step=attention.decode_index, num_layers=attention.num_layers,
             context=attention.context)


# ---------------------------------------------------------------------------
# The bottleneck lab (app_pages/bottleneck_lab.py): the cost model's words and tables
# ---------------------------------------------------------------------------

LAB_DEVICE_SPECS = ("this", "h200", "h100", "a100", "l4")  # "this": the machine running the app, measured
LAB_DTYPES = ("fp32", "bf16", "int8", "int4")  # engine.cost.DTYPE_BYTES: 4, 2, 1, 0.5 bytes per element
OVERHEAD_EFFICIENCY = 0.3  # a pass under 30 % of its floor spends most of its time on something else


def lab_roofs_are_the_runs(trace: RequestTrace, spec_key: str, as_run: bool) -> bool:
    """The roof rule: a measured pass is drawn only against the roofs of the machine that measured it,
    in the dtypes it ran in. True for "this" (this machine's measured roofs) and for the datasheet of
    the very chip the trace's provenance names (a run recorded on an H200 against H200's datasheet);
    False for any other datasheet and for a preview in other dtypes: there the cost model's
    prediction is drawn alone (lab_prediction_only) and the measurement stays this machine's."""
    if not as_run:
        return False
    if spec_key == "this":
        return True
    provenance = trace.provenance
    return bool(provenance and provenance.gpu) and spec_for_device_name(provenance.gpu) is DEVICE_SPECS.get(spec_key)


def lab_prediction_only(floors):
    """The same floors with no measured time (every measured_ms 0): the figures then draw the cost
    model's prediction alone, and no ratio of a floor to another machine's time can be formed."""
    return dataclasses.replace(floors, steps=tuple(dataclasses.replace(s, measured_ms=0.0) for s in floors.steps))


def lab_median_decode(floors):
    """The Decode pass whose measured time is the median (a real pass), or None without Decode."""
    decode = sorted(floors.phase_steps("decode"), key=lambda s: s.measured_ms)
    return decode[(len(decode) - 1) // 2] if decode else None


def lab_cost_table(floors, lang: str, compared: bool = True) -> list[dict]:
    """One row for the run's Prefill and one for its median Decode step: the cost model beside the clock.

    `compared` False (lab_roofs_are_the_runs: another device's datasheet, or other dtypes): the run's
    time stays in the table, headed as this machine's measurement, and no floor ÷ measured is formed."""
    from lesson.diagrams.roofline import fmt_share, fmt_time, si

    rows = []
    picks = [s for s in (floors.steps[0] if floors.steps else None, lab_median_decode(floors)) if s is not None]
    measured = t(lang, "lab_col_measured" if compared else "lab_col_measured_here")
    for step in picks:
        name = t(lang, "phase_prefill") if step.phase == "prefill" else f"{t(lang, 'phase_decode')} D{step.index}"
        row = {
            t(lang, "lab_col_pass"): name,
            t(lang, "lab_col_positions"): t(lang, "lab_positions", n=step.new_positions, c=step.context),
            "FLOPs": si(step.flops).strip(),
            t(lang, "lab_col_bytes"): si(step.bytes).strip() + "B",
            "FLOP/B": f"{step.intensity:,.2f}",
            t(lang, "lab_col_floor"): fmt_time(step.floor_ms),
            t(lang, "lab_col_bound"): t(lang, f"lab_bound_{step.bound}"),
            measured: fmt_time(step.measured_ms),
        }
        if compared:
            row[t(lang, "lab_col_efficiency")] = fmt_share(step.efficiency)
        rows.append(row)
    return rows


def lab_prediction_text(floors, lang: str) -> str:
    """Which bound the cost model predicts for each phase on this device, and why (intensity vs ridge)."""
    prefill, decode = floors.steps[0], lab_median_decode(floors)
    words = t(lang, "lab_prediction", device=escape_markdown(device_label(floors.device_name, lang)),
              ridge=f"{floors.ridge_intensity:,.1f}",
              n=prefill.new_positions, prefill_i=f"{prefill.intensity:,.1f}",
              prefill_bound=t(lang, f"lab_bound_{prefill.bound}"))
    if decode is not None:
        words += " " + t(lang, "lab_prediction_decode", c=decode.context, decode_i=f"{decode.intensity:,.2f}",
                         decode_bound=t(lang, f"lab_bound_{decode.bound}"))
    return words


def lab_agreement_text(floors, lang: str, measured_here: bool, as_run: bool = True) -> str:
    """Does the measurement agree with the floor? On a CPU with a tiny model it mostly does not:
    each pass pays a fixed cost (Python, launching every layer's operations) the cost model leaves out."""
    from lesson.diagrams.roofline import fmt_share, fmt_time

    if not measured_here:
        return t(lang, "lab_other_device", device=escape_markdown(device_label(floors.device_name, lang)))
    if not as_run:  # floors for other dtypes than the run's: a preview, not a check
        return t(lang, "lab_other_dtype", weights=floors.weight_dtype, kv=floors.kv_dtype)
    prefill, decode = floors.steps[0], lab_median_decode(floors)
    parts = []
    for step in (prefill, decode):
        if step is None:
            continue
        # under its floor: the roofs were measured low (a busy machine), never "only 0.5x slower"
        key = "lab_under_floor" if step.efficiency > 1 else \
            "lab_agrees" if step.efficiency >= OVERHEAD_EFFICIENCY else "lab_overhead"
        parts.append(t(lang, key, phase=t(lang, f"phase_{step.phase}"), measured=fmt_time(step.measured_ms),
                       floor=fmt_time(step.floor_ms), eff=fmt_share(step.efficiency),
                       factor=f"{step.measured_ms / step.floor_ms:,.1f}" if step.floor_ms > 0 else "—"))
    if any(s is not None and s.efficiency < OVERHEAD_EFFICIENCY for s in (prefill, decode)):
        parts.append(t(lang, "lab_overhead_why"))
    return " ".join(parts)


def lab_dtype_rows(floors_by_dtype: dict[str, object], lang: str) -> list[dict]:
    """The Decode step's floor at each weight dtype (the next lesson, quantization, previewed)."""
    from lesson.diagrams.roofline import fmt_time

    rows = []
    for dtype, floors in floors_by_dtype.items():
        step = lab_median_decode(floors) or floors.steps[0]
        rows.append({t(lang, "lab_col_weights"): dtype, t(lang, "lab_col_kv"): floors.kv_dtype,
                     t(lang, "lab_col_floor"): fmt_time(step.floor_ms),
                     t(lang, "lab_col_bound"): t(lang, f"lab_bound_{step.bound}")})
    return rows


SWEEP_GROWS = 1.5  # last point over first: above it a sweep "grew", below it is "nearly flat"
BATCH_PAYS = 1.2  # positions per second, largest batch over batch 1: above it batching paid


def lab_sweep_caption(sweep, lang: str) -> str:
    """First and last point of a sweep, measured and floor, in words that fit what was measured:
    Prefill grew, hardly grew or (only noise can) did not; a Decode step stayed flat or grew with
    the context; batching paid or did not. Then the outliers, if any, and the points left out."""
    from lesson.diagrams.roofline import fmt_time

    first, last = sweep.points[0], sweep.points[-1]
    ratio, gain = last.median_ms / first.median_ms, last.tokens_per_s / first.tokens_per_s
    key = f"lab_sweep_caption_{sweep.kind.replace('-', '_')}" + _sweep_variant(sweep.kind, ratio, gain)
    words = t(lang, key, x0=f"{first.value:,}", x1=f"{last.value:,}",
              m0=fmt_time(first.median_ms), m1=fmt_time(last.median_ms), f0=fmt_time(first.floor_ms),
              f1=fmt_time(last.floor_ms), ratio=f"{ratio:,.1f}" if ratio >= 0.095 else f"{ratio:.2g}",
              r0=f"{first.tokens_per_s:,.0f}", r1=f"{last.tokens_per_s:,.0f}", gain=f"{gain:,.1f}")
    outliers = sum(len(point_spread(p.times_ms)[2]) for p in sweep.points)
    if outliers:
        words += " " + t(lang, "lab_sweep_outliers", n=outliers, total=sum(len(p.times_ms) for p in sweep.points))
    if sweep.skipped:
        words += " " + t(lang, "lab_sweep_skipped", values=", ".join(f"{v:,}" for v in sweep.skipped))
    return words


def _sweep_variant(kind: str, ratio: float, gain: float) -> str:
    """The caption key's ending for what the sweep measured (see lab_sweep_caption)."""
    if kind == "prefill":
        return "" if ratio >= SWEEP_GROWS else "_flat" if ratio > 1.0 else "_noise"
    if kind == "decode-context":
        return "_grows" if ratio >= SWEEP_GROWS else ""
    return "" if gain >= BATCH_PAYS else "_flat"


def lab_sweep_kept_text(sweep, lang: str) -> str:
    """When and where a kept sweep was measured (its provenance), so a visitor knows how old it is."""
    provenance = sweep.provenance
    if provenance is None or not provenance.recorded_at:
        return t(lang, "lab_sweep_kept_unknown")
    when = provenance.recorded_at.replace("T", " ").replace("Z", " UTC")
    return t(lang, "lab_sweep_kept", when=when, machine=escape_markdown(provenance.machine))


# ---------------------------------------------------------------------------
# The lab's engine modes (issue 10): app_support/modes.py draws these
# ---------------------------------------------------------------------------

MODES_MAX_NEW_TOKENS = 64  # per mode: a few seconds for every mode together on the default model


def engine_caption(trace: RequestTrace, lang: str) -> str:
    """"Engine: eager · attention kernel: Prefill flash, Decode flash" ("n/a" for an older trace;
    "no Decode step" for a one-token answer)."""
    from lesson.diagrams.modes import step_kernels, kernel_words

    prefill = trace.prefill
    kernels = kernel_words(lang, prefill.attention_kernel if prefill else "", step_kernels(trace.decode_steps),
                           decode_ran=bool(trace.decode_steps))
    return t(lang, "modes_engine_caption", mode=trace.engine_mode, kernels=kernels)


def offered_modes(device_type: str, settings: ServerSettings, lang: str) -> list[tuple[str, str | None]]:
    """(mode, why it cannot run here or None) for each mode the lab offers: graph needs CUDA;
    compiled is left out where the operator turned it off (PREFILL_DECODE_COMPILE=0)."""
    from engine.trace import ENGINE_MODES

    out = []
    for mode in ENGINE_MODES:
        if mode == "compiled" and not settings.compile_mode:
            continue
        reason = t(lang, "modes_graph_off", device=device_type) if mode == "graph" and device_type != "cuda" else None
        out.append((mode, reason))
    return out


def modes_table(rows, lang: str) -> list[dict]:
    """One row per mode asked (lesson.diagrams.modes.ModeSummary): what ran (and why it fell back, a
    column only when one did), Prefill, the median Decode step, measured ÷ floor, the attention
    kernels (Prefill / Decode), and whether the tokens match eager's."""
    na = t(lang, "modes_kernel_na")
    same = {True: "✓", False: "✗", None: "—"}
    any_note = any(row.note for row in rows)
    table = []
    for row in rows:
        # One column for both: "compiled", or "compiled → static" when the mode asked for fell back.
        line = {t(lang, "modes_col_mode"): row.asked if row.ran == row.asked else f"{row.asked} → {row.ran}"}
        if any_note:
            line[t(lang, "modes_col_note")] = row.note or "—"
        line.update({
            t(lang, "modes_col_prefill"): format_ms(row.prefill_ms),
            t(lang, "modes_col_decode"): format_ms(row.median_ms),
            t(lang, "modes_col_floor"): f"{row.vs_floor:,.1f}×" if row.vs_floor else "—",
            t(lang, "modes_col_kernels"): f"{row.prefill_kernel or na} / "
                                          f"{row.decode_kernel or (na if row.decode_ms else '—')}",
            t(lang, "modes_col_setup"): format_ms(row.setup_ms) if row.setup_ms >= 0.05 else "—",
            t(lang, "modes_col_same"): "—" if row.asked == "eager" else same[row.same_tokens],
        })
        table.append(line)
    return table


def modes_explanations(rows, runs: Mapping[str, RequestTrace], device_type: str, lang: str,
                       estimate_ms: float | None = None) -> list[str]:
    """Where this measurement departs from the lesson's story, in Markdown sentences: static slower
    than eager (a preallocated cache attended in full), compiled not faster, no graph off CUDA, every
    mode above the floor, tokens that differ from eager's."""
    by_mode = {r.asked: r for r in rows if r.median_ms is not None and r.ran == r.asked}
    eager, static, compiled = by_mode.get("eager"), by_mode.get("static"), by_mode.get("compiled")
    words = []
    if eager and static and static.median_ms > eager.median_ms:
        trace = runs["static"]
        per_token = trace.model.kv_bytes_per_token
        positions = trace.steps[-1].kv_bytes // per_token if per_token else 0
        words.append(t(lang, "modes_why_static_slower", static=format_ms(static.median_ms),
                       eager=format_ms(eager.median_ms), positions=f"{positions:,}",
                       context=trace.steps[-1].context_before if trace.steps else 0))
    if eager and compiled:
        key = "modes_why_compiled_faster" if compiled.median_ms < eager.median_ms else "modes_why_compiled_not_faster"
        words.append(t(lang, key, saved=format_ms(eager.median_ms - compiled.median_ms),
                       eager=format_ms(eager.median_ms), compiled=format_ms(compiled.median_ms)))
    if device_type != "cuda":
        words.append(t(lang, "modes_why_graph_cpu", device=device_type))
    timed = [r for r in rows if r.median_ms is not None]
    best = min(timed, key=lambda r: r.median_ms) if timed else None
    if best is not None and best.floor_ms and best.vs_floor > 1:
        words.append(t(lang, "modes_why_floor", best=format_ms(best.median_ms), floor=format_ms(best.floor_ms),
                       factor=f"{best.vs_floor:,.1f}"))
    if eager and best is not None and best is not eager and estimate_ms:
        words.append(t(lang, "modes_estimate_vs_saved", est=format_ms(estimate_ms), best=best.asked,
                       saved=format_ms(eager.median_ms - best.median_ms)))
    built = max(rows, key=lambda r: r.setup_ms, default=None)
    if built is not None and built.setup_ms >= 1000:
        words.append(t(lang, "modes_why_setup", mode=built.asked, setup=format_ms(built.setup_ms)))
    differ = [r.asked for r in rows if r.same_tokens is False]
    if differ:
        words.append(t(lang, "modes_why_tokens_differ", modes=", ".join(differ)))
    return words

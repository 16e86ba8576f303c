"""The lesson's last section, "下一课预告：量化", from a measured weight-formats file: what INT8 and INT4 store,
what a Decode step reads and how long it took per format, what the embedded model's answer lost, and two
predict-then-measure exercises graded from the same file.

Pure: a FormatRuns (engine/contract/format_runs.py, written by `python -m bench.quantization --record`) in,
words and table rows out, in zh or en. Every number comes from the file; the model's answers are shown as
escaped text, never markup.
"""

from __future__ import annotations

from engine.contract.format_runs import FormatRow, FormatRuns, ModelFormats
from engine.contract.weights import DEFAULT_GROUP_SIZE

from .exercises import Grade, Number
from .formats import escape_markdown, fmt_bytes, format_ms, shown_piece
from .text import t

SPEEDUP_ANSWER = Number(unit="times", rel_tol=0.25)  # a guess within 25 % of the measured speed-up is right
END_OF_ANSWER = "</s>"
BYTES_BOUND_SHARE = 0.8  # a speed-up this close to the bytes' ratio says the memory bounds the step


def int4_row(model: ModelFormats) -> FormatRow | None:
    """The INT4 row the section quotes: groups of the engine's default size, else the first INT4 one."""
    return model.row("int4", DEFAULT_GROUP_SIZE) or next((r for r in model.rows if r.weights == "int4"), None)


def section_intro(runs: FormatRuns, lang: str) -> str:
    row = int4_row(runs.embedded)
    return t(lang, "q_intro", group=row.group_size if row else DEFAULT_GROUP_SIZE, cpu=escape_markdown(runs.cpu),
             torch=escape_markdown(runs.torch_version), threads=runs.threads, load=f"{runs.load_average:.2f}",
             recorded_at=recorded_on(runs), steps=runs.steps,
             rounds=runs.rounds)


def recorded_on(runs: FormatRuns) -> str:
    return escape_markdown(runs.recorded_at[:16].replace("T", " ") + " UTC")


def provenance_caption(shown: FormatRuns, lang: str, live: bool = False, recorded: FormatRuns | None = None) -> str:
    """Where the shown numbers come from: the recording, or a live run (naming the recording the real-size
    table still comes from, when `recorded` has one)."""
    if not live:
        return t(lang, "q_recording", cpu=escape_markdown(shown.cpu), recorded_at=recorded_on(shown))
    if recorded is None or recorded.preset is None:
        return t(lang, "q_live_only", cpu=escape_markdown(shown.cpu), recorded_at=recorded_on(shown))
    return t(lang, "q_live", cpu=escape_markdown(shown.cpu), recorded_at=recorded_on(shown),
             recorded_cpu=escape_markdown(recorded.cpu), recorded_on=recorded_on(recorded))


def live_progress(phase: str, done: int, total: int, seconds: float, lang: str) -> str:
    """The wait of a live run: its phase ("wait", "load", "round", "quality"), units done, seconds elapsed."""
    return t(lang, "q_live_running", phase=t(lang, f"q_phase_{phase}"), done=done, total=total,
             seconds=f"{seconds:.0f}")


def shown_answer(answer: str) -> str:
    """A recorded answer as plain text for the page: the end-of-sequence mark cut, pieces made visible."""
    return escape_markdown(shown_piece(answer.removesuffix(END_OF_ANSWER)))


def formats_rows(model: ModelFormats, lang: str) -> list[dict[str, str]]:
    """One row per format: bytes read per Decode step, the step's median, both ratios to fp32, and (where
    measured) the quality against fp32 and the answer to 法国的首都是."""
    rows = []
    for r in model.rows:
        row = {t(lang, "q_col_format"): r.label, t(lang, "q_col_read"): fmt_bytes(r.read_bytes),
               t(lang, "q_col_step"): format_ms(r.decode_median_ms),
               t(lang, "q_col_speedup"): f"{model.speedup(r.weights, r.group_size):.2f}",
               t(lang, "q_col_bytes_ratio"): f"{model.bytes_ratio(r.weights, r.group_size):.2f}"}
        if r.mean_kl is not None:
            row |= {t(lang, "q_col_kl"): f"{r.mean_kl:.4f}", t(lang, "q_col_top1"): f"{r.top1:.1%}",
                    t(lang, "q_col_answer"): shown_answer(lesson_answer(r, lang))}
        rows.append(row)
    return rows


def table_title(model: ModelFormats, lang: str) -> str:
    key = "q_table_preset" if model.random_weights else "q_table_embedded"
    return t(lang, key, model=escape_markdown(model.model_id))


def preset_story(runs: FormatRuns, lang: str) -> str:
    """Bytes against time on the real-size shape, in words; "" when the file has no preset or no INT4 row."""
    model = runs.preset
    row = int4_row(model) if model else None
    if row is None:
        return ""
    fp32, speedup, bytes_ratio = model.rows[0], model.speedup("int4", row.group_size), model.bytes_ratio("int4",
                                                                                                      row.group_size)
    key = "q_preset_story_bytes" if speedup >= BYTES_BOUND_SHARE * bytes_ratio else "q_preset_story"
    return t(lang, key, model=escape_markdown(model.model_id), fp32_read=fmt_bytes(fp32.read_bytes),
             int4_read=fmt_bytes(row.read_bytes), bytes_ratio=f"{bytes_ratio:.1f}", speedup=f"{speedup:.1f}",
             fp32_ms=format_ms(fp32.decode_median_ms),
             int4_ms=format_ms(row.decode_median_ms))


LESSON_ANSWERS = {"zh": "巴黎", "en": " Paris"}  # what fp32 answers to the lesson's example in each language


def lesson_answer(row, lang: str) -> str:
    """A format's greedy answer to the lesson's example in the page's language (法国的首都是 / The capital of
    France is)."""
    return row.answer_en if lang == "en" else row.answer_zh


def answer_kept(runs: FormatRuns, lang: str = "zh") -> bool | None:
    """Whether the embedded model still answers the lesson's example (巴黎 / Paris) with INT4 weights; None
    without an INT4 row."""
    row = int4_row(runs.embedded)
    return None if row is None else lesson_answer(row, lang).startswith(LESSON_ANSWERS[lang])


def answer_story(runs: FormatRuns, lang: str) -> str:
    """What INT4 did to the lesson's answer: kept (with how far the distributions moved) or changed."""
    row = int4_row(runs.embedded)
    if row is None:
        return ""
    key = "q_answer_kept" if answer_kept(runs, lang) else "q_answer_changed"
    return t(lang, key, group=row.group_size, answer=shown_answer(lesson_answer(row, lang)), kl=f"{row.mean_kl:.4f}",
             top1=f"{row.top1:.1%}")


# --- the two exercises ------------------------------------------------------------------------------

def speedup_model(runs: FormatRuns) -> ModelFormats:
    """The model the speed-up question is about: the real-size preset where the file has one."""
    return runs.preset if runs.preset and int4_row(runs.preset) else runs.embedded


def speedup_question(runs: FormatRuns, lang: str) -> str:
    return t(lang, "q_ex_speedup", model=escape_markdown(speedup_model(runs).model_id))


def grade_speedup(runs: FormatRuns, answer: float) -> Grade:
    """A guess of INT4's Decode speed-up over fp32, graded against the measured one (within 25 %)."""
    model = speedup_model(runs)
    row = int4_row(model)
    measured = model.speedup("int4", row.group_size)
    low, high = SPEEDUP_ANSWER.accepted(measured)
    return Grade("q_ex_speedup", float(answer), measured, SPEEDUP_ANSWER.accepts(float(answer), measured), low, high,
                 {"bytes_ratio": f"{model.bytes_ratio('int4', row.group_size):.1f}"})


def grade_paris(runs: FormatRuns, answer: str, lang: str = "zh") -> Grade:
    """"yes" or "no" to "does it still answer 巴黎 (Paris) with INT4 weights?", against the recorded answer."""
    if answer not in ("yes", "no"):
        raise ValueError(f"{answer!r} is not yes or no")
    measured = "yes" if answer_kept(runs, lang) else "no"
    return Grade("q_ex_paris", answer, measured, answer == measured,
                 params={"answer": shown_answer(lesson_answer(int4_row(runs.embedded), lang))})


def grade_words(grade: Grade, lang: str) -> str:
    """The feedback on a graded answer, in `lang`: right or not, with the measured value and why."""
    suffix = "_right" if grade.correct else "_wrong"
    if grade.key == "q_ex_paris":
        return t(lang, grade.key + suffix, **grade.params)
    return t(lang, grade.key + suffix, measured=f"{grade.measured:.2f}", answer=f"{grade.answer:g}",
             low=f"{grade.low:.2f}", high=f"{grade.high:.2f}", **grade.params)

"""The request timeline: one row per forward pass, like the lesson's table.

    Pass | positions fed in (chips) | token out | phase | time axis (measured)

The Prefill row shows every prompt piece from the real tokenizer (head and tail
chips plus "…N more…" when they do not fit); each Decode row shows the one token
fed back, with an arrow from the previous row's output. A verify row (speculative
decoding) is drawn like a small Prefill: the token fed back and the k drafts, k+1
positions in one pass, the drafts it rejected struck out (their K and V dropped). The time panel draws each
pass at its measured start/end, marks TTFT at the end of Prefill and ITL under
each Decode. The time before each pass, from the previous token (the request
start for Prefill), is a thin bar in the waiting colour (tokenizing, queued for
the model, bookkeeping), with the part the page spent drawing in its own colour;
a legend under the axis names both. Past `MAX_ROWS` passes the middle Decode rows
fold into one gap row.

With a width to fit (`Style.max_width`, classroom mode) and type too large for
one line per pass, the figure folds instead of shrinking: the prompt row shows
fewer chips ("…N more…"), and the time panel moves under the table, full width,
one thin row per pass with the pass's name again. Narrower still (`NARROW_WIDTH`, a phone's
column: `phone_style()`), the figure is "narrow": the time panel comes first, right under the title,
so its axis is on a phone's first screen, then the table without its phase column (each chip
and the pass's time bar carry the phase's colour).

`timeline_layout()` computes every coordinate; `draw_timeline()` only draws. The
animation module reuses both.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from engine.contract.trace import RequestTrace

from ..layout import LinearScale, Slot, clip_text, fit_chips, nice_ticks, plan_slots, text_width
from ..text import Table, label, table_for
from ..style import DEFAULT_STYLE, Style
from ..formats import fmt_count, fmt_int, fmt_ms
from ..svgtext import piece_label, visible
from ._common import (
    add_title, halo, arrow_marker, header, legend_item, new_drawing, notes, notes_height, text, to_string,
)

MAX_ROWS, HEAD_ROWS, TAIL_ROWS = 9, 4, 2
FLOOR_INK = "#0f172a"  # a pass's floor, dark over its bar (lesson.pass_floors: floor + the rest)
MIN_SLICE_PX = 1.5  # waits thinner than this are not drawn (they would be a hairline beside the bar)
PAD, ROW_H, GAP_ROW_H, CHIP_H, CHIP_GAP = 32, 48, 36, 28, 6
INPUT_BUDGET, TIME_W, CHIP_SCAN = 460, 330, 64
NARROW_WIDTH = 600  # a width to fit under this (a phone's column) draws the narrow layout: time panel first


@dataclass(frozen=True)
class Chip:
    x: float
    y: float
    w: float
    text: str
    tooltip: str
    kind: str  # "piece", "rejected" (a verify pass's draft it did not keep), "more" or "output"
    position: int = -1


@dataclass(frozen=True)
class Row:
    slot: Slot
    phase: str
    y: float  # top
    h: float
    chips: tuple[Chip, ...]
    output: Chip | None
    bar: tuple[float, float]  # x range on the time panel
    wait: tuple[float, float] | None  # previous token (request start for Prefill) -> pass start
    page: tuple[float, float] | None  # the part of that wait the page spent drawing (Step.consumer_ms)
    wait_ms: float  # the whole wait before the pass
    itl: tuple[float, float] | None  # previous token -> this token
    time_label: str
    time_label_x: float
    time_label_anchor: str
    time_label_above: bool = False  # lifted over the wait bar it would otherwise be drawn across
    time_y: float = -1.0  # middle of the row's time marks: beside the row, or below the table when folded

    @property
    def cy(self) -> float:
        return self.y + self.h / 2

    @property
    def chips_bottom(self) -> float:
        return self.y + self.h - (self.output.y - self.y) if self.output else self.cy

    @property
    def time_cy(self) -> float:
        return self.time_y if self.time_y >= 0 else self.cy


@dataclass(frozen=True)
class TimelineLayout:
    width: float
    height: float
    col_x: dict  # "pass", "input", "output", "phase", "time", "time_end"
    header_y: float
    rows: tuple[Row, ...]
    arrows: tuple[tuple[int, str, str], ...]  # (row index it enters, path d, phase)
    ticks: tuple[tuple[float, str], ...]  # (x, label) on the time axis
    axis_y: float
    ttft_x: float
    legend_y: float
    legend: tuple[str, ...]  # the kinds of wait drawn: "waiting", "page"
    notes_y: float
    notes: tuple[str, ...]
    time_top: float = -1.0  # top of the time panel when it is folded under the table
    table_right: float = -1.0  # right end of the table's row rules when folded

    @property
    def folded(self) -> bool:
        return self.time_top >= 0

    @property
    def narrow(self) -> bool:
        """The time panel above the table, and no phase column (a phone's column)."""
        return bool(self.col_x.get("narrow"))


def _chip_w(content: str, style: Style) -> float:
    return max(text_width(content, style.small_size) + 16, 26)


def _candidates(num_pieces: int) -> list[int]:
    """Pieces worth measuring: a row shows at most a few dozen chips, from either end."""
    if num_pieces <= 2 * CHIP_SCAN:
        return list(range(num_pieces))
    return list(range(CHIP_SCAN)) + list(range(num_pieces - CHIP_SCAN, num_pieces))


def _input_chips(trace: RequestTrace, slot: Slot, x0: float, y: float, style: Style, table,
                 budget: float = INPUT_BUDGET) -> tuple[Chip, ...]:
    if slot.kind == "gap":
        return ()
    step = trace.steps[slot.first]
    total = len(step.input_pieces)
    candidates = _candidates(total)
    labels = [piece_label(step.input_pieces[i]) for i in candidates]
    widths = [_chip_w(t, style) for t in labels]
    more_w = _chip_w(label(table, "more_pieces", n=fmt_int(total)), style)
    head, tail = fit_chips(widths, budget, CHIP_GAP, more_w)
    hidden = total - head - tail
    chips, x = [], x0
    for k in list(range(head)) + list(range(len(candidates) - tail, len(candidates))):
        if k == len(candidates) - tail and hidden:
            x = _append_more(chips, x, y, hidden, style, table)
        i = candidates[k]
        tip = f"{step.context_before + i}: {visible(step.input_pieces[i])!r} (id {step.input_ids[i]})"
        rejected = step.phase == "verify" and i > step.num_accepted  # input 0 is the token fed back, then drafts
        if rejected:
            tip += " · " + label(table, "chip_rejected")
        kind = "rejected" if rejected else "piece"
        chips.append(Chip(x, y, widths[k], labels[k], tip, kind, step.context_before + i))
        x += widths[k] + CHIP_GAP
    if hidden and tail == 0:
        _append_more(chips, x, y, hidden, style, table)
    return tuple(chips)


def _append_more(chips: list, x: float, y: float, hidden: int, style: Style, table) -> float:
    words = label(table, "more_pieces", n=fmt_int(hidden))
    chips.append(Chip(x, y, _chip_w(words, style), words, words, "more"))
    return x + chips[-1].w + CHIP_GAP


def _columns(trace: RequestTrace, slots, style: Style, table) -> dict:
    """x of each column; with a width to fit that one line per pass overflows, "folded": the
    time panel goes under the table and the chips get what room is left."""
    pass_w = max(text_width(label(table, "pass_n", n=len(trace.steps)), style.font_size), 56) + 16
    out_w = max([_chip_w(piece_label(trace.steps[s.first].output_piece), style) for s in slots if s.kind == "pass"]
                + [text_width(label(table, "col_output"), style.small_size) + 8])
    phases = {"prefill", "decode"} | {s.phase for s in trace.steps}  # the whole run's (`trace` is `full` here)
    phase_w = max(92, max(text_width(label(table, f"phase_{p}"), style.small_size) for p in phases) + 30)
    narrow = style.fitted and style.max_width < NARROW_WIDTH
    if narrow:  # a phone's column: the chips' and the time bar's colours say the phase
        phase_w = 0
    budget = INPUT_BUDGET
    if style.fitted:  # the chips get what the other columns leave of the width
        budget = min(INPUT_BUDGET, style.max_width - 2 * PAD - pass_w - 40 - out_w - (0 if narrow else 24) - phase_w)
        budget = max(budget, 3 * _chip_w("…", style))
    chip_rows = [_input_chips(trace, slot, 0, 0, style, table, budget) for slot in slots]
    chips_w = max((row[-1].x + row[-1].w for row in chip_rows if row), default=0)
    header_w = text_width(label(table, "col_input"), style.small_size) + 8
    # narrow: the chips' room bounds the column (its header may run on towards the output's, which starts 40 later)
    input_w = max(chips_w, min(header_w, budget) if narrow else header_w)
    col = {"pass": PAD, "input": PAD + pass_w, "budget": budget, "folded": 0, "narrow": int(narrow)}
    col["output"] = col["input"] + input_w + 40
    col["phase"] = col["output"] + out_w + (0 if narrow else 24)
    col["time"] = col["phase"] + phase_w
    col["time_end"] = col["time"] + TIME_W
    if style.fitted and (narrow or col["time_end"] + PAD > style.max_width):
        col["folded"] = 1
        col["table_end"] = col["time"] - (0 if narrow else 8)
        col["time"] = col["input"]
        col["time_end"] = max(style.max_width, col["table_end"] + PAD) - PAD
    return col


def _time_row(trace: RequestTrace, slot: Slot, scale: LinearScale, style: Style, table) -> dict:
    first, last = trace.steps[slot.first], trace.steps[slot.last]
    bar = (scale(first.start_ms), max(scale(last.end_ms), scale(first.start_ms) + 2))
    prev_end = trace.steps[slot.first - 1].end_ms if slot.first > 0 else None
    itl = (scale(prev_end), scale(last.end_ms)) if prev_end is not None and slot.kind == "pass" else None
    wait = page = None
    if slot.kind == "pass":
        wait = _slice(scale, prev_end or 0.0, first.start_ms)
        page_end = first.start_ms - first.lock_wait_ms  # the page drew, then the engine queued for the lock
        page = _slice(scale, page_end - first.consumer_ms, page_end)
    if first.phase == "prefill":
        words = label(table, "ttft", ms=fmt_ms(first.end_ms))
    elif slot.kind == "gap":
        mean = (last.end_ms - prev_end) / slot.count
        words = f"{slot.count} × " + label(table, "itl", ms=fmt_ms(mean))
    else:
        words = label(table, "itl", ms=fmt_ms(last.end_ms - prev_end))
    label_w = text_width(words, style.tiny_size)
    x, anchor = _label_place(bar, label_w, scale)
    wait_ms = first.start_ms - (prev_end or 0.0)
    above = anchor == "end" and any(span and span[0] < x and span[1] > x - label_w for span in (wait, page))
    return {"bar": bar, "wait": wait, "page": page, "wait_ms": wait_ms, "itl": itl, "time_label": words,
            "time_label_x": x, "time_label_anchor": anchor, "time_label_above": above}


def _slice(scale: LinearScale, start_ms: float, end_ms: float) -> tuple[float, float] | None:
    """An x range for a wait, or None when it would be too thin to see."""
    x0, x1 = scale(start_ms), scale(end_ms)
    return (x0, x1) if x1 - x0 >= MIN_SLICE_PX else None


def _label_place(bar: tuple[float, float], width: float, scale: LinearScale) -> tuple[float, str]:
    """Right of the bar if it fits, else inside it if it is wide, else left of it."""
    if bar[1] + 8 + width <= scale.r1 + 4:
        return bar[1] + 6, "start"
    if bar[1] - bar[0] >= width + 12:
        return (bar[0] + bar[1]) / 2, "middle"
    return max(bar[0] - 6, scale.r0 + width), "end"


def timeline_layout(trace: RequestTrace, table: Table, style: Style, header_y: float = 112.0,
                    full: RequestTrace | None = None, run_note: str = "", floors: bool = False) -> TimelineLayout:
    """Coordinates of every mark. `full`: the whole run when `trace` is a prefix of it
    (classroom stepping); the columns and the time axis come from it, so they never move.
    `run_note`: which of several repeats this run is (lesson.spread.run_label), the first note. `floors`: each
    pass's bar shows its floor (render_timeline's floors_ms): the legend and a note say what it is (the legend
    alone in a wide fitted style, classroom mode: the figure fits a projector's window)."""
    if not trace.steps:
        raise ValueError("the timeline needs a trace with at least one forward pass")
    slots = plan_slots(len(trace.steps), MAX_ROWS, HEAD_ROWS, TAIL_ROWS)
    whole = full or trace
    col = _columns(whole, plan_slots(len(whole.steps), MAX_ROWS, HEAD_ROWS, TAIL_ROWS), style, table)
    end_ms = whole.steps[-1].end_ms
    ticks = nice_ticks(0, end_ms, 4)
    scale = LinearScale(0, ticks[-1], col["time"] + 8, col["time_end"] - 8)
    row_h = max(ROW_H, style.small_size + 30)
    rows, y = _table_rows(trace, slots, col, scale, style, table, header_y + 12, row_h)
    if col["narrow"]:
        return _narrow_layout(trace, whole, rows, col, scale, style, table, header_y, full, run_note, floors, ticks)
    time_top = -1.0
    if col["folded"]:  # the time panel under the table: one thin row per pass, same slots
        # Room for the whole run's rows (classroom stepping): the panel and its axis never move.
        rows_h, num_rows = _room(whole, row_h)
        table_end = max(y, header_y + 12 + rows_h)
        time_top = table_end + style.small_size * 2 + 8
        time_h = max(30.0, style.tiny_size * 1.6)
        rows = [replace(row, time_y=time_top + 4 + time_h * (i + 0.5)) for i, row in enumerate(rows)]
        y = time_top + 4 + time_h * max(len(rows), num_rows)
    elif full is not None:  # room for the whole run's rows: stepping fills them, the axis and notes stay put
        y = max(y, header_y + 12 + _room(whole, row_h)[0])
    # A projector's timeline (a width to fit, classroom mode) leaves the floor's note out: its two lines of
    # large type made the figure taller than a 1280x720 window (763 -> 824 px, tests/browser); the legend
    # still names the dark part, and the page's caption and floors figure under it say what it is.
    note_lines = _note_lines(trace, table, run_note, floors and not style.fitted)
    axis_y = y + 10
    legend = _legend(rows, whole, full, scale, style, table, floors)
    legend_y = axis_y + 34 + style.tiny_size * 2
    notes_y = legend_y + 8 if legend else axis_y + 12 + style.tiny_size * 2
    return _finished(trace, col, scale, ticks, style, header_y, rows, axis_y, legend_y, legend, notes_y, note_lines,
                     time_top)


def _legend(rows: list[Row], whole: RequestTrace, full: RequestTrace | None, scale: LinearScale, style: Style,
            table: Table, floors: bool) -> tuple:
    """The legend's entries: the waits drawn (the whole run's while stepping), and the floor where drawn."""
    return wait_legend(rows, whole if full is not None else None, scale, style, table) + (
        ("floor",) if floors else ())


def _finished(trace: RequestTrace, col: dict, scale: LinearScale, ticks, style: Style, header_y: float,
              rows: list[Row], axis_y: float, legend_y: float, legend: tuple, notes_y: float,
              note_lines: tuple[str, ...], time_top: float) -> TimelineLayout:
    """The layout from its placed parts, both shapes alike: its width from the columns, its height from the
    notes below everything else."""
    width = col["time_end"] + PAD
    height = notes_y + notes_height(style, list(note_lines), width - 2 * PAD) + 24
    return TimelineLayout(
        width=width, height=height, col_x=col, header_y=header_y, rows=tuple(rows), arrows=_arrows(rows),
        ticks=tuple((scale(t), f"{t:g}") for t in ticks), axis_y=axis_y,
        ttft_x=scale(trace.steps[0].end_ms), legend_y=legend_y, legend=legend, notes_y=notes_y, notes=note_lines,
        time_top=time_top, table_right=col.get("table_end", -1.0),
    )


def _table_rows(trace: RequestTrace, slots, col: dict, scale: LinearScale, style: Style, table: Table, top: float,
                row_h: float) -> tuple[list[Row], float]:
    """The table's rows from `top` down (chips, output chip, the pass's time marks); and the y under them."""
    chip_h, y, rows = _chip_h(style), top, []
    for slot in slots:
        h = GAP_ROW_H if slot.kind == "gap" else row_h
        chip_y = y + (h - chip_h) / 2
        chips = _input_chips(trace, slot, col["input"], chip_y, style, table, col["budget"])
        step = trace.steps[slot.first]
        out = None
        if slot.kind == "pass":
            text_out = piece_label(step.output_piece)
            out = Chip(col["output"], chip_y, _chip_w(text_out, style), text_out,
                       f"{visible(step.output_piece)!r} (id {step.output_id})", "output", step.context_after)
        rows.append(Row(slot, step.phase, y, h, chips, out, **_time_row(trace, slot, scale, style, table)))
        y += h
    return rows, y


def _note_lines(trace: RequestTrace, table: Table, run_note: str, floors: bool) -> tuple[str, ...]:
    return ((run_note,) if run_note else ()) + (
        label(table, "note_tokenizer"), label(table, "note_first_token"), _measured_on(trace, table)) + (
        (label(table, "note_floor"),) if floors else ()) + (
        (label(table, "legend_rejected"),) if any(s.rejected_ids for s in trace.steps) else ())


def _narrow_layout(trace: RequestTrace, whole: RequestTrace, rows: list[Row], col: dict, scale: LinearScale,
                   style: Style, table: Table, header_y: float, full: RequestTrace | None, run_note: str,
                   floors: bool, ticks) -> TimelineLayout:
    """A phone's column: the time panel right under the title (its axis on the first screen), one thin row
    per pass, its axis and legend; then the table (its header, a row per pass); then the notes. Room for
    the whole run's rows in both (classroom stepping): nothing moves as passes are added."""
    row_h = max(ROW_H, style.small_size + 30)
    rows_h, num_rows = _room(whole, row_h) if full is not None else (0.0, 0)
    time_top, time_h = header_y, max(30.0, style.tiny_size * 1.6)
    axis_y = time_top + 4 + time_h * max(len(rows), num_rows) + 10
    legend = _legend(rows, whole, full, scale, style, table, floors)
    legend_y = axis_y + 34 + style.tiny_size * 2
    table_header_y = (legend_y + 8 if legend else axis_y + 12 + style.tiny_size * 2) + style.small_size * 2 + 16
    rows, y = _table_rows(trace, plan_slots(len(trace.steps), MAX_ROWS, HEAD_ROWS, TAIL_ROWS), col, scale, style,
                          table, table_header_y + 12, row_h)
    rows = [replace(row, time_y=time_top + 4 + time_h * (i + 0.5)) for i, row in enumerate(rows)]
    notes_y = max(y, table_header_y + 12 + rows_h) + 16
    note_lines = _note_lines(trace, table, run_note, floors)
    return _finished(trace, col, scale, ticks, style, table_header_y, rows, axis_y, legend_y, legend, notes_y,
                     note_lines, time_top)


def _room(whole: RequestTrace, row_h: float) -> tuple[float, int]:
    """(height, number) of the most rows any part of `whole` takes: MAX_ROWS passes one row each can
    take more than the whole run, whose middle folds into one gap row."""
    plans = [plan_slots(n, MAX_ROWS, HEAD_ROWS, TAIL_ROWS) for n in {len(whole.steps), min(len(whole.steps), MAX_ROWS)}]
    return (max(sum(GAP_ROW_H if s.kind == "gap" else row_h for s in plan) for plan in plans),
            max(len(plan) for plan in plans))


def _chip_h(style: Style) -> float:
    return max(CHIP_H, style.small_size + 12)


def _measured_on(trace: RequestTrace, table: Table) -> str:
    m = trace.model
    params = fmt_count(m.num_params)
    return label(table, "measured_on", model=m.model_id, params=params, device=m.device, dtype=m.dtype)


def _arrows(rows: list[Row]) -> tuple[tuple[int, str, str], ...]:
    """Elbow arrows: down from row i's output chip, left, down into row i+1's first chip."""
    arrows = []
    for index, (above, below) in enumerate(zip(rows, rows[1:]), start=1):
        if above.output is None or not below.chips:
            continue
        x0, y0 = above.output.x + above.output.w / 2, above.chips_bottom
        target = below.chips[0]
        x1, y1 = target.x + min(target.w / 2, 18), target.y - 1
        mid = round((y0 + y1) / 2, 2)
        arrows.append((index, f"M{x0:g},{y0:g} V{mid:g} H{x1:g} V{y1:g}", above.phase))
    return tuple(arrows)


# --- drawing ---

def _draw_chip(dwg, chip: Chip, phase: str, style: Style):
    if chip.kind == "output":
        fill, stroke, weight, ink = style.paper, style.phase_color(phase), "bold", style.ink
    elif chip.kind in ("more", "rejected"):
        fill, stroke, weight, ink = style.panel, style.grid, None, style.muted_ink
    else:
        fill, stroke, weight, ink = style.phase_light(phase), style.phase_color(phase), None, style.ink
    position = {"data-position": chip.position} if chip.position >= 0 else {}
    group = dwg.g(class_=f"chip {chip.kind} {phase}", **position)
    chip_h = _chip_h(style)
    group.add(dwg.rect((chip.x, chip.y), (chip.w, chip_h), rx=6, fill=fill, stroke=stroke, stroke_width=1.5))
    group.add(text(dwg, chip.text, chip.x + chip.w / 2, chip.y + chip_h / 2 + style.small_size * 0.36,
                   size=style.small_size, fill=ink, anchor="middle", weight=weight))
    if chip.kind == "rejected":  # struck out: computed in the pass, then dropped from the cache
        group.add(dwg.line((chip.x + 3, chip.y + chip_h - 4), (chip.x + chip.w - 3, chip.y + 4),
                           stroke=style.decode, stroke_width=1.5, class_="strike"))
    add_title(group, chip.tooltip)
    return group


def _draw_row(dwg, row: Row, layout: TimelineLayout, trace: RequestTrace, style: Style, table: Table,
              floors_ms: Sequence[float] | None = None):
    col, step = layout.col_x, trace.steps[row.slot.first]
    group = dwg.g(class_=f"row {row.phase}" + (" gap" if row.slot.kind == "gap" else ""),
                  **{"data-pass": row.slot.first, "data-count": row.slot.count,
                     "data-positions": sum(s.num_positions for s in trace.steps[row.slot.first:row.slot.last + 1])})
    baseline = row.cy + style.font_size * 0.36
    if row.slot.kind == "gap":
        folded = trace.steps[row.slot.first:row.slot.last + 1]
        key = "more_passes_verify" if any(s.phase == "verify" for s in folded) else "more_passes"
        group.add(text(dwg, label(table, key, n=fmt_int(row.slot.count)), col["input"], baseline,
                       size=style.font_size, fill=style.muted_ink, class_="gap-label"))
    else:
        group.add(text(dwg, label(table, "pass_n", n=row.slot.first + 1), col["pass"], baseline,
                       size=style.font_size, fill=style.ink, class_="pass-label"))
        for chip in row.chips:
            group.add(_draw_chip(dwg, chip, row.phase, style))
        group.add(_draw_chip(dwg, row.output, row.phase, style))
        group.add(dwg.path(d=f"M{col['output'] - 30},{row.cy} h20", stroke=style.muted_ink, stroke_width=1.5,
                           fill="none", marker_end="url(#arrow-muted)", class_="flow"))
    if not layout.narrow:
        group.add(_phase_badge(dwg, col["phase"], row.cy, row.phase, style, table))
    if layout.folded and row.slot.kind == "pass":  # the time row under the table names its pass again
        group.add(text(dwg, label(table, "pass_n", n=row.slot.first + 1), col["pass"],
                       row.time_cy + style.tiny_size * 0.36, size=style.tiny_size, fill=style.ink, class_="pass-label"))
    group.add(_time_marks(dwg, row, step, style))
    if floors_ms is not None and row.slot.kind == "pass" and row.slot.first < len(floors_ms):
        group.add(_floor_mark(dwg, row, step, floors_ms[row.slot.first], style, table))
    return group


def _floor_mark(dwg, row: Row, step, floor_ms: float, style: Style, table: Table):
    """The pass's floor, dark over the start of its bar: floor + the rest is the bar's whole length."""
    bar_w = row.bar[1] - row.bar[0]
    floor_w = bar_w * min(floor_ms / step.duration_ms, 1.0) if step.duration_ms > 0 else 0.0
    mark = dwg.rect((row.bar[0], row.time_cy - 8), (round(max(floor_w, 1.0), 2), 16), fill=FLOOR_INK,
                    class_=f"pass-floor {row.phase}", **{"data-floor-ms": f"{floor_ms:.3f}"})
    return add_title(mark, label(table, "tl_floor_title", floor=fmt_ms(floor_ms), rest=fmt_ms(
        max(step.duration_ms - floor_ms, 0.0))))


def _phase_badge(dwg, x: float, cy: float, phase: str, style: Style, table: Table):
    words = label(table, f"phase_{phase}")
    w, h = text_width(words, style.small_size) + 18, max(24, style.small_size + 10)
    badge = dwg.g(class_=f"phase-badge {phase}")
    badge.add(dwg.rect((x, cy - h / 2), (w, h), rx=h / 2, fill=style.phase_color(phase)))
    badge.add(text(dwg, words, x + w / 2, cy + style.small_size * 0.36, size=style.small_size,
                   fill=style.paper, anchor="middle", weight="bold"))
    return badge


def _time_marks(dwg, row: Row, step, style: Style):
    group, cy = dwg.g(class_=f"time {row.phase}"), row.time_cy
    if row.wait:
        group.add(dwg.rect((row.wait[0], cy - 3), (row.wait[1] - row.wait[0], 6), fill=style.waiting,
                           class_="wait", **{"data-ms": f"{row.wait_ms:.3f}"}))
    if row.page:
        group.add(dwg.rect((row.page[0], cy - 5), (row.page[1] - row.page[0], 10), fill=style.page,
                           class_="page-drawing", **{"data-ms": f"{step.consumer_ms:.3f}"}))
    bar = dwg.rect((row.bar[0], cy - 8), (row.bar[1] - row.bar[0], 16), rx=2, fill=style.phase_color(row.phase),
                   class_=f"pass-time {row.phase}", opacity=0.55 if row.slot.kind == "gap" else 1,
                   **{"data-start-ms": f"{step.start_ms:.3f}", "data-ms": f"{step.duration_ms:.3f}"})
    group.add(add_title(bar, f"{fmt_ms(step.start_ms)} → {fmt_ms(step.end_ms)}"))
    if row.itl:
        group.add(dwg.path(d=f"M{row.itl[0]},{cy + 13} v-3 H{row.itl[1]} v3", fill="none",
                           stroke=style.muted_ink, stroke_width=1, class_="itl"))
    # on a full-colour bar itself: light text on its dark colour (a folded gap's bar is faded: dark text)
    inside = row.time_label_anchor == "middle" and row.slot.kind == "pass"
    # beside the bar, centred on the row; or, where a wait bar lies under it, just above that bar
    # (its descenders clear the 6-unit bar's top edge by 4 units)
    label_y = cy - 4 - style.tiny_size * 0.2 if row.time_label_above else cy + style.tiny_size * 0.36
    group.add(text(dwg, row.time_label, row.time_label_x, label_y, size=style.tiny_size,
                   fill=style.paper if inside else style.ink, anchor=row.time_label_anchor, class_="time-label",
                   **({} if inside else halo(style))))
    return group


def draw_frame(dwg, layout: TimelineLayout, style: Style, table: Table) -> None:
    """Column headers, row rules, the time axis and the TTFT line (everything but rows)."""
    col, hy = layout.col_x, layout.header_y
    panel_top = layout.time_top if layout.folded else hy + 4
    headers = [("col_pass", col["pass"], hy), ("col_input", col["input"], hy), ("col_output", col["output"], hy),
               ("col_phase", col["phase"], hy), ("col_time", col["time"], panel_top - 4)]
    if layout.narrow:  # no phase column: the colours say it
        headers = [h for h in headers if h[0] != "col_phase"]
    for key, x, y in headers:
        words = label(table, key)
        if layout.narrow and key == "col_input":  # ends before the output's header
            words = clip_text(words, col["output"] - x - 8, style.small_size)
        dwg.add(text(dwg, words, x, y - 6, size=style.small_size, fill=style.muted_ink,
                     weight="bold", class_="col-header"))
    right = col["time_end"]
    rule_right = layout.table_right if layout.folded else right
    dwg.add(dwg.rect((col["time"], panel_top), (right - col["time"], layout.axis_y - panel_top), fill=style.panel,
                     class_="time-panel"))
    for row in layout.rows:
        dwg.add(dwg.line((PAD, row.y), (rule_right, row.y), stroke=style.grid, stroke_width=1, class_="rule"))
    for x, words in layout.ticks:
        dwg.add(dwg.line((x, panel_top), (x, layout.axis_y), stroke=style.grid, stroke_width=1, class_="tick"))
        dwg.add(text(dwg, words, x, layout.axis_y + 5 + style.tiny_size, size=style.tiny_size, fill=style.muted_ink,
                     anchor="middle", class_="tick-label"))
    dwg.add(text(dwg, "ms", right, layout.axis_y + 8 + style.tiny_size * 2, size=style.tiny_size, fill=style.muted_ink,
                 anchor="end"))
    dwg.add(dwg.line((layout.ttft_x, panel_top), (layout.ttft_x, layout.axis_y), stroke=style.prefill,
                     stroke_width=1.2, stroke_dasharray="4,3", class_="ttft-line"))


def draw_arrows(dwg, layout: TimelineLayout, style: Style) -> list:
    """(row index, arrow) pairs: each arrow belongs to the row it feeds."""
    return [(index, dwg.path(d=d, fill="none", stroke=style.phase_color(phase), stroke_width=1.6,
                             marker_end=f"url(#arrow-{phase})", class_=f"feedback {phase}"))
            for index, d, phase in layout.arrows]


def add_markers(dwg, style: Style, verify: bool = False) -> None:
    arrow_marker(dwg, "arrow-prefill", style.prefill)
    arrow_marker(dwg, "arrow-decode", style.decode)
    if verify:  # only a speculative run has verify rows (a plain run's drawing stays byte-for-byte as it was)
        arrow_marker(dwg, "arrow-verify", style.verify)
    arrow_marker(dwg, "arrow-muted", style.muted_ink)


def wait_legend(rows: list[Row], whole: RequestTrace | None, scale: LinearScale, style: Style,
                table: Table) -> tuple[str, ...]:
    """The kinds of wait drawn ("waiting", "page"). While the classroom steps (`whole`: the whole run), the
    kinds the whole run draws, so the legend's line is there from the first pass and the figure never grows."""
    spans = [(r.wait, r.page) for r in rows]
    if whole is not None:
        slots = plan_slots(len(whole.steps), MAX_ROWS, HEAD_ROWS, TAIL_ROWS)
        spans = [(t["wait"], t["page"]) for t in (_time_row(whole, slot, scale, style, table) for slot in slots)]
    return tuple(kind for i, kind in enumerate(("waiting", "page")) if any(span[i] for span in spans))


def subtitle(trace: RequestTrace, table: Table) -> str:
    """The prompt's end (the part that asks: a stretched prompt has the lesson's filler before it) and the
    answer's start."""
    prompt = trace.prompt if len(trace.prompt) <= 40 else "…" + trace.prompt[-39:]
    answer = trace.output_text if len(trace.output_text) <= 30 else trace.output_text[:29] + "…"
    return label(table, "timeline_subtitle", prompt=prompt, answer=answer)


def build_timeline(trace: RequestTrace, table: Table, style: Style, name: str, title: str, header_y: float = 112.0,
                   full: RequestTrace | None = None, run_note: str = "", floors_ms: Sequence[float] | None = None):
    """The drawing, the layout and the row groups (the animation adds timing to them)."""
    layout = timeline_layout(trace, table, style, header_y, full, run_note, floors=floors_ms is not None)
    dwg = new_drawing(layout.width, layout.height, style, name, title)
    add_markers(dwg, style, any(s.phase == "verify" for s in (full or trace).steps))
    header(dwg, style, title, subtitle(trace, table))
    draw_frame(dwg, layout, style, table)
    rows = [_draw_row(dwg, row, layout, trace, style, table, floors_ms) for row in layout.rows]
    for index, arrow in draw_arrows(dwg, layout, style):
        rows[index].add(arrow)
    for group in rows:
        dwg.add(group)
    draw_legend(dwg, layout, style, table)
    notes(dwg, style, list(layout.notes), PAD, layout.notes_y, layout.width - 2 * PAD)
    return dwg, layout, rows


def draw_legend(dwg, layout: TimelineLayout, style: Style, table: Table) -> None:
    """What the thin bars before each pass mean: waiting, and (when drawn) the page's drawing."""
    x = PAD
    colors = {"waiting": style.waiting, "page": style.page, "floor": FLOOR_INK}
    for kind in layout.legend:
        x = legend_item(dwg, style, x, layout.legend_y, colors[kind], label(table, f"legend_{kind}"), kind)


def render_timeline(trace: RequestTrace, *, lang: str = "zh", style: Style | None = None,
                    full: RequestTrace | None = None, run_note: str = "",
                    floors_ms: Sequence[float] | None = None) -> str:
    """One row per forward pass: positions in, token out, phase, measured time.

    `full`: the whole run when `trace` is a prefix of it: the columns and the time
    axis come from it, so stepping through the run never rescales the figure.
    `run_note`: which of several repeats this is ("median run 3 of 5 (...)", lesson.spread.run_label),
    drawn as the first note; "" for a single run. `floors_ms`: each pass's floor on the machine's measured
    roofs (engine.contract.cost.trace_floors, by step index), drawn dark over the start of its bar, named in
    the legend and in a note (no note in a wide fitted style, classroom mode: see timeline_layout)."""
    table, style = table_for(lang), style or DEFAULT_STYLE
    dwg, _, _ = build_timeline(trace, table, style, "timeline", label(table, "timeline_title"), full=full,
                               run_note=run_note, floors_ms=floors_ms)
    return to_string(dwg)

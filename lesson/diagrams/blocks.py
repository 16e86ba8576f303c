"""Processed-position blocks: each forward pass a column, each position a block.

Prefill computes all N prompt positions in one column; each Decode column
computes one new position on top; a verify column (speculative decoding) computes
k+1, and the positions of the drafts it rejected are drawn as rejected: the next
column computes them again (the cache rolled back). Positions already in the KV cache are drawn
muted in every later column: they are not recomputed, but the new query still
reads them. Blocks are positions, not time or FLOPs (the figure says so).

Two entry points share one layout:
    render_blocks_schematic(prompt_len, output_len)   lengths only, no model
    render_blocks(trace)                              measured, with each pass's time

Scale: past MAX_COLS passes the middle Decode columns fold into one gap column;
past MAX_SINGLE_ROWS prompt positions the prompt is drawn as a few runs with a
count. Every block carries data-count (positions it stands for), so the sum per
column equals the positions that pass processed.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.contract.trace import RequestTrace

from ..layout import PassSpan, Run, Slot, plan_slots, slot_span, spans_from_lengths, spans_from_trace, split_runs
from ..layout import text_width, wrap_text
from ..text import Table, label, table_for
from ..style import DEFAULT_STYLE, Style
from ..formats import fmt_int, fmt_ms
from ..svgtext import piece_label
from ._common import (
    add_title, header, legend_block, legend_item_width, legend_rows, new_drawing, notes, notes_height, text, to_string,
)

MAX_COLS, HEAD_COLS, TAIL_COLS = 12, 6, 3
MAX_SINGLE_ROWS, PROMPT_RUNS = 16, 6
MAX_LENGTH = 1_000_000
PAD, COL_W, COL_GAP, ROW_H, RUN_ROW_H, ROW_GAP = 32, 46, 8, 20, 30, 3


@dataclass(frozen=True)
class Cell:
    x: float
    y: float
    w: float
    h: float
    state: str  # "prefill", "decode", "verify" (computed by this pass), "rejected" (computed, then dropped: a
    # verify pass's rejected drafts) or "cached" (read from the KV cache)
    run: Run
    slot: Slot


@dataclass(frozen=True)
class BlocksLayout:
    width: float
    height: float
    plot_left: float
    plot_bottom: float
    plot_top: float
    bands: tuple[tuple[Run, float, float], ...]  # (run, y top, height)
    columns: tuple[tuple[Slot, PassSpan, float], ...]  # (slot, span, x)
    cells: tuple[Cell, ...]
    legend_y: float
    notes_y: float
    col_w: float = COL_W


def _bands(spans: tuple[PassSpan, ...], slots: tuple[Slot, ...]) -> tuple[Run, ...]:
    runs: list[Run] = []
    if spans and spans[0].context_before:  # a Prefill that started from the prefix cache: the positions it read
        runs.extend(split_runs(0, spans[0].context_before, MAX_SINGLE_ROWS, PROMPT_RUNS))
    top = spans[0].context_before if spans else 0  # positions below have their rows already
    for slot in slots:
        span = slot_span(spans, slot)
        start = max(top, span.context_before)  # after a rollback a pass computes again rows drawn before
        if slot.kind == "gap" and span.context_after > start:
            runs.append(Run(start, span.context_after - start))
        elif slot.kind != "gap":  # a verify pass's kept and rejected positions in runs of their own
            for low, high in ((start, max(start, span.kept)), (max(start, span.kept), span.context_after)):
                runs.extend(split_runs(low, high, MAX_SINGLE_ROWS, PROMPT_RUNS) if high > low else ())
        top = max(top, span.context_after)
    return tuple(runs)


def _state(run: Run, span: PassSpan) -> str | None:
    if run.start >= span.context_before and run.stop <= span.context_after:
        return "rejected" if run.start >= span.kept else span.phase
    if run.stop <= span.context_before:  # in Prefill's column: read from an earlier run (the prefix cache)
        return "reused" if span.phase == "prefill" else "cached"
    return None


def blocks_layout(spans: tuple[PassSpan, ...], row_labels_w: float, notes_h: float, style: Style,
                  full_spans: tuple[PassSpan, ...] | None = None, col_w: float = COL_W,
                  max_cols: int = MAX_COLS, legend_lines: int = 1, min_width: float = 820) -> BlocksLayout:
    """Coordinates of every block. `full_spans`: the whole run's passes when `spans` are the
    first of them; its position rows and width are used when it draws every pass (no fold),
    so stepping adds columns without moving the rows. `col_w` and `max_cols`: wider columns,
    fewer of them, for big type in a fixed width (classroom mode)."""
    slots = slots_for(spans, max_cols)
    unfolded = full_spans is not None and len(full_spans) <= max_cols
    runs = _bands(full_spans, slots_for(full_spans, max_cols)) if unfolded else _bands(spans, slots)
    plot_left = PAD + row_labels_w + 12
    plot_top = 168.0 + (legend_lines - 1) * style.small_size * 1.6 + 2 * max(0, style.small_size - 13)
    row_h = max(ROW_H, style.tiny_size + 2)
    heights = [row_h if r.count == 1 else max(RUN_ROW_H, style.tiny_size + 8) for r in runs]
    rows_h = sum(heights) + ROW_GAP * len(runs)
    if full_spans is not None and not unfolded:  # folded: room for the whole run's rows, so stepping grows the
        whole = _bands(full_spans, slots_for(full_spans, max_cols))  # cache upwards and nothing below it moves
        rows_h = max(rows_h, sum(row_h if r.count == 1 else max(RUN_ROW_H, style.tiny_size + 8) for r in whole)
                     + ROW_GAP * len(whole))
    plot_bottom = plot_top + rows_h
    y, bands = plot_bottom, []
    for run, h in zip(runs, heights):  # position 0 at the bottom: the cache grows upwards
        y -= h + ROW_GAP
        bands.append((run, y, h))
    columns = tuple((slot, slot_span(spans, slot), plot_left + i * (col_w + COL_GAP)) for i, slot in enumerate(slots))
    cells = tuple(
        Cell(x, y, col_w, h, state, run, slot)
        for slot, span, x in columns for run, y, h in bands
        if (state := _state(run, span)) is not None
    )
    plot_right = plot_left + (len(full_spans) if unfolded else len(columns)) * (col_w + COL_GAP)
    width = max(plot_right + PAD, min_width)
    legend_y = plot_bottom + 80 + 3 * max(0, style.small_size - 13)
    notes_y = legend_y + 6
    return BlocksLayout(width, notes_y + notes_h + 24, plot_left, plot_bottom, plot_top, tuple(bands), columns,
                        cells, legend_y, notes_y, col_w)


def slots_for(spans: tuple[PassSpan, ...], max_cols: int = MAX_COLS) -> tuple[Slot, ...]:
    if max_cols >= MAX_COLS:
        return plan_slots(len(spans), MAX_COLS, HEAD_COLS, TAIL_COLS)
    tail = max(1, (max_cols - 1) // 3)
    return plan_slots(len(spans), max_cols, max_cols - 1 - tail, tail)


# --- drawing ---

def _draw_cell(dwg, cell: Cell, style: Style):
    fill = {"cached": style.cached, "reused": style.cached_dark, "rejected": style.verify_light}.get(cell.state) \
        or style.phase_color(cell.state)
    slot = cell.slot
    attrs = {"data-pass": slot.first if slot.kind == "pass" else f"{slot.first}-{slot.last}",
             "data-count": cell.run.count, "data-start": cell.run.start}
    elided = " elided" if slot.kind == "gap" else ""
    outline = {"stroke": style.verify, "stroke_dasharray": "3,2"} if cell.state == "rejected" else {}
    rect = dwg.rect((cell.x, cell.y), (cell.w, cell.h), rx=3, fill=fill, class_=f"pos {cell.state}{elided}", **attrs,
                    **outline)
    return rect


def _draw_band_labels(dwg, layout: BlocksLayout, labels: dict[int, str], style: Style, table: Table) -> None:
    x = layout.plot_left - 10
    for run, y, h in layout.bands:
        if run.count == 1:
            words = f"{run.start}" + (f"  {labels[run.start]}" if run.start in labels else "")
        else:
            words = label(table, "run_label", a=fmt_int(run.start), b=fmt_int(run.stop - 1), n=fmt_int(run.count))
        dwg.add(text(dwg, words, x, y + h / 2 + style.tiny_size * 0.36, size=style.tiny_size, fill=style.muted_ink,
                     anchor="end", class_="position-label"))
    dwg.add(text(dwg, label(table, "axis_position"), x, layout.plot_top - 13 - style.small_size, size=style.small_size,
                 fill=style.muted_ink, anchor="end", weight="bold", class_="axis-label"))


def _column_texts(slot: Slot, span: PassSpan, durations, table: Table) -> tuple[str, str, str | None]:
    """(header under the column, "+N" over it, measured time or None)."""
    if slot.kind == "gap":  # "+14" over it read as one pass of 14 positions: it says it folds passes
        head = label(table, "more_passes_short", n=fmt_int(slot.count))
        ms = None if durations is None else fmt_ms(sum(durations[slot.first:slot.last + 1]) / slot.count)
        return head, label(table, "blocks_folded_each"), ms and "≈" + ms
    key = f"pass_short_{span.phase}"
    ms = None if durations is None else fmt_ms(durations[slot.first])
    return label(table, key, n=slot.first), label(table, "blocks_new", n=fmt_int(span.num_positions)), ms


def _draw_columns(dwg, layout: BlocksLayout, durations, style: Style, table: Table) -> None:
    for slot, span, x in layout.columns:
        group = dwg.g(class_=f"pass-column {span.phase}" + (" gap" if slot.kind == "gap" else ""),
                      **{"data-pass": slot.first if slot.kind == "pass" else f"{slot.first}-{slot.last}",
                         "data-positions": span.num_positions})
        for cell in layout.cells:
            if cell.slot == slot:
                group.add(_draw_cell(dwg, cell, style))
        head, new, ms = _column_texts(slot, span, durations, table)
        top = min(c.y for c in layout.cells if c.slot == slot and c.state not in ("cached", "reused"))
        cx = x + layout.col_w / 2
        group.add(text(dwg, new, cx, top - 6, size=style.tiny_size, fill=style.phase_color(span.phase),
                       anchor="middle", weight="bold", class_="new-count"))
        if slot.kind == "gap":
            group.add(_fold_mark(dwg, x, top, layout, style, label(table, "blocks_folded", n=fmt_int(slot.count))))
        heads = wrap_text(head, layout.col_w + COL_GAP, style.small_size) if style.fitted else (head,)
        for i, line in enumerate(heads):  # a gap's "…N…" may take two lines in a narrow column
            group.add(text(dwg, line, cx, layout.plot_bottom + 5 + style.small_size + i * style.small_size * 1.1,
                           size=style.small_size, fill=style.phase_color(span.phase), anchor="middle", weight="bold",
                           class_="pass-label"))
        if ms and len(heads) == 1:
            group.add(text(dwg, ms, cx, layout.plot_bottom + 11 + style.small_size + style.tiny_size,
                           size=style.tiny_size, fill=style.ink, anchor="middle", class_="pass-ms"))
        add_title(group, f"{head}: {label(table, 'positions_range', a=span.context_before, b=span.context_after - 1)}"
                  + (f", {ms}" if ms else ""))
        dwg.add(group)
    dwg.add(text(dwg, label(table, "axis_pass"), layout.plot_left,
                 layout.plot_bottom + 17 + 2 * style.small_size + style.tiny_size, size=style.small_size,
                 fill=style.muted_ink, weight="bold", class_="axis-label"))


def _fold_mark(dwg, x: float, top: float, layout: BlocksLayout, style: Style, words: str):
    """A break mark on the folded column (two slanted cuts, a dashed frame, and up it "15 Decode passes
    folded"): passes left out, not one pass. Its blocks stay (their data-count sums to the positions
    those passes computed)."""
    mark = dwg.g(class_="fold-mark")
    cx, cy = x + layout.col_w / 2, (top + 30 + layout.plot_bottom) / 2
    if text_width(words, style.tiny_size) + 12 < layout.plot_bottom - top - 30:  # room up the column
        mark.add(text(dwg, words, cx + style.tiny_size * 0.36, cy, size=style.tiny_size, fill=style.ink,
                      anchor="middle", weight="bold", class_="fold-label", transform=f"rotate(-90 {cx:g} {cy:g})"))
    mark.add(dwg.rect((x - 2, top - 2), (layout.col_w + 4, layout.plot_bottom - top + 2), fill="none",
                      stroke=style.muted_ink, stroke_width=1.2, stroke_dasharray="4,3"))
    computed = [c for c in layout.cells if c.y == top and c.state != "cached" and c.slot.kind == "gap"]
    middle = top + (computed[0].h / 2 if computed else 10)  # across the positions those passes computed
    for dy in (-4, 4):
        mark.add(dwg.line((x - 6, middle + dy / 2 + 5), (x + layout.col_w + 6, middle + dy / 2 - 5), stroke="white",
                          stroke_width=3))
    return mark


def _position_labels(trace: RequestTrace | None) -> dict[int, str]:
    if trace is None:
        return {}
    reused = reused_positions(trace)
    labels = {i: piece_label(trace.prompt_pieces[i], 8) for i in range(reused)} if reused <= MAX_SINGLE_ROWS else {}
    return labels | {s.context_before + k: piece_label(p, 8) for s in trace.steps for k, p in enumerate(s.input_pieces)
                     if s.num_positions <= MAX_SINGLE_ROWS}


def reused_positions(trace: RequestTrace | None) -> int:
    """Prompt positions this run's Prefill read from an earlier run (trace.prefix), not computed."""
    return trace.prefix.num_cached_tokens if trace is not None and trace.prefix is not None else 0


def _render(spans, durations, trace, subtitle: str, lang: str, style: Style | None, full=None,
            run_note: str = "") -> str:
    table, style = table_for(lang), style or DEFAULT_STYLE
    labels = _position_labels(trace)
    # Labels of passes not shown yet only size the column (no spoiler of tokens to come).
    label_w = max([text_width(f"{p}  {t}", style.tiny_size) for p, t in _position_labels(full or trace).items()]
                  + [text_width(label(table, "run_label", a="0,000", b="0,000", n="0,000"), style.tiny_size), 40])
    total = sum(s.num_positions for s in spans)
    note_lines = ([run_note] if run_note else []) + [label(table, "blocks_note_units"), label(
        table, "blocks_note_cache"), label(table, "blocks_total", k=fmt_int(len(spans)), n=fmt_int(total))]
    reused = reused_positions(full or trace)
    if reused:
        note_lines.append(label(table, "blocks_note_reused", n=fmt_int(reused), last=fmt_int(reused - 1),
                                m=fmt_int(spans[0].num_positions if spans else 0)))
    note_w = 820 - 2 * PAD
    whole_spans = spans_from_trace(full) if full else spans
    verify = (any(s.phase == "verify" for s in whole_spans), any(s.kept < s.context_after for s in whole_spans))
    col_w, max_cols, legend = COL_W, MAX_COLS, _legend(style, table, reused > 0, *verify)
    if style.fitted:  # big type in a fixed width: columns as wide as their labels (the whole run's), fewer of them
        whole = (spans_from_trace(full), tuple(s.duration_ms for s in full.steps)) if full else (spans, durations)
        col_w, max_cols = _fitted_columns(*whole, label_w, style, table)
        note_w = style.max_width - 2 * PAD
    lines = legend_rows(style, [c for _, c, _ in legend], PAD, note_w + PAD)
    # one legend line unless fitted: wide enough for it (a speculative run's legend has five entries)
    legend_w = PAD + sum(legend_item_width(style, c) for _, c, _ in legend) + PAD
    layout = blocks_layout(spans, label_w, notes_height(style, note_lines, note_w), style,
                           None if full is None else spans_from_trace(full), col_w, max_cols, len(lines),
                           820 if style.fitted else max(820, legend_w))
    dwg = new_drawing(layout.width, layout.height, style, "blocks", label(table, "blocks_title"))
    header(dwg, style, label(table, "blocks_title"), subtitle)
    legend_block(dwg, style, legend, PAD, 110, note_w + PAD)
    _draw_band_labels(dwg, layout, labels, style, table)
    _draw_columns(dwg, layout, durations, style, table)
    notes(dwg, style, note_lines, PAD, layout.notes_y, note_w)
    return to_string(dwg)


def _legend(style: Style, table: Table, reused: bool = False, verify: bool = False,
            rejected: bool = False) -> list[tuple[str, str, str]]:
    entries = [(style.prefill, label(table, "legend_prefill"), "prefill"),
               (style.decode, label(table, "legend_decode"), "decode"),
               (style.cached, label(table, "legend_cached"), "cached")]
    entries += [(style.cached_dark, label(table, "legend_reused"), "reused")] if reused else []
    entries += [(style.verify, label(table, "legend_verify"), "verify")] if verify else []  # speculative decoding
    entries += [(style.verify_light, label(table, "legend_rejected_positions"), "rejected")] if rejected else []
    return entries


def _fitted_columns(spans, durations, label_w: float, style: Style, table: Table) -> tuple[float, int]:
    """(column width, most columns) so every pass's labels fit its column and the row fits the width."""
    widths = [COL_W]
    for slot in slots_for(spans):
        head, new, ms = _column_texts(slot, slot_span(spans, slot), durations, table)
        if slot.kind == "pass":  # a gap's "…N…" may wrap onto two lines
            widths.append(text_width(head, style.small_size) + 6)
        widths += [text_width(new, style.tiny_size) + 6, text_width(ms or "", style.tiny_size) + 6]
    col_w = max(widths)
    room = style.max_width - 2 * PAD - label_w - 12
    return col_w, max(4, int(room // (col_w + COL_GAP)))


def render_blocks_schematic(prompt_len: int, output_len: int, *, lang: str = "zh", style: Style | None = None) -> str:
    """The lesson's "change the prompt and answer length" picture, from lengths alone."""
    for name, value in (("prompt_len", prompt_len), ("output_len", output_len)):
        if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_LENGTH:
            raise ValueError(f"{name} must be a whole number from 1 to {MAX_LENGTH:,}, got {value!r}")
    table = table_for(lang)
    subtitle = label(table, "blocks_subtitle_schematic", p=fmt_int(prompt_len), o=fmt_int(output_len))
    return _render(spans_from_lengths(prompt_len, output_len), None, None, subtitle, lang, style)


def render_blocks(trace: RequestTrace, *, lang: str = "zh", style: Style | None = None,
                  full: RequestTrace | None = None, run_note: str = "") -> str:
    """The same picture from a measured trace, each pass's time under its column.

    `full`: the whole run when `trace` is a prefix of it: its position rows and width are
    used (when it draws every pass), so stepping adds columns without moving the rest.
    `run_note`: which of several repeats this run is (lesson.spread.run_label), the first note."""
    if not trace.steps:
        raise ValueError("the blocks diagram needs a trace with at least one forward pass")
    table = table_for(lang)
    subtitle = label(table, "blocks_subtitle_measured", p=fmt_int(trace.prompt_len), o=fmt_int(len(trace.steps)))
    durations = tuple(s.duration_ms for s in trace.steps)
    return _render(spans_from_trace(trace), durations, trace, subtitle, lang, style, full, run_note)

"""The review map (复习总图): one page comparing Prefill and Decode.

Rows: new positions per pass, shape of computation, product, bottleneck,
dependency, the wait users feel; then the serving techniques (continuous
batching, chunked prefill, disaggregation, PagedAttention) and the closing
sentence. With a trace, a "this run" row carries the run's live numbers.

With a narrow width to fit (classroom mode's 820-unit column) the map folds
instead of shrinking: each row's heading goes on its own line above its two
cells, and the four serving techniques sit two by two. The presenter's
landscape figure (1280 units) keeps the heading column and four techniques in
a row, in the classroom's type: folded it came out 1280x1199 units, drawn
630 of about 930 px wide at 1280x720 with 10 px labels.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.contract.trace import RequestTrace

from ..layout import wrap_text
from ..text import Table, label, table_for
from ..style import DEFAULT_STYLE, Style
from ..formats import fmt_bytes, fmt_int, fmt_ms
from ._common import header, new_drawing, notes, set_size, text, to_string

WIDTH, PAD, HEAD_W, GAP, CELL_PAD = 1120, 32, 200, 12, 14
ROWS = ("new", "shape", "output", "bottleneck", "depends", "wait")
# Which colour marks each technique: the phase it mainly serves ("both" = half and half).
TECHNIQUES = (("cb", "decode"), ("chunked", "prefill"), ("disagg", "both"), ("paged", "cached"))


@dataclass(frozen=True)
class TableRow:
    key: str
    heading: tuple[str, ...]
    cells: tuple[tuple[str, ...], tuple[str, ...]]  # wrapped lines: Prefill, Decode
    y: float
    h: float
    live: bool = False
    head_h: float = 0.0  # folded: the heading's own line(s) above the cells


LANDSCAPE_W = 1200  # a width to fit this wide or wider (the presenter's landscape 1280) keeps the heading column
LANDSCAPE_HEAD_W = 240  # its heading column


def _width(style: Style) -> float:
    return style.max_width if style.fitted else WIDTH


def _folded(style: Style) -> bool:
    """Fold (headings above their cells, techniques two by two) only in a narrow width: the presenter's
    landscape figure folded came out 1280x1199 units, 630 of about 930 px wide at 1280x720, labels 10 px."""
    return style.fitted and style.max_width < LANDSCAPE_W


def _landscape(style: Style) -> bool:
    return style.fitted and not _folded(style)


def _row_size(style: Style, live: bool) -> float:
    """A table row's type: in the landscape figure the classroom's smallest (its floor, 21 units), so the
    English map (two-line rows) fits a 1280x720 window with labels of 14 px or more (at its headings' size
    it was 1280x1014 units: 12.2 px in the presenter view); the page's folded map keeps its larger type."""
    return style.small_size if live or _landscape(style) else style.font_size


def _line_h(style: Style) -> float:
    """A table line: in the presenter's landscape figure a little tighter (the same fit)."""
    return _row_size(style, False) * (1.2 if _landscape(style) else 1.4)


def _row_pad(style: Style) -> float:
    """Above and below a row's lines (a row box's inner margin, vertically)."""
    return 6 if _landscape(style) else CELL_PAD


def _head_w(style: Style) -> float:
    """The heading column: wider in the landscape figure, where English headings wrapped to two lines."""
    return LANDSCAPE_HEAD_W if _landscape(style) else HEAD_W


def _spacing(style: Style, page: float) -> float:
    """Line spacing of the techniques' and the closing's lines (as a multiple of their type): `page` on the
    page, a little tighter in the landscape figure (the same fit as _row_size)."""
    return 1.3 if _landscape(style) else page


def _gap(style: Style) -> float:
    """Between two boxes, vertically: smaller in the landscape figure (the same fit as _row_size)."""
    return 3 if _landscape(style) else 6


def _col_x(style: Style = DEFAULT_STYLE) -> tuple[float, float, float]:
    """x of the Prefill and Decode cells and their width; folded: the whole width, no heading column."""
    width = _width(style)
    if _folded(style):
        col_w = (width - 2 * PAD - GAP) / 2
        return PAD, PAD + GAP + col_w, col_w
    head_w = _head_w(style)
    col_w = (width - 2 * PAD - head_w - 2 * GAP) / 2
    return PAD + head_w + GAP, PAD + head_w + 2 * GAP + col_w, col_w


def _header_h(style: Style) -> float:
    return max(36, style.font_size + 17)


def _live_texts(trace: RequestTrace, table: Table) -> tuple[str, str, str]:
    metrics, prefill = trace.metrics, trace.steps[0]
    decode = trace.decode_steps
    tpot = fmt_ms(metrics.tpot_ms) if metrics.tpot_ms is not None else label(table, "na")
    return (
        label(table, "review_live_title") + f" · {trace.model.model_id} · {trace.model.device}",
        label(table, "review_live_prefill", n=fmt_int(prefill.num_positions), ms=fmt_ms(prefill.duration_ms),
              ttft=fmt_ms(metrics.ttft_ms)),
        label(table, "review_live_decode", k=fmt_int(len(decode)), tpot=tpot) + _live_speculative(trace, table)
        + " · " +
        label(table, "review_live_kv", bytes=fmt_bytes(trace.kv_bytes), tokens=fmt_int(trace.steps[-1].context_kept)),
    )


def _live_speculative(trace: RequestTrace, table: Table) -> str:
    """A speculative run's verify passes and its tokens per target pass ("" for a plain run)."""
    verify = trace.verify_steps
    if not verify:
        return ""
    return " · " + label(table, "review_live_speculative", v=fmt_int(len(verify)),
                         x=f"{trace.tokens_per_pass:.2f}")


def table_rows(trace: RequestTrace | None, table: Table, style: Style, top: float) -> tuple[TableRow, ...]:
    _, _, col_w = _col_x(style)
    line_h = _line_h(style)
    items = [(key, label(table, f"review_row_{key}"), label(table, f"review_{key}_prefill"),
              label(table, f"review_{key}_decode"), False) for key in ROWS]
    if trace is not None and trace.steps:
        items.append(("live", *_live_texts(trace, table), True))
    rows, y = [], top
    for key, heading, pre, dec, live in items:
        size = _row_size(style, live)
        wrapped = (wrap_text(pre, col_w - 2 * CELL_PAD - (70 if key == "new" else 0), size),
                   wrap_text(dec, col_w - 2 * CELL_PAD - (70 if key == "new" else 0), size))
        head_room = _width(style) - 2 * PAD - 2 * CELL_PAD if _folded(style) else _head_w(style) - CELL_PAD
        head = wrap_text(heading, head_room, size)
        head_h = len(head) * line_h if _folded(style) else 0.0
        body = max(len(wrapped[0]), len(wrapped[1]), 0 if _folded(style) else len(head))
        h = head_h + body * line_h + 2 * _row_pad(style) - 6
        rows.append(TableRow(key, head, wrapped, y, h, live, head_h))
        y += h + _gap(style)
    return tuple(rows)


def _draw_row(dwg, row: TableRow, style: Style) -> None:
    x_pre, x_dec, col_w = _col_x(style)
    group = dwg.g(class_=f"review-row {row.key}")
    line_h, pad = _line_h(style), _row_pad(style)
    size = _row_size(style, row.live)
    group.add(dwg.rect((PAD, row.y), (_width(style) - 2 * PAD, row.h), rx=8,
                       fill=style.paper if not row.live else style.panel, stroke=style.grid, class_="row-box"))
    for i, line in enumerate(row.heading):
        group.add(text(dwg, line, PAD + CELL_PAD, row.y + pad + size * 0.75 + i * line_h, size=size,
                       fill=style.ink, weight="bold", class_="row-heading"))
    top = row.y + row.head_h
    for phase, x, lines in (("prefill", x_pre, row.cells[0]), ("decode", x_dec, row.cells[1])):
        cell = dwg.g(class_=f"cell {phase}")
        cell.add(dwg.rect((x, top + 4), (4, row.y + row.h - top - 8), rx=2, fill=style.phase_color(phase)))
        for i, line in enumerate(lines):
            cell.add(text(dwg, line, x + CELL_PAD, top + pad + size * 0.75 + i * line_h, size=size,
                          fill=style.phase_color(phase) if row.live else style.ink,
                          weight="bold" if row.live else None))
        if row.key == "new":
            cell.add(_glyph(dwg, phase, x + col_w - 78, (top + row.y + row.h) / 2, style))
        group.add(cell)
    dwg.add(group)


def _glyph(dwg, phase: str, x: float, cy: float, style: Style):
    """Tiny picture of one pass: Prefill = a row of new blocks; Decode = cached blocks + one new."""
    group = dwg.g(class_=f"glyph {phase}")
    for i in range(6):
        new = phase == "prefill" or i == 5
        fill = style.phase_color(phase) if new else style.cached
        group.add(dwg.rect((x + i * 11, cy - 5), (9, 10), rx=2, fill=fill))
    return group


def _draw_headers(dwg, y: float, style: Style, table: Table) -> None:
    x_pre, x_dec, col_w = _col_x(style)
    h = _header_h(style)
    for phase, x in (("prefill", x_pre), ("decode", x_dec)):
        dwg.add(dwg.rect((x, y), (col_w, h), rx=8, fill=style.phase_color(phase), class_=f"phase-header {phase}"))
        dwg.add(text(dwg, label(table, f"phase_{phase}"), x + col_w / 2, y + h / 2 + (style.font_size + 3) * 0.36,
                     size=style.font_size + 3,
                     fill=style.paper, anchor="middle", weight="bold"))


def _draw_serving(dwg, y: float, style: Style, table: Table) -> float:
    dwg.add(text(dwg, label(table, "review_serving_title"), PAD, y + 18, size=style.font_size + 1, fill=style.ink,
                 weight="bold", class_="section-title"))
    per_row = 2 if _folded(style) else 4  # folded: two by two
    box_w = (_width(style) - 2 * PAD - (per_row - 1) * GAP) / per_row
    desc_lines = [wrap_text(label(table, f"review_{k}_desc"), box_w - 2 * CELL_PAD, style.small_size)
                  for k, _ in TECHNIQUES]
    desc_h = style.small_size * _spacing(style, 1.45)
    box_h = 24 + style.font_size + style.small_size * 1.1 + max(len(d) for d in desc_lines) * desc_h
    top0 = y + 32 + max(0, style.font_size - 15)
    for i, ((key, marks), lines) in enumerate(zip(TECHNIQUES, desc_lines)):
        x = PAD + (i % per_row) * (box_w + GAP)
        top = top0 + (i // per_row) * (box_h + GAP)
        box = dwg.g(class_=f"technique {key} {marks}")
        box.add(dwg.rect((x, top), (box_w, box_h), rx=8, fill=style.paper, stroke=style.grid))
        colors = (style.prefill, style.decode) if marks == "both" else \
            (style.cached_dark,) if marks == "cached" else (style.phase_color(marks),)
        for k, color in enumerate(colors):
            part = (box_w - 16) / len(colors)
            box.add(dwg.rect((x + 8 + k * part, top + 6), (part, 5), rx=2, fill=color))
        box.add(text(dwg, label(table, f"review_{key}_name"), x + CELL_PAD, top + 19 + style.font_size,
                     size=style.font_size, fill=style.ink, weight="bold"))
        for j, line in enumerate(lines):
            box.add(text(dwg, line, x + CELL_PAD, top + 27 + style.font_size + style.small_size * 1.1
                         + j * desc_h,
                         size=style.small_size, fill=style.muted_ink))
        dwg.add(box)
    return top + box_h


def render_review_map(trace: RequestTrace | None = None, *, lang: str = "zh", style: Style | None = None,
                      full: RequestTrace | None = None, run_note: str = "") -> str:
    """The lesson's closing one-page comparison; with a trace, this run's numbers too, and `run_note` under
    it: which of the run's repeats those numbers are (lesson.spread.run_label), as every figure of it says.
    `full` (the whole run, when stepping) is accepted like every renderer's and unused: no axes here."""
    table, style = table_for(lang), style or DEFAULT_STYLE
    width = _width(style)
    rows = table_rows(trace, table, style, top=110 + _header_h(style))
    serving_y = rows[-1].y + rows[-1].h + 16 + _gap(style)
    closing = wrap_text(label(table, "review_closing"), width - 2 * PAD - 2 * CELL_PAD, style.font_size)
    # Height: serving title (32) + box, then the closing box.
    box_h = 54 + 3 * style.small_size * 1.45
    closing_h = style.font_size * _spacing(style, 1.5)
    height = serving_y + 32 + box_h + 24 + len(closing) * closing_h + 2 * CELL_PAD + 24
    dwg = new_drawing(width, height, style, "review-map", label(table, "review_title"))
    header(dwg, style, label(table, "review_title"), label(table, "review_subtitle"))
    _draw_headers(dwg, 98, style, table)
    for row in rows:
        _draw_row(dwg, row, style)
    bottom = _draw_serving(dwg, serving_y, style, table) + 20
    close_h = len(closing) * closing_h + 2 * CELL_PAD - 6
    dwg.add(dwg.rect((PAD, bottom), (width - 2 * PAD, close_h), rx=8, fill=style.panel, stroke=style.grid,
                     class_="closing-box"))
    for i, line in enumerate(closing):
        dwg.add(text(dwg, line, PAD + CELL_PAD, bottom + CELL_PAD + 11 + i * closing_h,
                     size=style.font_size, fill=style.ink, weight="bold", class_="closing"))
    end = bottom + close_h
    if run_note and trace is not None:
        end = notes(dwg, style, [run_note], PAD, end + 4, width - 2 * PAD)
    set_size(dwg, width, end + 12 + 2 * _gap(style))  # the rows' wrapped height is known only now
    return to_string(dwg)

"""What one Decode step reads: the new position's attention weights over the cache.

Input is an `engine.runtime.compare.DecodeAttention` (plain values). One row per layer, one
column per position: the cached positions, then the new one (marked). A cell's
opacity is its weight (the darkest cell is the largest weight in the figure).
Each cell carries data-layer, data-pos and data-weight; each row sums to one.
Token pieces label the columns (escaped by svgwrite; shortened by `piece_label`).
"""

from __future__ import annotations

from ..layout import sample_indices, text_width
from ..text import label, table_for
from ..style import DEFAULT_STYLE, Style
from ..svgtext import piece_label
from ._common import add_title, header, new_drawing, notes, notes_height, text, to_string

PAD, ROW_LABEL_W, PLOT_W, ROW_H, TOP = 32, 78, 760, 26, 110
MAX_PIECE_LABELS = 40  # past this many columns, label about 16 evenly spread positions by number


def attention_rows(attention, head: int | None) -> tuple[tuple[float, ...], ...]:
    """Per layer, the weights to draw: the mean of heads, or one head."""
    if head is None:
        return attention.mean
    return tuple(layer[head] for layer in attention.per_head)


def _column_labels(attention, max_labels: int = MAX_PIECE_LABELS) -> dict[int, str]:
    """Every column's piece up to `max_labels` columns; else about 16 (or `max_labels`) numbered ones."""
    num = attention.context + 1
    if num <= max_labels:
        return {pos: piece_label(attention.pieces[pos], 6) for pos in range(num)}
    return {pos: str(pos) for pos in sample_indices(num, min(16, max_labels))}


def render_attention(attention, *, lang: str = "zh", style: Style | None = None, head: int | None = None,
                     model_id: str = "") -> str:
    """A layers x positions heat map of one Decode step's attention (mean of heads, or `head`)."""
    table, style = table_for(lang), style or DEFAULT_STYLE
    rows = attention_rows(attention, head)
    num = attention.context + 1
    row_label_w, plot_w, row_h, max_labels = ROW_LABEL_W, PLOT_W, ROW_H, MAX_PIECE_LABELS
    if style.fitted:  # big type in a fixed width: taller rows, fewer column labels (rotated, they need room)
        row_label_w = max(text_width(label(table, "att_layer", i=len(rows) - 1), style.tiny_size) + 12, ROW_LABEL_W)
        plot_w, row_h = style.max_width - 2 * PAD - row_label_w, max(ROW_H, style.tiny_size + 8)
        max_labels = max(4, int(plot_w * 0.82 // (style.tiny_size * 1.15)))
    cell_w = plot_w / num
    top = TOP + 2 * max(0, style.small_size - 13)
    left, bottom = PAD + row_label_w, top + row_h * len(rows)
    notes_y = bottom + 80 + 4 * max(0, style.tiny_size - 11)
    width = PAD * 2 + row_label_w + plot_w
    height = max(bottom + 130, notes_y + notes_height(style, [label(table, "att_note")], width - 2 * PAD) + 24)
    title = label(table, "att_title", n=attention.decode_index)
    dwg = new_drawing(width, height, style, "decode-attention", title)
    which = label(table, "att_mean") if head is None else label(table, "att_head", h=head)
    header(dwg, style, title, label(table, "att_subtitle", model=model_id, context=attention.context, which=which))
    top_weight = max(max(row) for row in rows) or 1.0
    for i, row in enumerate(rows):
        y = top + row_h * i
        dwg.add(text(dwg, label(table, "att_layer", i=i), left - 8, y + row_h / 2 + style.tiny_size * 0.36,
                     size=style.tiny_size,
                     fill=style.muted_ink, anchor="end", class_="row-label"))
        group = dwg.g(class_="att-row", **{"data-layer": i})
        for pos, weight in enumerate(row):
            cell = dwg.rect((round(left + cell_w * pos, 2), y), (round(cell_w, 2), row_h - 2),
                            fill=style.decode if pos == attention.context else style.prefill,
                            fill_opacity=round(0.04 + 0.96 * weight / top_weight, 3),
                            class_="att-cell new" if pos == attention.context else "att-cell cached",
                            **{"data-layer": i, "data-pos": pos, "data-weight": repr(float(weight))})
            group.add(add_title(cell, label(table, "att_cell_title", i=i, pos=pos, piece=attention.pieces[pos],
                                            w=f"{weight:.3f}")))
        dwg.add(group)
    for pos, words in _column_labels(attention, max_labels).items():
        x, y = round(left + cell_w * (pos + 0.5), 2), bottom + 12
        shown = label(table, "att_new") if pos == attention.context and num > max_labels else words
        dwg.add(text(dwg, shown, x, y, size=style.tiny_size, fill=style.ink, anchor="end", class_="col-label",
                     transform=f"rotate(-55 {x} {y})"))
    notes(dwg, style, [label(table, "att_note")], PAD, notes_y, width - 2 * PAD)
    return to_string(dwg)

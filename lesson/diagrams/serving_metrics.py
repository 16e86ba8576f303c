"""The serving metrics of several runs side by side, as an SVG table (for export and print).

One column per run (policy), one row per metric (lesson.serving_views.METRIC_ROWS:
TTFT / TPOT / ITL percentiles, E2EL, throughput, goodput under the SLOs, KV use).
In each ranked row the best value is bold on a tinted cell. Cells carry data-row and
data-col; the app shows the same rows with st.dataframe (serving_views.metric_records).
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.serving.trace import ServingRun

from ..layout import text_width
from ..serving_views import METRIC_ROWS, best_columns, metric_table, slo_text
from ..strings import strings_for
from ..style import DEFAULT_STYLE, Style
from ..text import t
from ._common import add_title, header, new_drawing, notes, notes_height, text, to_string

PAD, ROW_H, CELL_PAD = 32, 26, 14
BEST_FILL = "#dcfce7"


def render_serving_metrics(runs: Sequence[ServingRun], *, lang: str = "zh", style: Style | None = None) -> str:
    strings_for(lang)
    style = style or DEFAULT_STYLE
    if not runs:
        raise ValueError("a metric table needs at least one run")
    head, rows = metric_table(runs, lang)
    widths = [max(text_width(cell, style.small_size) for cell in col) + 2 * CELL_PAD
              for col in zip(head, *rows)]
    widths[1:] = [max(w, 110) for w in widths[1:]]
    table_w = sum(widths)
    first = runs[0]
    lines = [t(lang, "sv_table_note", slo=slo_text(first.metrics, lang), model=first.model.model_id,
               device=first.model.device)]
    width = max(table_w + 2 * PAD, 560)
    top = 104
    height = top + (len(rows) + 1) * ROW_H + 20 + notes_height(style, lines, width - 2 * PAD) + 24
    title = t(lang, "sv_table_title")
    dwg = new_drawing(width, height, style, "serving-metrics", title)
    header(dwg, style, title, t(lang, "sv_table_subtitle", scenario=first.scenario, n=first.metrics.num_requests))
    xs = [PAD + sum(widths[:i]) for i in range(len(widths) + 1)]
    table = dwg.g(class_="metric-table", **{"data-rows": len(rows), "data-cols": len(head) - 1})
    table.add(dwg.rect((PAD, top), (table_w, ROW_H), fill=style.panel, class_="head"))
    for c, cell in enumerate(head):
        table.add(text(dwg, cell, xs[c] + CELL_PAD, top + ROW_H - 8, size=style.small_size, fill=style.ink,
                       weight="bold", class_="column-head"))
    for r, (row, cells) in enumerate(zip(METRIC_ROWS, rows)):
        y = top + (r + 1) * ROW_H
        best = best_columns(row, runs)
        for c, cell in enumerate(cells):
            is_best = c - 1 in best
            group = dwg.g(class_="cell best" if is_best else "cell", **{"data-row": r, "data-col": c})
            if is_best:
                group.add(dwg.rect((xs[c], y), (widths[c], ROW_H), fill=BEST_FILL))
            group.add(text(dwg, cell, xs[c] + CELL_PAD, y + ROW_H - 8, size=style.small_size,
                           fill=style.ink if c else style.muted_ink, weight="bold" if is_best else None))
            if c and is_best:
                add_title(group, t(lang, "sv_table_best"))
            table.add(group)
        table.add(dwg.line((PAD, y), (PAD + table_w, y), stroke=style.grid, stroke_width=1, class_="rule"))
    dwg.add(table)
    notes(dwg, style, lines, PAD, top + (len(rows) + 1) * ROW_H + 8, width - 2 * PAD)
    return to_string(dwg)

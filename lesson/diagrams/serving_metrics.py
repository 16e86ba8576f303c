"""The serving metrics of several runs side by side, as an SVG table (for export and print).

One column per run (policy), one row per metric (lesson.serving_views.METRIC_ROWS:
TTFT / TPOT / ITL percentiles, E2EL, throughput, goodput under the SLOs, KV use).
In each ranked row the best value is bold on a tinted cell. Cells carry data-row and
data-col; the app shows the same rows with st.dataframe (serving_views.metric_records).
With a width to fit (classroom mode) the run columns that do not fit beside the metric
names fold into a second table under the first, rather than the table shrinking.
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.contract.serving.trace import ServingRun

from ..layout import text_width
from ..serving_views import METRIC_ROWS, best_columns, metric_table, slo_text
from ..style import DEFAULT_STYLE, Style
from ..text import check_language, t
from ._common import add_title, header, new_drawing, notes, notes_height, text, to_string
from .serving_gantt import scenario_label

PAD, ROW_H, CELL_PAD, GROUP_GAP = 32, 26, 14, 24
BEST_FILL = "#dcfce7"


def render_serving_metrics(runs: Sequence[ServingRun], *, lang: str = "zh", style: Style | None = None) -> str:
    check_language(lang)
    style = style or DEFAULT_STYLE
    if not runs:
        raise ValueError("a metric table needs at least one run")
    head, rows = metric_table(runs, lang)
    widths = [max(text_width(cell, style.small_size) for cell in col) + 2 * CELL_PAD
              for col in zip(head, *rows)]
    widths[1:] = [max(w, 110) for w in widths[1:]]
    groups = _column_groups(widths, style)
    row_h = max(ROW_H, round(style.small_size * 1.6)) if style.fitted else ROW_H
    table_h = (len(rows) + 1) * row_h
    first = runs[0]
    lines = [t(lang, "sv_table_note", slo=slo_text(first.metrics, lang), model=first.model.model_id,
               device=first.model.device)]
    width = max(max(widths[0] + sum(widths[c] for c in g) for g in groups) + 2 * PAD, 560)
    if style.fitted:
        width = min(width, style.max_width)
    top = 104
    bottom = top + len(groups) * (table_h + GROUP_GAP) - GROUP_GAP
    height = bottom + 20 + notes_height(style, lines, width - 2 * PAD) + 24
    title = t(lang, "sv_table_title")
    dwg = new_drawing(width, height, style, "serving-metrics", title)
    header(dwg, style, title, t(lang, "sv_table_subtitle", scenario=scenario_label(lang, first.scenario),
                                n=first.metrics.num_requests), width=width)
    bests = [best_columns(row, runs) for row in METRIC_ROWS]
    for k, group in enumerate(groups):
        _table(dwg, style, lang, head, rows, bests, widths, (0, *group), top + k * (table_h + GROUP_GAP), row_h)
    notes(dwg, style, lines, PAD, bottom + 8, width - 2 * PAD)
    return to_string(dwg)


def _column_groups(widths: list[float], style: Style) -> list[tuple[int, ...]]:
    """The run columns (1..) of each table: all in one, or (classroom) as many as fit beside the
    metric names in the width; the next ones fold into another table under it."""
    columns = list(range(1, len(widths)))
    if not style.fitted:
        return [tuple(columns)]
    room = style.max_width - 2 * PAD - widths[0]
    groups: list[list[int]] = [[]]
    for c in columns:
        if groups[-1] and sum(widths[i] for i in groups[-1]) + widths[c] > room:
            groups.append([])
        groups[-1].append(c)
    return [tuple(g) for g in groups]


def _table(dwg, style: Style, lang: str, head, rows, bests, widths, cols: tuple[int, ...], top: float,
           row_h: float) -> None:
    """One table: the metric names and the run columns `cols` (indices into head / rows)."""
    shown = [widths[c] for c in cols]
    table_w = sum(shown)
    xs = [PAD + sum(shown[:i]) for i in range(len(shown) + 1)]
    table = dwg.g(class_="metric-table", **{"data-rows": len(rows), "data-cols": len(cols) - 1})
    table.add(dwg.rect((PAD, top), (table_w, row_h), fill=style.panel, class_="head"))
    for i, c in enumerate(cols):
        table.add(text(dwg, head[c], xs[i] + CELL_PAD, top + row_h - 8, size=style.small_size, fill=style.ink,
                       weight="bold", class_="column-head"))
    for r, (cells, best) in enumerate(zip(rows, bests)):
        y = top + (r + 1) * row_h
        for i, c in enumerate(cols):
            is_best = c - 1 in best
            group = dwg.g(class_="cell best" if is_best else "cell", **{"data-row": r, "data-col": c})
            if is_best:
                group.add(dwg.rect((xs[i], y), (shown[i], row_h), fill=BEST_FILL))
            group.add(text(dwg, cells[c], xs[i] + CELL_PAD, y + row_h - 8, size=style.small_size,
                           fill=style.ink if c else style.muted_ink, weight="bold" if is_best else None))
            if c and is_best:
                add_title(group, t(lang, "sv_table_best"))
            table.add(group)
        table.add(dwg.line((PAD, y), (PAD + table_w, y), stroke=style.grid, stroke_width=1, class_="rule"))
    dwg.add(table)

"""Where a Decode step's time goes, per weight format: `engine.contract.format_runs.FormatRuns` drawn.

- `render_format_time`: one stacked bar per format, its length the median Decode step as measured: the
  weights' memory floor (bytes read at this machine's measured bandwidth), the kernel time beyond the floor
  (the step's matrices multiplied alone, as timed, less the floor) and the rest of the pass (attention, norms,
  Python, dispatch, choosing the token: the step less its matmuls). On the embedded model the rest dominates;
  where the kernels' unpacking bounds a step, the middle part does.

Each part carries data-format, data-part ("floor", "kernel", "rest") and data-ms, so tests check the picture
against the numbers. Raises ValueError for a run without its matmuls timed (a recording made before they were).
"""

from __future__ import annotations

from ..formats import fmt_time
from ..layout import LinearScale, nice_ticks
from ..style import DEFAULT_STYLE, Style
from ..text import label, table_for
from ._common import add_title, header, legend_item, new_drawing, notes, text, to_string

PAD, NAME_W, PLOT_W, BAR_H, GAP, TOP = 32, 96, 640, 30, 16, 140
PARTS = ("floor", "kernel", "rest")


def part_colors(style: Style) -> dict[str, str]:
    return {"floor": style.page, "kernel": style.decode, "rest": style.cached_dark}


def timed_rows(runs) -> list:
    model = runs.embedded
    return [(r, model.time_parts(r)) for r in model.rows if model.time_parts(r) is not None]


def render_format_time(runs, *, lang: str = "zh", style: Style | None = None) -> str:
    """One bar per format: floor, kernel beyond the floor, the rest of the pass."""
    table, style = table_for(lang), style or DEFAULT_STYLE
    rows = timed_rows(runs)
    if not rows:
        raise ValueError("no format of this run had its matmuls timed")
    ticks = nice_ticks(0.0, max(r.decode_median_ms for r, _ in rows), 5)
    left = PAD + NAME_W
    x = LinearScale(0.0, ticks[-1], left, left + PLOT_W)
    bottom = TOP + len(rows) * (BAR_H + GAP)
    width = left + PLOT_W + 90
    dwg = new_drawing(width, bottom + 150, style, "format_time", label(table, "ft_title"))
    header(dwg, style, label(table, "ft_title"), label(table, "ft_subtitle", model=runs.embedded.model_id,
                                                         cpu=runs.cpu))
    legend_x, colors = PAD, part_colors(style)
    for part in PARTS:
        legend_x = legend_item(dwg, style, legend_x, 108, colors[part], label(table, f"ft_{part}"), part)
    for value in ticks:
        px = x(value)
        dwg.add(dwg.line((px, TOP - 6), (px, bottom), stroke=style.grid, stroke_width=1, class_="grid"))
        dwg.add(text(dwg, fmt_time(value), px, bottom + 18, size=style.tiny_size, fill=style.muted_ink,
                     anchor="middle", class_="tick-label"))
    for i, (row, parts) in enumerate(rows):
        y = TOP + i * (BAR_H + GAP)
        dwg.add(text(dwg, row.label, left - 10, y + BAR_H * 0.65, size=style.small_size, fill=style.ink,
                     anchor="end", class_="format-name"))
        start = 0.0
        for part, ms in zip(PARTS, parts):
            rect = dwg.rect((x(start), y), (max(x(start + ms) - x(start), 0), BAR_H), fill=colors[part],
                            class_=f"part {part}", **{"data-format": row.label, "data-part": part, "data-ms": repr(ms)})
            dwg.add(add_title(rect, label(table, "ft_part_title", format=row.label, part=label(table, f"ft_{part}"),
                                          ms=fmt_time(ms))))
            start += ms
        dwg.add(text(dwg, fmt_time(row.decode_median_ms), x(start) + 6, y + BAR_H * 0.65, size=style.small_size,
                     fill=style.ink, class_="total", **{"data-ms": repr(row.decode_median_ms)}))
    dwg.add(text(dwg, label(table, "ft_x_axis"), left, bottom + 40, size=style.small_size, fill=style.muted_ink,
                 weight="bold", class_="axis-label"))
    notes(dwg, style, [label(table, "ft_note")], PAD, bottom + 62, width - 2 * PAD)
    return to_string(dwg)


def format_time_alt(runs, lang: str) -> str:
    """The figure in words: each format's step and its three parts."""
    table = table_for(lang)
    parts = [label(table, "ft_alt_row", format=r.label, step=fmt_time(r.decode_median_ms), floor=fmt_time(p[0]),
                   kernel=fmt_time(p[1]), rest=fmt_time(p[2])) for r, p in timed_rows(runs)]
    return label(table, "ft_alt", model=runs.embedded.model_id, rows="; ".join(parts))

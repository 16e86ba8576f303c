"""What a weight format loses, position by position: `engine.contract.format_runs.FormatRuns` drawn.

- `render_format_kl`: the KL divergence (nats) of each format's next-token distribution from fp32's at every
  position of the held-out lines (one after another), one line per format, fp32 left out (0 everywhere).
  A flat line near 0 is a format that kept fp32's answer; spikes are the positions where it moved.

Every line carries data-format, data-mean-kl and data-max-kl, and each of its points data-kl, so tests check
the picture against the numbers. Raises ValueError for a run without per-position KL (a recording made before
it was kept, or random weights).
"""

from __future__ import annotations

from ..formats import fmt_count
from ..layout import LinearScale, nice_ticks
from ..style import DEFAULT_STYLE, Style
from ..text import label, table_for
from ._common import header, legend_item, new_drawing, notes, text, to_string

PAD, Y_LABEL_W, PLOT_W, PLOT_H, TOP = 32, 64, 720, 300, 132


def format_colors(style: Style) -> tuple[str, ...]:
    return (style.prefill, style.decode, style.waiting, style.page)


def kl_lines(runs) -> list:
    """The rows drawn: every format but fp32 with per-position KL, in the file's order."""
    return [r for r in runs.embedded.rows if r.weights != "fp32" and r.kl_positions]


def render_format_kl(runs, *, lang: str = "zh", style: Style | None = None) -> str:
    """One line per format: KL against fp32 at each held-out position."""
    table, style = table_for(lang), style or DEFAULT_STYLE
    rows = kl_lines(runs)
    if not rows:
        raise ValueError("no format of this run kept its per-position KL")
    count = max(len(r.kl_positions) for r in rows)
    top = max(max(r.kl_positions) for r in rows) or 1.0
    y_ticks = nice_ticks(0.0, top, 5)
    left, bottom, right = PAD + Y_LABEL_W, TOP + PLOT_H, PAD + Y_LABEL_W + PLOT_W
    x, y = LinearScale(0, max(count - 1, 1), left, right), LinearScale(0.0, y_ticks[-1], bottom, TOP)
    width = right + PAD
    dwg = new_drawing(width, bottom + 130, style, "format_kl", label(table, "fk_title"))
    header(dwg, style, label(table, "fk_title"), label(table, "fk_subtitle", model=runs.embedded.model_id,
                                                         positions=fmt_count(count)))
    legend_x = PAD
    for color, row in zip(format_colors(style), rows):
        legend_x = legend_item(dwg, style, legend_x, 104, color, label(table, "fk_legend", format=row.label,
                                                                        mean=f"{row.mean_kl:.4f}"), "format")
    for value in y_ticks:
        py = y(value)
        dwg.add(dwg.line((left, py), (right, py), stroke=style.grid, stroke_width=1, class_="grid"))
        dwg.add(text(dwg, f"{value:g}", left - 8, py + 4, size=style.tiny_size, fill=style.muted_ink, anchor="end",
                     class_="tick-label"))
    for value in nice_ticks(0, count - 1, 6):
        if value <= count - 1:
            dwg.add(text(dwg, f"{value:g}", x(value), bottom + 18, size=style.tiny_size, fill=style.muted_ink,
                         anchor="middle", class_="tick-label"))
    for color, row in zip(format_colors(style), rows):
        group = dwg.g(class_="format-line", **{"data-format": row.label, "data-mean-kl": repr(row.mean_kl),
                                               "data-max-kl": repr(max(row.kl_positions))})
        group.add(dwg.polyline([(x(i), y(v)) for i, v in enumerate(row.kl_positions)], fill="none", stroke=color,
                               stroke_width=1.5, class_="kl"))
        worst = max(range(len(row.kl_positions)), key=row.kl_positions.__getitem__)
        group.add(dwg.circle((x(worst), y(row.kl_positions[worst])), 4, fill=color, class_="kl-max",
                             **{"data-kl": repr(row.kl_positions[worst]), "data-position": worst}))
        dwg.add(group)
    dwg.add(text(dwg, label(table, "fk_x_axis"), left, bottom + 40, size=style.small_size, fill=style.muted_ink,
                 weight="bold", class_="axis-label"))
    dwg.add(text(dwg, label(table, "fk_y_axis"), PAD, TOP - 10, size=style.small_size, fill=style.muted_ink,
                 weight="bold", class_="axis-label"))
    notes(dwg, style, [label(table, "fk_note")], PAD, bottom + 62, width - 2 * PAD)
    return to_string(dwg)


def format_kl_alt(runs, lang: str) -> str:
    """The figure in words: each format's mean and largest KL, and where the largest is."""
    rows = kl_lines(runs)
    parts = [label(table_for(lang), "fk_alt_row", format=r.label, mean=f"{r.mean_kl:.4f}",
                   max=f"{max(r.kl_positions):.3f}",
                   position=max(range(len(r.kl_positions)), key=r.kl_positions.__getitem__)) for r in rows]
    return label(table_for(lang), "fk_alt", model=runs.embedded.model_id, rows="; ".join(parts))

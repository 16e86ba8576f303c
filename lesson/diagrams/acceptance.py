"""Speculative decoding's acceptance, pass by pass: what each verify pass guessed and what it kept.

One column per verify pass (V<n>), one cell per draft from the bottom: kept drafts green, rejected ones pale with
a dashed edge (computed, then dropped), and on top the pass's own token (the bonus) in ink: the column's height
in solid cells is the tokens that one target pass wrote. A subtitle says tokens per target pass and how many
drafts were kept. Registered in neither table of lesson/diagrams/__init__.py (a plain run has no verify pass):
`python -m lesson.export --speculative ngram` writes it, and the lesson's section after Decode draws it
(app_support/speculative.py).

`acceptance_layout()` computes the cells; `render_acceptance()` draws them.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.contract.trace import RequestTrace

from ..style import DEFAULT_STYLE, Style
from ..formats import fmt_int
from ..text import label, table_for
from ._common import add_title, header, legend_block, new_drawing, notes, notes_height, text, to_string

PAD, COL_W, COL_GAP, CELL_H, CELL_GAP, MAX_COLS = 32, 34, 8, 18, 3, 40


@dataclass(frozen=True)
class Cell:
    x: float
    y: float
    kind: str  # "kept", "rejected" or "bonus"
    step_index: int
    slot: int  # 0 = the first draft


def acceptance_layout(trace: RequestTrace, top: float) -> tuple[tuple[Cell, ...], float, float]:
    """(cells, the plot's bottom y, the figure's width) for the first MAX_COLS verify passes."""
    verify = trace.verify_steps[:MAX_COLS]
    tallest = max((len(s.draft_ids) + 1 for s in verify), default=1)
    bottom = top + tallest * (CELL_H + CELL_GAP)
    cells = []
    for column, step in enumerate(verify):
        x = PAD + 40 + column * (COL_W + COL_GAP)
        kinds = ["kept"] * step.num_accepted + ["bonus"] + ["rejected"] * len(step.rejected_ids)
        for slot, kind in enumerate(kinds):  # the bonus takes the first rejected draft's place
            cells.append(Cell(x, bottom - (slot + 1) * (CELL_H + CELL_GAP), kind, step.index, slot))
    width = max(PAD + 40 + len(verify) * (COL_W + COL_GAP) + PAD, 640)
    return tuple(cells), bottom, width


def render_acceptance(trace: RequestTrace, *, lang: str = "zh", style: Style | None = None) -> str:
    """The acceptance chart of a speculative run; a run without verify passes says so in its subtitle."""
    table, style = table_for(lang), style or DEFAULT_STYLE
    verify = trace.verify_steps
    drafted, kept = sum(len(s.draft_ids) for s in verify), sum(s.num_accepted for s in verify)
    subtitle = label(table, "acc_subtitle", v=fmt_int(len(verify)), kept=fmt_int(kept), drafted=fmt_int(drafted),
                     x=f"{trace.tokens_per_pass or 1.0:.2f}") if verify else label(table, "acc_none")
    cells, bottom, width = acceptance_layout(trace, 150)
    note_lines = [label(table, "acc_note")]
    height = bottom + 40 + notes_height(style, note_lines, width - 2 * PAD) + 24
    dwg = new_drawing(width, height, style, "acceptance", label(table, "acc_title"))
    header(dwg, style, label(table, "acc_title"), subtitle)
    legend_block(dwg, style, [(style.verify, label(table, "acc_legend_kept"), "kept"),
                              (style.ink, label(table, "acc_legend_bonus"), "bonus"),
                              (style.verify_light, label(table, "acc_legend_rejected"), "rejected")],
                 PAD, 110, width - PAD)
    fills = {"kept": style.verify, "bonus": style.ink, "rejected": style.verify_light}
    for cell in cells:
        outline = {"stroke": style.verify, "stroke_dasharray": "3,2"} if cell.kind == "rejected" else {}
        rect = dwg.rect((cell.x, cell.y), (COL_W, CELL_H), rx=3, fill=fills[cell.kind],
                        class_=f"cell {cell.kind}", **{"data-pass": cell.step_index, "data-slot": cell.slot},
                        **outline)
        dwg.add(add_title(rect, label(table, f"acc_legend_{cell.kind}")))
    for step, x in sorted({(c.step_index, c.x) for c in cells}):  # one label per column, in order (byte-stable)
        dwg.add(text(dwg, label(table, "pass_short_verify", n=step), x + COL_W / 2, bottom + 16,
                     size=style.tiny_size, fill=style.verify, anchor="middle", weight="bold", class_="pass-label"))
    notes(dwg, style, note_lines, PAD, bottom + 30, width - 2 * PAD)
    return to_string(dwg)

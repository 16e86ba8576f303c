"""Paged KV memory: the block table over time, at its peak, and against contiguous reservation.

Three parts, from the run's own block snapshots (engine/runtime/serving/block_manager.py):

1. Over time (one column per pass, per worker): each request's blocks stacked in
   its own colour, the free blocks above them, the KV budget (num_kv_blocks) as a line.
2. The block table at the peak: every block a cell in its owner's colour, filled as
   far as it holds tokens (the last block of a request is partly empty: internal waste).
3. Paged against contiguous: token slots reserved and held at the peak, paged (whole
   blocks) vs reserving each running request's prompt + max_new_tokens up front
   (run.memory, PagedAttention's comparison).

Columns carry data-index, data-used, data-free; cells data-request-id and data-tokens.
"""

from __future__ import annotations

from engine.contract.serving.trace import ServingRun

from ..formats import fmt_bytes, fmt_int
from ..layout import LinearScale, nice_ticks, text_width, wrap_text
from ..style import DEFAULT_STYLE, Style
from ..svgtext import visible
from ..text import check_language, t
from ._common import add_title, header, new_drawing, notes, notes_height, text, to_string
from .batch_composition import for_worker, panel_heading, workers_of
from .serving_gantt import policy_label

PAD, Y_LABEL_W, PLOT_W, PANEL_H, PANEL_GAP = 32, 64, 720, 170, 64
CELL, CELL_GAP, MAX_CELLS = 14, 2, 720
REQUEST_COLORS = ("#0f766e", "#7c3aed", "#b45309", "#be185d", "#4d7c0f", "#0369a1", "#4338ca", "#92400e")
FREE_COLOR = "#f1f5f9"


def request_color(index: int) -> str:
    return REQUEST_COLORS[index % len(REQUEST_COLORS)]


def peak_iteration(run: ServingRun):
    """The pass after which the most blocks were in use (as engine.contract.serving.metrics counts the peak)."""
    return max(run.iterations, key=lambda it: it.blocks.num_used_blocks, default=None)


def render_kv_blocks(run: ServingRun, *, lang: str = "zh", style: Style | None = None) -> str:
    check_language(lang)
    style = style or DEFAULT_STYLE
    if not run.iterations:
        raise ValueError("this run has no iterations (measured from a client): no block table to draw")
    workers = workers_of(run)
    colors = {r.request_id: request_color(i) for i, r in enumerate(run.requests)}
    left, right = PAD + Y_LABEL_W, PAD + Y_LABEL_W + PLOT_W
    if style.fitted:  # classroom: as wide as the column allows, never wider
        right = style.max_width - PAD
    width = right + PAD
    peak = peak_iteration(run)
    cols = int((right - left) // (CELL + CELL_GAP))
    num_cells = min(peak.blocks.num_blocks, MAX_CELLS)
    grid_h = -(-num_cells // cols) * (CELL + CELL_GAP)
    lift = style.tiny_size + 10 if style.fitted else 0  # classroom: a panel's heading clears its top labels
    top = 120 + lift
    gap = PANEL_GAP + lift
    grid_top = top + len(workers) * (PANEL_H + gap) + 16
    heading = _grid_heading(run, peak, lang)
    heading_lines = wrap_text(heading, right - PAD, style.small_size) if style.fitted else [heading]
    grid_top += (len(heading_lines) - 1) * round(style.small_size * 1.45)  # classroom: a long heading wraps
    mem_top = grid_top + grid_h + 70
    mem_h = 2 * _memory_row_h(style) + 36 if style.fitted else 96  # to the notes
    lines = kv_notes(run, lang)
    height = mem_top + mem_h + 14 + notes_height(style, lines, width - 2 * PAD) + 24
    title = t(lang, "sv_kv_title", policy=policy_label(lang, run.settings.policy))
    dwg = new_drawing(width, height, style, "kv-blocks", title)
    header(dwg, style, title, t(lang, "sv_kv_subtitle", block_size=run.settings.block_size,
                                blocks=fmt_int(run.settings.num_kv_blocks),
                                per_block=fmt_bytes(run.settings.block_size * run.model.kv_bytes_per_token)))
    for k, worker in enumerate(workers):
        _over_time(dwg, run, worker, top + k * (PANEL_H + gap), left, right, colors, style, lang,
                   multi=len(workers) > 1, lift=lift)
    _grid(dwg, run, peak, grid_top, left, cols, num_cells, colors, style, lang, heading_lines)
    _memory(dwg, run, mem_top, left, right, style, lang)
    notes(dwg, style, lines, PAD, mem_top + mem_h, width - 2 * PAD)
    return to_string(dwg)


def _over_time(dwg, run, worker, top, left, right, colors, style, lang, multi, lift=0) -> None:
    its = [it for it in run.iterations if it.worker == worker]
    num_blocks = max(it.blocks.num_blocks for it in its)
    bottom = top + PANEL_H
    ys = LinearScale(0, num_blocks, bottom, top)
    panel = dwg.g(class_=f"panel blocks {worker}", **{"data-worker": worker, "data-num-blocks": num_blocks,
                                                        "data-top": top, "data-bottom": bottom})
    panel_heading(dwg, panel, style, t(lang, "sv_kv_panel_time"), worker if multi else None, lang, top - lift)
    for tick in nice_ticks(0, num_blocks, 4):
        if tick > num_blocks:
            break
        y = ys(tick)
        panel.add(dwg.line((left, y), (right, y), stroke=style.grid, stroke_width=1, class_="grid"))
        panel.add(text(dwg, fmt_int(int(tick)), left - 8, y + 4, size=style.tiny_size, fill=style.muted_ink,
                       anchor="end", class_="tick-label"))
    slot = (right - left) / max(len(its), 1)
    bar_w = slot * (0.85 if slot >= 4 else 1.0)
    for i, it in enumerate(its):
        x = round(left + i * slot + (slot - bar_w) / 2, 2)
        snap = it.blocks
        col = dwg.g(class_="kv-column", **{"data-index": it.index, "data-used": snap.num_used_blocks,
                                           "data-free": snap.num_free_blocks, "data-waste": snap.wasted_slots})
        base, seen = bottom, set()
        for table in snap.tables:  # a block shared through the prefix cache is stacked once, under its first holder
            h = ys(0) - ys(len(set(table.block_ids) - seen))
            seen.update(table.block_ids)
            if h <= 0:
                continue
            col.add(dwg.rect((x, round(base - h, 2)), (round(bar_w, 2), round(h, 2)),
                             fill=colors.get(table.request_id, style.cached_dark), class_="owned",
                             **{"data-request-id": visible(table.request_id), "data-blocks": len(table.block_ids)}))
            base -= h
        col.add(dwg.rect((x, top), (round(bar_w, 2), round(max(base - top, 0), 2)), fill=FREE_COLOR, class_="free"))
        add_title(col, t(lang, "sv_kv_col_title", n=it.index + 1, used=snap.num_used_blocks,
                         free=snap.num_free_blocks, requests=len(snap.tables), tokens=fmt_int(snap.num_used_tokens),
                         waste=fmt_int(snap.wasted_slots)))
        panel.add(col)
    y = ys(num_blocks)
    panel.add(dwg.line((left, y), (right, y), stroke=style.ink, stroke_width=2, stroke_dasharray="6 4",
                       class_="kv-budget", **{"data-blocks": num_blocks}))
    panel.add(text(dwg, t(lang, "sv_kv_budget_line", blocks=fmt_int(num_blocks)), right, y - 5,
                   size=style.tiny_size, fill=style.ink, anchor="end", class_="budget-label"))
    panel.add(dwg.line((left, bottom), (right, bottom), stroke=style.muted_ink, stroke_width=1, class_="axis"))
    panel.add(text(dwg, t(lang, "sv_batch_x_axis", n=fmt_int(len(its))), left, bottom + 20, size=style.small_size,
                   fill=style.muted_ink, class_="axis-label"))
    dwg.add(panel)


def _grid_heading(run, peak, lang) -> str:
    snap = peak.blocks
    heading = t(lang, "sv_kv_grid_heading", n=peak.index + 1, used=snap.num_used_blocks,
                blocks=fmt_int(snap.num_blocks))
    return for_worker(heading, None if peak.worker == "engine" else peak.worker, lang)


def _grid(dwg, run, peak, top, left, cols, num_cells, colors, style, lang, heading_lines) -> None:
    snap = peak.blocks
    for i, line in enumerate(heading_lines):
        y = top - 8 - (len(heading_lines) - 1 - i) * round(style.small_size * 1.45)
        dwg.add(text(dwg, line, PAD, y, size=style.small_size, fill=style.muted_ink, weight="bold",
                     class_="axis-label"))
    owner = {}
    for table in snap.tables:
        for block_id, tokens in zip(table.block_ids, table.tokens_per_block):
            owner.setdefault(block_id, (table.request_id, tokens))  # shared (prefix cache): its first holder
    grid = dwg.g(class_="block-grid", **{"data-iteration": peak.index})
    for cell in range(num_cells):
        x = left + (cell % cols) * (CELL + CELL_GAP)
        y = top + (cell // cols) * (CELL + CELL_GAP)
        if cell in owner:
            rid, tokens = owner[cell]
            color = colors.get(rid, style.cached_dark)
            g = dwg.g(class_="block owned", **{"data-request-id": visible(rid), "data-tokens": tokens})
            g.add(dwg.rect((x, y), (CELL, CELL), fill=style.paper, stroke=color, stroke_width=1))
            fill_h = round(CELL * tokens / snap.block_size, 2)
            g.add(dwg.rect((x, round(y + CELL - fill_h, 2)), (CELL, fill_h), fill=color))
            add_title(g, t(lang, "sv_kv_cell_title", block=cell, rid=rid, tokens=tokens, size=snap.block_size))
            grid.add(g)
        else:
            grid.add(dwg.rect((x, y), (CELL, CELL), fill=FREE_COLOR, stroke=style.grid, stroke_width=1,
                              class_="block free"))
    dwg.add(grid)
    if snap.num_blocks > num_cells:
        dwg.add(text(dwg, t(lang, "sv_kv_grid_more", n=fmt_int(snap.num_blocks - num_cells)), left,
                     top + -(-num_cells // cols) * (CELL + CELL_GAP) + 14, size=style.tiny_size,
                     fill=style.muted_ink, class_="note"))


def _memory_row_h(style: Style) -> float:
    """Classroom: a memory bar's row holds its label, the bar, and the value under it."""
    return style.small_size + 6 + 20 + style.tiny_size + 14


def _memory(dwg, run, top, left, right, style, lang) -> None:
    mem = run.memory
    dwg.add(text(dwg, t(lang, "sv_kv_mem_heading"), PAD, top - 10, size=style.small_size, fill=style.muted_ink,
                 weight="bold", class_="axis-label"))
    most = max(mem.peak_paged_reserved_tokens, mem.peak_contiguous_reserved_tokens, 1)
    label_w = max(text_width(t(lang, f"sv_kv_mem_{k}"), style.small_size) for k in ("paged", "contiguous")) + 12
    xs = LinearScale(0, most, left + label_w, right - 150)
    if style.fitted:  # big type: the label above its bar, the value under it, the bar the full width
        xs = LinearScale(0, most, left, right)
    for k, (kind, reserved, util) in enumerate((("paged", mem.peak_paged_reserved_tokens, mem.paged_utilization),
                                                ("contiguous", mem.peak_contiguous_reserved_tokens,
                                                 mem.contiguous_utilization))):
        y = top + k * 30
        label_y, value_x, value_y = y + 14, xs(reserved) + 8, y + 14
        if style.fitted:
            label_y = top + k * _memory_row_h(style) + style.small_size
            y = label_y + 6
            value_x, value_y = left, y + 20 + style.tiny_size + 2
        g = dwg.g(class_=f"memory-bar {kind}", **{"data-reserved": reserved, "data-used": mem.peak_used_tokens})
        g.add(text(dwg, t(lang, f"sv_kv_mem_{kind}"), left, label_y, size=style.small_size, fill=style.ink))
        g.add(dwg.rect((xs(0), y), (xs(reserved) - xs(0), 20), fill=FREE_COLOR, stroke=style.muted_ink,
                       stroke_width=1, class_="reserved"))
        g.add(dwg.rect((xs(0), y), (xs(min(mem.peak_used_tokens, reserved)) - xs(0), 20), fill=style.cached_dark,
                       class_="held"))
        g.add(text(dwg, t(lang, "sv_kv_mem_value", used=fmt_int(mem.peak_used_tokens), reserved=fmt_int(reserved),
                          pct=f"{util:.0%}"), value_x, value_y, size=style.tiny_size, fill=style.ink))
        dwg.add(g)


def kv_notes(run: ServingRun, lang: str) -> list[str]:
    mem = run.memory
    peak = peak_iteration(run)
    lines = [t(lang, "sv_kv_note_peak", n=peak.index + 1, used=peak.blocks.num_used_blocks,
               blocks=fmt_int(peak.blocks.num_blocks), tokens=fmt_int(mem.peak_used_tokens),
               waste=fmt_int(peak.blocks.wasted_slots), paged=f"{mem.paged_utilization:.0%}",
               contiguous=f"{mem.contiguous_utilization:.0%}")]
    preempted = sum(len(it.preempted) for it in run.iterations)
    waited = max((len(it.waiting) for it in run.iterations), default=0)
    if preempted:
        lines.append(t(lang, "sv_kv_note_preempted", n=preempted))
    if run.settings.kv_blocks_explicit:
        lines.append(t(lang, "sv_kv_note_budget", blocks=fmt_int(run.settings.num_kv_blocks),
                       mode=t(lang, f"sv_on_kv_full_{run.settings.on_kv_full}"), waited=waited))
    lines.append(t(lang, "sv_kv_note_paper"))
    return lines

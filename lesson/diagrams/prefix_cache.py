"""Prefix caching: which requests hold which KV blocks, and which of them were read, not computed.

One row per request (arrival order), one cell per block of its prompt, from the run's own records
(engine/contract/serving/trace.py: each request's PrefixLookup and the passes' block tables):

    r0: 0 / 516    [ab12cd34][9f00e1c2] ... [  ]       computed by r0 (the last block partly filled)
    r1: 512 / 517  [ab12cd34][9f00e1c2] ... [  ]       highlighted: read from the cache, x2: held by two at once

A cell names its block by the first digits of its hash (the chain: a block's hash covers every token
before it), carries its block id and the most requests that held it at once, and is highlighted where
the request's look-up served it. The first block a look-up did not find has a mark, and the row ends
with why (first seen, diverged at position k with both tokens, evicted by whom and when, ...). Cells
whose block was later evicted are crossed; the evictions are listed under the rows.

Elements: g.prefix-row (data-request-id, data-cached, data-prompt, data-miss), rect.block (data-index,
data-block-id, data-hash, data-state "cached" / "computed" / "partial", data-refs), .stop, .evicted.
"""

from __future__ import annotations

from engine.contract.serving.metrics import prefix_cache_totals
from engine.contract.serving.prefix import short
from engine.contract.serving.trace import PrefixLookup, ServingRun

from ..formats import fmt_int, fmt_ms
from ..layout import text_width
from ..style import DEFAULT_STYLE, Style
from ..svgtext import piece_label
from ..text import Table, check_language, label, table_for
from ._common import add_title, header, legend_block, new_drawing, notes, notes_height, text, to_string
from .serving_gantt import policy_label, scenario_label

PAD, LABEL_W, CELL_W, CELL_H, ROW_GAP = 32, 150, 66, 30, 10
MAX_ROWS, MAX_CELLS = 24, 14  # past these: the first rows; per row the first and last cells
HIT_FILL, HIT_STROKE, STOP_COLOR, EVICT_COLOR = "#bbf7d0", "#15803d", "#dc2626", "#7f1d1d"
PARTIAL_FILL = "#e2e8f0"


def miss_words(lookup: PrefixLookup | None, lang: str) -> str:
    """Why a request's prompt was not (wholly) served from the cache, in `lang` (the page's table says the same)."""
    table = table_for(lang)
    if lookup is None:
        return label(table, "pc_miss_cache_off")
    if lookup.miss == "diverged":
        return label(table, "pc_miss_diverged", k=lookup.diverged_at, other=lookup.other_request,
                     mine=piece_label(lookup.token_piece), cached=piece_label(lookup.cached_piece))
    if lookup.miss == "evicted":
        at = label(table, "pc_at_ms", ms=fmt_ms(lookup.evicted_at_ms or 0.0))  # fmt_ms says "ms"
        return label(table, "pc_miss_evicted", other=lookup.other_request, at=at)
    return label(table, f"pc_miss_{lookup.miss or 'none'}", other=lookup.other_request)


def held_blocks(run: ServingRun) -> tuple[dict[str, tuple[int, ...]], dict[tuple[int, str], int]]:
    """({request: its longest block table}, {(block id, hash): most holders at once})."""
    first: dict[str, tuple[int, ...]] = {}
    refs: dict[tuple[int, str], int] = {}
    hashes = {r.request_id: r.prefix.block_hashes if r.prefix else () for r in run.requests}
    for it in run.iterations:
        counts: dict[tuple[int, str], int] = {}
        for table in it.blocks.tables:
            if len(table.block_ids) > len(first.get(table.request_id, ())):
                first[table.request_id] = table.block_ids
            names = hashes.get(table.request_id, ())
            for i, block in enumerate(table.block_ids[:len(names)]):
                counts[(block, names[i])] = counts.get((block, names[i]), 0) + 1
        for key, n in counts.items():
            refs[key] = max(refs.get(key, 0), n)
    return first, refs


def cell_indices(num_blocks: int, max_cells: int = MAX_CELLS) -> list[int | None]:
    """Which blocks a row draws: all of them, or the first and the last with a gap (None) between."""
    if num_blocks <= max_cells:
        return list(range(num_blocks))
    head = max(1, max_cells - 4)
    return [*range(head), None, *range(num_blocks - 3, num_blocks)]


def render_prefix_cache(run: ServingRun, *, lang: str = "zh", style: Style | None = None) -> str:
    check_language(lang)
    style = style or DEFAULT_STYLE
    table = table_for(lang)
    if not run.iterations:
        raise ValueError("this run has no iterations (measured from a client): no block table to draw")
    requests = run.requests[:MAX_ROWS]
    size = run.settings.block_size
    label_w = max([LABEL_W, *(text_width(_row_label(table, r), style.small_size) + 12 for r in requests)])
    max_cells = MAX_CELLS
    if style.fitted:  # classroom: as many cells as the column holds beside the labels (at least 6)
        label_w = min(label_w, style.max_width / 3)
        max_cells = max(6, min(MAX_CELLS, int((style.max_width - 2 * PAD - label_w) // CELL_W)))
    width = PAD + label_w + max_cells * CELL_W + PAD
    evictions = [e for it in run.iterations for e in it.evictions]
    lines = _notes(run, table, len(requests), evictions, max_cells)
    top = 128
    rows_h = len(requests) * (CELL_H * 2 + ROW_GAP)
    height = top + rows_h + 24 + notes_height(style, lines, width - 2 * PAD) + 24
    total, cached, rate = prefix_cache_totals(run.requests)
    title = label(table, "pc_title", policy=policy_label(lang, run.settings.policy))
    dwg = new_drawing(width, height, style, "prefix-cache", title)
    header(dwg, style, title, label(table, "pc_subtitle", scenario=scenario_label(lang, run.scenario),
                                    block_size=size, cached=fmt_int(cached), total=fmt_int(total),
                                    rate=f"{rate:.0%}"), width=width)
    legend_block(dwg, style, [(HIT_FILL, label(table, "pc_legend_cached"), "cached"),
                              (style.prefill_light, label(table, "pc_legend_computed"), "computed"),
                              (PARTIAL_FILL, label(table, "pc_legend_partial"), "partial"),
                              (STOP_COLOR, label(table, "pc_legend_stop"), "stop"),
                              (EVICT_COLOR, label(table, "pc_legend_evicted"), "evicted")], PAD, 100, width - PAD)
    first, refs = held_blocks(run)
    evicted = {e.block_hash for e in evictions}
    for k, record in enumerate(requests):
        y = top + k * (CELL_H * 2 + ROW_GAP)
        _row(dwg, style, lang, record, (first.get(record.request_id, ()), refs, evicted, max_cells), size,
             (PAD + label_w, y))
    notes(dwg, style, lines, PAD, top + rows_h + 8, width - 2 * PAD)
    return to_string(dwg)


def _row_label(table: Table, record) -> str:
    cached = record.prefix.num_cached_tokens if record.prefix else 0
    return label(table, "pc_row", request=record.request_id, cached=fmt_int(cached), prompt=fmt_int(record.prompt_len))


def _row(dwg, style: Style, lang: str, record, held, size: int, at: tuple[float, float]) -> None:
    """`held`: (its block ids, most holders per (block, hash), hashes evicted later, cells per row)."""
    blocks, refs, evicted, max_cells = held
    table, lookup = table_for(lang), record.prefix
    x0, y = at
    cached = lookup.num_cached_tokens if lookup else 0
    miss = (lookup.miss if lookup else "cache_off") or "none"
    row = dwg.g(class_="prefix-row", **{"data-request-id": record.request_id, "data-cached": cached,
                                        "data-prompt": record.prompt_len, "data-miss": miss})
    row.add(text(dwg, _row_label(table, record), PAD, y + CELL_H * 0.65, size=style.small_size, fill=style.ink,
                 class_="row-label"))
    names = lookup.block_hashes if lookup else ()
    num_blocks = -(-record.prompt_len // size)
    stop = lookup.miss_block if lookup and lookup.miss not in ("", "too_short", "cache_off") else None
    for slot, i in enumerate(cell_indices(num_blocks, max_cells)):
        x = x0 + slot * CELL_W
        if i is None:
            row.add(text(dwg, "…", x + CELL_W / 2, y + CELL_H * 0.65, size=style.small_size, fill=style.muted_ink,
                         anchor="middle", class_="gap"))
            continue
        name = names[i] if i < len(names) else ""
        block = blocks[i] if i < len(blocks) else -1
        _cell(dwg, row, style, table, record.request_id, i, block, name, (i + 1) * size <= cached,
              refs.get((block, name), 1), size, record.prompt_len, x, y, stop == i, bool(name) and name in evicted)
    row.add(text(dwg, miss_words(lookup, lang), x0, y + CELL_H * 1.6, size=style.tiny_size,
                 fill=STOP_COLOR if stop is not None else style.muted_ink, class_="miss-reason"))
    dwg.add(row)


def _cell(dwg, row, style, table, rid, i, block, name, hit, num_refs, size, prompt_len, x, y, stop, gone) -> None:
    state = "cached" if hit else ("computed" if name else "partial")
    fill = {"cached": HIT_FILL, "computed": style.prefill_light, "partial": PARTIAL_FILL}[state]
    stroke = HIT_STROKE if hit else style.cached_dark
    rect = dwg.rect((x + 2, y), (CELL_W - 4, CELL_H), rx=3, fill=fill, stroke=stroke,
                    stroke_width=2 if hit else 1, class_=f"block {state}",
                    **{"data-index": i, "data-block-id": block, "data-hash": name, "data-state": state,
                       "data-refs": num_refs})
    if state == "partial":
        rect.attribs["stroke-dasharray"] = "4 3"
    add_title(rect, label(table, "pc_cell_title", request=rid, index=i, block=block, hash=name or "-",
                          start=i * size, end=min((i + 1) * size, prompt_len) - 1, refs=num_refs,
                          state=label(table, f"pc_state_{state}")))
    row.add(rect)
    if name:
        row.add(text(dwg, short(name), x + CELL_W / 2, y + CELL_H * 0.45, size=style.tiny_size - 1, fill=style.ink,
                     anchor="middle", class_="hash"))
    if num_refs > 1:
        row.add(text(dwg, f"×{num_refs}", x + CELL_W / 2, y + CELL_H * 0.85, size=style.tiny_size - 1,
                     fill=HIT_STROKE, anchor="middle", weight="bold", class_="refs"))
    if stop:
        row.add(dwg.rect((x, y - 3), (4, CELL_H + 6), fill=STOP_COLOR, class_="stop-mark"))
    if gone:
        row.add(dwg.line((x + 4, y + CELL_H - 3), (x + CELL_W - 4, y + CELL_H * 0.55), stroke=EVICT_COLOR,
                         stroke_width=2, class_="evicted-mark"))


def _notes(run: ServingRun, table: Table, num_rows: int, evictions, max_cells: int) -> list[str]:
    lines = [label(table, "pc_note_hash" if run.settings.prefix_caching else "pc_note_off")]
    by: dict[str, list[float]] = {}
    for e in evictions:
        by.setdefault(e.by_request, []).append(e.at_ms)
    if by:
        lines.append(label(table, "pc_evictions", n=len(evictions)) + " " + "; ".join(
            label(table, "pc_evictions_by", n=len(times), by=rid, start=fmt_ms(min(times)), end=fmt_ms(max(times)))
            for rid, times in by.items()))
    if num_rows < len(run.requests):
        lines.append(label(table, "pc_note_more_requests", n=num_rows, total=len(run.requests)))
    if any(-(-r.prompt_len // run.settings.block_size) > max_cells for r in run.requests):
        lines.append(label(table, "pc_note_more_blocks", n=max_cells))
    return lines

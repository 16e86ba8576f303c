"""What each forward pass carried: Decode tokens and Prefill tokens, stacked, pass by pass.

One bar per iteration (x: the passes in order, per worker): Decode positions at the
bottom (orange, one per running request), Prefill positions on top (blue; a chunk
of a longer prompt in lighter blue). Under chunked prefill the token budget is a
dashed line the bars never pass. Under each panel, a strip with each pass's
measured time, on the same x: a pass with a long Prefill in it is a tall bar there.

A disaggregated run has two panels, the Prefill worker's passes and the Decode
worker's. Bars carry data-index, data-prefill, data-decode, data-ms; each panel
carries data-y-max and its plot's top and bottom, so tests can check heights.
"""

from __future__ import annotations

from engine.contract.serving.trace import ServingRun

from ..layout import LinearScale, nice_ticks, text_width
from ..style import DEFAULT_STYLE, Style
from ..formats import fmt_int, fmt_ms
from ..text import check_language, t
from ._common import (
    add_title, halo, header, legend_item, legend_item_width, new_drawing, notes, notes_height, text, to_string,
)
from .serving_gantt import policy_label

PAD, Y_LABEL_W, PLOT_W, PANEL_H, TIME_H, PANEL_GAP = 32, 64, 720, 200, 70, 78
CHUNK_COLOR = "#60a5fa"  # a lighter blue: part of a prompt, more to come


def workers_of(run: ServingRun) -> tuple[str, ...]:
    seen = dict.fromkeys(it.worker for it in run.iterations)
    return tuple(w for w in ("engine", "prefill", "decode") if w in seen)


def render_batch_composition(run: ServingRun, *, lang: str = "zh", style: Style | None = None) -> str:
    check_language(lang)
    style = style or DEFAULT_STYLE
    if not run.iterations:
        raise ValueError("this run has no iterations (measured from a client): no batch to draw")
    workers = workers_of(run)
    left, right = PAD + Y_LABEL_W, PAD + Y_LABEL_W + PLOT_W
    time_gap = 24  # between the token panel and the time strip under it
    budget = run.settings.token_budget
    legend = [(style.decode, t(lang, "sv_legend_decode_tokens"), "decode"),
              (style.prefill, t(lang, "sv_legend_prefill_tokens"), "prefill"),
              (CHUNK_COLOR, t(lang, "sv_legend_chunk_tokens"), "prefill_chunk")]
    if budget:
        legend.append(("", t(lang, "sv_legend_budget"), "budget"))
    if style.fitted:  # classroom: the plot takes what big labels leave; the legend wraps instead of running off
        left = PAD + max(Y_LABEL_W, text_width("0,000 ms", style.tiny_size) + 12)
        right = style.max_width - PAD
        time_gap = style.tiny_size + 14
    width = right + PAD
    legend_lines = _legend_lines(legend, style, right)
    lift = style.tiny_size + 10 if style.fitted else 0  # classroom: a panel's heading clears its top tick label
    top = 156 + (len(legend_lines) - 1) * round(style.small_size * 1.6) + lift
    block_h = PANEL_H + time_gap + TIME_H + PANEL_GAP + lift
    lines = composition_notes(run, lang)
    height = top + len(workers) * block_h + notes_height(style, lines, width - 2 * PAD) + 24
    title = t(lang, "sv_batch_title", policy=policy_label(lang, run.settings.policy))
    dwg = new_drawing(width, height, style, "batch-composition", title)
    subtitle = t(lang, "sv_batch_subtitle_budget", budget=fmt_int(budget)) if budget else t(lang, "sv_batch_subtitle")
    header(dwg, style, title, subtitle)
    for line, items in enumerate(legend_lines):
        x, y = PAD, 110 + line * round(style.small_size * 1.6)
        for fill, caption, kind in items:
            if kind != "budget":
                x = legend_item(dwg, style, x, y, fill, caption, kind)
                continue
            group = dwg.g(class_="legend-item budget")
            group.add(dwg.line((x, y - 4), (x + 22, y - 4), stroke=style.ink, stroke_width=2, stroke_dasharray="6 4"))
            group.add(text(dwg, caption, x + 28, y, size=style.small_size, fill=style.ink))
            dwg.add(group)
    for k, worker in enumerate(workers):
        _panel(dwg, run, worker, top + k * block_h, left, right, style, lang, multi=len(workers) > 1,
               time_gap=time_gap, lift=lift)
    notes(dwg, style, lines, PAD, top + len(workers) * block_h - PANEL_GAP - lift + 40, width - 2 * PAD)
    return to_string(dwg)


def _legend_lines(items: list[tuple[str, str, str]], style: Style, right: float) -> list[list]:
    """The legend's items per line: one line, or (fitted) as many as keep each line left of `right`."""
    if not style.fitted:
        return [items]
    lines: list[list] = [[]]
    x = PAD
    for item in items:
        w = (28 + text_width(item[1], style.small_size) + 24 if item[2] == "budget"
             else legend_item_width(style, item[1]))
        if lines[-1] and x + w - 24 > right:
            lines.append([])
            x = PAD
        lines[-1].append(item)
        x += w
    return lines


def for_worker(heading: str, worker: str | None, lang: str) -> str:
    """A panel's heading, named after its worker when a run has two (disaggregated)."""
    return heading if worker is None else t(lang, f"sv_worker_{worker}") + " · " + heading


def panel_heading(dwg, panel, style: Style, heading: str, worker: str | None, lang: str, top: float) -> None:
    panel.add(text(dwg, for_worker(heading, worker, lang), PAD, top - 12, size=style.small_size,
                   fill=style.muted_ink, weight="bold", class_="axis-label"))


def _panel(dwg, run: ServingRun, worker: str, top: float, left: float, right: float, style: Style, lang: str,
           multi: bool, time_gap: float = 24, lift: float = 0) -> None:
    its = [it for it in run.iterations if it.worker == worker]
    budget = run.settings.token_budget if worker == "engine" else None
    y_max = nice_ticks(0, max([it.num_tokens for it in its] + [budget or 0, 1]), 4)[-1]
    bottom = top + PANEL_H
    ys = LinearScale(0, y_max, bottom, top)
    panel = dwg.g(class_=f"panel tokens {worker}", **{"data-worker": worker, "data-y-max": y_max,
                                                        "data-top": top, "data-bottom": bottom})
    panel_heading(dwg, panel, style, t(lang, "sv_batch_panel_tokens"), worker if multi else None, lang, top - lift)
    for tick in nice_ticks(0, y_max, 4):
        y = ys(tick)
        panel.add(dwg.line((left, y), (right, y), stroke=style.grid, stroke_width=1, class_="grid"))
        panel.add(text(dwg, fmt_int(int(tick)), left - 8, y + 4, size=style.tiny_size, fill=style.muted_ink,
                       anchor="end", class_="tick-label"))
    n = len(its)
    slot = (right - left) / max(n, 1)
    bar_w = slot * (0.8 if slot >= 4 else 1.0)
    t_max = max(it.duration_ms for it in its)
    t_ticks = nice_ticks(0, t_max, 2)
    t_top, t_bottom = bottom + time_gap, bottom + time_gap + TIME_H
    ts = LinearScale(0, t_ticks[-1], t_bottom, t_top)
    for tick in t_ticks:
        y = ts(tick)
        panel.add(dwg.line((left, y), (right, y), stroke=style.grid, stroke_width=1, class_="grid"))
        panel.add(text(dwg, f"{tick:,.0f} ms", left - 8, y + 4, size=style.tiny_size, fill=style.muted_ink,
                       anchor="end", class_="tick-label"))
    for i, it in enumerate(its):
        x = left + i * slot + (slot - bar_w) / 2
        panel.add(_iteration_bar(dwg, it, x, bar_w, (bottom, ys), (t_bottom, ts), style, lang))
    panel.add(dwg.line((left, bottom), (right, bottom), stroke=style.muted_ink, stroke_width=1, class_="axis"))
    if budget:
        _budget_line(dwg, panel, budget, ys(budget), left, right, style, lang)
    panel.add(text(dwg, t(lang, "sv_batch_panel_time"), left, t_top - 6, size=style.tiny_size, fill=style.muted_ink,
                   class_="axis-label"))
    panel.add(text(dwg, t(lang, "sv_batch_x_axis", n=fmt_int(n)), left, t_bottom + 20, size=style.small_size,
                   fill=style.muted_ink, weight="bold", class_="axis-label"))
    dwg.add(panel)


def _iteration_bar(dwg, it, x: float, bar_w: float, tokens_axis, time_axis, style: Style, lang: str):
    """One iteration's bar: its tokens stacked (Decode, whole Prefill, Prefill chunk) and its duration below.
    `tokens_axis` and `time_axis` are (bottom y, scale) of the two panels."""
    bottom, ys = tokens_axis
    t_bottom, ts = time_axis
    chunk = sum(e.num_tokens for e in it.entries if e.phase == "prefill_chunk")
    whole = it.num_prefill_tokens - chunk
    data = {"data-index": it.index, "data-prefill": it.num_prefill_tokens, "data-decode": it.num_decode_tokens,
            "data-ms": f"{it.duration_ms:.3f}"}
    bar = dwg.g(class_="iteration", **data)
    base = bottom
    for count, fill, kind in ((it.num_decode_tokens, style.decode, "decode"), (whole, style.prefill, "prefill"),
                              (chunk, CHUNK_COLOR, "prefill_chunk")):
        if not count:
            continue
        h = max(bottom - ys(count), 1.5)
        bar.add(dwg.rect((round(x, 2), round(base - h, 2)), (round(bar_w, 2), round(h, 2)), fill=fill,
                         class_=f"tokens {kind}", **{"data-tokens": count}))
        base -= h
    th = max(t_bottom - ts(it.duration_ms), 1.0)
    bar.add(dwg.rect((round(x, 2), round(t_bottom - th, 2)), (round(bar_w, 2), round(th, 2)),
                     fill=style.prefill if it.num_prefill_tokens else style.cached_dark, class_="duration"))
    add_title(bar, t(lang, "sv_batch_bar_title", n=it.index + 1, decode=it.num_decode_tokens,
                     prefill=fmt_int(it.num_prefill_tokens), requests=len(it.entries),
                     waiting=len(it.waiting), ms=fmt_ms(it.duration_ms)))
    return bar


def _budget_line(dwg, panel, budget: int, y: float, left: float, right: float, style: Style, lang: str) -> None:
    """The chunked policy's token budget across the tokens panel, labelled at its right end."""
    panel.add(dwg.line((left, y), (right, y), stroke=style.ink, stroke_width=2, stroke_dasharray="6 4",
                       class_="budget-line", **{"data-budget": budget}))
    words = t(lang, "sv_budget_label", budget=fmt_int(budget))
    panel.add(text(dwg, words, right - text_width(words, style.tiny_size), y - 5, size=style.tiny_size,
                   fill=style.ink, class_="budget-label", **halo(style)))


def composition_notes(run: ServingRun, lang: str) -> list[str]:
    its = run.iterations
    mixed = sum(1 for it in its if it.num_prefill_tokens and it.num_decode_tokens)
    biggest = max(its, key=lambda it: (it.num_tokens, it.duration_ms))
    lines = [t(lang, "sv_batch_note", n=len(its), mixed=mixed, max_tokens=fmt_int(biggest.num_tokens),
               max_n=biggest.index + 1, max_ms=fmt_ms(biggest.duration_ms),
               decode_passes=sum(1 for it in its if not it.num_prefill_tokens),
               max_batch=max(len(it.entries) for it in its))]
    budget = run.settings.token_budget
    if budget:
        lines.append(t(lang, "sv_batch_note_budget", budget=fmt_int(budget),
                       over=sum(1 for it in its if it.num_tokens > budget)))
    return lines

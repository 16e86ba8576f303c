"""Cache on vs off: per-step bars of measured time and FLOPs, side by side.

Input is an `engine.compare.CacheComparison` (plain values). Two panels share the
x axis (one slot per pass): measured ms on top, cost-model FLOPs below; in each slot
the cache-off bar stands left of the cache-on bar. Each bar carries data-step,
data-mode ("off" / "on") and data-value, so tests check the picture against the numbers.
Past MAX_SLOTS passes, slots are drawn for evenly spread passes (first and last kept).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..layout import LinearScale, nice_ticks, sample_indices
from ..strings import label, strings_for
from ..style import DEFAULT_STYLE, Style
from ..svgtext import fmt_count, fmt_ms
from ._common import add_title, header, legend_item, new_drawing, notes, pass_tick, text, to_string

MAX_SLOTS = 48
PAD, Y_LABEL_W, PLOT_W, PANEL_H, PANEL_GAP, TOP = 32, 78, 760, 200, 78, 150


@dataclass(frozen=True)
class CompareBar:
    step: int
    mode: str  # "off" or "on"
    value: float
    x: float
    y: float
    w: float
    h: float


@dataclass(frozen=True)
class Panel:
    metric: str  # "time" or "flops"
    top: float
    bottom: float
    bars: tuple[CompareBar, ...]
    y_ticks: tuple[tuple[float, str], ...]


def _panel(metric: str, off: tuple[float, ...], on: tuple[float, ...], picks, top: float) -> Panel:
    """Bars of one metric: for each picked pass an off bar and an on bar."""
    bottom, left = top + PANEL_H, PAD + Y_LABEL_W
    ticks = nice_ticks(0, max(max(off), max(on), 1e-9), 4)
    y = LinearScale(0, ticks[-1], bottom, top)
    slot_w = PLOT_W / len(picks)
    bar_w = round(min(20.0, slot_w * 0.38), 2)
    bars = []
    for position, t in enumerate(picks):
        mid = left + slot_w * (position + 0.5)
        for mode, values, x in (("off", off, mid - bar_w - 1), ("on", on, mid + 1)):
            bars.append(CompareBar(t, mode, values[t], round(x, 2), y(values[t]), bar_w,
                                   round(bottom - y(values[t]), 2)))
    fmt = fmt_ms if metric == "time" else (lambda v: fmt_count(int(v)))
    return Panel(metric, top, bottom, tuple(bars), tuple((y(t), fmt(t)) for t in ticks))


def compare_layout(comparison) -> tuple[Panel, Panel, tuple[int, ...]]:
    picks = sample_indices(comparison.num_steps, MAX_SLOTS)
    time_panel = _panel("time", comparison.off_ms, comparison.on_ms, picks, TOP)
    flops_panel = _panel("flops", comparison.off_flops, comparison.on_flops, picks, TOP + PANEL_H + PANEL_GAP)
    return time_panel, flops_panel, picks


def _draw_panel(dwg, panel: Panel, comparison, style: Style, table: dict, picks) -> None:
    left, right = PAD + Y_LABEL_W, PAD + Y_LABEL_W + PLOT_W
    for y, words in panel.y_ticks:
        dwg.add(dwg.line((left, y), (right, y), stroke=style.grid, stroke_width=1, class_="grid"))
        dwg.add(text(dwg, words, left - 8, y + 4, size=style.tiny_size, fill=style.muted_ink, anchor="end",
                     class_="tick-label"))
    axis = "cc_time_axis" if panel.metric == "time" else "cc_flops_axis"
    dwg.add(text(dwg, label(table, axis), PAD, panel.top - 14, size=style.small_size, fill=style.muted_ink,
                 weight="bold", class_="axis-label"))
    group = dwg.g(class_=f"panel {panel.metric}")
    for bar in panel.bars:
        positions = (comparison.off_positions if bar.mode == "off" else comparison.on_positions)[bar.step]
        rect = dwg.rect((bar.x, bar.y), (bar.w, bar.h), fill=_color(bar.mode, style),
                        class_=f"cc-bar {panel.metric} {bar.mode}",
                        **{"data-step": bar.step, "data-mode": bar.mode, "data-value": repr(float(bar.value))})
        group.add(add_title(rect, label(
            table, "cc_bar_title", n=bar.step + 1, mode=label(table, f"cc_{bar.mode}"),
            ms=fmt_ms((comparison.off_ms if bar.mode == "off" else comparison.on_ms)[bar.step]),
            flops=fmt_count(int((comparison.off_flops if bar.mode == "off" else comparison.on_flops)[bar.step])),
            positions=positions)))
    dwg.add(group)
    for position, t in enumerate(picks):
        tick = pass_tick(t, "prefill" if t == 0 else "decode", position, len(picks), table)
        if tick:
            x = left + PLOT_W / len(picks) * (position + 0.5)
            dwg.add(text(dwg, tick, x, panel.bottom + 16, size=style.tiny_size, fill=style.muted_ink,
                         anchor="middle", class_="tick-label"))


def _color(mode: str, style: Style) -> str:
    return style.cached_dark if mode == "off" else style.decode


def render_cache_compare(comparison, *, lang: str = "zh", style: Style | None = None, model_id: str = "") -> str:
    """Cache off vs on, per pass: measured time (top) and FLOPs (bottom)."""
    table, style = strings_for(lang), style or DEFAULT_STYLE
    if comparison.num_steps < 1:
        raise ValueError("the cache comparison needs at least one pass")
    time_panel, flops_panel, picks = compare_layout(comparison)
    width, height = PAD * 2 + Y_LABEL_W + PLOT_W, flops_panel.bottom + 110
    dwg = new_drawing(width, height, style, "cache-compare", label(table, "cc_title"))
    header(dwg, style, label(table, "cc_title"),
           label(table, "cc_subtitle", model=model_id, prompt_len=comparison.prompt_len, steps=comparison.num_steps))
    x = legend_item(dwg, style, PAD, 108, _color("off", style), label(table, "cc_off"), "off")
    legend_item(dwg, style, x, 108, _color("on", style), label(table, "cc_on"), "on")
    for panel in (time_panel, flops_panel):
        _draw_panel(dwg, panel, comparison, style, table, picks)
    dwg.add(text(dwg, label(table, "cc_step_axis"), PAD + Y_LABEL_W, flops_panel.bottom + 36,
                 size=style.small_size, fill=style.muted_ink, weight="bold", class_="axis-label"))
    total = label(table, "cc_total", off_ms=fmt_ms(comparison.off_total_ms), on_ms=fmt_ms(comparison.on_total_ms),
                  off_flops=fmt_count(int(comparison.off_total_flops)), on_flops=fmt_count(int(comparison.on_total_flops)))
    notes(dwg, style, [total, label(table, "cc_note")], PAD, flops_panel.bottom + 44, width - 2 * PAD)
    return to_string(dwg)

"""Cache on vs off: per-step bars of measured time and FLOPs, side by side.

Input is an `engine.runtime.compare.CacheComparison` (plain values). Two panels share the
x axis (one slot per pass): measured ms on top, cost-model FLOPs below; in each slot
the cache-off bar stands left of the cache-on bar. Each bar carries data-step,
data-mode ("off" / "on") and data-value, so tests check the picture against the numbers.
Past MAX_SLOTS passes, slots are drawn for evenly spread passes (first and last kept), and a
note says so. The x axis' title matches its ticks: "P = Prefill" under P, D1, D2 ..., "step 1
is the Prefill" under pass numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..layout import LinearScale, nice_ticks, sample_indices, text_width
from ..text import Table, label, table_for
from .kv_growth import sampled_note
from ..style import DEFAULT_STYLE, Style
from ..formats import fmt_count, fmt_ms
from ..spread import trend_outliers
from ._common import (
    add_title, header, legend_block, legend_rows, new_drawing, notes, notes_height, outlier_legend, outlier_ring,
    pass_tick, text, to_string,
)

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
    left: float = PAD + Y_LABEL_W
    right: float = PAD + Y_LABEL_W + PLOT_W


def _dims(style: Style) -> tuple[float, float, float]:
    """(y label width, plot width, gap between the panels): fixed, or fitted to style.max_width."""
    if not style.fitted:
        return Y_LABEL_W, PLOT_W, PANEL_GAP
    y_label_w = text_width("000.0 ms", style.tiny_size) + 12
    return y_label_w, style.max_width - 2 * PAD - y_label_w, PANEL_GAP + 2 * (style.small_size - 13)


def _panel(metric: str, off: tuple[float, ...], on: tuple[float, ...], picks, top: float,
           style: Style = DEFAULT_STYLE) -> Panel:
    """Bars of one metric: for each picked pass an off bar and an on bar."""
    y_label_w, plot_w, _ = _dims(style)
    bottom, left = top + PANEL_H, PAD + y_label_w
    ticks = nice_ticks(0, max(max(off), max(on), 1e-9), 4)
    y = LinearScale(0, ticks[-1], bottom, top)
    slot_w = plot_w / len(picks)
    bar_w = round(min(20.0, slot_w * 0.38), 2)
    bars = []
    for position, t in enumerate(picks):
        mid = left + slot_w * (position + 0.5)
        for mode, values, x in (("off", off, mid - bar_w - 1), ("on", on, mid + 1)):
            bars.append(CompareBar(t, mode, values[t], round(x, 2), y(values[t]), bar_w,
                                   round(bottom - y(values[t]), 2)))
    fmt = fmt_ms if metric == "time" else (lambda v: fmt_count(int(v)))
    return Panel(metric, top, bottom, tuple(bars), tuple((y(t), fmt(t)) for t in ticks), left, left + plot_w)


def compare_layout(comparison, style: Style = DEFAULT_STYLE,
                   legend_lines: int = 1) -> tuple[Panel, Panel, tuple[int, ...]]:
    picks = sample_indices(comparison.num_steps, MAX_SLOTS)
    top = TOP + 2 * max(0, style.small_size - 13) + (legend_lines - 1) * style.small_size * 1.6
    gap = _dims(style)[2]
    time_panel = _panel("time", comparison.off_ms, comparison.on_ms, picks, top, style)
    flops_panel = _panel("flops", comparison.off_flops, comparison.on_flops, picks, top + PANEL_H + gap, style)
    return time_panel, flops_panel, picks


def _draw_panel(dwg, panel: Panel, comparison, style: Style, table: Table, picks) -> None:
    left, right = panel.left, panel.right
    for y, words in panel.y_ticks:
        dwg.add(dwg.line((left, y), (right, y), stroke=style.grid, stroke_width=1, class_="grid"))
        dwg.add(text(dwg, words, left - 8, y + 4, size=style.tiny_size, fill=style.muted_ink, anchor="end",
                     class_="tick-label"))
    axis = "cc_time_axis" if panel.metric == "time" else "cc_flops_axis"
    dwg.add(text(dwg, label(table, axis), PAD, panel.top - 14 - max(0, style.tiny_size - 11), size=style.small_size,
                 fill=style.muted_ink,
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
    max_named, max_ticks = _tick_limits(right - left, len(picks), style)
    for position, t in enumerate(picks):
        tick = pass_tick(t, "prefill" if t == 0 else "decode", position, len(picks), table, max_named, max_ticks)
        if tick:
            x = left + (right - left) / len(picks) * (position + 0.5)
            dwg.add(text(dwg, tick, x, panel.bottom + 5 + style.tiny_size, size=style.tiny_size, fill=style.muted_ink,
                         anchor="middle", class_="tick-label"))


def comparison_outliers(comparison) -> frozenset[tuple[int, str]]:
    """(pass, "off" / "on") of the Decode steps far from what their mode's other steps predict for their
    FLOPs (lesson.spread.trend_outliers, the sweep's rule against the trend): this machine's noise. The
    Prefill is a pass of another kind, never compared with the steps."""
    found = set()
    for mode, ms, flops in (("off", comparison.off_ms, comparison.off_flops), ("on", comparison.on_ms,
                                                                             comparison.on_flops)):
        found |= {(i + 1, mode) for i in trend_outliers(ms[1:], flops[1:])}
    return frozenset(found)


def _draw_outliers(dwg, panel: Panel, outliers, comparison, table: Table) -> None:
    """A red ring over each outlier's bar in the time panel (the passes drawn)."""
    for bar in panel.bars:
        if (bar.step, bar.mode) in outliers:
            words = label(table, "cc_outlier_title", n=bar.step + 1, mode=label(table, f"cc_{bar.mode}"),
                          ms=fmt_ms(bar.value))
            dwg.add(outlier_ring(dwg, bar.x + bar.w / 2, bar.y - 8, words,
                                 **{"data-step": bar.step, "data-mode": bar.mode, "data-ms": repr(float(bar.value))}))


def _tick_limits(plot_w: float, num_slots: int, style: Style) -> tuple[int, int]:
    """(max_named, max_ticks) for pass_tick: big tick labels (classroom) name fewer bars, number fewer ticks."""
    if not style.fitted:
        return 16, 12
    return (int(plot_w / num_slots // (text_width("D99", style.tiny_size) + 6)),
            min(12, int(plot_w // (text_width("9999", style.tiny_size) + 12))))


def step_axis_label(num_slots: int, plot_w: float, style: Style, lang: str) -> str:
    """The x axis' title, in the words its ticks use: "P = Prefill" under named ticks (P, D1, D2 ...),
    "step 1 is the Prefill" under numbered ones (1, 3, 5 ... past pass_tick's max_named)."""
    if num_slots <= _tick_limits(plot_w, num_slots, style)[0]:
        return label(table_for(lang), "cc_step_axis")
    return label(table_for(lang), "cc_step_axis_numbered")


def _color(mode: str, style: Style) -> str:
    return style.cached_dark if mode == "off" else style.decode


def render_cache_compare(comparison, *, lang: str = "zh", style: Style | None = None, model_id: str = "") -> str:
    """Cache off vs on, per pass: measured time (top) and FLOPs (bottom)."""
    table, style = table_for(lang), style or DEFAULT_STYLE
    if comparison.num_steps < 1:
        raise ValueError("the cache comparison needs at least one pass")
    legend = [(_color(mode, style), label(table, f"cc_{mode}"), mode) for mode in ("off", "on")]
    width = PAD * 2 + sum(_dims(style)[:2])
    lines = legend_rows(style, [words for _, words, _ in legend], PAD, width - PAD)
    outliers = comparison_outliers(comparison)  # a legend line more for their red ring
    time_panel, flops_panel, picks = compare_layout(comparison, style, len(lines) + bool(outliers))
    total = label(table, "cc_total", off_ms=fmt_ms(comparison.off_total_ms), on_ms=fmt_ms(comparison.on_total_ms),
                  off_flops=fmt_count(int(comparison.off_total_flops)),
                  on_flops=fmt_count(int(comparison.on_total_flops)))
    sampled = sampled_note(len(picks), comparison.num_steps, table)  # "48 of the 128 passes are drawn ..."
    lines = [total, label(table, "cc_note")] + ([sampled] if sampled else [])
    if outliers:
        lines.append(label(table, "cc_outliers_note", n=len(outliers), total=2 * (comparison.num_steps - 1)))
    axis_y = flops_panel.bottom + 36 + 2 * max(0, style.small_size - 13)
    height = max(flops_panel.bottom + 110, axis_y + 8 + notes_height(style, lines, width - 2 * PAD) + 24)
    dwg = new_drawing(width, height, style, "cache-compare", label(table, "cc_title"))
    header(dwg, style, label(table, "cc_title"),
           label(table, "cc_subtitle", model=model_id, prompt_len=comparison.prompt_len, steps=comparison.num_steps))
    legend_end = legend_block(dwg, style, legend, PAD, 108, width - PAD)
    if outliers:  # only a figure that has one says what a red ring is
        outlier_legend(dwg, style, PAD, legend_end + style.small_size * 1.6, label(table, "cc_outlier"))
    for panel in (time_panel, flops_panel):
        _draw_panel(dwg, panel, comparison, style, table, picks)
    _draw_outliers(dwg, time_panel, outliers, comparison, table)
    axis_words = step_axis_label(len(picks), time_panel.right - time_panel.left, style, lang)
    dwg.add(text(dwg, axis_words, time_panel.left, axis_y, size=style.small_size, fill=style.muted_ink, weight="bold",
                 class_="axis-label"))
    notes(dwg, style, lines, PAD, axis_y + 8, width - 2 * PAD)
    return to_string(dwg)

"""KV-cache growth: the cache's bytes after each forward pass, stacked by layer.

The formula and this model's numbers are written on the figure:
    KV bytes = 2 (K, V) x layers x kv_heads x head_dim x bytes per element x tokens
Each bar carries data-bytes (the trace's measured `kv_bytes`) and each layer
segment its own data-bytes, so tests check the picture against the trace.
Past MAX_BARS passes, bars are drawn for evenly spread passes (first and last kept).
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.trace import RequestTrace

from ..layout import LinearScale, Run, byte_ticks, group_layers, sample_indices
from ..strings import label, strings_for
from ..style import DEFAULT_STYLE, Style
from ..svgtext import fmt_bytes, fmt_int
from ._common import add_title, header, new_drawing, notes, pass_tick, text, to_string

MAX_BARS, MAX_LAYER_SEGMENTS = 48, 12
PAD, PLOT_W, PLOT_H, Y_LABEL_W = 32, 760, 280, 78


@dataclass(frozen=True)
class Bar:
    step_index: int
    phase: str
    x: float
    w: float
    total_bytes: int
    tokens: int
    segments: tuple[tuple[Run, int, float, float], ...]  # (layers, bytes, y top, height)
    tick: str | None


@dataclass(frozen=True)
class KvLayout:
    width: float
    height: float
    left: float
    top: float
    bottom: float
    right: float
    bars: tuple[Bar, ...]
    y_ticks: tuple[tuple[float, str], ...]
    prefill_y: float


def kv_layout(trace: RequestTrace, table: dict) -> KvLayout:
    left, top = PAD + Y_LABEL_W, 200.0
    bottom, right = top + PLOT_H, PAD + Y_LABEL_W + PLOT_W
    ticks = byte_ticks(max(trace.kv_bytes, 1), 5)
    y = LinearScale(0, ticks[-1], bottom, top)
    picks = sample_indices(len(trace.steps), MAX_BARS)
    slot_w = PLOT_W / len(picks)
    bar_w = round(min(44.0, slot_w * 0.72), 2)
    layers = group_layers(trace.model.num_layers, MAX_LAYER_SEGMENTS)
    bars = []
    for position, index in enumerate(picks):
        step = trace.steps[index]
        base, segments = 0, []
        for run in layers:
            size = sum(step.kv_bytes_per_layer[run.start:run.stop])
            segments.append((run, size, y(base + size), round(y(base) - y(base + size), 2)))
            base += size
        x = round(left + slot_w * (position + 0.5) - bar_w / 2, 2)
        bars.append(Bar(index, step.phase, x, bar_w, step.kv_bytes, step.context_after, tuple(segments),
                        pass_tick(index, step.phase, position, len(picks), table)))
    return KvLayout(right + PAD, bottom + 120, left, top, bottom, right, tuple(bars),
                    tuple((y(t), fmt_bytes(int(t))) for t in ticks), y(trace.steps[0].kv_bytes))


def _formula_lines(trace: RequestTrace, table: dict) -> tuple[str, str, str]:
    m = trace.model
    per_token = fmt_bytes(m.kv_bytes_per_token)
    return (
        label(table, "kv_formula"),
        label(table, "kv_this_model", layers=m.num_layers, kv_heads=m.num_kv_heads, head_dim=m.head_dim,
              bpe=m.bytes_per_element, per_token=per_token, dtype=m.dtype),
        label(table, "kv_this_run", tokens=fmt_int(trace.steps[-1].context_after), per_token=per_token,
              total=fmt_bytes(m.kv_bytes_for(trace.steps[-1].context_after))),
    )


def _draw_formula(dwg, trace: RequestTrace, style: Style, table: dict) -> None:
    formula, model_line, run_line = _formula_lines(trace, table)
    box = dwg.g(class_="formula")
    box.add(dwg.rect((PAD, 84), (PLOT_W + Y_LABEL_W, 70), rx=8, fill=style.panel, stroke=style.grid))
    box.add(text(dwg, formula, PAD + 14, 106, size=style.small_size, fill=style.ink, weight="bold"))
    box.add(text(dwg, model_line, PAD + 14, 126, size=style.small_size, fill=style.ink))
    box.add(text(dwg, run_line, PAD + 14, 146, size=style.small_size, fill=style.ink))
    dwg.add(box)


def _draw_bar(dwg, bar: Bar, bottom: float, style: Style, table: dict):
    phase_name = label(table, f"phase_{bar.phase}")
    group = dwg.g(class_=f"kv-bar {bar.phase}", **{"data-step": bar.step_index, "data-bytes": bar.total_bytes,
                                                    "data-tokens": bar.tokens})
    for k, (run, size, y, h) in enumerate(bar.segments):
        name = f"layer-{run.start}" if run.count == 1 else f"layers-{run.start}-{run.stop - 1}"
        rect = dwg.rect((bar.x, y), (bar.w, h), fill=style.cached if k % 2 == 0 else style.cached_dark,
                        class_=f"kv {name}", **{"data-bytes": size})
        who = label(table, "kv_layer", i=run.start) if run.count == 1 else \
            label(table, "kv_layers", a=run.start, b=run.stop - 1)
        group.add(add_title(rect, f"{who}: {fmt_bytes(size)}"))
    group.add(dwg.rect((bar.x, bottom + 2), (bar.w, 4), fill=style.phase_color(bar.phase), class_="phase-strip"))
    add_title(group, label(table, "kv_bar_title", n=bar.step_index + 1, phase=phase_name, tokens=fmt_int(bar.tokens),
                           bytes=fmt_bytes(bar.total_bytes)))
    if bar.tick:
        group.add(text(dwg, bar.tick, bar.x + bar.w / 2, bottom + 22, size=style.tiny_size,
                       fill=style.phase_color(bar.phase), anchor="middle", weight="bold", class_="tick-label"))
    return group


def _draw_axes(dwg, layout: KvLayout, style: Style, table: dict) -> None:
    for y, words in layout.y_ticks:
        dwg.add(dwg.line((layout.left, y), (layout.right, y), stroke=style.grid, stroke_width=1, class_="grid"))
        dwg.add(text(dwg, words, layout.left - 8, y + 4, size=style.tiny_size, fill=style.muted_ink, anchor="end",
                     class_="tick-label"))
    dwg.add(text(dwg, label(table, "kv_axis_y"), PAD, layout.top - 20, size=style.small_size,
                 fill=style.muted_ink, weight="bold", class_="axis-label"))
    dwg.add(text(dwg, label(table, "kv_axis_x"), layout.left, layout.bottom + 44, size=style.small_size,
                 fill=style.muted_ink, weight="bold", class_="axis-label"))


def _draw_notes(dwg, trace: RequestTrace, layout: KvLayout, style: Style, table: dict) -> None:
    y = layout.prefill_y
    dwg.add(dwg.line((layout.left, y), (layout.right, y), stroke=style.prefill, stroke_width=1.2,
                     stroke_dasharray="5,4", class_="prefill-level"))
    prefill_text = label(table, "kv_prefill_note", n=fmt_int(trace.steps[0].num_positions))
    # Top left: the earliest (lowest) bars leave that corner free, as the cache only grows.
    baseline = layout.top + 14
    dwg.add(dwg.line((layout.left + 3, baseline + 4), (layout.left + 3, y), stroke=style.prefill, stroke_width=1.2,
                     class_="prefill-leader"))
    dwg.add(text(dwg, prefill_text, layout.left + 8, baseline, size=style.small_size,
                 fill=style.prefill, weight="bold", class_="prefill-note"))
    if len(trace.steps) > 1:
        decode_text = label(table, "kv_decode_note", per_token=fmt_bytes(trace.model.kv_bytes_per_token))
        dwg.add(text(dwg, decode_text, layout.right, layout.top - 14, size=style.small_size, fill=style.decode,
                     anchor="end", weight="bold", class_="decode-note"))
    notes(dwg, style, [label(table, "kv_stack_legend")], PAD, layout.bottom + 56, layout.width - 2 * PAD)


def render_kv_growth(trace: RequestTrace, *, lang: str = "zh", style: Style | None = None) -> str:
    """The KV cache's bytes after each forward pass, stacked by layer, formula on top."""
    table, style = strings_for(lang), style or DEFAULT_STYLE
    if not trace.steps:
        raise ValueError("the KV growth diagram needs a trace with at least one forward pass")
    layout = kv_layout(trace, table)
    dwg = new_drawing(layout.width, layout.height, style, "kv-growth", label(table, "kv_title"))
    header(dwg, style, label(table, "kv_title"), f"{trace.model.model_id} · {trace.model.architecture}")
    _draw_formula(dwg, trace, style, table)
    _draw_axes(dwg, layout, style, table)
    for bar in layout.bars:
        dwg.add(_draw_bar(dwg, bar, layout.bottom, style, table))
    _draw_notes(dwg, trace, layout, style, table)
    return to_string(dwg)

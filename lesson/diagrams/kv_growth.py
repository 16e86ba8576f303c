"""KV-cache size: the cache's bytes after each forward pass, stacked by layer.

The formula and this model's numbers are written on the figure:
    KV bytes = 2 (K, V) x layers x kv_heads x head_dim x bytes per element x tokens
but every number about *this run* comes from the trace's measured `kv_bytes`:
the run's total, the bytes each Decode added, the bytes per token. The formula
describes a full cache (one K and V per position); a sliding-window model keeps
only its recent positions, so its cache stops growing. When the measurements
differ from the formula the figure says so, and why, instead of printing both
as if they agreed.

Each bar carries data-bytes (the measured `kv_bytes`) and each layer segment
its own data-bytes, so tests check the picture against the trace.
Past MAX_BARS passes, bars are drawn for evenly spread passes (first and last kept),
and a note under the x axis says how many of how many are drawn.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import groupby

from engine.contract.trace import ModelInfo, RequestTrace

from ..layout import LinearScale, Run, byte_ticks, group_layers, sample_indices, text_width, wrap_text
from ..text import Table, label, table_for
from ..style import DEFAULT_STYLE, Style
from ..formats import fmt_bytes, fmt_int
from ._common import add_title, header, new_drawing, notes, notes_height, pass_tick, text, to_string

MAX_BARS, MAX_LAYER_SEGMENTS, MAX_DECODE_RUNS = 48, 12, 3
# Decode's growth under a tenth of the axis (a long prompt: +2 KiB a step on a 2 MiB axis) is invisible
# there: the bytes added since the Prefill are drawn again under it, on an axis of their own.
ZOOM_BELOW, INSET_H = 0.1, 90
PAD, PLOT_W, PLOT_H, Y_LABEL_W = 32, 760, 280, 78
FORMULA_TOP, FORMULA_LINE_H, NOTE_ROOM = 84, 20, 24
# The box is PLOT_W + Y_LABEL_W wide; text widths are estimates without font files
# (a sans-serif renders up to ~10 % wider), so lines wrap well before its edge.
FORMULA_WRAP_W = (PLOT_W + Y_LABEL_W - 28) * 0.85


@dataclass(frozen=True)
class KvMeasured:
    """What the figure says about this run, every number from the measured steps."""

    tokens: int  # positions processed by the end of the run
    total_bytes: int  # measured from the cache tensors after the last pass
    formula_bytes: int  # what a full cache of `tokens` positions holds, by the formula
    decode_added_bytes: tuple[int, ...]  # measured growth in each Decode pass (pass 2, 3, ...)
    full_cache: bool  # every pass measured exactly formula x its positions

    @property
    def bytes_per_token(self) -> int:
        """Measured bytes per position; a whole number only for a full cache."""
        return self.total_bytes // self.tokens


def kv_measured(trace: RequestTrace) -> KvMeasured:
    steps, model = trace.steps, trace.model
    return KvMeasured(
        tokens=steps[-1].context_kept,
        total_bytes=steps[-1].kv_bytes,
        formula_bytes=model.kv_bytes_for(steps[-1].context_kept),
        decode_added_bytes=tuple(after.kv_bytes - before.kv_bytes for before, after in zip(steps, steps[1:])),
        full_cache=all(s.kv_bytes == model.kv_bytes_for(s.context_kept) for s in steps),
    )


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
class Inset:
    """The zoom under the plot: each pass's bytes added since the Prefill, on its own axis."""

    title_lines: tuple[str, ...]  # wrapped to the figure's width
    title_y: float  # the first title line's baseline
    top: float
    bottom: float
    y_ticks: tuple[tuple[float, str], ...]
    bars: tuple[tuple[Bar, int, float], ...]  # (the main bar it zooms, bytes added since the Prefill, y of its top)


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
    formula_lines: tuple[str, ...]  # wrapped to the formula box
    prefill_note: str
    decode_note: str | None  # None for a run of one pass
    line_h: float = FORMULA_LINE_H  # the formula box's line height
    legend_y: float = -1.0  # the layer legend (swatches) and the stack note under the x axis
    sampled_note: str | None = None  # "48 of 128 passes drawn ..." when the bars are a sample
    run_note: str = ""  # which of several repeats this run is (lesson.spread.run_label), under the stack note
    inset: Inset | None = None  # Decode's growth zoomed, where the main axis cannot show it

    @property
    def plot_w(self) -> float:
        return self.right - self.left


def _plot_w(style: Style) -> tuple[float, float]:
    """(y label width, plot width): fixed, or what a width to fit leaves (classroom mode)."""
    if not style.fitted:
        return Y_LABEL_W, PLOT_W
    y_label_w = text_width("000.0 KiB", style.tiny_size) + 12
    return y_label_w, style.max_width - 2 * PAD - y_label_w


def _line_h(style: Style) -> float:
    return max(FORMULA_LINE_H, round(style.small_size * 1.35))


def _formula_lines(trace: RequestTrace, table: Table, style: Style) -> tuple[str, ...]:
    """The formula box's text, wrapped to the box."""
    wrap_w = FORMULA_WRAP_W if not style.fitted else (sum(_plot_w(style)) - 28) * 0.85
    return tuple(line for words in _formula_texts(trace, kv_measured(trace), table)
                 for line in wrap_text(words, wrap_w, style.small_size))


def _y_ticks(trace: RequestTrace, max_bytes: int, left: float, top: float, bottom: float, note_right: float,
             table: Table, style: Style = DEFAULT_STYLE) -> tuple[int, ...]:
    """Byte ticks up to `max_bytes`. The Prefill note sits in the plot's top left corner.
    A cache that does not grow much (a sliding window, a long prompt) has tall early
    bars of `trace` there: one more tick step of headroom keeps the note off them."""
    picks = sample_indices(len(trace.steps), MAX_BARS)
    ticks = byte_ticks(max(max_bytes, 1), 5)
    _, bars = _bars(trace, picks, ticks, left, top, bottom, table, style=style)
    room = NOTE_ROOM + max(0, style.small_size - 13)
    if any(bar.x < note_right and bar.segments and bar.segments[-1][2] < top + room for bar in bars):
        ticks = ticks + (2 * ticks[-1] - ticks[-2],)
    return ticks


def kv_layout(trace: RequestTrace, table: Table, style: Style = DEFAULT_STYLE,
              full: RequestTrace | None = None, run_note: str = "") -> KvLayout:
    """Coordinates of every mark. `full`: the whole run when `trace` is a prefix of it; the
    plot's top, its y axis and (when it fits MAX_BARS) the bar slots come from it. `run_note`: which of
    several repeats this run is, a note under the stack legend."""
    kv = kv_measured(trace)
    formula_lines = _formula_lines(trace, table, style)
    num_lines = len(formula_lines) if full is None else max(len(formula_lines), len(_formula_lines(full, table, style)))
    y_label_w, plot_w = _plot_w(style)
    left, line_h = PAD + y_label_w, _line_h(style)
    top = float(FORMULA_TOP + formula_box_height(num_lines, line_h) + 46)  # 200 for the usual three lines
    top += 2 * max(0, style.small_size - 13)
    bottom, right = top + PLOT_H, left + plot_w
    prefill_note = label(table, "kv_prefill_note", n=fmt_int(trace.steps[0].num_positions))
    note_right = left + 8 + text_width(prefill_note, style.small_size)
    picks = sample_indices(len(trace.steps), MAX_BARS)
    if full is None:
        ticks = _y_ticks(trace, trace.kv_bytes, left, top, bottom, note_right, table, style)
    else:  # the largest cache of the whole run: a sliding window's may peak before the end
        ticks = _y_ticks(full, max(s.kv_bytes for s in full.steps), left, top, bottom, note_right, table, style)
    num_slots = len(full.steps) if full is not None and len(full.steps) <= MAX_BARS else len(picks)
    y, bars = _bars(trace, picks, ticks, left, top, bottom, table, num_slots, style)
    width = right + PAD
    sampled = sampled_note(len(picks), len(trace.steps), table)
    legend_y = bottom + 50 + 2 * max(0, style.small_size - 13) + style.small_size * 1.7
    if sampled:  # its own line(s) under the x axis label, above the layer legend
        legend_y += notes_height(style, [sampled], width - 2 * PAD)
    title_lines = tuple(wrap_text(label(table, "kv_inset_title"), width - 2 * PAD, style.small_size))
    inset = _inset(trace, full or trace, bars, ticks[-1], title_lines, legend_y + 4, style)
    if inset is not None:  # the layer legend and the notes go under it
        legend_y = inset.bottom + style.tiny_size + 18 + style.small_size * 1.7
    stack_note = notes_height(style, _bottom_notes(table, run_note), width - 2 * PAD)
    return KvLayout(width, legend_y + stack_note + 30, left, top, bottom, right, bars,
                    tuple((y(v), fmt_bytes(int(v))) for v in ticks), y(trace.steps[0].kv_bytes),
                    formula_lines, prefill_note, _decode_note(kv, table), line_h, legend_y, sampled, run_note, inset)


def _inset(trace: RequestTrace, whole: RequestTrace, bars: tuple[Bar, ...], axis_max: float,
           title_lines: tuple[str, ...], title_y: float, style: Style) -> Inset | None:
    """The zoom of Decode's growth, or None where the main axis shows it (or nothing grew). Its axis comes
    from the whole run (`whole`), so stepping through the run never rescales it."""
    base = whole.steps[0].kv_bytes
    grown = max(s.kv_bytes for s in whole.steps) - base
    if len(whole.steps) < 2 or grown <= 0 or grown >= ZOOM_BELOW * axis_max:
        return None
    ticks = byte_ticks(grown, 3)
    top = title_y + style.small_size * (1.45 * (len(title_lines) - 1) + 1.2)
    y = LinearScale(0, ticks[-1], top + INSET_H, top)
    zoomed = tuple((bar, max(bar.total_bytes - base, 0), y(max(bar.total_bytes - base, 0))) for bar in bars)
    return Inset(title_lines, title_y, top, top + INSET_H, tuple((y(v), fmt_bytes(int(v))) for v in ticks), zoomed)


def _bottom_notes(table: Table, run_note: str) -> list[str]:
    """The notes under the layer legend: what the grey bands are, then which repeat the run is."""
    return [label(table, "kv_stack_legend")] + ([run_note] if run_note else [])


def sampled_note(num_drawn: int, num_passes: int, table: Table) -> str | None:
    """"48 of the 128 passes are drawn ..." when a figure samples its passes; None when it draws them all."""
    if num_drawn >= num_passes:
        return None
    return label(table, "fig_sampled_passes", drawn=fmt_int(num_drawn), total=fmt_int(num_passes))



def _bars(trace: RequestTrace, picks, ticks, left: float, top: float, bottom: float,
          table: Table, num_slots: int | None = None,
          style: Style = DEFAULT_STYLE) -> tuple[LinearScale, tuple[Bar, ...]]:
    """One bar per pick, in `num_slots` equal slots (default: one per pick)."""
    num_slots = num_slots or len(picks)
    y = LinearScale(0, ticks[-1], bottom, top)
    plot_w = _plot_w(style)[1]
    slot_w = plot_w / num_slots
    max_named, max_ticks = 16, 12
    if style.fitted:  # big tick labels: name fewer bars, number fewer ticks
        max_named = int(slot_w // (text_width("D99", style.tiny_size) + 6))
        max_ticks = min(12, int(plot_w // (text_width("9999", style.tiny_size) + 12)))
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
        bars.append(Bar(index, step.phase, x, bar_w, step.kv_bytes, step.context_kept, tuple(segments),
                        pass_tick(index, step.phase, position, num_slots, table, max_named, max_ticks)))
    return y, tuple(bars)


def formula_box_height(num_lines: int, line_h: float = FORMULA_LINE_H) -> float:
    return 10 + line_h * num_lines  # 70 for the usual three lines


# --- the words: formula for a full cache, then what was measured -------------

def _formula_texts(trace: RequestTrace, kv: KvMeasured, table: Table) -> tuple[str, ...]:
    """The formula, this model's numbers in it, then this run as measured (and why it differs)."""
    m = trace.model
    formula = (
        label(table, "kv_formula"),
        label(table, "kv_this_model", layers=m.num_layers, kv_heads=m.num_kv_heads, head_dim=m.head_dim,
              bpe=m.bytes_per_element, per_token=fmt_bytes(m.kv_bytes_per_token), dtype=m.dtype),
    )
    if kv.full_cache:
        return formula + (label(table, "kv_this_run", tokens=fmt_int(kv.tokens),
                                per_token=fmt_bytes(kv.bytes_per_token), total=fmt_bytes(kv.total_bytes)),)
    return formula + (
        label(table, "kv_this_run_differs", tokens=fmt_int(kv.tokens), total=fmt_bytes(kv.total_bytes),
              formula_total=fmt_bytes(kv.formula_bytes)),
        kv_why_not_formula(m, table),
    )


def kv_why_not_formula(model: ModelInfo, table: Table) -> str:
    """Why a measured cache is not formula x tokens: the model's sliding window, else a cache
    that keeps something other than one K and V per position (drops, compresses, repeats)."""
    if model.sliding_window is None:
        return label(table, "kv_why_other")
    if model.num_sliding_layers == model.num_layers:
        return label(table, "kv_why_sliding_all", window=fmt_int(model.sliding_window))
    return label(table, "kv_why_sliding", sliding=model.num_sliding_layers, layers=model.num_layers,
                 window=fmt_int(model.sliding_window))


def _decode_note(kv: KvMeasured, table: Table) -> str | None:
    """What each Decode pass added, measured: one amount, a few runs of amounts, or a range."""
    if not kv.decode_added_bytes:
        return None
    # Runs of Decode passes that added the same bytes, named as the x axis names them (D1, D2 ...).
    runs, first = [], 1
    for added, group in groupby(kv.decode_added_bytes):
        count = len(list(group))
        runs.append((added, first, first + count - 1))
        first += count
    if len(runs) == 1:
        added = runs[0][0]
        return label(table, "kv_decode_note", added=_signed_bytes(added)) if added else \
            label(table, "kv_decode_flat", bytes=fmt_bytes(kv.total_bytes))
    if len(runs) > MAX_DECODE_RUNS:
        return label(table, "kv_decode_range", low=_signed_bytes(min(kv.decode_added_bytes)),
                     high=_signed_bytes(max(kv.decode_added_bytes)))
    def name(n: int) -> str:
        return label(table, "pass_short_decode", n=n)

    parts = [label(table, "kv_decode_run_one", added=_signed_bytes(added), n=name(a)) if a == b else
             label(table, "kv_decode_run", added=_signed_bytes(added), first=name(a), last=name(b))
             for added, a, b in runs]
    return label(table, "kv_decode_runs", runs=label(table, "kv_decode_then").join(parts))


def _signed_bytes(num_bytes: int) -> str:
    return ("+" if num_bytes >= 0 else "−") + fmt_bytes(abs(num_bytes))


# --- drawing ---------------------------------------------------------------------

def _draw_formula(dwg, layout: KvLayout, style: Style) -> None:
    box = dwg.g(class_="formula")
    box_h = formula_box_height(len(layout.formula_lines), layout.line_h)
    box.add(dwg.rect((PAD, FORMULA_TOP), (layout.right - PAD, box_h), rx=8, fill=style.panel, stroke=style.grid))
    for k, line in enumerate(layout.formula_lines):
        box.add(text(dwg, line, PAD + 14, FORMULA_TOP + 9 + style.small_size + layout.line_h * k, size=style.small_size,
                     fill=style.ink, weight="bold" if k == 0 else None))
    dwg.add(box)


def _draw_bar(dwg, bar: Bar, bottom: float, style: Style, table: Table):
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
        group.add(text(dwg, bar.tick, bar.x + bar.w / 2, bottom + 11 + style.tiny_size, size=style.tiny_size,
                       fill=style.phase_color(bar.phase), anchor="middle", weight="bold", class_="tick-label"))
    return group


def _draw_axes(dwg, layout: KvLayout, style: Style, table: Table) -> None:
    for y, words in layout.y_ticks:
        dwg.add(dwg.line((layout.left, y), (layout.right, y), stroke=style.grid, stroke_width=1, class_="grid"))
        dwg.add(text(dwg, words, layout.left - 8, y + 4, size=style.tiny_size, fill=style.muted_ink, anchor="end",
                     class_="tick-label"))
    dwg.add(text(dwg, label(table, "kv_axis_y"), PAD, layout.top - 20, size=style.small_size,
                 fill=style.muted_ink, weight="bold", class_="axis-label"))
    axis_y = layout.bottom + 44 + 2 * max(0, style.small_size - 13)
    dwg.add(text(dwg, label(table, "kv_axis_x"), layout.left, axis_y, size=style.small_size,
                 fill=style.muted_ink, weight="bold", class_="axis-label"))
    if layout.sampled_note:  # the axis numbers run 1..N, but not every pass has a bar: say so
        line_y = axis_y + 4
        for line in wrap_text(layout.sampled_note, layout.width - 2 * PAD, style.small_size):
            line_y += style.small_size * 1.45  # as notes(): their height is what kv_layout made room for
            dwg.add(text(dwg, line, PAD, line_y, size=style.small_size, fill=style.muted_ink,
                         class_="note sampled-note"))


def _draw_inset(dwg, layout: KvLayout, style: Style, table: Table) -> None:
    """Decode's growth on an axis of its own, under the plot: the same passes, the bytes added since the Prefill."""
    inset = layout.inset
    group = dwg.g(class_="kv-inset")
    for k, line in enumerate(inset.title_lines):
        group.add(text(dwg, line, PAD, inset.title_y + k * style.small_size * 1.45, size=style.small_size,
                       fill=style.decode, weight="bold", class_="inset-title"))
    for y, words in inset.y_ticks:
        group.add(dwg.line((layout.left, y), (layout.right, y), stroke=style.grid, stroke_width=1, class_="grid"))
        group.add(text(dwg, words, layout.left - 8, y + 4, size=style.tiny_size, fill=style.muted_ink, anchor="end",
                       class_="tick-label"))
    for bar, added, y in inset.bars:
        rect = dwg.rect((bar.x, y), (bar.w, round(inset.bottom - y, 2)), fill=style.phase_color(bar.phase),
                        class_=f"inset-bar {bar.phase}", **{"data-step": bar.step_index, "data-added-bytes": added})
        group.add(add_title(rect, label(table, "kv_inset_bar", n=bar.step_index + 1, added=fmt_bytes(added))))
    dwg.add(group)


def _draw_notes(dwg, layout: KvLayout, style: Style, table: Table) -> None:
    y = layout.prefill_y
    dwg.add(dwg.line((layout.left, y), (layout.right, y), stroke=style.prefill, stroke_width=1.2,
                     stroke_dasharray="5,4", class_="prefill-level"))
    baseline = layout.top + 1 + style.small_size  # top left; kv_layout keeps the bars below it
    dwg.add(dwg.line((layout.left + 3, baseline + 4), (layout.left + 3, y), stroke=style.prefill, stroke_width=1.2,
                     class_="prefill-leader"))
    dwg.add(text(dwg, layout.prefill_note, layout.left + 8, baseline, size=style.small_size,
                 fill=style.prefill, weight="bold", class_="prefill-note"))
    if layout.decode_note:
        dwg.add(text(dwg, layout.decode_note, layout.right, layout.top - 14, size=style.small_size, fill=style.decode,
                     anchor="end", weight="bold", class_="decode-note"))
    _draw_layer_legend(dwg, layout, style, table)
    notes(dwg, style, _bottom_notes(table, layout.run_note), PAD, layout.legend_y + 4, layout.width - 2 * PAD)


def _draw_layer_legend(dwg, layout: KvLayout, style: Style, table: Table) -> None:
    """What the grey bands are: two swatches in the two shades, then the words."""
    side, y = max(14, round(style.small_size * 0.8)), layout.legend_y
    group = dwg.g(class_="legend-item layers")
    for k, fill in enumerate((style.cached, style.cached_dark)):
        group.add(dwg.rect((PAD + k * (side + 2), y - side * 11 / 14), (side, side), rx=3, fill=fill,
                           class_="swatch layer-shade"))
    group.add(text(dwg, label(table, "kv_layers_legend"), PAD + 2 * side + 10, y, size=style.small_size,
                   fill=style.ink))
    dwg.add(group)


def render_kv_growth(trace: RequestTrace, *, lang: str = "zh", style: Style | None = None,
                     full: RequestTrace | None = None, run_note: str = "") -> str:
    """The KV cache's bytes after each forward pass, stacked by layer, formula on top.

    `full`: the whole run when `trace` is a prefix of it: the y axis and the bar slots
    come from it, so stepping through the run never rescales the figure. `run_note`: which of several
    repeats this run is (lesson.spread.run_label), the last note."""
    table, style = table_for(lang), style or DEFAULT_STYLE
    if not trace.steps:
        raise ValueError("the KV growth diagram needs a trace with at least one forward pass")
    layout = kv_layout(trace, table, style, full, run_note)
    dwg = new_drawing(layout.width, layout.height, style, "kv-growth", label(table, "kv_title"))
    header(dwg, style, label(table, "kv_title"), f"{trace.model.model_id} · {trace.model.architecture}")
    _draw_formula(dwg, layout, style)
    _draw_axes(dwg, layout, style, table)
    for bar in layout.bars:
        dwg.add(_draw_bar(dwg, bar, layout.bottom, style, table))
    if layout.inset is not None:
        _draw_inset(dwg, layout, style, table)
    _draw_notes(dwg, layout, style, table)
    return to_string(dwg)

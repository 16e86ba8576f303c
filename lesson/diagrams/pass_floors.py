"""Where each pass's time goes: a run's Prefill and median Decode step as floor + the rest.

One group of two bars per run (the run shown; beside it a long prompt, so the contrast is on one
axis): the floor (the cost model on the machine's measured roofs, lesson.pass_floors) dark in the
phase's colour, the rest (per-pass overhead and noise) light, the numbers at the bar's end. All
groups share one time axis: a short prompt's two bars are the same length, a long Prefill's is not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..formats import format_ms
from ..layout import text_width, wrap_text
from ..pass_floors import PassFloor, RunFloors
from ..style import DEFAULT_STYLE, Style
from ..text import label, table_for
from ._common import header, legend_block, new_drawing, notes, notes_height, set_size, text, to_string

WIDTH, LEFT = 760.0, 32.0
BAR_HEIGHT, ROW_GAP = 22.0, 10.0


@dataclass(frozen=True)
class FloorGroup:
    """One run's two passes and the words naming it ("This run: a 4-position prompt")."""

    name: str
    floors: RunFloors


def _bar(dwg, style: Style, one: PassFloor, x: float, y: float, scale: float, table) -> None:
    """One pass: the floor dark, the rest light, then "floor + rest = total"."""
    floor_w, rest_w = one.floor_ms * scale, one.rest_ms * scale
    group = dwg.g(class_=f"pass {one.phase}")
    bar_h = max(BAR_HEIGHT, style.small_size * 1.5)
    group.add(dwg.rect((x, y), (max(floor_w, 1.0), bar_h), fill=style.phase_color(one.phase), class_="bar floor"))
    group.add(dwg.rect((x + floor_w, y), (max(rest_w, 0.0), bar_h), fill=style.phase_light(one.phase),
                       stroke=style.phase_color(one.phase), stroke_width=1, class_="bar rest"))
    value = _value(one, table)
    group.add(text(dwg, value, x + floor_w + rest_w + 8, y + bar_h * 0.72, size=style.small_size,
                   fill=style.ink, class_="value"))
    dwg.add(group)


def _value(one: PassFloor, table) -> str:
    """"floor + rest = total" at the bar's end; a pass under its floor (roofs measured low) says so instead."""
    key = "pf_value_under" if one.measured_ms < one.floor_ms else "pf_value"
    return label(table, key, floor=format_ms(one.floor_ms), rest=format_ms(one.rest_ms),
                 total=format_ms(one.measured_ms))


def _row_name(one: PassFloor, table) -> str:
    return label(table, "pf_row_prefill", n=one.num_positions) if one.phase == "prefill" \
        else label(table, "pf_row_decode")


def render_pass_floors(groups: Sequence[FloorGroup], *, lang: str = "zh", style: Style = DEFAULT_STYLE,
                       device_name: str = "", run_note: str = "") -> str:
    """The figure (a standalone SVG): every group's Prefill and Decode step on one time axis."""
    table = table_for(lang)
    if not groups:
        raise ValueError("the pass floors figure needs at least one run")
    width = min(WIDTH, style.max_width) if style.fitted else WIDTH
    longest = max(max(g.floors.prefill.measured_ms, g.floors.decode.measured_ms,
                      g.floors.prefill.floor_ms, g.floors.decode.floor_ms) for g in groups)
    passes = [one for g in groups for one in (g.floors.prefill, g.floors.decode)]
    label_w = max(text_width(_row_name(one, table), style.small_size) for one in passes) + 16
    value_w = max(text_width(_value(one, table), style.small_size) for one in passes) + 16
    scale = max(width - 2 * LEFT - label_w - value_w, 60.0) / max(longest, 1e-9)
    lines = [label(table, "pf_roofs", device=device_name)] if device_name else []
    lines += [run_note] if run_note else []
    room = width - 2 * LEFT
    dwg = new_drawing(width, 1, style, "pass_floors", label(table, "pf_title"))
    y = header(dwg, style, label(table, "pf_title"), label(table, "pf_subtitle"), width=width)
    legend = [(style.prefill, label(table, "pf_floor"), "floor"),
              (style.prefill_light, label(table, "pf_rest"), "rest")]
    y = legend_block(dwg, style, legend, LEFT, y + 4, width - LEFT) + 12
    for group in groups:
        y = _group(dwg, style, group, y, scale, table, room, label_w)
    y = notes(dwg, style, lines, LEFT, y, room) + 16
    set_size(dwg, width, y)
    return to_string(dwg)


def _group(dwg, style: Style, group: FloorGroup, y: float, scale: float, table, room: float,
           label_w: float) -> float:
    """A run's name, its two bars, and a note where its measurement turned the lesson's order round."""
    for line in wrap_text(group.name, room, style.font_size):
        y += style.font_size * 1.4
        dwg.add(text(dwg, line, LEFT, y, size=style.font_size, fill=style.ink, weight="bold", class_="group"))
    y += 8
    for one in (group.floors.prefill, group.floors.decode):
        bar_h = max(BAR_HEIGHT, style.small_size * 1.5)
        dwg.add(text(dwg, _row_name(one, table), LEFT, y + bar_h * 0.72, size=style.small_size,
                     fill=style.muted_ink, class_="row"))
        _bar(dwg, style, one, LEFT + label_w, y, scale, table)
        y += bar_h + ROW_GAP
    if group.floors.flipped:
        note = [label(table, "pf_flipped_note")]
        y = notes(dwg, style, note, LEFT, y - ROW_GAP, room) + notes_height(style, [], room) + ROW_GAP
    return y + 6


def pass_floors_alt(groups: Sequence[FloorGroup], lang: str) -> str:
    """The figure in words: each group's passes against their floors."""
    parts = [label(table_for(lang), "pf_alt", group=g.name, x=format_ms(g.floors.prefill.measured_ms),
                   floor_p=format_ms(g.floors.prefill.floor_ms), y=format_ms(g.floors.decode.measured_ms),
                   floor_d=format_ms(g.floors.decode.floor_ms)) for g in groups]
    title, joiner = label(table_for(lang), "pf_title"), "" if lang == "zh" else " "
    return f"{title}{'：' if lang == 'zh' else ': '}" + joiner.join(parts)

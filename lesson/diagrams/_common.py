"""svgwrite helpers shared by the figures: the document, text, chips, legends.

All text goes through `text()` / `add_title()`, which apply `svgtext.visible`
and let svgwrite escape the result, so no caller ever concatenates markup.
"""

from __future__ import annotations

import svgwrite

from ..layout import clip_text, text_width, wrap_text
from ..text import Table, label
from ..style import Style
from ..svgtext import visible

# svgwrite's validator is off: it rejects data-* attributes and costs seconds on
# thousands of elements. Structure is checked by parsing the output in tests.
VALIDATE = False


def new_drawing(width: float, height: float, style: Style, name: str, title: str) -> svgwrite.Drawing:
    """A standalone SVG 1.1 document with viewBox, size, fonts and a white page."""
    width, height = round(width), round(height)
    dwg = svgwrite.Drawing(size=(width, height), profile="full", debug=VALIDATE)
    set_size(dwg, width, height)
    dwg.attribs.update({"class": f"lesson-diagram {name}", "font-family": style.font_family})
    dwg.set_desc(title=visible(title))
    dwg.add(dwg.rect((0, 0), (width, height), fill=style.paper, class_="background"))
    return dwg


def set_size(dwg, width: float, height: float) -> None:
    """width, height and a matching space-separated viewBox (read by every SVG viewer)."""
    width, height = round(width), round(height)
    dwg.attribs.update({"width": width, "height": height, "viewBox": f"0 0 {width} {height}"})


def text(dwg, content: str, x: float, y: float, *, size: float, fill: str, anchor: str = "start",
         weight: str | None = None, class_: str = "label", **extra):
    """One line of escaped, visible text (baseline at y)."""
    attrs = {"insert": (round(x, 2), round(y, 2)), "font_size": size, "fill": fill, "class_": class_}
    if anchor != "start":
        attrs["text_anchor"] = anchor
    if weight:
        attrs["font_weight"] = weight
    return dwg.text(visible(content), **attrs, **extra)


def halo(style: Style) -> dict:
    """Attributes for a label that a line may cross (a reference line, the TTFT mark): a
    paper-coloured outline painted under the glyphs, so the line never strikes through them."""
    return {"stroke": style.paper, "stroke_width": 4, "stroke_linejoin": "round", "paint_order": "stroke"}


def add_title(element, content: str):
    """A hover tooltip (<title>) holding escaped, visible text."""
    element.set_desc(title=visible(content))
    return element


def header(dwg, style: Style, title: str, subtitle: str, x: float = 32, width: float | None = None) -> float:
    """Title and subtitle at the top left; returns the y below them. With a width to fit
    (classroom mode) the subtitle ends in "…" rather than run past the edge: the style's width, or the
    figure's own `width` where it is drawn narrower than that."""
    if style.fitted:  # the whole title stays in the figure's <title> and the page's alt text
        room = min(style.max_width, width or style.max_width) - 2 * x
        title = clip_text(title, room, style.title_size)
        subtitle = clip_text(subtitle, room, style.small_size)
    dwg.add(text(dwg, title, x, 40, size=style.title_size, fill=style.ink, weight="bold", class_="title"))
    dwg.add(text(dwg, subtitle, x, 66, size=style.small_size, fill=style.muted_ink, class_="subtitle"))
    return 84.0


def notes(dwg, style: Style, lines: list[str], x: float, y: float, width: float) -> float:
    """Wrapped footnotes from y down; returns the y below them."""
    line_h = style.small_size * 1.45
    for note in lines:
        for line in wrap_text(note, width, style.small_size):
            y += line_h
            dwg.add(text(dwg, line, x, y, size=style.small_size, fill=style.muted_ink, class_="note"))
    return y


def notes_height(style: Style, lines: list[str], width: float) -> float:
    return sum(len(wrap_text(n, width, style.small_size)) for n in lines) * style.small_size * 1.45


def legend_item(dwg, style: Style, x: float, y: float, fill: str, caption: str, class_: str) -> float:
    """A swatch and its caption; returns the x after it."""
    group = dwg.g(class_=f"legend-item {class_}")
    side = max(14, round(style.small_size * 0.8))
    group.add(dwg.rect((x, y - side * 11 / 14), (side, side), rx=3, fill=fill, class_=f"swatch {class_}"))
    group.add(text(dwg, caption, x + side + 6, y, size=style.small_size, fill=style.ink))
    dwg.add(group)
    return x + legend_item_width(style, caption)


def legend_item_width(style: Style, caption: str) -> float:
    return max(14, round(style.small_size * 0.8)) + 6 + text_width(caption, style.small_size) + 24


def legend_rows(style: Style, captions: list[str], x: float, right: float) -> list[int]:
    """How many items go on each legend line so no line passes `right` (one line unless fitted)."""
    if not style.fitted:
        return [len(captions)] if captions else []
    rows, used = [], x
    for caption in captions:
        w = legend_item_width(style, caption)
        if rows and used + w - 24 <= right:
            rows[-1] += 1
            used += w
        else:
            rows.append(1)
            used = x + w
    return rows


def legend_block(dwg, style: Style, items: list[tuple[str, str, str]], x: float, y: float, right: float) -> float:
    """(fill, caption, class) items on as many lines as the width needs; returns the last line's y."""
    rows, start = legend_rows(style, [c for _, c, _ in items], x, right), 0
    for line, count in enumerate(rows):
        cx, cy = x, y + line * style.small_size * 1.6
        for fill, caption, class_ in items[start:start + count]:
            cx = legend_item(dwg, style, cx, cy, fill, caption, class_)
        start += count
    return y + max(len(rows) - 1, 0) * style.small_size * 1.6


def arrow_marker(dwg, marker_id: str, color: str):
    """A small filled arrowhead, referenced by id (ids are fixed: byte-stable output)."""
    marker = dwg.marker(id=marker_id, insert=(7, 4), size=(8, 8), orient="auto", markerUnits="userSpaceOnUse")
    marker.add(dwg.path(d="M0,0 L8,4 L0,8 z", fill=color))
    dwg.defs.add(marker)
    return marker


# One mark for a measurement far from the others, in every measured figure (the sweep, cache on vs off, the
# engine modes): a red ring, as the serving Gantt's ITL spikes; which are far is lesson.spread's one rule.
OUTLIER_COLOR = "#dc2626"


def outlier_ring(dwg, x: float, y: float, title: str, **data):
    """A red ring around (x, y) with its hover words: a time this machine's noise made."""
    ring = dwg.circle((round(x, 2), round(y, 2)), 5, fill="none", stroke=OUTLIER_COLOR, stroke_width=2,
                      class_="outlier", **data)
    return add_title(ring, title)


def outlier_legend(dwg, style: Style, x: float, y: float, caption: str) -> float:
    """The legend's red ring and its words; returns the x after it."""
    group = dwg.g(class_="legend-item outlier")
    group.add(dwg.circle((x + 7, y - 4), 5, fill="none", stroke=OUTLIER_COLOR, stroke_width=2))
    group.add(text(dwg, caption, x + 20, y, size=style.small_size, fill=style.ink))
    dwg.add(group)
    return x + 20 + text_width(caption, style.small_size) + 24


def pass_tick(index: int, phase: str, position: int, num_bars: int, table: Table, max_named: int = 16,
              max_ticks: int = 12) -> str | None:
    """The x-axis label under bar `position` of `num_bars` (one bar per forward pass).

    Up to `max_named` bars every bar is named (P, D1, D2 ..., V3 for a verify pass); past that, about `max_ticks`
    numbered ticks, always the last one, and none just before it where the two labels would collide.
    """
    if num_bars <= max_named:
        return label(table, f"pass_short_{phase if phase in ('prefill', 'verify') else 'decode'}", n=index)
    tight = max_ticks < 12  # big labels (classroom): never more than max_ticks, and a full step before the last
    every = max(1, -(-num_bars // max_ticks) if tight else num_bars // max_ticks)
    last = position == num_bars - 1
    too_close = num_bars - 1 - position < (every - 1 if tight else every // 2)
    return str(index + 1) if last or (position % every == 0 and not too_close) else None


def to_string(dwg) -> str:
    return dwg.tostring()

"""WCAG 2 contrast of every label in a figure: pure functions, no browser (the tests' checker of the
lesson's figures: no page needs it, so it lives beside tests/svg.py).

`contrast_ratio(a, b)` is WCAG's (L1 + 0.05) / (L2 + 0.05) over relative
luminance. `text_contrasts(svg)` finds, for each <text> of a diagram, the colour
it is painted on: the topmost filled rect painted before it (in document order)
that holds the middle of the text, composited over the ones below with their
opacity, down to the page. AA asks 4.5:1 for normal text, 3:1 for large text
(24 px, or 18.66 px bold, and up).

The lesson's renderers draw text over rects (chips, bars, badges, panels) and never
over paths or images, and never transform a text: what this module reads is the
whole story for them.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass

from lesson.layout import text_width

SVG_NS = "{http://www.w3.org/2000/svg}"
AA_NORMAL, AA_LARGE = 4.5, 3.0
NAMED = {"white": "#ffffff", "black": "#000000"}


def parse_color(color: str) -> tuple[float, float, float]:
    """'#rgb' or '#rrggbb' (or white / black) as 0..1 floats."""
    value = NAMED.get(color.strip().lower(), color.strip())
    if not value.startswith("#") or len(value) not in (4, 7):
        raise ValueError(f"not a colour this checker reads: {color!r}")
    digits = value[1:] if len(value) == 7 else "".join(c * 2 for c in value[1:])
    return tuple(int(digits[i:i + 2], 16) / 255 for i in (0, 2, 4))


def relative_luminance(rgb: tuple[float, float, float]) -> float:
    def linear(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (linear(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast_ratio(a: str | tuple, b: str | tuple) -> float:
    """WCAG contrast of two colours (hex strings or rgb tuples), 1.0 .. 21.0."""
    la, lb = (relative_luminance(parse_color(c) if isinstance(c, str) else c) for c in (a, b))
    hi, lo = max(la, lb), min(la, lb)
    return (hi + 0.05) / (lo + 0.05)


def blend(top: tuple, bottom: tuple, alpha: float) -> tuple[float, float, float]:
    return tuple(alpha * t + (1 - alpha) * b for t, b in zip(top, bottom))


def is_large(size_px: float, bold: bool) -> bool:
    """WCAG's large text: 18 pt (24 px), or 14 pt (18.66 px) bold."""
    return size_px >= 24 or (bold and size_px >= 18.66)


def required_ratio(size_px: float, bold: bool) -> float:
    return AA_LARGE if is_large(size_px, bold) else AA_NORMAL


@dataclass(frozen=True)
class TextContrast:
    words: str
    size: float
    bold: bool
    color: str
    background: tuple[float, float, float]
    ratio: float

    @property
    def required(self) -> float:
        return required_ratio(self.size, self.bold)

    @property
    def passes(self) -> bool:
        return self.ratio >= self.required - 1e-9


@dataclass(frozen=True)
class _Fill:
    x: float
    y: float
    w: float
    h: float
    rgb: tuple[float, float, float]
    alpha: float

    def holds(self, x: float, y: float) -> bool:
        return self.x <= x <= self.x + self.w and self.y <= y <= self.y + self.h


def _num(el: ET.Element, name: str, default: float = 0.0) -> float:
    value = el.get(name)
    return float(value) if value not in (None, "") else default


def _text_middle(el: ET.Element, words: str, size: float) -> tuple[float, float]:
    x, y = _num(el, "x"), _num(el, "y")
    w = text_width(words, size)
    anchor = el.get("text-anchor", "start")
    cx = x + w / 2 if anchor == "start" else x - w / 2 if anchor == "end" else x
    return cx, y - size * 0.35


def text_contrasts(svg: str) -> list[TextContrast]:
    """Every visible <text> with the colour under its middle and the contrast between them.

    A text whose static opacity is 0 (an animation frame that fades in) counts as shown."""
    root = ET.fromstring(svg)
    fills: list[_Fill] = []
    found: list[TextContrast] = []

    def walk(el: ET.Element, alpha: float) -> None:
        tag = el.tag.replace(SVG_NS, "")
        if tag in ("defs", "marker", "title", "desc"):
            return
        own = alpha * (_num(el, "opacity", 1.0) or 1.0)  # opacity 0: an animation frame, judged as shown
        if tag == "rect" and el.get("fill") not in (None, "none"):
            fills.append(_Fill(_num(el, "x"), _num(el, "y"), _num(el, "width"), _num(el, "height"),
                               parse_color(el.get("fill")), own * _num(el, "fill-opacity", 1.0)))
        elif tag == "text":
            found.append(_judge(el, fills))
            return
        for child in el:
            walk(child, own)

    walk(root, 1.0)
    return found


def _judge(el: ET.Element, fills: list[_Fill]) -> TextContrast:
    words = "".join(el.itertext())
    size = _num(el, "font-size", 16.0)
    bold = el.get("font-weight") in ("bold", "700", "800", "900")
    cx, cy = _text_middle(el, words, size)
    background = (1.0, 1.0, 1.0)
    for fill in fills:
        if fill.holds(cx, cy):
            background = blend(fill.rgb, background, fill.alpha)
    color = el.get("fill", "#000000")
    ink = blend(parse_color(color), background, (_num(el, "opacity", 1.0) or 1.0) * _num(el, "fill-opacity", 1.0))
    return TextContrast(words, size, bold, color, background, round(contrast_ratio(ink, background), 3))


def failing_labels(svg: str) -> list[TextContrast]:
    """The labels below WCAG AA for their size."""
    return [c for c in text_contrasts(svg) if not c.passes]

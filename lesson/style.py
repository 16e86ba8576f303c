"""Colours, fonts and sizes shared by every diagram.

One colour per meaning, used identically in all figures: Prefill, Decode, a
muted one for positions read back from the KV cache, and two for time when no
forward pass of the request runs: waiting (tokenizing, queued for the model,
bookkeeping) and the page drawing itself while the model waits. Renderers take a `Style`
(default `DEFAULT_STYLE`) so a page can restyle them without touching layout.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

# Chinese-capable first on each platform: Linux (Noto / Source Han), macOS
# (PingFang, Hiragino), Windows (Microsoft YaHei); then fonts that hold the
# control pictures (U+2400..) used for control characters; then colour emoji (Debian's
# fonts-noto-color-emoji, macOS, Windows) so 🚀 and 🇫🇷 are not boxes; then generic fallbacks.
FONT_STACK = (
    "'Noto Sans CJK SC', 'Noto Sans SC', 'Source Han Sans SC', 'PingFang SC', "
    "'Hiragino Sans GB', 'Microsoft YaHei', 'WenQuanYi Micro Hei', "
    "'Segoe UI', 'Helvetica Neue', Arial, 'DejaVu Sans', 'Segoe UI Symbol', 'Apple Symbols', "
    "'Noto Color Emoji', 'Apple Color Emoji', 'Segoe UI Emoji', sans-serif"
)

# Classroom mode: at 1280x720 with the sidebar open, a figure is shown 820 px wide
# (measured in chromium) and the page's body text is 1.28rem = 20.5 px. A figure whose viewBox
# is at most CLASSROOM_WIDTH wide, with no text under CLASSROOM_MIN_FONT units, is therefore
# drawn at scale >= 1 and no label is smaller than the body text.
CLASSROOM_WIDTH, CLASSROOM_MIN_FONT = 820.0, 21.0


@dataclass(frozen=True)
class Style:
    prefill: str = "#2563eb"  # blue: the pass that reads the whole prompt
    decode: str = "#c2410c"  # orange, dark enough for WCAG AA both ways: white on it and it on white, 5.2:1
    cached: str = "#cbd5e1"  # muted slate: positions read from the KV cache
    waiting: str = "#a855f7"  # violet: the request waits, no pass of its own runs (tokenizing, queue, bookkeeping)
    page: str = "#0d9488"  # teal: the page (the stream's caller) is drawing while the model waits
    prefill_light: str = "#dbeafe"  # chip backgrounds
    decode_light: str = "#ffedd5"
    cached_dark: str = "#94a3b8"  # second shade for stacked KV layers
    ink: str = "#0f172a"  # main text
    muted_ink: str = "#475569"  # secondary text, axes
    grid: str = "#e2e8f0"  # grid lines, table rules
    panel: str = "#f8fafc"  # panel backgrounds
    paper: str = "#ffffff"
    font_family: str = FONT_STACK
    title_size: float = 22.0
    font_size: float = 15.0
    small_size: float = 13.0
    tiny_size: float = 11.0
    max_width: float = 0.0  # the widest viewBox a figure may take; 0: as wide as its content needs
    # green: a verify pass (speculative decoding), k+1 positions in one pass; white on it 5.0:1
    verify: str = "#15803d"
    verify_light: str = "#dcfce7"

    def phase_color(self, phase: str) -> str:
        return {"prefill": self.prefill, "verify": self.verify}.get(phase, self.decode)

    def phase_light(self, phase: str) -> str:
        return {"prefill": self.prefill_light, "verify": self.verify_light}.get(phase, self.decode_light)

    @property
    def fitted(self) -> bool:
        """A width to fit (classroom mode): figures fold rows and columns instead of shrinking."""
        return self.max_width > 0


DEFAULT_STYLE = Style()


def classroom_style(width: float = CLASSROOM_WIDTH, min_font: float = CLASSROOM_MIN_FONT,
                    base: Style = DEFAULT_STYLE) -> Style:
    """Every text at least `min_font` units and every figure at most `width` units wide:
    shown `width` px wide, no label is under `min_font` px."""
    return replace(base, title_size=round(min_font * 1.3), font_size=round(min_font * 1.1), small_size=min_font,
                   tiny_size=min_font, max_width=width)


# A phone (390 px wide screen): Streamlit's main column is 358 px (1 rem margins). A figure drawn for it
# (the timeline's narrow layout) is at most PHONE_WIDTH units wide, shown at scale 1: no label under
# PHONE_MIN_FONT px and nothing to scroll sideways.
PHONE_WIDTH, PHONE_MIN_FONT = 358.0, 12.0


def phone_style(base: Style = DEFAULT_STYLE) -> Style:
    """A phone's column: every figure at most PHONE_WIDTH units wide, every text at least PHONE_MIN_FONT."""
    return replace(base, title_size=17.0, font_size=14.0, small_size=PHONE_MIN_FONT, tiny_size=PHONE_MIN_FONT,
                   max_width=PHONE_WIDTH)

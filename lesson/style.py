"""Colours, fonts and sizes shared by every diagram.

One colour per meaning, used identically in all figures: Prefill, Decode, a
muted one for positions read back from the KV cache, and two for time when no
forward pass of the request runs: waiting (tokenizing, queued for the model,
bookkeeping) and the page drawing itself while the model waits. Renderers take a `Style`
(default `DEFAULT_STYLE`) so a page can restyle them without touching layout.
"""

from __future__ import annotations

from dataclasses import dataclass

# Chinese-capable first on each platform: Linux (Noto / Source Han), macOS
# (PingFang, Hiragino), Windows (Microsoft YaHei); then fonts that hold the
# control pictures (U+2400..) used for control characters; then generic fallbacks.
FONT_STACK = (
    "'Noto Sans CJK SC', 'Noto Sans SC', 'Source Han Sans SC', 'PingFang SC', "
    "'Hiragino Sans GB', 'Microsoft YaHei', 'WenQuanYi Micro Hei', "
    "'Segoe UI', 'Helvetica Neue', Arial, 'DejaVu Sans', 'Segoe UI Symbol', 'Apple Symbols', sans-serif"
)


@dataclass(frozen=True)
class Style:
    prefill: str = "#2563eb"  # blue: the pass that reads the whole prompt
    decode: str = "#ea580c"  # orange: one new position per pass
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

    def phase_color(self, phase: str) -> str:
        return self.prefill if phase == "prefill" else self.decode

    def phase_light(self, phase: str) -> str:
        return self.prefill_light if phase == "prefill" else self.decode_light


DEFAULT_STYLE = Style()

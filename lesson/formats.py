"""Every number format of the lesson, the figures' and the page's: milliseconds, bytes, counts, SI,
times, shares, ratios, an exercise's numbers, and the page's milliseconds with seconds and "—"
(tests/test_structure.py keeps them here). Plus Markdown escaped so user text shows as typed, and
token pieces made visible (lesson.svgtext.visible).
"""

from __future__ import annotations

import re

from .svgtext import visible


def fmt_ms(ms: float) -> str:
    """3 significant-ish digits: 0.42 ms, 3.1 ms, 205 ms."""
    if ms < 1:
        return f"{ms:.2f} ms"
    if ms < 100:
        return f"{ms:.1f} ms"
    return f"{ms:,.0f} ms"


def fmt_bytes(num_bytes: int) -> str:
    """Binary units, as memory is counted: 2,048 B -> 2.0 KiB."""
    value, unit = float(num_bytes), "B"
    for next_unit in ("KiB", "MiB", "GiB"):
        if value < 1024:
            break
        value, unit = value / 1024, next_unit
    return f"{num_bytes:,} B" if unit == "B" else f"{value:.1f} {unit}"


def fmt_count(n: int) -> str:
    """Large counts in short form: 3,537,408 -> 3.5M."""
    for scale, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "K")):
        if n >= scale:
            return f"{n / scale:.1f}{suffix}"
    return str(n)


def fmt_int(n: int) -> str:
    return f"{n:,}"


def si(value: float) -> str:
    """1.23e12 -> '1.23 T' (the unit follows)."""
    for factor, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if value >= factor:
            return f"{value / factor:.3g} {prefix}"
    return f"{value:.3g} "


def fmt_time(ms: float) -> str:
    """Times from nanoseconds to seconds: 0.0021 ms -> '2.1 µs', 68.9 -> '68.9 ms'."""
    if ms == 0:
        return "0"
    if ms >= 1000:
        return f"{ms / 1000:.3g} s"
    if ms >= 1:
        return f"{ms:.3g} ms"
    if ms >= 1e-3:
        return f"{ms * 1e3:.3g} µs"
    return f"{ms * 1e6:.3g} ns"


def fmt_share(ratio: float) -> str:
    """A share as a percent: 0.0042 -> '0.42%', 0.31 -> '31%'; "—" for NaN."""
    if ratio != ratio:  # nan: a pass timed at 0
        return "—"
    return f"{ratio:.2%}" if ratio < 0.01 else f"{ratio:.0%}"


def format_ms(ms: float | None) -> str:
    """The diagrams' millisecond format (fmt_ms), plus seconds and "—" for the page."""
    if ms is None:
        return "—"
    return f"{ms / 1000:.2f} s" if ms >= 1000 else fmt_ms(ms)


def fmt_ratio(ratio: float) -> str:
    """1.5 -> "1.5", 100.5 -> "100.5"; two decimals just above 1, where one would read "1.0"."""
    return f"{ratio:.2f}" if 1.0 < ratio < 1.05 else f"{ratio:.1f}"


def format_number(value: float) -> str:
    """An answer or a measured value: whole numbers as they are, others to about three digits."""
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.1f}" if abs(value) >= 10 else f"{value:.2f}"


def escape_markdown(text: str) -> str:
    """Backslash-escape Markdown and HTML punctuation so user text shows as typed."""
    return re.sub(r"([\\`*_{}\[\]()#+\-.!|<>~$:&])", r"\\\1", text)


def shown_piece(piece: str) -> str:
    """A token piece for the page: newline and tab as ⏎ and ⇥, every other control or
    bidi character visible as in the figures (lesson.svgtext.visible)."""
    return visible(piece.replace("\n", "⏎").replace("\t", "⇥"))


def token_split_text(pieces: tuple[str, ...] | list[str]) -> str:
    """Pieces joined with a visible bar."""
    return " │ ".join(shown_piece(p) for p in pieces)


def markdown_table(rows: list[list[str]]) -> str:
    """A Markdown table from the lesson's own (trusted) header + rows."""
    header, *body = rows
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in body]
    return "\n".join(lines)

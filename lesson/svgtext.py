"""Text that is safe and visible in SVG, plus the number formats the figures use.

Every piece of user text (prompt pieces, output tokens, the prompt) goes
through `visible()` before svgwrite escapes it:

- XML 1.0 cannot hold most C0 control characters at all, so each becomes its
  Unicode "control picture" (U+2400 + code, e.g. "\\n" -> "␊"); DEL -> "␡".
- C1 controls, lone surrogates and U+FFFE/U+FFFF become "\\ufffd" (visible).
- Bidi embedding/override/isolate marks become "⟪RLO⟫"-style tags, so a piece
  cannot silently reverse the text drawn next to it.

Nothing is ever dropped: a learner sees that a token holds a control character.
"""

from __future__ import annotations

_BIDI_NAMES = {
    0x200E: "LRM", 0x200F: "RLM", 0x202A: "LRE", 0x202B: "RLE", 0x202C: "PDF",
    0x202D: "LRO", 0x202E: "RLO", 0x2066: "LRI", 0x2067: "RLI", 0x2068: "FSI", 0x2069: "PDI",
}


def _visible_char(ch: str) -> str:
    code = ord(ch)
    if code < 0x20:
        return chr(0x2400 + code)
    if code == 0x7F:
        return "\u2421"
    if 0x80 <= code <= 0x9F or 0xD800 <= code <= 0xDFFF or code in (0xFFFE, 0xFFFF):
        return "\ufffd"
    if code in _BIDI_NAMES:
        return f"\u27ea{_BIDI_NAMES[code]}\u27eb"
    return ch


def visible(text: str) -> str:
    """`text` with every character XML cannot hold (or would hide) made visible."""
    if text.isprintable() and text.isascii():
        return text  # fast path: plain ASCII needs no mapping
    return "".join(_visible_char(ch) for ch in text)


def piece_label(piece: str, max_chars: int = 10) -> str:
    """A token piece as a chip shows it: spaces as "␣", controls visible, long ones cut."""
    shown = visible(piece).replace(" ", "\u2423")
    if not shown:
        return "\u2205"  # an empty piece is still a position: show ∅
    return shown if len(shown) <= max_chars else shown[: max_chars - 1] + "\u2026"


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

"""Text that is safe and visible in SVG (the number formats are lesson/formats.py's).

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

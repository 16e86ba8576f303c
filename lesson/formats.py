"""The page's formats: numbers as the page writes them (lesson.svgtext's figure formats, plus
seconds and "—"), Markdown escaped so user text shows as typed, and token pieces made visible.
"""

from __future__ import annotations

import re

from .svgtext import fmt_bytes, fmt_count, fmt_ms, visible

def format_ms(ms: float | None) -> str:
    """The diagrams' millisecond format (lesson.svgtext.fmt_ms), plus seconds and "—" for the page."""
    if ms is None:
        return "—"
    return f"{ms / 1000:.2f} s" if ms >= 1000 else fmt_ms(ms)


format_bytes = fmt_bytes  # one byte format for the page and the figures
format_count = fmt_count


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

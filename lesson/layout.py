"""Coordinates, scales and grouping shared by the diagrams. No svgwrite here.

Three ideas keep big requests readable and small files light:

- `plan_slots`: past `max_items` forward passes, show the first and last few
  and one "gap" slot standing for the rest (`Slot(kind="gap")`).
- `split_runs`: past `max_singles` consecutive positions, draw a few runs with
  a count instead of one block each.
- `PassSpan`: which positions a pass computed (from a trace, or from the two
  lengths alone for the schematic view).
"""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass

# --- text measurement (no font files: a width estimate good enough for layout) ---

_NARROW = "iljtfr.,;:'|!I()[]{} "


def char_width(ch: str) -> float:
    """Width of one character in em: CJK and emoji 1.0, Latin about 0.55."""
    code = ord(ch)
    if unicodedata.east_asian_width(ch) in ("W", "F") or code >= 0x1F000 or 0x2400 <= code <= 0x243F:
        return 1.0  # CJK, emoji, and the control pictures drawn for control characters
    if ch in "“”‘’":  # curly quotes: full width in the CJK fonts that come first in the font stack
        return 1.0
    if code in (0xFFFD, 0x27EA, 0x27EB):
        return 0.8
    if ch in _NARROW:
        return 0.32
    if ch.isupper() or ch in "mwMW@%":
        return 0.68
    return 0.58


def text_width(text: str, font_size: float) -> float:
    return round(sum(char_width(c) for c in text) * font_size, 2)


def wrap_text(text: str, max_width: float, font_size: float) -> tuple[str, ...]:
    """Greedy line wrap: at spaces for Latin text, between any CJK characters."""
    lines, line = [], ""
    for token in _wrap_tokens(text):
        candidate = line + token
        if line and text_width(candidate.rstrip(), font_size) > max_width:
            lines.append(line.rstrip())
            line = token.lstrip()
        else:
            line = candidate
    if line.strip():
        lines.append(line.rstrip())
    return tuple(lines)


def clip_text(text: str, max_width: float, font_size: float) -> str:
    """The text, or its head with "…" so that it fits `max_width`."""
    if text_width(text, font_size) <= max_width:
        return text
    while text and text_width(text + "…", font_size) > max_width:
        text = text[:-1]
    return text + "…"


NO_LINE_START = frozenset("。，、；：！？）》」』】〉”’…")  # CJK closing marks: never the first of a line


def _wrap_tokens(text: str) -> list[str]:
    """Words (with their trailing space) and single wide characters; a closing mark (。，）…) stays with
    what it closes, so no wrapped line starts with one."""
    tokens, word = [], ""
    for ch in text:
        if ch in NO_LINE_START and (tokens or word):
            if word:
                tokens.append(word)
                word = ""
            tokens[-1] += ch
        elif char_width(ch) == 1.0:
            if word:
                tokens.append(word)
                word = ""
            tokens.append(ch)
        else:
            word += ch
            if ch == " ":
                tokens.append(word)
                word = ""
    if word:
        tokens.append(word)
    return tokens


# --- scales ---

@dataclass(frozen=True)
class LinearScale:
    """Maps a value in [d0, d1] to a coordinate in [r0, r1]."""

    d0: float
    d1: float
    r0: float
    r1: float

    def __call__(self, value: float) -> float:
        span = (self.d1 - self.d0) or 1.0
        return round(self.r0 + (value - self.d0) / span * (self.r1 - self.r0), 2)


@dataclass(frozen=True)
class LogScale:
    """Maps log10(value) in [10**lo, 10**hi] onto [r0, r1]."""

    lo: float
    hi: float
    r0: float
    r1: float

    def __call__(self, value: float) -> float:
        return LinearScale(self.lo, self.hi, self.r0, self.r1)(math.log10(max(value, 1e-300)))

    def decades(self) -> tuple[float, ...]:
        return tuple(10.0 ** e for e in range(math.ceil(self.lo - 1e-9), math.floor(self.hi + 1e-9) + 1))


def nice_step(span: float, target_ticks: int = 5) -> float:
    """1, 2 or 5 times a power of ten, giving about `target_ticks` ticks."""
    if span <= 0:
        return 1.0
    raw = span / max(target_ticks, 1)
    power = 10 ** math.floor(math.log10(raw))
    for mult in (1, 2, 5, 10):
        if raw <= mult * power:
            return mult * power
    return 10 * power


def nice_ticks(lo: float, hi: float, target_ticks: int = 5) -> tuple[float, ...]:
    """Round tick values covering [lo, hi]; the last tick is >= hi."""
    step = nice_step(hi - lo, target_ticks)
    first = math.floor(lo / step) * step
    count = math.ceil((hi - first) / step - 1e-9)
    return tuple(round(first + i * step, 10) for i in range(max(count, 1) + 1))


def byte_ticks(max_bytes: int, target_ticks: int = 5) -> tuple[int, ...]:
    """Round ticks in the binary unit that fits: 0, 2 KiB, 4 KiB ... (not 4.9 KiB)."""
    unit = 1
    while max_bytes / unit >= 1024 and unit < 1024**3:
        unit *= 1024
    return tuple(int(round(t * unit)) for t in nice_ticks(0, max(max_bytes / unit, 1e-9), target_ticks))


# --- figures on the page ---

# The app's main column at its widest (app_support/ui.py BASE_CSS: a 1180 px block less its padding,
# as measured in chromium at 1440x900), and the smallest label a reader should meet there.
MAIN_COLUMN_PX, MIN_LABEL_PX = 1100.0, 10.0


def figure_size(svg: str) -> tuple[float, float]:
    """(width of the viewBox, the smallest font size used) of one of the figures' SVGs."""
    width = float(re.search(r'<svg[^>]*?\swidth="([\d.]+)"', svg).group(1))
    sizes = [float(v) for v in re.findall(r'font-size="([\d.]+)"', svg)]
    return width, min(sizes, default=width)


def figures_per_row(svgs: list[str], column_px: float = MAIN_COLUMN_PX, gap_px: float = 16.0,
                    min_label_px: float = MIN_LABEL_PX) -> int:
    """2 if every figure, shown in half the column, keeps its smallest label at least `min_label_px`
    (a figure is scaled to its box's width); else 1: one above the other at the column's full width.
    Two 860-unit Gantts with 11-unit ticks side by side are drawn at 6-7 px: one per row."""
    half = (column_px - gap_px) / 2
    for svg in svgs:
        width, smallest = figure_size(svg)
        if smallest * min(half / width, 1.0) < min_label_px:
            return 1
    return 2


# --- grouping ---

@dataclass(frozen=True)
class Slot:
    """One drawn item: a single forward pass, or a gap standing for `count` passes."""

    kind: str  # "pass" or "gap"
    first: int  # index of the (first) pass
    count: int = 1

    @property
    def last(self) -> int:
        return self.first + self.count - 1


def plan_slots(num_items: int, max_items: int, head: int, tail: int) -> tuple[Slot, ...]:
    """All items if they fit; else `head` items, one gap slot, `tail` items."""
    if num_items <= max_items or num_items - head - tail < 2:
        return tuple(Slot("pass", i) for i in range(num_items))
    gap = Slot("gap", head, num_items - head - tail)
    return (
        tuple(Slot("pass", i) for i in range(head))
        + (gap,)
        + tuple(Slot("pass", i) for i in range(num_items - tail, num_items))
    )


@dataclass(frozen=True)
class Run:
    """Consecutive positions [start, start + count) drawn as one block."""

    start: int
    count: int

    @property
    def stop(self) -> int:
        return self.start + self.count


def split_runs(start: int, stop: int, max_singles: int, num_runs: int) -> tuple[Run, ...]:
    """One run per position up to `max_singles`; beyond, `num_runs` near-equal runs."""
    total = stop - start
    if total <= max_singles:
        return tuple(Run(p, 1) for p in range(start, stop))
    size = max(int(nice_step(total, num_runs)), 1)  # round run sizes read better: 0-999, 1000-1999
    bounds = list(range(start, stop, size)) + [stop]
    return tuple(Run(a, b - a) for a, b in zip(bounds, bounds[1:]))


def fit_chips(widths: list[float], budget: float, gap: float, ellipsis_width: float) -> tuple[int, int]:
    """How many chips to show from the head and the tail so the row fits `budget`.

    Returns (head, tail); head + tail == len(widths) means everything fits and no
    ellipsis chip is needed.
    """
    if sum(widths) + gap * max(len(widths) - 1, 0) <= budget:
        return len(widths), 0
    room = budget - ellipsis_width - gap
    head = tail = 0
    used = 0.0
    while head + tail < len(widths):
        take_head = head <= tail
        width = widths[head] if take_head else widths[len(widths) - 1 - tail]
        if used + width + gap > room:
            break
        used += width + gap
        head, tail = (head + 1, tail) if take_head else (head, tail + 1)
    return head, tail


def sample_indices(num_items: int, max_items: int) -> tuple[int, ...]:
    """All indices if they fit; else `max_items` evenly spread, first and last kept."""
    if num_items <= max_items:
        return tuple(range(num_items))
    picks = {round(i * (num_items - 1) / (max_items - 1)) for i in range(max_items)}
    return tuple(sorted(picks))


def group_layers(num_layers: int, max_groups: int) -> tuple[Run, ...]:
    """Layers drawn one segment each, or in equal groups past `max_groups`."""
    size = -(-num_layers // max_groups)  # ceil
    return tuple(Run(a, min(size, num_layers - a)) for a in range(0, num_layers, size))


# --- what each pass computed ---

@dataclass(frozen=True)
class PassSpan:
    """Positions [context_before, context_after) computed by one forward pass."""

    index: int
    phase: str
    context_before: int
    context_after: int
    context_kept: int = -1  # a verify pass: positions the cache keeps (its rejected drafts dropped); -1: all

    @property
    def num_positions(self) -> int:
        return self.context_after - self.context_before

    @property
    def kept(self) -> int:
        return self.context_after if self.context_kept < 0 else self.context_kept


def spans_from_lengths(prompt_len: int, output_len: int) -> tuple[PassSpan, ...]:
    """The schematic passes: Prefill computes the prompt and gives token 1; each
    Decode computes the one token before it. The last output token is never fed
    back, so `output_len` tokens take 1 + (output_len - 1) passes."""
    if prompt_len < 1 or output_len < 1:
        raise ValueError("prompt and output lengths must be at least 1")
    spans = [PassSpan(0, "prefill", 0, prompt_len)]
    spans += [PassSpan(i, "decode", prompt_len + i - 1, prompt_len + i) for i in range(1, output_len)]
    return tuple(spans)


def spans_from_trace(trace) -> tuple[PassSpan, ...]:
    return tuple(PassSpan(s.index, s.phase, s.context_before, s.context_after, s.context_kept) for s in trace.steps)


def slot_span(spans: tuple[PassSpan, ...], slot: Slot) -> PassSpan:
    """The positions a slot stands for (a gap covers all its passes)."""
    first, last = spans[slot.first], spans[slot.last]
    return PassSpan(first.index, first.phase, first.context_before, last.context_after, last.context_kept)

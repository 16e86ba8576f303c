"""The page's defaults and input checks: the lesson's running example, the default lengths, and
numbers a visitor (or a forged session value) sends, clamped into range.

Nothing here imports streamlit or torch, so every rule the page follows is testable without a
browser or a model.
"""

from __future__ import annotations

from engine.contract.prompts import LESSON_PROMPTS

DEFAULT_PROMPT = LESSON_PROMPTS["zh"]
DEFAULT_OUTPUT_LEN = 8
DEFAULT_MODEL_CHOICE = "default"


def default_prompt(lang: str) -> str:
    """The lesson's running example in `lang` (Chinese for anything unknown)."""
    return LESSON_PROMPTS.get(lang, DEFAULT_PROMPT)


def is_default_prompt(prompt: object) -> bool:
    """True when the prompt is one of the lesson's own examples, i.e. nothing the visitor typed."""
    return isinstance(prompt, str) and prompt.strip() in LESSON_PROMPTS.values()


def clamp(value: int, low: int, high: int) -> int:
    return max(low, min(high, value))


def as_int_in_range(value: object, low: int, high: int, default: int) -> tuple[int, bool]:
    """(a usable int within [low, high], whether the input was already fine)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return default, False
    if value != value:  # NaN
        return default, False
    fixed = clamp(int(value), low, high)
    return fixed, fixed == value

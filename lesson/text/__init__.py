"""The lesson's words as data: one key per paragraph, label or message, in zh and en.

    from lesson.text import t
    t("zh", "sec_prefill")                      -> "Prefill：先把提示词读完"
    t("en", "progress", step=2, num_tokens=2, max_tokens=8)

Values are Markdown strings written by the authors (trusted); parameters filled
in with `t(..., **params)` must already be safe for where they are shown.
Tables and lists (e.g. "timeline_table", "references") come back unchanged.
"""

from __future__ import annotations

from string import Formatter
from typing import Any

from . import en, zh

LANGUAGES: tuple[str, ...] = ("zh", "en")
DEFAULT_LANGUAGE = "zh"
TEXTS: dict[str, dict[str, Any]] = {"zh": zh.TEXT, "en": en.TEXT}
LANGUAGE_NAMES = {"zh": "中文", "en": "English"}


def normalize_language(lang: object) -> str:
    """Any unknown value falls back to Chinese, the lesson's own language."""
    return lang if lang in TEXTS else DEFAULT_LANGUAGE


def t(lang: str, key: str, **params: Any) -> Any:
    """The text for `key` in `lang`, with `{name}` fields filled from params.

    A missing parameter is left visible as `{name}` rather than raising, so a
    wording change can never crash the page.
    """
    value = TEXTS[normalize_language(lang)][key]
    if not isinstance(value, str) or not params:
        return value
    return value.format_map(_KeepMissing(params))


def placeholders(text: str) -> set[str]:
    """The `{name}` fields a string expects (used by the key-parity test)."""
    return {name for _, name, _, _ in Formatter().parse(text) if name}


class _KeepMissing(dict):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def device_label(name: str, lang: str) -> str:
    """A device's name in `lang`: engine.cost names a measured machine in English ("this machine:
    CPU (2 cores; torch threads: 1) (measured)"); datasheet names stay as published."""
    prefix, suffix = "this machine: ", " (measured)"
    if name.startswith(prefix) and name.endswith(suffix):
        return t(lang, "lab_this_machine_label", detail=name[len(prefix):-len(suffix)])
    return name

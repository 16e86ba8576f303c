"""Every word of the lesson, the app and the figures, as data: one key per paragraph, label or message, in zh and en.

    from lesson.text import t
    t("zh", "sec_prefill")                      -> "Prefill：先把提示词读完"
    t("en", "progress", step=2, num_tokens=2, max_tokens=8)

The words live in `lesson/text/zh/` and `lesson/text/en/`, one file per area (`AREAS`); an area file
holds the same keys, with the same `{name}` fields, in both languages, and no key is in two areas, so
each language is one flat table (`TEXTS[lang]`) and every caller reads it the same way:
`t(lang, key, **params)` on a page (an unknown language falls back to Chinese), or
`label(table_for(lang), key, **params)` in a figure, which holds its language's table and refuses a
language the tables do not have (`ValueError`).

Values are Markdown strings written by the authors (trusted); parameters filled in must already be
safe for where they are shown (figures: plain text that svgwrite escapes). Tables and lists (e.g.
"timeline_table", "references") come back unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from string import Formatter
from types import MappingProxyType
from typing import Any

from . import en, zh

Table = Mapping[str, Any]  # key -> text: one language's words, as `table_for` returns them

LANGUAGES: tuple[str, ...] = ("zh", "en")
DEFAULT_LANGUAGE = "zh"
LANGUAGE_NAMES = {"zh": "中文", "en": "English"}
AREAS: tuple[str, ...] = tuple(zh.AREAS)
AREA_TEXTS: Mapping[str, Mapping[str, Table]] = MappingProxyType({"zh": zh.AREAS, "en": en.AREAS})  # lang -> area -> table


def merged_table(areas: Mapping[str, Table]) -> Table:
    """One read-only table of every area's keys (area name -> its table); a key in two areas is a ValueError."""
    merged: dict[str, Any] = {}
    for area, table in areas.items():
        twice = merged.keys() & table.keys()
        if twice:
            raise ValueError(f"text keys defined twice (again in {area}.py): {', '.join(sorted(twice))}")
        merged.update(table)
    return MappingProxyType(merged)


TEXTS: Mapping[str, Table] = MappingProxyType({lang: merged_table(AREA_TEXTS[lang]) for lang in LANGUAGES})


def normalize_language(lang: object) -> str:
    """Any unknown value falls back to Chinese, the lesson's own language."""
    return lang if lang in TEXTS else DEFAULT_LANGUAGE


def check_language(lang: object) -> None:
    """A clear ValueError for a language the tables do not cover (renderers check before drawing)."""
    if lang not in LANGUAGES:
        raise ValueError(f"unknown language {lang!r}; expected one of {', '.join(LANGUAGES)}")


def table_for(lang: str) -> Table:
    """Every text of `lang` (all areas), for a caller that looks many keys up: a figure holds it and
    fills labels with `label(table, key, ...)`. A clear ValueError for an unknown language."""
    check_language(lang)
    return TEXTS[lang]


def label(table: Table, key: str, **params: Any) -> Any:
    """`table[key]` with its `{name}` fields filled from params (values are data, never templates).

    A missing parameter is left visible as `{name}` rather than raising, so a wording change can
    never crash the page; without params, or for a table or list, the value comes back unchanged.
    """
    value = table[key]
    if not isinstance(value, str) or not params:
        return value
    return value.format_map(_KeepMissing(params))


def t(lang: str, key: str, **params: Any) -> Any:
    """The text for `key` in `lang` (an unknown language reads Chinese), filled as `label` fills it."""
    return label(TEXTS[normalize_language(lang)], key, **params)


def placeholders(text: str) -> set[str]:
    """The `{name}` fields a string expects (used by the key-parity tests)."""
    return {name for _, name, _, _ in Formatter().parse(text) if name}


class _KeepMissing(dict):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def device_label(name: str, lang: str) -> str:
    """A device's name in `lang`: engine.contract.cost names a measured machine in English ("this machine:
    CPU (2 cores; torch threads: 1) (measured)"); datasheet names stay as published."""
    prefix, suffix = "this machine: ", " (measured)"
    if name.startswith(prefix) and name.endswith(suffix):
        return t(lang, "lab_this_machine_label", detail=name[len(prefix):-len(suffix)])
    return name

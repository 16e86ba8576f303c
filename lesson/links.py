"""A link that reopens a state: the page's settings as URL query values, and back, every value checked.

    query_for(fields, values)         the settings as query values (plain strings), field by field
    read_query(fields, query)         -> LinkRead: the values to set, and what was wrong with the others
    link_url(base, path, query)       the link itself

A field says how its one query value is read: an integer or a number in a range (on a slider's grid),
one of a fixed set of choices, a flag (1 or 0), or bounded text. Nothing read from a link is ever
evaluated or shown as markup: a value out of its range is clamped to it, anything else wrong is left
out, and each of those is a `Problem` (a lesson.text key of the "links" area and its plain-text
fields, the value cut and made visible) that the page says in its language. Pure: no streamlit.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import quote, urlencode

from .svgtext import visible

MAX_PARAMS = 64  # a link with more query values than this is not one of ours: all of it is left out
MAX_VALUE_CHARS = 64  # any value but text: longer is not a number, a flag or a choice
SHOWN_CHARS = 40  # a wrong value is quoted back this long at most
INT_RE = re.compile(r"-?[0-9]{1,15}")  # ASCII digits only: int() also reads "９" and "1_000"
FLOAT_RE = re.compile(r"-?[0-9]{1,12}(\.[0-9]{1,9})?")  # no exponent, no nan or inf
FLAGS = {"1": True, "0": False, "true": True, "false": False}


@dataclass(frozen=True)
class Field:
    """One setting in a link: query name `param`, the session key `key` it sets, and how it is read."""

    param: str
    key: str
    kind: str  # "int", "float", "choice", "flag" or "text"
    low: float = 0
    high: float = 0
    step: float = 0  # a slider's grid, counted from `low`; 0: any value in the range
    choices: tuple = ()  # "choice": the values allowed, matched by their str()
    max_chars: int = 0  # "text": longer is refused

    def __post_init__(self) -> None:
        if self.kind not in ("int", "float", "choice", "flag", "text"):
            raise ValueError(f"unknown field kind {self.kind!r}")


@dataclass(frozen=True)
class Problem:
    """What was wrong with a link's value: a text key of the "links" area and its fields (plain text)."""

    key: str
    params: Mapping[str, str]


@dataclass(frozen=True)
class LinkRead:
    values: Mapping[str, object]  # session key -> the value to set
    problems: tuple[Problem, ...]
    refused: bool = False  # the whole link left out (too many values): nothing is set or measured


def shown(value: str) -> str:
    """A value quoted back: at most SHOWN_CHARS, every control and bidi mark visible."""
    value = value if len(value) <= SHOWN_CHARS else value[:SHOWN_CHARS - 1] + "…"
    return visible(value)


def read_query(fields: Sequence[Field], query: Mapping[str, str]) -> LinkRead:
    """The values a link sets, each checked by its field; what was clamped or left out, as problems."""
    if len(query) > MAX_PARAMS:
        return LinkRead({}, (Problem("link_too_many", {"n": str(len(query)), "limit": str(MAX_PARAMS)}),),
                        refused=True)
    by_param = {f.param: f for f in fields}
    values: dict[str, object] = {}
    problems: list[Problem] = []
    unknown = [shown(name) for name in query if name not in by_param]
    if unknown:
        problems.append(Problem("link_unknown", {"names": ", ".join(unknown[:5])}))
    for name, raw in query.items():
        field = by_param.get(name)
        if field is None:
            continue
        value, problem = read_value(field, str(raw))
        if value is not None:
            values[field.key] = value
        if problem is not None:
            problems.append(problem)
    return LinkRead(values, tuple(problems))


def read_value(field: Field, raw: str) -> tuple[object | None, Problem | None]:
    """(the value to set or None, what was wrong or None) for one field's query value."""
    name = {"name": field.param, "value": shown(raw)}
    if field.kind == "text":
        if len(raw) > field.max_chars:
            return None, Problem("link_too_long", {"name": field.param, "n": f"{len(raw):,}",
                                                   "limit": f"{field.max_chars:,}"})
        return raw, None
    if len(raw) > MAX_VALUE_CHARS:
        return None, Problem("link_too_long", {"name": field.param, "n": f"{len(raw):,}",
                                               "limit": f"{MAX_VALUE_CHARS:,}"})
    if field.kind == "flag":
        flag = FLAGS.get(raw.strip().lower())
        return (flag, None) if flag is not None else (None, Problem("link_not_a_flag", name))
    if field.kind == "choice":
        by_text = {str(c): c for c in field.choices}
        if raw in by_text:
            return by_text[raw], None
        return None, Problem("link_not_a_choice", {**name, "choices": ", ".join(list(by_text)[:8])})
    return _read_number(field, raw, name)


def _read_number(field: Field, raw: str, name: dict) -> tuple[object | None, Problem | None]:
    """An "int" or "float" field: parsed strictly, then clamped into its range and onto its grid."""
    pattern = INT_RE if field.kind == "int" else FLOAT_RE
    if not pattern.fullmatch(raw.strip()):
        return None, Problem("link_not_a_number", name)
    number = float(raw) if field.kind == "float" else int(raw)
    fixed = min(max(number, field.low), field.high)
    if field.step:
        fixed = field.low + round((fixed - field.low) / field.step) * field.step
        fixed = round(min(max(fixed, field.low), field.high), 9)  # 0.35, not 0.35000000000000003
    fixed = int(round(fixed)) if field.kind == "int" else float(fixed)
    if not math.isfinite(float(fixed)):
        return None, Problem("link_not_a_number", name)
    if fixed != number:
        return fixed, Problem("link_clamped", {**name, "clamped": format_value(field, fixed)})
    return fixed, None


def format_value(field: Field, value: object) -> str:
    """A setting as its query value: 1 / 0 for a flag, the shortest exact form of a number."""
    if field.kind == "flag":
        return "1" if value else "0"
    if field.kind == "float":
        return f"{float(value):g}" if float(value) == float(f"{float(value):g}") else repr(float(value))
    return str(value)


def query_for(fields: Sequence[Field], values: Mapping[str, object]) -> dict[str, str]:
    """The query values of every field whose session key is in `values`, in the fields' order."""
    return {f.param: format_value(f, values[f.key]) for f in fields if f.key in values and values[f.key] is not None}


def link_url(base: str, path: str, query: Mapping[str, str]) -> str:
    """`base` (the app's address, ending in /), the page's path, and the query, every value percent-encoded."""
    url = base + path.strip("/")
    return url + ("?" + urlencode(dict(query), quote_via=quote) if query else "")

"""The fields of a streamed reply, each checked for its JSON type (and a usage count for its range) first."""

from __future__ import annotations

import json
from typing import Any

from engine.contract.errors import LimitError
from engine.contract.interop.errors import MAX_SHOWN_CHARS, ProbeError
from engine.contract.limits import PROBE_MAX_USAGE_TOKENS, check_count


JSON_TYPES = {dict: "object", list: "array", str: "string", bool: "boolean", int: "number", float: "number",
              type(None): "null"}


def _shown_value(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)  # a value of a parsed line: at most PROBE_MAX_LINE_BYTES
    return text if len(text) <= MAX_SHOWN_CHARS else text[:MAX_SHOWN_CHARS - 1] + "…"


def typed(rid: str, name: str, value: Any, kind: type) -> Any:
    """`value` when it is absent (None) or of JSON type `kind` (dict, list or str), else
    ProbeError("probe_bad_field") naming the request and the field."""
    if value is None or isinstance(value, kind):
        return value
    expected, got = JSON_TYPES[kind], JSON_TYPES.get(type(value), type(value).__name__)
    shown = _shown_value(value)
    raise ProbeError("probe_bad_field", f"{rid}: in a streamed chunk, {name} should be a JSON {expected}, got "
                                        f"{got} {shown}", request_id=rid, field=name, expected=expected, got=got,
                     value=shown)


def token_count(rid: str, name: str, value: Any) -> int | None:
    """A usage count: absent (None), or a whole number in 0..PROBE_MAX_USAGE_TOKENS, else
    ProbeError("probe_bad_count") naming the request and the field."""
    if value is None:
        return None
    try:
        return check_count(name, value, PROBE_MAX_USAGE_TOKENS)
    except LimitError as err:
        shown = err.params["value"]
        raise ProbeError("probe_bad_count", f"{rid}: in a streamed chunk, {name} should be a whole number from 0 "
                                            f"to {PROBE_MAX_USAGE_TOKENS}, got {shown}", request_id=rid, field=name,
                         value=shown, limit=PROBE_MAX_USAGE_TOKENS) from None

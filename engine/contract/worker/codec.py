"""The engine's frozen result dataclasses as plain JSON values, and back.

`to_plain` writes a dataclass as the dict `dataclasses.asdict` makes (tuples become JSON lists);
`from_plain(cls, data)` rebuilds it from its field types, turning lists back into tuples and
dicts back into nested dataclasses, so a result that crossed the wire compares equal to the
one the worker made. Used for the results without a `from_json` of their own (CacheComparison,
DecodeAttention, DecodeOps, DeviceSpec, ModelShape, Step); traces, sweeps and serving runs
travel as their own JSON.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from typing import Any, TypeVar

T = TypeVar("T")


def to_plain(obj: Any) -> dict[str, Any]:
    """A dataclass instance as a dict of plain values (nested dataclasses as dicts)."""
    return dataclasses.asdict(obj)


def from_plain(cls: type[T], data: dict[str, Any]) -> T:
    """`cls` rebuilt from `to_plain`'s dict. Fields missing from `data` keep their defaults;
    a key `cls` does not have raises TypeError (a result of another shape)."""
    hints = _hints(cls)
    unknown = set(data) - {f.name for f in dataclasses.fields(cls)}
    if unknown:
        raise TypeError(f"{cls.__name__} has no fields {sorted(unknown)}")
    return cls(**{name: _convert(hints[name], value) for name, value in data.items()})


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _convert(hint: Any, value: Any) -> Any:
    """`value` (from JSON) as the type `hint` names: tuples, nested dataclasses, optionals."""
    if value is None:
        return None
    if dataclasses.is_dataclass(hint) and isinstance(value, dict):
        return from_plain(hint, value)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        return _convert(inner[0], value) if len(inner) == 1 else value
    if origin is tuple and isinstance(value, list):
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_convert(args[0], item) for item in value)
        return tuple(_convert(a, item) for a, item in zip(args, value)) if args else tuple(value)
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value

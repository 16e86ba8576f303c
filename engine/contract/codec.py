"""The one codec of the contract's values: every frozen dataclass that crosses a process or a file.

    text = encode(trace)                          # JSON text; never NaN or Infinity (LimitError)
    trace = decode(text, RequestTrace)            # a file: bounded, upgraded, typed
    step = convert(plain, Step)                   # a value the worker's frame already parsed
    plain = to_plain(config)                      # a dataclass as JSON's plain values (lists, dicts)

msgspec (as vLLM's engine core) reads the type hints of the standard frozen dataclasses themselves and
builds them in C: tuples from lists, nested dataclasses, optionals, field defaults (so a document written
before a field existed still reads), `__post_init__` run on each. It is strict: a bool is not an int, a
string is not a number, a missing field without a default is refused. What it does not do for dataclasses
(only for its own Structs) is refuse a key the type does not have, so the types are mirrored once, per
class, as Structs with `forbid_unknown_fields` (`_schema`): a value is first validated against that
mirror, then built as the dataclass, both in C. A `derived` key (what `to_json` adds for readers, and
ignores on the way back) is allowed in every object.

`decode` applies, in this order and in this one place: the JSON bounds (engine.contract.limits: nesting,
number length, no NaN or Infinity, with their own LimitError keys), the class's own `upgrade(plain)` if it
has one (a trace's schema version and step cap before one step is built, a serving run's kind and number
magnitudes, a sweep's schema marker), then the types (`convert`). A type or shape refusal is a CodecError (a
TraceFormatError, so a ValueError) naming the field; bounds stay LimitError, and a keyed error a class's
`__post_init__` raises (an InputError: a policy the engine does not know) is raised as it is. The checks of meaning
(engine.contract.meaning, which imports these classes) follow at the two boundaries that use this codec: the
worker's client (`checked`) and a recorded file (engine.contract.recorded.read_recorded).

Why dataclasses and not msgspec Structs: every module of the house builds, replaces (`dataclasses.replace`)
and reads these values; keeping them standard dataclasses kept all of those unchanged, and a field added at
the end of one (with its default) is read and written here with no other change. docs/architecture.md says
so, with the measurement (bench/codec.py).

No torch.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
import threading
import types
import typing
from typing import Any, TypeVar

import msgspec

from engine.contract.errors import KeyedError
from engine.contract.limits import check_json_shape, dump_json, load_json

T = TypeVar("T")
DERIVED = "derived"  # what a writer adds for readers of the JSON; never read back


class TraceFormatError(ValueError):
    """A JSON document is not a value this version understands (engine.contract.trace says it too)."""


class CodecError(TraceFormatError):
    """A value of the wrong shape or type for its class: the field named (`$.steps[3].start_ms`)."""


def encode(value: Any, indent: int | None = None) -> str:
    """`value` (a dataclass, or plain values) as JSON text; its own `to_dict()` where it has one (the
    derived values written for readers). A number that is not finite is refused (LimitError)."""
    plain = value.to_dict() if hasattr(value, "to_dict") else to_plain(value)
    return dump_json(plain, ensure_ascii=False, indent=indent, separators=None if indent else (",", ":"))


def to_plain(value: Any) -> Any:
    """A dataclass (nested ones, tuples) as JSON's plain values."""
    return msgspec.to_builtins(value)


def decode(data: str | bytes, cls: type[T]) -> T:
    """JSON text as a `cls`, bounded, upgraded and typed; see the module's words.
    Malformed JSON is a CodecError ("not JSON: ..." in the standard library's words)."""
    text = data.decode("utf-8") if isinstance(data, (bytes, bytearray)) else data
    check_json_shape(text)  # depth and number length, before anything is parsed
    try:
        plain = msgspec.json.decode(text)
    except msgspec.DecodeError:
        try:
            load_json(text)  # NaN, Infinity, 1e400: its LimitError; else the standard library's own words
        except json.JSONDecodeError as err:
            raise CodecError(f"not JSON: {err}") from None
        raise CodecError("not JSON") from None
    return convert(plain, cls)


def convert(plain: Any, cls: type[T]) -> T:
    """Parsed JSON as a `cls`: upgraded (`cls.upgrade`), validated against its mirror (no unknown key, strict
    types), then built (each `__post_init__` run)."""
    upgrade = getattr(cls, "upgrade", None)
    if upgrade is not None:
        plain = upgrade(plain)
    try:
        msgspec.convert(plain, _schema(cls), strict=True)
        value = msgspec.convert(plain, cls, strict=True)
    except msgspec.ValidationError as err:
        if isinstance(err.__cause__, KeyedError):
            raise err.__cause__ from None  # a class's own keyed refusal (an InputError), worded by the page
        reason = str(err).replace("Object contains unknown field", "an object has no field")
        raise CodecError(f"not a valid {_words(cls)}: {reason}") from None
    return value


def _words(cls: Any) -> str:
    """A class as a refusal names it: ServingRun -> "serving run" (RequestTrace: "trace")."""
    name = getattr(cls, "__name__", "value").removeprefix("Request")
    return re.sub(r"(?<=[a-z])(?=[A-Z])", " ", name).lower()


def _schema(tp: Any) -> Any:
    """`tp` with every dataclass in it mirrored as a Struct refusing unknown fields (a `derived` key allowed):
    what msgspec validates a document against before the dataclass is built. Built once per class, under a
    lock (a page's threads may ask for the same class at once)."""
    with _MIRROR_LOCK:
        return _mirror(tp)


@functools.cache
def _mirror(tp: Any) -> Any:
    """`_schema`'s work. A class inside itself (DeviceSpec.spec) is checked there as the dataclass: strict
    types, its unknown keys not refused."""
    if dataclasses.is_dataclass(tp):
        if tp in _MIRRORING:
            return tp
        _MIRRORING.add(tp)
        try:
            hints = typing.get_type_hints(tp)
            fields = [(f.name, _mirror(hints[f.name])) if _required(f) else (f.name, _mirror(hints[f.name]), None)
                      for f in dataclasses.fields(tp) if f.init]
        finally:
            _MIRRORING.discard(tp)
        return msgspec.defstruct(tp.__name__, [*fields, (DERIVED, Any, None)], forbid_unknown_fields=True)
    args = typing.get_args(tp)
    if not args:
        return tp
    origin = typing.get_origin(tp)
    mirrored = tuple(a if a is Ellipsis else _mirror(a) for a in args)
    return typing.Union[mirrored] if origin in (typing.Union, types.UnionType) else origin[mirrored]  # noqa: UP007


_MIRRORING: set[type] = set()  # the classes being mirrored now (a class that holds itself stops there)
_MIRROR_LOCK = threading.RLock()


def _required(f: dataclasses.Field) -> bool:
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING

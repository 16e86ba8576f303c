"""Errors a learner can cause, each with a stable key so a UI can translate it.

`str(err)` is one English line for the CLI (or the key, where no English line is
written); `err.key` and `err.params` let a page say the same thing in Chinese
(lesson.messages turns every one of them into words). They are ValueErrors:
bad input, not bugs.
"""

from __future__ import annotations

from typing import Any


class KeyedError(ValueError):
    """The one base of every translatable error: `key` names the problem, `params` holds its data.

    `params` are plain data (numbers, ids, names), never a sentence in one language, so a page
    can fill its own template with them. `message` is the English for a log or a terminal;
    without one, `str(err)` is the key.
    """

    def __init__(self, key: str, message: str | None = None, **params: Any) -> None:
        super().__init__(key if message is None else message)
        self.key = key
        self.params = params


class EngineError(KeyedError):
    """An error raised by the engine. Its key is bare ("empty_prompt"): a page's words are `err_<key>`."""


class InputError(EngineError):
    """The prompt or a generation setting is out of range."""


class ModelLoadError(EngineError):
    """A model folder is missing, is not a model, or cannot be loaded safely."""


class LimitError(InputError):
    """An input over one of engine.contract.limits' hard bounds: a size, count, depth, digit count or time
    refused before anything is allocated. Its key names the kind ("limit_count", "limit_number",
    "limit_memory", "limit_json_depth", "limit_json_number", "limit_not_finite", "limit_text");
    `params` name the `field` (or the `line`) and the `limit`."""


class CapError(KeyedError):
    """A serving-lab workload over this server's caps (more requests, a longer prompt or answer than
    the operator allows). Its key is the page's text key itself ("sl_cap_requests"); `params` hold
    the asked number `n` and the `limit`."""


class RemoteError(KeyedError):
    """A probe request this server refuses before anything is sent (a host it may not reach, an API
    key variable it does not lend). Its key is the page's text key itself ("sl_err_probe_host")."""


class PhaseError(ValueError):
    """`prefill` or `decode_step` called with the other phase's input: a bug in the caller.

    A real exception, not an `assert`, so the check survives `python -O`. Not a
    KeyedError: no learner can cause it, so it has no translated message.
    """

"""Errors a learner can cause, each with a stable key so a UI can translate it.

`str(err)` is one English line for the CLI; `err.key` and `err.params` let the
app say the same thing in Chinese. They are ValueErrors: bad input, not bugs.
"""

from __future__ import annotations

from typing import Any


class EngineError(ValueError):
    """Base class. `key` names the problem, `params` fills its message."""

    def __init__(self, key: str, message: str, **params: Any) -> None:
        super().__init__(message)
        self.key = key
        self.params = params


class InputError(EngineError):
    """The prompt or a generation setting is out of range."""


class ModelLoadError(EngineError):
    """A model folder is missing, is not a model, or cannot be loaded safely."""


class PhaseError(ValueError):
    """`prefill` or `decode_step` called with the other phase's input: a bug in the caller.

    A real exception, not an `assert`, so the check survives `python -O`. Not an
    EngineError: no learner can cause it, so it has no translated message.
    """

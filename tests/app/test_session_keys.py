"""Every session key the app reads or writes is declared: a widget's key, or app_support.state.DEFAULTS.

A key set somewhere in the page and read somewhere else, with its default written at each read
(`.get("x", default)`), is a key whose meaning no one file holds; DEFAULTS says each one's
default and purpose in one place, and init_session sets it before any page is drawn.
"""

from __future__ import annotations

import ast
from pathlib import Path

from app_support import lab, modes, serving, serving_remote, state

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [ROOT / "app.py", *sorted((ROOT / "app_pages").glob("*.py")), *sorted((ROOT / "app_support").glob("*.py"))]
STATE_METHODS = {"get", "pop", "setdefault", "keys", "items", "values", "clear", "update"}


def is_session_state(node: ast.AST) -> bool:
    """`st.session_state`, or the local alias `ss` every module gives it."""
    if isinstance(node, ast.Name):
        return node.id == "ss"
    return isinstance(node, ast.Attribute) and node.attr == "session_state"


def constant_key(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name) and node.id.isupper():  # a module constant such as RESULTS_KEY, KEPT
        return node.id
    return None


def session_keys(tree: ast.AST) -> set[str]:
    """The session keys a module names: `ss.x`, `ss["x"]`, `ss.get("x")` (f-string keys are widgets' own)."""
    keys = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and is_session_state(node.value) and node.attr not in STATE_METHODS:
            keys.add(node.attr)
        elif isinstance(node, ast.Subscript) and is_session_state(node.value):
            keys.add(constant_key(node.slice))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args
              and node.func.attr in STATE_METHODS and is_session_state(node.func.value)):
            keys.add(constant_key(node.args[0]))
    return keys - {None}


def widget_keys(tree: ast.AST) -> set[str]:
    """The keys given to widgets (`key="x"`): Streamlit owns their values."""
    return {kw.value.value for node in ast.walk(tree) if isinstance(node, ast.Call) for kw in node.keywords
            if kw.arg == "key" and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str)}


CONSTANTS = {"RESULTS_KEY": modes.RESULTS_KEY, "KEPT": state.KEPT}


def test_every_session_key_is_a_widget_key_or_declared_in_defaults():
    named, widgets = set(), set()
    for path in SOURCES:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        named |= {CONSTANTS.get(key, key) for key in session_keys(tree)}
        widgets |= widget_keys(tree)
    widgets |= {*state.WIDGET_KEYS, *lab.LAB_WIDGET_KEYS, *serving.SERVING_WIDGET_KEYS,
                *serving_remote.PROBE_WIDGET_KEYS}
    assert {"run_id", "replay_shown", "class_step", "sl_link_run", "lab_sweep_kind"} <= named  # the walk sees
    undeclared = sorted(named - widgets - set(state.DEFAULTS))
    assert undeclared == [], f"session keys set outside state.DEFAULTS: {undeclared}"


def test_defaults_that_are_containers_are_never_shared_between_sessions():
    for key, value in state.DEFAULTS.items():
        if isinstance(value, (list, dict)):
            assert state.fresh(value) == value and state.fresh(value) is not value, key


def test_every_key_that_names_a_stored_value_is_declared():
    """The run store's ids live under these keys (app_support/run_store.py keep/kept_of), read by name."""
    from app_support import run_store

    assert set(run_store.HELD_KEYS) <= set(state.DEFAULTS)

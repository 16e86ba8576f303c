"""docs/operators.md's "Limits" table is engine/contract/limits.py's (python -m engine.contract.limits prints
it), and the bounded helpers every surface uses refuse what they promise to."""

from __future__ import annotations

import ast
import re
import time

import pytest

from engine.contract import config, limits
from engine.contract.errors import LimitError
from tests.hostile.bounded import ROOT

OPERATORS = ROOT / "docs" / "operators.md"


def test_the_operators_table_is_the_one_in_engine_limits():
    text = OPERATORS.read_text(encoding="utf-8")
    section = text.split("\n## Limits\n", 1)[1].split("\n## ", 1)[0]
    table = "\n".join(line for line in section.splitlines() if line.startswith("|"))
    assert table == limits.markdown_table(), \
        "regenerate the table in docs/operators.md: python -m engine.contract.limits"


def test_every_limit_constant_is_in_the_table():
    named = {name for name in vars(limits) if re.fullmatch(r"(MAX|PROBE|HUB|KV|MEMORY|WORKER)_[A-Z_]+", name)}
    assert named == {limit.name for limit in limits.LIMITS}
    for limit in limits.LIMITS:
        assert getattr(limits, limit.name) == limit.value


SOURCE = ("engine", "lesson", "app_support", "app_pages", "bench")


def limits_bound_elsewhere(tree: ast.Module, names: set[str], label: str) -> list[str]:
    """Each top-level assignment of one of `names` in another module: a second definition of a limit. A
    setting (a config Variable of the same name, the operator's cap under the limit) is the one kind allowed."""
    found = []
    for node in tree.body:
        if not isinstance(node, ast.Assign):
            continue
        setting = isinstance(node.value, ast.Call) and getattr(node.value.func, "id", "") == "Variable"
        found += [f"{label}:{node.lineno}: {t.id}" for t in node.targets
                  if isinstance(t, ast.Name) and t.id in names and not setting]
    return found


def test_every_limit_is_defined_once_in_engine_limits():
    """A limit is bound in engine/contract/limits.py only and read from there (an import or limits.NAME),
    never copied: a copy drifts from the table operators read."""
    names = {limit.name for limit in limits.LIMITS}
    own = ROOT / "engine" / "contract" / "limits.py"
    files = [f for root in SOURCE for f in sorted((ROOT / root).rglob("*.py")) if f != own]
    found = [hit for f in files for hit in
             limits_bound_elsewhere(ast.parse(f.read_text(encoding="utf-8")), names, str(f.relative_to(ROOT)))]
    assert len(files) > 100 and {"MAX_NEW_TOKENS", "MAX_WORKLOAD_REQUESTS", "MAX_WORKLOAD_PROMPT_TOKENS"} <= names
    assert not found, "limits defined outside engine/contract/limits.py:\n" + "\n".join(found)


def test_a_setting_named_as_a_limit_tops_out_at_it():
    assert config.MAX_NEW_TOKENS.high == config.SERVING_MAX_NEW_TOKENS.high == limits.MAX_NEW_TOKENS
    assert config.SERVING_MAX_REQUESTS.high == limits.MAX_WORKLOAD_REQUESTS
    assert config.SERVING_MAX_PROMPT_TOKENS.high == limits.MAX_WORKLOAD_PROMPT_TOKENS


def test_the_limit_reader_finds_a_copy_and_an_alias_but_not_a_setting():
    tree = ast.parse("MAX_SEED = 7\nMAX_NEW_TOKENS = Variable('X', 'int', 1)\nMAX_JSON_DEPTH = limits.MAX_JSON_DEPTH\n"
                     "from engine.contract.limits import MAX_TIME_MS\nOTHER = 1\n")
    names = {"MAX_SEED", "MAX_NEW_TOKENS", "MAX_JSON_DEPTH", "MAX_TIME_MS"}
    assert limits_bound_elsewhere(tree, names, "m.py") == ["m.py:1: MAX_SEED", "m.py:3: MAX_JSON_DEPTH"]


@pytest.mark.parametrize("text, key", [
    ("[" * 100_000 + "]" * 100_000, "limit_json_depth"),
    ('{"a": ' + "1" * 5000 + "}", "limit_json_number"),
    ("[1e400]", "limit_not_finite"),
    ("[NaN]", "limit_not_finite"),
    ('{"a": -Infinity}', "limit_not_finite"),
])
def test_bounded_json_refuses_in_milliseconds(text, key):
    start = time.perf_counter()
    with pytest.raises(LimitError) as err:
        limits.load_json(text)
    assert err.value.key == key and time.perf_counter() - start < 1


def test_bounded_json_reads_what_json_reads():
    text = '{"s": "[[[[ {{ ' + "9" * 200 + ' \\" ]", "n": [1, -2.5e3, true, null], "d": {"x": []}}'
    assert limits.load_json(text) == {"s": "[[[[ {{ " + "9" * 200 + ' " ]', "n": [1, -2500.0, True, None],
                                      "d": {"x": []}}  # brackets and digits inside a string are text
    assert limits.load_json("[" * 64 + "]" * 64) is not None  # the deepest allowed


def test_the_depth_refusal_names_the_line():
    with pytest.raises(LimitError) as err:
        limits.load_json('{\n"a":\n' + "[" * 65 + "]" * 65 + "}", first_line=10)
    assert err.value.params["line"] == 12


def test_checks_name_the_field_and_the_limit():
    with pytest.raises(LimitError) as err:
        limits.check_count("--seed", 10**40, limits.MAX_SEED)
    assert err.value.params["field"] == "--seed" and "digit" in err.value.params["value"]
    with pytest.raises(LimitError):
        limits.check_count("n", True, 5)  # a bool is not a count
    with pytest.raises(LimitError):
        limits.check_finite("t", float("nan"), 1.0)
    with pytest.raises(LimitError):
        limits.check_text("prompt", "\ud800")
    with pytest.raises(LimitError):
        limits.dump_json({"t": float("inf")})
    with pytest.raises(LimitError) as err:
        limits.check_magnitudes({"requests": [{"finish_ms": 1.0}, {"finish_ms": 1e308}]})
    assert err.value.params["field"] == "requests[1].finish_ms"

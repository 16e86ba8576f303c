"""docs/operators.md's "Limits" table is engine/contract/limits.py's (python -m engine.contract.limits prints
it), and the bounded helpers every surface uses refuse what they promise to."""

from __future__ import annotations

import re
import time

import pytest

from engine.contract import limits
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

"""The step table's CSV (the lesson's download): a prompt or an answer starting with = + - @, a tab or a
carriage return is a formula to a spreadsheet (CSV injection). Each such text cell gets a leading quote,
as OWASP advises; numbers and every other cell are written as before."""

from __future__ import annotations

import csv
import io

import pytest

from lesson.downloads import CSV_BOM, csv_cell, trace_csv
from tests.factories import make_trace

FORMULAS = ("=HYPERLINK(\"http://x\",\"y\")", "+1+1", "-2+3", "@SUM(A1)", "\t=1", "\r=1")


def rows(text: str) -> list[dict]:
    assert text.startswith(CSV_BOM)
    return list(csv.DictReader(io.StringIO(text[len(CSV_BOM):], newline="")))


@pytest.mark.parametrize("formula", FORMULAS)
def test_a_formula_in_a_token_cell_is_written_as_text(formula):
    table = rows(trace_csv(make_trace(prompt_pieces=(formula, "x"), output_pieces=(formula, "。"))))
    cells = [value for row in table for value in row.values()]
    assert not [c for c in cells if c[:1] in "=+-@\t\r"], cells
    assert "'" + formula + " | x" in cells and "'" + formula in cells


def test_numbers_and_plain_text_are_unchanged():
    assert csv_cell(-1) == -1 and csv_cell(2.5) == 2.5 and csv_cell("巴黎") == "巴黎" and csv_cell("a=b") == "a=b"
    plain = make_trace()
    assert rows(trace_csv(plain))[0]["start_ms"] == str(round(plain.steps[0].start_ms, 3))

"""What a run downloads as: the step table with its units in the headers, that table as CSV a
spreadsheet reads safely, and file names that tell runs apart.
"""

from __future__ import annotations

import csv
import datetime
import io

from engine.contract.trace import STEP_TABLE_COLUMNS, RequestTrace, step_rows

# The step table's columns (engine.contract.trace.STEP_TABLE_COLUMNS) as the page and the CSV name them:
# every measurement carries its unit, every count says it is one (a new engine column keeps its name).
TABLE_HEADERS = {
    "step": "step_index",
    "phase": "phase",  # "prefill" / "decode" / "verify"
    "positions": "positions_first_to_last",  # "0..3": the positions this pass computed
    "new_positions": "num_new_positions",
    "input_tokens": "input_pieces",  # the token pieces fed in, joined with " | "
    "output_token": "output_piece",
    "start_ms": "start_ms",  # since the request started
    "end_ms": "end_ms",
    "ms": "pass_ms",
    "context_after": "num_cached_positions_after",
    "kv_bytes": "kv_cache_bytes",
    "lock_wait_ms": "lock_wait_ms",
    "consumer_ms": "page_drawing_ms",
    "drafts": "num_drafts",  # a verify pass (speculative decoding): guesses checked, 0 on every other pass
    "accepted": "num_drafts_accepted",
}
CSV_BOM = "\ufeff"  # spreadsheet programs read UTF-8 (巴黎, ▁Paris) only when the file starts with it
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # what makes a spreadsheet read a cell as a formula


def step_table(trace: RequestTrace) -> list[dict]:
    """The step table (engine.contract.trace.step_rows) with the headers above."""
    return [{TABLE_HEADERS.get(k, k): v for k, v in row.items()} for row in step_rows(trace)]


def csv_cell(value):
    """A text cell a spreadsheet will not read as a formula (OWASP, CSV injection): a text starting with
    = + - @, a tab or a carriage return gets a leading quote; numbers are left as they are."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def trace_csv(trace: RequestTrace) -> str:
    """The step table as CSV text, starting with a UTF-8 byte-order mark; every text cell through csv_cell
    (a prompt starting with = is shown as text, never run as a formula)."""
    buffer = io.StringIO()
    headers = [TABLE_HEADERS.get(k, k) for k in STEP_TABLE_COLUMNS]
    # CRLF, as RFC 4180 and spreadsheets write it: a cell holding a lone CR (a token piece can) is then
    # quoted, so no program splits the row there and reads what follows as a new cell
    writer = csv.DictWriter(buffer, fieldnames=headers, lineterminator="\r\n")
    writer.writeheader()
    writer.writerows({k: csv_cell(v) for k, v in row.items()} for row in step_table(trace))
    return CSV_BOM + buffer.getvalue()


def download_stem(trace: RequestTrace, stamp: str) -> str:
    """A file name (no extension) that tells runs apart: lengths, then when it ran.

    `stamp` is the run's local time as "YYYYmmdd-HHMMSS" (see run_stamp).
    """
    return f"prefill-decode_prompt{trace.prompt_len}_answer{len(trace.steps)}_{stamp}"


def run_stamp(when: datetime.datetime) -> str:
    return when.strftime("%Y%m%d-%H%M%S")

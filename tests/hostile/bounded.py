"""Run a hostile input in a child process under a memory ceiling and a clock, and report what it cost.

The memory-heavy cases must not take the test machine down with them when a bound breaks, so each
runs in its own process with RLIMIT_AS set (address space: what a few bytes of input may make the
process reserve) and is killed at its deadline. The child's own peak resident memory comes from
os.wait4's rusage of that one child, taken by a small launcher (see LAUNCH), not from the test process.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MEMORY_MB = 2048  # the address-space ceiling of a child: a few KB of input must never need more
TIMEOUT_S = 60.0  # the wall-clock ceiling of a child: imports of torch and transformers included


def nonblank_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


@dataclass(frozen=True)
class Outcome:
    """What the child did: its exit status (None: killed at the deadline), output, time and peak memory."""

    returncode: int | None
    stdout: str
    stderr: str
    seconds: float
    peak_mb: float

    @property
    def timed_out(self) -> bool:
        return self.returncode is None

    @property
    def lines(self) -> list[str]:
        """stderr's non-empty lines (a refusal is exactly one)."""
        return nonblank_lines(self.stderr)

    def describe(self) -> str:
        return (f"rc={self.returncode} in {self.seconds:.1f} s, peak {self.peak_mb:.0f} MB\n"
                f"stdout: {self.stdout[-2000:]}\nstderr: {self.stderr[-3000:]}")


# A small launcher sets the ceiling, runs the command as its own child and reports that child's peak
# resident memory (os.wait4). Linux carries a process's peak across fork and exec, so a child of this
# (large) test process would report the test's own size; a child of the small launcher reports its own.
LAUNCH = """
import os, resource, subprocess, sys
ceiling, report = int(sys.argv[1]), sys.argv[2]
resource.setrlimit(resource.RLIMIT_AS, (ceiling, ceiling))
child = subprocess.Popen(sys.argv[3:])
_, status, usage = os.wait4(child.pid, 0)
child.returncode = 0
with open(report, "w") as f:
    f.write(str(usage.ru_maxrss))
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
"""


def run_bounded(argv: list[str | bytes], *, memory_mb: int = MEMORY_MB, timeout_s: float = TIMEOUT_S,
                env: dict[str, str] | None = None, cwd: Path = ROOT) -> Outcome:
    """Run `argv` (bytes allowed: an argument that is not UTF-8) and wait at most `timeout_s`."""
    child_env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", **(env or {})}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile("r", suffix=".rss") as report:
        start = time.monotonic()
        launcher = [sys.executable, "-c", LAUNCH, str(memory_mb * 2**20), report.name]
        proc = subprocess.Popen([*launcher, *argv], stdout=out, stderr=err, stdin=subprocess.DEVNULL, cwd=cwd,
                                env=child_env, start_new_session=True)  # its own group: a kill reaches all of it
        try:
            code = proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            code = None
        seconds = time.monotonic() - start
        peak_kb = float(report.read() or "nan")  # nan: killed at the deadline before it could say
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace")
    return Outcome(code, stdout, stderr, seconds, peak_kb / 1024)


def python(*args: str | bytes, **kwargs) -> Outcome:
    """`python ARGS...` in the repository root, bounded."""
    return run_bounded([sys.executable, *args], **kwargs)


# Cases that each need a fresh process's output but not a process of their own: ONE bounded child (its imports are
# most of a child's cost) runs `main(argv)` from a given source once per case, with file descriptors 1 and 2 sent to
# files of that case and its exit status written last. Its time and peak memory bound all the cases together.
EACH = """
import json, os, sys
namespace = {}
exec(sys.argv[1], namespace)
for case in json.loads(open(sys.argv[2], encoding="utf-8").read()):
    sys.stdout.flush()
    sys.stderr.flush()
    for fd, path in ((1, case["out"]), (2, case["err"])):
        opened = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(opened, fd)
        os.close(opened)
    try:
        code = namespace["main"](case["argv"])
    except SystemExit as exit_:
        code = exit_.code
    sys.stdout.flush()
    sys.stderr.flush()
    with open(case["code"], "w") as written:
        written.write(str(code if isinstance(code, int) else 0 if code is None else 1))
"""


@dataclass(frozen=True)
class CaseRun:
    """One case of `each_in_one_child`: its exit status (None: the child never finished it), stdout and stderr."""

    returncode: int | None
    stdout: str
    stderr: str

    @property
    def lines(self) -> list[str]:
        return nonblank_lines(self.stderr)

    def describe(self) -> str:
        return f"rc={self.returncode}\nstdout: {self.stdout[-2000:]}\nstderr: {self.stderr[-2000:]}"


def each_in_one_child(source: str, cases: dict[str, list[str]], folder: Path,
                      **bounds) -> tuple[Outcome, dict[str, CaseRun]]:
    """Run `main(argv)`, defined by `source`, for every case's argv in one bounded child (files kept in `folder`):
    the child's Outcome and each case's CaseRun."""
    files = {name: {kind: str(folder / f"case{number}.{kind}") for kind in ("out", "err", "code")}
             for number, name in enumerate(cases)}
    plan = folder / "cases.json"
    plan.write_text(json.dumps([{**files[name], "argv": argv} for name, argv in cases.items()]), encoding="utf-8")
    outcome = python("-c", EACH, source, str(plan), **bounds)

    def read(path: str) -> str:
        return Path(path).read_text(encoding="utf-8", errors="replace") if Path(path).exists() else ""

    codes = {name: read(f["code"]).strip() for name, f in files.items()}
    runs = {name: CaseRun(int(codes[name]) if codes[name] else None, read(f["out"]), read(f["err"]))
            for name, f in files.items()}
    return outcome, runs


def assert_one_line(outcome: Outcome, code: int, *words: str, seconds: float = TIMEOUT_S, peak_mb: float = 1024):
    """A refusal: exit `code`, one line on stderr naming `words`, no traceback, within the bounds."""
    assert not outcome.timed_out, outcome.describe()
    assert outcome.returncode == code, outcome.describe()
    assert "Traceback" not in outcome.stderr, outcome.describe()
    assert len(outcome.lines) == 1, outcome.describe()
    for word in words:
        assert word in outcome.lines[0], outcome.describe()
    assert outcome.seconds < seconds, outcome.describe()
    assert outcome.peak_mb < peak_mb, outcome.describe()


def assert_case_one_line(child: Outcome, run: CaseRun, code: int, *words: str, seconds: float = TIMEOUT_S,
                         peak_mb: float = 1024):
    """A refusal of `each_in_one_child`: exit `code`, one line on stderr naming `words`, no traceback; the child that
    ran every case within the bounds."""
    assert run.returncode == code and "Traceback" not in run.stderr and len(run.lines) == 1, run.describe()
    assert all(word in run.lines[0] for word in words), run.describe()
    assert not child.timed_out and child.seconds < seconds and child.peak_mb < peak_mb, child.describe()

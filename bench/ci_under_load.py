"""CI under load: `.ci/run` on fresh clones, several in a row, while burners of ours keep the machine busy.

    python -m bench.ci_under_load [--runs 5] [--load 4] [--commit HEAD] [--work /tmp/ci_under_load]

Each run clones this repository at `--commit` into a folder of its own (a clean clone: no .venv, no caches)
and runs `bash .ci/run` there under `/usr/bin/time`. Meanwhile a controller reads the machine's 1-minute
load average every few seconds and starts or stops busy-looping processes to hold it near `--load` (the
CI's own processes count: the burners only make up the rest). `--load 0` runs with no burner (a quiet
machine, as quiet as the machine is).

Prints each run's exit status, the pytest summary, wall minutes, CPU seconds (user + system of the CI and
the children it waited for) and the load it saw (mean, min-max), and exits 1 unless every run passed.
Each clone is removed after its run; the logs stay in `--work`.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BURN = "while True: pass"
SAMPLE_S = 5.0


@dataclass
class Burners:
    """Busy-looping processes, as many as hold the 1-minute load average near `target`."""

    target: float
    most: int
    procs: list[subprocess.Popen] = field(default_factory=list)
    loads: list[float] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def adjust(self, load: float) -> None:
        if self.target > 0 and load < self.target - 0.5 and len(self.procs) < self.most:
            self.procs.append(subprocess.Popen([sys.executable, "-c", BURN]))
        elif load > self.target + 0.5 and self.procs:
            self.procs.pop().kill()

    def watch(self) -> None:
        while not self.stop.wait(SAMPLE_S):
            load = os.getloadavg()[0]
            self.loads.append(load)
            self.adjust(load)

    def close(self) -> None:
        self.stop.set()
        for proc in self.procs:
            proc.kill()
            proc.wait()
        self.procs.clear()


@dataclass(frozen=True)
class CiRun:
    number: int
    returncode: int
    summary: str
    wall_s: float
    cpu_s: float
    loads: tuple[float, ...]

    def row(self) -> str:
        load = (f"{statistics.mean(self.loads):.1f} ({min(self.loads):.1f}-{max(self.loads):.1f})"
                if self.loads else "-")
        return (f"| {self.number} | {'passed' if self.returncode == 0 else f'FAILED ({self.returncode})'} | "
                f"{self.summary} | {self.wall_s / 60:.1f} | {self.cpu_s:.0f} | {load} |")


def pytest_summary(log: str) -> str:
    """The last line pytest prints for the run, like `3651 passed in 612.30s (0:10:12)`, shortened."""
    found = re.findall(r"^=*\s*(\d+ (?:passed|failed)[^=\n]*?)\s*=*$", log, re.MULTILINE)
    return re.sub(r" in [\d.]+s.*", "", found[-1]) if found else "no pytest summary"


def one_run(number: int, commit: str, work: Path, burners: Burners) -> CiRun:
    clone = work / f"run{number}"
    subprocess.run(["rm", "-rf", str(clone)], check=True)
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
    subprocess.run(["git", "-C", str(clone), "checkout", "--quiet", "--detach", commit], check=True)
    log, times = work / f"run{number}.log", work / f"run{number}.time"
    first = len(burners.loads)
    start = time.monotonic()
    with log.open("w") as out:
        done = subprocess.run(["/usr/bin/time", "-f", "%U %S", "-o", str(times), "bash", ".ci/run"], cwd=clone,
                              stdout=out, stderr=subprocess.STDOUT)
    wall = time.monotonic() - start
    user, system = (float(x) for x in times.read_text().split()[-2:])
    subprocess.run(["rm", "-rf", str(clone)], check=True)  # its .venv is 2 GB; the log stays
    return CiRun(number, done.returncode, pytest_summary(log.read_text(errors="replace")), wall, user + system,
                 tuple(burners.loads[first:]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--load", type=float, default=4.0, help="1-minute load average to hold (0: no burner)")
    parser.add_argument("--commit", default="HEAD")
    parser.add_argument("--work", type=Path, default=Path("/tmp/ci_under_load"))
    args = parser.parse_args(argv)
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", args.commit], capture_output=True, text=True,
                            check=True).stdout.strip()
    args.work.mkdir(parents=True, exist_ok=True)
    burners = Burners(args.load, most=2 * (os.cpu_count() or 1))
    threading.Thread(target=burners.watch, daemon=True).start()
    runs = []
    print(f"commit {commit[:10]}, {args.runs} runs, load held near {args.load}")
    print("| run | CI | pytest | wall min | CPU-s | load mean (min-max) |\n|---|---|---|---|---|---|", flush=True)
    try:
        for number in range(1, args.runs + 1):
            runs.append(one_run(number, commit, args.work, burners))
            print(runs[-1].row(), flush=True)
    finally:
        burners.close()
    passed = sum(run.returncode == 0 for run in runs)
    print(f"{passed} of {len(runs)} runs passed in a row" if passed == len(runs) else
          f"MISSED: {len(runs) - passed} of {len(runs)} runs failed (logs in {args.work})")
    return 0 if passed == len(runs) else 1


if __name__ == "__main__":
    sys.exit(main())

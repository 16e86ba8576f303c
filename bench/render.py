"""Render budget: every diagram for a 4096-position prompt + 512-token answer.

    python -m bench.render [--prompt-len 4096] [--output-len 512] [--repeat 3]

Prints one row per diagram: best-of-N milliseconds, kilobytes, and the ratio to
the budget (<= 150 ms and <= 300 KB; a ratio above 1.00 is over). Exits 1 if any
diagram is over budget. Uses a synthetic trace: no model, no torch.
"""

from __future__ import annotations

import argparse
import sys
import time


from lesson.diagrams import DIAGRAMS, render_blocks_schematic
from tests.factories import make_long_trace

BUDGET_MS, BUDGET_KB = 150.0, 300.0


def measure(render, repeat: int) -> tuple[float, float]:
    """(best milliseconds, kilobytes of UTF-8) over `repeat` renders."""
    best, svg = float("inf"), ""
    for _ in range(repeat):
        start = time.perf_counter()
        svg = render()
        best = min(best, (time.perf_counter() - start) * 1000)
    return best, len(svg.encode("utf-8")) / 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompt-len", type=int, default=4096)
    parser.add_argument("--output-len", type=int, default=512)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    trace = make_long_trace(args.prompt_len, args.output_len)
    cases = {name: (lambda r=render: r(trace, lang="zh")) for name, render in DIAGRAMS.items()}
    cases["blocks_schematic"] = lambda: render_blocks_schematic(args.prompt_len, args.output_len, lang="zh")
    print(f"prompt {args.prompt_len} + output {args.output_len} positions; budget {BUDGET_MS:g} ms, {BUDGET_KB:g} KB")
    print(f"| {'diagram':<17} | {'ms':>7} | {'KB':>7} | {'ms/budget':>9} | {'KB/budget':>9} |")
    print(f"|{'-' * 19}|{'-' * 9}|{'-' * 9}|{'-' * 11}|{'-' * 11}|")
    over = False
    for name, render in cases.items():
        ms, kb = measure(render, args.repeat)
        over |= ms > BUDGET_MS or kb > BUDGET_KB
        print(f"| {name:<17} | {ms:7.1f} | {kb:7.1f} | {ms / BUDGET_MS:9.2f} | {kb / BUDGET_KB:9.2f} |")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())

"""The lesson's claim, timed: Prefill grows with the prompt, a Decode step hardly with its context.

    python -m bench.phase_growth [--rounds 3] [--repeats 3] [--small 8] [--large 512]

On the embedded default model, measures Prefill of `small` and `large` new positions and a Decode step
at context `small` and `large` (engine.runtime.sweep.run_sweep), interleaved over `rounds` rounds; each
point keeps its best median (another job on the machine only ever adds time). Prints both ratios and
their goals: Prefill large/small > 3x, Decode large/small < 2x, and the Prefill ratio more than twice
the Decode one. Exits 1 when a goal is missed. (tests/engine/test_sweep.py checks the same claim as
work, the positions and FLOPs of each pass, which load cannot move.)
"""

from __future__ import annotations

import argparse
import sys


from engine.contract.cost import DEVICE_SPECS
from engine.runtime.model import load_model
from engine.runtime.sweep import run_sweep

PREFILL_GOAL, DECODE_GOAL = 3.0, 2.0


def medians(lm, kind: str, points: tuple[int, int], repeats: int) -> tuple[float, ...]:
    """Each point's median over `repeats` passes, in one sweep of `kind`."""
    sweep = run_sweep(lm, kind, points, repeats=repeats, device_spec=DEVICE_SPECS["h100"])
    return tuple(point.median_ms for point in sweep.points)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--small", type=int, default=8)
    parser.add_argument("--large", type=int, default=512)
    args = parser.parse_args()
    lm = load_model(device="cpu")
    points = (args.small, args.large)
    prefill, decode = [], []
    for _ in range(args.rounds):  # interleaved, so a burst of other load lands on both kinds alike
        prefill.append(medians(lm, "prefill", points, args.repeats))
        decode.append(medians(lm, "decode-context", points, args.repeats))
    p_small, p_large = (min(r[i] for r in prefill) for i in (0, 1))
    d_small, d_large = (min(r[i] for r in decode) for i in (0, 1))
    p_ratio, d_ratio = p_large / p_small, d_large / d_small
    print(f"| pass | {args.small} (ms) | {args.large} (ms) | ratio | goal |")
    print("|---|---|---|---|---|")
    print(f"| Prefill, new positions | {p_small:.2f} | {p_large:.2f} | {p_ratio:.2f}x | > {PREFILL_GOAL:g}x |")
    print(f"| Decode step, context | {d_small:.2f} | {d_large:.2f} | {d_ratio:.2f}x | < {DECODE_GOAL:g}x |")
    print(f"Prefill ratio / Decode ratio: {p_ratio / d_ratio:.2f}x (goal > 2x)")
    met = p_ratio > PREFILL_GOAL and d_ratio < DECODE_GOAL and p_ratio > 2 * d_ratio
    print("goals met" if met else "MISSED")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())

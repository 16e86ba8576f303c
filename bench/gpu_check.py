"""A short check of the engine on a CUDA machine (torch + transformers only; no streamlit).

    python bench/gpu_check.py [--model DIR] [--tokens 32]

For each dtype it runs the lesson's prompt on the GPU and prints:
  - whether cached greedy tokens equal full recomputation without a cache,
  - Prefill vs mean Decode time and TTFT / TPOT from the trace (CUDA-synchronised clocks),
  - KV bytes measured from the cache tensors vs the formula,
  - engine / hf time ratio (model.generate) on the same tokens.
Exits 1 if a check fails. Meant to run in a few seconds on a lent GPU.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from bench.engine_overhead import measure  # noqa: E402
from engine import GenerationConfig, generate, generate_ids_no_cache, load_model  # noqa: E402


def check(model: str | None, device: str, dtype: str, num_tokens: int) -> bool:
    lm = load_model(model, device=device, dtype=dtype)
    cfg = GenerationConfig(max_new_tokens=num_tokens, ignore_eos=True)
    trace = generate(lm, "法国的首都是", cfg)
    parity = list(trace.output_ids) == generate_ids_no_cache(lm, list(trace.prompt_ids), cfg)
    kv_ok = all(s.kv_bytes == lm.info.kv_bytes_for(s.context_after) for s in trace.steps)
    decode_ms = statistics.median(s.duration_ms for s in trace.decode_steps)
    times = measure(lm, "法国的首都是", num_tokens, repeats=5)
    ratio = statistics.median(times["traced"]) / statistics.median(times["hf"])
    m = trace.metrics
    print(f"{dtype:9} parity={parity} kv_formula={kv_ok} prefill={trace.steps[0].duration_ms:.2f}ms "
          f"decode(median)={decode_ms:.2f}ms TTFT={m.ttft_ms:.2f}ms TPOT={m.tpot_ms:.2f}ms "
          f"traced/hf={ratio:.3f}x text={trace.output_text[:20]!r}")
    # bf16 rounding may legitimately change a late greedy choice; fp32 must match exactly.
    return kv_ok and (parity or dtype != "float32")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None)
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--device", default="cuda", help="cpu runs the same checks as a dry run")
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        print("no CUDA device here; nothing to check")
        return 0
    name = torch.cuda.get_device_name() if args.device == "cuda" else args.device
    print(f"{name}, torch {torch.__version__}")
    ok = [check(args.model, args.device, dtype, args.tokens) for dtype in ("float32", "bfloat16")]
    return 0 if all(ok) else 1


if __name__ == "__main__":
    sys.exit(main())

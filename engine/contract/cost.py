"""What one forward pass must compute and move, and the fastest a device could run it (a roofline).

Pure Python from a model's config: no weights, and no torch unless you ask to
measure "this" machine. The numbers are floors, not predictions: a pass cannot
beat max(FLOPs / peak FLOP/s, bytes / bandwidth), and a real engine lands above it.

    shape = load_shape("assets/default_model")           # a folder with a config.json is enough
    cost = pass_cost(shape, DEVICE_SPECS["h200"], new_positions=512, context=0)    # a Prefill
    cost.floor_ms, cost.bound                             # 0.0..., "compute" or "memory"

A pass has `batch` requests; each adds `new_positions` positions after `context`
positions already in its cache. Prefill: new_positions = prompt length, context = 0.
A Decode step: new_positions = 1, context = tokens so far.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass

from engine.contract.errors import InputError
from engine.contract.shape import ConfigReader, shape_error
from engine.contract.weights import GROUP_SIZES, bytes_per_weight

# Bytes per stored element. int8 / int4 are weight-only (or KV-only) quantisation:
# stored small, turned back into bf16 before the matmul, so they change bytes, not the compute peak.
DTYPE_BYTES = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "int8": 1.0, "int4": 0.5}

# Families whose MLP is two matrices (up, down) with a plain activation; every other
# family (Llama, Qwen, Mistral, Gemma, Phi-3 ...) has SwiGLU's three (gate, up, down).
_TWO_MATRIX_MLP = {"gpt2", "gpt_bigcode", "gpt_neox", "gptj", "opt", "phi", "falcon", "bloom", "starcoder2"}
# Families that add a learned position-embedding row per position (the rest rotate q and k: no weights).
_LEARNED_POSITIONS = {"gpt2", "gpt_bigcode", "opt"}
_MOE_FIELDS = ("num_local_experts", "num_experts", "n_routed_experts")


# --- the model's shape --------------------------------------------------------

@dataclass(frozen=True)
class ModelShape:
    """The numbers of a decoder-only transformer that decide its FLOPs and bytes."""

    name: str
    num_layers: int
    hidden_size: int          # d: width of the residual stream
    intermediate_size: int    # f: width inside the MLP
    num_mlp_matrices: int     # 3 for SwiGLU (gate, up, down), 2 for GPT-2's (up, down)
    num_heads: int            # query heads
    num_kv_heads: int         # K/V heads (fewer than query heads: grouped-query attention)
    head_dim: int
    vocab_size: int
    tied_embeddings: bool     # the LM head is the embedding matrix (one matrix, read once)
    learned_positions: bool   # GPT-2: one more embedding row per position
    max_positions: int | None

    def __post_init__(self) -> None:
        for name in ("num_layers", "hidden_size", "intermediate_size", "num_heads", "num_kv_heads",
                     "head_dim", "vocab_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise shape_error(self.name, f"{name} must be a positive whole number, got {value!r}")
        if self.num_heads % self.num_kv_heads:
            raise shape_error(self.name, f"{self.num_kv_heads} K/V heads cannot serve {self.num_heads} query heads")

    @classmethod
    def from_config(cls, config, name: str = "model") -> ModelShape:
        """Read a transformers config object, or a dict as in config.json.

        A dict is read as written: a missing `tie_word_embeddings` counts as untied
        (the Llama, Qwen and Mistral default). `load_shape` goes through AutoConfig,
        which knows each family's own defaults.
        """
        fields = ConfigReader.of(config, name)
        model_type = fields.first("model_type") or ""
        moe = [f for f in _MOE_FIELDS if (fields.first(f) or 0) > 0]
        if moe:
            raise fields.error(f"a mixture-of-experts config ({moe[0]}); this cost model counts dense layers")
        hidden = fields.required("hidden_size", "n_embd", "d_model")
        num_heads = fields.required("num_attention_heads", "n_head", "num_heads")
        two = model_type in _TWO_MATRIX_MLP
        intermediate = fields.first("intermediate_size", "ffn_hidden_size", "ffn_dim", "n_inner")
        if intermediate is None and not two:
            raise fields.error("the config has none of intermediate_size, ffn_hidden_size, ffn_dim, n_inner")
        return cls(
            name=name,
            num_layers=fields.required("num_hidden_layers", "n_layer", "num_layers"),
            hidden_size=hidden,
            intermediate_size=intermediate if intermediate is not None else 4 * hidden,  # GPT-2's n_inner=None
            num_mlp_matrices=2 if two else 3,
            num_heads=num_heads,
            num_kv_heads=fields.num_kv_heads(num_heads),
            head_dim=fields.head_dim(hidden, num_heads),
            vocab_size=fields.required("vocab_size"),
            tied_embeddings=bool(fields.first("tie_word_embeddings")),
            learned_positions=model_type in _LEARNED_POSITIONS,
            max_positions=fields.first("max_position_embeddings", "n_positions", "n_ctx"),
        )

    @property
    def layer_params(self) -> int:
        """Weights of one layer's matrices: Q, K, V, O, then the MLP (norms and biases left out: O(d))."""
        d = self.hidden_size
        attention = d * self.head_dim * (2 * self.num_heads + 2 * self.num_kv_heads)  # Q and O, K and V
        return attention + self.num_mlp_matrices * d * self.intermediate_size

    @property
    def embedding_params(self) -> int:
        return self.vocab_size * self.hidden_size

    @property
    def num_params(self) -> int:
        """Weights in matrices: every layer, the embedding, the LM head unless tied, GPT-2's position table."""
        head = 0 if self.tied_embeddings else self.embedding_params
        positions = (self.max_positions or 0) * self.hidden_size if self.learned_positions else 0
        return self.num_layers * self.layer_params + self.embedding_params + head + positions

    def kv_bytes_per_position(self, kv_bytes: float) -> float:
        """K and V, for every layer, of one position of one request."""
        return 2 * self.num_layers * self.num_kv_heads * self.head_dim * kv_bytes


# --- devices ------------------------------------------------------------------

@dataclass(frozen=True)
class DeviceSpec:
    """Peak matmul FLOP/s per compute dtype and memory bandwidth: the two roofs."""

    name: str
    fp32_flops_per_s: float   # plain fp32 (PyTorch does not use TF32 for matmuls by default)
    bf16_flops_per_s: float   # dense tensor-core bf16 / fp16 (no 2:4 sparsity)
    bandwidth_bytes_per_s: float
    source: str = "spec"      # "spec" (a datasheet) or "measured" (this process, see measure_this_machine)
    device_type: str = "cuda"  # torch's name for it: "cuda" or "cpu"
    spec: DeviceSpec | None = None  # measured: the datasheet of the same chip, when we know it

    def peak_flops_per_s(self, weight_dtype: str) -> float:
        """fp32 weights run fp32 matmuls; every other dtype multiplies in bf16."""
        return self.fp32_flops_per_s if weight_dtype == "fp32" else self.bf16_flops_per_s

    def ridge_intensity(self, weight_dtype: str) -> float:
        """FLOPs per byte where the two roofs meet: above it a pass is compute-bound."""
        return self.peak_flops_per_s(weight_dtype) / self.bandwidth_bytes_per_s


# Published dense numbers (NVIDIA datasheets; sparsity figures are twice these and not used here).
DEVICE_SPECS = {
    # H200 SXM datasheet: 989 TFLOPS BF16 Tensor Core, 67 TFLOPS FP32, 4.8 TB/s HBM3e.
    "h200": DeviceSpec("NVIDIA H200 SXM (spec)", 67e12, 989e12, 4.8e12),
    # H100 SXM datasheet: 989 TFLOPS BF16 Tensor Core, 67 TFLOPS FP32, 3.35 TB/s HBM3.
    "h100": DeviceSpec("NVIDIA H100 SXM (spec)", 67e12, 989e12, 3.35e12),
    # A100 80GB SXM datasheet: 312 TFLOPS BF16 Tensor Core, 19.5 TFLOPS FP32, 2,039 GB/s HBM2e.
    "a100": DeviceSpec("NVIDIA A100 80GB SXM (spec)", 19.5e12, 312e12, 2.039e12),
    # L4 datasheet: 121 TFLOPS BF16 Tensor Core (242 with sparsity), 30.3 TFLOPS FP32, 300 GB/s GDDR6.
    "l4": DeviceSpec("NVIDIA L4 (spec)", 30.3e12, 121e12, 300e9),
}


def spec_for_device_name(device_name: str) -> DeviceSpec | None:
    """The datasheet for a torch device name, only where the name pins the variant down
    (an H100 PCIe or an A100 PCIe has other numbers than the SXM parts listed here)."""
    patterns = {"h200": r"H200(?!.*NVL)", "h100": r"H100.*(SXM|HBM3)", "a100": r"A100-SXM4-80GB", "l4": r"\bL4\b"}
    for key, pattern in patterns.items():
        if re.search(pattern, device_name):
            return DEVICE_SPECS[key]
    return None


# --- the cost of one pass -----------------------------------------------------

@dataclass(frozen=True)
class PassCost:
    """FLOPs and bytes of one forward pass, split by where they come from, and its floor on a device."""

    new_positions: int        # n: positions each request adds in this pass
    context: int              # c: positions each request already has in its cache
    batch: int                # b: requests in the pass
    weight_dtype: str
    kv_dtype: str
    linear_flops: float       # the matrices of every layer, for every new position
    attention_flops: float    # q.k scores and the weighted sum of V, over the cached and new positions
    lm_head_flops: float      # logits for one position per request
    weight_bytes: float       # every layer matrix and the LM head (= the embedding when tied), read once
    embedding_bytes: float    # embedding rows gathered for the new tokens (and GPT-2's position rows)
    kv_read_bytes: float      # K/V of the c cached positions
    kv_write_bytes: float     # K/V of the n new positions
    peak_flops_per_s: float
    bandwidth_bytes_per_s: float

    @property
    def phase(self) -> str:
        return "decode" if self.new_positions == 1 and self.context > 0 else "prefill"

    @property
    def flops(self) -> float:
        return self.linear_flops + self.attention_flops + self.lm_head_flops

    @property
    def bytes(self) -> float:
        return self.weight_bytes + self.embedding_bytes + self.kv_read_bytes + self.kv_write_bytes

    @property
    def intensity(self) -> float:
        """FLOPs per byte moved."""
        return self.flops / self.bytes

    @property
    def compute_ms(self) -> float:
        return self.flops / self.peak_flops_per_s * 1e3

    @property
    def memory_ms(self) -> float:
        return self.bytes / self.bandwidth_bytes_per_s * 1e3

    @property
    def floor_ms(self) -> float:
        return max(self.compute_ms, self.memory_ms)

    @property
    def bound(self) -> str:
        return "compute" if self.compute_ms >= self.memory_ms else "memory"

    @property
    def ridge_intensity(self) -> float:
        return self.peak_flops_per_s / self.bandwidth_bytes_per_s

    def to_dict(self) -> dict:
        derived = ("phase", "flops", "bytes", "intensity", "ridge_intensity", "compute_ms", "memory_ms",
                   "floor_ms", "bound")
        return {**{name: getattr(self, name) for name in derived}, **asdict(self)}


def pass_cost(shape: ModelShape, device: DeviceSpec, *, new_positions: int, context: int, batch: int = 1,
              weight_dtype: str = "bf16", kv_dtype: str = "bf16") -> PassCost:
    """FLOPs, bytes and floor of one pass: `batch` requests, each adding `new_positions` (n)
    after `context` (c) cached positions. Counting one multiply-add as 2 FLOPs:

    - linear: every new position goes through every layer matrix once, 2 FLOPs per weight:
      2 * b * n * L * (d*h_d*(2*h_q + 2*h_kv) + m*d*f), with m = 3 matrices (SwiGLU) or 2 (GPT-2).
    - attention: new position i (0-based) attends to the c cached positions and the new ones up to
      itself, c + i + 1 in all (causal). Per pair and query head, q.k and the weighted V each cost
      2 * h_d: 4 * h_q * h_d * L * b * (n*c + n*(n+1)/2). Only the needed pairs: a kernel that also
      computes the masked half does up to twice this in a long Prefill; a floor counts what must be done.
    - LM head: one position per request (the engine passes logits_to_keep=1): 2 * b * d * V.
      Norms, softmax and activations are a few FLOPs per element, left out.

    Bytes, the least any kernel must move from memory:
    - weights: every layer matrix once per pass, however many positions share it (that sharing is
      why a bigger n or b raises FLOPs per byte); the LM head's V x d matrix once. A tied embedding
      is that same matrix: counted once.
    - embedding rows: the embedding table is not read whole, only one row per new token (b*n*d);
      when tied those rows are inside the LM head already read. GPT-2 adds n position rows.
    - K/V: read for the c cached positions, written for the n new: 2 * L * h_kv * h_d bytes-per-element
      per position per request. Activations are taken to stay on chip. A sliding window (Mistral) is
      not modelled: every layer counts all c cached positions.

    Floor = max(FLOPs / peak, bytes / bandwidth); `bound` names the larger term.
    """
    if weight_dtype not in DTYPE_BYTES or kv_dtype not in DTYPE_BYTES:
        bad = weight_dtype if weight_dtype not in DTYPE_BYTES else kv_dtype
        raise InputError("bad_dtype", f"unknown dtype {bad!r}; use {', '.join(DTYPE_BYTES)}", dtype=bad)
    for label, value, low in (("new positions", new_positions, 1), ("context", context, 0), ("batch", batch, 1)):
        if not isinstance(value, int) or value < low:
            raise InputError("length_range", f"{label} must be a whole number of at least {low}, got {value!r}",
                             name=label, value=value)
    n, c, b = new_positions, context, batch
    wb, kvb = DTYPE_BYTES[weight_dtype], DTYPE_BYTES[kv_dtype]
    s = shape
    attended_pairs = n * c + n * (n + 1) // 2  # per request and layer
    gathered_rows = (0 if s.tied_embeddings else b * n) + (n if s.learned_positions else 0)
    kv_per_position = s.kv_bytes_per_position(kvb)
    return PassCost(
        new_positions=n, context=c, batch=b, weight_dtype=weight_dtype, kv_dtype=kv_dtype,
        linear_flops=2 * b * n * s.num_layers * s.layer_params,
        attention_flops=4 * s.num_heads * s.head_dim * s.num_layers * b * attended_pairs,
        lm_head_flops=2 * b * s.embedding_params,
        weight_bytes=(s.num_layers * s.layer_params + s.embedding_params) * wb,
        embedding_bytes=gathered_rows * s.hidden_size * wb,
        kv_read_bytes=b * c * kv_per_position,
        kv_write_bytes=b * n * kv_per_position,
        peak_flops_per_s=device.peak_flops_per_s(weight_dtype),
        bandwidth_bytes_per_s=device.bandwidth_bytes_per_s,
    )


def prefill_and_decode(shape: ModelShape, device: DeviceSpec, *, prompt_len: int, context: int, batch: int = 1,
                       weight_dtype: str = "bf16", kv_dtype: str = "bf16") -> tuple[PassCost, PassCost]:
    """The Prefill of `prompt_len` positions, and one Decode step with `context` positions cached."""
    for label, value in (("prompt-len", prompt_len), ("context", context), ("batch", batch)):
        if not isinstance(value, int) or value < 1:  # a Decode step follows at least one prompt position
            raise InputError("length_range", f"--{label} must be at least 1, got {value!r}", name=label, value=value)
    for label, positions in (("prompt-len", prompt_len), ("context + 1", context + 1)):
        if shape.max_positions and positions > shape.max_positions:
            raise InputError("length_range", f"{label} = {positions} is past the model's {shape.max_positions} "
                                             "positions", name=label, value=positions)
    dtypes = dict(weight_dtype=weight_dtype, kv_dtype=kv_dtype)
    return (pass_cost(shape, device, new_positions=prompt_len, context=0, batch=batch, **dtypes),
            pass_cost(shape, device, new_positions=1, context=context, batch=batch, **dtypes))


# --- the report: JSON and a short table ----------------------------------------

def cost_report(shape: ModelShape, device: DeviceSpec, prefill: PassCost, decode: PassCost) -> dict:
    """The CLI's JSON: {"model", "device", "prefill", "decode"}."""
    device_dict = {k: v for k, v in asdict(device).items() if k != "spec"}
    device_dict["spec"] = None if device.spec is None else {k: v for k, v in asdict(device.spec).items()
                                                            if k not in ("spec", "source", "device_type")}
    return {"model": {**asdict(shape), "num_params": shape.num_params}, "device": device_dict,
            "prefill": prefill.to_dict(), "decode": decode.to_dict()}


def format_report(shape: ModelShape, device: DeviceSpec, prefill: PassCost, decode: PassCost) -> str:
    s = shape
    lines = [
        f"model {s.name}: {s.num_layers} layers, d={s.hidden_size}, MLP {s.num_mlp_matrices} x {s.intermediate_size}, "
        f"{s.num_heads} query / {s.num_kv_heads} K/V heads x {s.head_dim}, vocab {s.vocab_size:,}, "
        f"{'tied' if s.tied_embeddings else 'untied'} embeddings; {s.num_params:,} weights in matrices",
        f"device {device.name}: {_si(device.bf16_flops_per_s)}FLOP/s bf16, {_si(device.fp32_flops_per_s)}FLOP/s fp32, "
        f"{_si(device.bandwidth_bytes_per_s)}B/s",
        *_versus_spec(device),
        f"weights {prefill.weight_dtype} ({DTYPE_BYTES[prefill.weight_dtype]:g} B), KV {prefill.kv_dtype} "
        f"({DTYPE_BYTES[prefill.kv_dtype]:g} B), batch {prefill.batch}; ridge {prefill.ridge_intensity:,.1f} FLOP/B",
        "",
    ]
    columns = ("pass", "n", "context", "FLOPs", "bytes", "FLOP/B", "compute ms", "memory ms", "floor ms", "bound")
    rows = [(p.phase, str(p.new_positions), str(p.context), _si(p.flops), _si(p.bytes), f"{p.intensity:,.1f}",
             f"{p.compute_ms:.4g}", f"{p.memory_ms:.4g}", f"{p.floor_ms:.4g}", p.bound) for p in (prefill, decode)]
    widths = [max(len(r[i]) for r in (columns, *rows)) for i in range(len(columns))]
    lines += ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in (columns, *rows)]
    return "\n".join(lines)


def _versus_spec(device: DeviceSpec) -> list[str]:
    if device.spec is None:
        return []
    spec = device.spec
    return [f"  vs {spec.name}: copy {device.bandwidth_bytes_per_s / spec.bandwidth_bytes_per_s:.0%} of "
            f"{_si(spec.bandwidth_bytes_per_s)}B/s, bf16 matmul {device.bf16_flops_per_s / spec.bf16_flops_per_s:.0%} "
            f"of {_si(spec.bf16_flops_per_s)}FLOP/s"]


def _si(value: float) -> str:
    """1234567 -> '1.23 M' (the unit follows)."""
    for factor, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if value >= factor:
            return f"{value / factor:.3g} {prefix}"
    return f"{value:.3g} "


# --- every step of a trace against its floor -------------------------------------

# the torch dtype a model ran in -> the cost model's name for its bytes per element
TORCH_DTYPES = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}


@dataclass(frozen=True)
class StepFloor:
    """One forward pass of a trace: what the cost model says it must take, and what it took."""

    index: int
    phase: str                # "prefill" or "decode", as the trace recorded it
    new_positions: int
    context: int              # positions cached before the pass
    flops: float
    bytes: float
    compute_ms: float         # FLOPs / peak
    memory_ms: float          # bytes / bandwidth
    floor_ms: float           # the larger of the two
    bound: str                # "compute" or "memory"
    measured_ms: float        # the pass as the trace timed it (Step.duration_ms)

    @property
    def intensity(self) -> float:
        return self.flops / self.bytes

    @property
    def efficiency(self) -> float:
        """floor / measured: the share of the device's best this pass reached (1.0 = on the roof)."""
        return self.floor_ms / self.measured_ms if self.measured_ms > 0 else float("nan")

    @property
    def achieved_flops_per_s(self) -> float:
        """The pass's FLOPs over its measured time: its height on a roofline chart."""
        return self.flops / (self.measured_ms / 1e3) if self.measured_ms > 0 else float("nan")


@dataclass(frozen=True)
class TraceFloors:
    """A trace's steps against one device's roofs (the input of the roofline and floor-bar figures)."""

    model_id: str
    random_weights: bool
    device_name: str
    peak_flops_per_s: float
    bandwidth_bytes_per_s: float
    weight_dtype: str
    kv_dtype: str
    steps: tuple[StepFloor, ...]

    @property
    def ridge_intensity(self) -> float:
        return self.peak_flops_per_s / self.bandwidth_bytes_per_s

    def phase_steps(self, phase: str) -> tuple[StepFloor, ...]:
        return tuple(s for s in self.steps if s.phase == phase)

    def to_dict(self) -> dict:
        steps = [{**asdict(s), "intensity": s.intensity, "efficiency": s.efficiency} for s in self.steps]
        return {**{k: v for k, v in asdict(self).items() if k != "steps"}, "steps": steps}


def trace_floors(trace, shape: ModelShape, device: DeviceSpec, *, weight_dtype: str | None = None,
                 kv_dtype: str | None = None) -> TraceFloors:
    """Every step of `trace` (an engine.contract.trace.RequestTrace) against the floor of its own shape.

    A step's pass had `num_positions` new positions after `context_before` cached ones, one
    request. Dtypes default to the ones the trace ran in (fp32 on a CPU); pass others to ask
    "what would this run's floor be with int4 weights". Measured: the step's own duration.
    """
    ran_in = TORCH_DTYPES.get(trace.model.dtype, "fp32")
    weight = weight_dtype or ran_in
    kv = kv_dtype or (weight if weight in ("fp32", "bf16", "fp16") else "bf16")
    steps = []
    for step in trace.steps:
        cost = pass_cost(shape, device, new_positions=step.num_positions, context=step.context_before,
                         weight_dtype=weight, kv_dtype=kv)
        steps.append(StepFloor(index=step.index, phase=step.phase, new_positions=cost.new_positions,
                               context=cost.context, flops=cost.flops, bytes=cost.bytes, compute_ms=cost.compute_ms,
                               memory_ms=cost.memory_ms, floor_ms=cost.floor_ms, bound=cost.bound,
                               measured_ms=step.duration_ms))
    return TraceFloors(model_id=trace.model.model_id, random_weights=trace.model.random_weights,
                       device_name=device.name, peak_flops_per_s=device.peak_flops_per_s(weight),
                       bandwidth_bytes_per_s=device.bandwidth_bytes_per_s, weight_dtype=weight, kv_dtype=kv,
                       steps=tuple(steps))


# --- the weight formats side by side ----------------------------------------------

@dataclass(frozen=True)
class FormatFloor:
    """One Decode step's floor with the matrices held in one weight format (engine/contract/weights.py):
    bytes per weight with the format's scales (and zeros) counted, as the engine holds them."""

    weights: str
    group_size: int           # int4's; 0 for the others
    bytes_per_weight: float
    weight_bytes: float       # the matrices and the LM head, read once by the step
    decode: PassCost          # the step at the format's nominal bytes (DTYPE_BYTES), before the scales
    peak_flops_per_s: float   # dense: its dtype's roof; packed: the device's best roof (see format_floors)

    @property
    def memory_ms(self) -> float:
        moved = self.decode.bytes - self.decode.weight_bytes + self.weight_bytes
        return moved / self.decode.bandwidth_bytes_per_s * 1e3

    @property
    def compute_ms(self) -> float:
        return self.decode.flops / self.peak_flops_per_s * 1e3

    @property
    def floor_ms(self) -> float:
        return max(self.compute_ms, self.memory_ms)


def format_floors(shape: ModelShape, device: DeviceSpec, *, context: int, batch: int = 1,
                  kv_dtype: str = "bf16") -> list[FormatFloor]:
    """fp32, bf16, int8 and int4 at each group size: what one Decode step after `context` positions reads
    and its floor. Weight-only formats keep the KV cache in `kv_dtype`. A packed kernel does its own
    arithmetic (unpacking, then multiply-adds in whatever width the kernel chose), so no measured matmul
    roof is its own: its floor takes the device's best one (a floor must never sit above what runs; this
    CPU's bf16 matmul roof is 50x below its fp32 one)."""
    best_peak = max(device.fp32_flops_per_s, device.bf16_flops_per_s)
    floors = []
    for weights, group in [("fp32", 0), ("bf16", 0), ("int8", 0), *(("int4", g) for g in GROUP_SIZES)]:
        per_weight = bytes_per_weight(weights, group, row_width=shape.hidden_size)
        step = pass_cost(shape, device, new_positions=1, context=context, batch=batch, weight_dtype=weights,
                         kv_dtype=kv_dtype)
        peak = device.peak_flops_per_s(weights) if weights in ("fp32", "bf16") else best_peak
        floors.append(FormatFloor(weights, group, per_weight, step.weight_bytes / DTYPE_BYTES[weights] * per_weight,
                                  step, peak))
    return floors


def format_floors_table(floors: list[FormatFloor]) -> str:
    """The formats as a short table: bytes per weight, the step's weight bytes, its floor and the ratio to fp32."""
    fp32 = floors[0].floor_ms
    columns = ("weights", "bytes/weight", "weight bytes", "compute ms", "memory ms", "floor ms", "x fp32")
    rows = [(f.weights + (f" g{f.group_size}" if f.group_size else ""), f"{f.bytes_per_weight:.4g}",
             _si(f.weight_bytes), f"{f.compute_ms:.4g}", f"{f.memory_ms:.4g}", f"{f.floor_ms:.4g}",
             f"{fp32 / f.floor_ms:.2f}") for f in floors]
    widths = [max(len(r[i]) for r in (columns, *rows)) for i in range(len(columns))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in (columns, *rows))

"""INT8 and INT4 weight-only formats: every Linear of a loaded model replaced by a module that holds packed
weights and calls torch's own kernels (never a quantize-then-dequantize stand-in for a timed pass).

    int8  per output channel: w ~ q * s, q in -128..127 (one byte), s one scale per row
          kernel torch.ops.aten._weight_int8pack_mm(x, q [N, K], s [N])
    int4  per group of G weights along a row: w ~ (q - 8) * s + z, q in 0..15 (half a byte), s and z per group
          packed by torch.ops.aten._convert_weight_to_int4pack_for_cpu(q [N, K] int32, 1)
          kernel torch.ops.aten._weight_int4pack_mm_for_cpu(x, packed, G, scales_and_zeros [K/G, N, 2])

    report = quantize_model(model, "int4", group_size=64)   # in place; report.weight_bytes, report.kernel

Both kernels take fp32, bf16 or fp16 activations, but with fp32 ones they are 10-30x slower than with bf16
(one 4096 x 4096 matrix times one token on this 2-core CPU, one thread: int8 10.9 ms vs 0.85 ms, int4
27.9 ms vs 0.76 ms; dense fp32 2.5 ms). So an fp32 model's activations are turned into bf16 just around the
kernel and back after it (`kernel_dtype`); everything else (norms, attention, the KV cache) stays in the
model's dtype. Scales and zeros are stored in that kernel dtype, and the weights are rounded with the stored
values, so the round trip's error is what the format's bound says (`dequantize_int8`, `dequantize_int4`).

What the kernels need and how it is met, never by changing a number the model computes:
- int8 reads K (input features) in blocks of 16: with another K it answers wrong numbers without a word
  (measured here: K = 24 off by 318, K = 13 a crash), so K is padded to a multiple of 16;
- int4 wants N (output features) a multiple of 16 and K a multiple of G: the matrix is padded with zero rows
  and columns, the activations with zeros in the padded columns (they add nothing), and the padded outputs
  cut off (the embedded model's MLP is 688 wide, a multiple of none of 32, 64, 128; its vocabulary 2,989 rows);
- a tied LM head (the embedding's matrix) gets its own packed copy: the embedding stays a row lookup.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from engine.contract.errors import InputError
from engine.runtime import hf

INT8_KERNEL = "aten._weight_int8pack_mm"
INT4_KERNEL = "aten._weight_int4pack_mm_for_cpu"
DENSE_KERNEL = "aten.linear"
INT4_ROWS = 16  # the int4 packing takes rows in multiples of 16
INT8_COLUMNS = 16  # the int8 kernel reads a row in blocks of 16 weights
# A scale is rounded to the kernel dtype with this much room on top, so the rounded scale still spans the
# row's (or group's) range and no weight is clipped (bf16 keeps 8 significant bits: a rounding is < 2**-8).
SCALE_ROOM = 1 + 2**-7


@dataclass(frozen=True)
class WeightsReport:
    """What quantize_model did: the format, int4's group size (0 otherwise), the bytes every weight of the
    model now takes (packed matrices, their scales and zeros, and the parameters left dense), the kernel."""

    weights: str
    group_size: int
    weight_bytes: int
    kernel: str
    num_layers_packed: int


def kernel_dtype(dtype: torch.dtype) -> torch.dtype:
    """The activation dtype the packed kernels run in for a model of `dtype`: bf16 for fp32 (see the top)."""
    return torch.bfloat16 if dtype == torch.float32 else dtype


# --- the formats, as plain tensors ----------------------------------------------------------------------

def quantize_int8(weight: torch.Tensor, scale_dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """(q int8 [N, K], scales [N] in `scale_dtype`): symmetric, one scale per row."""
    w = weight.float()
    scales = (w.abs().amax(dim=1) / 127 * SCALE_ROOM).clamp(min=1e-12).to(scale_dtype)
    q = torch.round(w / scales.float()[:, None]).clamp(-128, 127).to(torch.int8)
    return q, scales


def dequantize_int8(q: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    """The fp32 matrix the int8 kernel multiplies by: q * s, row by row (error <= s / 2)."""
    return q.float() * scales.float()[:, None]


def quantize_int4(weight: torch.Tensor, group_size: int, scale_dtype: torch.dtype):
    """(q int32 [N, K] in 0..15, scales [N, K / G], zeros [N, K / G]), both in `scale_dtype`:
    asymmetric per group, w ~ (q - 8) * s + z, as torch's int4 kernels read it. K must be a multiple of G."""
    rows, width = weight.shape
    groups = weight.float().reshape(rows, width // group_size, group_size)  # (N, K/G, G)
    low, high = groups.amin(dim=2), groups.amax(dim=2)
    scales = ((high - low) / 15 * SCALE_ROOM).clamp(min=1e-12).to(scale_dtype)
    zeros = (low + 8 * scales.float()).to(scale_dtype)
    start = zeros.float() - 8 * scales.float()  # what q = 0 stands for, as the kernel will compute it
    q = torch.round((groups - start[..., None]) / scales.float()[..., None]).clamp(0, 15)
    return q.to(torch.int32).reshape(rows, width), scales, zeros


def dequantize_int4(q: torch.Tensor, scales: torch.Tensor, zeros: torch.Tensor) -> torch.Tensor:
    """The fp32 matrix the int4 kernel multiplies by (error <= s / 2 + |z| * 2**-8: z is rounded too)."""
    rows, width = q.shape
    group_size = width // scales.shape[1]
    groups = q.float().reshape(rows, -1, group_size)
    return ((groups - 8) * scales.float()[..., None] + zeros.float()[..., None]).reshape(rows, width)


# --- the modules that replace nn.Linear --------------------------------------------------------------

class PackedLinear(nn.Module):
    """A Linear whose matrix is held packed: `forward` takes and returns the model's dtype and turns the
    activations into the kernel's dtype only around the kernel call."""

    def __init__(self, weight: torch.Tensor, padded_in: int, bias: torch.Tensor | None, act_dtype: torch.dtype):
        super().__init__()
        self.out_features, self.in_features = weight.shape
        self.padded_in = padded_in  # K as the kernel reads it; zeros past in_features
        self.act_dtype = act_dtype
        self.bias = None if bias is None else nn.Parameter(bias.detach().clone(), requires_grad=False)

    def packed_bytes(self) -> int:
        """The bytes of the packed matrix and its scales (and zeros): the buffers this module holds."""
        return sum(b.numel() * b.element_size() for b in self.buffers())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.reshape(-1, self.in_features).to(self.act_dtype)  # (B*T, K)
        if self.padded_in > self.in_features:  # zeros in the padded columns add nothing
            rows = nn.functional.pad(rows, (0, self.padded_in - self.in_features))
        out = self.matmul(rows)[:, :self.out_features].to(x.dtype)  # (B*T, N): padded rows cut off
        out = out.reshape(*x.shape[:-1], self.out_features)
        return out if self.bias is None else out + self.bias

    def matmul(self, rows: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError


class Int8Linear(PackedLinear):
    kernel = INT8_KERNEL

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None, act_dtype: torch.dtype):
        padded = pad_matrix(weight, rows_to=1, columns_to=INT8_COLUMNS)
        super().__init__(weight, padded.shape[1], bias, act_dtype)
        q, scales = quantize_int8(padded, act_dtype)
        self.register_buffer("weight_int8", q)  # (N, K)
        self.register_buffer("scales", scales)  # (N,)

    def matmul(self, rows: torch.Tensor) -> torch.Tensor:
        return torch.ops.aten._weight_int8pack_mm(rows, self.weight_int8, self.scales)


class Int4Linear(PackedLinear):
    kernel = INT4_KERNEL

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None, act_dtype: torch.dtype, group_size: int):
        padded = pad_matrix(weight, rows_to=INT4_ROWS, columns_to=group_size)
        super().__init__(weight, padded.shape[1], bias, act_dtype)
        self.group_size = group_size
        q, scales, zeros = quantize_int4(padded, group_size, act_dtype)
        self.register_buffer("weight_int4", torch.ops.aten._convert_weight_to_int4pack_for_cpu(q, 1))
        # (K/G, N, 2): each group's scale and zero side by side, the layout the kernel reads
        self.register_buffer("scales_and_zeros", torch.stack([scales, zeros], dim=2).transpose(0, 1).contiguous())

    def matmul(self, rows: torch.Tensor) -> torch.Tensor:
        return torch.ops.aten._weight_int4pack_mm_for_cpu(rows, self.weight_int4, self.group_size,
                                                          self.scales_and_zeros)


def pad_matrix(weight: torch.Tensor, rows_to: int, columns_to: int) -> torch.Tensor:
    """`weight` with zero rows and columns added up to multiples of `rows_to` and `columns_to`."""
    rows, width = weight.shape
    if rows % rows_to == 0 and width % columns_to == 0:
        return weight  # no copy of a matrix that already fits (most of them)
    return nn.functional.pad(weight, (0, -width % columns_to, 0, -rows % rows_to))


# --- the model ----------------------------------------------------------------------------------------

def linear_layers(model: nn.Module) -> list[tuple[nn.Module, str]]:
    """(parent, attribute) of every Linear and of GPT-2's Conv1D: the LM head included."""
    return [(parent, name) for parent in model.modules() for name, child in parent.named_children()
            if isinstance(child, nn.Linear) or hf.is_conv1d(child)]


def matrix_of(layer: nn.Module) -> tuple[torch.Tensor, torch.Tensor | None]:
    """A layer's matrix [N, K] and bias; GPT-2's Conv1D stores its matrix [K, N], transposed here."""
    if hf.is_conv1d(layer):
        return layer.weight.t().contiguous(), layer.bias
    return layer.weight, layer.bias


def check_kernel(weights: str, device: torch.device, act_dtype: torch.dtype) -> None:
    """One tiny call of the format's kernels on `device`; a build or device without them is refused in words
    (InputError "weights_no_kernel", naming the kernel, the device and torch's version)."""
    probe = torch.zeros(INT4_ROWS, 32, device=device)
    try:
        build_packed(weights, probe, None, act_dtype, 32).forward(torch.zeros(1, 32, device=device, dtype=act_dtype))
    except (RuntimeError, NotImplementedError, AttributeError) as err:
        kernel = INT8_KERNEL if weights == "int8" else INT4_KERNEL
        raise InputError("weights_no_kernel", f"{weights} weights need {kernel}, which this torch "
                         f"{torch.__version__} does not run on {device.type}: {str(err).splitlines()[0][:120]}",
                         weights=weights, kernel=kernel, device=device.type, torch=torch.__version__) from None


def build_packed(weights: str, matrix: torch.Tensor, bias, act_dtype: torch.dtype, group_size: int) -> PackedLinear:
    if weights == "int8":
        return Int8Linear(matrix, bias, act_dtype)
    return Int4Linear(matrix, bias, act_dtype, group_size)


@torch.no_grad()
def quantize_model(model: nn.Module, weights: str, group_size: int = 0, *, model_id: str = "") -> WeightsReport:
    """Replace every Linear (and Conv1D) of `model` with its packed form, in place; the report says what is
    held now. `weights` is "int8" or "int4" (engine.contract.weights.check_format checked `group_size`).
    A model with no such layer is refused (InputError "weights_unsupported")."""
    layers = linear_layers(model)
    if not layers:
        raise InputError("weights_unsupported", f"{model_id or type(model).__name__} has no Linear layers to "
                         f"store as {weights}", weights=weights, model=model_id or type(model).__name__)
    embedding = model.get_input_embeddings()
    act_dtype = kernel_dtype(embedding.weight.dtype)
    check_kernel(weights, embedding.weight.device, act_dtype)
    for parent, name in layers:  # one dense matrix at a time: each is freed as its layer is replaced
        matrix, bias = matrix_of(getattr(parent, name))
        setattr(parent, name, build_packed(weights, matrix, bias, act_dtype, group_size))
    kernel = INT8_KERNEL if weights == "int8" else INT4_KERNEL
    activations = str(act_dtype).removeprefix("torch.")
    return WeightsReport(weights, group_size, held_bytes(model), f"{kernel} ({activations} activations)", len(layers))


def held_bytes(model: nn.Module) -> int:
    """Every weight the model holds: its parameters (a tied matrix once) and its packed layers' buffers."""
    dense = sum(p.numel() * p.element_size() for p in model.parameters())
    return dense + sum(m.packed_bytes() for m in model.modules() if isinstance(m, PackedLinear))


def decode_read_bytes(model: nn.Module) -> int:
    """The weight bytes one Decode step reads: every matrix once (packed or dense), the norms and biases, and
    of the embedding table only the new token's row; all of it when the LM head is that table (a dense tied
    model's head reads the whole matrix). Other lookup tables (GPT-2's positions) are counted whole."""
    table = model.get_input_embeddings().weight
    head = model.get_output_embeddings()
    head_reads_table = isinstance(head, nn.Linear) and head.weight is table
    return held_bytes(model) - (0 if head_reads_table else table.nbytes - table[0].nbytes)

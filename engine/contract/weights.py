"""The weight formats a model can be loaded in, and what each stores per weight (no torch).

    fp32, bf16   dense: every weight a float of 4 or 2 bytes, the matmul torch's own (aten.linear)
    int8         weight-only: one signed byte per weight, one scale per output channel (row)
    int4         weight-only: half a byte per weight, a scale and a zero per group of `group_size`
                 weights along a row (32, 64 or 128)

Weight-only means the activations, the norms, the embedding lookup and the KV cache stay in the
model's dtype; only the matrices of the Linear layers (the LM head included) are stored small and
unpacked inside the kernel (engine/runtime/weights.py). Validated here, so the CLI and a page can
refuse a bad choice before torch is imported.
"""

from __future__ import annotations

from engine.contract.errors import InputError

DENSE_FORMATS = ("fp32", "bf16")
PACKED_FORMATS = ("int8", "int4")
WEIGHT_FORMATS = (*DENSE_FORMATS, *PACKED_FORMATS)
GROUP_SIZES = (32, 64, 128)  # the int4 group sizes offered (the CPU kernel takes these and 256)
DEFAULT_GROUP_SIZE = 64
DENSE_DTYPES = {"fp32": "float32", "bf16": "bfloat16"}  # a dense format is a dtype (engine.runtime.model.DTYPES)
SCALE_BYTES = 2  # int8's scales and int4's scales and zeros are bf16 (fp16 on an fp16 model): 2 bytes each


def check_format(weights: str, group_size: int | None) -> int:
    """The group size to use (0 for every format but int4), or InputError: an unknown format
    ("weights_unknown"), a group size other than GROUP_SIZES for int4 or a group size given
    for another format ("weights_group_size")."""
    if weights not in WEIGHT_FORMATS:
        raise InputError("weights_unknown", f"unknown weight format {weights!r}; use {', '.join(WEIGHT_FORMATS)}",
                         weights=weights, choices=", ".join(WEIGHT_FORMATS))
    if weights != "int4":
        if group_size:
            raise InputError("weights_group_size", f"a group size applies to int4 only, not {weights}",
                             weights=weights, group_size=group_size, choices=", ".join(map(str, GROUP_SIZES)))
        return 0
    group = DEFAULT_GROUP_SIZE if group_size is None else group_size
    if group not in GROUP_SIZES:
        raise InputError("weights_group_size", f"int4 group size {group} is not one of "
                         f"{', '.join(map(str, GROUP_SIZES))}", weights=weights, group_size=group,
                         choices=", ".join(map(str, GROUP_SIZES)))
    return group


def bytes_per_weight(weights: str, group_size: int = 0, row_width: int = 4096) -> float:
    """What one weight of a matrix costs in memory, its share of the scales included: int8 adds one
    scale per row of `row_width` weights, int4 a scale and a zero per group."""
    if weights == "fp32":
        return 4.0
    if weights == "bf16":
        return 2.0
    if weights == "int8":
        return 1.0 + SCALE_BYTES / row_width
    return 0.5 + 2 * SCALE_BYTES / group_size

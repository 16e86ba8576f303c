"""Where and when a run is measured: this machine described for engine.contract.trace.Provenance.

    this_machine("cpu")    -> Provenance(cpu="AMD EPYC 7B13", num_cores=16, device="cpu", gpu="", ...)
    this_machine("cuda:0") -> the same, with gpu="NVIDIA H200"

Only what explains the times goes in: the processor's model name, the core count, the
accelerator's name, the torch and transformers versions, and the UTC time. No host name,
user name or path, so a run can be shared as it is. The machine's part is read once per
process and device (it does not change while the process runs); the time is read per call.
"""

from __future__ import annotations

import datetime
import functools
import importlib.metadata
import os
import platform
from pathlib import Path

from engine.contract.trace import PROVENANCE_TEXT_LIMIT, Provenance

CPUINFO = Path("/proc/cpuinfo")


def this_machine(device: object) -> Provenance:
    """A provenance for a measurement made now on `device` (a torch.device or its name)."""
    kind, gpu = _device_part(str(device))
    return Provenance(cpu=cpu_name(), num_cores=os.cpu_count() or 0, device=kind, gpu=gpu,
                      torch_version=package_version("torch"), transformers_version=package_version("transformers"),
                      recorded_at=utc_now())


def utc_now() -> str:
    """The time now, UTC, ISO 8601 to the second ("2025-06-01T14:03:12Z")."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@functools.cache
def cpu_name() -> str:
    """The processor's model name (Linux's /proc/cpuinfo, else what the platform says); "" if neither says."""
    try:
        for line in CPUINFO.read_text(encoding="utf-8", errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("model name", "Model", "Hardware") and value.strip():
                return _short(value)
    except OSError:
        pass
    return _short(platform.processor() or platform.machine())


@functools.cache
def package_version(name: str) -> str:
    """An installed package's version, "" when it is not installed."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return ""


@functools.cache
def _device_part(device: str) -> tuple[str, str]:
    """("cuda", "NVIDIA H200") for a GPU, ("cpu", "") for the CPU."""
    kind = device.split(":", 1)[0]
    if kind != "cuda":
        return kind, ""
    import torch  # a GPU's name needs torch, which any model on a GPU has loaded already

    return kind, _short(torch.cuda.get_device_name(torch.device(device)))


def _short(text: str) -> str:
    """One line of spaces collapsed, cut to what a provenance field holds."""
    return " ".join(text.split())[:PROVENANCE_TEXT_LIMIT]

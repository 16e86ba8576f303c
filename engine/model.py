"""Load a causal language model for tracing: the embedded default or a local folder.

Safety rules, because a classroom server loads folders it did not make:
only safetensors weights (pickle checkpoints can run code when loaded), never
remote code, never a network fetch unless the caller names a hub id and the
network allows it.
"""

from __future__ import annotations

import os
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer
from transformers.utils import logging as hf_logging

from .errors import ModelLoadError
from .trace import ModelInfo

DEFAULT_MODEL_DIR = Path(__file__).resolve().parent.parent / "assets" / "default_model"
DEFAULT_MODEL_ID = "default"
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
DEVICES = ("auto", "cpu", "cuda", "mps")
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


@dataclass
class LoadedModel:
    """A model ready to trace. Shared read-only between requests.

    `lock` serialises forward passes: one pass at a time per model, so several
    visitors can share it without corrupting each other's timings or caches.
    """

    model: torch.nn.Module
    tokenizer: object
    info: ModelInfo
    path: str
    load_ms: float
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def model_id(self) -> str:
        return self.info.model_id

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device


def set_num_threads(num_threads: int | None = None) -> int:
    """Pin torch's CPU threads (env PREFILL_DECODE_THREADS overrides).

    Measured on a 2-core machine: with one other busy process, torch's default
    (one thread per core) made a decode step about 50x slower, because its
    threads wait on each other at every small matmul. Tiny decode steps gain
    nothing from more threads, so the default is half the cores, at most 4.
    """
    if num_threads is None:
        env = os.environ.get("PREFILL_DECODE_THREADS", "")
        num_threads = int(env) if env.isdigit() and int(env) > 0 else max(1, min(4, (os.cpu_count() or 2) // 2))
    torch.set_num_threads(num_threads)
    return num_threads


def resolve_device(device: str = "auto") -> torch.device:
    """auto picks cuda, then mps, then cpu. An explicit device must exist."""
    if device not in DEVICES:
        raise ModelLoadError("device_unavailable", f"unknown device {device!r}; use one of {', '.join(DEVICES)}", device=device)
    has_mps = getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available()
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "mps" if has_mps else "cpu"
    if (device == "cuda" and not torch.cuda.is_available()) or (device == "mps" and not has_mps):
        raise ModelLoadError("device_unavailable", f"device {device!r} is not available on this machine", device=device)
    return torch.device(device)


def resolve_dtype(dtype: str, device: torch.device) -> torch.dtype:
    """auto: bfloat16 on CUDA, float16 on MPS, float32 on CPU."""
    if dtype == "auto":
        return {"cuda": torch.bfloat16, "mps": torch.float16}.get(device.type, torch.float32)
    if dtype not in DTYPES:
        raise ModelLoadError("bad_dtype", f"unknown dtype {dtype!r}; use auto, {', '.join(DTYPES)}", dtype=dtype)
    return DTYPES[dtype]


def check_model_folder(path: Path) -> None:
    """Refuse folders that are not a safetensors causal-LM checkpoint."""
    if not path.exists():
        raise ModelLoadError("model_not_found", f"model folder not found: {path}", path=str(path))
    if not path.is_dir() or not (path / "config.json").is_file():
        raise ModelLoadError("not_a_model", f"not a model folder (no config.json): {path}", path=str(path))
    if not any(path.glob("*.safetensors")):
        if any(path.glob("*.bin")) or any(path.glob("*.pt")) or any(path.glob("*.pth")):
            raise ModelLoadError(
                "pickle_weights_only",
                f"refusing pickle weights (they can run code when loaded); convert to safetensors: {path}",
                path=str(path),
            )
        raise ModelLoadError("not_a_model", f"no *.safetensors weights in {path}", path=str(path))


def _locate(path: str | Path | None) -> tuple[str, str, bool]:
    """(source for from_pretrained, model id for traces, local_files_only)."""
    if path is None or str(path) == DEFAULT_MODEL_ID:
        check_model_folder(DEFAULT_MODEL_DIR)
        return str(DEFAULT_MODEL_DIR), DEFAULT_MODEL_ID, True
    folder = Path(path).expanduser()
    if not folder.exists() and _HUB_ID.match(str(path)):
        return str(path), str(path), False  # a hub id: only works where the network allows
    check_model_folder(folder)
    return str(folder.resolve()), folder.resolve().name, True


def load_model(
    path: str | Path | None = None,
    *,
    device: str = "auto",
    dtype: str = "auto",
    num_threads: int | None = None,
    warmup: bool = True,
) -> LoadedModel:
    """Load tokenizer + model, move to device/dtype, run one warm-up pass."""
    start = time.perf_counter()
    hf_logging.disable_progress_bar()  # no "Loading weights" bars in a CLI table or a server log
    set_num_threads(num_threads)
    source, model_id, local_only = _locate(path)
    dev = resolve_device(device)
    torch_dtype = resolve_dtype(dtype, dev)
    kwargs = dict(local_files_only=local_only, trust_remote_code=False)
    try:
        config = AutoConfig.from_pretrained(source, **kwargs)
        tokenizer = AutoTokenizer.from_pretrained(source, **kwargs)
        model = AutoModelForCausalLM.from_pretrained(source, dtype=torch_dtype, use_safetensors=True, **kwargs)
    except (OSError, ValueError, KeyError, RuntimeError) as err:
        reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ModelLoadError("model_load_failed", f"could not load {path}: {reason}", path=str(path), reason=reason) from err
    model.to(dev).eval()
    info = describe(model, config, model_id, torch_dtype, dev)
    loaded = LoadedModel(model=model, tokenizer=tokenizer, info=info, path=source, load_ms=0.0)
    if warmup:
        _warm_up(loaded)
    loaded.load_ms = (time.perf_counter() - start) * 1e3
    return loaded


def _text_config(config):
    """Multimodal configs keep the language model's numbers in a sub-config."""
    get = getattr(config, "get_text_config", None)
    return get() if callable(get) else config


def describe(model, config, model_id: str, dtype: torch.dtype, device: torch.device) -> ModelInfo:
    """The numbers a learner needs to explain the KV cache: layers, heads, head_dim."""
    cfg = _text_config(config)
    num_heads = _first_attr(cfg, "num_attention_heads", "n_head")
    hidden = _first_attr(cfg, "hidden_size", "n_embd")
    return ModelInfo(
        model_id=model_id,
        architecture=(getattr(config, "architectures", None) or [type(model).__name__])[0],
        num_layers=_first_attr(cfg, "num_hidden_layers", "n_layer"),
        num_heads=num_heads,
        num_kv_heads=getattr(cfg, "num_key_value_heads", None) or num_heads,
        head_dim=getattr(cfg, "head_dim", None) or hidden // num_heads,
        hidden_size=hidden,
        vocab_size=cfg.vocab_size,
        max_positions=_first_attr(cfg, "max_position_embeddings", "n_positions"),
        num_params=sum(p.numel() for p in model.parameters()),
        dtype=str(dtype).removeprefix("torch."),
        bytes_per_element=torch.empty((), dtype=dtype).element_size(),
        device=device.type,
    )


def _first_attr(obj, *names):
    for name in names:
        value = getattr(obj, name, None)
        if value is not None:
            return value
    raise ModelLoadError("not_a_model", f"config has none of {names}", path="")


def _warm_up(loaded: LoadedModel) -> None:
    """One small prefill + decode so the first real request is not timed cold."""
    from .generation import GenerationConfig, generate_ids  # late: generation imports this module

    ids = loaded.tokenizer.encode("warm up", add_special_tokens=False) or [0]
    generate_ids(loaded, ids, GenerationConfig(max_new_tokens=2, ignore_eos=True))

"""Load a causal language model for tracing: the embedded default, a local folder,
or a real-size shape with random weights ("preset:NAME", engine/presets.py).

Safety rules, because a classroom server loads folders it did not make:
only safetensors weights (pickle checkpoints can run code when loaded), never
remote code, never a network fetch unless the caller allows one (`allow_hub=True`,
the CLI only) and names a hub id that is not a local folder. A caller that
lists its own folders (the app) passes `within=`, and a folder or file that
resolves outside it (a symlink pointing elsewhere) is refused.
"""

from __future__ import annotations

import dataclasses
import re
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import torch
from huggingface_hub import constants, is_offline_mode
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer
from transformers.utils import logging as hf_logging

from . import attention, presets
from .attention import KernelLog
from .config import EngineSettings
from .errors import ModelLoadError
from .prompts import prompt_token_ids
from .runners import EagerRunner, RunnerPool
from .shape import ConfigReader
from .trace import ModelInfo

DEFAULT_MODEL_DIR = Path(__file__).resolve().parent.parent / "assets" / "default_model"
DEFAULT_MODEL_ID = "default"
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
DEVICES = ("auto", "cpu", "cuda", "mps")
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
HUB_PROBE_TIMEOUT_S = 3.0  # offline, huggingface_hub's own retries take ~26 s to give up


@dataclass(frozen=True)
class LoadedModel:
    """A model ready to trace. Shared read-only between requests: frozen, every
    field (load_ms too) known before it is built.

    `lock` serialises timed passes: one forward pass at a time per model, so one
    visitor's pass never runs inside another's measured time. It does not guard
    tokens: each request has its own cache, so answers are the same without it.
    """

    model: torch.nn.Module
    tokenizer: object
    info: ModelInfo
    path: str
    load_ms: float
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    # Which attention kernel each pass ran (engine/attention.py), and preallocated caches for the
    # static, graph and compiled modes (engine/runners.py). Both change as the model runs; neither changes a token.
    kernels: KernelLog = field(default_factory=KernelLog, repr=False)
    runners: RunnerPool = field(default_factory=RunnerPool, repr=False)

    @property
    def model_id(self) -> str:
        return self.info.model_id

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device


def set_num_threads(num_threads: int | None = None) -> int:
    """Pin torch's CPU threads: `num_threads`, else the operator's PREFILL_DECODE_THREADS, else half
    the cores, at most 4 (engine.config.default_threads says why: more threads made a small
    Decode step about 50x slower on a busy 2-core machine).
    """
    if num_threads is None:
        num_threads = EngineSettings.from_env().num_threads
    torch.set_num_threads(num_threads)
    return num_threads


def resolve_device(device: str = "auto") -> torch.device:
    """auto picks cuda, then mps, then cpu. An explicit device must exist."""
    if device not in DEVICES:
        raise ModelLoadError("device_unavailable", f"unknown device {device!r}; use one of {', '.join(DEVICES)}",
                             device=device)
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


def check_model_folder(path: Path, within: Path | None = None) -> None:
    """Refuse folders that are not a safetensors causal-LM checkpoint, and, given
    `within`, any folder or file in it that resolves outside `within` (symlinks)."""
    if within is not None:
        _check_inside(path, within)
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


def _check_inside(path: Path, within: Path) -> None:
    """`path` and the files directly in it must resolve to places inside `within`."""
    root = within.resolve()
    for entry in [path, *(path.iterdir() if path.is_dir() else ())]:
        target = entry.resolve()
        if root not in target.parents:
            raise ModelLoadError(
                "model_not_found", f"refusing {entry}: it resolves to {target}, outside {root}", path=str(path),
            )


def hub_id_for(path: str | Path | None) -> str | None:
    """The hub id `path` names, when it looks like one (`org/name`) and no local folder has that name."""
    if path is None or str(path) == DEFAULT_MODEL_ID or Path(path).expanduser().exists():
        return None
    return str(path) if _HUB_ID.match(str(path)) else None


def hub_reachable(timeout_s: float = HUB_PROBE_TIMEOUT_S) -> bool:
    """One HEAD request to the hub, given at most `timeout_s` (DNS included). False when
    HF_HUB_OFFLINE is set. Any HTTP answer counts: the network is there."""
    if is_offline_mode():
        return False
    answered: list[bool] = []

    def probe() -> None:
        try:
            urllib.request.urlopen(urllib.request.Request(constants.ENDPOINT, method="HEAD"), timeout=timeout_s)
            answered.append(True)
        except urllib.error.HTTPError:
            answered.append(True)
        except (OSError, ValueError):
            answered.append(False)

    worker = threading.Thread(target=probe, daemon=True)  # a hung DNS lookup ignores urlopen's timeout
    worker.start()
    worker.join(timeout_s)
    return bool(answered and answered[0])


def _locate(path: str | Path | None, allow_hub: bool, within: Path | None) -> tuple[str, str, bool]:
    """(source for from_pretrained, model id for traces, local_files_only)."""
    name = presets.preset_name(path)
    if name is not None:  # built in code: nothing on disk to check, nothing to fetch
        return str(path), presets.get_preset(name).model_id, True
    if path is None or str(path) == DEFAULT_MODEL_ID:
        check_model_folder(DEFAULT_MODEL_DIR)
        return str(DEFAULT_MODEL_DIR), DEFAULT_MODEL_ID, True
    hub_id = hub_id_for(path) if allow_hub and within is None else None
    if hub_id:  # offline: only the local hub cache, so the failure takes seconds, not retries
        return hub_id, hub_id, not hub_reachable()
    folder = Path(path).expanduser()
    check_model_folder(folder, within)
    return str(folder.resolve()), folder.resolve().name, True


def load_model(
    path: str | Path | None = None,
    *,
    device: str = "auto",
    dtype: str = "auto",
    num_threads: int | None = None,
    warmup: bool = True,
    allow_hub: bool = False,
    within: Path | None = None,
    max_context: int = presets.DEFAULT_CONTEXT,
) -> LoadedModel:
    """Load tokenizer + model, move to device/dtype, run one warm-up pass.

    `path`: None (the embedded default), a local folder, or, only with
    `allow_hub=True`, a hub id that is not a local folder. `within`: refuse a
    folder that resolves outside this one (the app's models folder).
    `path` may also be "preset:NAME": a published shape with random weights, refused
    before allocation unless it and a KV cache of `max_context` positions fit.
    """
    start = time.perf_counter()
    hf_logging.disable_progress_bar()  # no "Loading weights" bars in a CLI table or a server log
    set_num_threads(num_threads)
    source, model_id, local_only = _locate(path, allow_hub, within)
    dev = resolve_device(device)
    torch_dtype = resolve_dtype(dtype, dev)
    kwargs = dict(local_files_only=local_only, trust_remote_code=False)
    preset = presets.preset_name(source)
    try:
        if preset is not None:  # the default model's tokenizer: its ids fit every preset's vocabulary
            config, model = presets.build_model(preset, dev, torch_dtype, max_context)
            tokenizer = AutoTokenizer.from_pretrained(str(DEFAULT_MODEL_DIR), **kwargs)
        else:
            config = AutoConfig.from_pretrained(source, **kwargs)
            tokenizer = AutoTokenizer.from_pretrained(source, **kwargs)
            model = AutoModelForCausalLM.from_pretrained(source, dtype=torch_dtype, use_safetensors=True, **kwargs)
    except ModelLoadError:
        raise  # already says what went wrong (a preset too large for this device)
    except (OSError, ValueError, KeyError, RuntimeError) as err:  # RuntimeError: out of memory too
        reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        if source == hub_id_for(path) and local_only:
            reason = f"the Hugging Face Hub cannot be reached (offline?) and it is not in the local cache ({reason})"
        raise ModelLoadError("model_load_failed", f"could not load {path}: {reason}", path=str(path),
                             reason=reason) from err
    model.to(dev).eval()
    info = dataclasses.replace(describe(model, config, model_id, torch_dtype, dev), random_weights=preset is not None)
    draft = LoadedModel(model=model, tokenizer=tokenizer, info=info, path=source, load_ms=0.0,
                        kernels=attention.install(model))
    if warmup:
        _warm_up(draft)  # the draft is never shared; the returned copy has the real load time
    return dataclasses.replace(draft, load_ms=(time.perf_counter() - start) * 1e3)


def describe(model, config, model_id: str, dtype: torch.dtype, device: torch.device) -> ModelInfo:
    """The numbers a learner needs to explain the KV cache: layers, heads, head_dim, window.

    Each number comes from a config field that exists; a config that lacks one
    raises ModelLoadError naming the fields tried, instead of guessing a shape.
    """
    fields = ConfigReader.of(config, model_id, failure="could not load")
    num_layers = fields.required("num_hidden_layers", "n_layer", "num_layers")
    num_heads = fields.required("num_attention_heads", "n_head", "num_heads")
    hidden = fields.required("hidden_size", "n_embd", "d_model")
    window, num_sliding_layers = fields.sliding_layers(num_layers)
    return ModelInfo(
        model_id=model_id,
        architecture=(getattr(config, "architectures", None) or [type(model).__name__])[0],
        num_layers=num_layers,
        num_heads=num_heads,
        num_kv_heads=fields.num_kv_heads(num_heads),
        head_dim=fields.head_dim(hidden, num_heads),
        hidden_size=hidden,
        vocab_size=fields.required("vocab_size"),
        max_positions=fields.required("max_position_embeddings", "n_positions", "n_ctx", "seq_length"),
        num_params=sum(p.numel() for p in model.parameters()),
        dtype=str(dtype).removeprefix("torch."),
        bytes_per_element=torch.empty((), dtype=dtype).element_size(),
        device=device.type,
        sliding_window=window,
        num_sliding_layers=num_sliding_layers,
    )


def _warm_up(loaded: LoadedModel) -> None:
    """One small prefill + decode step so the first real request is not timed cold (kernels chosen,
    allocator warmed): on an eager runner, as a request's default mode runs, choosing greedily."""
    ids = prompt_token_ids(loaded.tokenizer, "warm up") or [0]
    runner = EagerRunner(loaded.model, loaded.kernels)
    with loaded.lock, torch.inference_mode():
        token = int(runner.prefill(ids)[0].argmax())
        runner.take_kernel()
        runner.decode(token, len(ids))
        runner.take_kernel()

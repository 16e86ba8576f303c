"""Load a causal language model for tracing: the embedded default, a local folder,
or a real-size shape with random weights ("preset:NAME", engine/runtime/presets.py).

Safety rules, because a classroom server loads folders it did not make:
only safetensors weights (pickle checkpoints can run code when loaded), never
remote code, never a network fetch unless the caller allows one (`allow_hub=True`,
the CLI only) and names a hub id that is not a local folder; a fetch has one
deadline for the whole download (engine.contract.limits.HUB_FETCH_TIMEOUT_S). A caller that
lists its own folders (the app) passes `within=`, and a folder or file that
resolves outside it (a symlink pointing elsewhere) is refused. Without `within`,
every file loading reads (the folder's entries, the shards a safetensors index
names) must resolve inside the chosen folder itself (a hub cache snapshot: its
repository's cache, where the snapshot's links point). A refusal names the entry,
never where it points.

Sizes first (engine.contract.limits): the config.json's declared shape is checked against
the limits and its weights against the device's free memory, and every safetensors
header against its file, before one weight is allocated.
"""

from __future__ import annotations

import dataclasses
import re
import threading
from pathlib import PurePosixPath
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import torch
from huggingface_hub import constants, is_offline_mode, snapshot_download
from huggingface_hub import utils as hub_utils
from safetensors import SafetensorError

from engine.contract import limits
from engine.contract.config import EngineSettings
from engine.contract.cost import ModelShape
from engine.contract.errors import InputError, LimitError, ModelLoadError
from engine.contract.prompts import prompt_token_ids
from engine.contract.shape import ConfigReader, declared_params
from engine.contract.trace import ModelInfo
from engine.contract.weights import DENSE_DTYPES, PACKED_FORMATS, check_format
from engine.runtime import attention, hf, presets
from engine.runtime.attention import KernelLog
from engine.runtime.prefix_store import PrefixStore
from engine.runtime.runners import EagerRunner, RunnerPool
from engine.runtime.weights import DENSE_KERNEL, held_bytes, quantize_model

DEFAULT_MODEL_DIR = Path(__file__).resolve().parents[2] / "assets" / "default_model"
DEFAULT_MODEL_ID = "default"
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
DENSE_NAMES = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}  # ModelInfo.weight_format of a dense model
DEVICES = ("auto", "cpu", "cuda", "mps")
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
HUB_PROBE_TIMEOUT_S = 3.0  # offline, huggingface_hub's own retries take ~26 s to give up
# What a hub fetch downloads: configs, tokenizers and safetensors weights, never pickle checkpoints
HUB_FILES = ("*.json", "*.safetensors", "*.model", "*.txt", "*.tiktoken", "tokenizer*")


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
    # Which attention kernel each pass ran (engine/runtime/attention.py), and preallocated caches for the
    # static, graph and compiled modes (engine/runtime/runners.py). Both change as the model runs; neither
    # changes a token.
    kernels: KernelLog = field(default_factory=KernelLog, repr=False)
    runners: RunnerPool = field(default_factory=RunnerPool, repr=False)
    # Visitors' last runs' KV caches, for a Prefill that starts from a kept prefix (GenerationConfig.prefix_cache;
    # engine/runtime/prefix_store.py). Empty until a run asks for it; never changes a token.
    prefixes: PrefixStore = field(default_factory=PrefixStore, repr=False)

    @property
    def model_id(self) -> str:
        return self.info.model_id

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device


def set_num_threads(num_threads: int | None = None) -> int:
    """Pin torch's CPU threads: `num_threads`, else the operator's PREFILL_DECODE_THREADS, else half
    the cores, at most 4 (engine.contract.config.default_threads says why: more threads made a small
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
    """Refuse folders that are not a safetensors causal-LM checkpoint, and any folder or file loading
    would read that resolves outside `within` (the app's models folder) or, without it, outside the
    folder itself (confinement_root); every safetensors header is checked against its file."""
    if within is not None:
        _check_inside(path, within.resolve(), "the models folder")
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
    root = within.resolve() if within is not None else confinement_root(path)
    _check_inside(path, root, "the models folder" if within is not None else "the model folder")
    for shard in {*path.glob("*.safetensors"), *index_shards(path, root)}:
        check_safetensors(shard, path)


def confinement_root(folder: Path) -> Path:
    """Where a folder's files may resolve to: the folder itself; for a hub cache snapshot
    (models--org--name/snapshots/REV, whose files link to ../../blobs), that repository's cache."""
    resolved = folder.resolve()
    return resolved.parent.parent if resolved.parent.name == "snapshots" else resolved


def _check_inside(path: Path, root: Path, what: str) -> None:
    """`path` and the entries directly in it must resolve inside `root` (the folder may be `root` itself
    only when it is the model folder); the refusal names the entry, not its target."""
    for entry in [path, *(path.iterdir() if path.is_dir() else ())]:
        target = entry.resolve()
        if root not in target.parents and not (target == root and entry == path and what == "the model folder"):
            raise ModelLoadError("model_not_found", f"refusing {entry.name or entry}: it resolves outside {what}",
                                 path=str(path))


def index_shards(folder: Path, root: Path) -> list[Path]:
    """The weight files every *.safetensors.index.json names, each a plain relative name that resolves to
    an existing file inside `root`; else ModelLoadError("not_a_model") naming the entry as written."""
    shards = []
    for index in folder.glob("*.safetensors.index.json"):
        if index.stat().st_size > limits.MAX_INDEX_BYTES:
            limits.check_count(index.name + " (bytes)", index.stat().st_size, limits.MAX_INDEX_BYTES)
        try:
            weight_map = limits.load_json(index.read_text(encoding="utf-8")).get("weight_map") or {}
        except (ValueError, AttributeError, OSError):  # JSONDecodeError, a LimitError, not an object
            raise ModelLoadError("not_a_model", f"{index.name} is not a readable index", path=str(folder)) from None
        for name in {str(v) for v in (weight_map.values() if isinstance(weight_map, dict) else ())}:
            shards.append(_shard(folder, root, index.name, name))
    return shards


def _shard(folder: Path, root: Path, index_name: str, name: str) -> Path:
    parts = PurePosixPath(name)
    target = (folder / name).resolve()
    if not name or parts.is_absolute() or ".." in parts.parts or root not in target.parents:
        raise ModelLoadError("not_a_model", f"{index_name} names {name[:80]!r}, outside the model folder",
                             path=str(folder))
    if not target.is_file() or not name.endswith(".safetensors"):
        raise ModelLoadError("not_a_model", f"{index_name} names {parts.name[:80]!r}, which is not a safetensors "
                             "file in the folder", path=str(folder))
    return target


def check_safetensors(path: Path, folder: Path) -> None:
    """A safetensors file's header (8 bytes of length, then JSON) must fit in the file, parse within
    engine.contract.limits, and place every tensor inside the file: a corrupt file is one ModelLoadError."""
    size = path.stat().st_size
    with path.open("rb") as f:
        head = f.read(8)
        length = int.from_bytes(head, "little") if len(head) == 8 else -1
        why = "too short" if length < 0 else "its header is larger than the file" if length > size - 8 else \
            "its header is over the format's limit" if length > limits.MAX_SAFETENSORS_HEADER else ""
        try:
            header = {} if why else limits.load_json(f.read(length).decode("utf-8"))
        except (ValueError, UnicodeDecodeError):  # JSONDecodeError or a LimitError: a header no writer makes
            why = "its header is not JSON"
    why = why or _tensor_problem(header, size - 8 - max(length, 0))
    if why:
        raise ModelLoadError("model_load_failed", f"{path.name} is not a valid safetensors file: {why}",
                             path=str(folder), reason=f"{path.name}: {why}")


def _tensor_problem(header, data_bytes: int) -> str:
    if not isinstance(header, dict):
        return "its header is not an object"
    for name, tensor in header.items():
        if name == "__metadata__":
            continue
        offsets = tensor.get("data_offsets") if isinstance(tensor, dict) else None
        if not (isinstance(offsets, list) and len(offsets) == 2 and all(isinstance(o, int) for o in offsets)
                and 0 <= offsets[0] <= offsets[1] <= data_bytes):
            return f"tensor {str(name)[:60]!r} lies outside the file"
    return ""


def read_config(folder: Path, model_id: str) -> dict:
    """A folder's config.json as written, read bounded (size, depth, number lengths: engine.contract.limits)."""
    config_path = folder / "config.json"
    limits.check_count("config.json (bytes)", config_path.stat().st_size, limits.MAX_CONFIG_BYTES)
    try:
        config = limits.load_json(config_path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as err:
        if isinstance(err, LimitError):
            raise
        raise ModelLoadError("not_a_model", f"config.json of {model_id} is not JSON", path=str(folder)) from None
    if not isinstance(config, dict):
        raise ModelLoadError("not_a_model", f"config.json of {model_id} is not an object", path=str(folder))
    return config


def check_declared_shape(folder: Path, model_id: str, device: torch.device, dtype: torch.dtype) -> None:
    """The shape config.json declares, within engine.contract.limits, and its weights within MEMORY_FRACTION of the
    device's free memory: refused (LimitError) before transformers allocates anything from it."""
    need = declared_params(read_config(folder, model_id), model_id) * torch.empty((), dtype=dtype).element_size()
    limits.check_bytes("the model's weights", need, presets.available_memory_bytes(device), limits.MEMORY_FRACTION)


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


def fetch_from_hub(hub_id: str, timeout_s: float = limits.HUB_FETCH_TIMEOUT_S) -> Path:
    """The local folder of a hub model's configs, tokenizer and safetensors weights (HUB_FILES): downloaded,
    or, when the hub does not answer a short probe, taken from the local cache only. The whole fetch has
    `timeout_s`: a hub that answers and then stalls costs that, never forever (the download's thread is
    left behind, a daemon)."""
    local_only = not hub_reachable()  # offline: only the local hub cache, so the failure takes seconds
    done: list = []

    def fetch() -> None:
        try:
            done.append(Path(snapshot_download(hub_id, allow_patterns=list(HUB_FILES), local_files_only=local_only)))
        except Exception as err:  # noqa: BLE001 - any failure of the download is reported in the caller's thread
            done.append(err)

    hub_utils.disable_progress_bars()
    worker = threading.Thread(target=fetch, daemon=True)
    worker.start()
    worker.join(timeout_s)
    if done and isinstance(done[0], Path):
        return done[0]
    if not done:
        reason = f"the Hugging Face Hub did not finish sending it within {timeout_s:g} s"
    else:
        reason = str(done[0]).strip().splitlines()[0] if str(done[0]).strip() else type(done[0]).__name__
        if local_only:
            reason = f"the Hugging Face Hub cannot be reached (offline?) and it is not in the local cache ({reason})"
    raise ModelLoadError("model_load_failed", f"could not load {hub_id}: {reason}", path=hub_id, reason=reason)


def _locate(path: str | Path | None, allow_hub: bool, within: Path | None, hub_timeout_s: float) -> tuple[str, str]:
    """(a local folder or preset for from_pretrained, model id for traces); a hub id is fetched first."""
    name = presets.preset_name(path)
    if name is not None:  # built in code: nothing on disk to check, nothing to fetch
        return str(path), presets.get_preset(name).model_id
    if path is None or str(path) == DEFAULT_MODEL_ID:
        check_model_folder(DEFAULT_MODEL_DIR)
        return str(DEFAULT_MODEL_DIR), DEFAULT_MODEL_ID
    hub_id = hub_id_for(path) if allow_hub and within is None else None
    if hub_id:
        folder = fetch_from_hub(hub_id, hub_timeout_s)
        check_model_folder(folder)
        return str(folder), hub_id
    folder = Path(path).expanduser()
    check_model_folder(folder, within)
    return str(folder.resolve()), folder.resolve().name


def load_tokenizer(path: str | Path = DEFAULT_MODEL_DIR):
    """The tokenizer of a local model folder (the embedded model's by default), no weights loaded."""
    return hf.pretrained_tokenizer(str(path), local_files_only=True, trust_remote_code=False)


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
    hub_timeout_s: float = limits.HUB_FETCH_TIMEOUT_S,
    weights: str | None = None,
    group_size: int | None = None,
) -> LoadedModel:
    """Load tokenizer + model, move to device/dtype, run one warm-up pass.

    `path`: None (the embedded default), a local folder, or, only with
    `allow_hub=True`, a hub id that is not a local folder (fetched within `hub_timeout_s`).
    `within`: refuse a folder that resolves outside this one (the app's models folder).
    `path` may also be "preset:NAME": a published shape with random weights, refused
    before allocation unless it and a KV cache of `max_context` positions fit. A folder's
    declared shape is checked first (check_declared_shape).
    `weights`: None (dense, in `dtype`), "fp32" / "bf16" (dense, that dtype) or "int8" / "int4" (packed
    weight-only, the rest of the model in `dtype`; `group_size` for int4): engine/runtime/weights.py.
    """
    start = time.perf_counter()
    group = check_format(weights, group_size) if weights is not None else 0
    dtype = dense_dtype(weights, dtype)
    hf.quiet_progress()  # no "Loading weights" bars in a CLI table or a server log
    set_num_threads(num_threads)
    source, model_id = _locate(path, allow_hub, within, hub_timeout_s)
    dev = resolve_device(device)
    torch_dtype = resolve_dtype(dtype, dev)
    kwargs = dict(local_files_only=True, trust_remote_code=False)  # a hub model was fetched by _locate
    preset = presets.preset_name(source)
    if preset is None:
        check_declared_shape(Path(source), model_id, dev, torch_dtype)
    try:
        if preset is not None:  # the default model's tokenizer: its ids fit every preset's vocabulary
            config, model = presets.build_model(preset, dev, torch_dtype, max_context)
            tokenizer = hf.pretrained_tokenizer(str(DEFAULT_MODEL_DIR), **kwargs)
        else:
            config = hf.pretrained_config(source, **kwargs)
            tokenizer = hf.pretrained_tokenizer(source, **kwargs)
            model = hf.load_pretrained(source, dtype=torch_dtype, use_safetensors=True, **kwargs)
        model.to(dev).eval()
        info = describe(model, config, model_id, torch_dtype, dev)
    except ModelLoadError:
        raise  # already says what went wrong (a preset too large for this device)
    except (OSError, ValueError, KeyError, RuntimeError, SafetensorError) as err:  # RuntimeError: out of memory too
        reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ModelLoadError("model_load_failed", f"could not load {path}: {reason}", path=str(path),
                             reason=reason) from err
    info = hold_weights(model, weights, group, dataclasses.replace(info, random_weights=preset is not None))
    draft = LoadedModel(model=model, tokenizer=tokenizer, info=info, path=source, load_ms=0.0,
                        kernels=attention.install(model))
    if warmup:
        _warm_up(draft)  # the draft is never shared; the returned copy has the real load time
    return dataclasses.replace(draft, load_ms=(time.perf_counter() - start) * 1e3)


def dense_dtype(weights: str | None, dtype: str) -> str:
    """The dtype to load in: a dense format's own ("bf16" -> "bfloat16"); `dtype` for the others. A dense
    format beside another explicit dtype is refused (InputError "weights_dtype")."""
    if weights not in DENSE_DTYPES:
        return dtype
    if dtype not in ("auto", DENSE_DTYPES[weights]):
        raise InputError("weights_dtype", f"{weights} weights are {DENSE_DTYPES[weights]}, not {dtype}; "
                         "drop the dtype or pick int8 / int4", weights=weights, dtype=dtype)
    return DENSE_DTYPES[weights]


def hold_weights(model, weights: str | None, group_size: int, info: ModelInfo) -> ModelInfo:
    """Pack the model's Linear layers when `weights` is int8 / int4 (in place); the info says how its
    weights are held now: the format, the group size, the bytes and the matmul kernel."""
    if weights in PACKED_FORMATS:
        report = quantize_model(model, weights, group_size, model_id=info.model_id)
        return dataclasses.replace(info, weight_format=weights, weight_group_size=group_size,
                                   weight_bytes=report.weight_bytes, weight_kernel=report.kernel)
    return dataclasses.replace(info, weight_format=DENSE_NAMES.get(info.dtype, ""), weight_bytes=held_bytes(model),
                               weight_kernel=DENSE_KERNEL)


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


def load_shape(folder: str | Path, name: str | None = None) -> ModelShape:
    """The shape from a folder's config.json, through AutoConfig (no weights, never remote code)."""
    path = Path(folder).expanduser()
    if not (path / "config.json").is_file():
        what = "model folder not found" if not path.exists() else "not a model folder (no config.json)"
        raise ModelLoadError("model_not_found", f"{what}: {path}", path=str(path))
    try:
        config = hf.pretrained_config(str(path), trust_remote_code=False)
    except (ValueError, OSError, KeyError) as err:
        reason = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise ModelLoadError("model_load_failed", f"could not read {path / 'config.json'}: {reason}",
                             path=str(path), reason=reason) from None
    return ModelShape.from_config(config, name=name or path.name)

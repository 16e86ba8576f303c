"""The models a worker holds: which a client may name, how each is loaded, and its warm-up.

A client names a model by a ModelRef (choice, device, dtype, weights format, group size), never by a path: the choice is
"default" (the embedded model), "preset:NAME" (a real-size shape with random weights, when the
operator allows presets) or the name of a folder directly inside the worker's models folder
(PREFILL_DECODE_MODELS_DIR, read where the worker runs). Anything else is refused with
ModelLoadError("model_not_found"), so a forged name cannot reach another path of the machine.

Loaded models are kept per ModelRef (int4's group size as load_model resolves it, so "int4" and
"int4 g64" are one model; the oldest dropped past `max_models`) and warmed before
their first measured run: the tokenizer on both of the lesson's languages, and the model's
kernels at a ladder of prompt lengths up to the longest prompt the server allows.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from engine.contract import config
from engine.contract.errors import InputError, ModelLoadError
from engine.contract.prompts import LESSON_PROMPTS, extend_prompt
from engine.contract.results import PRESET_PREFIX
from engine.contract.weights import check_format
from engine.contract.worker.protocol import ModelRef
from engine.runtime import presets
from engine.runtime.generation import GenerationConfig, generate
from engine.runtime.model import DEFAULT_MODEL_ID, LoadedModel, load_model, resolve_device, resolve_dtype

WARM_LENGTHS = (4, 16, 64, 256, 1024)  # prompt lengths the lesson's slider and the labs meet
WARM_PASS_BUDGET_S = 1.0  # a model this slow at one length is not warmed at longer ones
# The lesson's running examples, Chinese and English (both tokenizer paths), stretched to each length
# with the lesson's own filler, as the page's slider stretches them.
WARM_PROMPTS = tuple(LESSON_PROMPTS.values())


@dataclass(frozen=True)
class WorkerSettings:
    """What the operator of this worker allows (read where the worker runs)."""

    models_dir: Path | None = None
    presets: bool = True
    max_prompt_tokens: int = config.MAX_PROMPT_TOKENS.default  # the warm-up's longest prompt
    max_prompt_chars: int = config.MAX_PROMPT_CHARS.default  # (with the tokens) the worker's prompt cap
    max_models: int = 4

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> WorkerSettings:
        server = config.settings_from_env(environ)
        return cls(models_dir=server.models_dir, presets=server.presets,
                   max_prompt_tokens=server.limits.max_prompt_tokens,
                   max_prompt_chars=server.limits.max_prompt_chars)


def folder_choices(models_dir: Path | None) -> list[str]:
    """The names of the folders directly inside `models_dir` whose real place is inside it
    (a symlink to elsewhere is left out); hidden names and the reserved ones excluded."""
    if models_dir is None or not models_dir.is_dir():
        return []
    try:
        root = models_dir.resolve()
        entries = sorted(models_dir.iterdir())
    except OSError:
        return []
    return [p.name for p in entries if not p.name.startswith(".") and p.name != DEFAULT_MODEL_ID
            and not p.name.startswith(PRESET_PREFIX) and root in p.resolve().parents and p.is_dir()]


def model_choices(settings: WorkerSettings, device: str, dtype: str) -> tuple[str, ...]:
    """"default", the folders, then the presets this device could load now (none when presets are off)."""
    offered: list[str] = []
    if settings.presets:
        dev = resolve_device(device)
        offered = presets.presets_that_fit(dev, resolve_dtype(dtype, dev))
    return (DEFAULT_MODEL_ID, *folder_choices(settings.models_dir), *offered)


def resolve_choice(choice: str, settings: WorkerSettings) -> tuple[str | None, Path | None]:
    """(what load_model loads, the folder it must stay inside) for a listed choice; refuses the rest."""
    if choice == DEFAULT_MODEL_ID:
        return None, None
    name = presets.preset_name(choice)
    if name is not None and settings.presets and name in presets.PRESETS:
        return choice, None  # load_model refuses a preset this device cannot hold
    if name is None and choice in folder_choices(settings.models_dir):
        return str(settings.models_dir / choice), settings.models_dir
    raise ModelLoadError("model_not_found", f"{choice!r} is not a model this worker offers", path=choice)


class ModelCache:
    """Loaded, warmed models per ModelRef. `load` runs only on the worker's runner thread (a load
    is measured work: it must not run beside another visitor's pass); `loaded` may be read anywhere."""

    def __init__(self, settings: WorkerSettings) -> None:
        self.settings = settings
        self._models: OrderedDict[ModelRef, LoadedModel] = OrderedDict()

    def loaded(self, ref: ModelRef) -> LoadedModel | None:
        try:
            return self._models.get(cache_key(ref))
        except InputError:
            return None  # a format that cannot load: load() says why, in words

    def load(self, ref: ModelRef) -> LoadedModel:
        """The model for `ref`, loaded and warmed on first use. A weights format load_model refuses comes
        back as its InputError ("weights_unknown", "weights_group_size", "weights_dtype", ...)."""
        ref = cache_key(ref)
        lm = self._models.get(ref)
        if lm is not None:
            return lm
        path, within = resolve_choice(ref.choice, self.settings)
        lm = load_model(path, device=ref.device, dtype=ref.dtype, allow_hub=False, within=within,
                        weights=ref.load_weights, group_size=ref.load_group_size)
        warm_up(lm, self.settings.max_prompt_tokens)
        self._models[ref] = lm
        while len(self._models) > self.settings.max_models:
            self._models.popitem(last=False)
        return lm


def cache_key(ref: ModelRef) -> ModelRef:
    """`ref` with int4's group size filled in as load_model fills it (InputError for a format it refuses)."""
    if not ref.weights:
        if ref.group_size:
            check_format("fp32", ref.group_size)  # a group size without a format: the format's refusal
        return ref
    return dataclasses.replace(ref, group_size=check_format(ref.weights, ref.load_group_size))


def warm_up(lm: LoadedModel, max_prompt_tokens: int) -> tuple[int, ...]:
    """Run each of the lesson's languages through the whole traced path (tokenize, Prefill, two
    Decode steps, token pieces) at each warm length that fits; returns the lengths warmed.

    A cold first tokenizer call cost 55.7 ms of a 65 ms TTFT, and each new prompt length's first
    Prefill runs slower kernels' set-up: neither belongs in a visitor's first measurement."""
    limit = min(max_prompt_tokens, lm.info.max_positions - 4)
    warmed = []
    for length in (n for n in WARM_LENGTHS if n <= limit):
        started = time.perf_counter()
        for text in WARM_PROMPTS:
            generate(lm, extend_prompt(lm.tokenizer, text, length), GenerationConfig(max_new_tokens=3,
                                                                                     ignore_eos=True))
        warmed.append(length)
        if time.perf_counter() - started > WARM_PASS_BUDGET_S:
            break
    return tuple(warmed)

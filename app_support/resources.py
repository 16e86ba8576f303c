"""What the page caches: the model (one per process) and data derived from it.

- `get_model`: `st.cache_resource`, loaded and warmed up once per process and
  shared by every visitor; never mutated (the engine's `lm.lock` serialises
  forward passes).
- traces, token splits and SVGs: `st.cache_data`, keyed by plain arguments
  (strings and numbers), so repeated demos cost nothing.
- `parsed_trace`: a trace's JSON parsed once (`st.cache_resource`: the same frozen
  object to every caller), so a page run never parses one run twice.
"""

from __future__ import annotations

import logging

import streamlit as st

from engine.config import ServerSettings, settings_from_env
from engine.trace import RequestTrace
from lesson.spread import headline
from lesson.views import PRESET_PREFIX, resolve_model_choice

log = logging.getLogger("prefill_decode.app")


@st.cache_resource(show_spinner=False, max_entries=64)
def parsed_trace(trace_json: str) -> RequestTrace:
    """The trace a JSON string holds, parsed once per string and shared: every part of a page (and
    every visitor) that shows the same run reads the same frozen RequestTrace. Never mutate it."""
    return RequestTrace.from_json(trace_json)


@st.cache_resource(show_spinner=False)
def server_settings() -> ServerSettings:
    """Operator settings, read once per process from the environment."""
    return settings_from_env()


@st.cache_resource(show_spinner=False, max_entries=4)
def get_model(model_choice: str, device: str, dtype: str):
    """Load (and warm up) a model once per process. Raises EngineError on bad folders."""
    from engine import load_model  # late: keeps torch out of the import of this module

    models_dir = server_settings().models_dir
    path = resolve_model_choice(model_choice, models_dir, preset_choices(device, dtype))
    log.info("loading model %r from %s on %s/%s", model_choice, path or "<default>", device, dtype)
    # Never the network, never a folder (or a file in it) that a symlink takes outside models_dir.
    folder = path is not None and not path.startswith(PRESET_PREFIX)
    return load_model(path, device=device, dtype=dtype, allow_hub=False, within=models_dir if folder else None)


@st.cache_resource(show_spinner=False)
def preset_choices(device: str, dtype: str) -> tuple[str, ...]:
    """The real-size presets (random weights) this machine could load now, as picker choices;
    none when the operator set PREFILL_DECODE_PRESETS=0. Checked once per process."""
    if not server_settings().presets:
        return ()
    from engine.model import resolve_device, resolve_dtype
    from engine.presets import presets_that_fit

    try:
        dev = resolve_device(device)
        return tuple(presets_that_fit(dev, resolve_dtype(dtype, dev)))
    except Exception as err:  # noqa: BLE001 - no presets is a safe answer; the log says why
        log.warning("presets not offered: %s", err)
        return ()


@st.cache_data(show_spinner=False, max_entries=64)
def finished_runs_json(
    model_choice: str, device: str, dtype: str, prompt: str, max_new_tokens: int,
    temperature: float, top_k: int, top_p: float, seed: int, max_prompt_tokens: int, ignore_eos: bool = False,
    repeats: int = 1,
) -> tuple[str, str]:
    """A whole request run `repeats` times (engine.repeats; the first view, before any Run): run 1's
    trace as JSON, and the runs' headline numbers (lesson.spread.Headline JSON: medians and ranges)."""
    from engine import GenerationConfig
    from engine.repeats import measure

    lm = get_model(model_choice, device, dtype)
    cfg = GenerationConfig(max_new_tokens=max_new_tokens, temperature=temperature, top_k=top_k, top_p=top_p,
                           seed=seed, ignore_eos=ignore_eos)
    runs = measure(lm, prompt, cfg, repeats=repeats, max_prompt_tokens=max_prompt_tokens)
    return runs[0].to_json(indent=None), headline(runs).to_json()


@st.cache_data(show_spinner=False, max_entries=256)
def prompt_preview(
    model_choice: str, device: str, dtype: str, prompt: str, target_tokens: int,
) -> tuple[str, tuple[str, ...], int]:
    """(the prompt the model will get, its real token pieces, the typed prompt's token count).

    Counts and pieces are the engine's own (engine.prompts.prompt_token_ids),
    so a tokenizer's BOS shows in the split and counts toward the target.
    A target above the typed prompt's length extends it with filler text
    (engine.prompts.extend_prompt); otherwise the prompt is used as typed.
    """
    from engine.generation import token_pieces
    from engine.prompts import extend_prompt, prompt_token_ids

    tokenizer = get_model(model_choice, device, dtype).tokenizer
    natural = len(prompt_token_ids(tokenizer, prompt)) if prompt.strip() else 0
    extend = prompt.strip() and target_tokens > natural
    effective = extend_prompt(tokenizer, prompt, target_tokens) if extend else prompt
    ids = prompt_token_ids(tokenizer, effective) if effective.strip() else []
    return effective, token_pieces(tokenizer, ids), natural


def figure_style(classroom: bool):
    """The diagrams' style: the default, or classroom mode's (every label at least the page's
    body text at 1280x720, folded to the column's width instead of shrunk: lesson.style)."""
    from lesson.style import DEFAULT_STYLE, classroom_style

    return classroom_style() if classroom else DEFAULT_STYLE


@st.cache_data(show_spinner=False, max_entries=256)
def diagram_svg(name: str, trace_json: str, lang: str, full_json: str | None = None, classroom: bool = False) -> str:
    """One diagram of a trace, as an SVG string. `full_json`: the whole run while the
    classroom steps through it (`trace_json` is then a prefix): axes are fixed to it.
    `classroom`: the classroom style (larger type, folded layouts)."""
    from lesson.diagrams import DIAGRAMS

    full = None if full_json is None else parsed_trace(full_json)
    return DIAGRAMS[name](parsed_trace(trace_json), lang=lang, full=full, style=figure_style(classroom))


@st.cache_data(show_spinner=False, max_entries=256)
def diagram_words(name: str, trace_json: str, lang: str, stamp: str) -> tuple[str, str]:
    """(the diagram's alt text, its download file name without extension)."""
    from lesson.views import download_stem, figure_alt

    trace = parsed_trace(trace_json)
    return figure_alt(name, trace, lang), f"{download_stem(trace, stamp)}_{name}"


@st.cache_data(show_spinner=False, max_entries=512)
def schematic_svg(prompt_len: int, output_len: int, lang: str, classroom: bool = False) -> str:
    """The block sketch for the two sliders; no model involved."""
    from lesson.diagrams import render_blocks_schematic

    return render_blocks_schematic(prompt_len, output_len, lang=lang, style=figure_style(classroom))


def latency_figure(trace_json: str, lang: str, full_json: str | None = None, classroom: bool = False):
    from lesson.charts import latency_figure as make_figure

    full = None if full_json is None else parsed_trace(full_json)
    return make_figure(parsed_trace(trace_json), lang, full=full, classroom=classroom)


# Cache on vs off (engine.compare): keyed by the shown run's model and prompt ids, not by its trace,
# so every run with the same prompt shares one comparison.

@st.cache_data(show_spinner=False, max_entries=16)
def cache_comparison(model_choice: str, device: str, dtype: str, prompt_ids: tuple[int, ...], max_new_tokens: int):
    """The same greedy answer with the KV cache off, then on (engine.compare.CacheComparison)."""
    from engine.compare import compare_cache

    return compare_cache(get_model(model_choice, device, dtype), list(prompt_ids), max_new_tokens)


@st.cache_data(show_spinner=False, max_entries=32)
def cache_compare_svg(model_choice: str, device: str, dtype: str, prompt_ids: tuple[int, ...], max_new_tokens: int,
                      lang: str, classroom: bool = False) -> str:
    """That comparison drawn: per pass, time and FLOPs, off beside on."""
    from lesson.diagrams import render_cache_compare

    comparison = cache_comparison(model_choice, device, dtype, prompt_ids, max_new_tokens)
    model_id = get_model(model_choice, device, dtype).info.model_id
    return render_cache_compare(comparison, lang=lang, model_id=model_id, style=figure_style(classroom))


@st.cache_data(show_spinner=False, max_entries=64)
def decode_attention_svg(model_choice: str, device: str, dtype: str, prompt_ids: tuple[int, ...],
                         output_ids: tuple[int, ...], decode_index: int, lang: str,
                         classroom: bool = False) -> tuple[str, str]:
    """(the attention map of Decode step `decode_index` of that answer, its alt text)."""
    from engine.compare import decode_attention
    from lesson.diagrams import render_attention
    from lesson.views import attention_alt

    lm = get_model(model_choice, device, dtype)
    attention = decode_attention(lm, list(prompt_ids), output_ids, decode_index)
    svg = render_attention(attention, lang=lang, model_id=lm.info.model_id, style=figure_style(classroom))
    return svg, attention_alt(attention, lang)


# The bottleneck lab: the roofs of a device, and the sweeps already measured on this server.

@st.cache_resource(show_spinner=False, max_entries=8)
def device_spec(key: str, device: str):
    """A datasheet (engine.cost.DEVICE_SPECS), or "this": the machine the model runs on, measured
    once per process (a short copy and matmul benchmark, engine.cost.measure_this_machine)."""
    from engine import cost

    if key == "this":
        return cost.measure_this_machine(device)
    return cost.DEVICE_SPECS[key]


def measure_again() -> None:
    """The lab's "measure again" callback: this machine's roofs are benchmarked anew (about a second)
    on the next draw, for every visitor of this process (a busy moment measures them low)."""
    from engine import cost

    cost.measure_this_machine.cache_clear()
    device_spec.clear()


class SweepStore:
    """Finished sweeps as JSON, keyed by (model, device, dtype, kind, points, repeats, context);
    the oldest is dropped past `max_entries`. `lock`: one sweep at a time on this server."""

    def __init__(self, max_entries: int = 24) -> None:
        import threading

        self.results: dict[tuple, str] = {}
        self.lock = threading.Lock()
        self.max_entries = max_entries

    def put(self, key: tuple, sweep_json: str) -> None:
        self.results[key] = sweep_json
        while len(self.results) > self.max_entries:
            self.results.pop(next(iter(self.results)))


@st.cache_resource(show_spinner=False)
def sweep_store() -> SweepStore:
    """Shared by every visitor of this process: a sweep measured once is shown to all."""
    return SweepStore()

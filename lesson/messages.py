"""Every error a visitor can meet, turned into words in the page's language; never a traceback.

Pure: plain values in, a Markdown string out; no Streamlit, so every message is testable alone.
Errors carry a stable `key` and data `params` (engine.contract.errors.KeyedError and its subclasses, or
any object with those two attributes, such as a probe failure read back from JSON). Three pages
meet them, and each says the same key in its own words:

    error_message(err, lang)    the lesson page and the bottleneck lab: a model, a prompt, a setting
                                (and recorded_message: a recorded run file, on any page; worker_message:
                                the engine process that measures, on any page)
    serving_message(err, lang)  the serving lab's runs: caps, workloads, the serving engine
    remote_message(err, lang)   the serving lab's probe of a real server and its vLLM file upload

Whatever a visitor typed or a server sent never becomes markup: on the lesson page a value is
Markdown-escaped (a path cut to its last part: a visitor needs the folder's name, not the
server's layout); in the serving lab it is inline code (`code_span`), which also keeps a URL
from becoming a live link. The engine's own English (`reason`) stays in the server log, except
where a message shows it as technical detail, as code.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from engine.contract.errors import CapError, RemoteError
from engine.contract.interop.errors import CONNECTION_CAUSES

from .formats import escape_markdown
from .text import t

# An input over one of engine.contract.limits' bounds (engine.contract.errors.LimitError), worded as err_<key>
# everywhere; a refused workload line or vLLM file names the same key as its why.
LIMIT_KEYS = ("limit_count", "limit_number", "limit_memory", "limit_json_depth", "limit_json_number",
              "limit_not_finite", "limit_text")
# Engine keys the lesson page words as err_<key> (lesson/text).
ENGINE_ERROR_KEYS = (
    "empty_prompt", "prompt_too_long", "max_new_tokens_range", "sampling_range", "model_not_found",
    "not_a_model", "pickle_weights_only", "model_load_failed", "device_unavailable", "bad_dtype",
    "mode_unknown", "graph_needs_cuda", "prefix_scope", "preset_too_large", "prompt_too_many_chars", *LIMIT_KEYS,
    # the weights' format chosen at load (engine/contract/weights.py, engine/runtime/weights.py)
    "weights_unknown", "weights_group_size", "weights_dtype", "weights_no_kernel", "weights_unsupported",
    # speculative decoding's knobs (engine/contract/results.py, engine/contract/speculative.py)
    "speculative_unknown", "speculative_tokens_range", "prompt_lookup_range", "speculative_mode",
    "speculative_sliding_window", "speculative_draft_missing", "draft_vocabulary", "draft_larger",
)
# The engine worker's keys (engine/contract/worker/errors.py), worded as err_<key> on every page: the process that
# measures could not be reached, refused this server, or stopped (and was started again).
WORKER_ERROR_KEYS = (
    "engine_restarted", "engine_unreachable", "engine_refused", "engine_start", "engine_internal", "engine_busy",
    "engine_no_token", "engine_address", "engine_token_file", "engine_token_short", "protocol_version",
    "protocol_malformed", "run_cancelled", "engine_silent", "engine_stalled", "protocol_too_large",
)
# Keys the serving lab words as sl_err_<key>, with the engine's detail as code.
SERVING_ERROR_KEYS = (
    "never_fits", "prompt_too_long", "serve_timeout", "bad_serve_setting", "empty_prompt", "unknown_scenario",
    "worker_failed", "worker_timeout", "serving_sliding_window",
)
# Probe keys (engine.contract.interop.errors.ProbeError) worded as err_<key> with their data fields.
PROBE_KEYS = ("probe_endpoint", "probe_api_key_env", "probe_unreachable", "probe_model", "probe_http",
              "probe_timeout", "probe_cut", "probe_bad_chunk", "probe_stream_error",
              # a reply over one of the probe's bounds (engine.contract.limits PROBE_*), or a field of a wrong type
              "probe_deadline", "probe_too_many_chunks", "probe_too_big", "probe_line_too_long", "probe_bad_field",
              "probe_bad_count", "probe_chunk_depth", "probe_chunk_number", "probe_chunk_not_finite")


# --- the data inside a message ----------------------------------------------------------

def code_span(value: object) -> str:
    """`value` as Markdown inline code: shown exactly as typed, never a link, never markup.

    Streamlit's Markdown turns a bare http://... into a live link (GFM autolink) even when
    backslash-escaped; inside a code span it is plain text. The fence is one backtick longer than
    any run of backticks in the value, so a typed backtick cannot close it; one line, at most 300
    characters."""
    text = " ".join(str(value).split())[:300] or "∅"
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text[0] == "`" or text[-1] == "`" else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def data_field(value: object) -> str:
    """A message's data: a number as it is, anything else (a key, a URL, a name) as inline code."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{value:g}" if isinstance(value, float) else str(value)
    return code_span(value)


def data_fields(params: Mapping, skip: tuple[str, ...] = ()) -> dict[str, str]:
    """Every param but those in `skip`, each as data_field() shows it."""
    return {k: data_field(v) for k, v in params.items() if k not in skip}


def safe_param(name: str, value: object) -> str:
    """A lesson-page param: Markdown-escaped, at most 200 characters; a `path` cut to its last part."""
    text = str(value)
    if name == "path" and text:
        text = Path(text).name or text
    return escape_markdown(text[:200])


def internal_message(err: BaseException, lang: str) -> str:
    """The words for an error no page has words for: its kind, never its text (that is in the log)."""
    return t(lang, "err_internal", kind=escape_markdown(type(err).__name__))


def _key_and_params(err: object) -> tuple[str | None, Mapping]:
    return getattr(err, "key", None), getattr(err, "params", None) or {}


def _has_text(key: str) -> bool:
    try:
        t("en", key)
    except KeyError:
        return False
    return True


def refusal_reason(params: Mapping, prefix: str, lang: str, skip: tuple[str, ...] = ("why", "reason")) -> str:
    """Why something was refused, in `lang`: the template `prefix + params["why"]` (`prefix + "other"` for
    a why it has no words for), filled with the error's data fields, each a number or inline code;
    never the engine's English (`reason`)."""
    key = f"{prefix}{params.get('why') or 'other'}"
    if params.get("why") in LIMIT_KEYS:
        key = f"err_{params['why']}"
    elif not _has_text(key):
        key = f"{prefix}other"
    return t(lang, key, **data_fields(params, skip=skip))


def workload_reason(params: Mapping, lang: str) -> str:
    """Why a workload was refused (engine.contract.serving.workloads' `why` and data fields), in `lang`; the
    line number is said by the sentence around it."""
    return refusal_reason(params, "sl_wl_why_", lang, skip=("why", "reason", "line"))


def vllm_reason(params: Mapping, lang: str) -> str:
    """Why a vLLM file was refused X, in `lang`."""
    return refusal_reason(params, "sl_vllm_why_", lang)


def technical_detail(err: object) -> str:
    """The raw, untranslated reason behind a failed connection (an OS error), or "" when none."""
    key, params = _key_and_params(err)
    return str(params.get("reason") or "") if key == "probe_unreachable" else ""


# --- the three pages' words ----------------------------------------------------------------

def error_message(err: BaseException, lang: str) -> str:
    """The lesson page's message for any error (a model, a prompt, a setting); never a traceback.

    Engine keys are worded as err_<key>; every value is Markdown-escaped and a path cut to its last
    part; a load failure's raw reason stays in the server log.
    """
    key, raw = _key_and_params(err)
    if key == "recorded_file":
        return recorded_message(err, lang)
    if key in WORKER_ERROR_KEYS:
        return worker_message(err, lang)
    if key in ENGINE_ERROR_KEYS:
        return t(lang, f"err_{key}", **{k: safe_param(k, v) for k, v in raw.items()})
    return internal_message(err, lang)


def worker_message(err: BaseException, lang: str) -> str:
    """What went wrong with the engine worker (engine/contract/worker/errors.py), in `lang`, on any page: a stop
    during this run or before it (engine_restarted's `during_run`), a worker that cannot be reached or
    refused this server, a version mismatch. Only data fields are shown; never a token, never `reason`."""
    key, raw = _key_and_params(err)
    params = {k: safe_param(k, v) for k, v in raw.items() if k not in ("reason", "during_run", "local")}
    if key in ("engine_unreachable", "engine_silent") and raw.get("local"):  # the app's own worker: started again
        return t(lang, f"err_{key}_local", **params)
    if key == "protocol_malformed" and raw.get("why") == "meaning":
        return t(lang, "err_protocol_meaning", **params)
    if key == "engine_restarted":
        params["exit_code"] = safe_param("exit_code", "?" if raw.get("exit_code") is None else raw["exit_code"])
        return t(lang, "err_engine_restarted_run" if raw.get("during_run") else "err_engine_restarted", **params)
    return t(lang, f"err_{key}", **params)


def recorded_message(err: BaseException, lang: str) -> str:
    """Why a recorded run file was refused (engine.contract.recorded.RecordedFileError), in `lang`, on any page.

    The `why` is worded as rec_why_<why> (rec_why_other for one it has no words for); a run's `kind`
    and the `expected` kind or page (lesson, lab, serving) are said in words, other data as numbers
    or inline code, so nothing from the file becomes markup."""
    _, raw = _key_and_params(err)
    params = data_fields(raw, skip=("why", "kind", "expected", "reason"))
    for name in ("kind", "expected"):
        value = str(raw.get(name, ""))
        words = [f"{prefix}{value}" for prefix in ("rec_kind_", "rec_page_") if value and _has_text(prefix + value)]
        params[name] = t(lang, words[0]) if words else data_field(value or "?")
    why = f"rec_why_{raw.get('why')}"
    return t(lang, "err_recorded_file", reason=t(lang, why if _has_text(why) else "rec_why_other", **params))


def serving_message(err: BaseException, lang: str) -> str:
    """The serving lab's message for anything a run can refuse; never a traceback.

    Every data field is a number or inline code (a typed id stays text, never a link); the
    engine's own detail is shown as code."""
    key, raw = _key_and_params(err)
    params = data_fields(raw)
    if key in WORKER_ERROR_KEYS:
        return worker_message(err, lang)
    if isinstance(err, CapError):
        return t(lang, key, **params)
    if key in LIMIT_KEYS:
        return t(lang, f"err_{key}", **params)
    if key == "bad_workload_line":
        return t(lang, "sl_err_bad_workload_line", line=params.get("line", "?"), reason=workload_reason(raw, lang))
    if key == "bad_workload":
        return t(lang, "sl_err_bad_workload", detail=workload_reason(raw, lang))
    if key in SERVING_ERROR_KEYS:
        return t(lang, f"sl_err_{key}", **params, detail=code_span(err))
    return internal_message(err, lang)


def remote_message(err: BaseException, lang: str) -> str:
    """The serving lab's message for a refused probe or vLLM file; never a traceback.

    Every value the user typed or a server sent (a URL, a model name, a server's error text) is
    inline code, so nothing in it becomes a link or markup; an OS error's own words are left to
    technical_detail(). Anything else is worded as a serving run's refusal (serving_message)."""
    key, raw = _key_and_params(err)
    params = data_fields(raw)
    if isinstance(err, RemoteError):
        return t(lang, key, **params)
    if key == "probe_unreachable":
        cause = raw.get("cause") if raw.get("cause") in CONNECTION_CAUSES else "other"
        return t(lang, "sl_err_probe_unreachable", request_id=params.get("request_id", ""),
                 endpoint=params.get("endpoint", ""), cause=t(lang, f"sl_probe_cause_{cause}"))
    if key == "probe_timeout":
        return t(lang, "sl_err_probe_timeout", **params)
    if key == "vllm_result":
        return t(lang, "err_vllm_result", reason=vllm_reason(raw, lang))
    if key in PROBE_KEYS:
        return t(lang, f"err_{key}", **params)
    if key == "bad_probe_setting":
        return t(lang, "sl_err_bad_probe_setting", detail=code_span(err))
    return serving_message(err, lang)

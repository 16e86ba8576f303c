"""The serving lab's view of servers outside this process, part by part.

    probe_panel   "measure a real server": the lab's workload sent to an OpenAI-compatible
                  streaming endpoint by engine.contract.interop.probe.run_probe, timed on the client
    vllm_panel    a `vllm bench serve --save-result --save-detailed` file uploaded and drawn
                  (engine.contract.interop.vllm_import), its summary set against the recomputed percentiles
    perfetto_button  a Chrome Trace Event download (lesson.perfetto) for any serving run

Both runs are "observed from the client: no view inside the server's passes": the page says so
above their Gantt and metric table, and the Gantt's own subtitle says where its times come from.

Server settings: engine.contract.config.ProbeSettings, from PREFILL_DECODE_PROBE, PREFILL_DECODE_PROBE_ALLOW,
PREFILL_DECODE_PROBE_KEY_VARS and PREFILL_DECODE_VLLM_MAX_MB (docs/configuration.md).
A visitor types the NAME of an environment variable, never a key: a text box for a key is a leak.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import asdict
from pathlib import Path

import streamlit as st

from engine.contract.config import ProbeSettings
from engine.contract.errors import RemoteError
from engine.contract.interop.endpoint import APIS, Endpoint, ProbeConfig
from engine.contract.interop.probe import ProbeResult, run_probe
from engine.contract.interop.vllm_import import arrivals_placed, read_vllm_result
from engine.contract.serving.trace import SLO, ServingRun
from lesson.diagrams.serving_gantt import render_serving_gantt
from lesson.formats import escape_markdown
from lesson.messages import code_span, data_field, remote_message, technical_detail
from lesson.perfetto import to_perfetto_json
from lesson.prefix_views import probe_prefix_words
from lesson.serving_views import figure_alt, metric_records
from lesson.text import t

from . import run_store
from .resources import client, figure_style
from .ui import error_boundary, metric_dataframe, plotly_config, svg_figure

log = logging.getLogger("prefill_decode.app")

PROBE_WIDGET_KEYS = ("sl_probe_endpoint", "sl_probe_model", "sl_probe_api", "sl_probe_concurrency",
                     "sl_probe_timeout", "sl_probe_key_env", "sl_probe_ignore_eos")
MAX_TIMEOUT_S = 300


def check_probe_request(endpoint: str, key_env: str, settings: ProbeSettings) -> None:
    """The endpoint parses and its host is allowed; the key's variable is one this server lends.
    Raises ProbeError or RemoteError (engine.contract.errors) otherwise."""
    ep = Endpoint.parse(endpoint)  # ProbeError("probe_endpoint") for anything but http(s)://host
    if not settings.host_allowed(ep.host):
        raise RemoteError("sl_err_probe_host", host=ep.host, hosts=", ".join(settings.allow))
    if key_env and key_env not in settings.key_vars:
        raise RemoteError("sl_err_probe_key_name", name=key_env, names=", ".join(settings.key_vars))


# --- shared: one run observed from the client ----------------------------------------

@st.cache_data(show_spinner=False, max_entries=64)
def perfetto_json(run_json: str, samples_json: str = "[]") -> str:
    return to_perfetto_json(ServingRun.from_json(run_json), json.loads(samples_json))


def perfetto_button(run_json: str, label: str, file_stem: str, key: str, lang: str, samples_json: str = "[]") -> None:
    st.download_button(label, data=perfetto_json(run_json, samples_json), file_name=f"{file_stem}.perfetto.json",
                       mime="application/json", key=key, on_click="ignore", icon=":material/timeline:",
                       help=t(lang, "download_perfetto_help"))


@st.cache_data(show_spinner=False, max_entries=64)
def observed_gantt_svg(run_json: str, lang: str, classroom: bool) -> str:
    return render_serving_gantt(ServingRun.from_json(run_json), lang=lang, style=figure_style(classroom))


def _request_rows(run: ServingRun, lang: str) -> list[dict[str, str]]:
    def ms(v: float | None) -> str:
        return "—" if v is None else f"{v:,.1f}"

    return [{t(lang, "sl_col_request"): r.request_id, t(lang, "sl_col_sent"): ms(r.arrival_ms),
             t(lang, "sl_col_lengths"): f"{r.prompt_len} → {r.num_output_tokens}", "TTFT (ms)": ms(r.ttft_ms),
             "TPOT (ms)": ms(r.tpot_ms), t(lang, "sl_col_max_itl"): ms(max(r.itl_ms) if r.itl_ms else None),
             "E2EL (ms)": ms(r.e2el_ms)} for r in run.requests]


def show_observed_run(lang: str, run: ServingRun, run_json: str, name: str, samples_json: str = "[]") -> None:
    """The note, the metric table, the Gantt and the Perfetto download of a client-observed run."""
    st.info(t(lang, "probe_observed_note"))
    metric_dataframe(metric_records([run], lang))
    classroom = bool(st.session_state.get("classroom"))
    if st.toggle(t(lang, "sl_hover"), key=f"sl_hover_{name}"):  # the same Gantt in plotly, hover per request
        from lesson.charts.serving import serving_gantt_figure
        from lesson.charts.common import classroom_fonts

        st.plotly_chart(classroom_fonts(serving_gantt_figure(run, lang), classroom), key=f"sl_plotly_{name}",
                        config=plotly_config(lang))
    else:
        svg_figure(f"serving_gantt_{name}", observed_gantt_svg(run_json, lang, classroom), lang,
                   alt=figure_alt("gantt", run, lang), file_stem=f"serving_gantt_{name}")
    with st.expander(t(lang, "sl_requests_table")):
        st.dataframe(_request_rows(run, lang), hide_index=True, width="stretch")
    perfetto_button(run_json, t(lang, "download_perfetto"), f"serving_{name}", f"sl_perfetto_{name}", lang,
                    samples_json)


# --- measure a real server -------------------------------------------------------------

def probe_panel(lang: str, workload, scenario: str, lm, slo: Mapping[str, float]) -> None:
    """The "measure a real server" panel (hidden when PREFILL_DECODE_PROBE=0)."""
    settings = ProbeSettings.from_env()
    if not settings.enabled:
        return
    st.subheader(t(lang, "sl_probe_title"), anchor="measure-a-real-server")
    st.markdown(t(lang, "sl_probe_intro"))
    st.caption(t(lang, "sl_probe_allowed_any") if "*" in settings.allow
               else t(lang, "sl_probe_allowed", hosts=", ".join(settings.allow)))
    cols = st.columns(2)
    with cols[0]:
        endpoint = st.text_input(t(lang, "sl_probe_endpoint"), "http://127.0.0.1:8000", key="sl_probe_endpoint",
                                 help=t(lang, "sl_probe_endpoint_help"), max_chars=500)
        model = st.text_input(t(lang, "sl_probe_model"), "default_model", key="sl_probe_model", max_chars=300)
        api = st.radio(t(lang, "sl_probe_api"), APIS, key="sl_probe_api", horizontal=True,
                       format_func=lambda a: t(lang, f"sl_probe_api_{a}"))
    with cols[1]:
        concurrency = int(st.number_input(t(lang, "sl_probe_concurrency"), 0, 512, 0, key="sl_probe_concurrency"))
        timeout = float(st.number_input(t(lang, "sl_probe_timeout"), 1, MAX_TIMEOUT_S, 60, key="sl_probe_timeout"))
        key_env = st.text_input(t(lang, "sl_probe_key_env"), "", key="sl_probe_key_env", max_chars=100,
                                help=t(lang, "sl_probe_key_env_help", names=", ".join(settings.key_vars))).strip()
        ignore_eos = st.toggle(t(lang, "sl_probe_ignore_eos"), True, key="sl_probe_ignore_eos",
                               help=t(lang, "sl_probe_ignore_eos_help"))
    if st.button(t(lang, "sl_probe_run"), key="sl_probe_run", icon=":material/network_check:"):
        if workload is None:
            st.error(scenario)  # the workload controls' message
        else:
            _run_probe(lang, workload, scenario, lm, settings, endpoint.strip(), model.strip(), api, concurrency,
                       timeout, key_env, ignore_eos, slo)
    shown = run_store.kept_of(run_store.ProbeShown, "sl_probe")
    if shown is not None:
        with error_boundary(lang, "err_diagram"):
            _show_probe(lang, shown.result)


def _run_probe(lang, workload, scenario, lm, settings, endpoint, model, api, concurrency, timeout, key_env,
               ignore_eos, slo) -> None:
    run_store.keep("sl_probe", None)
    try:
        check_probe_request(endpoint, key_env, settings)
        cfg = ProbeConfig(endpoint=endpoint, model=model, api=api, concurrency=concurrency or None, timeout_s=timeout,
                          api_key_env=key_env or None, send_ignore_eos=ignore_eos,
                          slo=SLO(ttft_ms=slo.get("slo_ttft_ms") or None, tpot_ms=slo.get("slo_tpot_ms") or None))
        cfg.api_key()  # a missing variable is refused before anything is sent
    except Exception as err:  # noqa: BLE001 - a message, never a traceback
        show_remote_error(err, lang)
        return
    n = len(workload)
    bar = st.progress(0.0, text=t(lang, "sl_probe_running", done=0, n=n))
    done = [0]

    def progress(finished: int, total: int) -> None:  # called on the probe's threads: only a number here
        done[0] = finished

    log.info("serving lab probe: %d requests to %s", n, endpoint)

    def stretch(prompt: str, target_tokens: int) -> str:  # counted by the engine worker's tokenizer: no torch here
        return client().token_preview(lm.ref, prompt, target_tokens).prompt

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="lab-probe") as pool:
        future = pool.submit(run_probe, cfg, workload, scenario=scenario, stretch=stretch, progress=progress)
        while True:
            try:
                result = future.result(timeout=0.2)
                break
            except FutureTimeout:
                bar.progress(min(done[0] / n, 1.0), text=t(lang, "sl_probe_running", done=done[0], n=n))
            except Exception as err:  # noqa: BLE001 - e.g. unreachable, wrong model: a message
                log.info("serving lab probe refused: %s", err)
                bar.empty()
                show_remote_error(err, lang)
                return
    bar.progress(1.0, text=t(lang, "sl_probe_done", n=len(result.run.requests), failed=len(result.failures)))
    run_store.keep("sl_probe", run_store.ProbeShown(result))  # no key: masked in all a server sent (KeyMask)


def show_remote_error(err: BaseException, lang: str) -> None:
    """The message in the page's language; an OS error's raw words only in a technical-detail expander."""
    st.error(remote_message(err, lang))
    detail = technical_detail(err)
    if detail:
        with st.expander(t(lang, "sl_probe_technical")):
            st.code(detail[:500], language=None)


def _show_probe(lang: str, result: ProbeResult) -> None:
    from lesson.charts.probe import server_metrics_figure, server_metrics_note

    run = result.run
    st.markdown("**" + t(lang, "sl_probe_result_title", endpoint=code_span(result.endpoint),
                         model=code_span(result.model)) + "**")
    if result.failures:
        st.warning(t(lang, "sl_probe_failed", n=len(result.failures), total=len(result.failures) + len(run.requests)))
        for failure in result.failures:  # a ProbeFailure carries its key and params, as an error does
            st.markdown("- " + remote_message(failure, lang))
        details = [f"{f.params.get('request_id', '')}: {technical_detail(f)}" for f in result.failures
                   if technical_detail(f)]
        if details:
            with st.expander(t(lang, "sl_probe_technical")):
                st.code("\n".join(details)[:2000], language=None)
    if not run.requests:
        st.error(t(lang, "sl_probe_none"))
        return
    sm = result.server_metrics
    samples = json.dumps([{"t_ms": s.t_ms, "values": s.values} for s in sm.samples])
    show_observed_run(lang, run, run.to_json(indent=None), "probe", samples)
    note = server_metrics_note(sm, lang)
    if note:
        st.caption(escape_markdown(note))
    else:
        st.plotly_chart(server_metrics_figure(sm, lang, classroom=bool(st.session_state.get("classroom"))),
                        key="sl_probe_server_metrics", config=plotly_config(lang))
    prefix = probe_prefix_words(asdict(result.prefix_cache), lang)  # the usage's cached tokens against /metrics'
    if prefix:
        st.caption(prefix)


# --- a vLLM result file -----------------------------------------------------------------

@st.cache_data(show_spinner=False, max_entries=8)
def read_vllm(text: str, name: str):
    return read_vllm_result(text, name=name)


def vllm_panel(lang: str) -> None:
    settings = ProbeSettings.from_env()
    st.subheader(t(lang, "sl_vllm_title"), anchor="import-a-vllm-result")
    st.markdown(t(lang, "sl_vllm_intro"))
    limit = f"{settings.vllm_max_mb:g}"
    upload = st.file_uploader(t(lang, "sl_vllm_file", limit=limit), type=["json"], key="sl_vllm_file")
    if upload is None:
        return
    if upload.size > settings.vllm_max_mb * 1e6:
        st.error(t(lang, "sl_vllm_too_big", mb=f"{upload.size / 1e6:.2f}", limit=limit))
        return
    try:
        text = upload.getvalue().decode("utf-8")
    except UnicodeDecodeError:
        st.error(t(lang, "sl_vllm_not_text"))
        return
    name = re.sub(r"[^\w.-]+", "_", Path(upload.name).stem)[:60] or "vllm"
    try:
        imported = read_vllm(text, name)
    except Exception as err:  # noqa: BLE001 - a message, never a traceback
        st.error(remote_message(err, lang))
        return
    with error_boundary(lang, "err_diagram"):
        _show_vllm(lang, imported)


def _show_vllm(lang: str, imp) -> None:
    src, run = imp.source, imp.run
    st.markdown(t(lang, "sl_vllm_source", model=code_span(src.get("model_id") or "?"),
                  backend=code_span(src.get("backend") or "?"), date=code_span(src.get("date") or "?"),
                  n=len(run.requests), failed=len(imp.failed)))  # the file's words as inline code: never links
    if arrivals_placed(run):
        slots = src.get("max_concurrency")
        st.warning(t(lang, "sl_vllm_arrivals_placed", rate=data_field(src.get("request_rate", "inf")),
                     slots=t(lang, "sl_vllm_slots", slots=data_field(slots)) if slots else ""))
    else:
        st.caption(t(lang, "sl_vllm_arrivals_measured"))
    show_observed_run(lang, run, run.to_json(indent=None), "vllm")
    st.markdown(f"**{t(lang, 'sl_vllm_compare_title')}**")
    differing = imp.differing()
    if differing:
        st.warning(t(lang, "sl_vllm_compare_differ", k=len(differing), n=len(imp.comparisons),
                     keys=code_span(", ".join(c.key for c in differing))))
    else:
        st.success(t(lang, "sl_vllm_compare_same", n=len(imp.comparisons)))
    cols = {k: t(lang, f"sl_vllm_col_{k}") for k in ("key", "file", "recomputed", "difference", "note")}
    rows = [{cols["key"]: c.key, cols["file"]: f"{c.file_value:,.4f}",
             cols["recomputed"]: "—" if c.recomputed is None else f"{c.recomputed:,.4f}",
             cols["difference"]: "—" if c.difference is None else f"{c.difference:+,.4f}",
             cols["note"]: ("≠ " if c.differs else "") + c.note} for c in imp.comparisons]
    st.dataframe(rows, hide_index=True, width="stretch")
    if imp.ignored_fields:
        st.caption(t(lang, "sl_vllm_ignored", fields=code_span(", ".join(imp.ignored_fields))))

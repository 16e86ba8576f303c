"""The serving lab page (app_pages/serving_lab.py), part by part.

A workload (a named scenario, or one made with sliders), the KV block settings and
SLOs go in; one button runs every policy on that same workload with the real engine
(engine.runtime.serving.engine.run_workload, in the engine worker), one after another with a progress bar; the figures
(lesson/diagrams/serving_*.py, kv_blocks, batch_composition) and the metric table
come out, policy beside policy, with what the measured numbers say.

Caps come from the server's environment (engine.contract.config.ServingCaps), so a shared classroom
CPU is never asked for a load test. Runs are cached (st.cache_data) by the workload,
the settings and the model, so a second visitor with the same choices waits for nothing.
"""

from __future__ import annotations

import functools
import json
import logging
import time
from collections.abc import Callable
from dataclasses import asdict

import streamlit as st

from engine.contract.config import ServerSettings, ServingCaps
from engine.contract.errors import CapError, InputError
from engine.contract.limits import MAX_ARRIVAL_MS
from engine.contract.serving.trace import ServingRun
from engine.contract.serving.workloads import (WorkloadRequest, parse_workload_lines, poisson_workload, questions,
                                               scenario)
from engine.contract.worker.client import Progress, Started
from engine.contract.worker.protocol import ModelRef
from lesson.diagrams.batch_composition import render_batch_composition
from lesson.diagrams.engine_queue import render_engine_queue, summary_lines
from lesson.diagrams.kv_blocks import render_kv_blocks
from lesson.diagrams.serving_gantt import policy_label, render_serving_gantt, scenario_label
from lesson.diagrams.serving_metrics import render_serving_metrics
from lesson.formats import escape_markdown
from lesson.layout import figures_per_row
from lesson.messages import serving_message
from lesson.serving_views import (figure_alt, findings, metric_records, metrics_alt, run_label, time_left_s,
                                  what_to_see)
from lesson.slides import run_set_tag, serving_stem
from lesson.text import t, table_for

from . import frame, prefix_cache, resources, run_store, serving_remote, slide_kit
from .ui import error_boundary, metric_dataframe, plotly_config, svg_figure

log = logging.getLogger("prefill_decode.app")

SCENARIO_CHOICES = ("long-prompt-during-chats", "burst-16", "eight-chats", "poisson-16", "mixed-lengths",
                    "capital-questions", "shared-system-prompt", "multi-turn-chat", "near-miss")
BLOCK_SIZES = (4, 8, 16, 32)
QUEUE_REFRESH_S = 5  # the engine queue figure is asked for and redrawn this often
FIGURES = ("gantt", "batch", "kv")
EXAMPLE_JSONL = "\n".join((
    '{"arrival_ms": 0, "prompt": "法国的首都是", "max_new_tokens": 16, "ignore_eos": true}',
    '{"arrival_ms": 10, "prompt": "The capital of Germany is", "max_new_tokens": 16, "ignore_eos": true}',
    '{"arrival_ms": 30, "prompt": "日本的首都是", "max_new_tokens": 8, "prompt_tokens": 256}',
))
# Widget keys of this page (for app.py's keep_widget_values, so they survive a visit to another page)
SERVING_WIDGET_KEYS = ("sl_source", "sl_scenario", "sl_scn_seed", "sl_num_chats", "sl_chat_tokens", "sl_answer_tokens",
                       "sl_long_tokens", "sl_arrival", "sl_gap_ms", "sl_rate", "sl_seed", "sl_long_at",
                       "sl_token_budget", "sl_block_size", "sl_kv_blocks", "sl_on_kv_full", "sl_slo_ttft",
                       "sl_slo_tpot", "sl_hover", "sl_jsonl", "sl_probe_endpoint", "sl_probe_model", "sl_probe_api",
                       "sl_probe_concurrency", "sl_probe_timeout", "sl_probe_key_env", "sl_probe_ignore_eos",
                       "sl_prefix_caching", "sl_prefix_policy")


# --- server caps (engine.contract.config.ServingCaps) -----------------------------------------

def check_caps(workload, caps: ServingCaps, count_tokens: Callable[[str], int] | None = None) -> None:
    """Raises CapError (engine.contract.errors) for the first thing in `workload` over this server's caps.

    A prompt's length is the longer of its stretch (prompt_tokens) and, given `count_tokens` (the
    model's tokenizer), the prompt as typed: a long typed prompt is capped as a stretched one is.
    Its characters were bounded by the workload parser before anything is tokenized."""
    if len(workload) > caps.max_requests:
        raise CapError("sl_cap_requests", n=len(workload), limit=caps.max_requests)
    for req in workload:
        if req.arrival_ms > MAX_ARRIVAL_MS:
            raise CapError("sl_cap_arrival", n=round(req.arrival_ms), limit=round(MAX_ARRIVAL_MS))
        typed = typed_tokens(req.prompt, count_tokens, caps)
        length = max(req.prompt_tokens, typed) + req.system_tokens  # a system prompt is part of the prompt
        if length > caps.max_prompt_tokens:
            raise CapError("sl_cap_prompt", n=length, limit=caps.max_prompt_tokens)
        if req.max_new_tokens > caps.max_new_tokens:
            raise CapError("sl_cap_answer", n=req.max_new_tokens, limit=caps.max_new_tokens)


def typed_tokens(prompt: str, count_tokens: Callable[[str], int] | None, caps: ServingCaps) -> int:
    """The model's count of a typed prompt (0 without a counter). A prompt the engine worker will not even
    count (more characters than it takes) is over the cap whatever its count: said as such (CapError)."""
    if count_tokens is None:
        return 0
    try:
        return count_tokens(prompt)
    except InputError as err:
        if err.key != "prompt_too_many_chars":
            raise
        raise CapError("sl_cap_prompt_chars", chars=len(prompt), limit=caps.max_prompt_tokens) from None


# --- workloads --------------------------------------------------------------------

def custom_workload(num_chats: int, chat_tokens: int, answer_tokens: int, arrival: str, gap_ms: float,
                    rate_per_s: float, seed: int, long_tokens: int, long_at_ms: float):
    """Chats (capital questions stretched to `chat_tokens`, answering `answer_tokens`), arriving every
    `gap_ms` or as a Poisson process, plus one long prompt of `long_tokens` at `long_at_ms` (0: none)."""
    if arrival == "poisson":
        chats = poisson_workload(num_chats, rate_per_s, seed, max_new_tokens=(answer_tokens, answer_tokens),
                                 prompt_tokens=(chat_tokens, chat_tokens))
    else:
        qs = questions()
        chats = tuple(WorkloadRequest(i * gap_ms, qs[i % len(qs)], answer_tokens, True, chat_tokens)
                      for i in range(num_chats))
    if long_tokens:
        chats += (WorkloadRequest(long_at_ms, "法国的首都是", 8, False, long_tokens),)
    return tuple(sorted(chats, key=lambda r: r.arrival_ms))


def workload_json(workload) -> str:
    """The cache key of a workload: its requests as plain JSON."""
    return json.dumps([asdict(r) for r in workload], ensure_ascii=False, sort_keys=True)


@st.cache_resource(show_spinner=False)
def serving_store() -> resources.SweepStore:
    """Every policy's finished run by its plain arguments, shared by every visitor of this process (so a
    second visitor with the same choices waits for nothing), the oldest dropped past 64. Not st.cache_data:
    a run draws its progress on the page while it runs, which a cached function must not do."""
    return resources.SweepStore(max_entries=64)


def serving_run_json(model_choice: str, device: str, dtype: str, workload: str, scenario: str, policy: str,
                     token_budget: int, block_size: int, kv_blocks: int, on_kv_full: str, slo_ttft_ms: float,
                     slo_tpot_ms: float, prefix_caching: bool = False, *, on_event=None) -> str:
    """One policy's run of the workload (as JSON), in the engine worker (engine.runtime.serving.engine.run_workload
    there: a disaggregated run's two processes are the worker's children, never this page's), or the
    one kept in serving_store. `on_event`: the worker's events while it runs (Progress in answer tokens)."""
    key = (model_choice, device, dtype, workload, scenario, policy, token_budget, block_size, kv_blocks,
           on_kv_full, slo_ttft_ms, slo_tpot_ms, prefix_caching)
    kept = serving_store().results.get(key)
    if kept is not None:
        return kept
    requests = tuple(WorkloadRequest(**r) for r in json.loads(workload))
    config = {"policy": policy, "token_budget": token_budget if policy == "chunked" else None,
              "block_size": block_size, "num_kv_blocks": kv_blocks or None, "on_kv_full": on_kv_full,
              "slo": {"ttft_ms": slo_ttft_ms or None, "tpot_ms": slo_tpot_ms or None},
              "prefix_caching": bool(prefix_caching)}  # a ServeConfig's fields
    log.info("serving lab: %s, %d requests, %s", policy, len(requests), scenario)
    run = resources.client().serve_workload(ModelRef(model_choice, device, dtype), requests, config,
                                            scenario=scenario, on_event=on_event)
    run_json = run.to_json(indent=None)
    serving_store().put(key, run_json)
    return run_json


@functools.lru_cache(maxsize=256)
def serving_svg(name: str, shown: run_store.ServingSet, k: int, lang: str, classroom: bool = False) -> str:
    """One figure of the set's run `k`, drawn once per stored set (hashed by identity) for every session."""
    render = {"gantt": render_serving_gantt, "batch": render_batch_composition, "kv": render_kv_blocks}[name]
    return render(shown.runs[k], lang=lang, style=resources.figure_style(classroom))


@functools.lru_cache(maxsize=64)
def metrics_svg(shown: run_store.ServingSet, lang: str, classroom: bool = False) -> str:
    return render_serving_metrics(list(shown.runs), lang=lang, style=resources.figure_style(classroom))


# --- the page ---------------------------------------------------------------------

def serving_lab(lang: str, lm, settings: ServerSettings) -> None:
    caps = ServingCaps.from_env()
    st.header(t(lang, "sl_title"), anchor="serving-lab")
    st.markdown(t(lang, "sl_intro"))
    st.page_link("app_pages/lesson.py", label=t(lang, "lab_back_link"), icon=":material/school:")
    st.caption(t(lang, "sl_caps", requests=caps.max_requests, prompt=caps.max_prompt_tokens,
                 answer=caps.max_new_tokens, policies=", ".join(_policy(p, lang) for p in caps.policies)))
    if lm is None:
        return
    workload, scenario = _workload_controls(lang, caps, token_counter(lm))
    config = _engine_controls(lang)
    clicked = st.button(t(lang, "sl_run"), key="sl_run", type="primary", icon=":material/play_arrow:")
    linked, st.session_state.sl_link_run = st.session_state.sl_link_run, False  # a link: run its settings
    if clicked or linked:
        if workload is None:
            st.error(scenario)  # the message from _workload_controls
        else:
            _run_all(lang, workload, scenario, config, caps)
    shown = run_store.kept_of(run_store.ServingSet, "sl_runs")
    if shown is not None:
        _show(lang, shown)
    engine_queue_panel(lang)  # the class's own queue: lesson runs going through between serving iterations
    st.info(t(lang, "sl_honest"))
    serving_remote.probe_panel(lang, workload, scenario, lm, config)  # a real server, from the client
    serving_remote.vllm_panel(lang)


@st.fragment(run_every=QUEUE_REFRESH_S)
def engine_queue_panel(lang: str) -> None:
    """The engine worker's queue of the last minutes (lesson/diagrams/engine_queue.py), redrawn every
    QUEUE_REFRESH_S without rerunning the page; a message, never a traceback, when it cannot be asked."""
    st.subheader(t(lang, "eq_heading"))
    st.caption(t(lang, "eq_caption"))
    try:
        history = resources.client().queue_history()
    except Exception as err:  # noqa: BLE001 - a message, never a traceback
        st.info(t(lang, "eq_unavailable", message=serving_message(err, lang)))
        return
    style = resources.figure_style(bool(st.session_state.get("classroom")))
    svg = render_engine_queue(history, lang=lang, style=style)
    alt = " ".join([t(lang, "eq_title"), *summary_lines(list(history.jobs), table_for(lang))])
    svg_figure("engine_queue", svg, lang, alt=alt, file_stem="engine_queue")


def _policy(policy: str, lang: str) -> str:
    return policy_label(lang, policy)


def token_counter(lm) -> Callable[[str], int] | None:
    """The model's token count of a typed prompt (engine.contract.prompts.count_tokens, in the engine worker), for
    check_caps."""
    return None if lm is None else functools.partial(resources.count_tokens, lm)


def _workload_controls(lang: str, caps: ServingCaps, counter: Callable[[str], int] | None = None):
    """(workload, scenario name), or (None, a message) when it is over this server's caps or invalid."""
    st.subheader(t(lang, "sl_workload"))
    source = st.radio(t(lang, "sl_source"), ("scenario", "custom", "jsonl"), key="sl_source", horizontal=True,
                      format_func=lambda s: t(lang, f"sl_source_{s}"))
    try:
        if source == "scenario":
            name = st.selectbox(t(lang, "sl_scenario"), SCENARIO_CHOICES, key="sl_scenario",
                                format_func=lambda s: scenario_label(lang, s), placeholder=t(lang, "choose_option"))
            seed = 0
            if name.startswith("poisson"):
                seed = int(st.number_input(t(lang, "sl_seed"), 0, 10_000, 0, key="sl_scn_seed"))
            st.caption(t(lang, f"sl_scn_{name.replace('-', '_')}"))
            workload = scenario(name, seed)
            check_caps(workload, caps, counter)
            return workload, name
        if source == "jsonl":
            text = st.text_area(t(lang, "sl_jsonl"), EXAMPLE_JSONL, key="sl_jsonl", height=160,
                                help=t(lang, "sl_jsonl_help"))
            workload = parse_workload_lines(text.splitlines(), max_new_tokens=caps.max_new_tokens,
                                            max_prompt_tokens=caps.max_prompt_tokens)  # the caps it applies
            check_caps(workload, caps, counter)
            return workload, "pasted"
        cols = st.columns(2)
        with cols[0]:
            num_chats = st.slider(t(lang, "sl_num_chats"), 1, max(1, caps.max_requests - 1), min(4, caps.max_requests),
                                  key="sl_num_chats")
            chat_tokens = st.slider(t(lang, "sl_chat_tokens"), 0, min(256, caps.max_prompt_tokens), 0, step=8,
                                    key="sl_chat_tokens", help=t(lang, "sl_chat_tokens_help"))
            answer = st.slider(t(lang, "sl_answer_tokens"), 2, caps.max_new_tokens, min(32, caps.max_new_tokens),
                               key="sl_answer_tokens")
            long_tokens = st.slider(t(lang, "sl_long_tokens"), 0, caps.max_prompt_tokens,
                                    min(512, caps.max_prompt_tokens), step=8, key="sl_long_tokens",
                                    help=t(lang, "sl_long_tokens_help"))
        with cols[1]:
            arrival = st.radio(t(lang, "sl_arrival"), ("spacing", "poisson"), key="sl_arrival", horizontal=True,
                               format_func=lambda a: t(lang, f"sl_arrival_{a}"))
            gap, rate, seed = 15.0, 20.0, 0
            if arrival == "spacing":
                gap = float(st.slider(t(lang, "sl_gap_ms"), 0, 500, 15, step=5, key="sl_gap_ms"))
            else:
                rate = float(st.slider(t(lang, "sl_rate"), 1, 200, 20, key="sl_rate"))
                seed = int(st.number_input(t(lang, "sl_seed"), 0, 10_000, 0, key="sl_seed"))
            long_at = float(st.slider(t(lang, "sl_long_at"), 0, 2000, 100, step=10, key="sl_long_at"))
        if num_chats + (1 if long_tokens else 0) > caps.max_requests:
            num_chats = caps.max_requests - 1
        workload = custom_workload(num_chats, chat_tokens, answer, arrival, gap, rate, seed, long_tokens, long_at)
        check_caps(workload, caps, counter)
        return workload, "custom"
    except Exception as err:  # noqa: BLE001 - a message, never a traceback
        return None, serving_message(err, lang)


def _engine_controls(lang: str) -> dict:
    st.subheader(t(lang, "sl_engine"))
    cols = st.columns(3)
    with cols[0]:
        budget = st.slider(t(lang, "sl_token_budget"), 8, 512, 64, step=8, key="sl_token_budget",
                           help=t(lang, "sl_token_budget_help"))
        block_size = st.select_slider(t(lang, "sl_block_size"), BLOCK_SIZES, 16, key="sl_block_size")
    with cols[1]:
        kv_blocks = int(st.number_input(t(lang, "sl_kv_blocks"), 0, 100_000, 0, key="sl_kv_blocks",
                                        help=t(lang, "sl_kv_blocks_help")))
        on_full = st.radio(t(lang, "sl_on_kv_full"), ("preempt", "wait"), key="sl_on_kv_full",
                           format_func=lambda m: t(lang, f"sv_on_kv_full_{m}"))
    with cols[2]:
        ttft = float(st.number_input(t(lang, "sl_slo_ttft"), 0.0, 600_000.0, 0.0, step=50.0, key="sl_slo_ttft",
                                     help=t(lang, "sl_slo_help")))
        tpot = float(st.number_input(t(lang, "sl_slo_tpot"), 0.0, 60_000.0, 0.0, step=5.0, key="sl_slo_tpot",
                                     help=t(lang, "sl_slo_help")))
        prefix = st.toggle(t(lang, "sl_prefix_switch"), False, key="sl_prefix_caching",
                           help=t(lang, "sl_prefix_switch_help"))  # app_support/prefix_cache.py shows what it did
    return {"token_budget": int(budget), "block_size": int(block_size), "kv_blocks": kv_blocks,
            "on_kv_full": on_full, "slo_ttft_ms": ttft, "slo_tpot_ms": tpot, "prefix_caching": bool(prefix)}


class PolicyProgress:
    """The `on_event` of one policy's run in the serving lab: the bar at (policies done + this one's share
    of its answer tokens) / all policies, saying the tokens written and, once that rests on enough of them,
    about how long is left (lesson.serving_views.time_left_s), redrawn at most every REDRAW_S; the queue
    place otherwise. The disaggregated policy's start-up (its two processes, the model loaded in each)
    is a phase of its own, named and timed on every heartbeat until its first tokens are written."""

    REDRAW_S = 0.25

    def __init__(self, lang: str, bar, place, policies: tuple[str, ...], index: int, finished_s: list[float]):
        self.lang, self.bar, self.place, self.policies = lang, bar, place, policies
        self.index, self.finished_s = index, finished_s
        self.started = self.drawn = time.perf_counter()
        self.first_s, self.first_done = None, 0  # when (s into the policy) its first progress came, and its count

    def __call__(self, event) -> None:
        if not isinstance(event, Progress):
            self.place(event)  # queued, started, the heartbeat (a closed page stops here)
            if isinstance(event, Started):
                self.started = time.perf_counter()  # the queue's wait is not this policy's time
            self._starting()
            return
        now = time.perf_counter()
        if self.first_s is None:
            self.first_s, self.first_done = now - self.started, event.done
        if now - self.drawn < self.REDRAW_S and event.done < event.total:
            return
        self.drawn = now
        fraction = event.done / max(event.total, 1)
        left = time_left_s(self.finished_s, len(self.policies), event.done, event.total, now - self.started,
                           self.first_s, self.first_done)
        words = {"policy": _policy(self.policies[self.index], self.lang), "i": self.index + 1,
                 "n": len(self.policies), "done": event.done, "total": event.total}
        text = t(self.lang, "sl_running_progress_first", **words) if left is None else \
            t(self.lang, "sl_running_progress", left=t(self.lang, "sl_seconds", s=f"{left:.0f}"), **words)
        if self.policies[self.index] == "disaggregated":
            text += t(self.lang, "sl_startup_took", s=f"{self.first_s:.1f}")
        self.bar.progress(min((self.index + fraction) / len(self.policies), 1.0), text=text)

    def _starting(self) -> None:
        """Before the disaggregated policy's first tokens (and not queued): its start-up, with its seconds."""
        if self.first_s is not None or self.policies[self.index] != "disaggregated":
            return
        if getattr(self.place, "ahead", 0):
            return  # still queued: the queue's place is said
        words = {"policy": _policy("disaggregated", self.lang), "i": self.index + 1, "n": len(self.policies),
                 "s": f"{time.perf_counter() - self.started:.0f}"}
        self.bar.progress(self.index / len(self.policies), text=t(self.lang, "sl_starting_disaggregated", **words))


def _run_all(lang: str, workload, scenario: str, config: dict, caps: ServingCaps) -> None:
    """Every policy on the same workload, one after another, the bar moving as each writes its answer
    tokens with the time left; a message (not a traceback) on refusal."""
    shown = run_store.current()  # the model the lesson's run uses (shared by every page)
    args = shown.args if shown is not None else None
    model = (st.session_state.model_choice, resources.server_settings().device, resources.server_settings().dtype)
    if args is not None:
        model = (args.model_choice, args.device, args.dtype)
    key = workload_json(workload)
    policies = tuple(caps.policies)
    bar = st.progress(0.0, text=t(lang, "sl_running", policy=_policy(policies[0], lang), i=1, n=len(policies)))
    place, runs, finished_s = frame.QueuePlace(lang), [], []
    try:
        for i, policy in enumerate(policies):
            bar.progress(i / len(policies), text=t(lang, "sl_running", policy=_policy(policy, lang), i=i + 1,
                                                   n=len(policies)))
            progress = PolicyProgress(lang, bar, place, policies, i, finished_s)
            runs.append(serving_run_json(*model, key, scenario, policy, **config, on_event=progress))
            finished_s.append(time.perf_counter() - progress.started)
        off = None  # the cache on: the same workload once more with it off, for TTFT side by side
        if config.get("prefix_caching"):
            off = serving_run_json(*model, key, scenario, policies[0], **{**config, "prefix_caching": False},
                                   on_event=lambda event: None if isinstance(event, Progress) else place(event))
    except Exception as err:  # noqa: BLE001 - a message, never a traceback
        log.info("serving lab refused: %s", err)
        bar.empty()
        run_store.keep("sl_runs", None)
        st.error(serving_message(err, lang))
        return
    finally:
        place.slot.empty()
    bar.progress(1.0, text=t(lang, "sl_done", n=len(policies)))
    if place.shared_note():  # another lab asked the same at the same time: measured once for both
        st.caption(place.shared_note())
    parsed = tuple(ServingRun.from_json(j) for j in runs)  # the worker's wire form, parsed once here
    run_store.keep("sl_runs", run_store.ServingSet(parsed, tuple(runs), ServingRun.from_json(off) if off else None))


def _show(lang: str, shown: run_store.ServingSet) -> None:
    with error_boundary(lang, "err_diagram"):  # a figure that cannot be drawn is a message, not a traceback
        _results(lang, shown)


def _results(lang: str, shown: run_store.ServingSet) -> None:
    runs, jsons = list(shown.runs), shown.jsons
    st.subheader(t(lang, "sl_results"))
    st.markdown(what_to_see(runs, lang))  # written for this scenario
    for line in findings(runs, lang):
        st.markdown("- " + line)
    st.markdown(f"**{t(lang, 'sv_table_title')}**")
    metric_dataframe(metric_records(runs, lang))  # every row shown, no metric's name cut
    classroom = bool(st.session_state.get("classroom"))
    with st.expander(t(lang, "sl_table_svg")):
        tag = run_set_tag(jsons)  # download names say the scenario and the run set: never another's name
        svg_figure("serving_metrics", metrics_svg(shown, lang, classroom), lang, alt=metrics_alt(runs, lang),
                   file_stem=serving_stem(runs[0], "metrics", tag))
    names = {"gantt": t(lang, "sl_tab_gantt"), "batch": t(lang, "sl_tab_batch"), "kv": t(lang, "sl_tab_kv")}
    tabs = st.tabs([names[f] for f in FIGURES])
    for tab, figure in zip(tabs, FIGURES):
        with tab:
            st.caption(t(lang, f"sl_explain_{figure}"))
            if figure == "gantt" and st.toggle(t(lang, "sl_hover"), key="sl_hover"):
                from lesson.charts.serving import serving_gantt_figure
                from lesson.charts.common import classroom_fonts

                for run in runs:
                    st.plotly_chart(classroom_fonts(serving_gantt_figure(run, lang), classroom),
                                    key=f"sl_plotly_{run.settings.policy}", config=plotly_config(lang))
                continue
            svgs = [serving_svg(figure, shown, k, lang, classroom) for k in range(len(runs))]
            # policy beside policy only if their labels stay readable at half the column (they do not at
            # 860 units wide: one above the other, time axes aligned); on a projector: one per row
            per_row = 1 if classroom else figures_per_row(svgs)
            columns = st.columns(per_row)
            for k, (run, svg) in enumerate(zip(runs, svgs)):
                with columns[k % per_row]:
                    st.markdown(f"**{escape_markdown(run_label(run, lang))}**")
                    svg_figure(f"serving_{figure}_{run.settings.policy}", svg, lang,
                               alt=figure_alt(figure, run, lang), file_stem=serving_stem(run, figure, tag))
    st.download_button(t(lang, "sl_download_runs"), data="[" + ",".join(jsons) + "]", file_name="serving_runs.json",
                       mime="application/json", key="sl_download_runs", on_click="ignore",
                       icon=":material/download:")
    prefix_cache.section(lang, shown, tag)  # switch on: hits, misses
    slide_kit.serving_button(lang, runs, jsons)  # every figure above for slides, in one zip (built when clicked)
    columns = st.columns(min(len(runs), 2))  # a Perfetto trace of every run (lesson.perfetto)
    for k, (run, run_json) in enumerate(zip(runs, jsons)):
        with columns[k % len(columns)]:
            serving_remote.perfetto_button(run_json, t(lang, "sl_perfetto_run", run=run_label(run, lang)),
                                           f"serving_{run.settings.policy}", f"sl_perfetto_{run.settings.policy}",
                                           lang)

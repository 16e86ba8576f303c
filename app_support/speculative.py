"""The lesson's section after Decode: speculative decoding, run live (words and numbers: lesson/speculative.py).

A button runs one prompt (the repeating example, or the visitor's own from the run panel) twice on the engine
worker, greedy: plain Decode, then prompt-lookup speculative decoding (GenerationConfig(speculative="ngram",
num_speculative_tokens=k)). Each run is a StoredRun in the run store (app_support/run_store.py), its id in
the session ("spec_run_id", "spec_plain_id"). The section draws the speculative run's timeline and its
acceptance chart (lesson/diagrams/acceptance.py), both runs' tokens side by side (checked equal), and two
predict-then-measure exercises graded from the two runs. A setting the engine refuses (k out of range) is
shown in the page's language (ui.error_boundary), never a traceback.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
from contextlib import closing

import streamlit as st

from engine.contract.results import GenerationConfig
from engine.contract.speculative import MAX_SPECULATIVE_TOKENS
from engine.contract.trace import RequestTrace
from engine.contract.worker.client import Done
from engine.contract.worker.protocol import ModelRef
from lesson import speculative as sp
from lesson.diagrams.acceptance import render_acceptance
from lesson.downloads import download_stem, run_stamp
from lesson.formats import fmt_ms
from lesson.alt_text import with_run_note
from lesson.spread import run_label, shown_run
from lesson.text import t

from . import resources, run_store
from .run_store import RunArgs, StoredRun, whole_view
from .ui import error_boundary, svg_figure

RUN_KEYS = ("spec_run_id", "spec_plain_id")  # the session's two runs: with guessing, plain


def spec_config(k: int, base: GenerationConfig) -> GenerationConfig:
    """`base` (greedy) with prompt lookup checking `k` drafts per pass; the engine's InputError for a k it refuses."""
    return dataclasses.replace(base, speculative="ngram", num_speculative_tokens=k)


def one_run(ref: ModelRef, prompt: str, cfg: GenerationConfig, max_prompt_tokens: int) -> RequestTrace:
    """The request run once in the worker (its queue, like every measured call)."""
    with closing(resources.stream_runs(ref, prompt, cfg, repeats=1, max_prompt_tokens=max_prompt_tokens)) as ev:
        return next(event.result for event in ev if isinstance(event, Done))[0]


def interleaved(ref: ModelRef, prompt: str, cfgs: tuple[GenerationConfig, ...], rounds: int,
                max_prompt_tokens: int) -> list[list[RequestTrace]]:
    """Each config's runs, taken in turns round by round (plain, guessing, plain, guessing, ...): a busy moment of
    the machine lands on both, so the pass-cost ratio compares passes measured side by side."""
    runs: list[list[RequestTrace]] = [[] for _ in cfgs]
    for _ in range(rounds):
        for kept, cfg in zip(runs, cfgs):
            kept.append(one_run(ref, prompt, cfg, max_prompt_tokens))
    return runs


def run_both(lang: str, lm, settings, prompt: str, k: int) -> None:
    """Plain Decode and guessing on the same prompt and greedy settings, interleaved `settings.repeats` rounds;
    of each, the run nearest its medians (lesson.spread.shown_run) kept in the run store."""
    limits = settings.limits
    args = RunArgs(lm.ref.choice, lm.ref.device, lm.ref.dtype, prompt, sp.EXAMPLE_NEW_TOKENS, 0.0, 0, 1.0, 0,
                   limits.max_prompt_tokens)
    plain_cfg = resources.generation_config(sp.EXAMPLE_NEW_TOKENS, 0.0, 0, 1.0, 0, False)
    cfg = spec_config(k, plain_cfg)  # refused here, before any pass, when k is out of range
    with st.spinner(t(lang, "spec_running")):
        plains, specs = interleaved(lm.ref, prompt, (plain_cfg, cfg), settings.repeats, limits.max_prompt_tokens)
    stamp = run_stamp(datetime.datetime.now())
    plain, spec = stored(plains, args, stamp), stored(specs, args, stamp)
    ss = st.session_state
    ss.spec_run_id, ss.spec_plain_id = run_store.store().put(spec), run_store.store().put(plain)
    ss.spec_grades = None
    run_store.hold_session_runs()


def stored(runs: list[RequestTrace], args: RunArgs, stamp: str) -> StoredRun:
    trace, numbers = shown_run(runs)  # lesson.spread's one rule: the repeat nearest the medians
    return StoredRun(trace, args, "measured", stamp, headline=numbers)


def stored_pair() -> tuple[StoredRun, StoredRun] | None:
    spec, plain = (run_store.kept_of(StoredRun, key) for key in RUN_KEYS)
    return (spec, plain) if spec is not None and plain is not None else None


@functools.lru_cache(maxsize=32)
def acceptance_svg(run: StoredRun, lang: str, classroom: bool = False) -> str:
    return render_acceptance(run.trace, lang=lang, style=resources.figure_style(classroom))


def section_speculative(lang: str, settings) -> None:
    st.header(t(lang, "spec_title"), anchor="speculative")
    st.markdown(t(lang, "spec_intro_1"))
    st.markdown(t(lang, "spec_intro_2"))
    ss = st.session_state
    left, right = st.columns(2)
    left.radio(t(lang, "spec_source"), ("example", "yours"), key="spec_source", horizontal=True,
               format_func=lambda v: t(lang, f"spec_source_{v}"))
    right.number_input(t(lang, "spec_k"), min_value=1, max_value=MAX_SPECULATIVE_TOKENS, step=1, key="spec_k",
                       help=t(lang, "spec_k_help"))
    if st.button(t(lang, "spec_run"), key="spec_run", type="primary", icon=":material/fast_forward:"):
        prompt = sp.example_prompt(lang) if ss.spec_source == "example" else str(ss.get("prompt") or "")
        with error_boundary(lang):  # a model that cannot load, a k the engine refuses: words, never a traceback
            lm = resources.get_model(ss.model_choice, settings.device, settings.dtype)
            run_both(lang, lm, settings, prompt, int(ss.spec_k))
    pair = stored_pair()
    if pair is None:
        st.caption(t(lang, "spec_no_run"))
    else:
        with error_boundary(lang, "err_diagram"):
            figures(lang, *pair)
    st.markdown(t(lang, "spec_itl"))
    exercises(lang, pair)


def figures(lang: str, spec_run: StoredRun, plain_run: StoredRun) -> None:
    """The run with guessing drawn (timeline, acceptance), both runs' tokens, the same-tokens check, the numbers."""
    spec, plain = spec_run.trace, plain_run.trace
    classroom = bool(st.session_state.get("classroom"))
    view, note = whole_view(spec_run), run_label(spec_run.headline, lang)  # which repeat: lesson.spread
    alt, stem = resources.diagram_words("timeline", view, lang)
    svg_figure("spec_timeline", resources.diagram_svg("timeline", view, lang, classroom=classroom, run_note=note),
               lang, t(lang, "spec_timeline_caption"), alt=with_run_note(alt, note), file_stem=stem)
    st.markdown(sp.summary(spec, plain, lang))
    with_col, plain_col = st.columns(2)
    with_col.markdown(t(lang, "spec_with", passes=sp.passes_after_prefill(spec)) + "\n\n" + sp.pieces(spec))
    plain_col.markdown(t(lang, "spec_plain", passes=sp.passes_after_prefill(plain)) + "\n\n" + sp.pieces(plain))
    verify = spec.verify_steps
    drafted, kept = sum(len(s.draft_ids) for s in verify), sum(s.num_accepted for s in verify)
    svg_figure("acceptance", acceptance_svg(spec_run, lang, classroom), lang, t(lang, "spec_acc_caption"),
               alt=t(lang, "spec_acc_alt", v=len(verify), kept=kept, drafted=drafted,
                     x=f"{spec.tokens_per_pass or 1.0:.2f}"),
               file_stem=f"{download_stem(spec, spec_run.stamp)}_acceptance")
    st.markdown(sp.ratio_words(spec, plain, lang))
    drafter = sp.draft_cost_words(spec, lang)
    if drafter is not None:
        st.caption(drafter)
    m, pm = spec.metrics, plain.metrics
    if m is not None and pm is not None and m.tpot_ms is not None and pm.tpot_ms is not None:
        st.caption(t(lang, "spec_metrics", tpot=fmt_ms(m.tpot_ms), itl=fmt_ms(m.mean_itl_ms),
                     plain_tpot=fmt_ms(pm.tpot_ms), plain_itl=fmt_ms(pm.mean_itl_ms)))


def exercises(lang: str, pair: tuple[StoredRun, StoredRun] | None) -> None:
    """Predict first (a number, yes or no), then see what the two runs measured."""
    ss = st.session_state
    st.subheader(t(lang, "spec_ex_title"))
    ratio = sp.pass_ratio(pair[0].trace, pair[1].trace) if pair is not None else None
    positions = ratio[1] if ratio is not None else sp.DEFAULT_K + 1  # the widest verify pass measured
    with st.form("spec_exercises"):
        st.number_input(t(lang, "spec_ex_passes_q"), min_value=0, max_value=16, step=1, key="spec_passes_guess")
        st.radio(t(lang, "spec_ex_ratio_q", positions=positions), ("yes", "no"), key="spec_ratio_guess",
                 format_func=lambda v: t(lang, f"spec_ex_{v}"), horizontal=True)
        checked = st.form_submit_button(t(lang, "spec_ex_check"), key="spec_check")
    if checked:
        if pair is None:
            st.info(t(lang, "spec_ex_need_run"))
        else:
            spec, plain = pair[0].trace, pair[1].trace
            ss.spec_grades = tuple(g for g in (sp.grade_passes(spec, ss.spec_passes_guess),
                                               sp.grade_ratio(spec, plain, ss.spec_ratio_guess)) if g is not None)
    if pair is not None:
        for grade in ss.get("spec_grades") or ():
            (st.success if grade.correct else st.info)(sp.grade_words(grade, lang))

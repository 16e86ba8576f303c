"""A link that reopens a state: the page's settings in the URL's query (st.query_params), and back.

    apply_link(settings, model_choices)   first thing each run (app.py): a link this session has not
                                          opened yet sets its values (lesson.links.read_query checks
                                          every one against this server's limits), once
    show_notice(lang, path)               what the link did, and what was wrong with it, said once
    link_box(lang, path, settings, ...)   the sidebar's "link to this view": the URL in an st.code box,
                                          whose copy button copies it

    keep_language(lang)                   every run: the page's language stays in the address bar (`?lang=en`),
                                          so a reload or another page opened from it keeps the language
    tidy_address(lang)                    the run that drew an opened link's page: its query taken out of the
                                          address bar in the page, its `#section` kept

In a link: the prompt, both lengths, writing past the end of sequence, the sampling, the model, the
language, classroom mode and its step, the presenter view and its figure, the page (the URL's path) and
the labs' settings (not the probe's server address or key, nor a pasted workload: a link never points
this server at another), and
the gallery run a page shows. Opening one measures again with its settings (the lesson's run, the
serving lab's policies), or opens the gallery run it names. A value out of range is clamped, anything
else wrong left out, each said in the page's language; nothing from a link is executed or drawn as markup.
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlencode

import streamlit as st

from engine.contract.config import ServerSettings, ServingCaps
from engine.contract.trace import ENGINE_MODES
from lesson.formats import escape_markdown
from lesson.lab import LAB_DEVICE_SPECS, LAB_DTYPES
from lesson.links import Field, LinkRead, Problem, format_value, link_url, query_for, read_query, read_value, shown
from lesson.text import LANGUAGES, t

from . import gallery, run_store, state
from .lab import SWEEP_KINDS
from .presenter import FIGURES
from .serving import BLOCK_SIZES, SCENARIO_CHOICES

GALLERY_PAGE = {"": "lesson", "bottleneck_lab": "lab", "serving_lab": "serving"}  # url path -> gallery's page
MAX_URL_CHARS = 8000  # a longer URL is refused by some servers and browsers: the prompt is left out then
SWEEP_UP_TO = (8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192)  # app_support.lab.sweep_points' values


def shared_fields(settings: ServerSettings, model_choices) -> tuple[Field, ...]:
    """The lesson's settings, in every page's link (every page shows and measures the lesson's run)."""
    limits = settings.limits
    return (
        Field("lang", "lang", "choice", choices=LANGUAGES),
        Field("model", "model_choice", "choice", choices=tuple(model_choices)),
        Field("prompt", "prompt", "text", max_chars=limits.max_prompt_chars),
        Field("out", "output_len", "int", 1, limits.max_new_tokens),
        Field("plen", "prompt_len", "int", 0, limits.max_prompt_tokens),
        Field("eos", "ignore_eos", "flag"),
        Field("pfx", "prefix_reuse", "flag"),
        Field("temp", "temperature", "float", 0.0, 2.0, 0.05),
        Field("topk", "top_k", "int", 0, 1000),
        Field("topp", "top_p", "float", 0.05, 1.0, 0.05),
        Field("seed", "seed", "int", 0, 2**31 - 1),
        Field("class", "classroom", "flag"),
        Field("step", "pending_class_step", "int", 1, max(limits.max_new_tokens, 1)),
        Field("pres", "presenter", "flag"),  # in a link only while the presenter view is on (current_values)
        Field("fig", "presenter_figure", "int", 0, len(FIGURES) - 1),
    )


def lab_fields() -> tuple[Field, ...]:
    """The bottleneck lab's settings: the roofs, the dtypes, the sweep, the engine modes picked."""
    return (
        Field("dev", "lab_device_spec", "choice", choices=LAB_DEVICE_SPECS),
        Field("wdt", "lab_weight_dtype", "choice", choices=LAB_DTYPES),
        Field("kvdt", "lab_kv_dtype", "choice", choices=LAB_DTYPES),
        Field("sweep", "lab_sweep_kind", "choice", choices=SWEEP_KINDS),
        Field("upto", "lab_sweep_up_to", "choice", choices=SWEEP_UP_TO),
        *(Field(f"m_{mode}", f"modes_pick_{mode}", "flag") for mode in ENGINE_MODES),
    )


def serving_fields(caps: ServingCaps) -> tuple[Field, ...]:
    """The serving lab's workload and engine settings, in the ranges its widgets take on this server."""
    return (
        Field("src", "sl_source", "choice", choices=("scenario", "custom")),  # a pasted workload is not linked
        Field("scn", "sl_scenario", "choice", choices=SCENARIO_CHOICES),
        Field("scnseed", "sl_scn_seed", "int", 0, 10_000),
        Field("chats", "sl_num_chats", "int", 1, max(1, caps.max_requests - 1)),
        Field("ctok", "sl_chat_tokens", "int", 0, min(256, caps.max_prompt_tokens), 8),
        Field("atok", "sl_answer_tokens", "int", 2, max(2, caps.max_new_tokens)),
        Field("ltok", "sl_long_tokens", "int", 0, caps.max_prompt_tokens, 8),
        Field("arr", "sl_arrival", "choice", choices=("spacing", "poisson")),
        Field("gap", "sl_gap_ms", "int", 0, 500, 5),
        Field("rate", "sl_rate", "int", 1, 200),
        Field("sseed", "sl_seed", "int", 0, 10_000),
        Field("lat", "sl_long_at", "int", 0, 2000, 10),
        Field("budget", "sl_token_budget", "int", 8, 512, 8),
        Field("bs", "sl_block_size", "choice", choices=BLOCK_SIZES),
        Field("kvb", "sl_kv_blocks", "int", 0, 100_000),
        Field("full", "sl_on_kv_full", "choice", choices=("preempt", "wait")),
        Field("slottft", "sl_slo_ttft", "float", 0.0, 600_000.0),
        Field("slotpot", "sl_slo_tpot", "float", 0.0, 60_000.0),
        Field("pc", "sl_prefix_caching", "flag"),  # the prefix-caching switch
    )


def page_fields(path: str, settings: ServerSettings, model_choices) -> tuple[Field, ...]:
    """Every field a link to the page at `path` carries (a page's own after the lesson's)."""
    fields = shared_fields(settings, model_choices)
    if path == "bottleneck_lab":
        fields += lab_fields()
    elif path == "serving_lab":
        fields += serving_fields(ServingCaps.from_env())
    if path in GALLERY_PAGE:
        runs = tuple(gallery.page_choices(GALLERY_PAGE[path]))
        fields += (Field("rec", "recorded_run", "choice", choices=runs),)
    return fields


# --- opening a link ------------------------------------------------------------------------------

def apply_link(path: str, settings: ServerSettings, model_choices) -> bool:
    """A link's values set in the session, once per link, then measured again (or the gallery run it
    names opened); what it did is said by show_notice. True when a link was applied: the caller draws the
    page again (the language, the page titles and every widget from the link's values).

    The link's query then leaves the address bar, so a reload or the next page visited is not reopened
    from it, but not from here: Streamlit writes a new query as path + query, dropping the address's
    `#section` (a link to a section below would open at the top). The page that draws the link's values
    takes the query out in the browser, keeping the hash (tidy_address), and the session's next run sets
    the same query here, which the browser's address already has, so Streamlit leaves the address alone."""
    ss = st.session_state
    # The overflow check's script is drawn on a session's first run only, into a slot every run holds: an
    # element there on one run and not the next shifted every element below it, and Streamlit then drew
    # the page's widgets and expanders anew (an expander the visitor had opened, closed again).
    overflow_slot = st.empty()
    if ss.link_tidy == "drawn":  # the page took the link's query out: Streamlit's own query follows it, once
        ss.link_tidy = None
        st.query_params.from_dict(_kept_query(ss.lang))
        return False
    query = {name: st.query_params[name] for name in st.query_params}
    signature = (path, tuple(sorted(query.items())))
    if not query:
        _check_overflow(overflow_slot)
    if not query or ss.link_applied == signature:
        return False
    if DROPPED_PARAM in query:  # the address's query was past Streamlit's bounds: dropped before we saw it
        return _dropped(path, query, signature)
    if set(query) == {"lang"}:  # the language kept in the address bar (keep_language): not a link
        return _language_only(query["lang"])
    ss.link_applied = signature
    ss.link_tidy = "to_draw"
    read = read_query(page_fields(path, settings, model_choices), query)
    problems = list(read.problems)
    if read.refused:  # not one of our links: nothing set, nothing measured, one message
        _language_only(str(query.get("lang", "")), first_run_only=False)  # said in the address's own language
        ss.link_notice = (path, None, [(p.key, dict(p.params)) for p in problems])
        return True
    _set_values(read)
    outcome = _measure_or_open(path, read, settings, problems)
    ss.link_notice = (path, outcome, [(p.key, dict(p.params)) for p in problems])
    return True


# Streamlit drops a query past its own bounds whole, before the page reads it (its log says "Ignoring
# query string with N parameters"): the page would open in the default language and say nothing. A fixed
# script in the page (overflow_address.js) finds that on a session's first run and opens the page again
# with the address's language and DROPPED_PARAM: how many values it had.
DROPPED_PARAM = "link_dropped"
STREAMLIT_MAX_FIELDS, STREAMLIT_MAX_CHARS = 1000, 512 * 1024  # streamlit.runtime.state.query_params' bounds
OVERFLOW_JS = (Path(__file__).with_name("overflow_address.js").read_text(encoding="utf-8")
               .replace("__MAX_FIELDS__", str(STREAMLIT_MAX_FIELDS)).replace("__MAX_CHARS__", str(STREAMLIT_MAX_CHARS))
               .replace("__LANGUAGES__", json.dumps(list(LANGUAGES))).replace("__PARAM__", DROPPED_PARAM))


def _check_overflow(slot) -> None:
    """On a session's first run with no query: the script that tells a dropped query from none, drawn
    into `slot` (apply_link's, held on every run)."""
    if st.session_state.get("link_overflow_checked"):
        return
    st.session_state.link_overflow_checked = True
    slot.html(f"\n<script>\n{OVERFLOW_JS}</script>\n", unsafe_allow_javascript=True)


def _dropped(path: str, query: dict[str, str], signature: tuple) -> bool:
    """The page opened again by overflow_address.js: the notice of a link too long to read, in its language."""
    ss = st.session_state
    ss.link_applied, ss.link_tidy = signature, "to_draw"
    _language_only(str(query.get("lang", "")), first_run_only=False)
    count = str(query[DROPPED_PARAM])
    n = count if count.isdigit() and len(count) <= 9 else "?"
    ss.link_notice = (path, None, [("link_too_many", {"n": n, "limit": str(STREAMLIT_MAX_FIELDS)})])
    return True


def _kept_query(lang: str) -> dict[str, str]:
    """What the address bar keeps of a link once it was opened: the page's language, where it is not the
    default (keep_language)."""
    return {} if lang == state.DEFAULTS["lang"] else {"lang": lang}


# Run in the page, once, on the run that draws an opened link's values (tidy_address). Fixed code; what it
# is given is one of our own queries (a language code), never the link's text.
TIDY_ADDRESS_JS = Path(__file__).with_name("tidy_address.js").read_text(encoding="utf-8")


def tidy_address(lang: str) -> None:
    """On the run that draws an opened link's page: its query out of the address bar, its `#section` kept
    (apply_link says why). A later run of the session tells Streamlit (apply_link)."""
    ss = st.session_state
    if ss.link_tidy != "to_draw":
        return
    ss.link_tidy = "drawn"
    kept = urlencode(_kept_query(lang))
    st.html(f"\n<script>\n{TIDY_ADDRESS_JS.replace('__KEPT__', json.dumps(kept))}</script>\n",
            unsafe_allow_javascript=True)


def _language_only(raw: str, first_run_only: bool = True) -> bool:
    """`?lang=en` alone, on a session's first run (a reload, a page opened from the address bar): the
    language set, nothing else measured or said; a language this page does not have is left alone.
    True when it changed. `first_run_only` False: a link refused whole still sets its language, so its
    notice is said in it."""
    ss = st.session_state
    if (ss.lang_in_url and first_run_only) or raw not in LANGUAGES or raw == ss.lang:
        return False  # after the session's first run the address bar says what the switch chose
    ss.lang = raw
    state.language_changed()  # the lesson's example follows the language, as the switch does
    return True


def keep_language(lang: str) -> None:
    """The address bar says the page's language, on every page and every run: Streamlit's own navigation
    drops the query, and a reload is a new session that reads its language from there. An address with
    no `?lang=` says the default language, so a Chinese page leaves it as it is: writing the query there
    dropped the address's `#section`, and a link to a section below opened the page at its top."""
    st.session_state.lang_in_url = True
    if st.session_state.link_tidy == "to_draw":
        return  # an opened link's query is leaving the address bar, the language kept (tidy_address)
    if st.query_params.get("lang", state.DEFAULTS["lang"]) != lang:
        st.query_params["lang"] = lang


def _set_values(read: LinkRead) -> None:
    ss = st.session_state
    values = dict(read.values)
    values.pop("recorded_run", None)
    lang_changed = "lang" in values and values["lang"] != ss.lang
    for key, value in values.items():
        ss[key] = value
    if lang_changed and "prompt" not in values:
        state.language_changed()  # the lesson's example follows the language, as the switch does


def _measure_or_open(path: str, read: LinkRead, settings: ServerSettings, lines: list) -> tuple[str, dict]:
    """Open the gallery run the link names, or measure again with its settings: (text key, its fields)."""
    ss = st.session_state
    name = read.values.get("recorded_run")
    if name is not None and path in GALLERY_PAGE:
        if gallery.open_gallery_run(GALLERY_PAGE[path], name, settings):
            return "link_opened_recorded", {"name": str(name)}
        lines.append(_problem("link_unknown_run", name=str(name)))
    if path == "" and read.values.get("classroom") is True and read.values.get("presenter") is True:
        # The presenter view draws no run panel, so nothing is measured: it shows the run at hand, and leaving
        # it keeps that run on screen (a run asked for here ran later, and every figure changed under the lecturer).
        return "link_opened_presenter", {}
    if path == "":
        ss.run_requested = True  # the run panel measures it with the link's settings
        return "link_opened_run", {}
    if path == "serving_lab":
        ss.sl_link_run = True  # the serving lab runs its policies (kept for every visitor: once per settings)
        return "link_opened_run", {}
    return "link_opened", {}


def _problem(key: str, **params: str) -> Problem:
    return Problem(key, {k: shown(v) for k, v in params.items()})


def show_notice(lang: str, path: str) -> None:
    """What the link opened on this page did, and every value it clamped or left out, once."""
    notice = st.session_state.link_notice
    if not notice or notice[0] != path:
        return
    st.session_state.link_notice = None
    _, outcome, problems = notice
    if outcome is not None:  # None: the whole link was refused, its one warning below says so
        key, params = outcome
        st.info(t(lang, key, **{k: escape_markdown(v) for k, v in params.items()}), icon=":material/link:")
    for problem_key, problem_params in problems:
        st.warning(t(lang, problem_key, **{k: escape_markdown(str(v)) for k, v in problem_params.items()}),
                   icon=":material/link_off:")


# --- the link to this view -----------------------------------------------------------------------

def current_values(path: str, fields) -> dict[str, object]:
    """This session's value of every field (a widget another page drew: its kept value), only those
    that read back as themselves (a pasted workload's source, a step outside classroom mode: left out)."""
    ss = st.session_state
    kept = ss.get(state.KEPT) if isinstance(ss.get(state.KEPT), dict) else {}
    values = {f.key: ss[f.key] if f.key in ss else kept.get(f.key) for f in fields}
    values["pending_class_step"] = int(ss.class_step) if ss.classroom and ss.run_id else None
    presenting = path == "" and ss.classroom and ss.presenter is True
    values["presenter"] = True if presenting else None
    values["presenter_figure"] = values["presenter_figure"] if presenting else None
    gallery_page = GALLERY_PAGE.get(path)
    values["recorded_run"] = (ss.recorded_names or {}).get(gallery_page) if _shows_recorded(gallery_page) else None
    good = {}
    for field in fields:
        value = values.get(field.key)
        if value is not None and read_value(field, format_value(field, value)) == (value, None):
            good[field.key] = value
    return good


def _shows_recorded(gallery_page: str | None) -> bool:
    shown = {"lesson": run_store.current_origin() == "recorded",
             "lab": run_store.kept_of(run_store.RecordedLab, "recorded_lab") is not None,
             "serving": run_store.kept_of(run_store.ServingSet, "recorded_serving") is not None}
    return shown.get(gallery_page, False)


def link_for(path: str, settings: ServerSettings, model_choices) -> tuple[str, bool]:
    """(the URL that reopens this view, whether the prompt had to be left out for its length)."""
    fields = page_fields(path, settings, model_choices)
    query = query_for(fields, current_values(path, fields))
    base = st.context.url or "/"
    base = base if base.endswith("/") else base + "/"
    url = link_url(base, path, query)
    if len(url) <= MAX_URL_CHARS or "prompt" not in query:
        return url, False
    return link_url(base, path, {k: v for k, v in query.items() if k != "prompt"}), True


def link_box(lang: str, path: str, settings: ServerSettings, model_choices) -> None:
    """In the sidebar, drawn after the page (its step and the labs' settings as they are now)."""
    url, left_out = link_for(path, settings, model_choices)
    with st.sidebar, st.expander(t(lang, "link_title"), icon=":material/link:"):
        st.caption(t(lang, "link_intro"))
        st.code(url, language=None, wrap_lines=True)  # its copy button copies the link
        if left_out:
            st.caption(t(lang, "link_prompt_left_out", n=f"{len(st.session_state.prompt):,}"))

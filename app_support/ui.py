"""Small Streamlit building blocks: an error boundary, a diagram with its
download and raw-SVG view, metric cards, and the page's static CSS.

SVG is shown with `st.image`, i.e. inside an <img>: a browser never runs
scripts there, so token text drawn into a diagram stays text. Raw HTML is only
ever the fixed CSS below, never anything a visitor typed.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path

import streamlit as st

from lesson.messages import error_message
from lesson.metric_cards import MetricCard
from lesson.serving_views import name_column_px
from lesson.text import t

from .run_store import StoredRun

log = logging.getLogger("prefill_decode.app")

# A phone's latency chart (lesson/charts/run.py) has a plot about 150 px wide beside its level lines' labels,
# where its up to 8 pass labels crowd: there only the first and the last pass are labelled (they stand at least
# half the plot apart). The rule, without its media query, is what the chart's browser test applies.
PHONE_CHART_RULE = ".js-plotly-plot .xtick:not(:first-child):not(:last-child) text { display: none !important; }"

BASE_CSS = """
<style>
.block-container { max-width: 1180px; padding-top: 2.2rem; }
h1 { font-size: 2.1rem !important; line-height: 1.25 !important; }
[data-testid="stMetricValue"] { font-size: 1.7rem; }
[data-testid="stCaptionContainer"] { font-size: 0.92rem; }
/* Phones: below this width a figure keeps its own size (1 SVG unit = 1 px, labels 11-22 px)
   and its box scrolls sideways, instead of shrinking the labels to 4-5 px. */
@media (max-width: 720px) {
  [class*="st-key-figure-"] { overflow-x: auto; overscroll-behavior-x: contain; }
  [class*="st-key-figure-"] [data-testid="stImage"],
  [class*="st-key-figure-"] [data-testid="stImageContainer"] {
    max-width: none !important; width: max-content !important; }
  [class*="st-key-figure-"] img { width: auto !important; max-width: none !important; }
  /* Streamlit centres an image: a wider one would spill off the left edge, out of scroll's reach. */
  [class*="st-key-figure-"] * { align-items: flex-start !important; justify-content: flex-start !important; }
}
/* A file uploader's own line ("20MB per file • JSON") is Streamlit's English and its server-wide cap,
   not what the app reads: the label above it says the format and the limit in the page's language. */
[data-testid="stFileUploaderDropzoneInstructions"] { display: none !important; }
/* A figure's full screen fills the screen's width (Streamlit fits its height: a tall figure came out at
   half the width); a taller one scrolls inside it. Only the frame shown full screen (its button then
   closes it): the same frame holds every image on the page. */
[data-testid="stFullScreenFrame"]:has(button[aria-label^="Close fullscreen"]) { overflow-y: auto !important; }
[data-testid="stFullScreenFrame"]:has(button[aria-label^="Close fullscreen"]) [data-testid="stImage"],
[data-testid="stFullScreenFrame"]:has(button[aria-label^="Close fullscreen"]) [data-testid="stImageContainer"] {
  height: auto !important; max-height: none !important; }
[data-testid="stFullScreenFrame"]:has(button[aria-label^="Close fullscreen"]) [data-testid="stImageContainer"] img {
  width: 100% !important; height: auto !important; max-height: none !important; }
/* A presenter's key presses a button: no thick focus frame on the projector where the page was clicked.
   Streamlit draws the main area's keyboard focus as a shadow on a sticky ::before under the header (a frame
   from y≈62 through the figures once a key was pressed after a click on the page's text), not as an outline. */
[data-testid="stMain"]:focus, [data-testid="stMain"]:focus-visible,
[data-testid="stAppViewContainer"]:focus, [data-testid="stAppViewContainer"]:focus-visible { outline: none !important; }
[data-testid="stMain"]:focus-visible::before { box-shadow: none !important; }
/* A widget's label in a narrow column wraps rather than ending in an ellipsis: at 1024 px the header's
   toggle read "Classroom m…" and the lab's button "重新…". */
[data-testid="stMain"] .stMarkdownEllipsis, [data-testid="stMain"] .stMarkdownEllipsis p {
  white-space: normal !important; text-overflow: clip !important; overflow: visible !important; }
/* An in-page script (an st.html holding one script element alone: the keys, the wait clock, Streamlit's
   words) takes no room: each one's element otherwise added the column's 16 px gap and pushed the presenter's
   figure down. (No markup in these comments: a tag named in one dropped the rule after it.) */
[data-testid="stElementContainer"]:has([data-testid="stHtml"] script:only-child) { display: none !important; }
/* Each paragraph of the prompt box takes its direction from its first strong character, so a right-to-left
   prompt (Arabic, Hebrew) is right-aligned and reads in order (app_support/run_panel.py's prompt box). */
.st-key-prompt textarea { unicode-bidi: plaintext; text-align: start; }
/* A phone's scrollbars are hidden until touched: a line under each figure says it scrolls. */
@media (min-width: 721px) { [class*="st-key-scrollhint-"] { display: none !important; } }
/* A figure drawn twice (the timeline: lesson.style.phone_style's narrow layout beside the wide one): a phone
   shows the narrow drawing, which fits its column (nothing to scroll), and every wider screen the wide one. */
@media (min-width: 721px) { [class*="st-key-narrowfig-"] { display: none !important; } }
@media (max-width: 720px) { [data-testid="stMain"]:has(.st-key-narrowfig-timeline)
  :is(.st-key-figure-timeline, .st-key-scrollhint-timeline) { display: none !important; }
  /* a phone's headings smaller, so the timeline's time axis is on the first screen (tests/browser) */
  h1 { font-size: 1.6rem !important; } [data-testid="stMain"] h2 { font-size: 1.35rem !important; } }
@media (max-width: 720px) { PHONE_CHART_RULE }
</style>
""".replace("PHONE_CHART_RULE", PHONE_CHART_RULE)

CLASSROOM_CSS = """
<style>
[data-testid="stMain"] .stMarkdown p, [data-testid="stMain"] .stMarkdown li,
[data-testid="stMain"] .stMarkdown td, [data-testid="stMain"] .stMarkdown th {
  font-size: 1.28rem !important; line-height: 1.65 !important; }
[data-testid="stMain"] h1 { font-size: 2.7rem !important; }
[data-testid="stMain"] h2 { font-size: 2.1rem !important; }
[data-testid="stMain"] h3 { font-size: 1.7rem !important; }
[data-testid="stMain"] [data-testid="stMetricValue"] { font-size: 2.4rem !important; }
[data-testid="stMain"] [data-testid="stMetricLabel"] p { font-size: 1.3rem !important; }
[data-testid="stMain"] [data-testid="stCaptionContainer"] p { font-size: 1.1rem !important; }
[data-testid="stMain"] [data-testid="stWidgetLabel"] p { font-size: 1.15rem !important; }
[data-testid="stMain"] [data-testid="stCode"] code { font-size: 1.15rem !important; }
.stButton button p { font-size: 1.1rem !important; }
/* Narrower than 1280 (a 1024x768 projector): a narrower sidebar and slimmer margins give the figures
   back their width, and the body text follows the figures' scale (a figure's 21-unit labels are drawn
   at 21 x column / 820 px), so no label is ever smaller than the text around it. */
@media (max-width: 1279px) {
  [data-testid="stSidebar"] { width: 240px !important; min-width: 240px !important; max-width: 240px !important; }
  [data-testid="stMainBlockContainer"] { padding-left: 1rem !important; padding-right: 1rem !important; }
  [data-testid="stMain"] .stMarkdown p, [data-testid="stMain"] .stMarkdown li,
  [data-testid="stMain"] .stMarkdown td, [data-testid="stMain"] .stMarkdown th {
    font-size: clamp(1rem, calc((100vw - 272px) * 21 / 820), 1.28rem) !important; }
}
</style>
"""


PRESENTER_CSS = """
<style>
/* The presenter view (app_support/presenter.py): no page header, slim margins, and the figure scaled to
   fit the window below its row of controls, above its notes (1280x720 and 1024x768: no scrolling). */
.st-key-page-header, .st-key-presenter-jumps, .st-key-presenter-figure-keys { display: none !important; }
[data-testid="stMainBlockContainer"] { padding: 1.2rem 1.5rem 0.5rem 1.5rem !important; max-width: none !important; }
.st-key-presenter-figure [data-testid="stImageContainer"] img {
  max-height: calc(100vh - 130px) !important; width: auto !important; max-width: 100% !important;
  margin: 0 auto; display: block; }
</style>
"""


def inject_css(classroom: bool, presenter: bool = False) -> None:
    """Fixed CSS only (no user text): larger type in classroom mode; the presenter view's fitted figure."""
    st.html(BASE_CSS + (CLASSROOM_CSS if classroom else "") + (PRESENTER_CSS if classroom and presenter else ""))


@contextlib.contextmanager
def error_boundary(lang: str, key: str = "err_internal") -> Iterator[None]:
    """Turn any error in a section into a message in the page's language.

    Streamlit's own rerun/stop signals derive from BaseException and pass through.
    """
    try:
        yield
    except Exception as err:  # noqa: BLE001 - the page must never show a traceback
        log.exception("section failed")
        if getattr(err, "key", None):
            st.error(error_message(err, lang))
        else:
            st.error(t(lang, key, kind=type(err).__name__))


def svg_figure(name: str, svg: str, lang: str, caption: str | None = None, *, alt: str, file_stem: str,
               narrow_svg: str | None = None) -> None:
    """A diagram with its text alternative, then its SVG download (`file_stem`.svg) and,
    on demand, its source (wrapped: the SVG is one long line).

    `alt` is plain text set as the <img>'s alt attribute (lesson.alt_text.figure_alt),
    never parsed as markup. On a phone the figure keeps its own width and scrolls sideways, or, given
    `narrow_svg` (the same figure drawn for a phone's column), the phone shows that one instead (BASE_CSS).
    """
    with st.container(key=f"figure-{name}"):  # the box that scrolls sideways on a phone (BASE_CSS)
        st.image(svg, width="stretch", alt=alt)
    if narrow_svg is not None:
        with st.container(key=f"narrowfig-{name}"):  # shown only on a phone (BASE_CSS)
            st.image(narrow_svg, width="content", alt=alt)
    with st.container(key=f"scrollhint-{name}"):  # shown only on a phone, where the box scrolls (BASE_CSS)
        st.caption(t(lang, "figure_scroll_hint"))
    if caption:
        st.caption(caption)
    with st.container(horizontal=True, vertical_alignment="center", gap="large"):  # one block, not three
        st.download_button(
            t(lang, "download_svg"), data=svg, file_name=f"{file_stem}.svg", mime="image/svg+xml",
            key=f"download_svg_{name}", on_click="ignore", icon=":material/download:",
        )
        shown = st.toggle(t(lang, "raw_svg"), key=f"raw_svg_{name}")
    if shown:
        st.code(svg, language="xml", height=320, wrap_lines=True)


def felt_source(run: StoredRun) -> str:
    """Whose times the stored run's TTFT can show, one rule for the TTFT bar and the run's files:
    "recorded" or "first_view" (the engine's alone), "trace" (the page timed nothing of it), "felt" (the page
    timed this visitor's run 1 and run 1 is the repeat drawn), "felt_other_run" (timed run 1, another repeat
    drawn: the TTFT bar then draws run 1, StoredRun.felt_run, never one run's parts beside another's)."""
    if run.origin != "measured":
        return run.origin
    if run.felt is None:
        return "trace"
    return "felt_other_run" if run.first_run is not None else "felt"


def metric_row(cards: list[MetricCard]) -> None:
    """TTFT / TPOT / ITL p99 / E2EL side by side: each value, what it is a median of (its range
    and number of runs, lesson.metric_cards.metric_cards) and its definition."""
    for column, card in zip(st.columns(len(cards) or 1, border=True), cards):
        with column:
            st.metric(card.label, card.value, help=card.definition)
            st.caption(join_paragraphs(card.spread, card.definition))  # our own words and numbers


def join_paragraphs(*texts: str | None) -> str:
    """Markdown paragraphs, one element's text: what the page once sent as one element each, in order (a
    page sends one websocket message per element: tests/app/test_page_size.py). Empty ones are left out."""
    return "\n\n".join(text for text in texts if text)


# Classroom keys -> the keys of the buttons they press, the first on the page (buttons carry `st-key-<key>`
# classes): the presenter view's (app_support/presenter.py), else the sidebar's. A clicker sends Page Down /
# Page Up (some Space, Enter, → ←, Backspace) and B or . for "blank"; the keys are reveal.js's. ↑ ↓ change the
# presenter view's figure (on the scrolling page they scroll it, as ever); Esc leaves the presenter view.
NEXT_BUTTONS, BACK_BUTTONS = ["pres_next", "class_next"], ["pres_prev", "class_prev"]
CLASSROOM_KEYS = {"ArrowRight": NEXT_BUTTONS, "PageDown": NEXT_BUTTONS, " ": NEXT_BUTTONS, "Enter": NEXT_BUTTONS,
                  "ArrowLeft": BACK_BUTTONS, "PageUp": BACK_BUTTONS, "Backspace": BACK_BUTTONS,
                  "Home": ["pres_first", "class_reset"], "End": ["pres_last", "class_all"],
                  "ArrowDown": ["pres_fig_next"], "ArrowUp": ["pres_fig_prev"], "Escape": ["pres_leave"]}
BLANK_KEYS = ["b", "B", "."]  # blank the screen in classroom mode; any key brings it back (the script alone)

# One keydown listener on the page (classroom_keys.js), attached once per browser tab (a flag on
# window guards against every rerun adding another). It presses the button, so a key is exactly a
# click: the same callback, the same rerun. Keys typed into a text box, slider, select or an
# editable element stay with that element. A button that is not on the page (classroom mode off)
# is simply not pressed. Read once, at import; the key map is filled in where it says
# __CLASSROOM_KEYS__.
KEYBOARD_BRIDGE_JS = Path(__file__).with_name("classroom_keys.js").read_text(encoding="utf-8")


def classroom_keyboard() -> None:
    """Arrow keys, Page Up/Down, Space, Enter, Backspace (a presenter's clicker), Home, End and Esc press the
    classroom buttons; B or . blanks the screen.

    Fixed script, no user text; runs in the page itself (st.html), not in an iframe.
    """
    script = (KEYBOARD_BRIDGE_JS.replace("__CLASSROOM_KEYS__", json.dumps(CLASSROOM_KEYS))
              .replace("__BLANK_KEYS__", json.dumps(BLANK_KEYS)))
    st.html(f"\n<script>\n{script}</script>\n", unsafe_allow_javascript=True)


# Every wait on the page says how long it has lasted (wait_clock.js): spinners and progress bars while the
# script runs, and the slide kit's zip while the browser waits for it. Read once, at import.
WAIT_CLOCK_JS = Path(__file__).with_name("wait_clock.js").read_text(encoding="utf-8")
POSITION_BARS = ["class_position", "presenter-position"]  # progress bars that say the classroom's step, not a wait
KIT_BUTTONS = ["kit_download", "kit_download_serving"]  # app_support/slide_kit.py's download buttons


def wait_clock_js(lang: str) -> str:
    """The seconds each wait has lasted, in the page's language, under it. Fixed script and words."""
    words = {"elapsed": t(lang, "wait_elapsed"), "kit": t(lang, "wait_kit")}
    return (WAIT_CLOCK_JS.replace("__WAIT_WORDS__", json.dumps(words, ensure_ascii=False))
            .replace("__NOT_WAITS__", json.dumps(POSITION_BARS)).replace("__KIT_BUTTONS__", json.dumps(KIT_BUTTONS)))


# Streamlit's own English that a page can reach (its buttons' aria-labels and titles, the uploader's button), by
# its lesson.text key; what stays English is listed in docs/app.md. "Close fullscreen" stays: the CSS above and
# classroom_keys.js find a figure shown full screen by it.
STREAMLIT_WORDS = {"Copy to clipboard": "st_copy", "Increment": "st_increment", "Decrement": "st_decrement",
                   "Upload": "st_upload", "file upload": "st_file_upload", "Fullscreen": "st_fullscreen",
                   "Collapse sidebar": "st_collapse_sidebar", "Sidebar": "st_sidebar", "App pages": "st_app_pages",
                   "Link to heading": "st_link_to_heading", "Open": "st_open", "Search": "st_search",
                   "Show/hide columns": "st_show_hide_columns", "Download as CSV": "st_download_csv"}
STREAMLIT_PREFIXES = {"Help for ": "st_help_for", "Fullscreen: ": "st_fullscreen_of"}  # "{label}" follows
STREAMLIT_WORDS_JS = Path(__file__).with_name("streamlit_words.js").read_text(encoding="utf-8")


def streamlit_words_js(lang: str) -> str:
    """Streamlit's own English words on the page in the page's language (none for English). Fixed script;
    the words are this app's, and a label's own text is only ever copied into an attribute."""
    if lang == "en":
        words = {"exact": {}, "prefixes": {}}
    else:
        words = {"exact": {english: t(lang, key) for english, key in STREAMLIT_WORDS.items()},
                 "prefixes": {prefix: t(lang, key, label="{label}") for prefix, key in STREAMLIT_PREFIXES.items()}}
    return STREAMLIT_WORDS_JS.replace("__STREAMLIT_WORDS__", json.dumps(words, ensure_ascii=False))


def page_scripts(lang: str) -> None:
    """Every page's in-page scripts (the wait clock, Streamlit's words), one element: a page sends one
    websocket message per element. Each script is a self-contained function call; fixed code and words."""
    st.html(f"\n<script>\n{wait_clock_js(lang)}\n{streamlit_words_js(lang)}</script>\n", unsafe_allow_javascript=True)


def metric_dataframe(records: list[dict[str, str]]) -> None:
    """The serving metric table (lesson.serving_views.metric_records) with every row shown, its first
    column (the metric names) as wide as its longest name and pinned: a narrow page scrolls the runs'
    columns sideways, it never cuts a name."""
    name = next(iter(records[0]))
    st.dataframe(records, hide_index=True, width="stretch", height=35 * (len(records) + 1) + 3,
                 column_config={name: st.column_config.TextColumn(width=name_column_px(records), pinned=True)})


def scroll_into_view(key: str) -> None:
    """Scroll the page so the container with `key` (a fixed name from this code, never user text)
    is at the top of the window: a button far below brings the figures it changed into view."""
    if not re.fullmatch(r"[a-z0-9-]+", key):
        raise ValueError(f"not a container key: {key!r}")
    script = ("setTimeout(function () { var box = document.querySelector('.st-key-" + key + "');"
              " if (box) { box.scrollIntoView({block: 'start'}); } }, 60);")
    st.html(f"\n<script>\n{script}\n</script>\n", unsafe_allow_javascript=True)


# Plotly's own English in its mode bar (tooltips and the screen reader's words), by its lesson.text key.
PLOTLY_WORDS = {"Download plot as a PNG": "pl_download_png", "Zoom": "pl_zoom", "Pan": "pl_pan",
                "Zoom in": "pl_zoom_in", "Zoom out": "pl_zoom_out", "Autoscale": "pl_autoscale",
                "Reset axes": "pl_reset_axes", "Box Select": "pl_box_select", "Lasso Select": "pl_lasso_select",
                "Double-click to zoom back out": "pl_double_click"}


def plotly_config(lang: str) -> dict:
    """A chart's plotly config: no logo, and its mode bar's words in the page's language (a locale given
    inline, as plotly.js registers one). Streamlit's own fullscreen button keeps its English."""
    config = {"displaylogo": False}
    if lang == "en":
        return config
    locale = f"{lang}-lesson"
    words = {english: t(lang, key) for english, key in PLOTLY_WORDS.items()}
    return config | {"locale": locale, "locales": {locale: {"dictionary": words, "format": {}}}}


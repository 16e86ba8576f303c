"""The slide kit: every figure of a run as SVG and PNG, and one offline slides.html, in a zip.

    slides = lesson_slides(trace, lang="zh", style=classroom_style(), run_name="run3")
    slides += serving_slides(runs, lang="zh", tag=run_set_tag(run_jsons))
    data = slide_kit(slides, lang="zh", title=t("zh", "kit_deck_title"))   # the zip, as bytes

Pure: plain values in, bytes out; no streamlit. A slide is one figure with its title, caption
and speaker notes (the lesson's own sentence for that figure, from lesson.text, as plain text).

- File names say run, figure and language (`run3_timeline_zh.svg`, `serving_long-prompt-during-chats_
  3fa2c1_chunked_gantt_zh.png`) and never collide: a serving figure carries its scenario and the tag of
  the run set it came from, and a name met twice gets a counter (`unique_names`).
- PNGs are drawn at projector resolution (PNG_WIDTH px wide) by CairoSVG (the system's cairo library),
  never a browser. Cairo does not know SVG's `paint-order`, so a label drawn with a white halo would be
  covered by its own halo: `rasterizable` draws the halo first, as a copy of its own (PNG only; the
  SVGs in the zip are the page's, byte for byte).
- slides.html works offline: every figure is inlined as a data URI in an <img> (the SVG never becomes
  part of the page, so a figure's ids cannot clash with another's and no script in it could run), no
  http(s) reference, one fixed script for the keys; every text is escaped (a prompt `<script>` stays text).
"""

from __future__ import annotations

import base64
import hashlib
import html
import io
import re
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from xml.etree import ElementTree

from engine.contract.serving.trace import ServingRun
from engine.contract.trace import RequestTrace

from .alt_text import figure_alt, schematic_alt, with_run_note
from .diagrams import DIAGRAMS, RUN_NOTED, render_animation, render_blocks_schematic
from .diagrams.batch_composition import render_batch_composition
from .diagrams.kv_blocks import render_kv_blocks
from .diagrams.serving_gantt import policy_label, render_serving_gantt, scenario_label
from .diagrams.prefix_cache import render_prefix_cache
from .diagrams.serving_metrics import render_serving_metrics
from .serving_views import figure_alt as serving_figure_alt
from .serving_views import metrics_alt, what_to_see
from .prefix_views import prefix_alt
from .style import DEFAULT_STYLE, Style, classroom_style
from .svgtext import visible
from .text import check_language, t

PNG_WIDTH = 1920  # px: a 1080p projector's width
# slides.html draws each figure again for a landscape screen, in the classroom's type, as the presenter view
# does (app_support/presenter.py): the page's 820-unit drawing, tall and with 11-unit labels in normal mode,
# came out at 820 px with 11 px labels on a 1280x720 projector. The zip's SVG and PNG files stay the page's.
SCREEN_STYLE = classroom_style(width=1280)
SVG_NS = "http://www.w3.org/2000/svg"
ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # every entry's date: the same figures make the same zip


@dataclass(frozen=True)
class Slide:
    """One figure of the deck: `name` is its file stem (run, figure, language), `svg` the figure as the
    page shows it, `still` what its PNG is drawn from (an animation's last frame; else `svg`).
    `title`, `caption`, `notes` and `alt` are plain text (escaped wherever they are written); `screen` the
    figure as slides.html shows it (drawn in SCREEN_STYLE; "" for `svg` itself)."""

    name: str
    svg: str
    title: str
    caption: str
    notes: str
    alt: str
    still: str = ""
    screen: str = ""

    @property
    def png_source(self) -> str:
        return self.still or self.svg

    @property
    def screen_source(self) -> str:
        return self.screen or self.svg


# --- names --------------------------------------------------------------------------

def safe_name(text: str, most: int = 40) -> str:
    """A piece of a file name: letters, digits, '.', '_' and '-' kept, anything else '-', at most `most`."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.") or "x"
    return cleaned[:most]


def run_set_tag(run_jsons: Sequence[str]) -> str:
    """Six hex digits that tell one set of serving runs from another (the same runs: the same tag)."""
    digest = hashlib.sha1()
    for run_json in run_jsons:
        digest.update(run_json.encode("utf-8"))
        digest.update(b"\0")
    return digest.hexdigest()[:6]


def serving_stem(run: ServingRun, figure: str, tag: str) -> str:
    """The file stem of a serving figure: its scenario, its run set, its policy and the figure, so the
    Gantt of chunked prefill in one scenario never takes the name of another's ("metrics": every policy)."""
    policy = "" if figure == "metrics" else f"_{run.settings.policy}"
    return f"serving_{safe_name(run.scenario)}_{safe_name(tag, 12)}{policy}_{figure}"


def unique_names(names: Sequence[str]) -> list[str]:
    """`names` in order, a name met again given "-2", "-3", ... (never one already taken)."""
    taken: set[str] = set()
    out = []
    for name in names:
        candidate, n = name, 1
        while candidate in taken:
            n += 1
            candidate = f"{name}-{n}"
        taken.add(candidate)
        out.append(candidate)
    return out


# --- words --------------------------------------------------------------------------

_LINK = re.compile(r"\[([^\]]*(?:\[[^\]]*\][^\]]*)?)\]\([^)]*\)")  # [text](url), also [[1]](#references)


def plain_text(markdown: str) -> str:
    """The lesson's Markdown as plain text for a caption or a note: links keep their text, emphasis
    marks and code ticks go."""
    text = _LINK.sub(r"\1", markdown)
    return re.sub(r"\*\*|__|`", "", text).replace("*", "")


def words(lang: str, key: str, **params) -> str:
    return plain_text(t(lang, key, **params))


_STAMP = re.compile(r"([0-9]{4})([0-9]{2})([0-9]{2})-([0-9]{2})([0-9]{2})([0-9]{2})")


def stamp_words(stamp: str) -> str:
    """A run's stamp ("20261201-192528", lesson.downloads.run_stamp: for file names) as a reader
    writes a date and time: "2026-12-01 19:25:28"; anything else as it is."""
    match = _STAMP.fullmatch(stamp.strip())
    if match is None:
        return stamp
    year, month, day, hour, minute, second = match.groups()
    return f"{year}-{month}-{day} {hour}:{minute}:{second}"


# The lesson's figures, in the page's order: (figure, its section's heading, caption, the lesson's sentence).
LESSON_FIGURES = (
    ("timeline", "sec_timeline", "timeline_caption", "timeline_2"),
    ("ttft_parts", "sec_timeline", "ttft_parts_caption", "timeline_1"),
    ("blocks", "sec_prefill", "blocks_caption", "prefill_2"),
    ("kv_growth", "sec_decode", "kv_caption", "decode_2"),
    ("blocks_schematic", "sec_blocks", "kit_schematic_caption", "blocks_note"),
    ("latency", "sec_waits", "latency_caption", "waits_1"),
    ("animation", "sec_animation", "kit_animation_caption", "decode_1"),
    ("review_map", "sec_review", "review_caption", "summary"),
)
SERVING_FIGURES = (  # (figure, its tab's name, caption, the lesson's sentence)
    ("gantt", "sl_tab_gantt", "sl_explain_gantt", None),  # None: the scenario's own (serving_views.what_to_see)
    ("batch", "sl_tab_batch", "sl_explain_batch", "many_1"),
    ("kv", "sl_tab_kv", "sl_explain_kv", "many_1"),
)


# --- the slides of a run ------------------------------------------------------------

def lesson_slides(trace: RequestTrace, *, lang: str, run_name: str, style: Style = DEFAULT_STYLE,
                  sketch: tuple[int, int] = (4, 2), run_note: str = "",
                  floors_ms: Sequence[float] | None = None) -> list[Slide]:
    """Every figure of the lesson for the whole run `trace`, in the page's order, named
    `<run_name>_<figure>_<lang>`; `sketch`: the block sketch's (prompt, answer) lengths; `run_note`:
    which of several repeats the run is (lesson.spread.run_label), on the figures that quote its times;
    `floors_ms`: each pass's floor on the measuring machine's roofs, drawn by the timeline as the page does."""
    check_language(lang)
    run = safe_name(run_name)
    slides = []
    for figure, title, caption, notes in LESSON_FIGURES:
        svg, alt, still = _lesson_figure(figure, trace, lang, style, sketch, run_note, floors_ms)
        screen = _lesson_figure(figure, trace, lang, SCREEN_STYLE, sketch, run_note, floors_ms)[0]
        slides.append(Slide(f"{run}_{figure}_{lang}", svg, words(lang, title),
                            words(lang, caption, p=sketch[0], o=sketch[1]), words(lang, notes), alt, still, screen))
    return slides


def _lesson_figure(figure: str, trace: RequestTrace, lang: str, style: Style, sketch: tuple[int, int],
                   run_note: str = "", floors_ms: Sequence[float] | None = None) -> tuple[str, str, str]:
    """(the SVG, its alt text, the still its PNG is drawn from: "" for the SVG itself)."""
    if figure == "blocks_schematic":
        return (render_blocks_schematic(*sketch, lang=lang, style=style), schematic_alt(*sketch, lang), "")
    noted = {"run_note": run_note} if run_note and figure in RUN_NOTED else {}
    floors = {"floors_ms": floors_ms} if floors_ms is not None and figure == "timeline" else {}
    # ttft_parts from a trace alone: the engine's parts of TTFT (the visitor's are the page's)
    svg = DIAGRAMS[figure](trace, lang=lang, style=style, **noted, **floors)
    still = render_animation(trace, lang=lang, still=True, style=style, **noted) if figure == "animation" else ""
    return svg, with_run_note(figure_alt(figure, trace, lang), noted.get("run_note", "")), still


def serving_slides(runs: Sequence[ServingRun], *, lang: str, tag: str, style: Style = DEFAULT_STYLE) -> list[Slide]:
    """The serving lab's figures of one set of runs (one per policy, same workload): the metrics of
    every policy, then each figure for each policy (batch and KV only for runs with iterations)."""
    check_language(lang)
    if not runs:
        return []
    first = runs[0]
    scenario = visible(scenario_label(lang, first.scenario))  # a file's scenario name: controls, bidi shown
    slides = [Slide(f"{serving_stem(first, 'metrics', tag)}_{lang}",
                    render_serving_metrics(list(runs), lang=lang, style=style), words(lang, "sv_table_title"),
                    scenario, words(lang, "many_1"), visible(metrics_alt(runs, lang)),
                    screen=render_serving_metrics(list(runs), lang=lang, style=SCREEN_STYLE))]
    render = {"gantt": render_serving_gantt, "batch": render_batch_composition, "kv": render_kv_blocks}
    for figure, title, caption, notes in SERVING_FIGURES:
        for run in runs:
            if figure != "gantt" and not run.iterations:
                continue  # a run observed from a client has no passes to draw
            heading = f"{words(lang, title)} · {policy_label(lang, run.settings.policy)}"
            slides.append(Slide(f"{serving_stem(run, figure, tag)}_{lang}", render[figure](run, lang=lang, style=style),
                                heading, f"{scenario} · {words(lang, caption)}",
                                words(lang, notes) if notes else plain_text(what_to_see(runs, lang)),
                                visible(serving_figure_alt(figure, run, lang)),
                                screen=render[figure](run, lang=lang, style=SCREEN_STYLE)))
    for run in runs:  # prefix caching on: which request holds which block (lesson/diagrams/prefix_cache.py)
        if run.settings.prefix_caching and run.iterations:
            slides.append(Slide(f"{serving_stem(run, 'prefix', tag)}_{lang}", render_prefix_cache(run, lang=lang,
                                style=style), f"{words(lang, 'pc_tab')} · {policy_label(lang, run.settings.policy)}",
                                f"{scenario} · {words(lang, 'pc_explain')}", words(lang, "pc_note_hash"),
                                visible(prefix_alt(run, lang)),
                                screen=render_prefix_cache(run, lang=lang, style=SCREEN_STYLE)))
    return slides


# --- SVG to PNG ---------------------------------------------------------------------

def rasterizable(svg: str) -> str:
    """`svg` as cairo can draw it: each element painted stroke-first (`paint-order="stroke"`, a label's
    halo) becomes two, its stroke alone and then its fill alone, so the halo lies under the text."""
    ElementTree.register_namespace("", SVG_NS)
    root = ElementTree.fromstring(svg)
    for parent in list(root.iter()):  # listed first: halos are inserted while walking
        for index in range(len(parent) - 1, -1, -1):
            child = parent[index]
            if child.get("paint-order", "").strip().startswith("stroke"):
                halo = _copy(child)
                halo.set("fill", "none")
                del halo.attrib["paint-order"]
                del child.attrib["paint-order"]
                child.set("stroke", "none")
                parent.insert(index, halo)
    return ElementTree.tostring(root, encoding="unicode")


def _copy(element: ElementTree.Element) -> ElementTree.Element:
    clone = ElementTree.Element(element.tag, dict(element.attrib))
    clone.text, clone.tail = element.text, None
    clone.extend(_copy(child) for child in element)
    for original, copied in zip(element, clone):
        copied.tail = original.tail
    return clone


def svg_to_png(svg: str, width: int = PNG_WIDTH) -> bytes:
    """The figure as a PNG `width` px wide (its height follows the viewBox), drawn by CairoSVG."""
    # Imported here: CairoSVG loads the system's cairo library when imported, and nothing else in the
    # lesson (figures, words, the export) may fail because a machine lacks it.
    import cairosvg

    return cairosvg.svg2png(bytestring=rasterizable(svg).encode("utf-8"), output_width=width)


# --- slides.html --------------------------------------------------------------------

SLIDES_CSS = """
html, body { margin: 0; height: 100%; background: #fff; color: #0f172a;
  font-family: 'Noto Sans CJK SC', 'Noto Sans SC', 'PingFang SC', 'Microsoft YaHei', 'Segoe UI', Arial, sans-serif; }
.slide { display: none; box-sizing: border-box; height: 100vh; padding: 2vh 3vw; flex-direction: column; }
.slide.current { display: flex; }
.slide h1 { font-size: 4.2vh; margin: 0 0 1vh; }
.slide .subtitle { font-size: 2.6vh; color: #475569; margin: 0; }
.slide figure { flex: 1 1 auto; min-height: 0; margin: 0; display: flex; align-items: center; justify-content: center; }
/* the figure fills what the heading and caption leave, larger or smaller than drawn (its aspect kept) */
.slide figure img { width: 100%; height: 100%; object-fit: contain; }
.slide .caption { font-size: 2.2vh; color: #475569; margin: 1vh 0 0; }
.slide .notes { display: none; font-size: 2.2vh; border-top: 1px solid #e2e8f0; margin-top: 1vh; padding-top: 1vh; }
body.show-notes .slide .notes { display: block; }
.counter { position: fixed; right: 1.5vw; bottom: 1vh; font-size: 1.8vh; color: #475569; }
.title-slide { justify-content: center; }
.title-slide h1 { font-size: 6vh; }
"""

# Fixed code, no data: the slides are found in the page. Keys: → Page Down Space next, ← Page Up back,
# Home / End first / last, N the speaker notes. The slide shown is kept in the address's #hash.
SLIDES_JS = """
(function () {
  var slides = document.querySelectorAll('.slide');
  var counter = document.getElementById('counter');
  var index = 0;
  function show(i) {
    index = Math.max(0, Math.min(slides.length - 1, i));
    for (var k = 0; k < slides.length; k++) { slides[k].classList.toggle('current', k === index); }
    counter.textContent = (index + 1) + ' / ' + slides.length;
    if (history.replaceState) { history.replaceState(null, '', '#' + (index + 1)); }
  }
  document.addEventListener('keydown', function (event) {
    var key = event.key;
    if (key === 'ArrowRight' || key === 'PageDown' || key === ' ') { show(index + 1); }
    else if (key === 'ArrowLeft' || key === 'PageUp') { show(index - 1); }
    else if (key === 'Home') { show(0); }
    else if (key === 'End') { show(slides.length - 1); }
    else if (key === 'n' || key === 'N') { document.body.classList.toggle('show-notes'); return; }
    else { return; }
    event.preventDefault();
  });
  var start = parseInt((location.hash || '#1').slice(1), 10);
  show(isNaN(start) ? 0 : start - 1);
})();
"""


def _escape(text: str) -> str:
    return html.escape(text, quote=True)


def _data_uri(svg: str) -> str:
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode("utf-8")).decode("ascii")


def _slide_html(number: int, slide: Slide, notes_label: str) -> str:
    return (f'<section class="slide" id="slide-{number}" data-name="{_escape(slide.name)}">\n'
            f"<h1>{_escape(slide.title)}</h1>\n"
            f'<figure><img alt="{_escape(slide.alt)}" src="{_data_uri(slide.screen_source)}"></figure>\n'
            f'<p class="caption">{_escape(slide.caption)}</p>\n'
            f'<aside class="notes"><strong>{_escape(notes_label)}</strong> {_escape(slide.notes)}</aside>\n'
            "</section>")


def slides_html(slides: Sequence[Slide], *, lang: str, title: str, subtitle: str = "") -> str:
    """One self-contained HTML file: a title slide, then one slide per figure (heading, the figure,
    caption, speaker notes shown with N), arrow keys to step; no network, no external script."""
    check_language(lang)
    head = (f'<section class="slide title-slide" id="slide-1">\n<h1>{_escape(title)}</h1>\n'
            f'<p class="subtitle">{_escape(subtitle)}</p>\n'
            f'<p class="caption">{_escape(t(lang, "kit_keys_hint"))}</p>\n</section>')
    body = "\n".join([head] + [_slide_html(k, s, t(lang, "kit_notes")) for k, s in enumerate(slides, start=2)])
    return (f'<!DOCTYPE html>\n<html lang="{lang}">\n<head>\n<meta charset="utf-8">\n'
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            # Nothing from outside: no network, and nothing but this page's own style and script.
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; "
            "style-src 'unsafe-inline'; script-src 'unsafe-inline'\">\n"
            f"<title>{_escape(title)}</title>\n<style>{SLIDES_CSS}</style>\n</head>\n<body>\n{body}\n"
            f'<div class="counter" id="counter"></div>\n<script>{SLIDES_JS}</script>\n</body>\n</html>\n')


# --- the zip ------------------------------------------------------------------------

def slide_kit(slides: Sequence[Slide], *, lang: str, title: str, subtitle: str = "", png_width: int = PNG_WIDTH,
              rasterize: Callable[[str, int], bytes] | None = svg_to_png) -> bytes:
    """The zip: `<name>.svg` and `<name>.png` (`png_width` px wide) of every slide, names made unique,
    and slides.html showing them all. `rasterize=None`: no PNGs (a server without cairo)."""
    names = unique_names([s.name for s in slides])
    named = [replace(s, name=n) for s, n in zip(slides, names)]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for slide in named:
            _write(archive, f"{slide.name}.svg", slide.svg.encode("utf-8"))
            if rasterize is not None:
                _write(archive, f"{slide.name}.png", rasterize(slide.png_source, png_width), compress=False)
        _write(archive, "slides.html", slides_html(named, lang=lang, title=title, subtitle=subtitle).encode("utf-8"))
    return buffer.getvalue()


def _write(archive: zipfile.ZipFile, name: str, data: bytes, compress: bool = True) -> None:
    info = zipfile.ZipInfo(name, date_time=ZIP_TIME)
    info.compress_type = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED  # a PNG is compressed already
    info.external_attr = 0o644 << 16
    archive.writestr(info, data)


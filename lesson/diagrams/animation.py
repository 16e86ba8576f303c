"""The animated step-through: the timeline playing pass by pass, by itself.

Pure SVG: SMIL `<animate>` elements, no JavaScript, looping forever, for a
classroom screen (it replaces the lesson's 90-second video). Each row fades in
when its pass "runs", a highlight moves to the current row, and a caption says
what this pass does. Viewers without SMIL (Inkscape, LibreOffice) show the
finished timeline and the closing caption, because the animated attributes'
base values are the end state.
"""

from __future__ import annotations

from engine.contract.trace import RequestTrace

from ..layout import Slot, wrap_text
from ..text import Table, label, table_for
from ..style import DEFAULT_STYLE, Style
from ..formats import fmt_int
from ..svgtext import piece_label
from ._common import text, to_string
from .timeline import PAD, build_timeline

SECONDS = {"prefill": 3.0, "decode": 1.6, "verify": 2.4, "gap": 2.0}
HOLD_S, FADE_S, CAPTION_Y = 3.0, 0.4, 100.0


def schedule(slots: list[Slot], phases: list[str]) -> tuple[tuple[float, ...], float]:
    """Start time of each slot (seconds) and the loop's total length."""
    starts, clock = [], 0.0
    for slot, phase in zip(slots, phases):
        starts.append(clock)
        clock += SECONDS["gap" if slot.kind == "gap" else phase]
    return tuple(starts), clock + HOLD_S


def _key(t: float, total: float) -> str:
    return f"{min(max(t / total, 0.0), 1.0):.4f}"


def _fade_in(dwg, start: float, total: float):
    if start == 0:
        values, times = "0;1;1", f"0;{_key(FADE_S, total)};1"
    else:
        values, times = "0;0;1;1", f"0;{_key(start, total)};{_key(start + FADE_S, total)};1"
    return dwg.animate(attributeName="opacity", values=values, keyTimes=times, dur=f"{total:g}s",
                       repeatCount="indefinite")


def _window(dwg, start: float, end: float | None, total: float):
    """Visible (opacity 1) from start to end, hidden otherwise; discrete steps."""
    if end is None:
        values, times = ("0;1", f"0;{_key(start, total)}")
    elif start == 0:
        values, times = ("1;0", f"0;{_key(end, total)}")
    else:
        values, times = ("0;1;0", f"0;{_key(start, total)};{_key(end, total)}")
    return dwg.animate(attributeName="opacity", values=values, keyTimes=times, calcMode="discrete",
                       dur=f"{total:g}s", repeatCount="indefinite")


def _captions(trace: RequestTrace, slots: list[Slot], table: Table) -> list[str]:
    words = []
    for slot in slots:
        step = trace.steps[slot.first]
        if slot.kind == "gap":
            words.append(label(table, "anim_caption_gap", n=fmt_int(slot.count)))
        elif step.phase == "prefill":
            words.append(label(table, "anim_caption_prefill", n=fmt_int(step.num_positions),
                               token=piece_label(step.output_piece)))
        elif step.phase == "verify":  # k drafts checked at once: how many were kept, then the model's own token
            words.append(label(table, "anim_caption_verify", k=fmt_int(len(step.draft_ids)),
                               accepted=fmt_int(step.num_accepted), token=piece_label(step.output_piece)))
        else:
            words.append(label(table, "anim_caption_decode", input=piece_label(step.input_pieces[0]),
                               token=piece_label(step.output_piece)))
    return words


def _caption_size(style: Style) -> float:
    return style.font_size + 1


def _caption(dwg, words: str, style: Style, width: float, class_: str, **extra):
    """One bold line; with a width to fit, up to two lines (a group that fades as one)."""
    size = _caption_size(style)
    lines = wrap_text(words, width, size)[:2] if style.fitted else (words,)
    if len(lines) == 1:
        return text(dwg, words, PAD, CAPTION_Y, size=size, fill=style.ink, weight="bold", class_=class_, **extra)
    group = dwg.g(class_=class_, **extra)
    for i, line in enumerate(lines):
        group.add(text(dwg, line, PAD, CAPTION_Y + i * size * 1.25, size=size, fill=style.ink, weight="bold",
                       class_="caption-line"))
    return group


def render_animation(trace: RequestTrace, *, lang: str = "zh", style: Style | None = None,
                     full: RequestTrace | None = None, still: bool = False, start_pass: int = 1,
                     run_note: str = "") -> str:
    """The timeline, animated pass by pass with SMIL; loops forever. `full` as in render_timeline:
    the whole run's columns and time axis when `trace` is a prefix of it.

    `still`: the paused frame instead (the page's pause and step controls): no animation,
    every row of `trace` shown, the cursor and the caption on its last pass (the closing
    caption once `trace` is the whole run).

    `start_pass`: the loop starts at this pass (1 = Prefill), so "play" after a pause goes on
    from the pass it stopped on: every animation begins that many seconds in (a negative SMIL
    `begin`); the loop then repeats from the start as usual. `run_note`: which of several repeats this
    run is (lesson.spread.run_label), the first note, as on the timeline."""
    table, style = table_for(lang), style or DEFAULT_STYLE
    caption_lines = 2 if style.fitted else 1  # classroom: big captions wrap rather than run off the edge
    header_y = CAPTION_Y + 40 + (caption_lines - 1) * _caption_size(style) * 1.25
    dwg, layout, row_groups = build_timeline(trace, table, style, "animation", label(table, "anim_title"),
                                             header_y=header_y, full=full, run_note=run_note)
    slots = [row.slot for row in layout.rows]
    starts, total = schedule(slots, [row.phase for row in layout.rows])
    if still:
        return _still_frame(dwg, layout, trace, full, slots, table, style)
    cursor = dwg.rect((PAD - 8, layout.rows[0].y + 2), (layout.width - 2 * PAD + 16, layout.rows[0].h - 4), rx=8,
                      fill="none", stroke=style.muted_ink, stroke_width=1.5, class_="cursor")
    cursor.add(dwg.animate(attributeName="y", values=";".join(f"{r.y + 2:g}" for r in layout.rows),
                           keyTimes=";".join(_key(t, total) for t in starts), calcMode="discrete",
                           dur=f"{total:g}s", repeatCount="indefinite"))
    cursor.add(dwg.animate(attributeName="height", values=";".join(f"{r.h - 4:g}" for r in layout.rows),
                           keyTimes=";".join(_key(t, total) for t in starts), calcMode="discrete",
                           dur=f"{total:g}s", repeatCount="indefinite"))
    dwg.add(cursor)
    for group, start in zip(row_groups, starts):
        group.attribs["data-start-s"] = f"{start:g}"
        group.add(_fade_in(dwg, start, total))
    captions = _captions(trace, slots, table)
    ends = list(starts[1:]) + [total - HOLD_S]
    for i, (words, start, end) in enumerate(zip(captions, starts, ends)):
        caption = _caption(dwg, words, style, layout.width - 2 * PAD, f"caption step-{i}", opacity=0)
        caption.add(_window(dwg, start, end, total))
        dwg.add(caption)
    done = _caption(dwg, label(table, "anim_caption_done", k=fmt_int(len(trace.steps)), n=fmt_int(len(trace.steps))),
                    style, layout.width - 2 * PAD, "caption done")
    done.add(_window(dwg, total - HOLD_S, None, total))
    dwg.add(done)
    offset = next((start for slot, start in zip(slots, starts) if slot.first <= start_pass - 1 <= slot.last), 0.0)
    if offset > 0:
        _begin_at(dwg, offset)
    return to_string(dwg)


def _begin_at(element, offset: float) -> None:
    """Every <animate> under `element` begins `offset` seconds into its loop."""
    for child in getattr(element, "elements", ()):
        if getattr(child, "elementname", "") == "animate":
            child.attribs["begin"] = f"-{offset:g}s"
        _begin_at(child, offset)


def _still_frame(dwg, layout, trace: RequestTrace, full: RequestTrace | None, slots: list[Slot], table: Table,
                 style: Style) -> str:
    """The animation paused after the last pass of `trace`: its row framed, its caption shown."""
    last = layout.rows[-1]
    dwg.add(dwg.rect((PAD - 8, last.y + 2), (layout.width - 2 * PAD + 16, last.h - 4), rx=8, fill="none",
                     stroke=style.muted_ink, stroke_width=1.5, class_="cursor"))
    if full is None or len(trace.steps) >= len(full.steps):
        words, class_ = label(table, "anim_caption_done", k=fmt_int(len(trace.steps)),
                              n=fmt_int(len(trace.steps))), "caption done"
    else:
        words, class_ = _captions(trace, slots, table)[-1], f"caption step-{len(slots) - 1}"
    dwg.add(_caption(dwg, words, style, layout.width - 2 * PAD, class_))
    return to_string(dwg)

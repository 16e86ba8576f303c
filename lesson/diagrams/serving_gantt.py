"""Many requests over time: one row per request, every forward pass it took part in.

    r0  ▸ ░░██|█|█|█|█|          |█|█|█|      lifeline from arrival to its last token
    r4          ░░███████████████████|         queue, Prefill (whole or in chunks), Decode passes
                  ^^^^^^^^^^^^^^^^^^^^ ITL spike: r0 got no token while r4's Prefill ran

Per request: a thin lifeline from arrival to finish, the queue before its first pass and
the passes it sat out while others ran (waiting colour), each pass it was in (Prefill
blue, a chunk of a Prefill blue with a white edge, Decode orange), a tick at each token,
and a red bracket over every gap between two tokens more than `SPIKE_FACTOR` times the
run's median ITL (the largest one labelled). A disaggregated run also draws each
request's KV hand-off from the Prefill worker to the Decode worker.

A run with no iterations (measured from a client: only arrival, token times, finish)
draws the time to the first token as one outlined bar and the token ticks after it.

`gantt_segments(run)` gives every drawn interval as plain data (the plotly version in
lesson/charts/serving.py draws the same list). Marks carry data-request-id / data-iteration /
data-ms for tests.
"""

from __future__ import annotations

from dataclasses import dataclass

import svgwrite

from engine.contract.interop.vllm_import import arrivals_placed, is_vllm_import
from engine.contract.serving.trace import OBSERVED_POLICY, ServingRun

from ..formats import fmt_bytes, fmt_int, fmt_ms
from ..layout import LinearScale, clip_text, nice_ticks, text_width
from ..style import DEFAULT_STYLE, Style
from ..svgtext import visible
from ..text import TEXTS, check_language, t
from ._common import add_title, halo, header, new_drawing, notes, notes_height, text, to_string

MAX_ROWS = 40  # past this many requests, the first MAX_ROWS are drawn and a note counts the rest
SPIKE_FACTOR = 3.0  # a gap between two tokens this many times the median ITL is marked as a spike
PAD, PLOT_W, ROW_H, BAR_H, ID_CHARS = 32, 720, 24, 12, 14
SPIKE_COLOR = "#dc2626"  # red: a Decode that waited
HANDOFF_COLOR = "#059669"  # green: KV moving between workers


@dataclass(frozen=True)
class Segment:
    """One drawn interval of one request."""

    request_id: str
    kind: str  # "queue", "stall", "prefill", "prefill_chunk", "decode", "handoff", "observed_ttft"
    start_ms: float
    end_ms: float
    iteration: int = -1  # the pass (passes and stalls), else -1
    worker: str = ""
    positions: tuple[int, int] = (0, 0)  # start, end computed in the pass
    batch: int = 0  # requests in the pass
    tokens: int = 0  # positions in the whole pass
    num_bytes: int = 0  # hand-off only
    recompute: bool = False


def gantt_segments(run: ServingRun) -> tuple[Segment, ...]:
    """Queue, stalls, passes and hand-offs of every request, in request then time order."""
    out: dict[str, list[Segment]] = {r.request_id: [] for r in run.requests}
    for r in run.requests:
        if not run.iterations:
            out[r.request_id].append(Segment(r.request_id, "observed_ttft", r.arrival_ms, r.first_token_ms))
        elif r.first_scheduled_ms is not None and r.first_scheduled_ms > r.arrival_ms:
            out[r.request_id].append(Segment(r.request_id, "queue", r.arrival_ms, r.first_scheduled_ms))
    started = {r.request_id: r.first_scheduled_ms for r in run.requests}
    for it in run.iterations:
        for e in it.entries:
            if e.request_id in out:
                out[e.request_id].append(Segment(e.request_id, e.phase, it.start_ms, it.end_ms, it.index, it.worker,
                                                 (e.start, e.end), len(it.entries), it.num_tokens,
                                                 recompute=e.recompute))
        for rid in it.waiting:
            first = started.get(rid)
            if rid in out and first is not None and it.start_ms >= first:
                out[rid].append(Segment(rid, "stall", it.start_ms, it.end_ms, it.index, it.worker,
                                        batch=len(it.entries), tokens=it.num_tokens))
    for h in run.handoffs:
        if h.request_id in out:
            out[h.request_id].append(Segment(h.request_id, "handoff", h.send_start_ms, h.received_ms,
                                             tokens=h.num_tokens, num_bytes=h.num_bytes))
    return tuple(s for r in run.requests for s in sorted(out[r.request_id], key=lambda s: (s.start_ms, s.kind)))


@dataclass(frozen=True)
class Spike:
    request_id: str
    start_ms: float
    end_ms: float

    @property
    def ms(self) -> float:
        return self.end_ms - self.start_ms


def itl_spikes(run: ServingRun, factor: float = SPIKE_FACTOR) -> tuple[Spike, ...]:
    """Gaps between consecutive tokens over `factor` x the run's median ITL, largest first."""
    median = run.metrics.itl.p50
    if not median:
        return ()
    spikes = [Spike(r.request_id, a, b) for r in run.requests
              for a, b in zip(r.token_times_ms, r.token_times_ms[1:]) if b - a > factor * median]
    return tuple(sorted(spikes, key=lambda s: -s.ms))


def run_end_ms(run: ServingRun) -> float:
    ends = [r.finish_ms for r in run.requests] + [it.end_ms for it in run.iterations]
    ends += [h.received_ms for h in run.handoffs]
    return max(ends, default=1.0)


def policy_label(lang: str, policy: str) -> str:
    return t(lang, f"sv_policy_{policy.replace('-', '_')}")


def run_kind(run: ServingRun) -> str:
    """"engine" (in-process, every time measured), "probe" (observed from the client) or "vllm" (a
    vLLM result file: its client's times; arrivals placed when the file has none)."""
    if run.settings.policy != OBSERVED_POLICY:
        return "engine"
    return "vllm" if is_vllm_import(run) else "probe"


def scenario_label(lang: str, name: str) -> str:
    """A scenario's name in `lang` ("sl_scn_name_<id>"); an id without one (a file's name) as it is."""
    key = "sl_scn_name_" + name.replace("-", "_")
    return t(lang, key) if key in TEXTS["en"] else name


def gantt_subtitle(run: ServingRun, lang: str) -> str:
    """What the times are, truthfully per kind of run."""
    kind = run_kind(run)
    params = {"n": len(run.requests), "scenario": scenario_label(lang, run.scenario), "model": run.model.model_id,
              "device": run.model.device}
    if kind == "vllm":
        return t(lang, "sv_gantt_subtitle_vllm_placed" if arrivals_placed(run) else "sv_gantt_subtitle_vllm", **params)
    return t(lang, "sv_gantt_subtitle_probe" if kind == "probe" else "sv_gantt_subtitle", **params)


def _fill(kind: str, style: Style) -> str:
    return {"queue": style.waiting, "stall": style.waiting, "prefill": style.prefill, "prefill_chunk": style.prefill,
            "decode": style.decode, "handoff": HANDOFF_COLOR, "observed_ttft": style.prefill_light}[kind]


def segment_title(seg: Segment, lang: str) -> str:
    """The hover text of one segment (plain; svgwrite or the caller escapes it)."""
    ms = fmt_ms(seg.end_ms - seg.start_ms)
    if seg.kind in ("prefill", "prefill_chunk", "decode"):
        words = t(lang, "sv_seg_pass", rid=seg.request_id, n=seg.iteration + 1, phase=t(lang, f"sv_phase_{seg.kind}"),
                  a=seg.positions[0], b=seg.positions[1] - 1, ms=ms, batch=seg.batch, tokens=fmt_int(seg.tokens))
        if seg.worker in ("prefill", "decode"):
            words += " · " + t(lang, f"sv_worker_{seg.worker}")
        return words + (" · " + t(lang, "sv_recompute") if seg.recompute else "")
    if seg.kind == "stall":
        return t(lang, "sv_seg_stall", rid=seg.request_id, n=seg.iteration + 1, ms=ms, batch=seg.batch,
                 tokens=fmt_int(seg.tokens))
    if seg.kind == "handoff":
        return t(lang, "sv_seg_handoff", rid=seg.request_id, tokens=fmt_int(seg.tokens),
                 bytes=fmt_bytes(seg.num_bytes), ms=ms)
    return t(lang, f"sv_seg_{seg.kind}", rid=seg.request_id, ms=ms)


def render_serving_gantt(run: ServingRun, *, lang: str = "zh", style: Style | None = None) -> str:
    """One row per request over the run's measured time (see the module docstring)."""
    check_language(lang)
    style = style or DEFAULT_STYLE
    row_h = max(ROW_H, round(style.small_size * 1.5)) if style.fitted else ROW_H
    shown = run.requests[:MAX_ROWS]
    ids = [clip_text(r.request_id, text_width("m" * ID_CHARS, style.small_size), style.small_size) for r in shown]
    lens = [t(lang, "sv_row_lengths", p=fmt_int(r.prompt_len), o=r.num_output_tokens) for r in shown]
    label_w = max([text_width(i, style.small_size) + 8 + text_width(n, style.tiny_size) for i, n in zip(ids, lens)]
                  + [60]) + 16
    left = PAD + label_w
    # classroom (a width to fit): the plot takes what the labels leave, so big type never shrinks the figure
    right = left + (max(style.max_width - PAD - left, 320) if style.fitted else PLOT_W)
    width = right + PAD
    legend_lines = _legend_lines(run, lang, style, right)
    top = 132 + (legend_lines - 1) * style.small_size * 1.7
    rows_bottom = top + len(shown) * row_h
    ticks = nice_ticks(0, run_end_ms(run), 5 if style.fitted else 8)
    xs = LinearScale(0, ticks[-1], left, right)
    tick_y, axis_y, notes_y = rows_bottom + 18, rows_bottom + 40, rows_bottom + 52
    if style.fitted:
        tick_y = rows_bottom + style.tiny_size + 8
        axis_y = tick_y + style.small_size * 1.6
        notes_y = axis_y + 12
    title = (t(lang, "sv_gantt_title", policy=policy_label(lang, run.settings.policy)) if run.iterations
             else t(lang, "sv_gantt_title_observed"))
    lines = gantt_notes(run, lang)
    height = notes_y + 8 + notes_height(style, lines, width - 2 * PAD) + 24
    dwg = new_drawing(width, height, style, "serving-gantt", title)
    header(dwg, style, title, gantt_subtitle(run, lang))
    _legend(dwg, style, run, lang, 112, right)
    for tick in ticks:
        x = xs(tick)
        dwg.add(dwg.line((x, top - 6), (x, rows_bottom), stroke=style.grid, stroke_width=1, class_="grid"))
        dwg.add(text(dwg, f"{tick:,.0f}", x, tick_y, size=style.tiny_size, fill=style.muted_ink,
                     anchor="middle", class_="tick-label"))
    dwg.add(text(dwg, t(lang, "sv_time_axis"), left, axis_y, size=style.small_size, fill=style.muted_ink,
                 weight="bold", class_="axis-label"))
    rows = _Rows(top, row_h, {r.request_id: i for i, r in enumerate(shown)})
    _draw_rows(dwg, style, lang, shown, ids, lens, xs, rows)
    _draw_segments(dwg, style, lang, gantt_segments(run), xs, rows)
    _draw_token_ticks(dwg, style, shown, xs, rows)
    _draw_spikes(dwg, style, lang, itl_spikes(run), xs, rows, left, right)
    _draw_preemptions(dwg, lang, run, xs, rows)
    notes(dwg, style, lines, PAD, notes_y, width - 2 * PAD)
    return to_string(dwg)


@dataclass(frozen=True)
class _Rows:
    """Where each shown request's row sits: `top` of the first row, `row_h` per row, row index by request id."""
    top: float
    row_h: float
    row_of: dict

    def mid(self, request_id: str) -> float:
        return self.row_mid(self.row_of[request_id])

    def row_mid(self, i: int) -> float:
        return self.top + i * self.row_h + self.row_h / 2


def _draw_rows(dwg, style: Style, lang: str, shown, ids, lens, xs, rows: _Rows) -> None:
    """Each request's label, lengths, lifeline and arrival mark."""
    for i, r in enumerate(shown):
        cy = rows.row_mid(i)
        row = dwg.g(class_="request-row", **{"data-request-id": visible(r.request_id), "data-row": i})
        add_title(row, t(lang, "sv_row_title", rid=r.request_id, p=fmt_int(r.prompt_len), o=r.num_output_tokens,
                         ttft=fmt_ms(r.ttft_ms), e2el=fmt_ms(r.e2el_ms)))
        row.add(text(dwg, ids[i], PAD, cy + 4, size=style.small_size, fill=style.ink, class_="request-id"))
        row.add(text(dwg, lens[i], PAD + text_width(ids[i], style.small_size) + 8, cy + 4, size=style.tiny_size,
                     fill=style.muted_ink, class_="request-lengths"))
        row.add(dwg.line((xs(r.arrival_ms), cy), (xs(r.finish_ms), cy), stroke=style.cached, stroke_width=2,
                         class_="lifeline"))
        row.add(dwg.path(d=f"M{xs(r.arrival_ms)},{cy - 6} l5,6 l-5,6 z", fill=style.ink, class_="arrival"))
        dwg.add(row)


def _draw_segments(dwg, style: Style, lang: str, segments, xs, rows: _Rows) -> None:
    """The bars: waiting, Prefill (whole or chunk), Decode, stalls, hand-offs, observed TTFT."""
    for seg in segments:
        if seg.request_id not in rows.row_of:
            continue
        cy = rows.mid(seg.request_id)
        x0, x1 = xs(seg.start_ms), xs(seg.end_ms)
        w = max(x1 - x0, 1.0)
        thin = seg.kind in ("queue", "stall")
        h = BAR_H / 2 if thin else BAR_H
        attrs = {"class_": f"segment {seg.kind}", "data-request-id": visible(seg.request_id),
                 "data-ms": f"{seg.end_ms - seg.start_ms:.3f}"}
        if seg.iteration >= 0:
            attrs["data-iteration"] = seg.iteration
        if seg.kind == "observed_ttft":
            attrs.update(stroke=style.prefill, stroke_width=1.5, stroke_dasharray="4 3")
        elif seg.kind == "prefill_chunk" or seg.recompute:
            attrs.update(stroke=style.paper if not seg.recompute else style.ink, stroke_width=1)
            if seg.recompute:
                attrs["stroke_dasharray"] = "3 2"
        elif seg.kind == "handoff":
            w = max(w, 3.0)
        rect = dwg.rect((x0, cy - h / 2), (w, h), fill=_fill(seg.kind, style),
                        opacity=0.55 if thin else 1, **attrs)
        dwg.add(add_title(rect, segment_title(seg, lang)))


def _draw_token_ticks(dwg, style: Style, shown, xs, rows: _Rows) -> None:
    """A tick at each output token's time, per request."""
    for i, r in enumerate(shown):
        cy = rows.row_mid(i)
        ticks_g = dwg.g(class_="token-ticks", **{"data-request-id": visible(r.request_id)})
        for tt in r.token_times_ms:
            x = xs(tt)
            ticks_g.add(dwg.line((x, cy - BAR_H / 2 - 3), (x, cy + BAR_H / 2 + 1), stroke=style.ink, stroke_width=1,
                                 class_="token-tick"))
        dwg.add(ticks_g)


def _draw_spikes(dwg, style: Style, lang: str, spikes, xs, rows: _Rows, left: float, right: float) -> None:
    """A bracket over each inter-token gap that stands out; the first one is labelled."""
    for k, spike in enumerate(s for s in spikes if s.request_id in rows.row_of):
        y = rows.mid(spike.request_id) - BAR_H / 2 - 5
        x0, x1 = xs(spike.start_ms), xs(spike.end_ms)
        mark = dwg.path(d=f"M{x0},{y + 3} V{y} H{x1} V{y + 3}", fill="none", stroke=SPIKE_COLOR, stroke_width=2,
                        class_="itl-spike",
                        **{"data-request-id": visible(spike.request_id), "data-ms": f"{spike.ms:.3f}"})
        dwg.add(add_title(mark, t(lang, "sv_spike_title", rid=spike.request_id, ms=fmt_ms(spike.ms))))
        if k == 0:
            words = t(lang, "sv_spike_label", ms=fmt_ms(spike.ms))
            anchor_x = min(max((x0 + x1) / 2, left + text_width(words, style.tiny_size) / 2),
                           right - text_width(words, style.tiny_size) / 2)
            dwg.add(text(dwg, words, anchor_x, y - 3, size=style.tiny_size, fill=SPIKE_COLOR, anchor="middle",
                         weight="bold", class_="spike-label", **halo(style)))


def _draw_preemptions(dwg, lang: str, run: ServingRun, xs, rows: _Rows) -> None:
    """A cross where a request was preempted (its KV blocks taken back, to be recomputed)."""
    for it in run.iterations:
        for rid in it.preempted:
            if rid not in rows.row_of:
                continue
            x, cy = xs(it.start_ms), rows.mid(rid)
            mark = dwg.path(d=f"M{x - 4},{cy - 4} L{x + 4},{cy + 4} M{x - 4},{cy + 4} L{x + 4},{cy - 4}",
                            stroke=SPIKE_COLOR, stroke_width=2, class_="preempted",
                            **{"data-request-id": visible(rid), "data-iteration": it.index})
            dwg.add(add_title(mark, t(lang, "sv_preempted_title", rid=rid, n=it.index + 1)))


def _legend(dwg, style: Style, run: ServingRun, lang: str, y: float, right: float) -> float:
    """The legend on as many lines as `right` needs; returns the y of its last line."""
    items = []  # (kind, caption, fill)
    if run.iterations:
        items += [("waiting", t(lang, "sv_legend_waiting"), style.waiting),
                  ("prefill", t(lang, "sv_legend_prefill"), style.prefill),
                  ("decode", t(lang, "sv_legend_decode"), style.decode)]
    else:
        items.append(("observed_ttft", t(lang, "sv_legend_observed_ttft"), style.prefill_light))
    if run.handoffs:
        items.append(("handoff", t(lang, "sv_legend_handoff"), HANDOFF_COLOR))
    if any(it.preempted for it in run.iterations):
        items.append(("preempted", t(lang, "sv_legend_preempted"), SPIKE_COLOR))
    items += [("tick", t(lang, "sv_legend_token"), style.ink),
              ("spike", t(lang, "sv_legend_spike", factor=f"{SPIKE_FACTOR:g}"), SPIKE_COLOR)]
    x = PAD
    for kind, caption, fill in items:
        w = 22 + text_width(caption, style.small_size) + 24
        if x > PAD and x + w - 24 > right:
            x, y = PAD, y + style.small_size * 1.7
        group = dwg.g(class_=f"legend-item {kind}")
        if kind == "tick":
            group.add(dwg.line((x + 7, y - 11), (x + 7, y + 3), stroke=fill, stroke_width=1.5))
        elif kind == "preempted":
            group.add(dwg.path(d=f"M{x + 3},{y - 10} l8,8 M{x + 3},{y - 2} l8,-8", stroke=fill, stroke_width=2))
        elif kind == "spike":
            group.add(dwg.path(d=f"M{x},{y - 2} V{y - 6} H{x + 16} V{y - 2}", fill="none", stroke=fill,
                               stroke_width=2))
        else:
            group.add(dwg.rect((x, y - 11), (14, 14), rx=3, fill=fill, class_=f"swatch {kind}"))
        group.add(text(dwg, caption, x + 22, y, size=style.small_size, fill=style.ink))
        dwg.add(group)
        x += w
    return y


def _legend_lines(run: ServingRun, lang: str, style: Style, right: float) -> int:
    """How many lines the legend takes (drawn off-page to count them: one layout rule, not two)."""
    scratch = svgwrite.Drawing()
    return 1 + round((_legend(scratch, style, run, lang, 0.0, right)) / (style.small_size * 1.7))


def fine_ms(ms: float) -> str:
    """fmt_ms, with microseconds under 0.1 ms (a KV hand-off over NVLink takes a few µs)."""
    return f"{ms * 1e3:.2g} µs" if ms < 0.1 else fmt_ms(ms)


def longest_pass(run: ServingRun):
    """(the longest pass that computed Prefill positions, the requests already decoding that waited for it to end)."""
    passes = [it for it in run.iterations if it.num_prefill_tokens]
    if not passes:
        return None, ()
    it = max(passes, key=lambda it: it.duration_ms)
    decoding = {r.request_id for r in run.requests if r.token_times_ms and r.first_token_ms < it.start_ms
                and r.finish_ms > it.end_ms} - {e.request_id for e in it.entries if e.phase != "decode"}
    return it, tuple(sorted(decoding)) if it.worker == "engine" else ()


def gantt_notes(run: ServingRun, lang: str) -> list[str]:
    """The footnotes: the longest Prefill pass and who waited, the largest spike, hand-offs, rows left out."""
    lines = []
    if not run.iterations:
        lines.append(t(lang, "sv_note_observed"))
    it, waited = longest_pass(run)
    if it is not None:
        prefill = [e for e in it.entries if e.phase != "decode"]
        key = "sv_note_longest" if it.worker == "engine" else "sv_note_longest_disagg"
        lines.append(t(lang, key, n=it.index + 1, ms=fmt_ms(it.duration_ms),
                       rids=", ".join(e.request_id for e in prefill[:4]),
                       positions=fmt_int(sum(e.num_tokens for e in prefill)), waited=len(waited)))
    spikes = itl_spikes(run)
    if spikes:
        lines.append(t(lang, "sv_note_spike", ms=fmt_ms(spikes[0].ms), rid=spikes[0].request_id,
                       p50=fmt_ms(run.metrics.itl.p50), n=len(spikes), factor=f"{SPIKE_FACTOR:g}"))
    elif run.metrics.itl.count:
        lines.append(t(lang, "sv_note_no_spike", p50=fmt_ms(run.metrics.itl.p50), factor=f"{SPIKE_FACTOR:g}"))
    if run.handoffs:
        big = max(run.handoffs, key=lambda h: h.num_bytes)
        links = "; ".join(f"{e.name} {fine_ms(e.ms)}" for e in big.link_estimates)
        lines.append(t(lang, "sv_note_handoff", n=len(run.handoffs), rid=big.request_id, tokens=fmt_int(big.num_tokens),
                       bytes=fmt_bytes(big.num_bytes), ms=fmt_ms(big.copy_ms), links=links or "—"))
    if len(run.requests) > MAX_ROWS:
        lines.append(t(lang, "sv_note_rows", shown=MAX_ROWS, n=len(run.requests)))
    return lines

"""The class's own engine queue: what the worker measured in the last minutes, one row per kind of job.

    render_engine_queue(history, lang="zh", style=...) -> str    # history: engine.contract.engine_queue.QueueHistory

Each job is a thin bar while it waited (from its arrival to its start) and a solid bar while it was
measured; a long job's pauses, in which the worker ran waiting lesson runs, are gaps in its bar, so
the figure shows the lesson's continuous batching on the engine the class is using: short runs go
through between a serving run's iterations. A job that was measured once for several visitors says
"×N". No visitor, prompt or setting is drawn: the history holds none.

Every bar carries data-kind and data-seconds (its wait or its measured time), so tests read the
picture against the history.
"""

from __future__ import annotations

import statistics

from engine.contract.engine_queue import QueueHistory, QueueJob

from ..layout import LinearScale
from ..style import DEFAULT_STYLE, Style
from ..text import Table, label, table_for
from ._common import add_title, header, legend_block, new_drawing, notes, notes_height, text, to_string

ROWS = ("lesson", "serving", "sweep", "modes", "other")  # a model load counts as "other"
PAD, PLOT_W, ROW_H, LABEL_W, WAIT_H, RUN_H = 24, 620, 36, 110, 6, 18
WINDOW_S = 180.0  # the last three minutes (a 1 s lesson run is 3 px wide)


def row_of(job: QueueJob) -> str:
    return job.kind if job.kind in ROWS else "other"


def render_engine_queue(history: QueueHistory, *, lang: str = "zh", style: Style = DEFAULT_STYLE,
                        window_s: float = WINDOW_S) -> str:
    """The last `window_s` seconds of the worker's queue (the history's times are s before its now)."""
    table = table_for(lang)
    jobs = [j for j in history.jobs if (j.ended_at_s is None or j.ended_at_s >= -window_s)]
    width = PAD * 2 + LABEL_W + PLOT_W
    summary = summary_lines(jobs, table)
    top = 84.0
    plot_top = top + 28
    plot_bottom = plot_top + ROW_H * len(ROWS)
    height = plot_bottom + 64 + notes_height(style, summary, width - 2 * PAD)
    dwg = new_drawing(width, height, style, "engine-queue", label(table, "eq_title"))
    header(dwg, style, label(table, "eq_title"), label(table, "eq_subtitle", minutes=round(window_s / 60)),
           x=PAD, width=width)
    legend_block(dwg, style, [(style.waiting, label(table, "eq_legend_wait"), "legend-wait"),
                              (style.prefill, label(table, "eq_legend_short"), "legend-short"),
                              (style.decode, label(table, "eq_legend_long"), "legend-long")],
                 PAD, top + 8, width - PAD)
    x = LinearScale(-window_s, 0.0, PAD + LABEL_W, PAD + LABEL_W + PLOT_W)
    draw_rows(dwg, style, table, plot_top)
    draw_axis(dwg, style, table, x, plot_bottom, window_s)
    for job in jobs:
        draw_job(dwg, style, table, job, x, plot_top + ROWS.index(row_of(job)) * ROW_H, window_s)
    if not jobs:
        dwg.add(text(dwg, label(table, "eq_empty", minutes=round(window_s / 60)), PAD + LABEL_W + PLOT_W / 2,
                     plot_top + ROW_H * len(ROWS) / 2, size=style.small_size, fill=style.muted_ink, anchor="middle",
                     class_="empty"))
    notes(dwg, style, summary, PAD, plot_bottom + 44, width - 2 * PAD)
    return to_string(dwg)


def draw_rows(dwg, style: Style, table: Table, top: float) -> None:
    for i, row in enumerate(ROWS):
        y = top + i * ROW_H
        if i % 2 == 0:
            dwg.add(dwg.rect((PAD + LABEL_W, y), (PLOT_W, ROW_H), fill=style.panel, class_="row-band"))
        dwg.add(text(dwg, label(table, f"eq_row_{row}"), PAD + LABEL_W - 8, y + ROW_H / 2 + style.small_size / 3,
                     size=style.small_size, fill=style.ink, anchor="end", class_=f"row-label {row}"))


def draw_axis(dwg, style: Style, table: Table, x: LinearScale, y: float, window_s: float) -> None:
    dwg.add(dwg.line((x.r0, y), (x.r1, y), stroke=style.muted_ink, stroke_width=1, class_="axis"))
    step = 60.0 if window_s > 240 else 30.0
    tick = -window_s
    while tick <= 0.001:
        name = label(table, "eq_now") if abs(tick) < 0.001 else label(table, "eq_ago", seconds=round(-tick))
        dwg.add(dwg.line((x(tick), y), (x(tick), y + 5), stroke=style.muted_ink, stroke_width=1, class_="tick"))
        dwg.add(text(dwg, name, x(tick), y + 8 + style.tiny_size, size=style.tiny_size, fill=style.muted_ink,
                     anchor="middle", class_="tick-label"))
        tick += step


def draw_job(dwg, style: Style, table: Table, job: QueueJob, x: LinearScale, y: float, window_s: float) -> None:
    """The job's wait (thin, above) and its measured spans (solid, its pauses left as gaps)."""
    def clamp(t: float) -> float:
        return x(min(0.0, max(-window_s, t)))

    started = job.started_at_s if job.started_at_s is not None else (job.ended_at_s or 0.0)
    tip = job_tip(job, table)
    if started - job.queued_at_s > 0:
        wait = dwg.rect((clamp(job.queued_at_s), y + 4), (max(1.0, clamp(started) - clamp(job.queued_at_s)), WAIT_H),
                        fill=style.waiting, opacity=0.55, class_=f"wait {job.kind}",
                        **{"data-kind": job.kind, "data-seconds": f"{job.wait_s:.3f}"})
        dwg.add(add_title(wait, tip))
    if job.started_at_s is None:
        return
    end = job.ended_at_s if job.ended_at_s is not None else 0.0
    fill = style.prefill if job.lane == "short" else style.decode
    group = dwg.g(class_=f"run {job.kind} {job.lane}", **{"data-kind": job.kind,
                                                           "data-seconds": f"{job.run_s or 0.0:.3f}"})
    for a, b in measured_spans(job.started_at_s, end, job.pauses):
        group.add(dwg.rect((clamp(a), y + 4 + WAIT_H + 3), (max(1.0, clamp(b) - clamp(a)), RUN_H), fill=fill,
                           class_="span"))
    dwg.add(add_title(group, tip))
    if job.visitors > 1 and clamp(end) - clamp(job.started_at_s) > 24:
        dwg.add(text(dwg, label(table, "eq_times", n=job.visitors), clamp(job.started_at_s) + 3,
                     y + 4 + WAIT_H + 3 + RUN_H - 5, size=style.tiny_size, fill=style.paper, class_="visitors"))


def measured_spans(start: float, end: float, pauses) -> list[tuple[float, float]]:
    """[start, end] with the pauses cut out."""
    spans, at = [], start
    for a, b in sorted(pauses):
        if a > at:
            spans.append((at, min(a, end)))
        at = max(at, b)
    if at < end:
        spans.append((at, end))
    return spans


def job_tip(job: QueueJob, table: Table) -> str:
    kind = label(table, f"eq_row_{row_of(job)}")
    if job.run_s is None:
        return label(table, "eq_tip_waiting", kind=kind, wait=f"{job.wait_s:.1f}")
    return label(table, "eq_tip", kind=kind, wait=f"{job.wait_s:.1f}", run=f"{job.run_s:.1f}", n=job.visitors,
                 pauses=len(job.pauses))


def summary_lines(jobs: list[QueueJob], table: Table) -> list[str]:
    """How long lesson runs waited (p50, most), how many long jobs let them through, how many were shared."""
    lessons = [j.wait_s for j in jobs if j.kind == "lesson" and j.started_at_s is not None]
    lines = []
    if lessons:
        lines.append(label(table, "eq_summary_lesson", n=len(lessons), p50=f"{statistics.median(lessons):.1f}",
                           most=f"{max(lessons):.1f}"))
    paused = sum(len(j.pauses) for j in jobs)
    if paused:
        lines.append(label(table, "eq_summary_pauses", n=paused))
    shared = [j.visitors for j in jobs if j.visitors > 1]
    if shared:
        lines.append(label(table, "eq_summary_shared", n=len(shared), visitors=sum(shared)))
    return lines or [label(table, "eq_summary_none")]

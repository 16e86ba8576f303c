"""A class on one server: N sessions open the lesson at once, N students press Run, K run the serving lab.

    .venv/bin/python -m bench.classroom --sessions 1,10,30           # starts the app itself
    .venv/bin/python -m bench.classroom --url http://127.0.0.1:8501 --sessions 30 --run
    .venv/bin/python -m bench.classroom --engine --runs 30 --labs 3   # the engine's queue, no page

Sessions speak Streamlit's own websocket protocol (`/_stcore/stream`, BackMsg / ForwardMsg from
streamlit.proto), as a browser tab does, without a browser: each opens the lesson page, and its
"first figure" is the first delta carrying the timeline figure (its SVG: `class="chip ...`), its
"settled" the script's FINISHED_SUCCESSFULLY (the first screen: the lesson below it is drawn when the
reader comes to it). `--read S` then presses "read on" in every session S seconds after its first
screen settled (0: at once, every reader together: the worst case), as each page does when its reader
scrolls near the end of the first screen, and times the whole lesson drawn ("read", from the tab's
first message, less the S; a checkout without the button drew it whole: read = settled). `--run` then
presses Run in every session (the run button's trigger, as the page sends it) and times the rerun to
its end. A session fails when it
shows an exception element or an error alert, never finishes, or never shows the figure. The server's
resident memory (VmRSS, /proc) is read before, at the busiest point, and after the sessions closed.

The engine part is the engine client the app uses (EngineClient with a LocalWorker): N lesson runs
(the lesson's request with its repeats, as the page sends it) started within 3 s, while K serving
labs (every policy of the lab's first scenario, one after another, as the lab sends them) run; it
prints first-pass p50/p95 and each lab's completion time against one lab alone.

Every goal is printed with its ratio (measured / goal; <= 1 is met). Exit 1 when a judged goal fails.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import os
import random
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from websockets.asyncio.client import connect
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg


from bench.app_server import ROOT, streamlit_server
from engine.contract.config import ServingCaps, settings_from_env
from engine.contract.results import GenerationConfig
from engine.contract.serving.workloads import scenario
from engine.contract.worker.client import EngineClient, Pass
from engine.contract.worker.protocol import ModelRef
from lesson.inputs import DEFAULT_OUTPUT_LEN, default_prompt

TIMELINE_MARK = b'class="chip '  # only the timeline draws chips (lesson/diagrams/timeline.py)
SESSION_TIMEOUT_S = 300
FIRST_FIGURE_GOAL_S, SETTLED_GOAL_S = 3.0, 6.0  # at 30 sessions
FIRST_PASS_GOAL_S, LAB_GOAL_RATIO = 2.0, 1.2
ALERT_ERROR = 1  # Alert.Format.ERROR (streamlit/proto/Alert.proto)
FINISHED, FINISHED_FOR_RERUN = 0, 2  # ForwardMsg.ScriptFinishedStatus


@dataclass
class Session:
    """One tab's times (seconds from its first message) and what went wrong in it."""

    first_figure_s: float | None = None
    settled_s: float | None = None
    run_s: float | None = None
    read_s: float | None = None  # the whole lesson drawn (--read)
    errors: list[str] = field(default_factory=list)
    run_button_id: str = ""
    read_button_id: str = ""  # the lesson's "read on" button (app_support/sections.read_on)
    replica: str = ""  # behind deploy/classroom.py's HAProxy: the replica that served it (X-Replica)

    @property
    def ok(self) -> bool:
        return not self.errors and self.first_figure_s is not None and self.settled_s is not None


def rerun_message(widget_id: str = "") -> bytes:
    """The BackMsg a tab sends to run the page: a fresh open, or a click on the button `widget_id`."""
    msg = BackMsg()
    msg.rerun_script.query_string = ""
    msg.rerun_script.page_script_hash = ""
    if widget_id:
        state = msg.rerun_script.widget_states.widgets.add()
        state.id, state.trigger_value = widget_id, True
    return msg.SerializeToString()


def read_delta(session: Session, msg: ForwardMsg, started: float, watch_figure: bool) -> None:
    """Note what one delta shows: the timeline figure, an exception, an error, the Run button's id."""
    element = msg.delta.new_element if msg.delta.WhichOneof("type") == "new_element" else None
    if element is None:
        return
    kind = element.WhichOneof("type")
    if kind == "exception":
        session.errors.append(f"exception: {element.exception.type}: {element.exception.message[:120]}")
    elif kind == "alert" and element.alert.format == ALERT_ERROR:
        session.errors.append(f"error alert: {element.alert.body[:120]}")
    elif kind == "button" and element.button.id.endswith("-run"):  # key="run": the run panel's button
        session.run_button_id = element.button.id
    elif kind == "button" and element.button.id.endswith("-read_on"):  # key="read_on": below the first screen
        session.read_button_id = element.button.id
    elif watch_figure and kind == "imgs" and session.first_figure_s is None:
        if any(TIMELINE_MARK in svg_bytes(img.url) for img in element.imgs.imgs):
            session.first_figure_s = time.monotonic() - started


def svg_bytes(url: str) -> bytes:
    """An st.image SVG's markup (Streamlit sends it as a base64 data URL)."""
    prefix = "data:image/svg+xml;base64,"
    return base64.b64decode(url[len(prefix):]) if url.startswith(prefix) else b""


async def until_finished(ws, session: Session, started: float, watch_figure: bool) -> float:
    """Read ForwardMsgs until the script run finishes (a run ended early for a rerun waits for the next)."""
    while True:
        msg = ForwardMsg()
        msg.ParseFromString(await ws.recv())
        kind = msg.WhichOneof("type")
        if kind == "delta":
            read_delta(session, msg, started, watch_figure)
        elif kind == "script_finished" and msg.script_finished != FINISHED_FOR_RERUN:
            return time.monotonic() - started


class Hold:
    """Keeps every tab open until all have done their work, so the memory read sees them all at once."""

    def __init__(self, n: int) -> None:
        self.n, self.arrived = n, 0
        self.all_arrived, self.release = asyncio.Event(), asyncio.Event()

    async def wait(self) -> None:
        self.arrived += 1
        if self.arrived >= self.n:
            self.all_arrived.set()
        await self.release.wait()


async def open_session(url: str, press_run: bool, hold: Hold, headers: dict[str, str] | None = None,
                       read: float | None = None) -> Session:
    """One tab: open the lesson, wait for it to settle, optionally read on (`read` seconds after it settled) and
    press Run; stay open until released. `headers`: sent with the websocket's handshake (a proxy's sticky cookie)."""
    session = Session()
    ws_url = url.replace("http://", "ws://", 1) + "/_stcore/stream"
    try:
        async with connect(ws_url, subprotocols=["streamlit"], max_size=None, open_timeout=120,
                           ping_interval=None, additional_headers=headers) as ws:
            session.replica = ws.response.headers.get("X-Replica", "")
            started = time.monotonic()
            await ws.send(rerun_message())
            session.settled_s = await asyncio.wait_for(until_finished(ws, session, started, True), SESSION_TIMEOUT_S)
            if read is not None and session.read_button_id:
                await asyncio.sleep(read)  # the reader reads the first screen, then scrolls down
                await ws.send(rerun_message(session.read_button_id))
                session.read_s = await asyncio.wait_for(until_finished(ws, session, started, False), SESSION_TIMEOUT_S)
                session.read_s -= read  # the reader's own time on the first screen is not the page's
            elif read is not None:  # drawn whole in its first run (a checkout before the lesson was drawn as read)
                session.read_s = session.settled_s
            if press_run and session.run_button_id:
                clicked = time.monotonic()
                await ws.send(rerun_message(session.run_button_id))
                session.run_s = await asyncio.wait_for(until_finished(ws, session, clicked, False), SESSION_TIMEOUT_S)
            elif press_run:
                session.errors.append("no Run button on the page")
            await hold.wait()
    except Exception as err:  # noqa: BLE001 - a failed session is counted, the others go on
        session.errors.append(f"{type(err).__name__}: {err}")
        await hold.wait()
    if session.first_figure_s is None and not session.errors:
        session.errors.append("no timeline figure")
    return session


def rss_mib(pid: int | None) -> float:
    """A process's resident memory (VmRSS) in MiB; NaN without a pid (a server started elsewhere)."""
    if not pid:
        return float("nan")
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def open_many(url: str, n: int, press_run: bool, pid: int | None, read: float | None = None,
                    at_peak: Callable[[], Any] | None = None) -> tuple[list[Session], Any]:
    """N tabs at once (each reading on `read` s after settling); returns them and what was read while all of
    them were open: `at_peak()` (a blocking read, run in a thread), by default the server's RSS."""
    hold = Hold(n)
    tasks = [asyncio.create_task(open_session(url, press_run, hold, read=read)) for _ in range(n)]
    await hold.all_arrived.wait()
    peak = await asyncio.to_thread(at_peak) if at_peak else rss_mib(pid)
    hold.release.set()
    return list(await asyncio.gather(*tasks)), peak


def percentile(values: list[float], q: float) -> float:
    """The nearest-rank percentile (p95 of 30 values: the 29th)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered), max(1, -(-len(ordered) * q // 100))) - 1]


def spread(values: list[float]) -> str:
    return (f"p50 {percentile(values, 50):6.2f} s  p95 {percentile(values, 95):6.2f} s  "
            f"max {max(values, default=float('nan')):6.2f} s")


def goal_line(name: str, measured: float, goal: float, unit: str = "s") -> bool:
    """Print a goal with its ratio (measured / goal); True when met."""
    ratio = measured / goal if goal else float("inf")
    met = ratio <= 1.0
    print(f"  goal {name}: {measured:.2f} {unit} / {goal:.2f} {unit} = {ratio:.2f}x ({'met' if met else 'MISSED'})")
    return met


# --- the sessions part ------------------------------------------------------------

def sessions_part(url: str, counts: list[int], press_run: bool, pid: int | None, linger_s: float = 0.0,
                  read: float | None = None) -> bool:
    """One round per count: N tabs at once; prints their times, errors and the server's memory. `linger_s`:
    then wait that long (Streamlit keeps up to 128 closed sessions 2 minutes for a reconnect), open one
    more tab and read the memory again."""
    ok = True
    print(f"server RSS before any session: {rss_mib(pid):.0f} MiB")
    warm, _ = asyncio.run(open_many(url, 1, False, pid))  # the first visit starts the worker, measures the first view
    print(f"warm-up session (cold server): first figure {warm[0].first_figure_s}, settled {warm[0].settled_s}, "
          f"errors {warm[0].errors}")
    for n in counts:
        before = rss_mib(pid)
        started = time.monotonic()
        sessions, open_rss = asyncio.run(open_many(url, n, press_run, pid, read))
        wall = time.monotonic() - started
        time.sleep(3.0)  # the server forgets closed sessions
        after = rss_mib(pid)
        ok &= report_round(n, sessions, wall, (before, open_rss, after), press_run, read)
    if linger_s > 0:
        time.sleep(linger_s)
        last, _ = asyncio.run(open_many(url, 1, False, pid))
        print(f"\n{linger_s:.0f} s after the last round closed, one more session (ok: {last[0].ok}): "
              f"server RSS {rss_mib(pid):.0f} MiB")
        ok &= last[0].ok
    return ok


def report_round(n: int, sessions: list[Session], wall: float, rss: tuple[float, float, float],
                 press_run: bool, read: float | None = None) -> bool:
    """Print one round's line and its goals (with `read`, "every page settled" is judged on the whole
    lesson); False when a judged goal failed."""
    good = [s for s in sessions if s.ok]
    first = [s.first_figure_s for s in good]
    settled = [s.settled_s for s in good]
    print(f"\n{n} session(s) at once ({wall:.1f} s wall): {len(good)}/{n} got their page")
    print(f"  first figure  {spread(first)}")
    print(f"  settled       {spread(settled)}")
    if read is not None:
        settled = [s.read_s for s in good if s.read_s is not None]
        print(f"  read (whole)  {spread(settled)}")
    if press_run:
        print(f"  Run pressed   {spread([s.run_s for s in good if s.run_s is not None])}")
    before, during, after = rss
    print(f"  server RSS: {before:.0f} MiB before, {during:.0f} MiB with all {n} open, "
          f"{after:.0f} MiB after they closed")
    for err in sorted({e for s in sessions for e in s.errors})[:5]:
        print(f"  error: {err}")
    ok = len(good) == n  # every round: every session gets its page, without an error
    if n == 30 and good:
        ok &= goal_line(f"first figure p95 at {n} sessions", percentile(first, 95), FIRST_FIGURE_GOAL_S)
        ok &= goal_line(f"every page settled at {n} sessions", max(settled), SETTLED_GOAL_S)
    return ok


# --- the engine part --------------------------------------------------------------

def lesson_request(max_prompt_tokens: int):
    """The lesson's request as the page sends it on Run: the default prompt and length, greedy."""
    cfg = GenerationConfig(max_new_tokens=DEFAULT_OUTPUT_LEN, temperature=0.0, top_k=0, top_p=1.0, seed=0)
    return default_prompt("zh"), cfg, max_prompt_tokens


def first_pass_s(client: EngineClient, model: ModelRef, repeats: int, max_prompt_tokens: int) -> float:
    """Seconds from sending the lesson's run to its first Pass (its Prefill), then read to the end."""
    prompt, cfg, cap = lesson_request(max_prompt_tokens)
    started, first = time.monotonic(), None
    for event in client.stream_repeats(model, prompt, cfg, repeats=repeats, max_prompt_tokens=cap):
        if isinstance(event, Pass) and first is None:
            first = time.monotonic() - started
    return first if first is not None else float("nan")


def lab_s(client: EngineClient, model: ModelRef) -> float:
    """One serving lab's click: every policy of the lab's first scenario, one after another."""
    workload = scenario("long-prompt-during-chats", 0)
    started = time.monotonic()
    for policy in ServingCaps.from_env().policies:
        config = {"policy": policy, "token_budget": 64 if policy == "chunked" else None, "block_size": 16,
                  "num_kv_blocks": None, "on_kv_full": "preempt", "slo": {"ttft_ms": None, "tpot_ms": None}}
        client.serve_workload(model, workload, config, scenario="long-prompt-during-chats")
    return time.monotonic() - started


def in_threads(jobs: list, spread_s: float) -> list:
    """Run each job (a callable) in a thread of its own, started within `spread_s`; their results."""
    results: list = [None] * len(jobs)

    def run(i: int, job) -> None:
        time.sleep(random.uniform(0, spread_s))
        results[i] = job()

    threads = [threading.Thread(target=run, args=(i, job)) for i, job in enumerate(jobs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def engine_part(runs: int, labs: int) -> bool:
    """N lesson runs within 3 s while K labs run, through the app's own client and a local worker."""
    settings = settings_from_env()
    client = EngineClient.from_env({k: v for k, v in os.environ.items() if k != "PREFILL_DECODE_ENGINE"})
    model = ModelRef("default", settings.device, settings.dtype)
    try:
        client.load(model)
        cap, repeats = settings.limits.max_prompt_tokens, settings.repeats
        alone = first_pass_s(client, model, repeats, cap)
        print(f"\nengine: one lesson run alone, first pass {alone:.2f} s")
        firsts = in_threads([lambda: first_pass_s(client, model, repeats, cap)] * runs, 3.0)
        print(f"{runs} lesson runs within 3 s: first pass p50 {percentile(firsts, 50):.2f} s, "
              f"p95 {percentile(firsts, 95):.2f} s")
        ok = True
        if labs:
            one_lab = lab_s(client, model)
            print(f"one serving lab alone: {one_lab:.1f} s")
            ok &= labs_with_runs(client, model, runs, labs, one_lab, (repeats, cap))
        return ok
    finally:
        client.close()


def labs_with_runs(client: EngineClient, model: ModelRef, runs: int, labs: int, one_lab: float,
                   run_args: tuple[int, int]) -> bool:
    """K labs started together, and N lesson runs within 3 s of them; prints both and the goals."""
    jobs = [lambda: lab_s(client, model)] * labs
    results: dict[str, list] = {}
    lab_thread = threading.Thread(target=lambda: results.setdefault("labs", in_threads(jobs, 0.0)))
    lab_thread.start()
    time.sleep(1.0)  # the labs are in the queue first
    firsts = in_threads([lambda: first_pass_s(client, model, *run_args)] * runs, 3.0)
    lab_thread.join()
    done = sorted(results["labs"])
    print(f"{labs} serving labs at once, {runs} lesson runs meanwhile: first pass p50 {percentile(firsts, 50):.2f} s, "
          f"p95 {percentile(firsts, 95):.2f} s; labs done after {', '.join(f'{d:.1f}' for d in done)} s")
    ok = goal_line(f"first pass p95 with {labs} labs", percentile(firsts, 95), FIRST_PASS_GOAL_S)
    ok &= goal_line(f"last of {labs} labs / one lab alone", done[-1] / one_lab, LAB_GOAL_RATIO, "x")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", default="1,10,30", help="tabs opened at once, one round per count")
    parser.add_argument("--url", default="", help="a running app (default: start one on a free port)")
    parser.add_argument("--pid", type=int, default=0, help="the running app's pid, for its memory (with --url)")
    parser.add_argument("--run", action="store_true", help="every tab also presses Run once its page settled")
    parser.add_argument("--read", type=float, nargs="?", const=0.0, default=None, metavar="S",
                        help="every tab also reads on (the lesson below the first screen) S seconds after its first "
                             "screen settled (default 0), as a reader scrolling down; every page settled is then "
                             "judged on the whole lesson, less the reader's S")
    parser.add_argument("--engine", action="store_true", help="the engine part too (lesson runs and serving labs)")
    parser.add_argument("--runs", type=int, default=30, help="lesson runs sent within 3 s (engine part)")
    parser.add_argument("--labs", type=int, default=3, help="serving labs running meanwhile (engine part; 0: none)")
    parser.add_argument("--log", default="", help="the started app's log file (checked for tracebacks)")
    parser.add_argument("--compare-wait", default="",
                        help="two values of PREFILL_DECODE_FIRST_SCREEN_WAIT_MS, e.g. 0,2000: two apps started, "
                             "their rounds alternated (--rounds each), p95s side by side")
    parser.add_argument("--against", default="",
                        help="another checkout of this repository (a git worktree of the commit before a change): "
                             "its app and this one started, their rounds alternated (--rounds each), side by side")
    parser.add_argument("--compare-allocator", action="store_true",
                        help="two apps of this checkout, Python's own allocator and glibc's (PYTHONMALLOC=malloc): "
                             "their rounds alternated (--rounds each), side by side (bench/replica_memory.py)")
    parser.add_argument("--rounds", type=int, default=2,
                        help="rounds per app with --compare-wait, --compare-allocator or --against")
    parser.add_argument("--linger-s", type=float, default=0.0,
                        help="after the rounds, wait this long and read the memory again (130: past Streamlit's "
                             "2 minutes for closed sessions)")
    args = parser.parse_args()
    counts = [int(c) for c in args.sessions.split(",") if c.strip()]
    ok = True
    if counts and (args.compare_wait or args.compare_allocator or args.against):
        ok &= compare_apps(args, counts)
    elif counts:
        ok &= run_sessions(args, counts)
    if args.engine:
        ok &= engine_part(args.runs, args.labs)
    print("\nPASS" if ok else "\nFAIL")
    return 0 if ok else 1


def run_sessions(args, counts: list[int]) -> bool:
    """The sessions part against --url, or against an app started here (its log checked for tracebacks)."""
    if args.url:
        return sessions_part(args.url.rstrip("/"), counts, args.run, args.pid or None, args.linger_s, args.read)
    log_path = Path(args.log or "/tmp/classroom_app.log")
    with streamlit_server(log_path) as server:
        ok = sessions_part(server.url, counts, args.run, server.pid, args.linger_s, args.read)
    tracebacks = log_path.read_text(errors="replace").count("Traceback")
    print(f"tracebacks in the app's log ({log_path}): {tracebacks}")
    return ok and tracebacks == 0


def compared_apps(args) -> dict[str, tuple[Path, dict[str, str]]]:
    """The two apps to compare, A then B, by label: (their checkout, their environment). --compare-wait: this
    checkout with two values of PREFILL_DECODE_FIRST_SCREEN_WAIT_MS; --compare-allocator: this checkout with
    Python's allocator, then glibc's; --against: that checkout, then this one."""
    if args.against:
        return {"before": (Path(args.against).resolve(), {}), "after": (ROOT, {})}
    if args.compare_allocator:
        return {"python": (ROOT, {}), "malloc": (ROOT, {"PYTHONMALLOC": "malloc"})}
    waits = [w.strip() for w in args.compare_wait.split(",")][:2]
    return {f"wait {w} ms": (ROOT, {"PREFILL_DECODE_FIRST_SCREEN_WAIT_MS": w}) for w in waits}


def compare_apps(args, counts: list[int]) -> bool:
    """Two apps side by side (compared_apps: two first-screen waits, two allocators, or another checkout against
    this one), warmed up, then for each count their rounds alternated; prints each app's p95s and B's over A's."""
    apps = compared_apps(args)
    with contextlib.ExitStack() as stack:
        servers = [stack.enter_context(streamlit_server(Path(f"/tmp/classroom_app_{i}.log"), env, root))
                   for i, (root, env) in enumerate(apps.values())]
        for server in servers:
            asyncio.run(open_many(server.url, 1, False, server.pid))  # warm: the worker, the first view
        ok = True
        for n in counts:
            seen: dict[str, list[list[Session]]] = {label: [] for label in apps}
            for _ in range(args.rounds):
                for label, server in zip(apps, servers):
                    sessions, _ = asyncio.run(open_many(server.url, n, False, server.pid, args.read))
                    seen[label].append(sessions)
                    ok &= all(x.ok for x in sessions)
                    time.sleep(3.0)
            ok &= report_compare(n, seen, args.read)
    return ok


def report_compare(n: int, seen: dict[str, list[list[Session]]], read: float | None = None) -> bool:
    """Each app's first figure and settled p95 over its rounds, and B's over A's (with `read`, settled is the
    whole lesson's: a checkout that draws it at once against one that draws it as read)."""
    p95 = {}
    print(f"\n{n} session(s) at once, {len(next(iter(seen.values())))} alternated rounds per app:")
    for label, rounds in seen.items():
        good = [x for r in rounds for x in r if x.ok]
        first = [percentile([x.first_figure_s for x in r if x.ok], 95) for r in rounds]
        settled = [max(((x.settled_s if read is None else x.read_s) for x in r if x.ok), default=float("nan"))
                   for r in rounds]
        p95[label] = (sum(first) / len(first), sum(settled) / len(settled))
        print(f"  {label:>13}: {len(good)}/{n * len(rounds)} pages; first figure p95 per round "
              + ", ".join(f"{v:.2f}" for v in first) + " s; settled max per round "
              + ", ".join(f"{v:.2f}" for v in settled) + " s")
    (a, b) = list(p95)
    print(f"  {b} / {a}: first figure p95 {p95[b][0] / p95[a][0]:.2f}x, "
          f"settled {p95[b][1] / p95[a][1]:.2f}x")
    if n != 30:
        return True
    return goal_line(f"first figure p95 at {n} sessions ({b})", p95[b][0], FIRST_FIGURE_GOAL_S) & \
        goal_line(f"every page settled at {n} sessions ({b})", p95[b][1], SETTLED_GOAL_S)


if __name__ == "__main__":
    sys.exit(main())

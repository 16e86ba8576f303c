"""The serving lab page (AppTest): it renders, runs every policy on one workload with the real
engine, shows the figures and the metric table, enforces the server's caps, and turns the
engine's refusals into a message in the page's language."""

from __future__ import annotations

import json
import re

import pytest

from app_support.serving import SCENARIO_CHOICES, check_caps, custom_workload
from engine.contract.config import ServingCaps
from engine.contract.errors import CapError
from lesson.diagrams.serving_gantt import policy_label
from lesson.messages import serving_message
from lesson.text import t
from tests.app.apptest import APP, assert_healthy, kept, needs_model, read_on, serving_lab_page
from tests.factories import VLLM_RESULT

# --- pure parts ------------------------------------------------------------------------

@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_metric_table_pins_a_name_column_as_wide_as_its_longest_name(lang):
    """Left to Streamlit, the first column cut "Goodput（达标/完成 · 请求,…" at 1440 and more at 1024."""
    from streamlit.testing.v1 import AppTest

    from lesson.serving_views import metric_records, name_column_px
    from tests.factories import make_run

    records = metric_records([make_run(policy=p) for p in ("prefill-first", "chunked")], lang)

    def page(records):
        from app_support.ui import metric_dataframe

        metric_dataframe(records)

    at = AppTest.from_function(page, args=(records,)).run()
    (frame,) = at.dataframe
    first = json.loads(frame.proto.columns)[next(iter(records[0]))]
    assert first["width"] == name_column_px(records) and first["pinned"] is True


def test_the_time_left_of_every_policy_follows_the_running_ones_pace_then_the_finished_ones():
    from lesson.serving_views import time_left_s

    assert time_left_s([], 4, 0, 100, 3.0, None) is None  # nothing written yet: no pace to project
    assert time_left_s([], 4, 5, 100, 30.0, 1.0) is None  # 5 % written: not enough to rest an estimate on
    assert time_left_s([], 4, 50, 100, 2.5, 0.5) is None  # 2 s of writing: not enough either
    # 25 of 100 written in the 5 s since the first progress (at 5 s, 0 written): 15 s more, 20 s in all,
    # then three more policies as long
    assert time_left_s([], 4, 25, 100, 10.0, 5.0) == pytest.approx(15 + 3 * 25)
    assert time_left_s([10.0, 6.0], 4, 50, 100, 5.0, 1.0) == pytest.approx(4 + 8)  # then the finished ones' mean
    assert time_left_s([10.0, 6.0, 7.0], 4, 100, 100, 9.0, 1.0) == 0


@pytest.mark.parametrize("startup_s,tokens_per_s", [(0.2, 40.0), (8.0, 40.0), (26.0, 10.0), (1.0, 200.0)])
def test_the_time_left_is_said_only_on_enough_measurement_then_within_2x_of_the_truth(startup_s, tokens_per_s):
    """A simulated clock: each policy starts up (the disaggregated one's two processes and their model
    loads: 26 s), then writes its 200 answer tokens at a steady pace; progress every 8 tokens. The old
    estimate said 1844 s after one token of a run that ended 5 s later."""
    from lesson.serving_views import MIN_MEASURED_FRACTION, MIN_MEASURED_S, time_left_s

    total, policies = 200, 4
    durations = [startup_s + total / tokens_per_s] * policies
    finished: list[float] = []
    for index in range(policies):
        first_s = first_done = None
        for done in range(8, total + 1, 8):
            elapsed = startup_s + done / tokens_per_s
            if first_s is None:
                first_s, first_done = elapsed, done
            left = time_left_s(finished, policies, done, total, elapsed, first_s, first_done)
            truth = durations[index] - elapsed + sum(durations[index + 1:])
            if left is None:
                assert done < MIN_MEASURED_FRACTION * total or elapsed - first_s < MIN_MEASURED_S or truth < 1
                continue
            assert done >= MIN_MEASURED_FRACTION * total and elapsed - first_s >= MIN_MEASURED_S
            assert truth / 2 <= left <= truth * 2 or abs(left - truth) < 1.0, (index, done, left, truth)
        finished.append(durations[index])


def test_the_serving_labs_bar_moves_with_each_policys_answer_tokens_and_says_the_time_left(monkeypatch):
    """The first run took 27-51 s with progress only per policy ("1 / 4")."""
    from app_support.serving import PolicyProgress
    from engine.contract.worker.client import Progress, Queued

    class Bar:
        def __init__(self):
            self.drawn = []

        def progress(self, value, text):
            self.drawn.append((value, text))

    bar, placed = Bar(), []
    policies = ("one-at-a-time", "prefill-first", "chunked", "disaggregated")
    clock = iter([100.0, 100.1, 104.0, 104.1, 110.0])
    monkeypatch.setattr("app_support.serving.time.perf_counter", lambda: next(clock))
    progress = PolicyProgress("en", bar, placed.append, policies, 1, [8.0])  # started at 100.0
    progress(Queued(2))
    assert placed == [Queued(2)] and not bar.drawn  # the queue's place is said by the QueuePlace
    progress(Progress(3, 12))  # 0.1 s in: the pace is measured from here; 0.1 s after the last draw: not drawn
    assert not bar.drawn
    progress(Progress(6, 12))  # 3 more in 3.9 s: the last 6 take 7.8 s, then two policies of 8 s
    value, text = bar.drawn[-1]
    assert value == pytest.approx((1 + 0.5) / 4)
    assert text == t("en", "sl_running_progress", policy="prefill-first", i=2, n=4, done=6, total=12,
                     left=t("en", "sl_seconds", s="24"))
    progress(Progress(12, 12))  # the last event is always drawn
    assert bar.drawn[-1][0] == pytest.approx(2 / 4)


def test_the_disaggregated_policys_start_up_is_a_named_timed_phase(monkeypatch):
    """It showed only "Running disaggregated (4 of 4)…" for 26 s: the two processes and their model loads."""
    from app_support.serving import PolicyProgress
    from engine.contract.worker.client import Progress, Started, Waiting

    class Bar:
        def __init__(self):
            self.drawn = []

        def progress(self, value, text):
            self.drawn.append((value, text))

    bar, policies = Bar(), ("one-at-a-time", "prefill-first", "chunked", "disaggregated")
    clock = iter([50.0, 50.5, 50.5, 62.0, 76.0])
    monkeypatch.setattr("app_support.serving.time.perf_counter", lambda: next(clock))
    progress = PolicyProgress("zh", bar, lambda event: None, policies, 3, [8.0, 7.0, 9.0])
    progress(Started())  # 50.5: the policy starts (after the queue)
    progress(Waiting())  # 62.0: the heartbeat, 11.5 s into its start-up
    assert bar.drawn[-1] == (3 / 4, t("zh", "sl_starting_disaggregated", policy=policy_label("zh", "disaggregated"),
                                      i=4, n=4, s="12"))
    progress(Progress(8, 200))  # 76.0: its first tokens, 25.5 s after it started
    assert t("zh", "sl_startup_took", s="25.5") in bar.drawn[-1][1]


def test_caps_come_from_env_with_safe_fallbacks():
    assert ServingCaps.from_env({}) == ServingCaps()
    caps = ServingCaps.from_env({"PREFILL_DECODE_SERVING_MAX_REQUESTS": "4", "PREFILL_DECODE_SERVING_MAX_NEW_TOKENS":
                                 "99999", "PREFILL_DECODE_SERVING_MAX_PROMPT_TOKENS": "-3",
                                 "PREFILL_DECODE_SERVING_DISAGGREGATED": "0"})
    assert caps.max_requests == 4 and caps.max_new_tokens == 4096 and caps.max_prompt_tokens == 1024
    assert caps.policies == ("one-at-a-time", "prefill-first", "chunked")


def test_custom_workload_and_caps():
    work = custom_workload(3, 16, 12, "spacing", 10.0, 0.0, 0, 256, 25.0)
    assert [r.arrival_ms for r in work] == [0.0, 10.0, 20.0, 25.0]
    assert work[-1].prompt_tokens == 256 and work[0].max_new_tokens == 12 and work[0].ignore_eos
    poisson = custom_workload(5, 0, 8, "poisson", 0.0, 50.0, 3, 0, 0.0)
    assert len(poisson) == 5 and poisson == custom_workload(5, 0, 8, "poisson", 0.0, 50.0, 3, 0, 0.0)
    check_caps(work, ServingCaps(max_requests=4, max_prompt_tokens=256, max_new_tokens=12))
    for caps, key in ((ServingCaps(max_requests=3), "sl_cap_requests"), (ServingCaps(max_prompt_tokens=255),
                                                                         "sl_cap_prompt"),
                      (ServingCaps(max_new_tokens=11), "sl_cap_answer")):
        with pytest.raises(CapError) as err:
            check_caps(work, caps)
        assert err.value.key == key
        for lang in ("zh", "en"):
            message = serving_message(err.value, lang)
            assert "{" not in message and str(err.value.params["limit"]) in message


def test_engine_refusals_read_in_both_languages():
    from engine.contract.errors import InputError

    err = InputError("never_fits", "request r4 can never fit", request_id="r4<b>", need=65, num_blocks=1)
    zh, en = serving_message(err, "zh"), serving_message(err, "en")
    assert "65" in zh and "永远放不下" in zh and "can never fit" in en
    assert "`r4<b>`" in en and en.count("<b>") == 1  # the typed id as inline code: shown as text, never markup
    assert serving_message(RuntimeError("boom"), "en") == t("en", "err_internal", kind="RuntimeError")


# --- the page ----------------------------------------------------------------------------

@pytest.fixture
def lab(monkeypatch):
    yield from serving_lab_page(monkeypatch, {"PREFILL_DECODE_SERVING_MAX_REQUESTS": "6",
                                              "PREFILL_DECODE_SERVING_MAX_PROMPT_TOKENS": "256",
                                              "PREFILL_DECODE_SERVING_MAX_NEW_TOKENS": "16"})


def _custom(at, **values):
    at.radio(key="sl_source").set_value("custom").run()
    for key, value in values.items():
        at.slider(key=key).set_value(value)
    return at.run()


@needs_model
def test_the_page_renders_with_its_caps_and_a_link_from_the_lesson(lab):
    assert_healthy(lab)
    words = "\n".join(str(e.value) for e in lab.markdown) + "\n".join(str(c.value) for c in lab.caption)
    assert t("zh", "sl_title") in [h.value for h in lab.header]
    assert "最多 6 个请求" in words and "256" in words
    assert lab.button(key="sl_run")
    assert not [link for link in lab.get("page_link") if link.proto.page == "serving_lab"]  # not to itself


@needs_model
def test_the_lessons_many_requests_section_links_to_the_lab():
    from streamlit.testing.v1 import AppTest

    at = read_on(AppTest.from_file(APP, default_timeout=300).run())
    assert_healthy(at)
    links = [link for link in at.get("page_link") if link.proto.page == "serving_lab"]
    assert links and links[0].proto.label == t("zh", "sl_link")


@pytest.mark.slow
@needs_model
def test_running_every_policy_gives_figures_and_a_metric_table(lab):
    _custom(lab, sl_num_chats=2, sl_answer_tokens=6, sl_long_tokens=128, sl_gap_ms=5, sl_long_at=10)
    lab.radio(key="sl_source").set_value("custom")
    lab.button(key="sl_run").click().run()
    assert_healthy(lab)
    runs = kept(lab, "sl_runs").runs
    assert len(runs) == 4  # every policy, disaggregated included
    frame = lab.dataframe[0].value
    assert list(frame.columns)[0] == "指标" and len(frame.columns) == 5 and len(frame) >= 18
    assert len(lab.get("image")) == 3 * 4 + 2  # three figures (tabs) per policy, the table and the engine's queue
    queue_alts = [i.proto.imgs[0].alt for i in lab.get("image") if i.proto.imgs[0].alt.startswith("引擎的队列")]
    assert len(queue_alts) == 1  # the class's own queue, drawn from the worker's history
    parsed = list(runs)  # the stored set's runs: parsed once, where the worker's answer came in
    assert [r.settings.policy for r in parsed] == ["one-at-a-time", "prefill-first", "chunked", "disaggregated"]
    for run in parsed:
        assert len(run.requests) == 3 and run.metrics.num_completed == 3
        assert run.requests[-1].prompt_len >= 128
    # the same words the page shows: measured p99 ITL of prefill-first and chunked
    words = "\n".join(str(e.value) for e in lab.markdown)
    assert "实测 ITL p99" in words and "Prefill 优先" in words
    perfetto = {b.key: b.proto.label for b in lab.get("download_button") if b.key.startswith("sl_perfetto_")}
    assert set(perfetto) == {f"sl_perfetto_{r.settings.policy}" for r in parsed}  # a Perfetto trace of every run
    assert perfetto["sl_perfetto_chunked"].startswith("Perfetto Trace：分块 Prefill")
    lab.toggle(key="sl_hover").set_value(True).run()  # the Gantt with hover: one plotly chart per policy
    assert_healthy(lab)
    assert len(lab.get("plotly_chart")) == 4


@needs_model
def test_a_workload_over_the_caps_is_refused_with_a_message(lab):
    lab.selectbox(key="sl_scenario").set_value("burst-16").run()  # 16 requests, the cap is 6
    lab.button(key="sl_run").click().run()
    assert not lab.exception
    assert [e.value for e in lab.error] == [t("zh", "sl_cap_requests", n=16, limit=6)]
    assert kept(lab, "sl_runs") is None


@needs_model
def test_a_kv_budget_that_can_never_fit_shows_the_engines_message(lab):
    _custom(lab, sl_num_chats=1, sl_answer_tokens=4, sl_long_tokens=64)
    lab.number_input(key="sl_kv_blocks").set_value(1).run()
    lab.button(key="sl_run").click().run()
    assert not lab.exception
    assert len(lab.error) == 1
    message = lab.error[0].value
    assert "永远放不下" in message and "预算只有 1 块" in message
    assert kept(lab, "sl_runs") is None



@needs_model
def test_a_pasted_workload_with_a_bad_line_is_refused_naming_the_line(lab):
    lab.radio(key="sl_source").set_value("jsonl").run()
    good = '{"arrival_ms": 0, "prompt": "法国的首都是", "max_new_tokens": 4}'
    lab.text_area(key="sl_jsonl").set_value(good + '\n{"arrival_ms": 5, "prompt": "<b>x</b>"}\n').run()
    lab.button(key="sl_run").click().run()
    assert not lab.exception
    reason = t("zh", "sl_wl_why_missing_key", field="`max_new_tokens`")  # the key as inline code: shown as typed
    assert [e.value for e in lab.error] == [t("zh", "sl_err_bad_workload_line", line=2, reason=reason)]
    lab.text_area(key="sl_jsonl").set_value("\n".join([good] * 7)).run()  # 7 requests, the cap is 6
    lab.button(key="sl_run").click().run()
    assert [e.value for e in lab.error] == [t("zh", "sl_cap_requests", n=7, limit=6)]


@pytest.mark.parametrize("key", ["worker_failed", "worker_timeout", "serving_sliding_window"])
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_every_refusal_of_the_serving_engine_has_words_not_the_internal_error(key, lang):
    from engine.contract.errors import InputError

    words = serving_message(InputError(key, "the engine's own detail <b>x</b>"), lang)
    assert words != t(lang, "err_internal", kind="InputError") and "{" not in words
    bare = re.sub(r"(`+).*?\1", "", words)  # what is left outside inline code (shown as text, never markup)
    assert "<b>" not in bare


# --- the page in one language (no English, no raw ids, a quiet log) ----------------

ENGLISH_REASONS = ("not JSON", "Expecting", "no requests", "must be", "got ", "unknown key", "the prompt is empty",
                   "missing", "wrong type")


@needs_model
@pytest.mark.parametrize("text, why, limit", [
    ("hello world", "sl_wl_why_not_json", None),
    ("", "sl_wl_why_no_requests", None),
    ('{"arrival_ms": -5, "prompt": "x", "max_new_tokens": 4}', "sl_wl_why_arrival_range", None),
    ('{"arrival_ms": 0, "prompt": "x", "max_new_tokens": 4, "evil": 1}', "sl_wl_why_unknown_keys", None),
    ('{"arrival_ms": 0, "prompt": "  ", "max_new_tokens": 4}', "sl_wl_why_empty_prompt", None),
    ('{"arrival_ms": 0, "prompt": "x", "max_new_tokens": 100000}', "sl_wl_why_max_new_tokens_range", 16),
])
def test_a_pasted_workloads_refusal_is_all_in_the_pages_language(lab, text, why, limit):
    lab.radio(key="sl_source").set_value("jsonl").run()
    lab.text_area(key="sl_jsonl").set_value(text).run()
    lab.button(key="sl_run").click().run()
    assert not lab.exception
    [message] = [e.value for e in lab.error]
    outside = re.sub(r"`[^`]*`", "", message)  # typed data (a key, a value) is inline code
    assert not [w for w in ENGLISH_REASONS if w in outside], message
    head = t("zh", why).split("{")[0]
    assert head in message, (head, message)
    if limit is not None:  # the cap the page really applies (PREFILL_DECODE_SERVING_MAX_NEW_TOKENS), not 4096
        assert f"1 到 {limit} 之间" in message and "4096" not in message


@needs_model
def test_scenarios_are_listed_and_subtitled_by_their_names_in_the_pages_language(lab):
    box = lab.selectbox(key="sl_scenario")
    assert box.options == [t("zh", "sl_scn_name_" + s.replace("-", "_")) for s in SCENARIO_CHOICES]
    assert not [o for o in box.options if o in SCENARIO_CHOICES]
    from engine.contract.serving.workloads import SCENARIOS

    assert set(SCENARIO_CHOICES) == set(SCENARIOS)  # every scenario has its names


def test_the_gantt_subtitle_names_the_scenario_in_the_pages_language():
    from dataclasses import replace

    from engine.contract.interop.vllm_import import load_vllm_result
    from engine.contract.serving.trace import ServingSettings
    from lesson.diagrams.serving_gantt import gantt_subtitle, scenario_label

    run = load_vllm_result(VLLM_RESULT).run
    engine_run = replace(run, scenario="long-prompt-during-chats",
                         settings=ServingSettings(policy="chunked", block_size=16, num_kv_blocks=64))
    zh, en = gantt_subtitle(engine_run, "zh"), gantt_subtitle(engine_run, "en")
    assert "long-prompt-during-chats" not in zh and t("zh", "sl_scn_name_long_prompt_during_chats") in zh
    assert t("en", "sl_scn_name_long_prompt_during_chats") in en
    assert scenario_label("zh", "my-file") == "my-file"  # a file's name stays as it is


QUIET = ("missing ScriptRunContext", "No runtime found", "Session state does not function", "streamlit run [FILE_NAME]")


@pytest.mark.slow
@needs_model
def test_a_serving_run_logs_no_bare_mode_warnings(lab, capfd, caplog):
    """Every policy, disaggregated included (its two worker processes write to the same stderr)."""
    _custom(lab, sl_num_chats=1, sl_answer_tokens=4, sl_long_tokens=16, sl_gap_ms=5, sl_long_at=5)
    lab.number_input(key="sl_slo_ttft").set_value(12345.0).run()  # settings no other test ran: no cached runs
    capfd.readouterr()
    caplog.clear()
    lab.button(key="sl_run").click().run()
    assert_healthy(lab)
    assert len(kept(lab, "sl_runs").runs) == 4
    out = capfd.readouterr()
    logged = out.out + out.err + "\n".join(r.getMessage() for r in caplog.records)
    assert not [w for w in QUIET if w in logged], logged[-2000:]

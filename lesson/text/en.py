"""Lesson 19 in English (a faithful translation of zh.py) and every app label.

Keys match zh.py one for one (tests/test_lesson_text.py checks). Values are
Markdown strings or, for tables, lists of strings. `{name}` marks a value filled
in at run time; citations [1] [2] [3] link to the references (anchor #references).
"""

TEXT: dict = {
    # ---- page and sidebar ---------------------------------------------------------
    "page_title": "Lesson 19 · Prefill and Decode",
    "kicker": "Lesson 19 · The two phases of LLM inference",
    "title": "Prefill and Decode: read it all, then write one at a time",
    "sidebar_title": "Settings",
    "language": "语言 / Language",
    "classroom": "Classroom mode",
    "classroom_help": "Larger type; greedy decoding with a fixed seed so demos repeat exactly; step through one forward pass at a time.",
    "model": "Model",
    "model_help": "“default” is the model embedded in the app; the others are local Hugging Face model folders the operator placed in the models folder (env PREFILL_DECODE_MODELS_DIR).",
    "model_in_use": "In use: **{model_id}** · {architecture} · {num_layers} layers · {num_params} parameters",
    "device_dtype": "Device **{device}** · dtype **{dtype}** · KV cache per token **{kv_per_token}**",
    "kv_sliding_window": "Sliding window: {sliding} of {layers} layers attend only to the last **{window}** positions, "
                         "so their cache stops growing once the window is full (the KV figure shows the measured bytes).",
    "limits": "This server's limits: prompts up to {max_prompt_tokens} tokens ({max_prompt_chars} characters), answers up to {max_new_tokens} tokens.",
    "toc": "Contents",
    "sampling": "Sampling",
    "temperature": "Temperature (0 = greedy)",
    "top_k": "Top-k (0 = off)",
    "top_p": "Top-p (1 = off)",
    "seed": "Seed",
    "sampling_locked": "Classroom mode: greedy decoding, seed fixed at 0.",
    # ---- introduction -------------------------------------------------------------
    "intro_1": (
        "We type “法国的首都是” (“The capital of France is”) and the model answers “巴黎。” (“Paris.”). "
        "It looks like one continuous act, yet the computer splits it into two very different kinds of work: "
        "first it processes the whole prompt, then it predicts the following tokens one by one from what it has "
        "already generated. People who study LLM inference systems usually call them Prefill and Decode. "
        "[[1]](#references)"
    ),
    "intro_2": (
        "Prefill does the “reading”; Decode does the “writing on”. They use the same model, but the number of "
        "tokens fed into the model each time differs."
    ),
    # ---- run panel ----------------------------------------------------------------
    "run_title": "Run it on a real model",
    "run_intro": "Every diagram below comes from the model really running behind this page: each forward pass is recorded (time, positions processed, KV cache size).",
    "prompt": "Prompt",
    "prompt_placeholder": "Type a prompt, e.g. The capital of France is",
    "output_len": "Answer length limit (tokens)",
    "output_len_help": "At most this many tokens are generated; the model stops early if it emits its end-of-sequence token.",
    "prompt_len": "Extend the prompt to (tokens)",
    "prompt_len_help": "Filler text is put before the prompt until it has this many tokens. 0 = use it as typed.",
    "prompt_len_note": "The prompt already has {natural} tokens, more than the target; it is used as typed.",
    "prompt_extended": "Filler added before the prompt (the lesson's own sentences, which name no country): {natural} → {num_tokens} tokens.",
    "prompt_beyond_trained": "The default model was trained to answer after prompts of at most {trained} tokens; at {num_tokens} tokens its answer is not promised to be right.",
    "token_split": "The real tokenizer split ({num_tokens} tokens, separated by │)",
    "run": "Run",
    "queued": "The model is busy with another visitor's forward pass. Your request is queued and starts automatically when it is your turn…",
    "queued_for": "This request queued {ms} in total for the model (another visitor's forward pass was running), {prefill_ms} of it before its Prefill; queueing counts in TTFT and ITL.",
    "loading_model": "Loading the model (once per server process)…",
    "running_prefill": "Prefill: reading {num_positions} prompt positions in one pass…",
    "progress": "Forward pass {step} · {num_tokens} / {max_tokens} tokens generated",
    "log_prefill": "**Prefill**: {num_positions} positions in one pass → first token `{piece}` ({ms})",
    "log_decode": "**Decode {index}**: 1 new position in → `{piece}` ({ms})",
    "answer": "Answer",
    "done": "Done: {num_tokens} tokens; stopped because {stop_reason}.",
    "stop_eos": "the model emitted its end-of-sequence token",
    "stop_length": "the length limit was reached",
    "ignore_eos": "Keep writing past the end of sequence",
    "ignore_eos_help": "The model ends its answer with an end-of-sequence token (“Paris.” then stop, as 巴黎。 does in the lesson's table). Tick this to make it write exactly the answer length you set; what comes after the end is a new, unrelated text.",
    "eos_hint": "The model ended its answer itself after {num_tokens} tokens (the last one is the end-of-sequence token), before the limit of {limit}. To watch more Decode steps, tick “{ignore_eos}”.",
    "showing_trace": "The diagrams below show this request: prompt {prompt_len} tokens, answer {output_len} tokens, model {model_id}, {sampling}.",
    "greedy": "greedy decoding",
    "sampled": "sampling (temperature {temperature}, seed {seed})",
    "stale_note": "The settings have changed; press “Run” to update the diagrams below.",
    "classroom_step": "Next step (one forward pass)",
    "classroom_reset": "Start over",
    "classroom_all": "Show all",
    "classroom_prev": "Back one step",
    "classroom_keys": "Keys anywhere on the page: → / Page Down next pass, ← / Page Up back, Home start, End all.",
    "classroom_position": "Classroom stepping: showing forward pass {shown} of {total} ({phase})",
    "phase_prefill": "Prefill",
    "phase_decode": "Decode",
    "data_title": "Step-by-step data (one row per forward pass)",
    "download_json": "Download the trace (JSON)",
    "download_csv": "Download the step table (CSV)",
    "download_svg": "Download SVG",
    "raw_svg": "View the raw SVG",
    "reset_defaults": "Reset to the lesson's defaults",
    "reset_defaults_help": "Puts every setting (prompt, lengths, sampling, model, classroom mode) back to the lesson's default; the language and the run shown stay as they are.",
    "no_trace": "No run yet. Press “Run”.",
    # ---- section 1: timeline ---------------------------------------------------------
    "sec_timeline": "The timeline of one answer",
    "timeline_caption": "The timeline of one request (from the real run above).",
    "timeline_1": (
        "To make it easy to draw, we split the prompt schematically into four positions, “法国 / 的 / 首都 / 是” "
        "(“France / ’s / capital / is”); this does not mean a real tokenizer necessarily splits it this way. "
        "The model first runs one forward pass over these four positions and, from the output at the last "
        "position, predicts the first answer token “巴黎” (“Paris”). Next, “巴黎” is fed in as the new input to "
        "predict “。”. Only if it is to go on is “。” sent back into the model."
    ),
    "timeline_real_split": "The run panel above shows the real tokenizer's split, to compare with this sketch.",
    "timeline_table": [
        ["Moment", "What is fed into the model", "Next token produced this round", "Phase"],
        ["First forward pass", "The four prompt positions", "巴黎 (Paris)", "Prefill"],
        ["Next forward pass", "The just-generated “巴黎”", "。", "Decode"],
        ["If it goes on", "The just-generated “。”", "The next token", "Decode"],
    ],
    "timeline_2": (
        "The first output token usually comes from the last position of Prefill: the prompt is not prefilled "
        "first and then given an extra full Decode step to get it. Implementations may differ slightly in how "
        "they schedule and count, but this dependency in the computation is worth remembering."
    ),
    # ---- section 2: Prefill -----------------------------------------------------------
    "sec_prefill": "Prefill reads the prompt first",
    "prefill_1": (
        "Prefill processes many prompt positions at once. The causal mask still applies: earlier tokens cannot "
        "see later ones; but the computation for all positions can be organised into large matrix operations "
        "within one forward pass. At the same time the model builds each layer's KV cache for later generation "
        "to reuse."
    ),
    "prefill_2": (
        "The longer the prompt, the more positions this step has to process. Prefill usually has large matrix "
        "multiplications that let a GPU's parallel compute shine, so in common setups it tends to be more "
        "compute-bound. This is a performance tendency, not an absolute verdict for every length, model and "
        "hardware. [[1]](#references)"
    ),
    "blocks_caption": "Positions newly processed by each forward pass (real run): the first column is Prefill, each later column one Decode step.",
    # ---- section 3: Decode --------------------------------------------------------------
    "sec_decode": "Decode writes one new position at a time",
    "decode_1": (
        "Once the first answer token is out, the same request still cannot compute all its unknown future "
        "tokens in parallel. The next step's input has to wait for the previous step to choose its result. "
        "Decode is therefore a chain of dependencies, one after another."
    ),
    "decode_2": (
        "With a KV cache, each round feeds only the token just generated into the model as a new position and "
        "computes its Q, K and V; the new query still has to read the historical K/V for attention, and then "
        "predicts the token after that. The cache saves recomputing old positions; it cannot save the current "
        "query the work of reading the history."
    ),
    "decode_3": (
        "“One after another” is about the inside of one request. A server can put the Decode steps of many "
        "users' requests into one batch and use the GPU in parallel. Do not confuse these two kinds of "
        "parallelism."
    ),
    "kv_caption": "The KV cache after each forward pass (real run: the bars and every number about this run are "
                  "measured from the cache tensors; the formula is there to compare).",
    # ---- section 4: schematic blocks -------------------------------------------------------
    "sec_blocks": "Change the prompt and answer lengths yourself",
    "blocks_note": (
        "A teaching sketch: the blocks show how many positions each forward pass newly processes, not time or "
        "FLOPs. It assumes the first output token comes from Prefill and each later Decode round produces one."
    ),
    "demo_prompt_len": "Prompt length (tokens)",
    "demo_output_len": "Answer length (tokens)",
    "demo_live_hint": "This sketch does not run the model: it updates as soon as you move a slider. For real numbers, use “Run” at the top of the page.",
    # ---- section 5: bottlenecks ----------------------------------------------------------
    "sec_bottleneck": "Why the bottlenecks differ",
    "bottleneck_1": (
        "Prefill processes many positions at once, and its matrix multiplications are usually large; Decode, "
        "for a single request, processes only one new position per round, yet has to read the model weights "
        "and an ever-growing KV cache. In common GPU deployments the former is more easily limited by compute "
        "throughput, while the latter is more often limited by memory bandwidth, cache reads and small-batch "
        "efficiency. Decoding many requests together changes the batch size and the bottleneck, so do not "
        "treat this as a fixed law. [[2]](#references)"
    ),
    "bottleneck_table": [
        ["Aspect", "Prefill", "Decode"],
        ["New positions per round, same request", "Many prompt positions", "Usually 1 new position"],
        ["Main products", "The first output token, the prompt's KV cache", "The next token, new KV cache entries"],
        ["Common performance tendency", "Large matrix computations", "Reading weights and KV, step-by-step latency"],
        ["Depends on an unknown previous output?", "No", "Yes"],
    ],
    "bottleneck_2": (
        "The two phases need different resources, and they also interfere with each other. For example, a very "
        "long Prefill inserted into a running Decode batch can make other users wait longer. Research answers "
        "with chunked Prefill, or by running Prefill and Decode on different resources; these are scheduling "
        "choices of the serving system, not the model suddenly becoming two models. "
        "[[1]](#references) [[2]](#references)"
    ),
    "bottleneck_live": (
        "In this real run, Prefill took {prefill_ms} for {prompt_len} positions (about {per_position} per "
        "position); one Decode step took {decode_ms} on average, for a single position."
    ),
    "bottleneck_alike": "Measured on {device} ({dtype}) with model {model} ({params} parameters): here Prefill is only {ratio}× a Decode step. On a model this small each forward pass mostly pays a fixed cost (Python, launching the layers), so a short prompt makes the two phases look alike; the difference is in how the time grows: Prefill with the prompt, a Decode step hardly at all. Press the button below to see it.",
    "bottleneck_apart": "Measured on {device} ({dtype}) with model {model} ({params} parameters): here Prefill took {ratio}× a Decode step. Prefill grows with the prompt; a Decode step, one position, hardly grows with the context.",
    "show_difference": "Show the difference: run the lesson's example with a {num_tokens}-token prompt",
    "show_difference_help": "Puts the lesson's own sentences before the prompt up to that length (the model still answers and stops), then runs. Compare the Prefill bar with a Decode bar.",
    "cache_compare": "Compare: the same answer with the KV cache off and on",
    "cache_compare_running": "Running the answer twice, cache off then on…",
    "cache_compare_help": "Runs the shown run's prompt again, greedy, for {num_tokens} tokens: once with the cache off (every step recomputes all positions), once with it on (Prefill, then one new position per step). Takes a few seconds on a long prompt.",
    "cache_compare_caption": "Measured here, the same {num_tokens} tokens after a {prompt_len}-token prompt: cache off {off_ms} and {off_flops} FLOPs in total, cache on {on_ms} and {on_flops} FLOPs (with the cache off: {time_ratio}× the time, {flops_ratio}× the FLOPs). The FLOPs come from the cost model.",
    "alt_cache_compare": "Bar chart, KV cache off vs on for the same {num_tokens} tokens after a {prompt_len}-token prompt: for each forward pass, measured time (top) and FLOPs (bottom). In total: off {off_ms}, {off_flops} FLOPs; on {on_ms}, {on_flops} FLOPs.",
    "attention_step": "Decode step whose attention is shown",
    "attention_step_help": "With the cache on, that step computes one new position, but its query still reads every cached position.",
    "attention_caption": "One row per layer, one column per position the new query reads: the {context} cached positions, then itself (darker = more weight, mean over heads). Taken from the real model for that step.",
    "alt_attention": "Heat map of Decode step D{step}: in each of {num_layers} layers, the new position's attention weights (mean over heads) over {context} cached positions plus itself.",
    # ---- section 6: the two waits ------------------------------------------------------------
    "sec_waits": "The two waits users feel",
    "waits_1": (
        "**TTFT (Time to First Token)** is the time from sending a request to seeing the first output token; it "
        "includes queueing, Prefill, choosing the first token, transfer and so on. **TPOT (Time per Output "
        "Token)** describes the average gap between output tokens after the first one; some systems also look "
        "at the **ITL (inter-token latency)** between neighbouring tokens to see jitter. TTFT is driven mainly "
        "by the first processing, while TPOT/ITL better reflect the experience of sustained Decode. "
        "[[2]](#references)"
    ),
    "waits_2": (
        "A long prompt can keep the first character from appearing for a long time; a quick first character "
        "does not guarantee smooth writing afterwards. So when judging a service's speed, “tokens per second” "
        "is not enough: look at both kinds of wait."
    ),
    "metric_ttft": "TTFT",
    "metric_ttft_def": "Request start to the first token (tokenization and Prefill included).",
    "metric_tpot": "TPOT",
    "metric_tpot_def": "(E2EL − TTFT) ÷ (output tokens − 1): the mean gap after the first token.",
    "metric_itl": "ITL p99",
    "metric_itl_def": "The p99 of the gaps between consecutive output tokens: 99 % of gaps are at most this. The mean ITL always equals TPOT, so look at the spread.",
    "metric_itl_spread": "p99: 99 % of gaps are at most this. Over {n} gaps: p50 {p50} · p90 {p90} · max {max}. The mean ITL always equals TPOT; the spread is what ITL adds.",
    "page_drawing_note": (
        "Of these waits, {ms} was this page's own drawing (mostly in {n} gaps, teal in the chart): the model "
        "waits while the page draws, so it counts in ITL, TPOT and E2EL (what you felt on this page) but not "
        "in any forward pass's time."
    ),
    "metric_e2el": "E2EL",
    "metric_e2el_def": "End-to-end latency: request start to the last token.",
    "metric_na": "—",
    "metric_tpot_one_token": "Only 1 output token so far: TPOT needs a gap after the first token.",
    "metric_itl_one_token": "Only 1 output token so far: no gap between consecutive tokens yet, so no ITL.",
    "latency_caption": (
        "Each bar is how long one output token took: from the previous token (the request start, for the first) "
        "to this one, so its height is that token's ITL (TTFT for the first). The bottom is the forward pass that "
        "made it, the top the rest: teal is page drawing (the model waits), violet is tokenizing, queueing and "
        "bookkeeping. Dashed: TPOT; dotted: ITL p50 and p99 (hover to see each step)."
    ),
    "latency_svg_caption": "The same latency chart as SVG (downloadable).",
    # ---- section 7: many requests --------------------------------------------------------------
    "sec_many": "When many requests arrive",
    "many_1": (
        "Users' requests differ in prompt length, arrival time and output length. An online service adjusts its "
        "batches dynamically: new requests can join, finished ones leave, and those still generating keep "
        "running. Such continuous batching raises resource utilisation, while trading off throughput, "
        "first-token latency and the gaps between later outputs. The KV cache also grows dynamically with each "
        "request; methods such as PagedAttention focus on improving how its memory is managed. "
        "[[3]](#references)"
    ),
    "many_server_note": (
        "This page is itself a tiny shared service: the model does one forward pass at a time, and visitors "
        "who run at the same moment wait in a queue."
    ),
    # ---- section 8: one sentence ------------------------------------------------------------------
    "sec_summary": "The lesson in one sentence",
    "summary": (
        "To sum up the lesson in one sentence: Prefill reads the known prompt in one go and gives the first "
        "token; Decode depends on the tokens already generated and writes on step by step. The waits they "
        "optimise are not the same wait."
    ),
    # ---- section 9: animation -----------------------------------------------------------------------
    "sec_animation": "Step-by-step animation (in place of the video)",
    "animation_caption": "A replay of the real run: one Prefill, then Decode after Decode. In classroom mode, advance it by hand with “Next step”.",
    # ---- section 10: references ---------------------------------------------------------------------
    "sec_references": "References",
    "references": [
        "Agrawal, A., Panwar, A., Mohan, J., et al. “SARATHI: Efficient LLM Inference by Piggybacking Decodes "
        "with Chunked Prefills.” arXiv preprint [arXiv:2308.16369](https://arxiv.org/abs/2308.16369), 2023.",
        "Zhong, Y., Liu, S., Chen, J., et al. “DistServe: Disaggregating Prefill and Decoding for Goodput-optimized "
        "Large Language Model Serving.” OSDI, 2024. [arXiv:2401.09670](https://arxiv.org/abs/2401.09670).",
        "Kwon, W., Li, Z., Zhuang, S., et al. “Efficient Memory Management for Large Language Model Serving with "
        "PagedAttention.” SOSP, 2023. [arXiv:2309.06180](https://arxiv.org/abs/2309.06180).",
    ],
    # ---- section 11: review map -----------------------------------------------------------------------
    "sec_review": "Lesson 19 review map",
    "review_caption": "Computation shape, performance bottlenecks, experience metrics and serving schedules, reviewed on one page.",
    "next_lesson": "Next lesson, quantization: when weights are squeezed from 16 bits to INT8 or INT4, what exactly is lost?",
    # ---- figures in words (the <img> alt text a screen reader reads; numbers from the run) ----------------
    "alt_timeline": "Timeline, one row per forward pass: prompt “{prompt}” ({prompt_len} tokens) → answer “{answer}” "
                    "({output_len} tokens). Prefill read {prompt_len} positions in one pass ({prefill_ms}); then "
                    "{num_decode} Decode passes of 1 new position each. TTFT {ttft}, E2EL {e2el}.",
    "alt_blocks": "Blocks, one column per forward pass: column 1 is Prefill, computing {prompt_len} new positions; then "
                  "{num_decode} Decode passes each compute 1 new position and read the cached ones. {num_passes} passes, "
                  "{num_positions} positions computed.",
    "alt_kv_growth": "Bar chart of the KV cache after each of {num_passes} forward passes, each bar stacked by layer "
                     "({num_layers} layers): {prefill_bytes} after Prefill ({prompt_len} tokens), {final_bytes} after the "
                     "last pass ({num_tokens} tokens); {per_token} per token by the formula.",
    "alt_latency": "Bar chart of how long each of {output_len} output tokens took, one bar each: TTFT {ttft} (the Prefill "
                   "pass {prefill_ms} of it), TPOT {tpot}, ITL p50 {p50}, p99 {p99}, max {max}.",
    "alt_animation": "Animated replay: Prefill reads all {prompt_len} prompt positions at once and gives “{first}”; then "
                     "{num_decode} Decode passes each feed the previous token back in and compute 1 new position; the "
                     "answer is “{answer}”.",
    "alt_review_map": "Review map: Prefill and Decode compared in six rows (new positions per pass, shape of computation, "
                      "main product, usual bottleneck, waiting for the last output, the wait users feel), four serving "
                      "techniques, and this run: Prefill {prompt_len} positions in {prefill_ms}, TTFT {ttft}; "
                      "{num_decode} Decode passes, TPOT {tpot}; KV cache ends at {final_bytes}.",
    "alt_blocks_schematic": "Schematic blocks (no model run): a prompt of {prompt_len} positions computed in 1 Prefill "
                            "pass, then {num_decode} Decode passes of 1 new position each; {num_passes} passes, "
                            "{num_positions} positions computed.",
    # ---- compare runs, replay, animation controls (issue 8, part B) -------------------------------------
    "sec_compare": "Compare two runs",
    "compare_intro": "The lesson's point needs two runs side by side: a short prompt against a long one, TTFT against TPOT. The page keeps this session's last {limit} runs; pick two, and their timelines, latency and KV-cache charts are drawn on **the same axes**.",
    "compare_need_two": "There is {count} run so far. Run once more (for example the default prompt, then “show the difference”) to compare.",
    "compare_placeholder": "Choose two runs",
    "compare_pick": "Pick two runs to compare",
    "compare_pick_help": "Two at most. The newest run comes first; a label reads: time · prompt → answer tokens · TTFT · model.",
    "compare_pick_two": "Pick one more run (two in all) to draw both on the same axes.",
    "compare_same_axes": "Both charts share their axes (the time axis, the latency axis and the KV-cache axis each cover both runs), so bar lengths compare directly.",
    "compare_table_title": "The numbers side by side",
    "compare_fig_timeline": "Timeline",
    "compare_fig_latency": "How long each token waited",
    "compare_fig_kv": "KV-cache growth",
    "compare_run_caption": "{run}: {label}",
    "compare_alt": "{run} (on the same axes as the other run): {alt}",
    "history_label": "{time} · prompt {prompt_len} → answer {output_len} tokens · TTFT {ttft} · {model}",
    "cmp_run_a": "Run A",
    "cmp_run_b": "Run B",
    "cmp_measure": "Measure",
    "cmp_prompt_tokens": "Prompt tokens",
    "cmp_answer_tokens": "Answer tokens",
    "cmp_prefill": "Prefill pass",
    "cmp_ttft": "TTFT",
    "cmp_tpot": "TPOT",
    "cmp_itl_p50": "ITL p50",
    "cmp_itl_p99": "ITL p99",
    "cmp_e2el": "E2EL",
    "cmp_kv_per_token": "KV cache per token",
    "cmp_kv_final": "Final KV cache",
    "replay_title": "Slow-motion replay",
    "replay_pace": "Replay pace",
    "replay_pace_help": "“× 1/4” and the like slow the measured times down; “0.5 s per pass” and the like give every forward pass the same time, so even a very short pass can be seen. Each frame redraws the whole page, which takes the browser a moment (0.5–1.5 s on a 2-core demo machine): a pass can stay up longer than the pace, never shorter.",
    "replay_pace_x1": "measured speed",
    "replay_pace_x0.25": "× 1/4",
    "replay_pace_x0.1": "× 1/10",
    "replay_pace_x0.01": "× 1/100",
    "replay_pace_s0.5": "0.5 s per pass",
    "replay_pace_s1": "1 s per pass",
    "replay_start": "Replay the last run",
    "replay_stop": "Stop the replay",
    "replay_label": "**Replay** of the last run's measured times, slowed down: **not a new measurement**. Forward pass {shown} / {total} (measured {ms}).",
    "replay_done": "Replay finished: {total} forward passes. The figures below show the whole run.",
    "anim_controls": "Play / pause, or drag the slider to step through",
    "anim_play": "Play",
    "anim_pause": "Pause",
    "anim_step": "Forward pass",
    "anim_step_value": "pass {k} / {n}",
    "sketch_positions": "positions ↓",
    "sketch_live_alt": "Sketch (while dragging): Prefill computes the prompt's {p} positions in one pass; then each Decode pass of the {o}-token answer computes one new position and reads the older ones from the KV cache.",
    # ---- serving lab ----
    "sv_policy_one_at_a_time": "one at a time",
    "sv_policy_prefill_first": "prefill-first",
    "sv_policy_chunked": "chunked prefill",
    "sv_policy_disaggregated": "disaggregated",
    "sv_phase_prefill": "Prefill",
    "sv_phase_prefill_chunk": "Prefill chunk",
    "sv_phase_decode": "Decode",
    "sv_worker_engine": "engine",
    "sv_worker_prefill": "Prefill worker",
    "sv_worker_decode": "Decode worker",
    "sv_recompute": "recomputed after a preemption",
    "sv_seg_pass": "{rid}: pass {n}, {phase}, positions {a}–{b}, {ms} ({batch} requests, {tokens} positions in the pass)",
    "sv_seg_stall": "{rid} waits: pass {n} ran without it, {ms} ({batch} requests, {tokens} positions)",
    "sv_seg_handoff": "{rid}: KV of {tokens} positions ({bytes}) handed to the Decode worker, {ms}",
    "sv_seg_queue": "{rid} queued {ms} before its first pass",
    "sv_seg_observed_ttft": "{rid}: {ms} from sending to the first token (queue and Prefill, seen from the client)",
    "sv_row_lengths": "{p}→{o}",
    "sv_row_title": "{rid}: prompt {p} tokens → {o} tokens; TTFT {ttft}, E2EL {e2el}",
    "sv_gantt_title": "Requests over time: {policy}",
    "sv_gantt_title_observed": "Requests over time, observed from the client",
    "sv_gantt_subtitle": "{n} requests · scenario {scenario} · {model} on {device} · every time measured",
    "sv_time_axis": "Time since the run started (ms)",
    "sv_spike_title": "{rid} waited {ms} between two tokens",
    "sv_spike_label": "ITL {ms}",
    "sv_legend_waiting": "waiting (queue, or a pass ran without it)",
    "sv_legend_prefill": "Prefill (chunk: white edges)",
    "sv_legend_decode": "Decode pass",
    "sv_legend_observed_ttft": "to the first token (seen from the client)",
    "sv_legend_handoff": "KV hand-off",
    "sv_legend_preempted": "preempted (blocks freed, recomputed later: dashed edge)",
    "sv_preempted_title": "{rid} preempted before pass {n}: its blocks were freed",
    "sv_legend_token": "token",
    "sv_legend_spike": "ITL over {factor}× the median",
    "sv_note_observed": "Measured from the client: the server's forward passes are not visible, so the bar up to the first token holds the queue and the Prefill together.",
    "sv_note_longest": "The longest pass with Prefill in it (pass {n}, {ms}) computed {positions} prompt positions ({rids}); {waited} requests already decoding got their next token only after it ended.",
    "sv_note_longest_disagg": "The longest Prefill pass (pass {n}, {ms}, {positions} positions of {rids}) ran on the Prefill worker; the Decode worker kept going.",
    "sv_note_spike": "Largest gap between two tokens: {ms} ({rid}), against a median ITL of {p50}; {n} gaps over {factor}× the median are marked in red.",
    "sv_note_no_spike": "No gap between two tokens is over {factor}× the median ITL ({p50}).",
    "sv_note_handoff": "{n} KV hand-offs; the largest, {rid}: {tokens} positions, {bytes}, measured {ms} (pack, copy between processes, unpack). The same bytes over an assumed link: {links}.",
    "sv_note_rows": "The first {shown} of {n} requests are drawn; the metric table counts them all.",
    "sv_batch_title": "What each forward pass carried: {policy}",
    "sv_batch_subtitle": "Stacked per pass: Decode positions (one per running request) and Prefill positions",
    "sv_batch_subtitle_budget": "Stacked per pass: Decode positions first, then Prefill chunks up to the budget of {budget}",
    "sv_legend_decode_tokens": "Decode positions",
    "sv_legend_prefill_tokens": "a whole Prefill",
    "sv_legend_chunk_tokens": "a Prefill chunk",
    "sv_legend_budget": "token budget",
    "sv_batch_panel_tokens": "Positions computed in the pass",
    "sv_budget_label": "budget {budget}",
    "sv_batch_bar_title": "Pass {n}: {decode} Decode + {prefill} Prefill positions for {requests} requests ({waiting} waiting), {ms}",
    "sv_batch_panel_time": "measured time of the pass",
    "sv_batch_x_axis": "Forward passes in order ({n})",
    "sv_batch_note": "{n} passes, {decode_passes} of them Decode only, {mixed} mixing Prefill and Decode; up to {max_batch} requests in one pass. The biggest, pass {max_n}, computed {max_tokens} positions in {max_ms}.",
    "sv_batch_note_budget": "No pass computed more than the budget of {budget} positions ({over} over).",
    "sv_kv_title": "Paged KV memory: {policy}",
    "sv_kv_subtitle": "Blocks of {block_size} tokens ({per_block} each) · {blocks} blocks in the KV budget",
    "sv_kv_panel_time": "Blocks in use after each pass (one colour per request)",
    "sv_kv_col_title": "After pass {n}: {used} blocks in use, {free} free; {requests} requests hold {tokens} tokens; {waste} slots reserved but empty",
    "sv_kv_budget_line": "KV budget {blocks} blocks",
    "sv_kv_grid_heading": "Block table after pass {n}, the peak: {used} of {blocks} blocks in use (fill = tokens held)",
    "sv_kv_cell_title": "Block {block}: {rid}, {tokens} of {size} tokens",
    "sv_kv_grid_more": "… {n} more free blocks not drawn",
    "sv_kv_mem_heading": "At the peak: token slots reserved vs held",
    "sv_kv_mem_paged": "paged (whole blocks)",
    "sv_kv_mem_contiguous": "contiguous (max length up front)",
    "sv_kv_mem_value": "holds {used} of {reserved} ({pct})",
    "sv_kv_note_peak": "At the peak (after pass {n}) {used} of {blocks} blocks held {tokens} tokens; {waste} slots in the last blocks were empty. Paged memory held tokens in {paged} of what it reserved; reserving each request's maximum length up front would hold {contiguous}.",
    "sv_kv_note_preempted": "{n} preemptions: a request's blocks were freed to let others run, and its positions were computed again later.",
    "sv_kv_note_budget": "KV budget set to {blocks} blocks; when they ran out: {mode} (up to {waited} requests waited in one pass).",
    "sv_on_kv_full_wait": "admit no new request until blocks free up",
    "sv_on_kv_full_preempt": "preempt the newest request and recompute it later",
    "sv_kv_note_paper": "The PagedAttention paper (arXiv 2309.06180) reports that earlier systems used only 20–38% of the KV memory they reserved.",
    "sv_m_metric": "Metric",
    "sv_m_completed": "Completed",
    "sv_m_duration": "Duration",
    "sv_m_ttft": "TTFT",
    "sv_m_tpot": "TPOT",
    "sv_m_itl": "ITL",
    "sv_m_e2el": "E2EL",
    "sv_m_request_throughput_per_s": "Requests/s",
    "sv_m_output_throughput_tok_s": "Output tokens/s",
    "sv_m_total_token_throughput_tok_s": "Total tokens/s",
    "sv_m_goodput": "Goodput (good/done · req/s)",
    "sv_m_kv_paged": "KV held/reserved, paged",
    "sv_m_kv_contiguous": "KV held/reserved, contiguous",
    "sv_slo_none": "no SLO set (every finished request counts)",
    "sv_table_title": "Serving metrics, policy by policy",
    "sv_table_subtitle": "Scenario {scenario}, {n} requests, the same workload under every policy (vLLM's definitions)",
    "sv_table_note": "Goodput counts requests that meet every SLO: {slo}. Bold on green: the best in the row. {model} on {device}; all times measured.",
    "sv_table_best": "best in this row",
    "alt_sv_gantt": "Gantt chart of {n} requests under {policy}, one row per request: waiting, Prefill and each Decode pass on a time axis ({passes} passes, {handoffs} KV hand-offs). TTFT p50 {ttft}, ITL p99 {p99}. The longest Prefill pass took {longest} while {waited} decoding requests waited; the largest gap between two tokens was {spike}.",
    "alt_sv_batch": "Bar chart of {n} forward passes under {policy}: Decode and Prefill positions stacked per pass, {mixed} passes mixing both; the biggest pass computed {max_tokens} positions in {max_ms}. Token budget: {budget}.",
    "alt_sv_kv": "Paged KV memory under {policy}: blocks of {block_size} tokens per request over {passes} passes, the block table at the peak ({used} of {blocks} blocks, {waste} empty slots), and reserved vs held: paged {paged}, contiguous {contiguous}.",
    "alt_sv_metrics": "Table of {rows} serving metrics for {n} policies. TTFT p50: {ttft}. ITL p99: {itl}. Output tokens/s: {tput}.",
    "sv_find_chunked": "**Measured, p99 ITL:** prefill-first {first}, chunked prefill {chunked} (×{ratio}); the largest gap {first_max} vs {chunked_max}. With a budget of {budget} positions per pass, the long prompt is cut into chunks and every pass still carries the running Decodes.",
    "sv_find_batching": "**Measured, output tokens/s:** {policy} {batched}, one at a time {solo} (×{ratio}). One at a time, the last request waits for all the others: TTFT p99 {solo_ttft} vs {batched_ttft}.",
    "sv_find_disagg": "**Measured, disaggregated:** {n} KV hand-offs, {bytes} in all, {copy} of copying; ITL p99 {p99}: the Decode worker never runs a Prefill. The largest hand-off ({rid}, {big}) over an assumed link: {links}.",
    "sv_find_preempted": "**{policy}:** {n} preemptions (the KV budget ran out; a request's blocks were freed and its positions computed again).",
    "nav_serving_lab": "Serving lab",
    "sl_link": "To the serving lab: many requests at once on the real engine, four policies side by side",
    "sl_title": "Serving lab",
    "sl_intro": "Many requests arrive at different times, with different prompt and answer lengths. Pick a workload, then run it under every policy on the real model: **one at a time** (no batching), **prefill-first** (a new prompt's whole Prefill in one pass; running Decodes wait), **chunked prefill** (Decodes first, then Prefill chunks up to a token budget; SARATHI) and **disaggregated** (a Prefill worker and a Decode worker, the KV cache handed over; DistServe). Every time shown is measured.",
    "sl_caps": "This server's caps: at most {requests} requests, prompts of {prompt} tokens, answers of {answer} tokens; policies: {policies}.",
    "sl_workload": "Workload",
    "sl_source": "Requests",
    "sl_source_scenario": "a named scenario",
    "sl_source_custom": "make one",
    "sl_source_jsonl": "paste JSON Lines",
    "sl_jsonl": "One request per line (JSON Lines)",
    "sl_jsonl_help": "Each line: {\"arrival_ms\": 0, \"prompt\": \"法国的首都是\", \"max_new_tokens\": 16}; optional ignore_eos, prompt_tokens (stretch the prompt to N tokens), request_id. The same format as python -m engine serve --workload FILE.jsonl.",
    "sl_scenario": "Scenario",
    "sl_scn_long_prompt_during_chats": "Four chats are decoding when a 1024-token prompt arrives at 100 ms.",
    "sl_scn_burst_16": "16 short chats arrive at once (32 tokens each).",
    "sl_scn_eight_chats": "8 chats at once, 64 tokens each (the benchmark's batch).",
    "sl_scn_poisson_16": "16 chats with Poisson arrivals, 20 per second (seed below), 8 to 48 tokens each.",
    "sl_scn_mixed_lengths": "8 requests, one every 20 ms, prompts stretched to 0–512 tokens.",
    "sl_scn_capital_questions": "8 capital questions at once, each answered until its own end-of-sequence.",
    "sl_seed": "Seed",
    "sl_num_chats": "Number of chats",
    "sl_chat_tokens": "Chat prompt length (tokens; 0 = the question as written)",
    "sl_chat_tokens_help": "Each chat is a capital question; a length above its own stretches it with the lesson's filler text before it.",
    "sl_answer_tokens": "Answer length of each chat (tokens)",
    "sl_long_tokens": "One long prompt (tokens; 0 = none)",
    "sl_long_tokens_help": "One request with a long prompt (法国的首都是 after the lesson's filler), answering 8 tokens: the Prefill that makes every running Decode wait.",
    "sl_arrival": "Arrivals",
    "sl_arrival_spacing": "evenly spaced",
    "sl_arrival_poisson": "Poisson",
    "sl_gap_ms": "Time between two chats (ms)",
    "sl_rate": "Arrival rate (requests per second)",
    "sl_long_at": "The long prompt arrives at (ms)",
    "sl_engine": "Engine settings",
    "sl_token_budget": "Token budget per pass (chunked prefill)",
    "sl_token_budget_help": "The most positions one forward pass computes under chunked prefill: the running Decodes first, then Prefill chunks to fill it.",
    "sl_block_size": "KV block size (tokens)",
    "sl_kv_blocks": "KV blocks budget (0 = enough for every request)",
    "sl_kv_blocks_help": "How many blocks the KV store holds. Fewer than the workload needs at its peak: new requests wait, or the newest is preempted and recomputed later. A request that can never fit is refused.",
    "sl_on_kv_full": "When KV blocks run out",
    "sl_slo_ttft": "SLO: TTFT at most (ms; 0 = not set)",
    "sl_slo_tpot": "SLO: TPOT at most (ms; 0 = not set)",
    "sl_slo_help": "Goodput counts the requests that meet every SLO you set, per second (DistServe).",
    "sl_run": "Run all policies on this workload",
    "sl_running": "Running {policy} ({i} of {n}) on the real model…",
    "sl_done": "Done: {n} policies, the same workload.",
    "sl_results": "Policy by policy",
    "sl_what_to_see": "**What to look for.** In the Gantt of **prefill-first**, the long prompt's Prefill is one long pass: every chat that was decoding gets no token until it ends (the red bracket: one huge ITL). Under **chunked prefill** the prompt goes in pieces and each pass still carries the Decodes: the gaps are shorter, the long prompt's TTFT longer. **Disaggregated** runs the Prefill on another worker: the Decodes keep going; the price is the KV hand-off (green) and a second model. **One at a time** has no stalls but every request waits for all the ones before it.",
    "sl_table_svg": "The table as an SVG figure (to download)",
    "sl_tab_gantt": "Requests over time",
    "sl_tab_batch": "What each pass carried",
    "sl_tab_kv": "KV blocks",
    "sl_explain_gantt": "One row per request: waiting (violet), Prefill (blue), each Decode pass (orange), a tick per token; red brackets mark gaps over 3× the median ITL.",
    "sl_explain_batch": "One bar per forward pass: Decode positions below, Prefill above; the dashed line is chunked prefill's token budget. Underneath, each pass's measured time.",
    "sl_explain_kv": "Blocks each request holds after each pass, the block table at the peak (a partly filled last block is internal waste), and paged vs contiguous reservation.",
    "sl_hover": "Interactive Gantt (hover for each pass)",
    "sl_download_runs": "Download the runs (JSON)",
    "sl_honest": "**Honest numbers.** This runs a 3.5M-parameter model on this server's CPU: a Decode step takes a few milliseconds, so Python and scheduling overhead are a large share of every pass and the absolute times are small. On a GPU a batched Decode step costs about as much as a single one until the batch is large (it is bound by reading the weights), so batching gains far more, and a long Prefill is compute-bound and takes a larger share of the time: the stall and what chunking saves grow with the model. Disaggregation on one CPU splits its cores between two processes; with two GPUs each worker has its own device, and the hand-off goes over NVLink or the network (the estimates above).",
    "sl_cap_requests": "This workload has {n} requests; this server runs at most {limit} (PREFILL_DECODE_SERVING_MAX_REQUESTS).",
    "sl_cap_prompt": "A prompt of {n} tokens is longer than this server allows ({limit}, PREFILL_DECODE_SERVING_MAX_PROMPT_TOKENS).",
    "sl_cap_answer": "An answer of {n} tokens is longer than this server allows ({limit}, PREFILL_DECODE_SERVING_MAX_NEW_TOKENS).",
    "sl_err_never_fits": "Request {request_id} can never fit: it needs {need} KV blocks and the budget is {num_blocks}. Raise the KV blocks budget (or set 0) or use larger blocks.",
    "sl_err_prompt_too_long": "Request {request_id} is longer than the model's context. Shorten the prompts or answers.",
    "sl_err_bad_workload": "This workload cannot run: {detail}",
    "sl_err_bad_workload_line": "Line {line} of the workload: {reason}",
    "sl_err_serve_timeout": "The run took too long and was stopped. Try fewer or shorter requests.",
    "sl_err_bad_serve_setting": "An engine setting is out of range: {detail}",
    "sl_err_empty_prompt": "Request {request_id} has an empty prompt.",
    "sl_err_unknown_scenario": "There is no scenario “{name}”.",
    "sl_err_worker_failed": "A disaggregated worker stopped: {detail} Nothing was kept from this run; run again, or ask the operator to check the server log.",
    "sl_err_worker_timeout": "A disaggregated worker stopped answering, so the run was stopped. Try fewer or shorter requests.",
    "sl_err_serving_sliding_window": "This model uses a sliding-window attention; the serving engine does not support it yet. Pick another model for the serving lab.",
    # ---- error messages (engine error .key -> text) ------------------------------------------------------
    "err_empty_prompt": "The prompt is empty. Type at least one character, for example “The capital of France is”.",
    "err_prompt_too_long": "The prompt has {num_tokens} tokens, more than this server's limit of {limit}. Shorten it.",
    "err_prompt_too_many_chars": "The prompt has {num_chars} characters, more than this server's limit of {limit}. Shorten it and run again.",
    "err_max_new_tokens_range": "Answer length {value} is out of range: it must be between {low} and {high}.",
    "err_length_range": "“{name}” was {value}, out of range; it has been set to {clamped}.",
    "err_sampling_range": "The sampling setting {name} = {value} is not valid.",
    "err_model_not_found": "The model folder “{path}” cannot be found.",
    "err_not_a_model": "The folder “{path}” is not a Hugging Face model (no config.json or weights). Switched back to a model that works.",
    "err_pickle_weights_only": "The folder “{path}” has only pickle weights; for safety this service loads safetensors only.",
    "err_model_load_failed": "The model “{path}” could not be loaded. Ask the operator to check the server log.",
    "err_device_unavailable": "The device {device} is not available.",
    "err_bad_dtype": "The dtype {dtype} is not supported.",
    "err_unknown_model": "The model “{path}” is not in the list; switched back to the embedded default model.",
    "err_mode_unknown": "There is no engine mode “{value}”; choose one of {choices}.",
    "err_graph_needs_cuda": "Graph mode (CUDA graphs) needs an NVIDIA GPU; this model runs on {device}. Use eager, static or compiled.",
    "err_internal": "Something went wrong ({kind}); this part cannot be shown right now. The rest of the page still works; details are in the server log.",
    "err_diagram": "This diagram cannot be drawn right now ({kind}).",
    # ---- bottleneck lab (pages, the lab page) ---------------------------------------------------
    "nav_lesson": "Lesson",
    "nav_bottleneck_lab": "Bottleneck lab",
    "lab_link": "To the bottleneck lab: roofline, floor vs measured, sweeps, KV cache on and off",
    "lab_back_link": "Back to the lesson",
    "lab_title": "Bottleneck lab",
    "lab_intro": "The lesson says Prefill tends to be compute-bound and Decode memory-bandwidth-bound. This page works it out and measures it on the machine in front of you: the cost model gives each forward pass's floor, the measured time stands beside it.",
    "lab_shared_run": "This is the run the lesson page shows: {summary}",
    "lab_cache_title": "KV cache on and off",
    "preset_choice": "{name} (random weights)",
    "random_weights_note": "This model has random weights: times are real, tokens are meaningless. It has a real model's shape (layers, width, heads), so what each pass computes and moves is real.",
    "err_preset_too_large": "{model} does not fit: this machine does not have enough free memory right now. Switched back to the default model.",
    "lab_prediction_title": "What the cost model predicts for this machine",
    "lab_this_roofs": "This machine, measured (once, when this server process first needed it): copy bandwidth {bandwidth}B/s, fp32 matmul {fp32}FLOP/s, bf16 {bf16}FLOP/s. Measured while the machine was busy, the roofs come out low and the floors high.",
    "lab_measure_again": "Measure again",
    "lab_measure_again_help": "Run the copy and matmul benchmark again (about a second); every visitor of this server gets the new roofs. Most accurate while the machine is idle.",
    "lab_download_roofline": "Download the roofline (SVG)",
    "lab_download_step_floors": "Download the floor chart (SVG)",
    "lab_sweep_download_svg": "Download the sweep figure (SVG)",
    "lab_other_model": "The run the lesson shows is from model {run_model}, but {model} is picked now: run it once on the lesson page and this page puts it against the cost model.",
    "lab_device_spec": "Roofs (device)",
    "lab_this_machine": "This machine (measured once: copy and matmul)",
    "lab_device_spec_help": "“This machine” runs a short copy and matmul benchmark the first time, then every visitor of this process reuses it; the other choices are datasheet numbers.",
    "lab_weight_dtype": "Weight dtype",
    "lab_kv_dtype": "KV cache dtype",
    "lab_dtype_help": "Bytes per element: fp32 4, bf16 2, int8 1, int4 0.5. Changes the bytes moved, not the FLOPs (quantised weights are turned back into bf16 before the multiply).",
    "lab_measuring": "Measuring this machine's bandwidth and compute…",
    "lab_vs_datasheet": "Measured against the {name}: copy bandwidth {copy} of the datasheet, bf16 matmul {matmul}.",
    "lab_this_machine_label": "this machine (measured): {detail}",
    "lab_prediction": "On **{device}** the ridge is at {ridge} FLOP/B (the FLOPs per byte moved at which compute and bandwidth are both used up). Prefill of {n} positions: intensity {prefill_i} FLOP/B, so the cost model predicts it is **{prefill_bound}**-bound.",
    "lab_prediction_decode": "One Decode step (context {c}): intensity only {decode_i} FLOP/B, predicted **{decode_bound}**-bound: every step reads all the weights and the KV cache to compute a single position.",
    "lab_bound_compute": "compute",
    "lab_bound_memory": "memory",
    "lab_col_pass": "Pass",
    "lab_col_positions": "New / cached positions",
    "lab_positions": "{n} / {c}",
    "lab_col_bytes": "Bytes moved",
    "lab_col_floor": "Floor",
    "lab_col_bound": "Bound",
    "lab_col_measured": "Measured",
    "lab_col_efficiency": "Floor ÷ measured",
    "lab_col_weights": "Weights",
    "lab_col_kv": "KV",
    "lab_agrees": "{phase}: measured {measured}, floor {floor}, {eff} of it: the measurement agrees, only {factor}× slower.",
    "lab_overhead": "{phase}: measured {measured}, but the floor is only {floor} ({eff}, {factor}× slower).",
    "lab_overhead_why": "The gap is neither bandwidth nor compute: for a model this small on a CPU each pass mostly pays a fixed cost (Python, launching every layer's operations, fetching the result) that the cost model leaves out. So here the measurement cannot show the memory bound; pick the 0.5B preset or stretch the prompt, and as the work grows the measurement closes in on the floor. The **engine modes** section further down counts those calls for one Decode step and measures what fusing them (compiled) saves.",
    "lab_other_device": "These floors are for {device}, not the machine that ran this: compare the shapes (which phase is bound by what), not the times.",
    "lab_other_dtype": "These floors assume {weights} weights and a {kv} KV cache, not the dtypes this run used: a preview, not compared with the measurement.",
    "lab_dtype_preview": "With other weight dtypes, where would a Decode step's floor go? (next lesson: quantization)",
    "lab_dtype_note": "While Decode is memory-bound, halving the bytes per weight nearly halves its floor; a compute-bound Prefill hardly moves.",
    "lab_roofline_title": "Roofline and every pass's floor",
    "lab_roofline_intro": "Across: FLOPs per byte moved. Prefill computes many positions that share one read of the weights, so it sits to the right; Decode computes one position per pass and lands left of the ridge, under the bandwidth roof.",
    "lab_sweep_title": "Sweeps: vary the lengths and the batch",
    "lab_sweep_intro": "Every point is measured: one warm-up, then the median of 3 passes. Results are kept on the server per model and device, so the next visitor does not measure again.",
    "lab_sweep_kind": "Sweep",
    "lab_sweep_prefill": "Prefill vs prompt length",
    "lab_sweep_decode_context": "Decode step vs context length",
    "lab_sweep_decode_batch": "Batched Decode vs batch size",
    "lab_sweep_up_to": "Up to",
    "lab_sweep_caps": "This server's caps: at most {positions} positions, batch at most {batch} (set by the operator).",
    "lab_sweep_run": "Measure ({n} points)",
    "lab_sweep_running": "Measuring: {done} of {total} points",
    "lab_sweep_queued": "Another visitor's sweep is measuring; this one starts when it is done…",
    "lab_sweep_not_run": "Not measured yet; press the button above.",
    "lab_sweep_none": "No point of this sweep fits this model within this server's caps.",
    "lab_sweep_download": "Download the sweep (JSON)",
    "lab_sweep_caption_prefill": "Prefill grew from {m0} at {x0} positions to {m1} at {x1} (×{ratio}); the floor from {f0} to {f1}.",
    "lab_sweep_caption_decode_context": "A Decode step took {m0} at context {x0} and {m1} at {x1} (×{ratio}): nearly flat as the context grows; the floor went from {f0} to {f1}.",
    "lab_sweep_caption_decode_batch": "Batch {x0} to {x1}: a step went from {m0} to {m1} (×{ratio}), positions per second from {r0} to {r1} (×{gain}). Batching pays until Decode turns compute-bound too.",
    "lab_sweep_skipped": "Left out (past the model's context or this server's cap): {values}.",
    # ---- perfetto / probe (lesson/perfetto.py, engine/probe.py, lesson/vllm_import.py) ------------
    "download_perfetto": "Download a Perfetto trace (Chrome Trace Event JSON)",
    "download_perfetto_help": "Open it in ui.perfetto.dev or chrome://tracing: a track per request and per worker, Prefill / Decode / waiting / KV hand-off as slices, KV bytes and batch size as counters.",
    "probe_observed_note": "Observed from the client: no view inside the server's passes. Before the first token, queueing and Prefill cannot be told apart.",
    "err_probe_endpoint": "The endpoint must be an http:// or https:// URL, got {endpoint}.",
    "err_probe_api_key_env": "The environment variable {name} is not set (it should hold the API key).",
    "err_probe_unreachable": "{request_id}: cannot reach {endpoint} ({reason}).",
    "err_probe_model": "The server does not serve the model {model}; it serves: {served}.",
    "err_probe_http": "{request_id}: the server answered HTTP {status}: {detail}",
    "err_probe_timeout": "{request_id}: no answer within {timeout_s} s (set it with --timeout).",
    "err_probe_cut": "{request_id}: the stream ended before the answer did (after {pieces} pieces).",
    "err_probe_bad_chunk": "{request_id}: a streamed chunk is not JSON: {chunk}",
    "err_probe_stream_error": "{request_id}: the server reported an error in the stream: {detail}",
    "err_vllm_result": "This vLLM result file cannot be read: {reason}",
    "probe_server_title": "The server's /metrics (sampled by the client during the run)",
    "probe_running": "running requests",
    "probe_waiting": "waiting requests",
    "probe_kv_usage": "KV-cache usage",
    "probe_time_axis": "time (ms since the probe started)",
    "probe_requests_axis": "requests",
    "probe_kv_axis": "KV-cache usage (%)",
    "probe_no_server_metrics": "This server's /metrics was not sampled ({reason}): only the client's times are known.",
    # ---- serving lab: real servers (probe panel, vLLM upload, Perfetto downloads; observed runs) ----
    "sv_policy_observed": "observed from the client",
    "sv_gantt_subtitle_probe": "{n} requests · scenario {scenario} · {model} at {device} · observed from the client: no view inside the server's passes",
    "sv_gantt_subtitle_vllm": "{n} requests · {model} ({device}) · from vLLM's result file: the times its client measured",
    "sv_gantt_subtitle_vllm_placed": "{n} requests · {model} ({device}) · from vLLM's result file; arrivals placed from its request rate (the file has no send times)",
    "sl_probe_title": "Measure a real server",
    "sl_probe_intro": "Send the workload above to an OpenAI-compatible streaming server (vLLM, SGLang, `transformers serve`) at its arrival times, and time every streamed chunk here, on the client. The same metrics and Gantt as for the engine above, **observed from the client: no view inside the server's passes** (queueing and Prefill are one wait before the first token).",
    "sl_probe_allowed": "This app may probe only these hosts: {hosts} (the operator sets them with PREFILL_DECODE_PROBE_ALLOW), so a public classroom server cannot be used to send requests to any address.",
    "sl_probe_allowed_any": "This app may probe any host (PREFILL_DECODE_PROBE_ALLOW=*).",
    "sl_probe_endpoint": "Endpoint URL",
    "sl_probe_endpoint_help": "The server's address, e.g. http://127.0.0.1:8000 (/v1 is added). Start one with `transformers serve`, `vllm serve MODEL` or SGLang.",
    "sl_probe_model": "Model name (as the server lists it)",
    "sl_probe_api": "API",
    "sl_probe_api_completions": "completions",
    "sl_probe_api_chat": "chat",
    "sl_probe_concurrency": "Most requests in flight (0 = no limit)",
    "sl_probe_timeout": "Timeout: seconds without a byte from the server",
    "sl_probe_key_env": "API key: the NAME of an environment variable (empty = no key)",
    "sl_probe_key_env_help": "The name of an environment variable of the server running this app that holds the key, never the key itself (a text box for a key would leak it). Names this app may read: {names} (PREFILL_DECODE_PROBE_KEY_VARS).",
    "sl_probe_ignore_eos": "Send ignore_eos (vLLM, SGLang)",
    "sl_probe_ignore_eos_help": "Workload requests that ask for exactly N tokens send vLLM's and SGLang's ignore_eos field; `transformers serve` refuses fields it does not know, so turn this off for it.",
    "sl_probe_run": "Measure this server",
    "sl_probe_running": "{done} of {n} requests answered…",
    "sl_probe_done": "Done: {n} requests measured, {failed} failed.",
    "sl_probe_result_title": "Measured from the client: {endpoint}, model {model}",
    "sl_probe_failed": "{n} of {total} requests failed; the figures and metrics cover the others:",
    "sl_probe_none": "No request finished, so there is nothing to draw.",
    "sl_err_probe_host": "The host {host} is not one this app may probe ({hosts}). The operator sets them with PREFILL_DECODE_PROBE_ALLOW.",
    "sl_err_probe_key_name": "“{name}” is not an environment variable this app may read a key from (allowed: {names}; PREFILL_DECODE_PROBE_KEY_VARS).",
    "sl_err_probe_timeout": "{request_id}: no answer within {timeout_s} s (raise the timeout above).",
    "sl_err_bad_probe_setting": "A probe setting is not valid: {detail}",
    "sl_vllm_title": "Import a vLLM benchmark result",
    "sl_vllm_intro": "Upload the JSON that `vllm bench serve --save-result --save-detailed` writes: its per-request TTFTs and ITLs become the same Gantt and metric table, and every percentile is recomputed from the per-request data and set against the file's own summary.",
    "sl_vllm_file": "vLLM result (JSON, at most {limit} MB)",
    "sl_vllm_too_big": "This file is {mb} MB; this app reads at most {limit} MB (PREFILL_DECODE_VLLM_MAX_MB).",
    "sl_vllm_not_text": "This file is not UTF-8 text, so it is not a vLLM result.",
    "sl_vllm_source": "{model} on {backend} ({date}): {n} requests measured, {failed} failed.",
    "sl_vllm_arrivals_measured": "Arrivals: vLLM's measured send times (start_times in the file).",
    "sl_vllm_arrivals_placed": "Arrivals are not in this file: placed from its request rate ({rate}){slots}. Where a bar starts is an assumption; TTFT, ITL and E2EL are vLLM's measurements.",
    "sl_vllm_slots": ", then through max_concurrency = {slots} slots",
    "sl_vllm_compare_title": "The file's summary against the same numbers recomputed from its per-request data",
    "sl_vllm_compare_same": "All {n} summary numbers match the per-request data (within rounding).",
    "sl_vllm_compare_differ": "{k} of {n} summary numbers differ from the per-request data: {keys}.",
    "sl_vllm_col_key": "Number",
    "sl_vllm_col_file": "In the file",
    "sl_vllm_col_recomputed": "Recomputed",
    "sl_vllm_col_difference": "Difference",
    "sl_vllm_col_note": "Note",
    "sl_vllm_ignored": "Fields not read: {fields}.",
    "sl_requests_table": "Each request: TTFT, TPOT, largest ITL, E2EL",
    "sl_col_request": "Request",
    "sl_col_sent": "Sent (ms)",
    "sl_col_lengths": "Prompt → answer tokens",
    "sl_col_max_itl": "Largest ITL (ms)",
    "sl_perfetto_run": "Perfetto trace: {run}",
    # ---- figures: classroom and the near-duplicate numbers (issue 8, part A) ----
    "gap_note_prefill": "Prefill's pass took {prefill}, TTFT is {ttft}: TTFT counts from the request, so it also holds the {wait} before the pass (tokenizing {tokenize}, waiting for the model, preparing the input).",
    "gap_note_decode": "A Decode pass took {decode} on average, the mean ITL is {itl}: each gap between tokens also holds {gap} outside the pass (the page drawing the token, waiting for the model, the loop's bookkeeping). Choosing the token (sampling) and copying it to the host are inside the pass.",
    # ---- the lab's engine modes (issue 10): lesson/diagrams/modes.py, app_support/modes.py ----
    "modes_title": "Engine modes: where a Decode step's time goes",
    "modes_intro": "The same Decode step can be issued four ways. **eager** grows the KV cache and sends every small operation to the device one call at a time; **static** preallocates the cache (fixed shapes) but still issues the calls one by one; **graph** records the whole step once as a CUDA graph and replays it with a single launch (CUDA only); **compiled** lets torch.compile fuse the small operations (norms, rotary, activations, residual adds) into a few generated kernels, and on a GPU also replays them as a graph. Look at how far each mode's Decode step sits above the floor: what a mode removes is call overhead, never the bytes a step must read.",
    "modes_ops": "One eager Decode step of **{model}** issues **{calls}** operator calls; **{kernels}** of them run a kernel (about {per_layer} per layer over {layers} layers; the rest are views that only relabel a tensor). Most frequent: {top}.",
    "modes_host_us": "One tiny call (torch.add on a single number, {device}) costs about **{us} µs** of host time, measured on this machine.",
    "modes_estimate": "An estimate from these two measurements: {kernels} calls × {us} µs ≈ **{est}** of every eager Decode step is spent issuing calls. It is a lower bound: a call that does real work costs more than a tiny one.",
    "modes_metric_calls": "Operator calls per Decode step",
    "modes_metric_kernels": "Calls that run a kernel",
    "modes_metric_us": "Host cost of one tiny call",
    "modes_metric_estimate": "Call overhead per step (at least)",
    "modes_pick": "Modes to compare",
    "modes_help_eager": "A growing KV cache; every operation is its own call (the lesson's default).",
    "modes_help_static": "A preallocated KV cache of fixed length; the same calls, one by one.",
    "modes_help_graph": "Static, and the Decode step captured once as a CUDA graph and replayed with one launch.",
    "modes_help_compiled": "Static, and the Decode step compiled by torch.compile: small operations fused into a few kernels.",
    "modes_graph_off": "graph is off: CUDA graphs need an NVIDIA GPU, and this model runs on {device}.",
    "modes_compile_off": "compiled is turned off on this server (PREFILL_DECODE_COMPILE=0).",
    "modes_run": "Run the lesson's prompt in the chosen modes",
    "modes_run_help": "The prompt the lesson shows ({prompt_len} positions), {num_tokens} tokens, greedy, writing past end of sequence so every mode writes the same length. The modes run one after another.",
    "modes_none_picked": "Pick at least one mode.",
    "modes_running": "Running the prompt in {modes} …",
    "modes_running_compile": " The first compiled run for this cache length compiles the Decode step first (about 5–20 s for the default model on a small CPU, longer for a big model); later runs reuse it.",
    "modes_not_run": "Not measured yet for this prompt and these modes: press the button.",
    "modes_same_run": "Prompt {prompt_len} positions · {num_tokens} tokens per mode · greedy · measured {when}.",
    "modes_col_mode": "Mode (→ what ran, if it fell back)",
    "modes_col_note": "Why it fell back",
    "modes_col_prefill": "Prefill",
    "modes_col_decode": "Decode (median)",
    "modes_col_floor": "Decode ÷ floor",
    "modes_col_kernels": "Attention (Prefill / Decode)",
    "modes_col_setup": "Runner built (once)",
    "modes_why_setup": "**{mode} spent {setup} building its runner before the request** (allocating the static cache, compiling, capturing). That happens once per cache length, and the runner is then reused, as a server compiles and captures at start-up: it is in none of the times above, TTFT included. Run again and this column shows —.",
    "modes_col_same": "Same tokens",
    "modes_download": "Download the modes figure (SVG)",
    "modes_floor_source": "Floor: the cost model on this machine's measured roofs ({device}), for the median Decode step.",
    "modes_why_static_slower": "**static was slower than eager here** ({static} vs {eager} a step). Its cache holds {positions} positions from the first pass, and every Decode step attends over all of them (the unwritten ones masked out), not only the {context} written so far. On a CPU that extra work costs more than the fixed shapes save; on a GPU static is the base that graph and compiled build on.",
    "modes_why_compiled_faster": "**compiled removed {saved} of a {eager} eager step.** The fused kernels do the same arithmetic in far fewer calls than the count above, so far less host time goes into issuing them.",
    "modes_why_compiled_not_faster": "**compiled was not faster than eager here** ({compiled} vs {eager} a step). Either the machine was busy while it ran (run it again), or the model is big enough that the work itself, not the calls, fills the step.",
    "modes_why_graph_cpu": "**graph is missing on this {device}.** A CUDA graph records GPU kernel launches and replays them all with one; a CPU has no launches to record. On a GPU, graph and compiled are where the launch overhead disappears: the step falls toward its floor.",
    "modes_why_floor": "Every mode stays above the floor ({best} at best, {factor}× the floor {floor}): the floor counts only the bytes and FLOPs a step needs, and on a CPU every remaining call still runs on the host.",
    "modes_why_tokens_differ": "{modes} chose different tokens from eager. Greedy decoding should give the same answer in every mode; a tiny numerical difference between kernels can flip a near tie.",
    "modes_estimate_vs_saved": "The call estimate above said at least {est} of an eager step is issuing calls; {best} saved {saved}.",
    "modes_engine_caption": "Engine: {mode} · {kernels}",
    # figure labels (plain text: drawn into the SVG)
    "modes_fig_title": "Engine modes: the time of one Decode step",
    "modes_fig_subtitle": "{model} · {device} · prompt {prompt_len} positions · {steps} Decode steps per mode, greedy",
    "modes_axis": "Time of one Decode step",
    "modes_legend_step": "one Decode step",
    "modes_legend_median": "median (line: fastest to slowest)",
    "modes_legend_floor": "cost-model floor",
    "modes_floor_label": "floor {floor}",
    "modes_row_title": "{mode} · Decode median {median} ({low}–{high})",
    "modes_fell_back": "{asked} (asked) → ran {ran}",
    "modes_prefill_ms": "Prefill {ms}",
    "modes_kernels": "attention kernel: Prefill {prefill}, Decode {decode}",
    "modes_kernel_na": "n/a",
    "modes_same_tokens": "same tokens as eager ✓",
    "modes_other_tokens": "different tokens from eager ✗",
    "modes_headline": "{base} → {best} removes {saved} per Decode step ({base_ms} → {best_ms}).",
    "modes_headline_one": "{mode}: a Decode step takes {ms} (median).",
    "modes_floor_is": " The floor is {floor}.",
    "modes_no_decode": "No Decode step ran (a one-token answer): nothing to compare.",
    "modes_note_fallback": "{asked} asked, {ran} ran: {note}",
    "modes_off_scale": "{n} Decode step(s) beyond the axis (the slowest took {slowest}, most likely the machine was busy): drawn as arrowheads at its right edge.",
    "modes_fig_note": "The same prompt and lengths, one mode after another on the same machine. eager grows the KV cache; static preallocates it; graph replays the captured step (CUDA); compiled runs the step torch.compile fused.",
}

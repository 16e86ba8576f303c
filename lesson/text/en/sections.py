"""The lesson's sections 1-11, the notes beside its figures, and each figure's alt text (what a screen reader reads; numbers from the run)."""

TEXT: dict = {
    # ---- section 1: timeline ---------------------------------------------------------
    "sec_timeline": "The timeline of one answer",
    "timeline_caption": "The timeline of one request (measured on the real run).",
    "timeline_1": (
        "The tokenizer splits the prompt into five positions, “The / capital / of / France / is” (the run panel "
        "below shows the split). The model first runs one forward pass over these five positions and, from the "
        "output at the last position, predicts the first answer token “ Paris”. Next, “ Paris” is fed in as the "
        "new input to predict “.”. Only if it is to go on is “.” sent back into the model."
    ),
    "timeline_projector_hint": "Teaching on a projector? Switch on classroom mode at the top: the figures' labels grow to the body text's size (21 px at 1280x720).",
    "timeline_real_split": "The run panel below shows the real tokenizer's split, to compare with this sketch.",
    "timeline_table": [
        ["Moment", "What is fed into the model", "Next token produced this round", "Phase"],
        ["First forward pass", "The five prompt positions", "“ Paris”", "Prefill"],
        ["Next forward pass", "The just-generated “ Paris”", "“.”", "Decode"],
        ["If it goes on", "The just-generated “.”", "The next token", "Decode"],
    ],
    "timeline_2": (
        "The first output token usually comes from the last position of Prefill: the prompt is not prefilled "
        "first and then given an extra full Decode step to get it. Implementations may differ slightly in how "
        "they schedule and count, but this dependency in the computation is worth remembering."
    ),
    # ---- section 2: Prefill -----------------------------------------------------------
    "read_on": "Read on: the rest of the lesson",
    "read_on_next": "Below: {sections}. They are drawn when you come to them (scroll down, or press the button).",
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
        "position); a Decode step took {decode_ms} (the median of its steps), for a single position."
    ),
    "bottleneck_live_shown": (
        "This request ran {n} times; quoted here is the median run (run {k}; the fastest and the slowest of the "
        "{n} in brackets): Prefill took {prefill_ms} ({prefill_range}) for {prompt_len} positions (about "
        "{per_position} per position); a Decode step took {decode_ms} ({decode_range}; the median of this run's "
        "steps), for a single position."
    ),
    "bottleneck_ratio_range": "Run by run, Prefill ÷ a Decode step went from {low} to {high} over the {n} runs.",
    "bottleneck_ratio_same": "Run by run, Prefill ÷ a Decode step was {low} in each of the {n} runs.",
    "bottleneck_noise": "Measured on {device} ({dtype}) with model {model} ({params} parameters): here a Decode step took as long as Prefill or longer. That cannot be the lesson: Prefill computes all {prompt_len} positions of the prompt, a Decode step only one. It is this machine's noise: other programs held its cores while these passes ran. Measure again; the medians of several runs settle.",
    "bottleneck_same_work": "Measured on {device} ({dtype}) with model {model} ({params} parameters): the prompt is a single position, so Prefill computes one position, as a Decode step does, and the two take about as long (Prefill {ratio}× a Decode step). Stretch the prompt to see them part.",
    "bottleneck_same_floor": "Measured on {device} ({dtype}) with model {model} ({params} parameters): here a Decode step took as long as Prefill or longer (Prefill {ratio}× a Decode step). On a {prompt_len}-position prompt that is no contradiction: both passes read the same weights once, the same floor ({floor} on this machine's measured roofs), so each mostly pays the same fixed cost per pass, and which comes out faster is that cost's variation. Stretch the prompt to see Prefill grow.",
    "bottleneck_measure_again": "Measure again",
    "bottleneck_measure_again_help": "Runs the shown request again, {n} times, and quotes the medians.",
    "bottleneck_alike": "Measured on {device} ({dtype}) with model {model} ({params} parameters): here Prefill is only {ratio}× a Decode step. On a model this small each forward pass mostly pays a fixed cost (Python, launching the layers), so a short prompt makes the two phases look alike; the difference is in how the time grows: Prefill with the prompt, a Decode step hardly at all. Press the button below to see it.",
    "bottleneck_apart": "Measured on {device} ({dtype}) with model {model} ({params} parameters): here Prefill took {ratio}× a Decode step. Prefill grows with the prompt; a Decode step, one position, hardly grows with the context.",
    "show_difference": "Show the difference: stretch your prompt to {num_tokens} tokens and run it",
    "show_difference_help": "Puts the lesson's own sentences before your prompt up to that length, then runs it; your prompt, the answer length and “keep writing past the end of sequence” stay as you set them. The page then goes up to the timeline: compare the Prefill bar with a Decode bar.",
    "difference_note": "“Show the difference” stretched your prompt to {num_tokens} tokens (the lesson's sentences before it) and ran it once; the prompt itself, the answer length and “{ignore_eos}” are as you left them. The timeline below and the figures after it now show this run: compare the Prefill bar with a Decode bar. [Back to the bottleneck section](#bottleneck)",
    "cache_compare": "Compare: the same answer with the KV cache off and on",
    "cache_compare_running": "Running the answer twice, cache off then on…",
    "cache_compare_help": "Runs the shown run's prompt again, greedy, for {num_tokens} tokens: once with the cache off (every step recomputes all positions), once with it on (Prefill, then one new position per step). Takes a few seconds on a long prompt.",
    "cache_compare_caption": "Measured here, the same {num_tokens} tokens after a {prompt_len}-token prompt: cache off {off_ms} and {off_flops} FLOPs in total, cache on {on_ms} and {on_flops} FLOPs (with the cache off: {time_ratio}× the time, {flops_ratio}× the FLOPs). The FLOPs come from the cost model.",
    "cache_compare_no_saving": "Here the cache saved no time: for so few positions each pass mostly pays its fixed cost, and this machine's noise can tip so small a difference either way; the FLOPs still show what the cache saves, and a longer prompt shows it in the times too.",
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
    "ttft_parts_caption": "TTFT as the lesson defines it, taken apart: from sending the request to seeing the first output token, with the queue, tokenizing, Prefill, choosing the first token and the trip. The upper bracket is TTFT as the engine measured it (the timeline's and the cards' number); the lower one, what you felt on this page.",
    "ttft_parts_caption_engine": "TTFT as the lesson defines it, taken apart: tokenizing, Prefill and choosing the first token. The bracket is TTFT as the engine measured it (the timeline's and the cards' number); this run has no queue or trip timed by the page, so only the engine's parts are drawn.",
    "ttft_parts_run1_note": "Run 1 of {n} (the one you watched arrive): the queue, the trip, the page and the engine's parts are all this run's; the other figures draw the run nearest the medians.",
    "tl_lesson": (
        "What this figure measured{which}: Prefill read {n} positions in one pass in {x} ({per} per position); "
        "each Decode step read one position in {y} (the median step)."
    ),
    "tl_lesson_which": " (the median run, {k} of {n})",
    "tl_lesson_cheaper": "So per position, Prefill was {r}× cheaper: one pass computed every prompt position at once.",
    "tl_lesson_same": (
        "So per position the two cost about the same: this time Prefill showed no gain from computing many "
        "positions in one pass."
    ),
    "tl_lesson_dearer": (
        "So per position, Prefill was {r}× dearer this time: that is not the lesson, it is a disturbed measurement."
    ),
    "tl_lesson_one_position": "The prompt is a single position, so Prefill did the same work as a Decode step.",
    "tl_lesson_noise": (
        "But this time a Decode step ({y}) was no faster than the whole Prefill ({x}): Prefill computes every "
        "prompt position, a Decode step one, so this is not the lesson but the machine's noise (other programs "
        "held its cores while it measured). Measure again."
    ),
    "tl_lesson_noise_range": "Over the {n} runs Prefill took {prefill}, a Decode step {decode}.",
    "tl_measure_again": "Measure again",
    "tl_measure_again_help": "Runs this request {n} more times; the figure and numbers then show the new median run.",
    "metric_spread_shown": "median run {k} of {n} ({n} runs: {low}–{high})",
    "metric_shown_run": "median run {k} of {n}",
    "shown_run_label": "median run: run {k} of {n} (over the {n} runs {ranges})",
    "shown_run_prefill": "Prefill {low}–{high}",
    "shown_run_decode": "a Decode step {low}–{high}",
    "shown_run_both": "{prefill}, {decode}",
    "run_streaming": "run 1 of {n}, measuring…",
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
    "alt_blocks_reused": " (positions 0 to {last} were read from an earlier run's KV cache: the prefix cache)",
    "alt_blocks": "Blocks, one column per forward pass: column 1 is Prefill, computing {prefill_positions} new positions{reused}; then "
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
    "sketch_positions": "positions ↓",
    "sketch_live_alt": "Sketch (while dragging): Prefill computes the prompt's {p} positions in one pass; then each Decode pass of the {o}-token answer computes one new position and reads the older ones from the KV cache.",
    # ---- the gap between a pass's time and TTFT / ITL (the notes under section 6's metric cards) ----
    "gap_note_prefill": "Prefill's pass took {prefill}, TTFT is {ttft}: TTFT counts from the request, so it also holds the {wait} before the pass (tokenizing {tokenize}, waiting for the model, preparing the input).",
    "gap_note_decode": "A Decode pass took {decode} on average, the mean ITL is {itl}: each gap between tokens also holds {gap} outside the pass (the page drawing the token, waiting for the model, the loop's bookkeeping). Choosing the token (sampling) and copying it to the host are inside the pass.",
}

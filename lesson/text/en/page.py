"""The page frame: title, sidebar, introduction, the run panel, classroom stepping, downloads and navigation."""

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
    "repeats_progress": "Measuring again for the medians: run {done} of {total} done",
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
    "figure_scroll_hint": "← Swipe sideways to see the whole figure →",
    "download_svg": "Download SVG",
    "raw_svg": "View the raw SVG",
    "reset_defaults": "Reset to the lesson's defaults",
    "reset_defaults_help": "Puts every setting (prompt, lengths, sampling, model, classroom mode) back to the lesson's default; the language and the run shown stay as they are.",
    "no_trace": "No run yet. Press “Run”.",
    "nav_lesson": "Lesson",
}

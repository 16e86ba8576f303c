"""The lesson's last section, the next lesson previewed: weight formats measured side by side (lesson/quantization.py)."""

TEXT: dict = {
    "q_title": "Next lesson, previewed: quantization",
    "q_intro": "Weight-only quantization stores every weight of a matrix in fewer bits and unpacks it inside the "
               "matrix multiply: **INT8** keeps one signed byte per weight and one scale per output row; **INT4** "
               "keeps half a byte per weight and a scale and a zero per group of {group} weights. Activations, the "
               "embedding lookup and the KV cache stay as they were. Measured with torch's own packed kernels on "
               "{cpu} (torch {torch}, {threads} thread(s), load average {load} at the end, {recorded_at}), every "
               "format interleaved, {steps} Decode steps × {rounds} rounds each:",
    "q_recording": "These numbers are a recording: measured on {cpu} at {recorded_at} by `python -m bench.quantization --record`. "
                   "Press the button to measure the embedded model on the engine this page runs on, now.",
    "q_live": "Measured live on this page's engine ({cpu}) at {recorded_at}, shared with every visitor who asks for "
              "the same run. The real-size table stays the recording ({recorded_cpu}, {recorded_on}).",
    "q_live_only": "Measured live on this page's engine ({cpu}) at {recorded_at}, shared with every visitor who asks "
                   "for the same run.",
    "q_live_run": "Measure the formats on this machine now",
    "q_live_again": "Measure again",
    "q_live_help": "Loads the embedded model in fp32, bf16, INT8 and INT4, times {steps} Decode steps × {rounds} rounds "
                   "of each in turn, then compares each with fp32 on the held-out text and the capitals. It takes a few seconds.",
    "q_live_running": "{phase} ({done} of {total} done, {seconds} s so far)",
    "q_phase_wait": "Waiting for the engine",
    "q_phase_load": "Loading each format: packing the weights",
    "q_phase_round": "Timing Decode steps, every format in turn",
    "q_phase_quality": "Comparing each format with fp32 on the held-out text and the capitals",
    "q_kit_notes": "Fewer bits per weight: fewer bytes for each Decode step to read, and a distribution that moves away from fp32's. What is lost, and what is gained, measured.",
    "q_col_format": "weights",
    "q_col_read": "read per Decode step",
    "q_col_step": "Decode step (median)",
    "q_col_speedup": "× fp32 (time)",
    "q_col_bytes_ratio": "× fp32 (bytes)",
    "q_col_kl": "mean KL vs fp32",
    "q_col_top1": "same top-1 as fp32",
    "q_col_capitals": "capitals right",
    "q_col_answer": "The capital of France is →",
    "q_table_preset": "{model} (random weights: times are real, tokens meaningless)",
    "q_table_embedded": "the embedded model (its quality against its fp32 run, on a text it never saw)",
    "q_preset_story": "On {model} a Decode step reads {fp32_read} of weights in fp32 and {int4_read} in INT4, "
                      "{bytes_ratio}× fewer bytes, yet it ran {speedup}× faster ({fp32_ms} → {int4_ms}): on this "
                      "CPU the kernel's unpacking, not the memory, bounds the step. On a GPU, published INT4 "
                      "kernels come much closer to what the bytes promise.",
    "q_preset_story_bytes": "On {model} a Decode step reads {fp32_read} of weights in fp32 and {int4_read} in INT4, "
                            "{bytes_ratio}× fewer bytes, and it ran {speedup}× faster ({fp32_ms} → {int4_ms}): close "
                            "to what the bytes promise, so here the memory bounds the step.",
    "q_answer_kept": "The embedded model with INT4 weights (groups of {group}) still answers “The capital of France is” with "
                     "“{answer}”: along a text it never saw, its next-token distributions moved {kl} nats from fp32's "
                     "on average, and {top1} of its top choices are fp32's.",
    "q_answer_changed": "With INT4 weights (groups of {group}) the embedded model no longer answers Paris: it says "
                        "“{answer}”. That is what “what exactly is lost” looks like here.",
    "q_ex_speedup": "Predict, then compare: INT4 holds a quarter of the bytes of bf16, an eighth of fp32's. How many "
                    "times faster than fp32 was a Decode step of {model} with INT4 weights on this machine?",
    "q_ex_speedup_right": "Right: measured {measured}× (anything from {low}× to {high}× counts).",
    "q_ex_speedup_wrong": "Measured {measured}×, not {answer}× (anything from {low}× to {high}× counts). The bytes "
                          "alone promise {bytes_ratio}×; the rest of each step (unpacking the weights, the Python "
                          "and the attention around the matrices) does not shrink with them.",
    "q_ex_paris": "Predict, then compare: with INT4 weights, does the embedded model still answer “The capital of France "
                  "is” with Paris?",
    "q_ex_check": "Compare with what was measured",
    "q_ex_yes": "yes",
    "q_ex_no": "no",
    "q_ex_paris_right": "Right: with INT4 weights it answered “{answer}”.",
    "q_ex_paris_wrong": "Not this time: with INT4 weights it answered “{answer}”.",
}

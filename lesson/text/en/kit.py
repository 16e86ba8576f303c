"""The slide kit: every figure of a run in one download (SVG, PNG, and slides.html to present them)."""

TEXT: dict = {
    "kit_download": "All figures for slides (.zip)",
    "kit_download_help": "Every figure of this run, in this page's language and style (classroom or normal): each as an SVG and as a PNG {width} px wide, and slides.html, which shows them one per slide with a caption and speaker notes. It works offline: ← → to step, N for the notes.",
    "kit_download_serving_help": "Every figure of these serving runs (the metrics, and each policy's Gantt, passes and KV blocks), each as an SVG and as a PNG {width} px wide, and slides.html to present them offline (← →, N for the notes).",
    "kit_building": "Drawing every figure as SVG and PNG …",
    "kit_no_png": "The PNGs could not be drawn on this server ({why}); the figures are still on the page with their SVG downloads. An operator installs the system's cairo library (Debian: libcairo2).",
    "kit_deck_title": "Lesson 19: Prefill and Decode",
    "kit_format_kl_caption": "Each weight format's KL divergence from fp32 at every held-out position, measured on this machine.",
    "kit_format_time_caption": "Where a Decode step's time goes per weight format: the memory floor, the matmul kernels beyond it, the rest of the pass.",
    "kit_deck_formats_title": "Next lesson: quantization, measured",
    "kit_deck_formats_subtitle": "{model} on {cpu}, {when}",
    "kit_download_formats_help": "This run's weight-format figures, each as an SVG and as a PNG {width} px wide, and slides.html to present them offline (← →, N for the notes).",
    "kit_deck_serving_title": "Lesson 19: many requests at once",
    "kit_deck_subtitle": "Prompt “{prompt}” → answer “{answer}” · {model} · {when}",
    "kit_deck_serving_subtitle": "{scenario} · {policies} · {model}",
    "kit_keys_hint": "→ or Page Down: next · ←: back · N: speaker notes · Home / End: first / last",
    "kit_notes": "Notes:",
    "kit_schematic_caption": "A sketch, no model run: a {p}-token prompt and a {o}-token answer, one column per forward pass.",
    "kit_animation_caption": "The real run replayed: one Prefill, then Decode after Decode (the PNG shows the whole run).",
}

"""One module per figure; each `render_<name>(...) -> str` (a standalone SVG document).

`DIAGRAMS` maps a name to a renderer of a trace: `DIAGRAMS[name](trace, lang=..., style=..., full=None)`;
`full` is the whole run when `trace` is a prefix of it (classroom stepping): scales and slots
come from it, so stepping never rescales a figure.
`SCHEMATIC_DIAGRAMS` maps a name to a renderer of (prompt_len, output_len): no model needed.
The export CLI and the app both iterate over these, so a new figure registers once here.
`ttft_parts` draws from a trace alone the parts of TTFT the engine measured (queue wait, where the page
measured it, and the trip to the page and the page itself are the page's: the app passes them as `felt=`);
drawn from a trace alone (an export, the slide kit, a recorded run) it says it has only the engine's parts.
`render_cache_compare` and `render_attention` draw `engine.runtime.compare` results, not a trace:
exported here, registered in neither table; so are `render_roofline` and `render_step_floors`
(an `engine.contract.cost.TraceFloors`), `render_sweep` (an `engine.contract.sweep.Sweep`),
`render_format_kl` and `render_format_time` (an `engine.contract.format_runs.FormatRuns`), and
`render_acceptance` (a speculative run's verify passes: exported when the run has some, and drawn by the
lesson's section after Decode, app_support/speculative.py).
"""

from .acceptance import render_acceptance
from .animation import render_animation
from .attention import render_attention
from .blocks import render_blocks, render_blocks_schematic
from .cache_compare import render_cache_compare
from .format_kl import render_format_kl
from .format_time import render_format_time
from .kv_growth import render_kv_growth
from .latency import render_latency
from .review_map import render_review_map
from .roofline import render_roofline, render_step_floors
from .sweep import render_sweep
from .timeline import render_timeline
from .ttft_parts import render_ttft_parts

DIAGRAMS = {
    "timeline": render_timeline,
    "ttft_parts": render_ttft_parts,
    "blocks": render_blocks,
    "kv_growth": render_kv_growth,
    "latency": render_latency,
    "review_map": render_review_map,
    "animation": render_animation,
}

# The figures that draw a run's measurements, and so say which of its repeats they draw: each takes
# `run_note=` ("median run 3 of 5 (...)", lesson.spread.run_label) and draws it as a note; the app, the
# presenter and the slide kit pass it to these and add it to their alt text.
RUN_NOTED = ("timeline", "ttft_parts", "blocks", "kv_growth", "latency", "animation", "review_map")


def _review_map_schematic(prompt_len: int, output_len: int, *, lang: str = "zh", style=None) -> str:
    return render_review_map(None, lang=lang, style=style)


SCHEMATIC_DIAGRAMS = {
    "blocks_schematic": render_blocks_schematic,
    "review_map": _review_map_schematic,
}

__all__ = [
    "DIAGRAMS", "RUN_NOTED", "SCHEMATIC_DIAGRAMS", "render_acceptance", "render_animation", "render_attention",
    "render_blocks", "render_blocks_schematic", "render_cache_compare", "render_kv_growth", "render_latency",
    "render_review_map", "render_timeline", "render_ttft_parts", "render_roofline", "render_step_floors",
    "render_sweep", "render_format_kl", "render_format_time",
]

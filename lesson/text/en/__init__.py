"""Lesson 19 in English, with every label of the app and the figures: one file per area.

Each file has the same keys as its namesake in ../zh/, with the same `{name}` fields
(tests/lesson/test_lesson_text.py checks). Values are Markdown strings or (tables) lists of them;
citations [1] [2] [3] link to the references section (anchor #references).
"""

from . import errors, exercises, figures, kit, lab, links, modes, page, probe, recorded, runs, sections, serving, serving_lab
from . import prefix, quantization, speculative

AREAS: dict[str, dict] = {
    "page": page.TEXT, "sections": sections.TEXT, "figures": figures.TEXT, "runs": runs.TEXT, "lab": lab.TEXT,
    "modes": modes.TEXT, "serving": serving.TEXT, "serving_lab": serving_lab.TEXT, "probe": probe.TEXT,
    "errors": errors.TEXT, "recorded": recorded.TEXT, "kit": kit.TEXT, "exercises": exercises.TEXT,
    "links": links.TEXT, "prefix": prefix.TEXT, "quantization": quantization.TEXT,
    "speculative": speculative.TEXT,
}

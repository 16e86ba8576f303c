"""第十九课的文字（中文原文）与应用界面、各图的全部标签，每个领域一个文件。

每个文件的键与 ../en/ 中同名文件一一对应，`{name}` 字段也相同（tests/lesson/test_lesson_text.py 检查）。
值是 Markdown 字符串，或（表格）由字符串组成的列表。引用 [1] [2] [3] 链接到参考文献一节（锚点 #references）。
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

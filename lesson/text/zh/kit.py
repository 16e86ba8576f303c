"""幻灯片素材包：本次运行的每张图一次下载（SVG、PNG，以及用来放映的 slides.html）。"""

TEXT: dict = {
    "kit_download": "全部图（做幻灯片用，.zip）",
    "kit_download_help": "本次运行的每张图，使用本页的语言和样式（课堂模式或普通）：每张都有 SVG 和 {width} 像素宽的 PNG，另附 slides.html，每页一张图，带图注和讲稿。离线可用：← → 翻页，N 显示讲稿。",
    "kit_download_serving_help": "这些服务运行的每张图（指标表，以及每种策略的甘特图、每次前向的内容和 KV 块），每张都有 SVG 和 {width} 像素宽的 PNG，另附离线放映用的 slides.html（← → 翻页，N 显示讲稿）。",
    "kit_building": "正在把每张图画成 SVG 和 PNG……",
    "kit_no_png": "这台服务器画不出 PNG（{why}）；页面上的图和各自的 SVG 下载仍然可用。请运维安装系统的 cairo 库（Debian：libcairo2）。",
    "kit_deck_title": "第十九课：Prefill 与 Decode",
    "kit_format_kl_caption": "各权重格式在每个留出位置上与 fp32 的 KL 散度，在本机实测。",
    "kit_format_time_caption": "各权重格式下一个 Decode 步的时间花在哪里：内存下限、超出下限的矩阵乘内核、前向的其余部分。",
    "kit_deck_formats_title": "下一课：量化，实测",
    "kit_deck_formats_subtitle": "{model}，{cpu}，{when}",
    "kit_download_formats_help": "这次测量的权重格式图，每张都有 SVG 和 {width} px 宽的 PNG，外加可离线放映的 slides.html（← → 翻页，N 看备注）。",
    "kit_deck_serving_title": "第十九课：当很多请求同时来到",
    "kit_deck_subtitle": "提示词“{prompt}”→ 回答“{answer}”· {model} · {when}",
    "kit_deck_serving_subtitle": "{scenario} · {policies} · {model}",
    "kit_keys_hint": "→ 或 Page Down：下一页 · ←：上一页 · N：讲稿 · Home / End：第一页 / 最后一页",
    "kit_notes": "讲稿：",
    "kit_schematic_caption": "示意图，不运行模型：{p} 个 Token 的提示词、{o} 个 Token 的回答，每列一次前向。",
    "kit_animation_caption": "用真实运行逐步回放：先是一次 Prefill，再是一次次 Decode（PNG 显示整个运行）。",
}

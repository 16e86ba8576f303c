"""第十九课的文字（中文原文）与应用界面的全部标签。

键与 en.py 一一对应（tests/test_lesson_text.py 检查）。值是 Markdown 字符串，
或（表格）由字符串组成的列表。`{name}` 是运行时填入的参数；引用 [1] [2] [3]
链接到参考文献一节（锚点 #references）。
"""

TEXT: dict = {
    # ---- 页面与侧边栏 -------------------------------------------------------------
    "page_title": "第十九课 · Prefill 与 Decode",
    "kicker": "第十九课 · LLM 推理的两个阶段",
    "title": "Prefill 与 Decode：先读完，再一个一个地写",
    "sidebar_title": "设置",
    "language": "语言 / Language",
    "classroom": "课堂模式",
    "classroom_help": "更大的字号；贪心解码、固定随机种子，演示每次都一样；可以一次前进一个前向计算。",
    "model": "模型",
    "model_help": "“default” 是应用内置的模型；其他选项是运维人员放在模型目录（环境变量 PREFILL_DECODE_MODELS_DIR）里的本地 Hugging Face 模型文件夹。",
    "model_in_use": "正在使用：**{model_id}** · {architecture} · {num_layers} 层 · {num_params} 参数",
    "device_dtype": "设备 **{device}** · 数据类型 **{dtype}** · 每个 Token 的 KV Cache **{kv_per_token}**",
    "kv_sliding_window": "滑动窗口：{layers} 层中有 {sliding} 层只关注最近 **{window}** 个位置，"
                         "窗口填满后这些层的缓存不再增长（KV 图中是实测字节数）。",
    "limits": "本服务器的上限：提示词最多 {max_prompt_tokens} 个 Token（{max_prompt_chars} 个字符），回答最多 {max_new_tokens} 个 Token。",
    "toc": "目录",
    "sampling": "采样设置",
    "temperature": "温度（0 = 贪心）",
    "top_k": "Top-k（0 = 不限制）",
    "top_p": "Top-p（1 = 不限制）",
    "seed": "随机种子",
    "sampling_locked": "课堂模式：贪心解码，种子固定为 0。",
    # ---- 引言 -------------------------------------------------------------------
    "intro_1": (
        "我们输入“法国的首都是”，模型回答“巴黎。”。这看起来是一件连续的事，计算机却会把它分成两种很不一样的工作："
        "先处理整个提示词，再根据已经生成的内容逐个预测后续 Token。研究 LLM 推理系统时，通常把它们叫作 "
        "Prefill 和 Decode。[[1]](#references)"
    ),
    "intro_2": "Prefill 负责“读”；Decode 负责“接着写”。它们用的是同一模型，但每次送进模型的 Token 数量不同。",
    # ---- 运行面板 -----------------------------------------------------------------
    "run_title": "在真实模型上运行",
    "run_intro": "下面的每一张图都来自这个页面上真正运行的模型：每一次前向计算都被记录下来（时间、处理的位置、KV Cache 大小）。",
    "prompt": "提示词",
    "prompt_placeholder": "输入提示词，例如：法国的首都是",
    "output_len": "回答长度上限（Token）",
    "output_len_help": "最多生成多少个 Token；模型输出结束符时会提前停止。",
    "prompt_len": "把提示词加长到（Token）",
    "prompt_len_help": "在提示词前面补上填充文字，直到它有这么多个 Token。0 = 按原样使用。",
    "prompt_len_note": "提示词本身已有 {natural} 个 Token，比目标长，按原样使用。",
    "prompt_extended": "已在提示词前补充填充文字（本课自己的句子，不提任何国家）：{natural} → {num_tokens} 个 Token。",
    "prompt_beyond_trained": "默认模型只训练到最长 {trained} 个 Token 的提示词；现在是 {num_tokens} 个 Token，回答不保证正确。",
    "token_split": "真实的 Tokenizer 切分（{num_tokens} 个 Token，用 │ 分隔）",
    "run": "运行",
    "queued": "模型正忙：另一位访客的前向计算正在进行。你的请求已排队，轮到时会自动开始……",
    "queued_for": "这次请求排队等模型共 {ms}（另一位访客的前向正在进行），其中 {prefill_ms} 在 Prefill 之前；排队算进 TTFT 和 ITL。",
    "loading_model": "正在加载模型（每个服务器进程只加载一次）……",
    "running_prefill": "Prefill：一次读入 {num_positions} 个提示词位置……",
    "progress": "第 {step} 次前向 · 已生成 {num_tokens} / {max_tokens} 个 Token",
    "log_prefill": "**Prefill**：一次处理 {num_positions} 个位置 → 第一个 Token `{piece}`（{ms}）",
    "log_decode": "**Decode {index}**：输入 1 个新位置 → `{piece}`（{ms}）",
    "answer": "回答",
    "done": "完成：{num_tokens} 个 Token，停止原因：{stop_reason}。",
    "stop_eos": "模型输出了结束符",
    "stop_length": "达到长度上限",
    "ignore_eos": "越过结束符继续写",
    "ignore_eos_help": "模型会在回答后输出结束符（巴黎。然后停止，和本课的表格一样）。勾选后，模型会正好写满你设定的回答长度；结束符之后是一段新的、无关的文字。",
    "eos_hint": "模型在第 {num_tokens} 个 Token 自己结束了回答（最后一个是结束符），没有用满上限 {limit}。想看更多 Decode 步骤，请勾选“{ignore_eos}”。",
    "showing_trace": "下面的图展示的是这次请求：提示词 {prompt_len} 个 Token，回答 {output_len} 个 Token，模型 {model_id}，{sampling}。",
    "greedy": "贪心解码",
    "sampled": "采样（温度 {temperature}，种子 {seed}）",
    "stale_note": "设置已经改变；点击“运行”以更新下面的图。",
    "classroom_step": "下一步（一次前向）",
    "classroom_reset": "从头开始",
    "classroom_all": "显示全部",
    "classroom_prev": "上一步",
    "classroom_keys": "在页面任何地方都可以用键盘：→ / Page Down 下一步，← / Page Up 上一步，Home 从头开始，End 显示全部。",
    "classroom_position": "课堂步进：显示到第 {shown} / {total} 次前向（{phase}）",
    "phase_prefill": "Prefill",
    "phase_decode": "Decode",
    "data_title": "逐步数据（每行一次前向计算）",
    "download_json": "下载 Trace（JSON）",
    "download_csv": "下载逐步表格（CSV）",
    "download_svg": "下载 SVG",
    "raw_svg": "查看原始 SVG",
    "reset_defaults": "恢复本课默认设置",
    "reset_defaults_help": "把每个设置（提示词、长度、采样、模型、课堂模式）恢复为本课的默认值；语言不变，已显示的运行结果也不变。",
    "no_trace": "还没有运行结果。点击“运行”。",
    # ---- 第 1 节：时间线 -------------------------------------------------------------
    "sec_timeline": "一次回答的时间线",
    "timeline_caption": "同一请求的时间线（来自上面的真实运行）。",
    "timeline_1": (
        "为便于画图，我们把提示词示意性地切成“法国 / 的 / 首都 / 是”四个位置；这不代表实际 Tokenizer 一定这样切分。"
        "模型先对这四个位置运行一次前向计算，并从最后一个位置的输出预测第一个回答 Token“巴黎”。"
        "接下来把“巴黎”作为新输入，再预测“。”。如果还要继续，才把“。”送回模型。"
    ),
    "timeline_real_split": "上面的运行面板显示的是真实 Tokenizer 的切分，可以和这里的示意对照。",
    "timeline_table": [
        ["时刻", "本次送入模型的内容", "本轮产生的下一个 Token", "阶段"],
        ["首次前向", "四个提示词位置", "巴黎", "Prefill"],
        ["下一轮前向", "刚生成的“巴黎”", "。", "Decode"],
        ["若继续", "刚生成的“。”", "下一个 Token", "Decode"],
    ],
    "timeline_2": (
        "第一个输出 Token 通常来自 Prefill 的最后位置，不是先把提示词 Prefill 一遍、再额外做一次完整 Decode 才得到它。"
        "不同实现的调度与统计口径可能略有差别，但这条计算依赖关系值得记住。"
    ),
    # ---- 第 2 节：Prefill ----------------------------------------------------------
    "sec_prefill": "Prefill：先把提示词读完",
    "prefill_1": (
        "Prefill 一次处理提示词中的多个位置。因果掩码仍然有效：前面的 Token 看不到后面的 Token；"
        "但各位置的计算可以在一次前向中用较大的矩阵运算组织起来。同时，模型会建立各层的 KV Cache，供后续生成复用。"
    ),
    "prefill_2": (
        "提示词越长，这一步要处理的位置就越多。Prefill 通常有较大的矩阵乘法，GPU 的并行计算能力比较容易发挥出来，"
        "因此在常见配置下往往更偏计算密集。这只是性能倾向，不是对所有长度、模型和硬件的绝对判断。[[1]](#references)"
    ),
    "blocks_caption": "每次前向新处理的位置（真实运行）：第一列是 Prefill，之后每列是一次 Decode。",
    # ---- 第 3 节：Decode -----------------------------------------------------------
    "sec_decode": "Decode：一次走一个新位置",
    "decode_1": (
        "第一个回答 Token 出来后，同一请求还不能并行算出所有未知的未来 Token。下一步的输入要等上一步选出结果。"
        "因此 Decode 是一个接一个的依赖链。"
    ),
    "decode_2": (
        "有 KV Cache 时，每轮只把刚生成的那个 Token 作为新位置送进模型，计算它的 Q、K、V；"
        "新 Query 仍要读取历史 K/V 做 Attention，然后预测再下一个 Token。缓存省去旧位置的重复计算，"
        "不能省去当前 Query 读取历史的工作。"
    ),
    "decode_3": (
        "“一个接一个”说的是同一请求内部。服务器可以把多个用户请求的 Decode 步骤放进一个批次，并行使用 GPU。"
        "不能把这两种并行混为一谈。"
    ),
    "kv_caption": "每次前向之后的 KV Cache（真实运行：柱子和关于本次运行的每个数字都从缓存张量测得，公式用于对照）。",
    # ---- 第 4 节：示意方块 -----------------------------------------------------------
    "sec_blocks": "自己改变提示词和回答长度",
    "blocks_note": (
        "教学示意：方块表示每次前向中新处理的位置数，不表示耗时或 FLOPs。"
        "假设首个输出 Token 由 Prefill 产生，后续每轮 Decode 产生一个。"
    ),
    "demo_prompt_len": "提示词长度（Token）",
    "demo_output_len": "回答长度（Token）",
    "demo_live_hint": "这个示意图不运行模型，拖动滑块立即更新。想看真实的数字，用页面上方的“运行”。",
    # ---- 第 5 节：瓶颈 -------------------------------------------------------------
    "sec_bottleneck": "为什么两个阶段的瓶颈不同",
    "bottleneck_1": (
        "Prefill 同时处理多个位置，矩阵乘法通常较大；Decode 单个请求每轮只处理一个新位置，"
        "却要读模型权重和不断增长的 KV Cache。常见 GPU 部署中，前者更容易受计算吞吐限制，"
        "后者往往更受显存带宽、缓存读取和小批次效率影响。多个请求一起 Decode 会改变批大小和瓶颈，"
        "因此不能把这句话当作固定定律。[[2]](#references)"
    ),
    "bottleneck_table": [
        ["观察角度", "Prefill", "Decode"],
        ["同一请求每轮新处理的位置", "多个提示词位置", "通常 1 个新位置"],
        ["主要产物", "首个输出 Token、提示词 KV Cache", "下一 Token、新增 KV Cache"],
        ["常见性能倾向", "较大的矩阵计算", "权重与 KV 读取、逐步延迟"],
        ["是否依赖未知的上一步输出", "不依赖", "依赖"],
    ],
    "bottleneck_2": (
        "两个阶段的资源需求不同，还会互相干扰。比如一个很长的 Prefill 插入正在运行的 Decode 批次，可能让其他用户等更久。"
        "相关研究会采用分块 Prefill，或将 Prefill 与 Decode 放到不同资源上运行；这些是服务系统的调度选择，"
        "不是模型结构突然变成了两个模型。[[1]](#references) [[2]](#references)"
    ),
    "bottleneck_live": (
        "这次真实运行：Prefill 用 {prefill_ms} 处理了 {prompt_len} 个位置（每个位置约 {per_position}）；"
        "一次 Decode 平均 {decode_ms}，只处理 1 个位置。"
    ),
    "bottleneck_alike": "测量环境：{device}（{dtype}），模型 {model}（{params} 参数）。这里 Prefill 只是一次 Decode 的 {ratio} 倍。模型这么小时，每次前向主要花在固定开销上（Python、逐层启动计算），所以提示词很短时两个阶段看起来差不多；真正的区别在于时间怎样增长：Prefill 随提示词变长，一次 Decode 几乎不变。点下面的按钮看看。",
    "bottleneck_apart": "测量环境：{device}（{dtype}），模型 {model}（{params} 参数）。这里 Prefill 用时是一次 Decode 的 {ratio} 倍。Prefill 随提示词变长；一次 Decode 只算 1 个位置，几乎不随上下文增长。",
    "show_difference": "看看差别：用 {num_tokens} 个 Token 的提示词运行本课的例子",
    "show_difference_help": "在提示词前补上本课自己的句子，直到这个长度（模型仍会回答并停止），然后运行。比较 Prefill 的柱子和 Decode 的柱子。",
    "cache_compare": "比较：同一个回答，KV Cache 关闭与开启",
    "cache_compare_running": "正在把同一个回答跑两遍：先关闭缓存，再开启缓存……",
    "cache_compare_help": "用当前这次运行的提示词再跑两遍（贪心），各生成 {num_tokens} 个 Token：一遍关闭缓存（每一步都把所有位置重算一遍），一遍开启缓存（先 Prefill，之后每一步只算一个新位置）。提示词很长时需要几秒钟。",
    "cache_compare_caption": "本机实测，{prompt_len} 个 Token 的提示词之后同样的 {num_tokens} 个 Token：关闭缓存合计 {off_ms}、{off_flops} FLOPs；开启缓存合计 {on_ms}、{on_flops} FLOPs（关闭缓存的用时是开启的 {time_ratio} 倍，FLOPs 是 {flops_ratio} 倍）。FLOPs 来自成本模型。",
    "alt_cache_compare": "柱状图，KV Cache 关闭与开启，{prompt_len} 个 Token 的提示词之后同样的 {num_tokens} 个 Token：每一次前向的实测时间（上）和 FLOPs（下）。合计：关闭 {off_ms}、{off_flops} FLOPs；开启 {on_ms}、{on_flops} FLOPs。",
    "attention_step": "显示哪一个 Decode 步骤的注意力",
    "attention_step_help": "开启缓存时，这一步只计算一个新位置，但它的查询仍然要读取所有缓存的位置。",
    "attention_caption": "每一行是一层，每一列是新查询读取的一个位置：前 {context} 个是缓存的位置，最后一个是它自己（颜色越深权重越大，各头取平均）。数据来自真实模型在这一步的计算。",
    "alt_attention": "热力图，Decode 步骤 D{step}：在 {num_layers} 层的每一层里，新位置对 {context} 个缓存位置加上它自己的注意力权重（各头取平均）。",
    # ---- 第 6 节：两种等待 -----------------------------------------------------------
    "sec_waits": "用户实际感受到的两个等待",
    "waits_1": (
        "**TTFT（Time to First Token）** 是从请求发出到看到第一个输出 Token 的时间，包含排队、Prefill、首次选词和传输等环节。"
        "**TPOT（Time per Output Token）** 描述首 Token 之后，输出 Token 之间的平均间隔；"
        "有的系统也用相邻 Token 的 **ITL（inter-token latency）** 来看抖动。"
        "TTFT 主要受首次处理影响，TPOT/ITL 更能反映持续 Decode 的体验。[[2]](#references)"
    ),
    "waits_2": (
        "一个长提示词可能让首字迟迟不出现；首字很快出现，也不保证后面写得流畅。"
        "所以评价服务速度时，不能只看“每秒多少 Token”，还要看这两类等待。"
    ),
    "metric_ttft": "TTFT",
    "metric_ttft_def": "从请求开始到第一个 Token（含分词与 Prefill）。",
    "metric_tpot": "TPOT",
    "metric_tpot_def": "(E2EL − TTFT) ÷ (输出 Token 数 − 1)：首 Token 之后的平均间隔。",
    "metric_itl": "ITL p99",
    "metric_itl_def": "相邻两个输出 Token 间隔的 p99：99% 的间隔不超过它。平均 ITL 恒等于 TPOT，所以这里看分布。",
    "metric_itl_spread": "p99：99% 的间隔不超过它。{n} 个间隔里 p50 {p50} · p90 {p90} · 最大 {max}。平均 ITL 恒等于 TPOT，分布才是 ITL 多告诉你的。",
    "page_drawing_note": (
        "这些等待里有 {ms} 是本页面自己的绘制（主要在 {n} 个间隔里，图中青色）：页面绘制时模型在等，"
        "所以它算进 ITL、TPOT 和 E2EL（你在页面上感受到的），但不算进每次前向的耗时。"
    ),
    "metric_e2el": "E2EL",
    "metric_e2el_def": "端到端延迟：从请求开始到最后一个 Token。",
    "metric_na": "—",
    "metric_tpot_one_token": "目前只有 1 个输出 Token：TPOT 要等首 Token 之后出现间隔才能算。",
    "metric_itl_one_token": "目前只有 1 个输出 Token：还没有相邻两个 Token 的间隔，所以没有 ITL。",
    "latency_caption": (
        "每根柱是一个输出 Token 等了多久：从上一个 Token（第一根从请求开始）到它出现，所以柱高就是它的 ITL（第一根是 TTFT）。"
        "下段是产生它的那次前向，上段是其余时间：青色是页面绘制（模型在等），紫色是分词、排队与记账。"
        "虚线是 TPOT，点线是 ITL 的 p50 与 p99（鼠标悬停查看每一步）。"
    ),
    "latency_svg_caption": "同一张延迟图的 SVG 版本（可下载）。",
    # ---- 第 7 节：很多请求 -----------------------------------------------------------
    "sec_many": "当很多请求同时来到",
    "many_1": (
        "用户请求的提示词长度、到达时间和输出长度都不同。在线服务会动态调整批次：新请求可以进入，已结束的请求可以退出，"
        "正在生成的请求继续运行。这类连续批处理提高资源利用率；同时需要在吞吐、首 Token 延迟和后续输出间隔之间做取舍。"
        "KV Cache 还会随各请求动态增长，PagedAttention 等方法则重点改善它的内存管理。[[3]](#references)"
    ),
    "many_server_note": (
        "这个页面本身就是一个小小的共享服务：同一模型一次只做一个前向计算，多位访客同时运行时会排队。"
    ),
    # ---- 第 8 节：一句话 -------------------------------------------------------------
    "sec_summary": "一句话总结",
    "summary": (
        "把本课收束成一句话：Prefill 一次读入已知提示词并给出首 Token；Decode 依赖已生成的 Token，逐步续写。"
        "它们要优化的等待，不是同一种等待。"
    ),
    # ---- 第 9 节：动画 ---------------------------------------------------------------
    "sec_animation": "逐步动画（代替讲解视频）",
    "animation_caption": "用真实运行逐步回放：先是一次 Prefill，再是一次次 Decode。课堂模式下可以用“下一步”手动推进。",
    # ---- 第 10 节：参考文献 ----------------------------------------------------------
    "sec_references": "参考文献（References）",
    "references": [
        "Agrawal, A., Panwar, A., Mohan, J., et al. “SARATHI: Efficient LLM Inference by Piggybacking Decodes "
        "with Chunked Prefills.” arXiv preprint [arXiv:2308.16369](https://arxiv.org/abs/2308.16369), 2023.",
        "Zhong, Y., Liu, S., Chen, J., et al. “DistServe: Disaggregating Prefill and Decoding for Goodput-optimized "
        "Large Language Model Serving.” OSDI, 2024. [arXiv:2401.09670](https://arxiv.org/abs/2401.09670).",
        "Kwon, W., Li, Z., Zhuang, S., et al. “Efficient Memory Management for Large Language Model Serving with "
        "PagedAttention.” SOSP, 2023. [arXiv:2309.06180](https://arxiv.org/abs/2309.06180).",
    ],
    # ---- 第 11 节：复习总图 -----------------------------------------------------------
    "sec_review": "第十九课复习总图",
    "review_caption": "计算形态、性能瓶颈、体验指标和服务调度，一页回顾。",
    "next_lesson": "下一课看量化：把权重从 16 位压到 INT8、INT4 时，究竟损失了什么？",
    # ---- 图的文字说明（<img> 的 alt：读屏软件读它；数字来自本次运行）-----------------------
    "alt_timeline": "时间线图，每次前向一行：提示词“{prompt}”（{prompt_len} 个 Token）→ 回答“{answer}”（{output_len} 个 Token）。"
                    "Prefill 一次前向读入 {prompt_len} 个位置（{prefill_ms}），之后 {num_decode} 次 Decode 各处理 1 个新位置。"
                    "TTFT {ttft}，E2EL {e2el}。",
    "alt_blocks": "方块图，每列一次前向：第 1 列是 Prefill，新计算 {prompt_len} 个位置；之后 {num_decode} 次 Decode "
                  "各新计算 1 个位置，并读取已缓存的位置。共 {num_passes} 次前向，新计算 {num_positions} 个位置。",
    "alt_kv_growth": "柱状图：{num_passes} 次前向之后各自的 KV Cache 大小，每根柱按层堆叠（{num_layers} 层）。"
                     "Prefill 之后 {prefill_bytes}（{prompt_len} 个 Token），最后一次前向之后 {final_bytes}"
                     "（{num_tokens} 个 Token）；按公式每个 Token {per_token}。",
    "alt_latency": "柱状图：{output_len} 个输出 Token 各等了多久，每根柱一个。TTFT {ttft}（其中 Prefill 前向 {prefill_ms}），"
                   "TPOT {tpot}，ITL p50 {p50}、p99 {p99}、最大 {max}。",
    "alt_animation": "逐步播放的动画：Prefill 一次读入 {prompt_len} 个提示词位置，给出“{first}”；之后 {num_decode} 次 "
                     "Decode 每次把上一个 Token 送回模型，只算 1 个新位置；回答是“{answer}”。",
    "alt_review_map": "复习总图：六行对比 Prefill 与 Decode（每轮新处理的位置、计算形态、主要产物、常见瓶颈、是否依赖上一步输出、"
                      "用户感受的等待），四种服务调度方法，以及本次运行：Prefill {prompt_len} 个位置用时 {prefill_ms}，"
                      "TTFT {ttft}；{num_decode} 次 Decode，TPOT {tpot}；KV Cache 最终 {final_bytes}。",
    "alt_blocks_schematic": "示意方块图（不运行模型）：提示词 {prompt_len} 个位置在 1 次 Prefill 中算完，之后 {num_decode} 次 "
                            "Decode 各新算 1 个位置；共 {num_passes} 次前向，新计算 {num_positions} 个位置。",
    # ---- compare runs, replay, animation controls (issue 8, part B) -------------------------------------
    "sec_compare": "比较两次运行",
    "compare_intro": "课文的要点要两次运行并排才看得出来：短提示词和长提示词，TTFT 和 TPOT。这一页会记住本次会话最近的 {limit} 次运行；选两次，它们的时间线、延迟图和 KV Cache 图画在**同一套坐标轴**上。",
    "compare_need_two": "现在只有 {count} 次运行。再运行一次（比如先用默认提示词，再点“看出差别”），就可以比较了。",
    "compare_pick": "选两次运行来比较",
    "compare_pick_help": "最多选两次。最近的运行在最前面；标签是：时间 · 提示词 → 回答的 Token 数 · TTFT · 模型。",
    "compare_pick_two": "再选一次运行（一共两次），图就会画在同一套坐标轴上。",
    "compare_same_axes": "两张图的坐标轴相同（时间轴、延迟的纵轴、KV Cache 的纵轴都覆盖两次运行），所以条的长短可以直接比较。",
    "compare_table_title": "数字对比",
    "compare_fig_timeline": "时间线",
    "compare_fig_latency": "每个 Token 等了多久",
    "compare_fig_kv": "KV Cache 的增长",
    "compare_run_caption": "{run}：{label}",
    "compare_alt": "{run}（与另一次运行共用坐标轴）：{alt}",
    "history_label": "{time} · 提示 {prompt_len} → 回答 {output_len} Token · TTFT {ttft} · {model}",
    "cmp_run_a": "运行 A",
    "cmp_run_b": "运行 B",
    "cmp_measure": "指标",
    "cmp_prompt_tokens": "提示词 Token 数",
    "cmp_answer_tokens": "回答 Token 数",
    "cmp_prefill": "Prefill 一次前向",
    "cmp_ttft": "TTFT",
    "cmp_tpot": "TPOT",
    "cmp_itl_p50": "ITL p50",
    "cmp_itl_p99": "ITL p99",
    "cmp_e2el": "E2EL",
    "cmp_kv_per_token": "每个 Token 的 KV Cache",
    "cmp_kv_final": "最后的 KV Cache",
    "replay_title": "慢动作回放",
    "replay_pace": "回放速度",
    "replay_pace_help": "“× 1/4”等按实测时间放慢；“每次前向 0.5 秒”等让每次前向一样长，再短的一步也看得见。",
    "replay_pace_x1": "实测速度",
    "replay_pace_x0.25": "× 1/4",
    "replay_pace_x0.1": "× 1/10",
    "replay_pace_x0.01": "× 1/100",
    "replay_pace_s0.5": "每次前向 0.5 秒",
    "replay_pace_s1": "每次前向 1 秒",
    "replay_start": "回放上一次运行",
    "replay_stop": "停止回放",
    "replay_label": "**回放**：按上一次运行的实测时间放慢播放，**不是新的测量**。第 {shown} / {total} 次前向（实测 {ms}）。",
    "replay_done": "回放结束：{total} 次前向。下面的图显示整次运行。",
    "anim_controls": "播放 / 暂停，或者拖动滑块一步一步看",
    "anim_play": "播放",
    "anim_pause": "暂停",
    "anim_step": "第几次前向",
    "anim_step_value": "第 {k} / {n} 次前向",
    # ---- serving lab ----
    "sv_policy_one_at_a_time": "逐个处理",
    "sv_policy_prefill_first": "Prefill 优先",
    "sv_policy_chunked": "分块 Prefill",
    "sv_policy_disaggregated": "Prefill / Decode 分离",
    "sv_phase_prefill": "Prefill",
    "sv_phase_prefill_chunk": "Prefill 分块",
    "sv_phase_decode": "Decode",
    "sv_worker_engine": "引擎",
    "sv_worker_prefill": "Prefill 工作进程",
    "sv_worker_decode": "Decode 工作进程",
    "sv_recompute": "被抢占后重新计算",
    "sv_seg_pass": "{rid}：第 {n} 次前向，{phase}，位置 {a}–{b}，{ms}（本次 {batch} 个请求，共 {tokens} 个位置）",
    "sv_seg_stall": "{rid} 在等：第 {n} 次前向没有带上它，{ms}（本次 {batch} 个请求，{tokens} 个位置）",
    "sv_seg_handoff": "{rid}：{tokens} 个位置的 KV（{bytes}）交给 Decode 工作进程，{ms}",
    "sv_seg_queue": "{rid} 在第一次前向之前排队 {ms}",
    "sv_seg_observed_ttft": "{rid}：从发出到第一个 Token {ms}（排队和 Prefill 合在一起，客户端看到的）",
    "sv_row_lengths": "{p}→{o}",
    "sv_row_title": "{rid}：提示词 {p} 个 Token → {o} 个 Token；TTFT {ttft}，E2EL {e2el}",
    "sv_gantt_title": "请求随时间的进展：{policy}",
    "sv_gantt_title_observed": "请求随时间的进展（从客户端观测）",
    "sv_gantt_subtitle": "{n} 个请求 · 场景 {scenario} · {model}，{device} · 所有时间均为实测",
    "sv_time_axis": "从运行开始计的时间（ms）",
    "sv_spike_title": "{rid} 两个 Token 之间等了 {ms}",
    "sv_spike_label": "ITL {ms}",
    "sv_legend_waiting": "等待（排队，或某次前向没带上它）",
    "sv_legend_prefill": "Prefill（分块：白色分隔）",
    "sv_legend_decode": "Decode 前向",
    "sv_legend_observed_ttft": "到第一个 Token（客户端看到的）",
    "sv_legend_handoff": "KV 交接",
    "sv_legend_token": "Token",
    "sv_legend_spike": "ITL 超过中位数 {factor} 倍",
    "sv_note_observed": "从客户端测得：看不到服务器内部的前向计算，所以到第一个 Token 的那一段把排队和 Prefill 合在一起。",
    "sv_note_longest": "含 Prefill 的最长一次前向（第 {n} 次，{ms}）计算了 {positions} 个提示词位置（{rids}）；{waited} 个已经在 Decode 的请求要等它结束才拿到下一个 Token。",
    "sv_note_longest_disagg": "最长的 Prefill 前向（第 {n} 次，{ms}，{rids} 的 {positions} 个位置）在 Prefill 工作进程上运行；Decode 工作进程照常前进。",
    "sv_note_spike": "两个 Token 之间最大的间隔：{ms}（{rid}），ITL 中位数是 {p50}；超过中位数 {factor} 倍的 {n} 个间隔用红色标出。",
    "sv_note_no_spike": "没有哪两个 Token 之间的间隔超过 ITL 中位数（{p50}）的 {factor} 倍。",
    "sv_note_handoff": "共 {n} 次 KV 交接；最大的一次是 {rid}：{tokens} 个位置，{bytes}，实测 {ms}（打包、进程间复制、解包）。同样的字节走假设的链路：{links}。",
    "sv_note_rows": "只画出 {n} 个请求中的前 {shown} 个；指标表统计全部请求。",
    "sv_batch_title": "每次前向带了什么：{policy}",
    "sv_batch_subtitle": "每次前向堆叠：Decode 位置（每个运行中的请求一个）和 Prefill 位置",
    "sv_batch_subtitle_budget": "每次前向堆叠：先放 Decode 位置，再放 Prefill 分块，总数不超过预算 {budget}",
    "sv_legend_decode_tokens": "Decode 位置",
    "sv_legend_prefill_tokens": "完整的 Prefill",
    "sv_legend_chunk_tokens": "Prefill 分块",
    "sv_legend_budget": "Token 预算",
    "sv_batch_panel_tokens": "本次前向计算的位置数",
    "sv_budget_label": "预算 {budget}",
    "sv_batch_bar_title": "第 {n} 次前向：{decode} 个 Decode + {prefill} 个 Prefill 位置，{requests} 个请求（{waiting} 个在等），{ms}",
    "sv_batch_panel_time": "本次前向的实测耗时",
    "sv_batch_x_axis": "按顺序的前向计算（{n} 次）",
    "sv_batch_note": "共 {n} 次前向，其中 {decode_passes} 次只有 Decode，{mixed} 次把 Prefill 和 Decode 混在一起；一次最多 {max_batch} 个请求。最大的是第 {max_n} 次，{max_ms} 计算了 {max_tokens} 个位置。",
    "sv_batch_note_budget": "没有哪次前向超过 {budget} 个位置的预算（超出 {over} 次）。",
    "sv_kv_title": "分页 KV 内存：{policy}",
    "sv_kv_subtitle": "每块 {block_size} 个 Token（每块 {per_block}）· KV 预算 {blocks} 块",
    "sv_kv_panel_time": "每次前向之后占用的块（每个请求一种颜色）",
    "sv_kv_col_title": "第 {n} 次前向后：占用 {used} 块，空闲 {free} 块；{requests} 个请求存了 {tokens} 个 Token；{waste} 个槽位已预留但空着",
    "sv_kv_budget_line": "KV 预算 {blocks} 块",
    "sv_kv_grid_heading": "峰值时（第 {n} 次前向后）的块表：{blocks} 块中用了 {used} 块（填充高度 = 存的 Token 数）",
    "sv_kv_cell_title": "第 {block} 块：{rid}，存了 {tokens}/{size} 个 Token",
    "sv_kv_grid_more": "… 另有 {n} 个空闲块没有画出",
    "sv_kv_mem_heading": "峰值时：预留的 Token 槽位与实际存放的 Token",
    "sv_kv_mem_paged": "分页（整块分配）",
    "sv_kv_mem_contiguous": "连续（预先按最大长度预留）",
    "sv_kv_mem_value": "存了 {used} / 预留 {reserved}（{pct}）",
    "sv_kv_note_peak": "峰值时（第 {n} 次前向后）{blocks} 块中的 {used} 块存了 {tokens} 个 Token；各请求最后一块里有 {waste} 个槽位空着。分页内存预留的空间里有 {paged} 存着 Token；若每个请求预先按最大长度连续预留，只有 {contiguous}。",
    "sv_kv_note_preempted": "发生 {n} 次抢占：为了让别的请求运行，某个请求的块被释放，它的位置之后重新计算。",
    "sv_kv_note_budget": "KV 预算设为 {blocks} 块；块用完时：{mode}（一次前向里最多 {waited} 个请求在等）。",
    "sv_on_kv_full_wait": "不再接纳新请求，直到有块空出来",
    "sv_on_kv_full_preempt": "抢占最新的请求，之后重新计算",
    "sv_kv_note_paper": "PagedAttention 论文（arXiv 2309.06180）报告：更早的系统预留的 KV 内存只有 20–38% 真正存了 Token。",
    "sv_m_metric": "指标",
    "sv_m_completed": "完成数",
    "sv_m_duration": "总时长",
    "sv_m_ttft": "TTFT",
    "sv_m_tpot": "TPOT",
    "sv_m_itl": "ITL",
    "sv_m_e2el": "E2EL",
    "sv_m_request_throughput_per_s": "每秒请求数",
    "sv_m_output_throughput_tok_s": "每秒输出 Token",
    "sv_m_total_token_throughput_tok_s": "每秒总 Token",
    "sv_m_goodput": "Goodput（达标/完成 · 请求/秒）",
    "sv_m_kv_paged": "KV 存放/预留（分页）",
    "sv_m_kv_contiguous": "KV 存放/预留（连续）",
    "sv_slo_none": "未设 SLO（每个完成的请求都算）",
    "sv_table_title": "各调度策略的服务指标",
    "sv_table_subtitle": "场景 {scenario}，{n} 个请求，每种策略跑同一份工作负载（vLLM 的定义）",
    "sv_table_note": "Goodput 只统计满足全部 SLO 的请求：{slo}。绿底粗体：该行最好。{model}，{device}；所有时间均为实测。",
    "sv_table_best": "该行最好",
    "alt_sv_gantt": "{policy} 下 {n} 个请求的甘特图，每行一个请求：等待、Prefill 和每次 Decode 前向画在时间轴上（{passes} 次前向，{handoffs} 次 KV 交接）。TTFT p50 {ttft}，ITL p99 {p99}。最长的 Prefill 前向用了 {longest}，其间 {waited} 个正在 Decode 的请求在等；两个 Token 之间最大的间隔是 {spike}。",
    "alt_sv_batch": "{policy} 下 {n} 次前向的柱状图：每次前向的 Decode 和 Prefill 位置堆叠，其中 {mixed} 次两者混合；最大的一次在 {max_ms} 内计算了 {max_tokens} 个位置。Token 预算：{budget}。",
    "alt_sv_kv": "{policy} 下的分页 KV 内存：{passes} 次前向中每个请求占用的块（每块 {block_size} 个 Token），峰值时的块表（{blocks} 块中用了 {used} 块，{waste} 个空槽位），以及预留与实际存放：分页 {paged}，连续 {contiguous}。",
    "alt_sv_metrics": "{n} 种策略的 {rows} 项服务指标表。TTFT p50：{ttft}。ITL p99：{itl}。每秒输出 Token：{tput}。",
    "sv_find_chunked": "**实测 ITL p99：** Prefill 优先 {first}，分块 Prefill {chunked}（×{ratio}）；最大间隔 {first_max} 对 {chunked_max}。每次前向的预算是 {budget} 个位置，长提示词被切成小块，每次前向仍然带上正在 Decode 的请求。",
    "sv_find_batching": "**实测每秒输出 Token：** {policy} {batched}，逐个处理 {solo}（×{ratio}）。逐个处理时，最后一个请求要等前面所有请求：TTFT p99 {solo_ttft} 对 {batched_ttft}。",
    "sv_find_disagg": "**实测（分离）：** {n} 次 KV 交接，共 {bytes}，复制用了 {copy}；ITL p99 {p99}：Decode 工作进程从不运行 Prefill。最大的一次交接（{rid}，{big}）走假设的链路：{links}。",
    "sv_find_preempted": "**{policy}：** 发生 {n} 次抢占（KV 预算用完；某个请求的块被释放，它的位置重新计算）。",
    "nav_serving_lab": "服务实验室",
    "sl_link": "去服务实验室：很多请求同时在真实引擎上运行，四种调度策略并排比较",
    "sl_title": "服务实验室",
    "sl_intro": "很多请求在不同时间到来，提示词和回答长度各不相同。选一份工作负载，在真实模型上用每种策略各跑一遍：**逐个处理**（不批处理）、**Prefill 优先**（新提示词的整个 Prefill 在一次前向里完成，正在 Decode 的请求要等）、**分块 Prefill**（先放 Decode，再用 Prefill 分块填满 Token 预算；SARATHI）和 **Prefill / Decode 分离**（Prefill 和 Decode 各在一个工作进程上，KV Cache 交接过去；DistServe）。显示的每个时间都是实测。",
    "sl_caps": "本服务器的上限：最多 {requests} 个请求，提示词最长 {prompt} 个 Token，回答最长 {answer} 个 Token；可用策略：{policies}。",
    "sl_workload": "工作负载",
    "sl_source": "请求",
    "sl_source_scenario": "选一个现成场景",
    "sl_source_custom": "自己设定",
    "sl_scenario": "场景",
    "sl_scn_long_prompt_during_chats": "四个对话正在 Decode，第 100 ms 来了一个 1024 个 Token 的提示词。",
    "sl_scn_burst_16": "16 个短对话同时到来（每个 32 个 Token）。",
    "sl_scn_eight_chats": "8 个对话同时到来，每个 64 个 Token（基准测试用的批）。",
    "sl_scn_poisson_16": "16 个对话按泊松过程到来，每秒 20 个（种子见下），每个 8 到 48 个 Token。",
    "sl_scn_mixed_lengths": "8 个请求，每 20 ms 一个，提示词拉长到 0–512 个 Token。",
    "sl_scn_capital_questions": "8 个首都问题同时到来，各自回答到自己的结束符。",
    "sl_seed": "随机种子",
    "sl_num_chats": "对话个数",
    "sl_chat_tokens": "对话提示词长度（Token；0 = 问题原文）",
    "sl_chat_tokens_help": "每个对话是一个首都问题；超过它本身长度时，在前面用课文的填充文字拉长。",
    "sl_answer_tokens": "每个对话的回答长度（Token）",
    "sl_long_tokens": "一个长提示词（Token；0 = 没有）",
    "sl_long_tokens_help": "一个带长提示词的请求（课文填充文字之后接“法国的首都是”），回答 8 个 Token：正是它的 Prefill 让所有正在 Decode 的请求等待。",
    "sl_arrival": "到达方式",
    "sl_arrival_spacing": "均匀间隔",
    "sl_arrival_poisson": "泊松过程",
    "sl_gap_ms": "两个对话之间的间隔（ms）",
    "sl_rate": "到达速率（每秒请求数）",
    "sl_long_at": "长提示词到达时间（ms）",
    "sl_engine": "引擎设置",
    "sl_token_budget": "每次前向的 Token 预算（分块 Prefill）",
    "sl_token_budget_help": "分块 Prefill 下一次前向最多计算多少个位置：先放正在 Decode 的请求，再用 Prefill 分块填满。",
    "sl_block_size": "KV 块大小（Token）",
    "sl_kv_blocks": "KV 块预算（0 = 足够所有请求）",
    "sl_kv_blocks_help": "KV 存储能放多少块。少于工作负载峰值所需时：新请求等待，或抢占最新的请求、之后重新计算。永远放不下的请求会被拒绝。",
    "sl_on_kv_full": "KV 块用完时",
    "sl_slo_ttft": "SLO：TTFT 不超过（ms；0 = 不设）",
    "sl_slo_tpot": "SLO：TPOT 不超过（ms；0 = 不设）",
    "sl_slo_help": "Goodput 统计每秒满足你设定的全部 SLO 的请求数（DistServe）。",
    "sl_run": "用所有策略运行这份工作负载",
    "sl_running": "正在真实模型上运行 {policy}（第 {i} / {n} 种）…",
    "sl_done": "完成：{n} 种策略，同一份工作负载。",
    "sl_results": "各策略对比",
    "sl_what_to_see": "**看什么。** 在 **Prefill 优先** 的甘特图里，长提示词的 Prefill 是一次很长的前向：每个正在 Decode 的对话都要等它结束才拿到下一个 Token（红色括号：一个巨大的 ITL）。**分块 Prefill** 把提示词切成小块，每次前向仍带上 Decode：间隔变短，长提示词自己的 TTFT 变长。**Prefill / Decode 分离** 把 Prefill 放到另一个工作进程：Decode 一直在走；代价是 KV 交接（绿色）和第二份模型。**逐个处理** 没有停顿，但每个请求都要等前面所有请求做完。",
    "sl_table_svg": "表格的 SVG 版本（可下载）",
    "sl_tab_gantt": "请求随时间",
    "sl_tab_batch": "每次前向带了什么",
    "sl_tab_kv": "KV 块",
    "sl_explain_gantt": "每行一个请求：等待（紫）、Prefill（蓝）、每次 Decode 前向（橙），每个 Token 一条竖线；红色括号标出超过 ITL 中位数 3 倍的间隔。",
    "sl_explain_batch": "每根柱是一次前向：下面是 Decode 位置，上面是 Prefill 位置；虚线是分块 Prefill 的 Token 预算。下方是每次前向的实测耗时。",
    "sl_explain_kv": "每次前向后每个请求占用的块、峰值时的块表（最后一块没填满就是内部浪费），以及分页与连续预留的对比。",
    "sl_hover": "可交互的甘特图（悬停看每次前向）",
    "sl_download_runs": "下载这些运行（JSON）",
    "sl_honest": "**诚实的数字。** 这里是在本服务器的 CPU 上运行一个 350 万参数的模型：一次 Decode 只要几毫秒，Python 和调度的开销在每次前向里占了很大比例，绝对时间都很小。在 GPU 上，批处理的 Decode 一步和单个请求的一步花的时间差不多（瓶颈是读权重），直到批很大，所以批处理的收益大得多；长 Prefill 受算力限制，占的时间比例更大：模型越大，停顿越明显，分块省下的也越多。在一台 CPU 上做分离，是把它的核分给两个进程；有两块 GPU 时，每个工作进程有自己的设备，交接走 NVLink 或网络（见上面的估算）。",
    "sl_cap_requests": "这份工作负载有 {n} 个请求；本服务器最多运行 {limit} 个（PREFILL_DECODE_SERVING_MAX_REQUESTS）。",
    "sl_cap_prompt": "有一个提示词长 {n} 个 Token，超过本服务器的上限 {limit}（PREFILL_DECODE_SERVING_MAX_PROMPT_TOKENS）。",
    "sl_cap_answer": "有一个回答长 {n} 个 Token，超过本服务器的上限 {limit}（PREFILL_DECODE_SERVING_MAX_NEW_TOKENS）。",
    "sl_err_never_fits": "请求 {request_id} 永远放不下：它需要 {need} 个 KV 块，而预算只有 {num_blocks} 块。调大 KV 块预算（或设为 0），或用更大的块。",
    "sl_err_prompt_too_long": "请求 {request_id} 超过了模型的上下文长度。请缩短提示词或回答。",
    "sl_err_bad_workload": "这份工作负载无法运行：{detail}",
    "sl_err_bad_workload_line": "这份工作负载无法运行：{detail}",
    "sl_err_serve_timeout": "运行时间太长，已停止。请减少请求个数或长度。",
    "sl_err_bad_serve_setting": "引擎设置超出范围：{detail}",
    "sl_err_empty_prompt": "请求 {request_id} 的提示词是空的。",
    "sl_err_unknown_scenario": "没有名为“{name}”的场景。",
    # ---- 错误信息（引擎错误的 .key → 文案） ------------------------------------------------
    "err_empty_prompt": "提示词是空的。请输入至少一个字，例如“法国的首都是”。",
    "err_prompt_too_long": "提示词有 {num_tokens} 个 Token，超过本服务器的上限 {limit}。请缩短提示词。",
    "err_prompt_too_many_chars": "提示词有 {num_chars} 个字符，超过本服务器的上限 {limit}。请缩短后再运行。",
    "err_max_new_tokens_range": "回答长度 {value} 超出范围：应在 {low} 到 {high} 之间。",
    "err_length_range": "“{name}”的值 {value} 超出范围，已改为 {clamped}。",
    "err_sampling_range": "采样参数 {name} 的值 {value} 不合法。",
    "err_model_not_found": "找不到模型文件夹“{path}”。",
    "err_not_a_model": "文件夹“{path}”不是一个 Hugging Face 模型（缺少 config.json 或权重）。已改回可用的模型。",
    "err_pickle_weights_only": "文件夹“{path}”只有 pickle 格式的权重；为了安全，本服务只加载 safetensors。",
    "err_model_load_failed": "无法加载模型“{path}”。请联系运维人员查看服务器日志。",
    "err_device_unavailable": "设备 {device} 不可用。",
    "err_bad_dtype": "不支持的数据类型 {dtype}。",
    "err_unknown_model": "模型“{path}”不在可选列表里，已改回内置默认模型。",
    "err_mode_unknown": "引擎模式“{value}”不存在；可选：{choices}。",
    "err_graph_needs_cuda": "CUDA Graph 模式需要 NVIDIA GPU；这个模型运行在 {device} 上。请改用 eager 或 static。",
    "err_internal": "出了点问题（{kind}），这一部分暂时无法显示。页面的其他部分仍可使用；详细信息已写入服务器日志。",
    "err_diagram": "这张图暂时无法绘制（{kind}）。",
    # ---- bottleneck lab (pages, the lab page) ---------------------------------------------------
    "nav_lesson": "课文",
    "nav_bottleneck_lab": "瓶颈实验室",
    "lab_link": "到瓶颈实验室：屋顶线、下限与实测、扫描、KV Cache 开与关",
    "lab_back_link": "回到课文",
    "lab_title": "瓶颈实验室",
    "lab_intro": "课文说 Prefill 往往受算力限制、Decode 往往受显存带宽限制。这一页在你面前这台机器上把它算出来、量出来：成本模型给出每次前向的理论下限，实测时间放在它旁边。",
    "lab_shared_run": "用的是课文页正在显示的那次运行：{summary}",
    "lab_cache_title": "KV Cache 开与关",
    "preset_choice": "{name}（随机权重）",
    "random_weights_note": "这个模型是随机权重：时间是真实的，Token 没有意义。它有真实模型的形状（层数、宽度、头数），所以每次前向要算和要搬的量是真的。",
    "err_preset_too_large": "{model} 放不下：这台机器现在空闲的内存不够。已改回默认模型。",
    "lab_prediction_title": "成本模型对这台机器的预测",
    "lab_device_spec": "屋顶（设备）",
    "lab_this_machine": "这台机器（实测一次：拷贝和矩阵乘）",
    "lab_device_spec_help": "“这台机器”在第一次打开时做一个很短的拷贝和矩阵乘测试，之后每个进程复用；其他选项是数据手册上的数字。",
    "lab_weight_dtype": "权重的数据类型",
    "lab_kv_dtype": "KV Cache 的数据类型",
    "lab_dtype_help": "每个元素的字节数：fp32 4，bf16 2，int8 1，int4 0.5。只改变要搬的字节，不改变 FLOPs（量化后的权重在乘法前还原成 bf16）。",
    "lab_measuring": "正在测这台机器的带宽和算力……",
    "lab_vs_datasheet": "实测对比 {name}：拷贝带宽是数据手册的 {copy}，bf16 矩阵乘是 {matmul}。",
    "lab_prediction": "在 **{device}** 上，屋顶的拐点是 {ridge} FLOP/B（每搬一个字节要做这么多次运算，算力和带宽才同时用满）。Prefill {n} 个位置：强度 {prefill_i} FLOP/B，成本模型预测它受**{prefill_bound}**限制。",
    "lab_prediction_decode": "Decode 一步（上下文 {c}）：强度只有 {decode_i} FLOP/B，预测受**{decode_bound}**限制——每一步都要把全部权重和 KV Cache 读一遍，却只算一个位置。",
    "lab_bound_compute": "算力",
    "lab_bound_memory": "带宽",
    "lab_col_pass": "前向",
    "lab_col_positions": "新位置 / 已缓存",
    "lab_positions": "{n} / {c}",
    "lab_col_bytes": "搬运字节",
    "lab_col_floor": "下限",
    "lab_col_bound": "受限于",
    "lab_col_measured": "实测",
    "lab_col_efficiency": "下限 ÷ 实测",
    "lab_col_weights": "权重",
    "lab_col_kv": "KV",
    "lab_agrees": "{phase}：实测 {measured}，下限 {floor}，达到 {eff}——和预测一致，只慢 {factor} 倍。",
    "lab_overhead": "{phase}：实测 {measured}，下限只有 {floor}（{eff}，慢 {factor} 倍）。",
    "lab_overhead_why": "差距不是带宽也不是算力：这么小的模型在 CPU 上，每次前向主要花在固定开销上（Python、逐层启动运算、取回结果），成本模型不计这些。所以这里的实测看不出带宽瓶颈；换成 0.5B 的预设模型或把提示词拉长，算和搬的量变大，实测就会向下限靠拢。",
    "lab_other_device": "这些下限是 {device} 的，不是跑这次运行的机器：比较的是形状（哪一阶段受什么限制），不是时间。",
    "lab_other_dtype": "这些下限是权重 {weights}、KV {kv} 时的预测，而这次运行用的是别的数据类型：这是预览，不和实测比较。",
    "lab_dtype_preview": "换一种权重数据类型，Decode 一步的下限会怎样（下一课：量化）",
    "lab_dtype_note": "Decode 受带宽限制时，权重每少一半字节，下限就接近减半；受算力限制的 Prefill 几乎不变。",
    "lab_roofline_title": "屋顶线和每次前向的下限",
    "lab_roofline_intro": "横轴是每搬一个字节做多少次运算。Prefill 一次算很多位置，共用同一份权重，所以在右边；Decode 每次只算一个位置，落在拐点左边的带宽屋顶下。",
    "lab_sweep_title": "扫描：让长度和批大小变化",
    "lab_sweep_intro": "每个点都是真实测量：先预热一次，再取 3 次的中位数。结果按模型和设备保存在服务器上，别人再打开不必重测。",
    "lab_sweep_kind": "扫描什么",
    "lab_sweep_prefill": "Prefill vs 提示词长度",
    "lab_sweep_decode_context": "Decode 一步 vs 上下文长度",
    "lab_sweep_decode_batch": "批量 Decode vs 批大小",
    "lab_sweep_up_to": "测到",
    "lab_sweep_caps": "这台服务器的上限：最长 {positions} 个位置，最大批 {batch}（运维可改）。",
    "lab_sweep_run": "开始测量（{n} 个点）",
    "lab_sweep_running": "正在测量：{done} / {total} 个点",
    "lab_sweep_not_run": "还没有测过这一组；点上面的按钮开始。",
    "lab_sweep_none": "这个模型在这台服务器的上限内没有可测的点。",
    "lab_sweep_download": "下载扫描结果（JSON）",
    "lab_sweep_caption_prefill": "Prefill 从 {x0} 个位置的 {m0} 涨到 {x1} 个位置的 {m1}（×{ratio}）；下限从 {f0} 到 {f1}。",
    "lab_sweep_caption_decode_context": "Decode 一步在上下文 {x0} 时 {m0}，在 {x1} 时 {m1}（×{ratio}）：几乎不随上下文变长；下限从 {f0} 到 {f1}。",
    "lab_sweep_caption_decode_batch": "批大小从 {x0} 到 {x1}：一步从 {m0} 到 {m1}（×{ratio}），每秒位置数从 {r0} 到 {r1}（×{gain}）。批越大越划算，直到 Decode 也变成受算力限制。",
    "lab_sweep_skipped": "超出模型或服务器上限、没有测的点：{values}。",
    # ---- perfetto / probe (lesson/perfetto.py, engine/probe.py, lesson/vllm_import.py) ------------
    "download_perfetto": "下载 Perfetto Trace（Chrome Trace Event JSON）",
    "download_perfetto_help": "在 ui.perfetto.dev 或 chrome://tracing 中打开：每个请求一条轨道，每个 worker 一条轨道，Prefill / Decode / 等待 / KV 交接为时间片，KV 字节与批大小为计数器。",
    "probe_observed_note": "从客户端观测：看不到服务器内部的每一次前向计算。首个 token 之前的时间里，排队和 Prefill 无法区分。",
    "err_probe_endpoint": "服务地址必须是 http:// 或 https:// 开头的 URL，收到的是 {endpoint}。",
    "err_probe_api_key_env": "环境变量 {name} 没有设置（它应当保存 API key）。",
    "err_probe_unreachable": "{request_id}：连不上 {endpoint}（{reason}）。",
    "err_probe_model": "服务器没有提供模型 {model}；它提供的是：{served}。",
    "err_probe_http": "{request_id}：服务器返回 HTTP {status}：{detail}",
    "err_probe_timeout": "{request_id}：{timeout_s} 秒内没有收到回答（可以用 --timeout 调整）。",
    "err_probe_cut": "{request_id}：回答没有结束，流就断了（已收到 {pieces} 段）。",
    "err_probe_bad_chunk": "{request_id}：流中的一段不是 JSON：{chunk}",
    "err_probe_stream_error": "{request_id}：服务器在流中报告错误：{detail}",
    "err_vllm_result": "这个 vLLM 结果文件无法读取：{reason}",
    # ---- figures: classroom and the near-duplicate numbers (issue 8, part A) ----
    "gap_note_prefill": "Prefill 这次前向用了 {prefill}，TTFT 是 {ttft}：TTFT 从请求开始算，还包括前向之前的 {wait}（分词 {tokenize}、排队等模型、准备输入）。",
    "gap_note_decode": "Decode 每次前向平均 {decode}，ITL 平均 {itl}：两个 Token 之间还有前向之外的 {gap}（页面画出这个 Token、排队等模型、循环里的记账）。选 Token（采样）和拷回主机算在前向之内。",
}

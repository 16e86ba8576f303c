"""课文第 1–11 节的文字、图旁的说明，以及每张图的 alt 文字（读屏软件读它；数字来自本次运行）。"""

TEXT: dict = {
    # ---- 第 1 节：时间线 -------------------------------------------------------------
    "sec_timeline": "一次回答的时间线",
    "timeline_caption": "同一请求的时间线（真实运行测得）。",
    "timeline_1": (
        "为便于画图，我们把提示词示意性地切成“法国 / 的 / 首都 / 是”四个位置；这不代表实际 Tokenizer 一定这样切分。"
        "模型先对这四个位置运行一次前向计算，并从最后一个位置的输出预测第一个回答 Token“巴黎”。"
        "接下来把“巴黎”作为新输入，再预测“。”。如果还要继续，才把“。”送回模型。"
    ),
    "timeline_projector_hint": "在投影仪上讲？打开页面顶部的“课堂模式”：图里的字放大到正文的大小（1280x720 下 21 px）。",
    "timeline_real_split": "下面的运行面板显示的是真实 Tokenizer 的切分，可以和这里的示意对照。",
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
    "read_on": "继续阅读：本课其余部分",
    "read_on_next": "下面还有：{sections}。读到那里时才画出来（往下滚动，或点上面的按钮）。",
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
        "一次 Decode 用 {decode_ms}（各步的中位数），只处理 1 个位置。"
    ),
    "bottleneck_live_shown": (
        "同一请求运行了 {n} 次，这里引用中位数那一次（第 {k} 次；括号里是 {n} 次中最快与最慢的）：Prefill 用 {prefill_ms}"
        "（{prefill_range}）处理了 {prompt_len} 个位置（每个位置约 {per_position}）；一次 Decode 用 {decode_ms}"
        "（{decode_range}，这一次各步的中位数），只处理 1 个位置。"
    ),
    "bottleneck_ratio_range": "逐次来看，这 {n} 次运行中 Prefill ÷ 一次 Decode 在 {low} 到 {high} 之间。",
    "bottleneck_ratio_same": "逐次来看，这 {n} 次运行中 Prefill ÷ 一次 Decode 每次都是 {low}。",
    "bottleneck_noise": "测量环境：{device}（{dtype}），模型 {model}（{params} 参数）。这里一次 Decode 用时不少于 Prefill。这不是课程讲的规律：Prefill 要算提示词的全部 {prompt_len} 个位置，一次 Decode 只算 1 个。这是这台机器的噪声：这些前向运行时，别的程序也占着它的 CPU 核。再测一次，多次运行的中位数会稳定下来。",
    "bottleneck_same_work": "测量环境：{device}（{dtype}），模型 {model}（{params} 参数）。提示词只有 1 个位置，所以 Prefill 和一次 Decode 一样只算 1 个位置，两者用时差不多（Prefill 是一次 Decode 的 {ratio} 倍）。把提示词拉长就能看到差别。",
    "bottleneck_same_floor": "在 {device}（{dtype}）上用模型 {model}（{params} 个参数）测得：这里一次 Decode 和 Prefill 一样慢，甚至更慢（Prefill 是一次 Decode 的 {ratio} 倍）。提示词只有 {prompt_len} 个位置时这并不矛盾：两次前向都把同样的权重读一遍，下限相同（按这台机器实测的上限为 {floor}），所以各自主要付的是同样的每次前向固定开销，谁快一点取决于这份开销的波动。把提示词拉长，就能看到 Prefill 变长。",
    "bottleneck_measure_again": "再测一次",
    "bottleneck_measure_again_help": "把当前这个请求再运行 {n} 次，并给出中位数。",
    "bottleneck_alike": "测量环境：{device}（{dtype}），模型 {model}（{params} 参数）。这里 Prefill 只是一次 Decode 的 {ratio} 倍。模型这么小时，每次前向主要花在固定开销上（Python、逐层启动计算），所以提示词很短时两个阶段看起来差不多；真正的区别在于时间怎样增长：Prefill 随提示词变长，一次 Decode 几乎不变。点下面的按钮看看。",
    "bottleneck_apart": "测量环境：{device}（{dtype}），模型 {model}（{params} 参数）。这里 Prefill 用时是一次 Decode 的 {ratio} 倍。Prefill 随提示词变长；一次 Decode 只算 1 个位置，几乎不随上下文增长。",
    "show_difference": "看看差别：把你的提示词拉长到 {num_tokens} 个 Token 再运行",
    "show_difference_help": "在你的提示词前补上本课自己的句子，直到这个长度，然后运行；提示词、回答长度和“越过结束符继续写”都保持你的设置。运行后页面会回到上面的时间线：比较 Prefill 的柱子和 Decode 的柱子。",
    "difference_note": "“看看差别”把你的提示词拉长到 {num_tokens} 个 Token（前面补上本课的句子）并运行了一次；提示词本身、回答长度和“{ignore_eos}”都没有改。下面的时间线和后面的图都换成了这次运行：比较 Prefill 的柱子和 Decode 的柱子。[回到瓶颈一节](#bottleneck)",
    "cache_compare": "比较：同一个回答，KV Cache 关闭与开启",
    "cache_compare_running": "正在把同一个回答跑两遍：先关闭缓存，再开启缓存……",
    "cache_compare_help": "用当前这次运行的提示词再跑两遍（贪心），各生成 {num_tokens} 个 Token：一遍关闭缓存（每一步都把所有位置重算一遍），一遍开启缓存（先 Prefill，之后每一步只算一个新位置）。提示词很长时需要几秒钟。",
    "cache_compare_caption": "本机实测，{prompt_len} 个 Token 的提示词之后同样的 {num_tokens} 个 Token：关闭缓存合计 {off_ms}、{off_flops} FLOPs；开启缓存合计 {on_ms}、{on_flops} FLOPs（关闭缓存的用时是开启的 {time_ratio} 倍，FLOPs 是 {flops_ratio} 倍）。FLOPs 来自成本模型。",
    "cache_compare_no_saving": "这里缓存没有省下时间：位置这么少时，每次前向主要花在固定开销上，这么小的差别也可能被这台机器的噪声左右；FLOPs 仍然显示出缓存省下的计算，换一个更长的提示词，时间上也能看出来。",
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
    "ttft_parts_caption": "TTFT 按课文的定义拆开：从发出请求到看见第一个输出 Token，包括排队、分词、Prefill、选出第一个 Token 和传输。上方括号是引擎自己测得的 TTFT（上面时间线和卡片里的数），下方括号是你在页面上感受到的。",
    "ttft_parts_caption_engine": "TTFT 按课文的定义拆开：分词、Prefill 和选出第一个 Token。括号是引擎自己测得的 TTFT（上面时间线和卡片里的数）；这次运行没有页面自己测的排队和传输，所以只有引擎的几段。",
    "ttft_parts_run1_note": "第 1 次运行（共 {n} 次，你看着它出现的那一次）：排队、传输、页面和引擎各段都是这一次的；其他图画的是最接近中位数的那一次。",
    "tl_lesson": (
        "这张图测到的{which}：Prefill 一次前向读了 {n} 个位置，用 {x}（每个位置约 {per}）；"
        "每次 Decode 只读 1 个位置，用 {y}（各步的中位数）。"
    ),
    "tl_lesson_which": "（中位数那一次，第 {k} / {n} 次）",
    "tl_lesson_cheaper": "所以按每个位置算，Prefill 便宜了 {r} 倍：一次前向同时算完所有提示词位置。",
    "tl_lesson_same": "所以按每个位置算，两者差不多：这次 Prefill 没有显出一次算完多个位置的好处。",
    "tl_lesson_dearer": "所以这次按每个位置算，Prefill 反而贵了 {r} 倍：这不是课文讲的规律，而是这次测量受到了干扰。",
    "tl_lesson_one_position": "提示词只有 1 个位置，所以 Prefill 和一次 Decode 做的是同样的工作。",
    "tl_lesson_noise": (
        "但这次一次 Decode（{y}）不比整个 Prefill（{x}）快：Prefill 要算全部提示词位置，一次 Decode 只算 1 个，"
        "所以这不是课文讲的规律，而是这台机器的噪声（测量时别的程序占着 CPU 核）。请再测一次。"
    ),
    "tl_lesson_noise_range": "{n} 次运行里 Prefill 在 {prefill} 之间，一次 Decode 在 {decode} 之间。",
    "tl_measure_again": "再测一次",
    "tl_measure_again_help": "把这个请求再运行 {n} 次，图和数字换成新的中位数那一次。",
    "metric_spread_shown": "中位数那一次：第 {k} / {n} 次（{n} 次：{low}–{high}）",
    "metric_shown_run": "中位数那一次：第 {k} / {n} 次",
    "shown_run_label": "中位数那一次：第 {k} / {n} 次运行（{n} 次里 {ranges}）",
    "shown_run_prefill": "Prefill {low}–{high}",
    "shown_run_decode": "一次 Decode {low}–{high}",
    "shown_run_both": "{prefill}，{decode}",
    "run_streaming": "第 1 / {n} 次运行，测量中…",
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
    "alt_blocks_reused": "（位置 0 到 {last} 读取自之前一次运行的 KV Cache：前缀缓存）",
    "alt_blocks": "方块图，每列一次前向：第 1 列是 Prefill，新计算 {prefill_positions} 个位置{reused}；之后 {num_decode} 次 Decode "
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
    "sketch_positions": "位置 ↓",
    "sketch_live_alt": "示意图（拖动中）：提示词 {p} 个位置由 Prefill 一次算完，之后 {o} 个 Token 中每次 Decode 只算一个新位置，旧位置从 KV Cache 读取。",
    # ---- 前向耗时与 TTFT、ITL 之差（第 6 节指标卡片下的说明）----
    "gap_note_prefill": "Prefill 这次前向用了 {prefill}，TTFT 是 {ttft}：TTFT 从请求开始算，还包括前向之前的 {wait}（分词 {tokenize}、排队等模型、准备输入）。",
    "gap_note_decode": "Decode 每次前向平均 {decode}，ITL 平均 {itl}：两个 Token 之间还有前向之外的 {gap}（页面画出这个 Token、排队等模型、循环里的记账）。选 Token（采样）和拷回主机算在前向之内。",
}

"""本课最后一节，下一课预告：把几种权重格式放在一起实测（lesson/quantization.py）。"""

TEXT: dict = {
    "q_title": "下一课预告：量化",
    "q_intro": "只量化权重（weight-only）时，矩阵里的每个权重用更少的位存下，到矩阵乘法里再解包：**INT8** 每个权重存 "
               "1 个有符号字节，每个输出行一个缩放系数；**INT4** 每个权重存半个字节，每 {group} 个权重一组，每组一个"
               "缩放系数和一个零点。激活、词嵌入查表和 KV Cache 都不变。下面用 torch 自带的打包算子实测，机器是 {cpu}"
               "（torch {torch}，{threads} 个线程，结束时 1 分钟负载 {load}，{recorded_at}），各格式交替运行，每种 "
               "{steps} 步 Decode × {rounds} 轮：",
    "q_recording": "以下数字是一份录制：{recorded_at} 在 {cpu} 上由 `python -m bench.quantization --record` 测得。"
                   "按下按钮，就在本页所用的引擎上现测内置模型。",
    "q_live": "刚刚在本页的引擎上现测（{cpu}，{recorded_at}），同样设置的访客共用这一次测量。"
              "真实尺寸模型的表格仍是录制（{recorded_cpu}，{recorded_on}）。",
    "q_live_only": "刚刚在本页的引擎上现测（{cpu}，{recorded_at}），同样设置的访客共用这一次测量。",
    "q_live_run": "在这台机器上现测各格式",
    "q_live_again": "重新测量",
    "q_live_help": "把内置模型分别以 fp32、bf16、INT8、INT4 载入，轮流为每种格式计时 {steps} 个 Decode 步 × {rounds} 轮，"
                   "再在留出文本和首都题上与 fp32 比较。需要几秒钟。",
    "q_live_running": "{phase}（已完成 {done}/{total}，已用 {seconds} 秒）",
    "q_phase_wait": "等待引擎",
    "q_phase_load": "逐个载入各格式：打包权重",
    "q_phase_round": "为 Decode 步计时，各格式轮流",
    "q_phase_quality": "在留出文本和首都题上与 fp32 比较",
    "q_kit_notes": "每个权重的位数更少：每个 Decode 步要读的字节更少，分布也离 fp32 更远。损失了什么、换来了什么，都是实测。",
    "q_col_format": "权重格式",
    "q_col_read": "每步 Decode 读的权重",
    "q_col_step": "Decode 一步（中位数）",
    "q_col_speedup": "比 fp32 快（时间）",
    "q_col_bytes_ratio": "比 fp32 少（字节）",
    "q_col_kl": "与 fp32 的平均 KL",
    "q_col_top1": "首选与 fp32 相同",
    "q_col_capitals": "首都答对",
    "q_col_answer": "法国的首都是 →",
    "q_table_preset": "{model}（随机权重：时间是真的，Token 没有意义）",
    "q_table_embedded": "内置模型（质量对照它自己的 fp32 运行，用一段它没见过的文字）",
    "q_preset_story": "在 {model} 上，一步 Decode 在 fp32 下要读 {fp32_read} 权重，INT4 只读 {int4_read}，字节少了 "
                      "{bytes_ratio} 倍，可实测只快了 {speedup} 倍（{fp32_ms} → {int4_ms}）：在这台 CPU 上，限制这一步的"
                      "是算子解包权重的计算，而不是内存。在 GPU 上，已发表的 INT4 算子离字节给出的上限近得多。",
    "q_preset_story_bytes": "在 {model} 上，一步 Decode 在 fp32 下要读 {fp32_read} 权重，INT4 只读 {int4_read}，字节少了 "
                            "{bytes_ratio} 倍，实测快了 {speedup} 倍（{fp32_ms} → {int4_ms}）：接近字节给出的上限，"
                            "所以这里限制这一步的是内存。",
    "q_answer_kept": "内置模型换成 INT4 权重（每组 {group} 个）后，仍然把“法国的首都是”答成“{answer}”：在一段它没见过的"
                     "文字上，下一个 Token 的分布与 fp32 平均相差 {kl} nats，{top1} 的首选与 fp32 相同。",
    "q_answer_changed": "换成 INT4 权重（每组 {group} 个）后，内置模型不再回答巴黎，而是“{answer}”。这就是“究竟损失了"
                        "什么”在这里的样子。",
    "q_ex_speedup": "先预测，再对照：INT4 占的字节是 bf16 的四分之一、fp32 的八分之一。在这台机器上，{model} 用 INT4 权重"
                    "时，一步 Decode 比 fp32 快几倍？",
    "q_ex_speedup_right": "答对了：实测 {measured} 倍（{low} 到 {high} 倍之间都算对）。",
    "q_ex_speedup_wrong": "实测是 {measured} 倍，不是 {answer} 倍（{low} 到 {high} 倍之间都算对）。单看字节能快 "
                          "{bytes_ratio} 倍；但每一步里其余的工作（解包权重、矩阵之外的 Python 与注意力计算）并不随字节"
                          "一起变少。",
    "q_ex_paris": "先预测，再对照：换成 INT4 权重后，内置模型还会把“法国的首都是”答成巴黎吗？",
    "q_ex_check": "与实测对照",
    "q_ex_yes": "会",
    "q_ex_no": "不会",
    "q_ex_paris_right": "答对了：INT4 权重下它的回答是“{answer}”。",
    "q_ex_paris_wrong": "这次不对：INT4 权重下它的回答是“{answer}”。",
}

"""前缀缓存（服务实验室的开关、每个请求的命中表、块共享图、TTFT 对比、课文一节）的全部文字。"""

TEXT: dict = {
    # 场景
    "sl_scn_shared_system_prompt": "8 个对话，每 50 ms 一个，前面是同一段 512 个 Token 的系统提示词（前缀缓存）。",
    "sl_scn_multi_turn_chat": "一个对话的 4 轮，相隔 400 ms；每一轮都把之前的整段对话重新发一遍（前缀缓存）。",
    "sl_scn_near_miss": "同一段文字发三次：第二次只是第一个 Token 不同，第三次与第一次完全相同（前缀缓存）。",
    "sl_scn_name_shared_system_prompt": "共享系统提示词",
    "sl_scn_name_multi_turn_chat": "多轮对话",
    "sl_scn_name_near_miss": "差一个 Token",
    # 开关
    "sl_prefix_switch": "前缀缓存",
    "sl_prefix_switch_help": "打开后，请求的提示词中已被别的请求算过的整块直接从 KV 缓存读取，Prefill 只算其余位置。"
                             "打开时还会在同一工作负载上关掉缓存再跑一次，把两次的 TTFT 并排给出。",
    # 页面上的一节
    "pc_heading": "前缀缓存：哪些位置没有再算",
    "pc_intro": "每个请求：提示词多少个 Token，多少从缓存读取，多少真正算了，没命中的原因。"
                "只有**整块**才能共享；最后一个位置总要计算（它产生第一个 Token）。",
    "pc_col_request": "请求",
    "pc_col_prompt": "提示词 Token",
    "pc_col_cached": "从缓存读取",
    "pc_col_computed": "计算了",
    "pc_col_rate": "命中率",
    "pc_col_reason": "为什么没有全部命中",
    "pc_col_ttft_off": "TTFT，不用缓存",
    "pc_col_ttft_on": "TTFT，用缓存",
    "pc_ttft_heading": "同一工作负载，用与不用前缀缓存的 TTFT（{policy}，都是实测）",
    "pc_ttft_p50": "TTFT 中位数：不用缓存 {off} ms，用缓存 {on} ms（{ratio}×）；两次的 Token 完全相同：{same}。",
    "pc_same_yes": "是",
    "pc_same_no": "否",
    "pc_off_note": "这组运行关闭了前缀缓存：打开上面的开关再运行，就能看到命中、未命中的原因和块共享图。",
    "pc_tab": "块共享",
    "pc_explain": "每行一个请求，每格一个 KV 块（格内是块哈希的前 8 位）。高亮的格从缓存读取，没有再算；"
                  "×N：同时有 N 个请求持有这一块，它的 K/V 只存一份。",
    # 未命中的原因
    "pc_miss_none": "可用的整块全部命中",
    "pc_miss_cache_off": "缓存关闭",
    "pc_miss_too_short": "比一个块还短（最后一个位置总要计算）",
    "pc_miss_first_seen": "第一次见到这个前缀",
    "pc_miss_in_flight": "{other} 正在计算这一前缀，还没算完",
    "pc_miss_diverged": "在位置 {k} 与 {other} 缓存的块分岔：这里是“{mine}”，缓存里是“{cached}”",
    "pc_miss_evicted": "这一块曾在缓存中，{at} 被 {other} 驱逐",
    # 图
    "pc_title": "前缀缓存：哪些请求持有哪些块（{policy}）",
    "pc_subtitle": "{scenario} · 每块 {block_size} 个 Token · {cached} / {total} 个提示词 Token 从缓存读取（{rate}）",
    "pc_row": "{request}：{cached} / {prompt}",
    "pc_cell_title": "{request} 的第 {index} 块（块 {block}，哈希 {hash}）：位置 {start}–{end}，{state}；最多 {refs} 个请求同时持有",
    "pc_state_cached": "从缓存读取",
    "pc_state_computed": "由这个请求计算",
    "pc_state_partial": "未满的最后一块，从不共享",
    "pc_legend_cached": "从缓存读取（没有再算）",
    "pc_legend_computed": "本请求计算",
    "pc_legend_partial": "未满的最后一块（从不共享）",
    "pc_legend_stop": "查找停在这里",
    "pc_legend_evicted": "后来被驱逐",
    "pc_evictions": "驱逐了 {n} 个块：",
    "pc_evictions_by": "{n} 个被 {by} 驱逐（{start}–{end}）",
    "pc_note_hash": "每个整块用哈希命名：前一块的哈希加本块的 Token id（sha256，显示前 8 位）。"
                    "哈希相同，内容就相同，K/V 只存一份；链上任何一个 Token 不同，之后的所有哈希都不同。",
    "pc_note_off": "这次运行关闭了前缀缓存：每个请求都从头计算。",
    "pc_note_more_requests": "只画了前 {n} 个请求（共 {total} 个）。",
    "pc_note_more_blocks": "每行最多画 {n} 块；更长的提示词只画开头和结尾。",
    "pc_at_ms": "{ms} 时",
    # 导出 / 幻灯片
    "pc_download": "块共享图",
    # 课文一节（在“很多请求”之后）
    "sec_prefix": "前缀缓存：算过的提示词不再算",
    "prefix_1": "很多请求的提示词开头是一样的：同一段系统提示词，多轮对话里每一轮都重发之前的整段对话。"
                "服务器把 KV 缓存切成块，每个**整块**用一个哈希命名：前一块的哈希加本块的 Token id。"
                "新请求到来时，先按块查哈希：查到的块直接放进它的块表（引用计数加一），Prefill 只算其余的位置，"
                "所以它的 TTFT 短得多。",
    "prefix_2": "哈希是**链**起来的：只要前面有一个 Token 不同，后面每一块的哈希都不同，即使其余文字完全一样。"
                "没满的最后一块从不共享；最后一个位置总要计算，因为它产生第一个 Token。没人持有的缓存块留着，"
                "直到需要空间时才按“最久未用”驱逐。vLLM 的自动前缀缓存、SGLang 的 RadixAttention 都这样做。",
    "prefix_3": "在服务实验室打开“前缀缓存”开关，选“共享系统提示词”“多轮对话”或“差一个 Token”：页面给出每个请求"
                "从缓存读了多少、算了多少、没命中的原因，以及同一工作负载用与不用缓存的 TTFT。",
    # 练习
    "ex_prefix_second_ttft_title": "共享系统提示词：第二个请求的 TTFT",
    "ex_prefix_second_ttft_q": "8 个对话前面都是同一段 512 个 Token 的系统提示词，每 50 ms 来一个。打开前缀缓存后，"
                               "第二个请求的 TTFT 与不用缓存时相比如何？",
    "ex_prefix_second_ttft_opt_smaller": "小得多：512 个位置从缓存读取，Prefill 只算后面的问题",
    "ex_prefix_second_ttft_opt_same": "差不多：提示词一样长",
    "ex_prefix_second_ttft_opt_larger": "更大：查缓存要时间",
    "ex_prefix_second_ttft_rule": "按同一场景、分块 Prefill、用与不用缓存各跑一次的第二个请求的 TTFT 评分：相差至少 1.5 倍。",
    "ex_prefix_second_ttft_explain": "第二个请求的 TTFT：不用缓存 {off}，用缓存 {on}（{ratio}）；它的 {prompt} 个提示词 Token 中有 "
                                     "{cached} 个从缓存读取。",
    "ex_prefix_near_miss_title": "差一个 Token：谁没命中",
    "ex_prefix_near_miss_q": "同一段文字发三次：第二次只把第一个 Token 从 Q 换成 A，第三次与第一次完全相同。打开前缀缓存，"
                             "第一个之后的两个请求里，哪个一块也没从缓存读到？",
    "ex_prefix_near_miss_opt_second": "第二个：第一块就不同，之后每一块的哈希都不同",
    "ex_prefix_near_miss_opt_third": "第三个",
    "ex_prefix_near_miss_opt_both": "两个都没有：缓存只认完全相同的提示词",
    "ex_prefix_near_miss_opt_neither": "两个都读到了：后面的文字都一样",
    "ex_prefix_near_miss_rule": "按实测运行中每个请求从缓存读取的 Token 数评分（0 即没命中）。",
    "ex_prefix_near_miss_explain": "第二个请求从缓存读了 {c2} / {p2} 个 Token（在位置 {k} 分岔：这里是“{mine}”，缓存里是“{cached}”）；"
                                   "第三个读了 {c3} / {p3} 个。",
    # 探测真实服务器：它的前缀缓存
    "pc_probe_usage": "用量（usage）说 {cached} / {prompt} 个提示词 Token 命中了缓存（{n} / {total} 个请求报告了 `cached_tokens`）",
    "pc_probe_no_usage": "用量（usage）没有报告命中缓存的 Token（`prompt_tokens_details.cached_tokens`；vLLM 要加 `--enable-prompt-tokens-details`）",
    "pc_probe_metrics": "`/metrics` 在运行期间计了 {hits} 个命中 Token、{queries} 个查询 Token",
    "pc_probe_no_metrics": "`/metrics` 没有前缀缓存计数（`vllm:prefix_cache_hits` / `_queries`）",
    "pc_probe_verdict_agree": "两者一致。",
    "pc_probe_verdict_disagree": "两者**不一致**（别的客户端的请求也计入 `/metrics`）。",
    "pc_probe_verdict_usage_missing": "只有 `/metrics` 说了。",
    "pc_probe_verdict_metrics_missing": "只有用量说了。",
    "pc_probe_verdict_both_missing": "服务器没有说它的前缀缓存。",
    "pc_probe_heading": "服务器的前缀缓存：",
    # the lesson's one-request prefix cache (the run panel's switch, the note under the answer)
    "prefix_4": "在一个请求上试试：勾选长度下方的 **{switch}**，运行 法国的首都是，再运行一次（或运行 法国的首都是巴黎。德国的首都是，它把第一次的回答也发回去）。第二次 Prefill 只计算新的位置：位置块图把从第一次运行读取的位置画成深灰，回答下方的说明写出读取了多少、其余为什么要重新计算。这里按 Token 复用（与 SGLang 的 radix cache 一样）；服务实验室按整块共享（与 vLLM 一样）。",
    "prefix_reuse": "复用我之前运行的 KV（前缀缓存）",
    "prefix_reuse_help": "引擎保留你最近几次运行的 KV Cache。提示词开头与其中某次相同时，直接读取这些位置的 K 和 V，不再计算：Prefill 只计算其余位置（最后一个提示词位置总要计算，因为它给出第一个 Token）。关闭时每次 Prefill 都计算整段提示词，与本课表格的假设一致。",
    "pr_hit": "**前缀缓存：** Prefill 计算了 {prompt} 个提示词位置中的 {computed} 个；{cached} 个读取自你 {when} 的运行（命中率 {rate}）。",
    "pr_first_seen_none": "**前缀缓存：** 你保留的运行（{kept} 次）没有一次与这段提示词开头相同，所以 Prefill 计算了全部 {prompt} 个位置。这次运行现在已保留：再运行一次就能看到区别。",
    "pr_first_seen_some": "**前缀缓存：** 位置 0–{last}（{cached} 个）读取自你 {when} 的运行；那次运行到此为止，提示词其余部分从未计算过：Prefill 计算了 {prompt} 个中的 {computed} 个。",
    "pr_diverged": "**前缀缓存：** 你 {when} 的运行与前 {cached} 个 Token 相同，但在位置 {k} 是 `{cached_piece}`，这段提示词是 `{piece}`：Prefill 计算了位置 {k}–{end}（{prompt} 个中的 {computed} 个）。",
    "pr_evicted": "**前缀缓存：** 一次开头相同的运行（{when}）已在 {evicted} 被淘汰，为之后的运行腾出空间，所以 Prefill 计算了 {prompt} 个位置中的 {computed} 个。",
    "pr_too_short": "**前缀缓存：** 只有一个 Token 的提示词：它唯一的位置就是最后一个，总要计算（它给出第一个 Token）。",
    "pr_mode": "**前缀缓存：** {mode} 引擎模式为每个请求预分配缓存；前缀缓存只在 eager 模式下工作，所以 Prefill 计算了全部 {prompt} 个位置。",
    "pr_sliding_window": "**前缀缓存：** 这个模型的滑动窗口层会丢弃旧位置，没有完整的缓存可保留；Prefill 计算了全部 {prompt} 个位置。",
}

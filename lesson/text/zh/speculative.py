"""Decode 之后的一节：推测解码，现场运行（app_support/speculative.py、lesson/speculative.py）。"""

TEXT = {
    "spec_title": "Decode 一次只能走一步，除非先猜",
    "spec_intro_1": ("同一请求还不能并行算出所有未知的未来 Token。下一步的输入要等上一步选出结果。**推测解码**"
                     "不违背这条规则，而是先猜：一个便宜的起草者先提出接下来的 k 个 Token，模型用**一次**前向把它们全部"
                     "验证掉：k + 1 个位置（上一步选出的 Token 加上 k 个猜测），就像在 KV Cache 之上做一次小 Prefill。"
                     "模型保留第一个不同意之前的猜测，再加上自己的一个 Token，其余位置的 K、V 丢掉。"),
    "spec_intro_2": ("这里的起草者是**提示词查找**（vLLM 的 `ngram`）：在提示词和已写出的回答里找到最后几个 Token "
                     "之前出现过的地方，提出当时接在后面的内容；不需要第二个模型。回答重复提示词里的文字时它才划算，"
                     "例如下面的例子。两次运行都是贪心解码，所以 Token 必须和普通 Decode 完全一样：页面会核对。"),
    "spec_source": "提示词",
    "spec_source_example": "会重复的例子",
    "spec_source_yours": "运行面板里我的提示词",
    "spec_k": "每次验证的猜测 Token 数（k）",
    "spec_k_help": "vLLM 的 num_speculative_tokens：一次目标模型前向验证多少个猜测。",
    "spec_run": "先猜再验证，并对照普通 Decode 运行",
    "spec_running": "正在引擎上先跑普通 Decode，再跑推测解码……",
    "spec_no_run": "按下按钮：页面在引擎上把提示词跑两次（普通 Decode，然后先猜再验证），并画出第二次。",
    "spec_summary": ("两次运行都写出 {tokens} 个 Token：普通 Decode 在 Prefill 之后用了 {plain_passes} 次前向，"
                     "先猜再验证用了 {spec_passes} 次（{drafted} 个猜测保留 {kept} 个）：**每次目标前向 {x} 个 Token**。"),
    "spec_same": "两次的 Token 逐个相同（已在两次运行上核对）。",
    "spec_differ": "Token 与普通 Decode 不同：这是程序缺陷，不是方法本身的问题，请报告。",
    "spec_with": "**先猜再验证**（Prefill 之后 {passes} 次前向）",
    "spec_plain": "**普通 Decode**（Prefill 之后 {passes} 次前向）",
    "spec_timeline_caption": "先猜再验证的那次运行：每次验证像一次小 Prefill，送入 k + 1 个位置；被拒绝的猜测划掉。",
    "spec_acc_caption": "每次验证一列：保留的猜测，顶上是模型自己的 Token，被拒绝的猜测颜色较浅。",
    "spec_itl": ("**这里 ITL 怎么算**（vLLM 的规则）：一次前向里的每个 Token 都在这次前向结束时到达。TPOT 用首个 "
                 "Token 之后的时间除以其后的每一个 Token；ITL 则是每次送出 Token 的前向算一个间隔。所以先猜再验证时 "
                 "TPOT 低于平均 ITL；普通 Decode 里两者相等。"),
    "spec_metrics": "先猜再验证：TPOT {tpot}，平均 ITL {itl}。普通 Decode：TPOT {plain_tpot}，平均 ITL {plain_itl}。",
    "spec_ratio": "这里最宽的一次验证（{positions} 个位置）用了 {ms} ms，普通 Decode 一步的中位数是 {decode_ms} ms：**{x} 倍**。",
    "spec_draft_cost": "起草者自己的时间（在各次验证之前）：{v} 次验证共 {ms} ms（在已有 Token 里查找，不用模型）。",
    "spec_ratio_none": "这次运行没有可以和 Decode 一步对比计时的验证前向（起草者没有找到可猜的内容）。",
    "spec_ex_title": "先预测，再测量",
    "spec_ex_passes_q": "起草者猜了 4 个 Token，其中 3 个被接受：这 4 个 Token 花了几次目标模型前向？",
    "spec_ex_ratio_q": "在这台机器上，一次 {positions} 个位置的前向是 Decode 一步的 {positions} 倍时间吗？",
    "spec_ex_yes": "是",
    "spec_ex_no": "不是",
    "spec_ex_check": "用这次运行核对",
    "spec_ex_need_run": "答案按上面的运行评判：请先运行。",
    "spec_ex_passes_right": ("对：一次。这次运行里 V{n} 验证了 {drafted} 个猜测，保留 {kept} 个，再加上自己的 Token："
                             "一次目标前向得到 {tokens} 个 Token，普通 Decode 要 {tokens} 次。"),
    "spec_ex_passes_wrong": ("一次。这次运行里 V{n} 验证了 {drafted} 个猜测，保留 {kept} 个，再加上自己的 Token："
                             "一次目标前向得到 {tokens} 个 Token，普通 Decode 要 {tokens} 次。"),
    "spec_ex_passes_other": "（这次运行里没有猜 4 个、保留 3 个的验证；这是保留最多的一次。）",
    "spec_ex_ratio_right": ("对：测得 {x} 倍（两个答案的分界是 {mid} 倍，即对数刻度上 1 倍与 {positions} 倍的中点）。"),
    "spec_ex_ratio_wrong": ("这里的答案是“{answer}”：测得 {x} 倍（两个答案的分界是 {mid} 倍，即对数刻度上 1 倍与 {positions} 倍的中点）。"),
    "spec_ex_ratio_why_no": "一次前向要读一遍权重，还有每次前向的固定开销（这个小模型上以后者为主）；多几个位置，这些仍只付一次。",
    "spec_ex_ratio_why_yes": "这里多出的位置有了自己的计算量：这次前向已不再只受读权重或固定开销限制。",
    "spec_acc_alt": "接受情况图：{v} 次验证，{drafted} 个猜测保留 {kept} 个，每次目标前向 {x} 个 Token。",
    "phase_step_decode": "Decode {n}",
    "phase_step_verify": "验证 {n}",
}

"""Every word of prefix caching: the serving lab's switch, the per-request hit table, the block-sharing
figure, the TTFT comparison and the lesson's section."""

TEXT: dict = {
    # scenarios
    "sl_scn_shared_system_prompt": "8 chats, one every 50 ms, each after the same 512-token system prompt (prefix "
                                   "caching).",
    "sl_scn_multi_turn_chat": "One chat's 4 turns, 400 ms apart; each turn resends the whole conversation so far "
                              "(prefix caching).",
    "sl_scn_near_miss": "One text sent three times: the second differs only in its first token, the third is the "
                        "first again (prefix caching).",
    "sl_scn_name_shared_system_prompt": "shared system prompt",
    "sl_scn_name_multi_turn_chat": "multi-turn chat",
    "sl_scn_name_near_miss": "one token off",
    # the switch
    "sl_prefix_switch": "Prefix caching",
    "sl_prefix_switch_help": "On: full blocks of a prompt that another request already computed are read from the "
                             "KV cache, and Prefill computes only the rest. The same workload is also run once with "
                             "the cache off, and both TTFTs are shown side by side.",
    # the page's part
    "pc_heading": "Prefix caching: which positions were not computed again",
    "pc_intro": "Per request: prompt tokens, how many were read from the cache, how many were computed, and why "
                "the rest missed. Only **whole blocks** are shared; the last position is always computed (it "
                "yields the first token).",
    "pc_col_request": "request",
    "pc_col_prompt": "prompt tokens",
    "pc_col_cached": "read from the cache",
    "pc_col_computed": "computed",
    "pc_col_rate": "hit rate",
    "pc_col_reason": "why not all of it",
    "pc_col_ttft_off": "TTFT, cache off",
    "pc_col_ttft_on": "TTFT, cache on",
    "pc_ttft_heading": "The same workload with and without the prefix cache: TTFT ({policy}, both measured)",
    "pc_ttft_p50": "TTFT median: {off} ms without the cache, {on} ms with it ({ratio}x); the two runs wrote the "
                   "same tokens: {same}.",
    "pc_same_yes": "yes",
    "pc_same_no": "no",
    "pc_off_note": "These runs had prefix caching off: switch it on above and run again to see the hits, the "
                   "reasons for each miss and the block-sharing figure.",
    "pc_tab": "block sharing",
    "pc_explain": "One row per request, one cell per KV block (in it, the first 8 digits of the block's hash). "
                  "Highlighted cells were read from the cache, not computed; xN: N requests held the block at "
                  "once, its K/V stored once.",
    # miss reasons
    "pc_miss_none": "every usable whole block hit",
    "pc_miss_cache_off": "the cache was off",
    "pc_miss_too_short": "shorter than one block (the last position is always computed)",
    "pc_miss_first_seen": "first time this prefix was seen",
    "pc_miss_in_flight": "{other} was still computing this prefix",
    "pc_miss_diverged": "diverged from {other}'s cached block at position {k}: \"{mine}\" here, \"{cached}\" cached",
    "pc_miss_evicted": "this block was cached, and evicted by {other} {at}",
    # the figure
    "pc_title": "Prefix cache: which requests hold which blocks ({policy})",
    "pc_subtitle": "{scenario} · {block_size} tokens per block · {cached} of {total} prompt tokens read from the "
                   "cache ({rate})",
    "pc_row": "{request}: {cached} / {prompt}",
    "pc_cell_title": "{request}'s block {index} (block {block}, hash {hash}): positions {start}-{end}, {state}; "
                     "held by at most {refs} requests at once",
    "pc_state_cached": "read from the cache",
    "pc_state_computed": "computed by this request",
    "pc_state_partial": "a partly filled last block, never shared",
    "pc_legend_cached": "read from the cache (not computed)",
    "pc_legend_computed": "computed by this request",
    "pc_legend_partial": "partly filled last block (never shared)",
    "pc_legend_stop": "the look-up stopped here",
    "pc_legend_evicted": "evicted later",
    "pc_evictions": "{n} blocks evicted:",
    "pc_evictions_by": "{n} by {by} ({start}-{end})",
    "pc_note_hash": "Each whole block is named by a hash: the previous block's hash and this block's token ids "
                    "(sha256, first 8 digits shown). The same hash means the same contents, so its K/V is stored "
                    "once; one different token changes every hash after it.",
    "pc_note_off": "This run had prefix caching off: every request computed its whole prompt.",
    "pc_note_more_requests": "Only the first {n} requests are drawn (of {total}).",
    "pc_note_more_blocks": "At most {n} blocks per row; longer prompts show their start and end.",
    "pc_at_ms": "at {ms}",
    # exports / slides
    "pc_download": "block sharing",
    # exercises
    "ex_pc_second_title": "Shared system prompt: the second request's TTFT",
    "ex_pc_second_q": "In the 'shared system prompt' scenario, 8 chats start with the same 512-token system prompt. "
                      "With prefix caching on, what is the second request's (r1) TTFT compared with the cache off?",
    "ex_pc_second_a1": "About the same: the prompt is as long, Prefill has the same work",
    "ex_pc_second_a2": "Much smaller: 512 positions are read from the cache, Prefill computes only the question",
    "ex_pc_second_a3": "Larger: the look-up costs time",
    "ex_pc_second_why": "r1's first 32 whole blocks (512 tokens) have the same hashes as r0's and go straight into "
                        "its block table; Prefill computes only the few positions left. The serving lab measures "
                        "it with the switch on: TTFT with and without the cache, side by side.",
    "ex_pc_miss_title": "One token off: who misses, and why",
    "ex_pc_miss_q": "In the 'one token off' scenario one text is sent three times; the second changes only its first "
                    "token, Q to A. With prefix caching on, which request hits most, and why does the second miss?",
    "ex_pc_miss_a1": "The second hits almost all of it: the rest of the text is the same",
    "ex_pc_miss_a2": "The second hits no block: it diverges at position 0; the third hits nearly all",
    "ex_pc_miss_a3": "None hits: the cache only matches identical prompts",
    "ex_pc_miss_why": "A block's hash chains from the first token: a different first block makes every later hash "
                      "different, however alike the text. The third request equals the first and hits every block "
                      "but the last.",
}

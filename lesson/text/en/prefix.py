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
    # the lesson's section (after "many requests")
    "sec_prefix": "Prefix caching: a prompt computed once is not computed again",
    "prefix_1": "Many requests start the same way: one system prompt, or a multi-turn chat that resends the whole "
                "conversation each turn. The server cuts its KV cache into blocks and names each **whole block** by "
                "a hash: the previous block's hash and this block's token ids. A new request looks its blocks up "
                "first: the blocks it finds go straight into its block table (their reference counts go up), and "
                "Prefill computes only the rest, so its TTFT is much shorter.",
    "prefix_2": "The hashes form a **chain**: one different token early on changes the hash of every block after "
                "it, however alike the rest of the text. A partly filled last block is never shared, and the last "
                "position is always computed, since it yields the first token. Cached blocks nobody holds stay "
                "until space is needed, then the least recently used go first. vLLM's automatic prefix caching and "
                "SGLang's RadixAttention work this way.",
    "prefix_3": "In the serving lab, switch on prefix caching and pick 'shared system prompt', 'multi-turn chat' or "
                "'one token off': the page shows how much of each prompt was read from the cache, how much was "
                "computed, why the rest missed, and TTFT with and without the cache on the same workload.",
    # exercises
    "ex_prefix_second_ttft_title": "Shared system prompt: the second request's TTFT",
    "ex_prefix_second_ttft_q": "8 chats start with the same 512-token system prompt, one every 50 ms. With prefix "
                               "caching on, how does the second request's TTFT compare with the cache off?",
    "ex_prefix_second_ttft_opt_smaller": "Much smaller: 512 positions are read from the cache, Prefill computes "
                                         "only the question",
    "ex_prefix_second_ttft_opt_same": "About the same: the prompt is as long",
    "ex_prefix_second_ttft_opt_larger": "Larger: the look-up costs time",
    "ex_prefix_second_ttft_rule": "Graded by the second request's TTFT in two chunked runs of the scenario, the "
                                  "cache off and on: one at least 1.5 times the other.",
    "ex_prefix_second_ttft_explain": "The second request's TTFT: {off} without the cache, {on} with it ({ratio}); "
                                     "{cached} of its {prompt} prompt tokens were read from the cache.",
    "ex_prefix_near_miss_title": "One token off: who misses",
    "ex_prefix_near_miss_q": "One text is sent three times: the second changes only its first token, Q to A; the "
                             "third is the first again. With prefix caching on, which of the two after the first "
                             "reads no block from the cache?",
    "ex_prefix_near_miss_opt_second": "The second: its first block differs, so every later hash differs",
    "ex_prefix_near_miss_opt_third": "The third",
    "ex_prefix_near_miss_opt_both": "Both: the cache only matches identical prompts",
    "ex_prefix_near_miss_opt_neither": "Neither: the rest of the text is the same",
    "ex_prefix_near_miss_rule": "Graded by the tokens each request read from the cache in the measured run (0: a "
                                "miss).",
    "ex_prefix_near_miss_explain": "The second request read {c2} of {p2} tokens from the cache (it diverges at "
                                   "position {k}: \"{mine}\" here, \"{cached}\" cached); the third read {c3} of {p3}.",
    # probing a real server: its prefix cache
    "pc_probe_usage": "the usage says {cached} of {prompt} prompt tokens were cached ({n} of {total} requests "
                      "reported `cached_tokens`)",
    "pc_probe_no_usage": "the usage reports no cached tokens (`prompt_tokens_details.cached_tokens`; vLLM sends it "
                         "with `--enable-prompt-tokens-details`)",
    "pc_probe_metrics": "`/metrics` counted {hits} hit tokens of {queries} queried during the run",
    "pc_probe_no_metrics": "`/metrics` has no prefix-cache counters (`vllm:prefix_cache_hits` / `_queries`)",
    "pc_probe_verdict_agree": "They agree.",
    "pc_probe_verdict_disagree": "They **disagree** (other clients' requests also count in `/metrics`).",
    "pc_probe_verdict_usage_missing": "Only `/metrics` says.",
    "pc_probe_verdict_metrics_missing": "Only the usage says.",
    "pc_probe_verdict_both_missing": "The server says nothing about its prefix cache.",
    "pc_probe_heading": "The server's prefix cache:",
    # the lesson's one-request prefix cache (the run panel's switch, the note under the answer)
    "prefix_4": "Try it on one request: tick **{switch}** under the lengths, run “The capital of France is”, then run it again (or run “The capital of France is Paris. The capital of Germany is”, which resends the first answer). The second Prefill computes only the new positions: the blocks figure draws the ones read from your first run in dark grey, and the box under the answer says how many were read and why the rest were computed. Token by token here (as SGLang's radix cache); the serving lab shares whole blocks (as vLLM).",
    "prefix_reuse": "Reuse my earlier runs' KV (prefix cache)",
    "prefix_reuse_help": "Keeps your last runs' KV caches in the engine. A run whose prompt begins like one of them reads those positions' K and V instead of computing them: Prefill computes only the rest (the last prompt position always, since it yields the first token). Off: every Prefill computes the whole prompt, as the lesson's table assumes.",
    "pr_hit": "**Prefix cache:** Prefill computed {computed} of {prompt} prompt positions; {cached} were read from your run at {when} ({rate} hit).",
    "pr_first_seen_none": "**Prefix cache:** none of your kept runs ({kept}) begins like this prompt, so Prefill computed all {prompt} positions. This run is kept now: run it again to see the difference.",
    "pr_first_seen_some": "**Prefix cache:** positions 0–{last} ({cached}) were read from your run at {when}; that run ended there, so the rest of the prompt was never computed before: Prefill computed {computed} of {prompt}.",
    "pr_diverged": "**Prefix cache:** your run at {when} matches the first {cached} tokens, then has `{cached_piece}` at position {k} where this prompt has `{piece}`: Prefill computed positions {k}–{end} ({computed} of {prompt}).",
    "pr_evicted": "**Prefix cache:** a run that began like this prompt (from {when}) was evicted at {evicted} to make room for later runs, so Prefill computed {computed} of {prompt} positions.",
    "pr_too_short": "**Prefix cache:** a one-token prompt: its only position is the last one, which is always computed (it yields the first token).",
    "pr_mode": "**Prefix cache:** the {mode} engine mode preallocates a cache per request; the prefix cache runs in eager mode only, so Prefill computed all {prompt} positions.",
    "pr_sliding_window": "**Prefix cache:** this model's sliding-window layers drop old positions, so there is no whole cache to keep; Prefill computed all {prompt} positions.",
}

"""The section after Decode: speculative decoding, run live (app_support/speculative.py, lesson/speculative.py)."""

TEXT = {
    "spec_title": "Decode goes one step at a time, unless it guesses first",
    "spec_intro_1": ("One request still cannot compute all of its unknown future tokens at once: the next step's "
                     "input waits for the token the previous step chose. **Speculative decoding** keeps that rule "
                     "and guesses anyway: a cheap drafter proposes the next k tokens, and the model checks all of "
                     "them in **one** pass over k + 1 positions (the last token it chose plus the k guesses), a "
                     "small Prefill over the KV cache. It keeps the guesses up to the first one it disagrees with, "
                     "adds one token of its own, and drops the K and V of the rest."),
    "spec_intro_2": ("The drafter here is **prompt lookup** (vLLM's `ngram`): it finds the last few tokens earlier in "
                     "the prompt or the answer and proposes what followed them there; no second model. It pays off "
                     "when the answer repeats text of the prompt, as in the example below. Both runs are greedy, so "
                     "the tokens must be exactly plain Decode's: the page checks them."),
    "spec_source": "Prompt",
    "spec_source_example": "the repeating example",
    "spec_source_yours": "my prompt from the run panel",
    "spec_k": "Drafted tokens per verify pass (k)",
    "spec_k_help": "vLLM's num_speculative_tokens: how many guesses one target pass checks.",
    "spec_run": "Run with guessing, and plain",
    "spec_running": "Running plain Decode, then speculative decoding, on the engine…",
    "spec_no_run": "Press the button: the page runs the prompt twice on the engine (plain Decode, then with guessing) and draws the second.",
    "spec_summary": ("Both runs wrote {tokens} tokens: plain Decode in {plain_passes} passes after Prefill, with "
                     "guessing in {spec_passes} (kept {kept} of {drafted} drafts): **{x} tokens per target pass**."),
    "spec_same": "The tokens are the same, token for token (checked on the two runs).",
    "spec_differ": "The tokens differ from plain Decode's: that is a bug, not the method; please report it.",
    "spec_with": "**With guessing** ({passes} passes after Prefill)",
    "spec_plain": "**Plain Decode** ({passes} passes after Prefill)",
    "spec_timeline_caption": "The run with guessing: each verify pass feeds k + 1 positions like a small Prefill; rejected drafts are struck out.",
    "spec_acc_caption": "Each verify pass a column: kept drafts, the model's own token on top, rejected drafts pale.",
    "spec_itl": ("**How ITL counts here** (vLLM's rule): every token of a pass arrives when the pass ends. TPOT "
                 "divides the time after the first token by every token after it; ITL has one gap per pass that "
                 "delivered tokens. So with guessing TPOT falls below the mean ITL; in plain Decode the two are equal."),
    "spec_metrics": "With guessing: TPOT {tpot}, mean ITL {itl}. Plain Decode: TPOT {plain_tpot}, mean ITL {plain_itl}.",
    "spec_ratio": ("The widest verify pass here ({positions} positions) took {ms} ms, plain Decode's median step "
                   "{decode_ms} ms: **{x}x**."),
    "spec_draft_cost": "The drafter's own time, before its passes: {ms} ms in all over {v} verify passes (a search of the tokens so far, no model).",
    "spec_ratio_none": "This run has no verify pass to time against a Decode step (the drafter found nothing to guess).",
    "spec_ex_title": "Predict, then measure",
    "spec_ex_passes_q": "The drafter guessed 4 tokens and 3 were accepted: how many target passes did these 4 tokens cost?",
    "spec_ex_ratio_q": "Is a pass over {positions} positions {positions}x the time of a Decode step here?",
    "spec_ex_yes": "yes",
    "spec_ex_no": "no",
    "spec_ex_check": "Check against the run",
    "spec_ex_need_run": "The answers are graded from the run above: run it first.",
    "spec_ex_passes_right": ("Right: one. In this run pass V{n} checked {drafted} guesses, kept {kept} and added its "
                             "own token: {tokens} tokens from one target pass, where plain Decode spends {tokens}."),
    "spec_ex_passes_wrong": ("One. In this run pass V{n} checked {drafted} guesses, kept {kept} and added its own "
                             "token: {tokens} tokens from one target pass, where plain Decode spends {tokens}."),
    "spec_ex_passes_other": "(No pass of this run guessed 4 and kept 3; this is the one that kept the most.)",
    "spec_ex_ratio_right": ("Right: measured {x}x (the line between the answers: {mid}x, halfway from 1x to "
                            "{positions}x on a log scale)."),
    "spec_ex_ratio_wrong": ("Here the answer is “{answer}”: measured {x}x (the line between the answers: {mid}x, "
                            "halfway from 1x to {positions}x on a log scale)."),
    "spec_ex_ratio_why_no": ("A pass pays for reading the weights and a fixed overhead per pass (most of it, on this "
                             "small model); more positions pay them once."),
    "spec_ex_ratio_why_yes": ("Here the extra positions cost compute of their own: this pass is no longer bound by "
                              "reading the weights or by its fixed overhead."),
    "spec_acc_alt": "Acceptance chart: {v} verify passes kept {kept} of {drafted} drafts, {x} tokens per target pass.",
    "phase_step_decode": "Decode {n}",
    "phase_step_verify": "Verify {n}",
}

"""Streamlit-only helpers for app.py and app_pages/: one module per concern.

    state        the session's keys (every one declared in DEFAULTS), repairs, one-shot messages
    resources    what the process caches: the model, traces (parsed once), figures, sweeps
    ui           building blocks: the error boundary, a figure with its download, metric cards, CSS
    frame        around every page: header, sidebar, loading the model
    run_panel    the lesson's prompt, lengths, token split and Run (streamed); the stored run
    stepping     one pass at a time: classroom stepping and the slow-motion replay
    compare      two runs of the session side by side, on the same axes
    sections     the lesson's sections, in the page's order
    lab, modes   the bottleneck lab page and its engine-modes section
    serving, serving_remote   the serving lab page; its probe of real servers and vLLM files

The in-page scripts are files of their own (classroom_keys.js, sketch_live.js), read once
at import. Anything that is not Streamlit-specific (limits, words, number formats, error
messages) lives in `lesson/` (`lesson.inputs`, `lesson.formats`, `lesson.text`, `lesson.messages`) so it can
be tested alone.
"""

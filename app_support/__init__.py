"""Streamlit-only helpers for app.py and app_pages/: one module per concern.

    state         the session's keys (every one declared in DEFAULTS), repairs, one-shot messages
    resources     what the process caches: the engine worker's client, the first view, figures, sweeps
    run_store     every run one frozen value, held once per process and looked up by id (sessions keep ids)
    ui            building blocks: the error boundary, a figure with its download, metric cards, CSS
    starting      a session's first words ("loading the model…"), drawn before the other modules are imported
    frame         around every page: header, sidebar, loading the model
    first_screens a class opening the lesson at once: every session's first figure before anyone's rest
    links         a link that reopens a state: the page's settings in the URL's query, and back
    run_panel     the lesson's prompt, lengths, token split and Run (streamed); the stored run
    stepping      one pass at a time: classroom stepping and the slow-motion replay
    class_position where the classroom's stepping stands (a pass, or the run's end) and its words
    presenter     the presenter view: one of the lesson's figures per screen, a pass at a time
    compare       two runs of the session side by side, on the same axes
    sections      the lesson's sections, in the page's order
    pass_floors   under the timeline: each pass as its floor on this machine's roofs + the rest, short and long
    gallery       recorded runs: open one from the gallery, drawn as the lesson draws a run
    slide_kit     the slide kit's downloads: every figure of the run shown, for slides
    exercises     the exercises page: predict, then measure
    speculative   the section after Decode: guessing first (speculative decoding) run live, and its two exercises
    quantization  the lesson's last section: weight formats as measured, and its two exercises
    lab, modes    the bottleneck lab page and its engine-modes section
    serving, serving_remote, prefix_cache   the serving lab page; its probe of real servers and vLLM files;
                  its prefix-caching part

The in-page scripts are files of their own (classroom_keys.js, sketch_live.js, read_on.js, tidy_address.js,
wait_clock.js, streamlit_words.js), read once at import. Anything that is not Streamlit-specific (limits,
words, number formats, error messages) lives in `lesson/` (`lesson.inputs`, `lesson.formats`, `lesson.text`,
`lesson.messages`) so it can be tested alone.
"""

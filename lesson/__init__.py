"""lesson/: pure renderers for the Prefill/Decode lesson.

Plain values in (a `engine.contract.trace.RequestTrace`, or lengths for the schematic
views), SVG strings / plotly figures / text out. Nothing here runs a model,
imports torch or streamlit, or touches files; `lesson.export` is the one
command-line door that runs the engine once and writes the diagrams.

    from lesson.diagrams import DIAGRAMS, render_blocks_schematic
    svg = DIAGRAMS["timeline"](trace, lang="en")
"""

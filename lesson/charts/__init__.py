"""Plotly figures for the app: the same numbers as the SVGs (lesson/diagrams/), with hover details.

Imported by the app only, inside the functions that draw (plotly is heavier than svgwrite); the SVG
renderers never import this package.

    run.py      a run's latency and KV-cache charts (the lesson page)
    lab.py      the roofline, every pass against its floor, the sweeps (the bottleneck lab)
    modes.py    the engine modes, one row per mode (the lab's engine-modes section)
    serving.py  the serving Gantt with hover (the serving lab)
    probe.py    a probed server's own metrics over time (the serving lab)
    common.py   what they share: fonts, classroom type, labels plotly does not read as markup
"""

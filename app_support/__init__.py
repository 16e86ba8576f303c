"""Streamlit-only helpers for app.py: caching, widgets and the page's sections.

Anything that is not Streamlit-specific (limits, messages, number formats)
lives in `lesson/` (`lesson.views`, `lesson.text`) so it can be tested alone.
"""

"""Recorded runs in words: the label that says a run was measured earlier (and where), the gallery's
entries named, and the caption and note beside each figure (the pages draw a recorded run with the
renderers that draw a live one).

Pure: plain values in, Markdown / plain text out. Whatever a file says (a machine's name, a
version) is data: Markdown-escaped where it is shown as Markdown, plain text in an alt text.
"""

from __future__ import annotations

import re

from engine.contract.recorded import GalleryEntry
from engine.contract.serving.trace import POLICIES
from engine.contract.trace import Provenance

from .diagrams.serving_gantt import policy_label, scenario_label
from .formats import escape_markdown
from .text import LANGUAGE_NAMES, t

ISO_UTC = re.compile(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)Z")


# --- when and where ------------------------------------------------------------------------

def recorded_when(provenance: Provenance) -> str:
    """"2025-06-01 14:03 UTC" from the ISO time the engine writes (anything else as it is)."""
    match = ISO_UTC.fullmatch(provenance.recorded_at)
    if not match:
        return provenance.recorded_at
    y, mo, d, h, mi, _ = match.groups()
    return f"{y}-{mo}-{d} {h}:{mi} UTC"


def recorded_stamp(provenance: Provenance | None) -> str:
    """The recording's time as a download stamp, "YYYYmmdd-HHMMSS" (UTC); "recorded" when not known."""
    match = ISO_UTC.fullmatch(provenance.recorded_at) if provenance else None
    return "{}{}{}-{}{}{}".format(*match.groups()) if match else "recorded"


def _where(provenance: Provenance, markdown: bool) -> dict[str, str]:
    """The provenance's fields for a sentence: escaped for Markdown, or plain for an alt text."""
    plain = {"machine": provenance.machine, "device": provenance.device, "torch": provenance.torch_version or "?",
             "transformers": provenance.transformers_version or "?", "when": recorded_when(provenance),
             "clock": recorded_when(provenance)[11:16]}
    return {k: escape_markdown(v) for k, v in plain.items()} if markdown else plain


def recorded_note(provenance: Provenance | None, lang: str) -> str:
    """The run panel's label (Markdown): a recorded run, with its machine, device, versions and date."""
    return t(lang, "rec_note", **_where(provenance, True)) if provenance else t(lang, "rec_note_unknown")


def first_view_note(provenance: Provenance | None, lang: str) -> str:
    """The label of the server's first view (Markdown): recorded at HH:MM on which machine, shown to all."""
    return t(lang, "rec_first_view", **_where(provenance, True)) if provenance else t(lang, "rec_note_unknown")


def figure_note(provenance: Provenance | None, lang: str) -> str:
    """The caption line under each figure of a recorded run (Markdown)."""
    return t(lang, "rec_figure", **_where(provenance, True)) if provenance else t(lang, "rec_figure_unknown")


def recorded_alt(alt: str, provenance: Provenance | None, lang: str) -> str:
    """A figure's alt text (plain), followed by where and when the run was recorded."""
    if provenance is None:
        return f"{alt} {t(lang, 'rec_figure_unknown')}"
    return f"{alt} {t(lang, 'rec_alt', **_where(provenance, False))}"


def recorded_stem(stem: str, provenance: Provenance | None) -> str:
    """A download name that says the run is recorded, and on which device: "recorded-cpu_<stem>"."""
    device = re.sub(r"[^a-z0-9]+", "-", provenance.device.lower()).strip("-") if provenance else ""
    return f"recorded-{device or 'unknown'}_{stem}"


def history_label(label: str, provenance: Provenance | None, lang: str) -> str:
    """A run's label in the session's history, marked as recorded (plain text: a picker shows it as typed)."""
    when = recorded_when(provenance) if provenance else "?"
    return t(lang, "rec_history_label", when=when, label=label)


# --- the gallery's entries -------------------------------------------------------------------

def with_note(caption: str | None, note: str | None) -> str | None:
    """A figure's caption with the recorded line under it (one caption, two paragraphs)."""
    if not note:
        return caption
    return f"{caption}\n\n{note}" if caption else note


def _facts(entry: GalleryEntry, lang: str) -> dict[str, str]:
    """An entry's facts (its index's `about`), with its machine and date, each ready for a sentence."""
    prov = entry.provenance
    facts = {k: str(v) for k, v in entry.about}
    facts.update(machine=prov.machine if prov else "?", when=recorded_when(prov) if prov else "?")
    facts["scenario"] = scenario_label(lang, facts["scenario"]) if facts.get("scenario") else "?"
    language = facts.pop("lang", "?")  # the example's language ("lang" is t()'s own argument)
    facts["language"] = LANGUAGE_NAMES.get(language, language)
    return facts


def entries_label(entries: tuple[GalleryEntry, ...], lang: str) -> str:
    """A picker's words for one choice: one run (entry_label), or a scenario's policies opened together."""
    if len(entries) == 1:
        return entry_label(entries[0], lang)
    return t(lang, "rec_entry_serving_set", n=len(entries), **_facts(entries[0], lang))


def entry_label(entry: GalleryEntry, lang: str) -> str:
    """One gallery entry in words for a picker (plain text): machine, date, and what the run is."""
    facts = _facts(entry, lang)
    if entry.kind == "serving_run":
        policy = facts.get("policy", "")
        facts["policy"] = policy_label(lang, policy) if policy in POLICIES else policy or "?"
    return t(lang, f"rec_entry_{entry.kind}", **facts)

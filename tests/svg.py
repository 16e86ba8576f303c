"""Readers of the SVG the figures draw: the namespace, a parser, elements by class, all text."""

from __future__ import annotations

import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"


def parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)


def with_class(root: ET.Element, *classes: str) -> list[ET.Element]:
    """Every element whose class attribute holds all of `classes`."""
    return [el for el in root.iter() if set(classes) <= set(el.get("class", "").split())]


def all_text(root: ET.Element) -> str:
    """The figure's words: every <text>'s content, joined by spaces."""
    return " ".join("".join(el.itertext()) for el in root.iter(f"{SVG}text"))

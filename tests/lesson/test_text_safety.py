"""Hostile text cannot inject markup, and control characters stay visible."""

import xml.etree.ElementTree as ET

import pytest

from lesson.charts.run import latency_figure
from lesson.diagrams import DIAGRAMS
from lesson.svgtext import piece_label, visible
from tests.factories import make_trace

HOSTILE = (
    "</text><script>alert(1)</script>",
    '" onload="alert(1)',
    "<svg onload=alert(1)>",
    "&amp;&lt;]]>",
    "😀👩‍💻",
    "مرحبا بالعالم",  # right-to-left
    "שלום",
    "\x00\x01\x07\x1b\x7f",
    "tab\there\nnew\rline",
    "\u202eevil\u202c",  # right-to-left override
    "\ud800",  # lone surrogate
    "\x85\x9f",  # C1 controls
)


@pytest.fixture(scope="module")
def hostile_trace():
    return make_trace(HOSTILE[:6], HOSTILE[6:] + ("end",), prompt="".join(HOSTILE))


def _check_no_script(svg: str) -> ET.Element:
    root = ET.fromstring(svg)  # parses: no stray markup, no invalid XML characters
    for el in root.iter():
        assert not el.tag.lower().endswith("script")
        assert not el.tag.lower().endswith("foreignobject")
        for name in el.attrib:
            assert not name.split("}")[-1].lower().startswith("on"), (el.tag, name)
    return root


@pytest.mark.parametrize("name", sorted(DIAGRAMS))
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_hostile_text_is_escaped(name, lang, hostile_trace):
    root = _check_no_script(DIAGRAMS[name](hostile_trace, lang=lang))
    text = " ".join(root.itertext())
    if name in ("timeline", "animation"):
        assert "</text><script>" in text  # shown as text, not dropped
        assert "😀" in text and "مرحبا" in text
        assert "\u2400" in text and "\u240a" in text  # NUL and LF as control pictures


def test_visible_maps_every_c0_control():
    mapped = visible("".join(chr(c) for c in range(32)) + "\x7f")
    assert mapped == "".join(chr(0x2400 + c) for c in range(32)) + "\u2421"


def test_visible_keeps_text_and_marks_the_rest():
    assert visible("法国 Paris 😀") == "法国 Paris 😀"
    assert visible("\x85") == "\ufffd" and visible("\ud800") == "\ufffd"
    assert visible("\u202eabc") == "\u27eaRLO\u27ebabc"
    for ch in map(chr, list(range(0x3000)) + list(range(0xD800, 0xE000)) + [0xFFFE, 0xFFFF, 0x1F600]):
        out = visible(ch)
        assert out  # never dropped
        if ch in "\t\n\r":
            assert out != ch


def test_piece_label_shows_spaces_and_empties():
    assert piece_label(" Paris") == "\u2423Paris"
    assert piece_label("") == "\u2205"
    assert len(piece_label("x" * 50, max_chars=10)) == 10


def test_plotly_hover_escapes_pieces(hostile_trace):
    hover = " ".join(latency_figure(hostile_trace, "en").data[0].hovertext)
    assert "<script" not in hover and "<svg" not in hover and "&lt;/text&gt;&lt;s" in hover

"""app_support/overflow_address.js, run under Node with a stand-in `window`: an address whose query is
past Streamlit's bounds is opened again with its language and its count only; any other is left alone.
Skipped where no Node is installed (the page's own browser runs it in tests/browser)."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from app_support.links import OVERFLOW_JS

NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="no Node.js")


def run(search: str) -> str | None:
    """Where the script sends the page for an address with `search` (None: left alone)."""
    stand_in = ("let went = null; const window = {location: {search: " + json.dumps(search) +
                ", pathname: '/lab', hash: '#part', replace: (url) => { went = url; }}};")
    harness = "\n".join((stand_in, OVERFLOW_JS, "console.log(JSON.stringify(went));"))
    out = subprocess.run([NODE, "-"], input=harness, capture_output=True, text=True, timeout=30, check=True)
    return json.loads(out.stdout)


def test_a_query_past_streamlits_bounds_is_opened_again_with_its_language_and_count_only():
    many = "?" + "&".join(f"x{i}=<b>{i}</b>" for i in range(10_000)) + "&lang=en"
    assert run(many) == "/lab?lang=en&link_dropped=10001#part"
    assert run("?lang=fr&" + "&".join(["y=1"] * 1200)) == "/lab?link_dropped=1201#part"  # a language it lacks


def test_every_other_address_is_left_alone():
    assert run("") is None
    assert run("?lang=en&prompt=hi") is None
    assert run("?" + "&".join(["y=1"] * 1000)) is None  # at the bound: Streamlit reads it

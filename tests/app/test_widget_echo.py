"""A page run sends a widget's value to the browser only when the page changed it (app_support/state.repair).

Streamlit sends a widget's value back to the browser whenever the script wrote its key in that run. A run
that began before a click and wrote the old value sent it back after the click: the box the visitor had
just ticked showed unticked, and the Run pressed next ran without it (seen in the browser lane on a busy
CI machine: the classroom's 8 passes came out as the answer's 3).
"""

from __future__ import annotations

from tests.app.apptest import EXERCISES, LAB, SERVING_LAB, assert_healthy, needs_model, read_on


def widgets(at) -> dict[str, bool]:
    """Each widget on the page that the visitor can change (its key, else its id): whether this run sent
    its value to the browser. (Streamlit sends a disabled widget's value each run; no click can race it.)"""
    def walk(node):
        for child in getattr(node, "children", {}).values():
            yield child
            yield from walk(child)

    return {getattr(element, "key", None) or element.proto.id: bool(element.proto.set_value)
            for root in (at.main, at.sidebar) for element in walk(root)
            if hasattr(getattr(element, "proto", None), "set_value") and not element.proto.disabled}


@needs_model
def test_no_run_after_the_first_sends_a_widget_its_own_value(app):
    assert_healthy(app)
    steps = {
        "the same page again": lambda at: at.run(),
        "read on": read_on,
        "a box ticked": lambda at: at.checkbox(key="ignore_eos").check().run(),
        "Run": lambda at: at.button(key="run").click().run(),
        "the classroom on": lambda at: at.toggle(key="classroom").set_value(True).run(),
        "the bottleneck lab": lambda at: at.switch_page(LAB).run().run(),
        "the serving lab": lambda at: at.switch_page(SERVING_LAB).run().run(),
        "the exercises": lambda at: at.switch_page(EXERCISES).run().run(),
    }
    for name, step in steps.items():
        before = widgets(app)
        step(app)
        assert_healthy(app)
        # A widget drawn for the first time gets its value from the session: that is no echo.
        assert [key for key, sent in widgets(app).items() if sent and key in before] == [], name

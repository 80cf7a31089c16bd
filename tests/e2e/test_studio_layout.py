"""The Studio's layout in a narrow output, in a real browser (Chromium), without a Jupyter server.

The built widget (``anvia_notebook/static``) is mounted in a blank page with a fake model that
answers the widget's ``sync`` as the kernel of a Studio does (a snapshot, then the studio
message); layout is then measured, which jsdom cannot do.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page

pytestmark = pytest.mark.e2e

STATIC = Path(__file__).resolve().parents[2] / "anvia_notebook" / "static"

MOUNT = """
async ({ messages, code }) => {
  const url = URL.createObjectURL(new Blob([code], { type: "text/javascript" }));
  const widget = (await import(url)).default;
  const handlers = {};
  const model = {
    get: (name) => (name === "mode" ? "studio" : name === "_anvia_key" ? "layout" : undefined),
    on: (event, cb) => { (handlers[event] ||= []).push(cb); },
    off: () => {},
    send: (msg) => {
      if (msg.type !== "sync") return;
      setTimeout(() => {
        for (const m of messages)
          for (const cb of handlers["msg:custom"] || []) cb({ ...m, request_id: msg.request_id }, []);
        for (const cb of handlers["msg:custom"] || [])
          cb({ type: "reply", request_id: msg.request_id, ok: true, error: null }, []);
      }, 0);
    },
  };
  widget.initialize({ model });
  widget.render({ model, el: document.getElementById("out") });
}
"""

LONG_PROMPT = "Q" * 400


def studio_messages() -> list[dict[str, object]]:
    status = {
        "state": "idle",
        "turn": 0,
        "input_tokens": 0,
        "output_tokens": 0,
        "error": None,
        "agent_id": "support",
    }
    return [
        {"type": "snapshot", "seq": 0, "transcript": {"entries": [], "status": status, "seq": 0}},
        {
            "type": "studio",
            "agents": [
                {"id": "support", "name": "Customer support escalation desk", "description": None},
                {"id": "refunds", "name": "Refunds", "description": None},
            ],
            "selected": "support",
            "quick_prompts": {"support": ["Hello", "Where is my order?", LONG_PROMPT]},
            "busy": False,
            "sessions": [
                {
                    "id": f"s{i}",
                    "agent_id": "support",
                    "title": "A fairly ordinary first question about my order status please " * 2,
                    "updated_at": "2026-12-01T10:00:00+00:00",
                }
                for i in range(3)
            ],
        },
    ]


@pytest.fixture
def blank(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 600, "height": 800})
    page = context.new_page()
    try:
        yield page
    finally:
        context.close()


@pytest.mark.parametrize("width", [420, 220])
def test_the_studio_header_and_quick_prompts_fit_a_narrow_output(blank: Page, width: int):
    """At 600 px (JupyterLab's output area about 420 px wide) the "Earlier sessions" picker
    stuck out of the widget (its label grew with its select, which measured its 100% against
    that label), and a long quick prompt stayed on one line, far past the widget's edge."""
    blank.set_content(
        f"<style>{(STATIC / 'widget.css').read_text()}</style>"
        f'<div id="out" style="width: {width}px; overflow: hidden"></div>'
    )
    code = (STATIC / "widget.js").read_text()
    blank.evaluate(MOUNT, {"messages": studio_messages(), "code": code})
    blank.get_by_role("combobox", name="Earlier sessions").wait_for()
    blank.get_by_role("button", name=LONG_PROMPT).wait_for()
    overflow = blank.evaluate(
        """() => {
          const root = document.querySelector('.anvia-root').getBoundingClientRect();
          return [...document.querySelectorAll('.anvia-root *')]
            .filter((el) => el.getBoundingClientRect().width > 0)
            .map((el) => [el.tagName + '.' + el.className + ' ' + (el.getAttribute('aria-label') || ''),
                          Math.round(el.getBoundingClientRect().right - root.right)])
            .filter(([, past]) => past > 0);
        }"""
    )
    assert overflow == []
    # Still usable: the pickers keep some width, the long prompt shows all its text.
    for name in ("Agent", "Earlier sessions"):
        box = blank.get_by_role("combobox", name=name).bounding_box()
        assert box is not None and box["width"] >= 40, name
    assert (
        blank.get_by_role("button", name=LONG_PROMPT).inner_text().replace("\n", "") == LONG_PROMPT
    )

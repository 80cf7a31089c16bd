"""The approval card's layout in a real browser (Chromium), without a Jupyter server.

The built widget (``anvia_notebook/static``) is mounted in a blank page with a fake model that
answers the widget's ``sync`` with a snapshot; layout is then measured, which jsdom cannot do.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page

pytestmark = pytest.mark.e2e

STATIC = Path(__file__).resolve().parents[2] / "anvia_notebook" / "static"
MB = 1_000_000
VIEWPORT = {"width": 1000, "height": 800}

MOUNT = """
async ({ snapshot, code }) => {
  const url = URL.createObjectURL(new Blob([code], { type: "text/javascript" }));
  const widget = (await import(url)).default;
  const handlers = {};
  const model = {
    get: (name) => (name === "mode" ? "transcript" : undefined),
    on: (event, cb) => { (handlers[event] ||= []).push(cb); },
    off: () => {},
    send: (msg) => {
      window.sent.push(msg);
      if (msg.type === "sync") {
        setTimeout(() => {
          for (const cb of handlers["msg:custom"] || []) cb({ ...snapshot, request_id: msg.request_id }, []);
          for (const cb of handlers["msg:custom"] || []) cb({ type: "reply", request_id: msg.request_id, ok: true, error: null }, []);
        }, 0);
      }
    },
  };
  window.sent = [];
  widget.initialize({ model });
  widget.render({ model, el: document.getElementById("out") });
}
"""


def snapshot(reason: str, args: dict[str, object]) -> dict[str, object]:
    entry = {
        "kind": "tool",
        "id": "e1",
        "turn": 1,
        "tool_name": "issue_refund",
        "tool_call_id": "c1",
        "arguments": json.dumps(args),
        "status": "approval_required",
        "result": None,
        "is_error": False,
        "output": "",
        "approval": {
            "id": "ap_1",
            "status": "pending",
            "reason": reason,
            "args": args,
            "decided_by": None,
            "decided_at": None,
            "decision_reason": None,
            "edited_args": None,
        },
        "question": None,
    }
    status = {
        "state": "waiting",
        "turn": 1,
        "input_tokens": 0,
        "output_tokens": 0,
        "error": None,
        "agent_id": "shop",
    }
    transcript = {"entries": [entry], "status": status, "seq": 0}
    return {"type": "snapshot", "seq": 0, "transcript": transcript}


@pytest.fixture
def blank(browser: Browser) -> Iterator[Page]:
    if not (STATIC / "widget.js").exists():
        pytest.fail("the widget is not built: run `npm run build` in js/")
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    page.set_content(f'<style>{(STATIC / "widget.css").read_text()}</style><div id="out"></div>')
    try:
        yield page
    finally:
        context.close()


def offsets(page: Page) -> dict[str, float]:
    """Where the Approve and Reject buttons sit, in px below the top of the approval card."""
    return page.evaluate(
        """() => {
          const card = document.querySelector('[role="alertdialog"]');
          const top = card.getBoundingClientRect().top;
          const at = (label) => [...card.querySelectorAll("button")]
            .find((b) => b.textContent === label).getBoundingClientRect().bottom - top;
          return { approve: at("Approve"), reject: at("Reject") };
        }"""
    )


def test_a_megabyte_reason_and_arguments_leave_the_buttons_in_the_first_screen(blank: Page):
    reason = "Please check this refund carefully. " * (MB // 36)
    args = {"order_id": "A-1001", "note": "x" * MB}
    code = (STATIC / "widget.js").read_text()
    blank.evaluate(MOUNT, {"snapshot": snapshot(reason, args), "code": code})
    blank.get_by_role("button", name="Approve").wait_for()
    screen = VIEWPORT["height"]
    assert max(offsets(blank).values()) < screen, offsets(blank)
    # Unfolding the reason and the arguments keeps them bounded (they scroll inside).
    more = blank.get_by_role("button", name="Show more")
    assert more.count() == 2
    while more.count():
        more.first.click()
    assert blank.get_by_role("button", name="Show less").count() == 2
    assert max(offsets(blank).values()) < screen, offsets(blank)

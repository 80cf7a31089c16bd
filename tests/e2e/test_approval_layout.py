"""The approval card's layout, and the keyboard in a question form, in a real browser
(Chromium), without a Jupyter server.

The built widget (``anvia_notebook/static``) is mounted in a blank page with a fake model that
answers the widget's ``sync`` with a snapshot; layout is then measured, which jsdom cannot do.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

pytestmark = pytest.mark.e2e

STATIC = Path(__file__).resolve().parents[2] / "anvia_notebook" / "static"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "protocol"
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


def snapshot(
    reason: str, args: dict[str, object], question: dict[str, object] | None = None
) -> dict[str, object]:
    entry: dict[str, object] = {
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
    if question is not None:  # a pending question instead of the approval
        entry.update(status="input_required", approval=None, question=question)
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


def test_a_form_s_fields_of_fixed_values_have_no_custom_box_and_the_keyboard_answers_them(
    blank: Page,
):
    """An MCP server's form (the shared fixture): the enum and Yes/No questions show no custom
    answer box; keys alone answer every question, and focus is never left on a hidden box."""
    message = json.loads((FIXTURES / "batch_patch_mcp_form_question.json").read_text())
    question = message["ops"][0]["changes"]["question"]
    code = (STATIC / "widget.js").read_text()
    blank.evaluate(MOUNT, {"snapshot": snapshot("", {}, question), "code": code})
    box = blank.get_by_placeholder("Type a custom answer")
    focused = "() => document.activeElement?.textContent"
    blank.get_by_role("button", name="Large").wait_for()
    expect(box).to_be_hidden()
    blank.get_by_role("button", name="Large").focus()
    blank.keyboard.press("Enter")
    expect(blank.get_by_text("Outdoor: Sit outside?")).to_be_visible()
    expect(box).to_be_hidden()
    assert blank.evaluate(focused) == "Yes"  # the first choice: no box to type in
    blank.keyboard.press("Tab")
    blank.keyboard.press("Space")
    expect(blank.get_by_text("Guests: How many guests")).to_be_visible()
    expect(box).to_be_focused()  # no choices: the box
    blank.keyboard.type("4")
    blank.keyboard.press("Enter")
    expect(blank.get_by_text("Note: Anything else")).to_be_visible()
    expect(box).to_be_focused()
    blank.keyboard.press("Shift+Tab")
    assert blank.evaluate(focused) == "Leave blank"
    blank.keyboard.press("Enter")  # the last question stays
    expect(blank.get_by_text("4/4 answered")).to_be_visible()
    blank.get_by_role("button", name="Back").click()
    blank.get_by_role("button", name="Back").click()
    blank.get_by_role("button", name="Back").click()
    expect(blank.get_by_text("Size: Table size")).to_be_visible()
    expect(box).to_be_hidden()
    blank.get_by_role("button", name="Submit answers").click()
    sent = blank.evaluate("() => window.sent.filter((m) => m.type === 'question_answers')")
    assert [m["answers"] for m in sent] == [
        [
            {"questionId": "size", "answer": "large", "choice": "large"},
            {"questionId": "outdoor", "answer": "false", "choice": "false"},
            {"questionId": "guests", "answer": "4", "custom": True},
            {"questionId": "note", "answer": "(blank)", "choice": "(blank)"},
        ]
    ]


def test_a_long_question_with_many_choices_keeps_the_question_in_view(blank: Page):
    """A 2,200-character question with 60 long choices: the form was as tall as its content
    (about 4,900 px), and the transcript, kept at its bottom, showed the last choices and
    Submit with the question 4,300 px above them. Its text and its choices now scroll inside."""
    choices = [
        {
            "label": f"Option {i}: " + "a rather long description of this choice " * 5,
            "value": f"v{i}",
        }
        for i in range(60)
    ]
    question = {
        "id": "q_1",
        "status": "pending",
        "questions": [
            {"id": "pick", "question": "Which plan fits? " + "Context. " * 240, "choices": choices},
            {"id": "why", "question": "Why?", "choices": []},
            {"id": "when", "question": "When?", "choices": []},
        ],
        "answers": [],
        "decided_by": None,
        "decided_via": None,
        "declinable": False,
    }
    code = (STATIC / "widget.js").read_text()
    blank.evaluate(MOUNT, {"snapshot": snapshot("", {}, question), "code": code})
    blank.get_by_role("button", name="Submit answers").wait_for()
    blank.wait_for_function(  # (the transcript keeps to its bottom, as a run's does)
        """() => {
          const l = document.querySelector(".anvia-transcript");
          return l.scrollHeight - l.scrollTop - l.clientHeight <= 2;
        }"""
    )
    seen = blank.evaluate(
        """() => {
          const list = document.querySelector(".anvia-transcript").getBoundingClientRect();
          const at = (el) => el.getBoundingClientRect();
          const inside = (r) => r.top >= list.top - 1 && r.bottom <= list.bottom + 1;
          const form = document.querySelector(".anvia-question-pending");
          const submit = [...form.querySelectorAll("button")]
            .find((b) => b.textContent === "Submit answers");
          return {
            progress: inside(at(form.querySelector(".anvia-question-progress"))),
            text: inside(at(form.querySelector(".anvia-question-text"))),
            box: inside(at(form.querySelector(".anvia-custom-answer"))),
            submit: inside(at(submit)),
          };
        }"""
    )
    assert seen == {"progress": True, "text": True, "box": True, "submit": True}
    # every choice can still be reached and chosen (the list scrolls)
    last = blank.get_by_role("button", name="Option 59: a rather long", exact=False)
    last.click()
    expect(blank.get_by_text("Question 2 of 3")).to_be_visible()


def test_the_card_fits_an_output_area_narrower_than_its_inputs(blank: Page):
    """In a narrow notebook (600 px, the file browser open) the reason box stuck out of the
    card, past the output area's edge: the transcript scrolled sideways and cut the card."""
    blank.set_content(
        f"<style>{(STATIC / 'widget.css').read_text()}</style>"
        '<div id="out" style="width: 220px; overflow: hidden"></div>'
    )
    code = (STATIC / "widget.js").read_text()
    blank.evaluate(MOUNT, {"snapshot": snapshot("Refund?", {"order_id": "A-1"}), "code": code})
    blank.get_by_role("button", name="Approve").wait_for()
    overflow = blank.evaluate(
        """() => {
          const card = document.querySelector('[role="alertdialog"]').getBoundingClientRect();
          return [...document.querySelectorAll('[role="alertdialog"] input, [role="alertdialog"] button')]
            .map((el) => el.getBoundingClientRect().right - card.right)
            .filter((past) => past > 0.5);
        }"""
    )
    assert overflow == []


def test_a_double_click_on_a_choice_answers_only_its_own_question(blank: Page):
    """The first click of a double click picks the choice and shows the next question, whose
    first choice then sits under the pointer: the second click (click count 2) answered it too,
    unread, and the form moved on past it."""
    question = {
        "id": "q_1",
        "status": "pending",
        "questions": [
            {"id": "priority", "question": "What priority?", "choices": [
                {"label": "High", "value": "high"}, {"label": "Low", "value": "low"}]},
            {"id": "channel", "question": "Which channel?", "choices": [
                {"label": "Email", "value": "email"}, {"label": "Phone", "value": "phone"}]},
            {"id": "note", "question": "Anything else?", "choices": [{"label": "No", "value": "no"}]},
        ],
        "answers": [],
        "decided_by": None,
        "decided_via": None,
        "declinable": False,
    }  # fmt: skip
    code = (STATIC / "widget.js").read_text()
    blank.evaluate(MOUNT, {"snapshot": snapshot("", {}, question), "code": code})
    blank.get_by_role("button", name="High").dblclick()
    expect(blank.get_by_text("Question 2 of 3")).to_be_visible()
    expect(blank.get_by_text("1/3 answered")).to_be_visible()
    expect(blank.get_by_role("button", name="Email")).to_have_attribute("aria-pressed", "false")
    blank.get_by_role("button", name="Email").click()  # a click of its own picks it
    expect(blank.get_by_text("2/3 answered")).to_be_visible()

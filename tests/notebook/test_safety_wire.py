"""Safety paths of the widget's wire messages, checked by what happens (not by wording).

- Rejecting with "Always allow" ticked allows nothing: the next call of that tool still asks.
- A decision for an approval this widget never showed (another run's, or no one's) is refused
  and changes nothing: the real pending approvals stay pending and can still be decided.
- A blank answer is refused (cleanly, not as an internal failure); the question stays pending
  and a valid answer afterwards still works.
"""

from __future__ import annotations

import json
import logging

import pytest
from notebook_helpers import Page, finished, pending_approval, pending_question, refund_tool, until

from anvia_notebook import AgentBuilder, ask_question
from anvia_notebook.models import ModelResponse, QueueModel, ToolCall
from anvia_notebook.notebook import WidgetHumanInput
from anvia_notebook.notebook import _runner as runner


def refund_call(call_id: str, order_id: str) -> ModelResponse:
    return ModelResponse(
        tool_calls=[
            ToolCall(id=call_id, name="issue_refund", arguments={"order_id": order_id, "amount": 1})
        ]
    )


def approval_of(page: Page, index: int) -> dict | None:
    tools = page.tools()
    return tools[index]["approval"] if len(tools) > index else None


async def test_rejecting_with_always_allow_ticked_still_asks_for_the_next_call():
    tool = refund_tool()
    model = QueueModel([refund_call("c1", "A"), refund_call("c2", "B"), "Done."])
    agent = AgentBuilder("shop", model).tools([tool]).build()
    handle = runner.show(agent.prompt("two refunds"))
    page = Page(handle.widget)
    await page.sync()
    first = await pending_approval(page)
    reply = await page.approve(first["approval"]["id"], approved=False, always_allow=True)
    assert reply["ok"], reply

    # The model calls the same tool again: it must wait for a person, not run by policy.
    second = await until(lambda: approval_of(page, 1) or handle.done, what="the second call")
    assert second is not True, "the run ended without asking about the second call"
    assert second["status"] == "pending"
    assert handle.status == "waiting"
    assert tool.calls == []
    assert page.tools()[0]["approval"]["status"] == "rejected"

    # It is still the person's call.
    assert (await page.approve(second["id"]))["ok"]
    await handle
    await finished(handle)
    assert [c.order_id for c in tool.calls] == ["B"]
    assert [t["approval"]["decided_by"] for t in page.tools()] == ["human", "human"]


async def test_a_refused_approval_with_always_allow_ticked_allows_nothing():
    """Edited arguments the tool refuses: the decision is refused, and so is the box's rule;
    the approval and the next call of that tool still wait for a person."""
    tool = refund_tool()
    model = QueueModel([refund_call("c1", "A"), refund_call("c2", "B"), "Done."])
    handle = runner.show(AgentBuilder("shop", model).tools([tool]).build().prompt("two refunds"))
    page = Page(handle.widget)
    await page.sync()
    first = await pending_approval(page)
    bad = {"order_id": "A", "amount": "lots"}
    reply = await page.approve(first["approval"]["id"], edited_args=bad, always_allow=True)
    assert reply["ok"] is False
    assert handle.session.human_input.always_allowed == set()  # the box's rule was not kept
    assert (await page.approve(first["approval"]["id"]))["ok"]  # no box this time
    second = await until(lambda: approval_of(page, 1) or handle.done, what="the second call")
    assert second is not True, "the run ended without asking about the second call"
    assert second["status"] == "pending"
    assert [c.order_id for c in tool.calls] == ["A"]
    assert (await page.approve(second["id"], approved=False))["ok"]
    await handle
    await finished(handle)
    assert [c.order_id for c in tool.calls] == ["A"]


async def test_a_decision_for_an_approval_this_widget_never_showed_changes_nothing():
    # Two runs shown in two widgets share one WidgetHumanInput (set on their agents).
    human = WidgetHumanInput()
    tools = [refund_tool(), refund_tool()]
    handles = [
        runner.show(
            AgentBuilder(f"shop{n}", QueueModel([refund_call("c1", f"order-{n}"), "Done."]))
            .tools([tools[n]])
            .human_input(human)
            .build()
            .prompt("refund")
        )
        for n in range(2)
    ]
    pages = [Page(h.widget) for h in handles]
    for page in pages:
        await page.sync()
    ids = [(await pending_approval(page))["approval"]["id"] for page in pages]
    assert ids[0] != ids[1]

    # Widget 0 tries to approve run 1's approval, then one nobody ever showed.
    for foreign in (ids[1], "approval_never_shown"):
        reply = await pages[0].approve(foreign, always_allow=True)
        assert reply["ok"] is False

    for page, handle in zip(pages, handles, strict=True):
        await page.sync()
        assert page.tools()[0]["approval"]["status"] == "pending"
        assert handle.status == "waiting"
    assert tools[0].calls == [] and tools[1].calls == []

    # Each approval is still decidable, from its own widget only.
    assert (await pages[1].approve(ids[1]))["ok"]
    assert (await pages[0].approve(ids[0], approved=False))["ok"]
    for handle in handles:
        await handle
        await finished(handle)
    assert [c.order_id for c in tools[1].calls] == ["order-1"]
    assert tools[0].calls == []
    assert [p.tools()[0]["approval"]["status"] for p in pages] == ["rejected", "approved"]


QUESTIONS = {
    "questions": [
        {
            "id": "priority",
            "question": "Which priority?",
            "choices": [{"label": "High", "value": "high"}, {"label": "Low", "value": "low"}],
        }
    ]
}


@pytest.mark.parametrize("blank", ["", "   ", "\n\t"])
async def test_a_blank_answer_is_refused_and_the_question_stays_answerable(
    blank: str, caplog: pytest.LogCaptureFixture
):
    model = QueueModel(
        [
            ModelResponse(tool_calls=[ToolCall(id="q1", name="ask_question", arguments=QUESTIONS)]),
            "Escalated.",
        ]
    )
    agent = AgentBuilder("support", model).tools([ask_question]).build()
    handle = runner.show(agent.prompt("escalate"))
    page = Page(handle.widget)
    await page.sync()
    entry = await pending_question(page)
    question_id = entry["question"]["id"]

    caplog.set_level(logging.ERROR)
    for answer in (
        {"questionId": "priority", "answer": blank, "custom": True},
        {"questionId": "priority", "answer": blank},
    ):
        reply = await page.answer(question_id, [answer])
        assert reply["ok"] is False
    # A refusal, not an internal failure of the kernel.
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []

    await page.sync()
    assert page.state.by_id(entry["id"])["question"]["status"] == "pending"
    assert handle.status == "waiting"

    reply = await page.answer(
        question_id, [{"questionId": "priority", "answer": "high", "choice": "high"}]
    )
    assert reply["ok"], reply
    await handle
    await finished(handle)
    page.pump()
    done = page.state.by_id(entry["id"])
    assert done["question"]["status"] == "answered"
    assert json.loads(done["result"])["answers"] == [
        {"questionId": "priority", "answer": "high", "choice": "high"}
    ]


async def test_a_forged_approval_with_always_allow_ticked_is_refused_cleanly(caplog):
    """An id this run never showed, with the box ticked: refused, nothing logged as an error,
    nothing allowed; the real approval still waits for a person."""
    import logging

    tool = refund_tool()
    model = QueueModel([refund_call("c1", "A"), "Done."])
    handle = runner.show(AgentBuilder("shop", model).tools([tool]).build().prompt("refund"))
    page = Page(handle.widget)
    await page.sync()
    first = await pending_approval(page)
    caplog.set_level(logging.ERROR)
    reply = await page.approve("approval_forged", always_allow=True)
    assert reply["ok"] is False and "Unknown approval" in reply["error"]
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []
    assert handle.session.human_input.always_allowed == set()
    assert first["approval"]["status"] == "pending" and tool.calls == []
    assert (await page.approve(first["approval"]["id"], approved=False))["ok"]
    await handle
    await finished(handle)
    assert tool.calls == []


async def test_an_approval_clicked_just_after_stop_is_refused_and_nothing_runs(store_location):
    """Stop and Approve read together (one pump of the shell): Stop came first, so it decides
    (before: both were answered ok, the record said approved by the person, and the tool never
    ran)."""
    from anvia_notebook import RunStore

    tool = refund_tool()
    model = QueueModel([refund_call("c1", "A"), "Done."])
    handle = runner.show(AgentBuilder("shop", model).tools([tool]).build().prompt("refund"))
    page = Page(handle.widget)
    await page.sync()
    approval_id = (await pending_approval(page))["approval"]["id"]
    stop = page.post({"type": "stop", "reason": None})
    click = page.post(
        {
            "type": "approval_decision",
            "approval_id": approval_id,
            "approved": True,
            "reason": None,
            "edited_args": None,
            "always_allow": False,
        }
    )
    assert (await page.reply_to(stop))["ok"]
    refused = await page.reply_to(click)
    assert refused["ok"] is False and "being stopped" in refused["error"]
    await finished(handle)
    assert handle.status == "cancelled" and tool.calls == []
    approval = page.tools()[0]["approval"]
    assert (approval["status"], approval["decided_by"]) == ("cancelled", "stop")
    stored = RunStore(store_location).get(handle.run_id).approvals[approval_id]
    assert (stored.status, stored.decided_by) == ("cancelled", "stop")


@pytest.mark.parametrize("handler", [False, True])
async def test_an_id_sent_as_the_other_kind_is_refused_saying_so(handler):
    """A question's id in an approval decision (and an approval's in answers) is refused with
    what it is, before any other check (before: "Unknown approval", or that the approval
    handler decides this run's approvals); nothing is decided."""
    questions = {"questions": [{"id": "p", "question": "Priority?", "choices": ["High"]}]}
    tool = refund_tool()
    model = QueueModel(
        [
            ModelResponse(tool_calls=[ToolCall("q1", "ask_question", questions)]),
            refund_call("c1", "A"),
            "Done.",
        ]
    )
    builder = AgentBuilder("shop", model).tools([ask_question, tool])
    if handler:
        builder = builder.approvals(lambda request: True)
    handle = runner.show(builder.build().prompt("go"))
    page = Page(handle.widget)
    await page.sync()
    question_id = (await pending_question(page))["question"]["id"]
    refused = await page.approve(question_id)
    assert refused["error"] == f"{question_id!r} is a question, not an approval."
    answer = [{"questionId": "p", "answer": "High", "choice": "High"}]
    assert (await page.answer(question_id, answer))["ok"]
    if not handler:
        approval_id = (await pending_approval(page))["approval"]["id"]
        refused = await page.answer(approval_id, answer)
        assert refused["error"] == f"{approval_id!r} is an approval, not a question."
        assert (await page.approve(approval_id))["ok"]
    await handle
    await finished(handle)
    assert [c.order_id for c in tool.calls] == ["A"]


async def test_a_forged_id_of_a_megabyte_is_named_shortly_in_the_refusal():
    """A page that sends a huge id (or message type) gets a short refusal: before, the whole
    megabyte came back in the error, into the reply and the page's notice."""
    tool = refund_tool()
    model = QueueModel([refund_call("c1", "A"), "Done."])
    handle = runner.show(AgentBuilder("shop", model).tools([tool]).build().prompt("refund"))
    page = Page(handle.widget)
    await page.sync()
    await pending_approval(page)
    huge = "z" * 1_000_000
    replies = [
        await page.approve(huge),
        await page.answer(huge, [{"questionId": "q", "answer": "a"}]),
        await page.request("question_decline", question_id=huge),
        await page.request(huge),
    ]
    for reply in replies:
        assert reply["ok"] is False
        assert "zzzz" in reply["error"] and len(reply["error"]) < 300, reply["error"][:300]
    handle.cancel()
    await finished(handle)


async def test_a_64_bit_id_reaches_the_page_and_comes_back_exactly():
    """A browser's numbers round a whole number past 2**53: the page showed, and sent back in
    edited arguments, an id the model never asked for, and the tool ran with it."""
    from anvia_notebook import ToolApproval, tool

    ran: list[int] = []

    @tool(approval=ToolApproval())
    def cancel_order(order_id: int) -> str:
        """Cancel an order."""
        ran.append(order_id)
        return "cancelled"

    asked, edited = 9007199254740993, 9007199254740995
    model = QueueModel(
        [
            ModelResponse(tool_calls=[ToolCall("c1", "cancel_order", {"order_id": asked})]),
            ModelResponse(tool_calls=[ToolCall("c2", "cancel_order", {"order_id": asked})]),
            "Done.",
        ]
    )
    handle = runner.show(AgentBuilder("shop", model).tools([cancel_order]).build().prompt("go"))
    page = Page(handle.widget)
    await page.sync()
    first = (await pending_approval(page))["approval"]
    assert json.loads(first["args_json"]) == {"order_id": asked}  # exact, as text
    assert first["args"] == {"order_id": asked}  # (as a value too: a browser rounds this one)

    def decide(**fields):
        message = {"approval_id": first["id"], "approved": True, "reason": None}
        return page.request(
            "approval_decision", **{**message, "edited_args": None, "always_allow": False, **fields}
        )

    for text, refusal in [
        ('{"order_id": NaN}', "not valid JSON"),
        ("[1]", "must be a JSON object"),
        ('{"order_id": ', "not valid JSON"),
    ]:
        reply = await decide(edited_args_json=text)
        assert reply["ok"] is False and refusal in reply["error"], reply
    both = await decide(edited_args={"order_id": 1}, edited_args_json='{"order_id": 1}')
    assert both["ok"] is False and "once" in both["error"]
    assert (await decide(edited_args_json=f'{{"order_id": {edited}}}'))["ok"]
    second = await until(lambda: approval_of(page, 1), what="the second call")
    assert (await page.approve(second["id"]))["ok"]  # unedited: the model's id
    await handle
    assert ran == [edited, asked]
    decided = page.tools()[0]["approval"]
    assert json.loads(decided["edited_args_json"]) == {"order_id": edited}

"""The Studio (notebook Playground): quick prompts, multi-turn history, Stop, New session."""

from __future__ import annotations

import asyncio
import copy

import pytest
from notebook_helpers import Page, gated_model, pending_approval, refund_tool, sent, until

from anvia_notebook import Agent, AgentBuilder, Studio
from anvia_notebook.models import ModelResponse, QueueModel, ToolCall
from anvia_notebook.notebook._studio import BUSY


def make_studio() -> tuple[Studio, QueueModel]:
    model = QueueModel(["First answer.", "Second answer.", "Third answer."])
    support = AgentBuilder("support", model).name("Support").description("Helps.").build()
    other = AgentBuilder("other", QueueModel(["Other answer."])).build()
    studio = Studio([support, other], quick_prompts={"support": ["Where is my order?"]})
    return studio, model


async def idle(page: Page) -> None:
    await until(lambda: (page.pump(), page.studio and not page.studio["busy"])[1], what="idle")


async def always_allowed_after_refund_a(agent: Agent) -> tuple[Studio, Page]:
    """A Studio of ``agent`` (id ``shop``) sent "refund A", its approval approved with "Always
    allow" ticked, and the run ended."""
    studio = Studio([agent])
    page = Page(studio.widget)
    await page.sync()
    assert (await page.request("studio_send", agent_id="shop", text="refund A"))["ok"]
    entry = await pending_approval(page)
    assert (await page.approve(entry["approval"]["id"], always_allow=True))["ok"]
    await idle(page)
    return studio, page


async def send(page: Page, agent_id: str, text: str) -> None:
    """Send ``text`` to ``agent_id`` from the page's prompt box and wait until the run ended."""
    assert (await page.request("studio_send", agent_id=agent_id, text=text))["ok"]
    await idle(page)


async def test_studio_sync_sends_snapshot_then_studio_state(outputs, store_path):
    studio, _ = make_studio()
    studio.start()
    assert studio.widget.mode == "studio"
    assert len(outputs.shown()) == 1
    page = Page(studio.widget)
    await page.sync()
    assert page.state.entries == []
    assert page.state.status["state"] == "idle"
    assert page.state.status["agent_id"] == "support"
    assert page.studio == {
        "type": "studio",
        "agents": [
            {"id": "support", "name": "Support", "description": "Helps."},
            {"id": "other", "name": "other", "description": None},
        ],
        "selected": "support",
        "quick_prompts": {"support": ["Where is my order?"]},
        "busy": False,
        "sessions": [],
    }


async def test_quick_prompt_then_a_second_prompt_carries_the_history():
    studio, model = make_studio()
    page = Page(studio.widget)
    await page.sync()
    reply = await page.request("studio_send", agent_id="support", text="Where is my order?")
    assert reply["ok"], reply
    await idle(page)
    busy = [m["busy"] for m in sent(studio.widget) if m["type"] == "studio"]
    assert busy == [False, True, False]  # after sync, at the start, at the end
    reply = await page.request("studio_send", agent_id="support", text="Thanks, and then?")
    assert reply["ok"], reply
    await idle(page)
    assert [m.content for m in model.requests[1].messages] == [
        "Where is my order?",
        "First answer.",
        "Thanks, and then?",
    ]
    kinds = [(e["kind"], e["text"]) for e in page.state.entries]
    assert kinds == [
        ("user", "Where is my order?"),
        ("assistant", "First answer."),
        ("user", "Thanks, and then?"),
        ("assistant", "Second answer."),
    ]
    assert page.state.transcript() == studio.session.state()
    assert [m.role for m in studio.history()] == ["user", "assistant", "user", "assistant"]


async def test_busy_refusal_and_stop():
    gate = asyncio.Event()
    agent = AgentBuilder("slow", gated_model(gate)).build()
    studio = Studio([agent])
    page = Page(studio.widget)
    await page.sync()
    assert (await page.request("studio_send", agent_id="slow", text="go"))["ok"]
    refused = await page.request("studio_send", agent_id="slow", text="again")
    assert refused == {
        "type": "reply",
        "request_id": refused["request_id"],
        "ok": False,
        "error": BUSY,
    }
    assert (await page.request("studio_new_session"))["error"] == BUSY
    agents_picker = await page.request("studio_select", agent_id="slow")
    assert agents_picker["error"] == BUSY
    with pytest.raises(RuntimeError, match=BUSY):
        studio.select("slow")
    assert (await page.request("stop", reason=None))["ok"]
    await idle(page)
    assert page.state.status["state"] == "cancelled"
    assert page.state.entries[-1]["kind"] == "notice"
    again = await page.request("stop", reason=None)  # (a second view's): no error, stopped
    assert (again["ok"], again["error"]) == (True, None)
    # The cancelled exchange stays in the history (so the conversation stays whole).
    assert [m.role for m in studio.history("slow")][:2] == ["user", "assistant"]


async def test_new_session_clears_history_transcript_and_always_allow():
    tool = refund_tool()
    model = QueueModel(
        [
            ModelResponse(
                tool_calls=[
                    ToolCall(id="c1", name="issue_refund", arguments={"order_id": "A", "amount": 1})
                ]
            ),
            "Refunded A.",
            ModelResponse(
                tool_calls=[
                    ToolCall(id="c2", name="issue_refund", arguments={"order_id": "B", "amount": 2})
                ]
            ),
            "Refunded B.",
        ]
    )
    agent = AgentBuilder("shop", model).tools([tool]).build()
    studio, page = await always_allowed_after_refund_a(agent)
    assert "shop \u203a issue_refund" in studio.human_input.always_allowed

    assert (await page.request("studio_new_session"))["ok"]
    page.pump()
    assert page.state.entries == []
    assert page.state.status["state"] == "idle"
    assert studio.history() == []
    assert studio.human_input.always_allowed == set()

    assert (await page.request("studio_send", agent_id="shop", text="refund B"))["ok"]
    entry = await pending_approval(page)  # asked again: the old session's rule is gone
    assert [m.content for m in model.requests[2].messages] == ["refund B"]
    assert (await page.approve(entry["approval"]["id"]))["ok"]
    await idle(page)
    assert page.state.transcript() == studio.session.state()
    assert [c.order_id for c in tool.calls] == ["A", "B"]


async def test_studio_send_refuses_unknown_agents_and_empty_text():
    studio, _ = make_studio()
    page = Page(studio.widget)
    await page.sync()
    unknown = await page.request("studio_send", agent_id="ghost", text="hi")
    assert unknown["ok"] is False and "Unknown agent" in unknown["error"]
    empty = await page.request("studio_send", agent_id="support", text="   ")
    assert empty["ok"] is False
    assert page.state.entries == []


async def test_switching_agent_keeps_a_history_per_agent():
    studio, _ = make_studio()
    page = Page(studio.widget)
    await page.sync()
    await send(page, "support", "one")
    await send(page, "other", "two")
    assert page.studio is not None and page.studio["selected"] == "other"
    assert [m.content for m in studio.history("other")] == ["two", "Other answer."]
    assert [m.content for m in studio.history("support")] == ["one", "First answer."]
    # Each agent's conversation is its own transcript: the other agent's alone is on screen.
    texts = lambda: [(e["kind"], e["text"]) for e in page.state.entries]  # noqa: E731
    assert texts() == [("user", "two"), ("assistant", "Other answer.")]
    assert page.state.status["agent_id"] == "other"


async def test_picking_an_agent_shows_its_own_conversation_and_back():
    studio, _ = make_studio()
    page = Page(studio.widget)
    await page.sync()
    await send(page, "support", "one")
    support = [("user", "one"), ("assistant", "First answer.")]
    texts = lambda: [(e["kind"], e["text"]) for e in page.state.entries]  # noqa: E731
    assert texts() == support

    # The picker: the other agent's conversation (empty: its quick prompts would show).
    assert (await page.request("studio_select", agent_id="other"))["ok"]
    assert page.studio is not None and page.studio["selected"] == "other"
    assert page.state.entries == []
    assert page.state.status["agent_id"] == "other" and page.state.status["state"] == "idle"
    assert page.state.transcript() == studio.session.state()
    await send(page, "other", "two")
    assert texts() == [("user", "two"), ("assistant", "Other answer.")]
    inspected = await page.request("inspect", index=None)
    assert inspected["turn"]["response_text"] == "Other answer."

    # Back to the first agent: its conversation as it was, and Inspect reads its run.
    assert (await page.request("studio_select", agent_id="support"))["ok"]
    assert page.studio["selected"] == "support"
    assert texts() == support
    assert page.state.status["agent_id"] == "support"
    assert page.state.status["state"] == "success"
    inspected = await page.request("inspect", index=None)
    assert inspected["turn"]["response_text"] == "First answer."
    assert page.state.gaps == 0
    # A later prompt to it goes on in its own conversation, with its own history.
    await send(page, "support", "three")
    assert texts() == [*support, ("user", "three"), ("assistant", "Second answer.")]
    assert page.state.transcript() == studio.session.state()

    # From a cell too; refused for an unknown agent.
    studio.select("other")
    page.pump()
    assert texts() == [("user", "two"), ("assistant", "Other answer.")]
    unknown = await page.request("studio_select", agent_id="ghost")
    assert unknown["ok"] is False and "Unknown agent" in unknown["error"]
    with pytest.raises(ValueError, match="Unknown agent"):
        studio.select("ghost")


async def test_new_session_clears_every_agents_conversation():
    studio, _ = make_studio()
    page = Page(studio.widget)
    await page.sync()
    await send(page, "support", "one")
    await send(page, "other", "two")
    assert (await page.request("studio_new_session"))["ok"]
    assert page.state.entries == []
    # Inspect reads no run of the conversation that was cleared (before: the last one's).
    assert (await page.request("inspect", index=None))["error"] == "No run to inspect."
    assert (await page.request("studio_select", agent_id="support"))["ok"]
    assert page.state.entries == []
    assert studio.history("support") == []


def test_studio_validates_its_arguments():
    agent = AgentBuilder("a", QueueModel([])).build()
    with pytest.raises(ValueError, match="at least one"):
        Studio([])
    with pytest.raises(ValueError, match="unknown agents"):
        Studio([agent], quick_prompts={"b": ["x"]})
    with pytest.raises(ValueError, match="Two agents"):
        Studio([agent, agent])


async def test_picking_an_agent_while_a_run_is_in_progress_is_refused_and_changes_nothing():
    gate = asyncio.Event()
    studio = Studio(
        [
            AgentBuilder("slow", gated_model(gate)).build(),
            AgentBuilder("other", QueueModel([])).build(),
        ]
    )
    page = Page(studio.widget)
    await page.sync()
    assert (await page.request("studio_send", agent_id="slow", text="go"))["ok"]
    await until(
        lambda: (page.pump(), [e["text"] for e in page.state.entries] == ["go", "working"])[1],
        what="the run's first text",
    )
    assert studio.busy
    before = (copy.deepcopy(page.state.transcript()), copy.deepcopy(page.studio))
    shown = studio.session.transcript
    count = len(sent(studio.widget))

    with pytest.raises(RuntimeError, match=f"^{BUSY}$"):  # from a cell
        studio.select("other")
    refused = await page.request("studio_select", agent_id="other")  # the page's picker
    assert refused["ok"] is False and refused["error"] == BUSY
    # Nothing changed: the same agent and conversation, nothing sent but the refusal.
    assert studio.selected == "slow"
    assert studio.session.transcript is shown
    assert [m["type"] for m in sent(studio.widget)[count:]] == ["reply"]
    assert (page.state.transcript(), page.studio) == before

    gate.set()  # the run ends in the conversation it started in
    await idle(page)
    assert [(e["kind"], e["text"]) for e in page.state.entries] == [
        ("user", "go"),
        ("assistant", "working done"),
    ]
    assert studio.history("other") == []
    studio.select("other")  # and picking works again
    page.pump()
    assert page.state.entries == [] and page.studio["selected"] == "other"


async def test_the_saved_copy_labels_each_reply_with_its_agents_name_as_the_page(outputs):
    support = AgentBuilder("support", QueueModel(["First answer.", "Second answer."]))
    other = AgentBuilder("other", QueueModel(["Other answer."])).build()  # no name: its id
    studio = Studio([support.name("Support <desk>").build(), other])
    studio.start()
    page = Page(studio.widget)
    await page.sync()

    def saved() -> dict[str, str]:
        """What the saved notebook holds for the Studio's cell now."""
        return outputs.updates()[-1]["data"]

    await send(page, "support", "one")
    assert "Support <desk>: First answer." in saved()["text/plain"]
    assert (
        '<strong>Support &lt;desk&gt;</strong><div class="anvia-static-markdown">'
        in saved()["text/html"]
    )
    await send(page, "other", "two")
    assert saved()["text/plain"].splitlines()[1:] == ["You: two", "other: Other answer."]
    assert '<strong>other</strong><div class="anvia-static-markdown">' in saved()["text/html"]
    studio.select("support")  # the saved copy follows the picker at once, as the page does
    assert saved()["text/plain"].splitlines()[1:] == ["You: one", "Support <desk>: First answer."]
    await page.request("studio_select", agent_id="other")
    assert saved()["text/plain"].splitlines()[1:] == ["You: two", "other: Other answer."]
    studio.select("support")
    studio.send("three")
    await idle(page)
    text = saved()["text/plain"]
    assert text.splitlines()[1:] == [
        "You: one",
        "Support <desk>: First answer.",
        "You: three",
        "Support <desk>: Second answer.",
    ]
    assert "Assistant" not in text + saved()["text/html"]


async def test_a_hostile_agent_name_is_escaped_and_cut_in_the_saved_copy(outputs):
    name = "<script>alert(1)</script>" + "x" * 100_000
    agent = AgentBuilder("evil", QueueModel(["Hi."])).name(name).build()
    studio = Studio([agent])
    studio.start()
    page = Page(studio.widget)
    await page.sync()
    await send(page, "evil", "hello")
    data = outputs.updates()[-1]["data"]
    html, text = data["text/html"], data["text/plain"]
    assert "<script" not in html
    assert "<strong>&lt;script&gt;alert(1)&lt;/script&gt;xxx" in html
    assert len(html) < 10_000 and len(text) < 10_000
    assert "more characters)" in html and "more characters): Hi." in text


async def test_running_the_studio_s_cell_again_stops_its_run(cell):
    """Its run went on waiting, unseen, for an approval (show()'s runs are stopped)."""
    gate = asyncio.Event()
    agent = AgentBuilder("slow", gated_model(gate)).build()
    studio = Studio([agent])
    cell.cell_id = "cell-studio"
    studio._ipython_display_()
    page = Page(studio.widget)
    await page.sync()
    assert (await page.request("studio_send", agent_id="slow", text="go"))["ok"]
    run = studio.run
    assert run is not None and not run.done
    cell.run_again("cell-2")  # another execution of the same cell: its output is cleared
    await idle(page)
    assert run.status == "cancelled"
    assert "was run again" in (run.state.cancel_reason or "")
    studio._ipython_display_()  # shown again by this execution: its runs are left alone
    assert (await page.request("studio_send", agent_id="slow", text="again"))["ok"]
    cell.cell_id = "another-cell"
    cell.run_again("cell-3")
    assert not studio.run.done
    gate.set()
    await idle(page)
    assert studio.run.status == "success"


async def test_always_allow_in_one_agents_conversation_allows_no_other_agents_tool():
    """Two agents of one Studio with a tool of the same name: "Always allow" ticked for
    staging's approved prod's call too, nobody asked."""

    def refund_model(order: str) -> QueueModel:
        call = ToolCall(id="c1", name="issue_refund", arguments={"order_id": order, "amount": 1})
        return QueueModel([ModelResponse(tool_calls=[call]), f"Refunded {order}."])

    staging_tool, prod_tool = refund_tool(), refund_tool()
    staging = AgentBuilder("staging", refund_model("S")).tools([staging_tool]).build()
    prod = AgentBuilder("prod", refund_model("P")).tools([prod_tool]).build()
    studio = Studio([staging, prod])
    page = Page(studio.widget)
    await page.sync()
    assert (await page.request("studio_send", agent_id="staging", text="refund S"))["ok"]
    entry = await pending_approval(page)
    assert (await page.approve(entry["approval"]["id"], always_allow=True))["ok"]
    await idle(page)
    assert [c.order_id for c in staging_tool.calls] == ["S"]

    assert (await page.request("studio_select", agent_id="prod"))["ok"]
    assert (await page.request("studio_send", agent_id="prod", text="refund P"))["ok"]
    entry = await pending_approval(page)  # asked: the rule was staging's
    assert entry["approval"]["status"] == "pending" and prod_tool.calls == []
    assert (await page.approve(entry["approval"]["id"]))["ok"]
    await idle(page)
    assert [c.order_id for c in prod_tool.calls] == ["P"]


async def test_a_call_always_allowed_from_the_widget_says_so_on_its_record():
    """'Approved by "Always allow"', as the page words a rule ticked in the widget: the record
    said only ``decided_by="policy"`` by the human input, which reads "by a rule" (the scripted
    operator's words)."""

    def refund(call_id: str, order: str) -> ModelResponse:
        arguments = {"order_id": order, "amount": 1}
        return ModelResponse(
            tool_calls=[ToolCall(id=call_id, name="issue_refund", arguments=arguments)]
        )

    model = QueueModel([refund("c1", "A"), "Refunded A.", refund("c2", "B"), "Refunded B."])
    tool = refund_tool()
    _, page = await always_allowed_after_refund_a(AgentBuilder("shop", model).tools([tool]).build())
    await send(page, "shop", "refund B")
    assert [c.order_id for c in tool.calls] == ["A", "B"]
    decided = [e["approval"] for e in page.state.entries if e["kind"] == "tool"]
    assert [(a["decided_by"], a["decided_via"]) for a in decided] == [
        ("human", "widget"),
        ("policy", "widget"),
    ]
    assert decided[1]["decision_reason"] == "Always allowed in this session."

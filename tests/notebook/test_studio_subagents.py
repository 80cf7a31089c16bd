"""The Studio with an agent that has a sub-agent (API.md section 14): the lead's tool call runs
the sub-agent, whose tool's approval is asked for and decided in the Studio's page (the widget's
messages), drawn inside the sub-agent's tool call; the conversation goes on; the stored session,
opened again, draws the nested block from the sub-run's stored events."""

from __future__ import annotations

from typing import Any

from notebook_helpers import Page, pending_approval, refund_tool, until

from anvia_notebook import AgentBuilder, Studio
from anvia_notebook.models import FunctionModel, ModelResponse, ToolCall


def _analyst(request: Any) -> ModelResponse:
    last = request.messages[-1]
    if last.role == "user":
        call = ToolCall(id="r1", name="issue_refund", arguments={"order_id": "A", "amount": 1})
        return ModelResponse(tool_calls=[call])
    return ModelResponse(text=f"Refund made: {last.tool_results[0].content}")


def _lead(request: Any) -> ModelResponse:
    last = request.messages[-1]
    if last.role == "user":
        ask = ToolCall(id="a1", name="ask_refunds", arguments={"prompt": last.content})
        return ModelResponse(tool_calls=[ask])
    return ModelResponse(text=f"Done. {last.tool_results[0].content}")


def lead(tool: Any) -> Any:
    refunds = AgentBuilder("refunds", FunctionModel(_analyst)).name("Refunds").tools([tool])
    return (
        AgentBuilder("lead", FunctionModel(_lead))
        .name("Lead")
        .tool(refunds.build().as_tool(name="ask_refunds", description="Ask the refunds desk."))
        .build()
    )


async def idle(page: Page) -> None:
    await until(lambda: (page.pump(), page.studio and not page.studio["busy"])[1], what="idle")


def shape(entries: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """Each entry's kind, tool, status and the tool its parent is (the nesting)."""
    by_id = {e["id"]: e for e in entries}
    return [
        (
            e["kind"],
            e.get("tool_name"),
            e.get("status"),
            (e.get("approval") or {}).get("status"),
            by_id[e["parent"]]["tool_name"] if e.get("parent") else None,
        )
        for e in entries
    ]


async def test_a_nested_approval_is_decided_in_the_studio_and_the_session_reopens(store_path):
    tool = refund_tool()
    studio = Studio([lead(tool)])
    page = Page(studio.widget)
    await page.sync()
    assert (await page.request("studio_send", agent_id="lead", text="refund order A"))["ok"]
    entry = await pending_approval(page)
    assert entry["tool_name"] == "issue_refund"
    by_id = {e["id"]: e for e in page.state.entries}
    outer = by_id[entry["parent"]]  # drawn inside the sub-agent's tool call
    assert outer["tool_name"] == "ask_refunds"
    assert outer["sub_agent"]["agent_id"] == "refunds"
    assert page.studio is not None and page.studio["busy"]
    assert tool.calls == []  # nothing ran before the decision

    assert (await page.approve(entry["approval"]["id"], reason="fine"))["ok"]
    await idle(page)
    assert [c.order_id for c in tool.calls] == ["A"]
    page.pump()
    entries = page.state.entries
    assert shape(entries) == [
        ("user", None, None, None, None),
        ("tool", "ask_refunds", "done", None, None),
        ("tool", "issue_refund", "done", "approved", "ask_refunds"),
        ("assistant", None, None, None, "ask_refunds"),
        ("assistant", None, None, None, None),
    ]
    answer = entries[-1]["text"]
    assert answer.startswith("Done. Refund made:") and "rf_a" in answer
    assert page.state.transcript() == studio.session.state()
    assert [m.role for m in studio.history("lead")] == ["user", "assistant", "tool", "assistant"]

    # The stored session, opened in another Studio: the nested block is drawn again.
    again = Studio([lead(refund_tool())])
    again_page = Page(again.widget)
    await again_page.sync()
    opened = await again_page.request("studio_open_session", session_id=studio.session_id)
    assert opened["ok"], opened
    again_page.pump()
    reopened = again_page.state.entries
    assert shape(reopened) == shape(entries)
    assert [e.get("text") for e in reopened] == [e.get("text") for e in entries]

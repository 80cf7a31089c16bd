"""A Studio session opened again shows what its live view showed: a message sent from the box
that the run never read because Stop came first is said (from the run's stored state), not
lost from the transcript the store gives back."""

from __future__ import annotations

from notebook_helpers import Page, pending_approval, refund_tool, until

from anvia_notebook import AgentBuilder, Studio
from anvia_notebook.models import ModelResponse, QueueModel, ToolCall


async def _idle(page: Page) -> None:
    await until(lambda: (page.pump(), page.studio and not page.studio["busy"])[1], what="idle")


def _without_ids(entries: list[dict]) -> list[dict]:
    return [{k: v for k, v in e.items() if k != "id"} for e in entries]


async def test_a_reopened_session_says_the_message_its_run_never_read(store_path):
    call = ToolCall(id="c1", name="issue_refund", arguments={"order_id": "A", "amount": 5})
    model = QueueModel([ModelResponse(tool_calls=[call]), "never"])
    studio = Studio([AgentBuilder("shop", model).tools([refund_tool()]).build()])
    page = Page(studio.widget)
    await page.sync()
    assert (await page.request("studio_send", agent_id="shop", text="refund A"))["ok"]
    await pending_approval(page)
    assert (await page.request("steer", text="and be quick"))["ok"]
    assert (await page.request("stop", reason="enough"))["ok"]
    await _idle(page)
    live = page.state.entries
    assert live[-1]["text"] == "Not delivered, the run ended first: and be quick"

    again = Studio([AgentBuilder("shop", QueueModel([])).tools([refund_tool()]).build()])
    again_page = Page(again.widget)
    await again_page.sync()
    opened = await again_page.request("studio_open_session", session_id=studio.session_id)
    assert opened["ok"], opened
    again_page.pump()
    # Before: the reopened transcript ended at "Run cancelled: enough"; the message was gone.
    assert _without_ids(again_page.state.entries) == _without_ids(live)

"""Stored Studio sessions: listed, opened again (history and transcript), kept per agent."""

from __future__ import annotations

import asyncio
import warnings
from typing import Any

import pytest
from notebook_helpers import (
    Page,
    gated_model,
    pending_approval,
    refund_tool,
    sent,
    until,
)
from pydantic import BaseModel

from anvia_notebook import AgentBuilder, Studio, create_tool, get_store
from anvia_notebook.messages import Message
from anvia_notebook.models import FunctionModel, ModelResponse, QueueModel, TextDelta, ToolCall
from anvia_notebook.notebook._protocol import parse_outbound
from anvia_notebook.notebook._studio import BUSY, session_title
from anvia_notebook.store import RunStore


def agents(*answers: str) -> tuple[list, QueueModel]:
    model = QueueModel(list(answers))
    support = AgentBuilder("support", model).name("Support").build()
    other = AgentBuilder("other", QueueModel(["Other answer."])).build()
    return [support, other], model


async def idle(page: Page) -> None:
    await until(lambda: (page.pump(), page.studio and not page.studio["busy"])[1], what="idle")


async def say(page: Page, text: str, agent_id: str = "support") -> None:
    reply = await page.request("studio_send", agent_id=agent_id, text=text)
    assert reply["ok"], reply
    await idle(page)


def texts(page: Page) -> list[tuple[str, str]]:
    page.pump()
    return [(e["kind"], e.get("text", e.get("tool_name"))) for e in page.state.entries]


async def test_a_session_is_stored_listed_and_continued_after_a_restart(store_path):
    first, _ = agents("First answer.", "Second answer.")
    studio = Studio(first)
    page = Page(studio.widget)
    await page.sync()
    await say(page, "Where is my order?\nIt is late.")
    await say(page, "Thanks, and then?")
    await say(page, "Hello other", agent_id="other")
    support_id = studio._session_ids["support"]
    assert studio._session_ids["other"] != support_id  # each agent's conversation is a session

    # As after a kernel restart: new agents, a new Studio, the same store.
    again, model = agents("Third answer.")
    restarted = Studio(again)
    listed = restarted.sessions()
    assert [(s.agent_id, s.title) for s in listed] == [
        ("other", "Hello other"),
        ("support", "Where is my order? It is late."),
    ]
    assert listed[1].session_id == support_id

    page = Page(restarted.widget)
    await page.sync()
    assert page.state.entries == []
    assert page.studio is not None
    parse_outbound(page.studio)
    assert [(s["id"], s["title"], s["agent_id"]) for s in page.studio["sessions"]] == [
        (listed[0].session_id, "Hello other", "other"),
        (support_id, "Where is my order? It is late.", "support"),
    ]
    assert all(s["updated_at"] for s in page.studio["sessions"])

    reply = await page.request("studio_open_session", session_id=support_id)
    assert reply["ok"], reply
    page.pump()
    assert texts(page) == [
        ("user", "Where is my order?\nIt is late."),
        ("assistant", "First answer."),
        ("user", "Thanks, and then?"),
        ("assistant", "Second answer."),
    ]
    assert page.state.status["state"] == "success"
    assert page.studio["selected"] == "support"
    # The open session is not offered again; the other one still is.
    assert [s["id"] for s in page.studio["sessions"]] == [listed[0].session_id]
    assert [m.content for m in restarted.history()] == [
        "Where is my order?\nIt is late.",
        "First answer.",
        "Thanks, and then?",
        "Second answer.",
    ]

    await say(page, "One more thing")
    assert [m.content for m in model.requests[0].messages] == [
        "Where is my order?\nIt is late.",
        "First answer.",
        "Thanks, and then?",
        "Second answer.",
        "One more thing",
    ]
    assert texts(page)[-2:] == [("user", "One more thing"), ("assistant", "Third answer.")]
    assert page.state.transcript() == restarted.session.state()
    for message in sent(restarted.widget):
        parse_outbound(message)

    # Continued under the same id: one stored session, the whole conversation, newest first.
    store = get_store()
    assert store is not None
    stored = store.sessions(agent_id="support")
    assert [s.session_id for s in stored] == [support_id]
    assert len(stored[0].messages) == 6
    assert restarted.sessions()[0].session_id == support_id
    assert {r.session_id for r in store.runs(agent_id="support")} == {support_id}
    assert len(store.runs(session_id=support_id)) == 3


async def test_latest_and_open_session_in_python_then_new_session_starts_fresh(store_path):
    first, _ = agents("First answer.", "Second answer.")
    studio = Studio(first)
    await studio.send("one")
    await studio.send("two", agent_id="other")
    other_id = studio._session_ids["other"]

    fresh = Studio(agents()[0])
    assert fresh.history() == [] and fresh.history("other") == []

    latest = Studio(agents("Again.")[0], session="latest")
    assert latest.selected == "other"
    assert latest.session_id == other_id
    assert [m.content for m in latest.history()] == ["two", "Other answer."]
    assert [(e["kind"], e["text"]) for e in latest.transcript] == [
        ("user", "two"),
        ("assistant", "Other answer."),
    ]

    support_id = studio._session_ids["support"]
    latest.open_session(support_id)
    assert latest.selected == "support"
    assert latest.history("other") == []  # opening one replaces what was open
    assert [e["text"] for e in latest.transcript] == ["one", "First answer."]

    with pytest.raises(ValueError, match="Unknown session"):
        latest.open_session("nope")
    with pytest.raises(ValueError, match="Unknown session"):
        Studio(agents()[0], session="nope")
    # A session of an agent this Studio does not have is not offered or opened.
    alone = Studio([AgentBuilder("solo", QueueModel([])).build()])
    assert alone.sessions() == []
    with pytest.raises(ValueError, match="Unknown session"):
        alone.open_session(support_id)

    latest.new_session()
    assert latest.transcript == [] and latest.history() == []
    assert latest.session_id not in (support_id, other_id)


async def test_open_is_refused_while_busy_and_for_unknown_ids(store_path):
    gate = asyncio.Event()
    agent = AgentBuilder("slow", gated_model(gate)).build()
    studio = Studio([agent])
    page = Page(studio.widget)
    await page.sync()
    assert (await page.request("studio_send", agent_id="slow", text="go"))["ok"]
    refused = await page.request("studio_open_session", session_id=studio.session_id)
    assert refused["ok"] is False and refused["error"] == BUSY
    with pytest.raises(RuntimeError, match=BUSY):
        studio.open_session(studio.session_id)
    gate.set()
    await idle(page)
    unknown = await page.request("studio_open_session", session_id="ghost")
    assert unknown["ok"] is False and unknown["error"] == "Unknown session 'ghost'."
    malformed = await page.request("studio_open_session", session_id="")
    assert malformed["ok"] is False
    assert [e["text"] for e in page.state.entries] == ["go", "working done"]


async def test_tool_calls_and_approvals_come_back_from_the_event_log(store_path):
    tool = refund_tool()
    call = ToolCall(id="c1", name="issue_refund", arguments={"order_id": "A", "amount": 1})
    model = QueueModel([ModelResponse(tool_calls=[call]), "Refunded A."])
    agent = AgentBuilder("shop", model).tools([tool]).build()
    studio = Studio([agent])
    page = Page(studio.widget)
    await page.sync()
    assert (await page.request("studio_send", agent_id="shop", text="refund A"))["ok"]
    entry = await pending_approval(page)
    assert (await page.approve(entry["approval"]["id"]))["ok"]
    await idle(page)
    before = page.state.entries

    again = Studio([AgentBuilder("shop", QueueModel([])).tools([refund_tool()]).build()])
    again_page = Page(again.widget)
    await again_page.sync()
    assert (await again_page.request("studio_open_session", session_id=studio.session_id))["ok"]
    again_page.pump()
    after = again_page.state.entries
    assert [(e["kind"], e.get("status")) for e in after] == [
        (e["kind"], e.get("status")) for e in before
    ]
    tool_entry = next(e for e in after if e["kind"] == "tool")
    assert tool_entry["status"] == "done"
    assert tool_entry["approval"]["status"] == "approved"
    assert tool_entry["result"] == next(e for e in before if e["kind"] == "tool")["result"]
    # What the tool printed comes back too: it is stored with the call's trace.
    assert next(e for e in before if e["kind"] == "tool")["output"] == "refunding A\n"
    assert tool_entry["output"] == "refunding A\n"


async def test_a_session_without_run_logs_is_shown_from_its_messages(store_path):
    store = get_store()
    assert store is not None
    messages = [
        Message.user("Refund order A"),
        Message(
            role="assistant",
            tool_calls=[{"id": "c1", "name": "issue_refund", "arguments": '{"order_id": "A"}'}],
        ),
        Message(
            role="tool",
            tool_results=[{"tool_call_id": "c1", "tool_name": "issue_refund", "content": "ok"}],
        ),
        Message.assistant("Refunded."),
        Message.user("Thanks"),
        Message.assistant("You're welcome."),
    ]
    store.save_session("s-old", "support", session_title(messages), messages)
    studio = Studio(agents("Next.")[0], session="s-old")
    assert [(e["kind"], e.get("text", e.get("status"))) for e in studio.transcript] == [
        ("user", "Refund order A"),
        ("tool", "done"),
        ("assistant", "Refunded."),
        ("user", "Thanks"),
        ("assistant", "You're welcome."),
    ]
    assert studio.session.state()["status"]["state"] == "success"
    assert len(studio.history()) == 6


async def test_an_unfinished_run_is_shown_as_ended(store_path):
    first, _ = agents("First answer.")
    studio = Studio(first)
    await studio.send("hello")
    store = get_store()
    assert store is not None
    run_id = store.runs(session_id=studio.session_id)[0].run_id
    events = store.events(run_id)
    # As if the kernel had stopped before the run ended: no final event in the log.
    store._q("DELETE FROM events WHERE run_id = ?", (run_id,))
    store.save_events(run_id, [(seq, e.model_dump_json()) for seq, e in enumerate(events[:-1])])
    again = Studio(agents()[0], session=studio.session_id)
    assert again.transcript[-1] == {
        "kind": "notice",
        "id": again.transcript[-1]["id"],
        "text": "Run cancelled: it did not finish",
    }


async def test_a_store_error_gives_one_warning_and_the_studio_goes_on(store_path, monkeypatch):
    def broken(self, *args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(RunStore, "save_session", broken)
    first, model = agents("First answer.", "Second answer.")
    studio = Studio(first)
    with pytest.warns(RuntimeWarning, match="Studio sessions: disk full") as caught:
        await studio.send("one")
    assert len([w for w in caught if "Studio sessions" in str(w.message)]) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        await studio.send("two")
    assert [m.content for m in model.requests[1].messages] == ["one", "First answer.", "two"]
    assert studio.sessions() == []
    assert studio.studio_message()["sessions"] == []


async def test_without_a_store_sessions_stay_in_memory(monkeypatch):
    from anvia_notebook import store as store_module

    monkeypatch.setenv("ANVIA_NOTEBOOK_STORE", "none")
    store_module._reset_for_tests()
    try:
        first, _ = agents("First answer.")
        studio = Studio(first, session="latest")  # nothing stored: a new session
        page = Page(studio.widget)
        await page.sync()
        await say(page, "one")
        assert studio.sessions() == []
        assert page.studio is not None and page.studio["sessions"] == []
        refused = await page.request("studio_open_session", session_id="x")
        assert refused["error"] == "Earlier sessions are not available: runs are not stored."
    finally:
        store_module._reset_for_tests()


def test_session_titles():
    assert session_title([Message.user("  Where is\n my order? ")]) == "Where is my order?"
    assert session_title([]) == "Untitled session"
    long = session_title([Message.user("x" * 200)])
    assert len(long) == 80 and long.endswith("\u2026")


async def test_inspect_reads_the_last_stored_run_of_a_session_opened_again(store_path):
    first, _ = agents("First answer.", "Second answer.")
    studio = Studio(first)
    page = Page(studio.widget)
    await page.sync()
    await say(page, "one")
    await say(page, "two")
    support_id = studio._session_ids["support"]

    again, _ = agents("Third answer.")
    restarted = Studio(again)
    page = Page(restarted.widget)
    await page.sync()
    assert (await page.request("inspect", index=None))["error"] == "No run to inspect."
    assert (await page.request("studio_open_session", session_id=support_id))["ok"]
    # Before: "No run to inspect." though the page shows the stored conversation.
    inspected = await page.request("inspect", index=None)
    assert inspected["turn"]["response_text"] == "Second answer.", inspected
    # The other agent's conversation has no run; back to this one, the stored run again.
    assert (await page.request("studio_select", agent_id="other"))["ok"]
    assert (await page.request("inspect", index=None))["error"] == "No run to inspect."
    assert (await page.request("studio_select", agent_id="support"))["ok"]
    inspected = await page.request("inspect", index=None)
    assert inspected["turn"]["response_text"] == "Second answer."
    await say(page, "three")
    inspected = await page.request("inspect", index=None)
    assert inspected["turn"]["response_text"] == "Third answer."
    assert (await page.request("studio_new_session"))["ok"]
    assert (await page.request("inspect", index=None))["error"] == "No run to inspect."


async def test_an_unknown_session_id_of_any_length_is_named_shortly(store_path):
    studio = Studio(agents()[0])
    page = Page(studio.widget)
    await page.sync()
    forged = "x" * 2_000_000
    refused = await page.request("studio_open_session", session_id=forged)
    assert refused["ok"] is False
    assert refused["error"].startswith("Unknown session 'xxxx")
    assert len(refused["error"]) < 200
    with pytest.raises(ValueError, match="Unknown session") as raised:
        studio.open_session(forged)
    assert len(str(raised.value)) < 400


async def test_a_session_is_stored_with_its_message_while_its_first_run_goes_on(store_path):
    """A session was stored only when a run ended: a kernel that died during the first run
    left no session to continue (sessions() was empty), and during a later run, a history
    without the message the transcript shows."""
    tool = refund_tool()
    call = ToolCall(id="c1", name="issue_refund", arguments={"order_id": "B", "amount": 2})
    agent = AgentBuilder("shop", QueueModel([ModelResponse(tool_calls=[call])])).tools([tool])
    studio = Studio(agent.build())
    page = Page(studio.widget)
    await page.sync()
    assert (await page.request("studio_send", agent_id="shop", text="please refund B"))["ok"]
    await pending_approval(page)  # the kernel could die now
    [stored] = studio.sessions()
    assert stored.title == "please refund B"
    # What a Studio of the next kernel would continue (this one may not open it meanwhile).
    kept = get_store().session(stored.session_id)
    assert kept is not None and [m["content"] for m in kept.messages] == ["please refund B"]
    studio.stop()


async def test_a_session_continued_in_another_studio_is_no_longer_written_here(store_path):
    """Two Studios continuing one session each saved over the other's messages: the one that
    opened it last continues it, and the first says so instead of writing."""
    first, _ = agents("First answer.", "Lost answer.")
    studio = Studio(first)
    await studio.send("hello")
    held = studio.session_id
    other = Studio(agents("Other answer.")[0])
    other.open_session(held)
    with pytest.raises(RuntimeError, match="was continued in another Studio since"):
        studio.send("from the first")
    await other.send("from the second")
    stored = get_store().session(held)
    assert [m["content"] for m in stored.messages] == [
        "hello",
        "First answer.",
        "from the second",
        "Other answer.",
    ]


async def test_a_session_with_a_run_in_progress_in_another_studio_is_not_opened(store_path):
    """Opened meanwhile, the run's end (a refund it made) would be missing from the history the
    model reads, and the next save would overwrite it in the store: the picker does not offer
    it, and opening it (from the page, a cell, or ``session=``) is refused, saying why."""
    tool = refund_tool()
    call = ToolCall(id="c1", name="issue_refund", arguments={"order_id": "A1", "amount": 5})
    first = Studio(
        [
            AgentBuilder("support", QueueModel([ModelResponse(tool_calls=[call]), "Done."]))
            .tool(tool)
            .build()
        ]
    )
    page = Page(first.widget)
    await page.sync()
    reply = await page.request("studio_send", agent_id="support", text="Refund A1")
    assert reply["ok"], reply
    entry = await pending_approval(page)
    held = first.session_id

    second = Studio(agents("Second.")[0])
    other = Page(second.widget)
    await other.sync()
    assert other.studio is not None
    assert held not in [s["id"] for s in other.studio["sessions"]]
    refused = await other.request("studio_open_session", session_id=held)
    assert refused["ok"] is False and "has a run in progress in another Studio" in refused["error"]
    with pytest.raises(RuntimeError, match="has a run in progress in another Studio"):
        second.open_session(held)
    for asked in (held, "latest"):
        with pytest.raises(RuntimeError, match="has a run in progress in another Studio"):
            Studio(agents()[0], session=asked)

    await page.approve(entry["approval"]["id"])
    await idle(page)
    assert len(tool.calls) == 1
    second.open_session(held)  # ended: it opens, with the refund in it
    assert [m.role for m in second.history("support")] == ["user", "assistant", "tool", "assistant"]


async def test_a_studio_of_a_cell_run_again_opens_the_session_once_the_stopped_run_ended(
    store_path, cell
):
    """``Studio(..., session="latest")`` in a cell run again during a run: the run the cell's
    earlier Studio showed is stopped, and ends after the cell; the new Studio takes the session
    up once it has ended (its history and transcript hold the stopped turn, told why)."""
    gate = asyncio.Event()
    gated = gated_model(gate)

    async def answer(request: Any) -> Any:  # "One.", then a turn that waits for the gate
        if len(request.messages) == 1:
            yield TextDelta(delta="One.")
            return
        async for event in gated.stream(request):
            yield event

    first = Studio([AgentBuilder("support", FunctionModel(answer)).build()])
    cell.cell_id = "cell-studio"
    first._ipython_display_()
    page = Page(first.widget)
    await page.sync()
    await say(page, "Hello")
    reply = await page.request("studio_send", agent_id="support", text="Second")
    assert reply["ok"], reply
    await until(lambda: "working" in str(sent(first.widget)), what="the second turn streaming")

    cell.run_again("cell-2")  # the same cell again: its Studio's run is stopped
    again = Studio(
        [AgentBuilder("support", QueueModel(["Third answer."])).build()], session="latest"
    )
    assert again.busy and again.history("support") == []  # (until the stopped run has ended)
    with pytest.raises(RuntimeError, match=BUSY):
        again.send("Too soon")
    again._ipython_display_()
    view = Page(again.widget)
    await view.sync()
    await idle(view)
    assert [(m.role, m.content) for m in again.history("support")] == [
        ("user", "Hello"),
        ("assistant", "One."),
        ("user", "Second"),
        ("assistant", "working"),
    ]
    notices = [e.get("text") for e in view.state.entries if e["kind"] == "notice"]
    assert notices and "did not finish" not in notices[-1]
    await say(view, "Third")
    stored = get_store().session(again.session_id)
    assert stored is not None
    assert [m["content"] for m in stored.messages][-2:] == ["Third", "Third answer."]
    assert [m["content"] for m in stored.messages][:4] == ["Hello", "One.", "Second", "working"]


async def _streaming_in_a_cell(cell: Any) -> tuple[asyncio.Event, Studio]:
    gate = asyncio.Event()
    first = Studio([AgentBuilder("support", gated_model(gate)).build()])
    cell.cell_id = "cell-studio"
    first._ipython_display_()
    page = Page(first.widget)
    await page.sync()
    assert (await page.request("studio_send", agent_id="support", text="Hello"))["ok"]
    await until(lambda: "working" in str(sent(first.widget)), what="the turn streaming")
    return gate, first


async def test_a_cell_run_again_just_as_its_studio_s_run_ends_opens_the_session(store_path, cell):
    """The run's task had ended, its end not yet taken in: the new Studio was refused."""
    gate, first = await _streaming_in_a_cell(cell)
    run = first.run
    assert run is not None
    gate.set()
    # One pass of the loop at a time (an event would be set a pass late): the run's end is
    # taken in on a later pass than the one its task ends on.
    while not run.done:  # noqa: ASYNC110
        await asyncio.sleep(0)
    assert first.busy  # (the moment this test is about)
    cell.run_again("cell-2")
    again = Studio([AgentBuilder("support", QueueModel(["x"])).build()], session="latest")
    again._ipython_display_()
    await until(lambda: not again.busy, what="the session opened")
    assert [m.content for m in again.history("support")] == ["Hello", "working done"]


async def test_a_cell_run_again_twice_opens_the_session_in_the_last_studio_only(store_path, cell):
    await _streaming_in_a_cell(cell)
    cell.run_again("cell-2")
    second = Studio([AgentBuilder("support", QueueModel(["x"])).build()], session="latest")
    second._ipython_display_()
    cell.run_again("cell-3")
    third = Studio([AgentBuilder("support", QueueModel(["y"])).build()], session="latest")
    third._ipython_display_()
    await until(lambda: not third.busy, what="the session opened")
    assert not second.busy and second.history("support") == []
    assert [m.content for m in third.history("support")] == ["Hello", "working"]


LEFT_BY_ITS_KERNEL = """
from pydantic import BaseModel
from anvia_notebook import AgentBuilder, StoreHumanInput, ToolApproval, create_tool, get_store
from anvia_notebook.messages import Message
from anvia_notebook.models import ModelResponse, QueueModel, ToolCall

class RefundInput(BaseModel):
    order_id: str
    amount: float

tool = create_tool(name="issue_refund", description="Issue a refund.", input=RefundInput,
                   execute=lambda args, ctx: "never", approval=ToolApproval())
call = ToolCall(id="c1", name="issue_refund", arguments={"order_id": "A", "amount": 1})
model = QueueModel([ModelResponse(text="Checking.", tool_calls=[call])])
agent = AgentBuilder("shop", model).tools([tool]).human_input(StoreHumanInput()).build()
asked = [Message.user("refund A")]
get_store().save_session("s-left", "shop", "refund A", asked)  # (as a Studio stores it)
agent.prompt(asked).session("s-left").send_sync()
"""


async def left_waiting(store: RunStore, script: str | None = None) -> Any:
    """The approval of a Studio session's run whose kernel was killed while it waited."""
    from child_processes import child_environ, kill, start_python, wait_until

    child = start_python(script or LEFT_BY_ITS_KERNEL, child_environ())
    try:
        [waiting] = await asyncio.to_thread(wait_until, store.pending, child, "the approval")
    finally:
        kill(child)
    await until(
        lambda: {r.status for r in store.runs()} == {"interrupted"}, 30, "the run interrupted"
    )
    return waiting


async def test_a_session_whose_run_its_kernel_left_waiting_goes_on_in_a_new_studio(store_path):
    """A Studio's kernel restarted while an approval waited: ``Studio(..., session="latest")``
    showed the approval as cancelled ("Run cancelled: it did not finish"), with no button, while
    the store kept it pending and the run interrupted. The run is resumed in the new Studio: its
    approval waits there, and approving it runs the tool."""
    store = RunStore(store_path)
    waiting = await left_waiting(store)
    tool = refund_tool()
    agent = AgentBuilder("shop", QueueModel(["Refunded A."])).tools([tool]).build()
    studio = Studio([agent], session="latest")
    page = Page(studio.widget)
    await page.sync()
    entry = await pending_approval(page)
    assert entry["approval"]["id"] == waiting.id
    assert page.studio is not None and page.studio["busy"]
    assert (await page.approve(waiting.id))["ok"]
    await idle(page)
    assert [(args.order_id, args.amount) for args in tool.calls] == [("A", 1.0)]
    kinds = texts(page)
    assert kinds[0] == ("user", "refund A") and kinds[-1] == ("assistant", "Refunded A.")
    assert not [text for kind, text in kinds if kind == "notice" and "did not finish" in text]
    assert [(r.run_id, r.status) for r in store.runs()] == [(waiting.run_id, "success")]
    assert [m.content for m in studio.history()][-1] == "Refunded A."
    store.close()


async def test_a_session_s_left_run_goes_on_once_shown_or_sent_to_and_in_one_studio(store_path):
    """It goes on when the Studio is shown or sent a message, not when it is only made (to read
    its history: the run would wait unseen, holding the session). A message sent before it is
    shown started a second run of the session (the first one's approval was then refused as
    unknown); a second Studio of the session showed the run as cancelled and took the session
    over."""
    store = RunStore(store_path)
    waiting = await left_waiting(store)
    agent = AgentBuilder("shop", QueueModel(["Refunded A.", "Other."]))
    agent = agent.tools([refund_tool()]).build()
    assert [m.content for m in Studio([agent], session="latest").history()] == ["refund A"]
    assert [r.status for r in store.runs()] == ["interrupted"]
    first, second = Studio([agent], session="latest"), Studio([agent], session="latest")
    with pytest.raises(RuntimeError, match=BUSY):
        first.send("and another thing")
    assert first.busy and first.run is not None and first.run.run_id == waiting.run_id
    page = Page(second.widget)
    await page.sync()
    assert [text for kind, text in texts(page) if kind == "notice"] == [
        "This session's run goes on in another Studio: continue it there, or start a new "
        "session here."
    ]
    with pytest.raises(RuntimeError, match="continued in another Studio"):
        second.send("me too")
    first_page = Page(first.widget)
    await first_page.sync()
    assert (await first_page.approve(waiting.id))["ok"]
    await idle(first_page)
    first._release_sessions()  # (as when its cell is run again)
    with pytest.raises(RuntimeError, match="continued in another Studio"):
        second.send("me too")  # (its history is not the session's any more)
    session_id = store.runs()[0].session_id
    assert session_id is not None
    second.open_session(session_id)  # (opened again)
    assert [m.content for m in second.history()][-1] == "Refunded A."
    await second.send("me too").wait()  # (it goes on with the session as it is now)
    stored = store.session(session_id)
    assert [m["content"] for m in stored.messages if m["content"]][-3:] == [
        "Refunded A.",
        "me too",
        "Other.",
    ]
    store.close()


async def test_a_studio_shown_after_another_went_on_with_its_session_shows_it_as_it_is(
    store_path,
):
    """Made with session="latest" before another Studio took up its run and chatted on, then
    shown: it kept the history it read when it was made, and a message sent there overwrote
    the session, losing the other's exchange."""
    store = RunStore(store_path)
    waiting = await left_waiting(store)
    agent = AgentBuilder("shop", QueueModel(["Refunded A.", "Anything else?", "Bye."]))
    agent = agent.tools([refund_tool()]).build()
    first, second = Studio([agent], session="latest"), Studio([agent], session="latest")
    page = Page(first.widget)
    await page.sync()
    assert (await page.approve(waiting.id))["ok"]
    await idle(page)
    await say(page, "thanks", agent_id="shop")
    first._release_sessions()  # (as when its cell is run again)
    second_page = Page(second.widget)
    await second_page.sync()
    assert [m.content for m in second.history()][-2:] == ["thanks", "Anything else?"]
    await say(second_page, "bye", agent_id="shop")
    assert [e for e in texts(second_page) if e[0] != "notice"][-3:] == [
        ("assistant", "Anything else?"),
        ("user", "bye"),
        ("assistant", "Bye."),
    ]
    store.close()


LEFT_AT_A_SUB_AGENT_S_APPROVAL = LEFT_BY_ITS_KERNEL.replace(
    'agent = AgentBuilder("shop", model).tools([tool])',
    'analyst = AgentBuilder("analyst", model).tools([tool]).build()\n'
    'lead_call = ToolCall(id="l1", name="analyst", arguments={"prompt": "refund A"})\n'
    "lead_model = QueueModel([ModelResponse(tool_calls=[lead_call])])\n"
    'agent = AgentBuilder("shop", lead_model).tool(analyst.as_tool())',
)


LEFT_AT_A_QUESTION = LEFT_BY_ITS_KERNEL.replace(
    'call = ToolCall(id="c1", name="issue_refund", arguments={"order_id": "A", "amount": 1})',
    "from anvia_notebook import ask_question\n"
    "tool = ask_question\n"
    'questions = [{"id": "q", "question": "Which order?", "choices": ['
    '{"label": "A", "value": "A"}, {"label": "B", "value": "B"}]}]\n'
    'call = ToolCall(id="c1", name="ask_question", arguments={"questions": questions})',
)


@pytest.mark.parametrize("decision", ["approve", "reject", "approve a sub-agent's"])
async def test_a_left_run_decided_from_the_terminal_goes_on_with_that_decision(
    store_path, decision
):
    """The approval decided with ``python -m anvia_notebook approve|reject`` while no kernel
    ran it: opening the session showed the call as cancelled ("Run cancelled: it did not
    finish") and left the run interrupted, so a later ``agent.resume`` ran the refund the
    Studio had shown as cancelled. The run goes on, with the decision the store holds."""
    from anvia_notebook.__main__ import main as cli

    store = RunStore(store_path)
    nested = decision.endswith("sub-agent's")
    waiting = await left_waiting(store, LEFT_AT_A_SUB_AGENT_S_APPROVAL if nested else None)
    top = store.runs()[0].run_id
    said = decision.split()[0]
    assert cli(["--store", str(store_path), said, top, waiting.id]) == 0
    tool = refund_tool()
    agent = AgentBuilder("shop", QueueModel(["Done."])).tools([tool]).build()
    if nested:
        analyst = AgentBuilder("analyst", QueueModel(["Refunded."])).tools([tool]).build()
        agent = AgentBuilder("shop", QueueModel(["Done."])).tool(analyst.as_tool()).build()
    studio = Studio([agent], session="latest")
    page = Page(studio.widget)
    await page.sync()
    await idle(page)
    assert [(args.order_id, args.amount) for args in tool.calls] == (
        [("A", 1.0)] if said == "approve" else []
    )
    assert (store.record(waiting.id).status, store.record(waiting.id).decided_via) == (
        "approved" if said == "approve" else "rejected",
        "cli",
    )
    kinds = texts(page)
    assert kinds[0] == ("user", "refund A") and kinds[-1] == ("assistant", "Done.")
    assert not [text for kind, text in kinds if kind == "notice" and "did not finish" in text]
    assert {r.status for r in store.runs()} == {"success"}
    if not nested:
        [entry] = [e for e in page.state.entries if e["kind"] == "tool"]
        assert (entry["approval"]["status"], entry["approval"]["decided_via"]) == (
            store.record(waiting.id).status,
            "cli",
        )
    store.close()


async def test_a_left_run_whose_question_was_answered_from_the_terminal_goes_on(store_path):
    """The same for a question the model asked, answered with ``python -m anvia_notebook
    answer``: the run goes on with that answer."""
    from anvia_notebook.__main__ import main as cli

    store = RunStore(store_path)
    waiting = await left_waiting(store, LEFT_AT_A_QUESTION)
    answers = '[{"questionId": "q", "answer": "B", "choice": "B"}]'
    code = cli(
        ["--store", str(store_path), "answer", "--json", answers, waiting.run_id, waiting.id]
    )
    assert code == 0
    from anvia_notebook import ask_question

    agent = AgentBuilder("shop", QueueModel(["Done."])).tools([ask_question]).build()
    page = Page(Studio([agent], session="latest").widget)
    await page.sync()
    await idle(page)
    assert texts(page)[-1] == ("assistant", "Done.")
    [entry] = [e for e in page.state.entries if e["kind"] == "tool"]
    assert entry["question"]["status"] == "answered"
    assert entry["question"]["answers"][0]["answer"] == "B"
    assert [r.status for r in store.runs()] == ["success"]
    store.close()


LEFT_IN_A_LATER_TURN_S_HOOK = """
import asyncio
from pydantic import BaseModel
from anvia_notebook import AgentBuilder, ToolApproval, create_hook, create_tool, get_store
from anvia_notebook.messages import Message
from anvia_notebook.models import ModelResponse, QueueModel, ToolCall

class Order(BaseModel):
    order_id: str

refund = create_tool(name="issue_refund", description="", input=Order,
                     execute=lambda args, ctx: "refunded", approval=ToolApproval())
ship = create_tool(name="ship", description="", input=Order, execute=lambda args, ctx: "shipped")

async def slow_check(event):
    if event.tool_name == "ship":  # (its turn stored, then the kernel is killed here)
        store = get_store()
        while not [m for m in store.get(store.runs()[0].run_id).messages if m.tool_calls][1:]:
            await asyncio.sleep(0.05)
        print("checking", flush=True)
        await asyncio.Event().wait()

# (a server that numbers the calls of each turn: both turns' calls are "c1")
refunding = ModelResponse(tool_calls=[ToolCall(id="c1", name="issue_refund", arguments={"order_id": "A"})])
shipping = ModelResponse(tool_calls=[ToolCall(id="c1", name="ship", arguments={"order_id": "A"})])
agent = (AgentBuilder("shop", QueueModel([refunding, shipping])).tools([refund, ship])
         .approvals(lambda request: True).hook(create_hook(on_tool_call=slow_check)).build())
asked = [Message.user("refund A")]
get_store().save_session("s-left", "shop", "refund A", asked)
agent.prompt(asked).session("s-left").send_sync()
"""


async def test_a_run_left_in_a_later_turn_whose_call_reuses_an_asked_id_is_only_shown(
    store_path,
):
    """Turn 1's call ``c1`` was approved and ran; turn 2's call, also ``c1``, of a tool that
    asks nobody, was in a hook when the kernel ended: the earlier approval counted as this
    call's, and opening the session ran the tool and called the model, though nobody had been
    asked anything."""
    store = RunStore(store_path)
    await killed_once_it_says(store, LEFT_IN_A_LATER_TURN_S_HOOK, "checking")

    class Order(BaseModel):
        order_id: str

    shipped = []
    ship = create_tool(
        name="ship",
        description="",
        input=Order,
        execute=lambda args, ctx: shipped.append(args) or "shipped",
    )
    model = QueueModel(["never asked"])
    studio = Studio([AgentBuilder("shop", model).tools([ship]).build()], session="latest")
    assert not studio.busy and model.requests == [] and shipped == []
    assert studio.transcript[-1]["text"] == "Run cancelled: it did not finish"
    store.close()


LEFT_IN_AN_APPROVED_TOOL = """
import threading
from pydantic import BaseModel
from anvia_notebook import AgentBuilder, ToolApproval, create_tool, get_store
from anvia_notebook.messages import Message
from anvia_notebook.models import ModelResponse, QueueModel, ToolCall

class RefundInput(BaseModel):
    order_id: str
    amount: float

def refund(args, ctx):
    print("refunding", flush=True)
    threading.Event().wait()

tool = create_tool(name="issue_refund", description="Issue a refund.", input=RefundInput,
                   execute=refund, approval=ToolApproval())
call = ToolCall(id="c1", name="issue_refund", arguments={"order_id": "A", "amount": 1})
model = QueueModel([ModelResponse(text="Checking.", tool_calls=[call])])
agent = AgentBuilder("shop", model).tools([tool]).approvals(lambda request: True).build()
asked = [Message.user("refund A")]
get_store().save_session("s-left", "shop", "refund A", asked)
agent.prompt(asked).session("s-left").send_sync()
"""


async def test_a_session_whose_run_its_kernel_left_in_an_approved_tool_is_only_shown(store_path):
    """Approved, then its tool was running when the kernel ended: opening the session does not
    take the run up (the model would be told of a refund that may have happened)."""
    store = RunStore(store_path)
    await killed_once_it_says(store, LEFT_IN_AN_APPROVED_TOOL, "refunding")
    model = QueueModel(["never asked"])
    agent = AgentBuilder("shop", model).tools([refund_tool()]).build()
    studio = Studio([agent], session="latest")
    assert not studio.busy and model.requests == []
    assert studio.transcript[-1]["text"] == "Run cancelled: it did not finish"
    assert store.runs()[0].status == "interrupted"
    store.close()


@pytest.mark.parametrize("call", ["select", "new_session"])
async def test_a_studio_asked_first_to_select_or_start_anew_takes_up_the_left_run(store_path, call):
    """The left run goes on first, so the Studio is busy: selecting another agent showed the
    resumed run in that agent's conversation, and New session mixed it into the new one."""
    store = RunStore(store_path)
    await left_waiting(store)
    agent = AgentBuilder("shop", QueueModel(["Refunded A."])).tools([refund_tool()]).build()
    other = AgentBuilder("other", QueueModel(["Other."])).build()
    studio = Studio([agent, other], session="latest")
    with pytest.raises(RuntimeError, match=BUSY):
        studio.select("other") if call == "select" else studio.new_session()
    assert studio.busy and studio.selected == "shop"
    studio.stop("done here")
    await until(lambda: not studio.busy, 10, "the run stopped")
    store.close()


async def test_the_studio_that_took_up_the_left_run_goes_on_with_the_session(store_path):
    """Made first, shown first, while another Studio of the session was made after it: once
    its run ended, its next message was refused as "continued in another Studio"."""
    store = RunStore(store_path)
    waiting = await left_waiting(store)
    agent = AgentBuilder("shop", QueueModel(["Refunded A.", "Anything else?"]))
    agent = agent.tools([refund_tool()]).build()
    first = Studio([agent], session="latest")
    second = Studio([agent], session="latest")  # (made, never shown)
    page = Page(first.widget)
    await page.sync()
    assert (await page.approve(waiting.id))["ok"]
    await idle(page)
    await say(page, "thanks", agent_id="shop")
    assert texts(page)[-1] == ("assistant", "Anything else?")
    assert second.run is None
    store.close()


LEFT_IN_A_MODEL_CALL = """
import asyncio
from anvia_notebook import AgentBuilder, get_store
from anvia_notebook.messages import Message
from anvia_notebook.models import FunctionModel

async def thinking(request):
    print("asked", flush=True)
    await asyncio.Event().wait()
    yield "never"

agent = AgentBuilder("shop", FunctionModel(thinking)).build()
asked = [Message.user("refund A")]
get_store().save_session("s-left", "shop", "refund A", asked)
agent.prompt(asked).session("s-left").send_sync()
"""


async def test_a_session_whose_run_its_kernel_left_in_a_model_call_is_only_shown(store_path):
    """Opening it does not call the model again (opening an old session to read it would):
    its run is shown as it was left."""
    store = RunStore(store_path)
    await killed_once_it_says(store, LEFT_IN_A_MODEL_CALL, "asked")
    model = QueueModel(["never asked"])
    studio = Studio([AgentBuilder("shop", model).build()], session="latest")
    assert not studio.busy and model.requests == []
    assert studio.transcript[0]["text"] == "refund A"
    assert studio.transcript[-1]["text"] == "Run cancelled: it did not finish"
    store.close()


async def killed_once_it_says(store: RunStore, script: str, line: str) -> None:
    """Run ``script`` in a child process, kill it (SIGKILL) once it printed ``line``, and wait
    until the store lists its run as interrupted."""
    from child_processes import child_environ, kill, start_python

    child = start_python(script, child_environ())
    try:
        assert child.stdout is not None
        assert await asyncio.to_thread(child.stdout.readline) == f"{line}\n"
    finally:
        kill(child)
    await until(lambda: store.runs()[0].status == "interrupted", 30, "the run interrupted")

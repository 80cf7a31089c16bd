"""A sub-agent's events are stored once (API.md section 14): the parent's stored log keeps a
reference to each entry of the sub-run's own log instead of a copy of every streamed delta and
of the sub-run's messages; reading the parent's log (a stored run's view, ``agent.resume``) puts
the nested block back; the live stream still gets every delta."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import subagent_stream_agents as agents
from child_processes import child_environ, kill, start_python, wait_until

from anvia_notebook import PromptCancelledError, RunStore
from anvia_notebook.notebook._transcript import Transcript
from anvia_notebook.store import get_store

from helpers import wait_on_events

pytestmark = pytest.mark.timeout(120)


def stored_rows(path: Path | str, run_id: str) -> str:
    """The parent's event rows as the store holds them (JSON text)."""
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT event FROM events WHERE run_id = ?", (run_id,)).fetchall()
        parts = db.execute("SELECT text FROM event_parts WHERE run_id = ?", (run_id,)).fetchall()
    return "".join(text for (text,) in rows + parts)


def nested(log: list[Any]) -> list[Any]:
    return [event for event in log if event.type == "agent_tool_event"]


def nested_text(log: list[Any]) -> str:
    return "".join(e.event.delta for e in nested(log) if e.event.type == "text_delta")


def drawn_nested_text(log: list[Any], run_id: str) -> list[str]:
    """What a transcript drawn from ``log`` shows inside the sub-agent's tool call."""
    transcript = Transcript("lead", emit=lambda op: None)
    transcript.begin_run(run_id, "lead", "write and publish")
    for event in log:
        transcript.apply(event)
    entries = transcript.state(0)["entries"]
    [tool] = [e for e in entries if e["kind"] == "tool" and e["tool_name"] == "ask_writer"]
    assert tool["sub_agent"]["agent_id"] == "writer"
    return [e["text"] for e in entries if e.get("parent") == tool["id"]]


async def test_the_parent_s_stored_log_holds_the_sub_run_s_deltas_and_messages_once(
    store_path: Path,
) -> None:
    streamed: list[Any] = []
    request = agents.lead().prompt("write and publish")
    run = request.create_run()
    run.subscribe(streamed.append)
    run.start()
    await wait_on_events(run, lambda: bool(run.interactions.pending))
    [record] = run.interactions.pending
    store = get_store()
    assert store is not None
    store.approve(run.run_id, record.id)
    response = await asyncio.wait_for(run.wait(), 30)
    assert response.output == f"lead: published {len(agents.ANSWER)} characters"
    [sub] = run.children

    # the live stream is unchanged: every delta, each an agent_tool_event
    live = [e for e in nested(streamed) if e.event.type == "text_delta"]
    assert [e.event.delta for e in live] == agents.WORDS
    assert nested(streamed)[-1].event.type == "final"
    assert nested(streamed)[-1].event.messages  # the sub-run's conversation, live

    # the parent's log in memory: one event per entry of the sub-run's log, the text whole
    assert [e.event.type for e in nested(run.events)] == [e.type for e in sub.events]
    assert nested_text(run.events) == agents.ANSWER

    # the parent's stored rows: no copy of the deltas, of the sub-run's messages or output
    rows = stored_rows(store_path, run.run_id)
    sub_rows = stored_rows(store_path, sub.run_id)
    assert rows.count("paragraph200 ") == 1  # the ask_writer tool_result event, the parent's own
    assert sub_rows.count("paragraph200 ") >= 1
    assert "agent_tool_event" not in rows
    assert rows.count('"sub_run_event"') == len(sub.events)
    assert len(rows) < 2 * len(agents.ANSWER)

    # read back, the nested block is whole: the text, the sub-run's final with its messages
    log = store.events(run.run_id)
    assert [e.event.type for e in nested(log)] == [
        "turn_start",
        "generation_start",
        "text_delta",
        "turn_end",
        "final",
    ]
    assert nested_text(log) == agents.ANSWER
    final = nested(log)[-1]
    assert final.run_id == sub.run_id and final.tool_call_id == "w1"
    assert final.agent_name == "Writer"
    assert final.event.messages[-1].content == agents.ANSWER
    assert [e.type for e in log if e.type != "agent_tool_event"] == [
        e.type for e in run.events if e.type != "agent_tool_event"
    ]
    assert log[-1].type == "final" and log[-1].output == response.output
    assert drawn_nested_text(log, run.run_id) == [agents.ANSWER]


async def test_a_view_subscribed_while_the_sub_agent_streams_gets_its_text_once(
    store_path: Path,
) -> None:
    request = agents.lead().prompt("write and publish")
    run = request.create_run()
    late: list[Any] = []
    subscribed = False

    def on_event(event: Any) -> None:
        nonlocal subscribed
        if (
            not subscribed
            and event.type == "agent_tool_event"
            and event.event.type == "text_delta"
            and event.event.delta == agents.WORDS[100]
        ):
            subscribed = True
            run.subscribe(late.append)  # replays the log so far, then gets the rest

    run.subscribe(on_event)
    run.start()
    await wait_on_events(run, lambda: bool(run.interactions.pending))
    assert subscribed
    assert nested_text(late) == agents.ANSWER
    run.cancel("done with the test")
    with pytest.raises(PromptCancelledError):
        await asyncio.wait_for(run.wait(), 30)


# -- resumed in another process ------------------------------------------------------------------


@pytest.fixture
def env(store_path: Path) -> dict[str, str]:
    """A child's environment, with the test's store (SQLite)."""
    return child_environ()


def test_a_resumed_run_shows_the_nested_block_once_and_stores_what_follows_in_place(
    env: dict[str, str],
) -> None:
    location = env["ANVIA_NOTEBOOK_STORE"]
    child = start_python("import subagent_stream_agents; subagent_stream_agents.run()", env)
    store = RunStore(location)
    try:
        tops = lambda: [r for r in store.runs() if r.parent_run_id is None]  # noqa: E731
        [top] = wait_until(tops, child, "the lead's run")
        [pending] = wait_until(lambda: store.pending(top.run_id), child, "the approval")
        kill(child)
        before = store.events(top.run_id)
        assert nested_text(before) == agents.ANSWER
        assert drawn_nested_text(before, top.run_id) == [agents.ANSWER]

        store.approve(top.run_id, pending.id)
        response = asyncio.run(_resume(top.run_id))
        assert response.output == f"lead: published {len(agents.ANSWER)} characters"

        after = store.events(top.run_id)
        assert nested_text(after) == agents.ANSWER
        assert drawn_nested_text(after, top.run_id) == [agents.ANSWER]
        assert [e.type for e in after[: len(before)]] == [e.type for e in before]
        kinds = [e.type for e in after[len(before) :]]
        assert "tool_result" in kinds and kinds[-1] == "final"
        assert after[-1].output == response.output
        assert stored_rows(location, top.run_id).count("paragraph200 ") == 1
    finally:
        store.close()


async def _resume(run_id: str) -> Any:
    run = agents.lead().resume(run_id).create_run()
    assert nested_text(run.events) == agents.ANSWER  # the resumed run's log, for its view
    run.start()
    return await asyncio.wait_for(run.wait(), 30)

"""A run whose process died within a second of its tool call (a tool that kills its kernel):
the event log, written at most a second later than the conversation, does not hold the call.
The transcript of the resumed run shows the call with its arguments, then its result; before,
it showed a result under a call without arguments (and none of the turn's text)."""

from __future__ import annotations

import asyncio
import json

import pytest
import store_agents
from child_processes import agents_environ
from test_resume import killed_while_the_tool_runs, only_run

from anvia_notebook import RunStore
from anvia_notebook.notebook._session import TranscriptSession
from anvia_notebook.notebook._snapshot import render_text

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def env(store_location, tmp_path, monkeypatch):
    return agents_environ(tmp_path, monkeypatch)


async def test_a_call_the_event_log_missed_is_shown_with_its_arguments_after_resume(
    env, store_location
):
    killed_while_the_tool_runs(env)
    store = RunStore(store_location)
    run_id = only_run(store).run_id
    # The process died before the log's next write (the conversation is written before a tool
    # runs, the log within a second): the log holds none of the turn's events.
    for table in ("events", "event_parts"):
        store._q(f"DELETE FROM {table} WHERE run_id = ?", (run_id,))
    assert store.events(run_id) == []
    run = store_agents.agent("plain").resume(run_id).create_run()
    session = TranscriptSession(agent_id="banker", loop=asyncio.get_running_loop())
    session._send = lambda message: None  # type: ignore[method-assign]
    session.attach(run)
    run.start()
    response = await asyncio.wait_for(run.wait(), 20)
    assert "ToolCallInterrupted" in response.output
    assert store_agents.effects() == ["started a1 5"]  # never run twice
    [tool] = [e for e in session.state()["entries"] if e["kind"] == "tool"]
    assert tool["tool_name"] == "transfer"
    assert json.loads(tool["arguments"]) == {"account": "a1", "amount": 5}
    assert "ToolCallInterrupted" in tool["result"]
    text = render_text(session.state())
    assert '"account":"a1"' in text.replace(" ", "")
    # (and the store's log of the resumed run holds the call once, before its result)
    kinds = [type(e).__name__ for e in store.events(run_id)]
    assert kinds.count("ToolCallEvent") == 1
    assert kinds.index("ToolCallEvent") < kinds.index("ToolResultEvent")
    store.close()

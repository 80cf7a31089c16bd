"""A sub-agent's events in the transcript (API.md section 14): drawn inside the tool call that
runs it (``parent``), the tool entry naming the sub-agent, its approval with the path, the
status line the top-level run's (waiting while a nested approval waits); the ops bring a page to
the same state (the wire protocol validates them)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest
from notebook_helpers import Recorder

from anvia_notebook import CallbackHumanInput
from anvia_notebook.human import wait_for_a_decision

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import subagent_agents


@pytest.mark.parametrize("stream", [True, False])
async def test_a_nested_approval_is_drawn_inside_the_sub_agent_s_tool_call(
    stream: bool, tmp_path: Path, monkeypatch: Any
) -> None:
    """Also from a sub-agent called with ``stream=False`` (its approval was held on the
    top-level run, and the cell, never told of it, showed no buttons: the run waited for ever):
    its approvals and questions are shown all the same, and nothing else of its work."""
    monkeypatch.setenv("ANVIA_TEST_EFFECTS", str(tmp_path / "effects.txt"))
    recorder = Recorder("lead")
    transcript = recorder.transcript
    waiting = asyncio.Event()
    human = CallbackHumanInput(approve=lambda request: wait_for_a_decision())
    run = subagent_agents.lead(stream=stream).prompt("which region?").human_input(human)
    run = run.store(None)
    agent_run = run.create_run()
    transcript.begin_run(agent_run.run_id, "lead", "which region?")

    def on_event(event: Any) -> None:
        transcript.apply(event)
        if agent_run.interactions.pending:
            waiting.set()

    agent_run.subscribe(on_event)
    agent_run.start()
    await asyncio.wait_for(waiting.wait(), 10)
    recorder.check()
    entries = transcript.entries
    [lead_tool] = [e for e in entries if e["kind"] == "tool" and "parent" not in e]
    assert lead_tool["tool_name"] == "ask_analyst"
    assert lead_tool["sub_agent"] == {
        "agent_id": "analyst",
        "agent_name": None,
        "run_id": agent_run.children[0].run_id,
    }
    nested = [e for e in entries if e.get("parent") == lead_tool["id"]]
    [sql] = [e for e in nested if e["kind"] == "tool"]
    assert sql["tool_name"] == "run_sql" and sql["status"] == "approval_required"
    assert sql["approval"]["path"] == ["lead", "analyst"]
    assert sql["approval"]["status"] == "pending"
    assert transcript.status["state"] == "waiting"
    assert transcript.status["turn"] == 1  # the lead's turn, not the analyst's

    [record] = agent_run.interactions.pending
    agent_run.interactions.decide(record.id, approved=True, via="widget")
    await asyncio.wait_for(agent_run.wait(), 10)
    recorder.check()
    entries = transcript.entries
    nested = [e for e in entries if e.get("parent") == lead_tool["id"]]
    sql = next(e for e in nested if e["kind"] == "tool")
    assert sql["status"] == "done" and sql["approval"]["status"] == "approved"
    answers = [e["text"] for e in nested if e["kind"] == "assistant"]
    assert answers == (["analyst: west +12% (select 1)"] if stream else [])
    assert [e["kind"] for e in nested if e["kind"] != "assistant"] == ["tool"]
    top_answer = [e for e in entries if e["kind"] == "assistant" and "parent" not in e]
    assert top_answer[-1]["text"] == "lead: analyst: west +12% (select 1)"
    lead_tool = next(e for e in entries if e["id"] == lead_tool["id"])
    assert lead_tool["status"] == "done"
    assert transcript.status["state"] == "success"
    # a plain run's entries carry no parent and no path (unchanged on the wire)
    assert all("path" not in (e.get("approval") or {}) for e in entries if "parent" not in e)


async def test_three_levels_nest_inside_each_other() -> None:
    from anvia_notebook import AgentBuilder
    from anvia_notebook.models import QueueModel

    from helpers import call

    deep = AgentBuilder("deep", QueueModel(["deepest"])).build()
    mid = AgentBuilder("mid", QueueModel([call("ask_deep", {"prompt": "x"}), "mid done"])).tool(
        deep.as_tool(name="ask_deep")
    )
    top = AgentBuilder("top", QueueModel([call("ask_mid", {"prompt": "y"}), "top done"])).tool(
        mid.build().as_tool(name="ask_mid")
    )
    recorder = Recorder("lead")
    transcript = recorder.transcript
    run = top.build().prompt("go").store(None).create_run()
    transcript.begin_run(run.run_id, "top", "go")
    run.subscribe(transcript.apply)
    run.start()
    await run.wait()
    recorder.check()
    entries = transcript.entries
    by_id = {e["id"]: e for e in entries}
    deepest = next(e for e in entries if e.get("text") == "deepest")
    chain = []
    parent = deepest.get("parent")
    while parent is not None:
        chain.append(by_id[parent]["tool_name"])
        parent = by_id[parent].get("parent")
    assert chain == ["ask_deep", "ask_mid"]
    assert [e["text"] for e in entries if e["kind"] == "assistant" and "parent" not in e] == [
        "top done"
    ]


def test_the_saved_copy_indents_a_sub_agent_s_entries_and_names_the_path() -> None:
    from anvia_notebook.notebook._snapshot import render_html, render_text

    transcript = {
        "status": {
            "state": "waiting",
            "turn": 1,
            "input_tokens": 0,
            "output_tokens": 0,
            "error": None,
            "agent_id": "lead",
            "run_id": "run_top",
        },
        "entries": [
            {"kind": "user", "id": "e1", "text": "Which region?"},
            {
                "kind": "tool",
                "id": "e2",
                "turn": 1,
                "tool_name": "ask_analyst",
                "tool_call_id": "a1",
                "arguments": "{}",
                "status": "running",
                "result": None,
                "is_error": False,
                "output": "",
                "approval": None,
                "question": None,
                "sub_agent": {"agent_id": "analyst", "agent_name": "Analyst", "run_id": "run_sub"},
            },
            {"kind": "assistant", "id": "e3", "turn": 1, "text": "Checking.", "parent": "e2"},
            {
                "kind": "tool",
                "id": "e4",
                "turn": 1,
                "tool_name": "run_sql",
                "tool_call_id": "s1",
                "arguments": "{}",
                "status": "approval_required",
                "result": None,
                "is_error": False,
                "output": "",
                "question": None,
                "parent": "e2",
                "approval": {
                    "id": "approval_1",
                    "status": "pending",
                    "reason": "Query?",
                    "args": {},
                    "decided_by": None,
                    "decided_at": None,
                    "decision_reason": None,
                    "edited_args": None,
                    "path": ["lead", "analyst"],
                },
            },
        ],
        "seq": 1,
    }
    text = render_text(transcript)
    assert "  Analyst: Checking." in text
    assert "  Tool lead \u203a analyst \u203a run_sql [Approval required]" in text
    assert "approve run_top approval_1  (or reject: lead \u203a analyst \u203a run_sql)" in text
    html = render_html(transcript)
    assert '<div style="margin-left:16px"><div' in html
    assert "<strong>Analyst</strong>" in html
    assert "lead \u203a analyst \u203a run_sql</code>" in html

"""MCP calls in runs that outlive their process: killed (SIGKILL) while an MCP approval waits,
the resumed run makes the call exactly once after approval; a call that had started when the
process died is reported interrupted, unless the server declares it ``idempotentHint: true``."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import mcp_store_agents
import pytest
from child_processes import child_environ, kill, start_python, wait_until
from mcp_helpers import alive

from anvia_notebook import RunStore, mcp

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(autouse=True)
def _close_sessions():
    yield
    asyncio.run(mcp.close_all())


def _environ(tmp_path, monkeypatch):
    monkeypatch.setenv("ANVIA_TEST_EFFECTS", str(tmp_path / "effects.txt"))
    return child_environ()


@pytest.fixture
def env(store_location, tmp_path, monkeypatch):
    """With each store backend (SQLite and PostgreSQL)."""
    return _environ(tmp_path, monkeypatch)


@pytest.fixture
def sqlite_location(tmp_path, monkeypatch):
    """SQLite only: what these tests check does not depend on the backend (the approval test
    runs on both), and each test starts several processes."""
    from anvia_notebook import store as store_module

    location = str(tmp_path / "store" / "runs.sqlite")
    monkeypatch.setenv("ANVIA_NOTEBOOK_STORE", location)
    store_module._reset_for_tests()
    yield location
    store_module._reset_for_tests()


@pytest.fixture
def sqlite_env(sqlite_location, tmp_path, monkeypatch):
    return _environ(tmp_path, monkeypatch)


def effects() -> list[str]:
    path = Path(os.environ["ANVIA_TEST_EFFECTS"])
    return path.read_text().splitlines() if path.exists() else []


def start_child(environ, tool, **options):
    code = f"import mcp_store_agents; mcp_store_agents.run({tool!r}, **{options!r})"
    return start_python(code, environ)


async def settle(run, store):
    for _ in range(2000):
        pending = store.pending(run.run_id)
        if pending:
            return pending
        await asyncio.sleep(0.01)
    raise AssertionError("nothing pending after resume")


async def test_killed_while_an_mcp_approval_waits_then_approved_calls_exactly_once(
    env, store_location
):
    child = start_child(env, "write_note")
    store = RunStore(store_location)
    [approval] = wait_until(lambda: store.pending(), child, "the approval")
    assert "write_note" in approval.reason and "'toolbox'" in approval.reason
    kill(child)
    assert effects() == []
    [summary] = store.runs()
    run = mcp_store_agents.agent("write_note").resume(summary.run_id).start()
    [again] = await settle(run, store)
    assert again.id == approval.id
    store.approve(summary.run_id, approval.id)
    response = await asyncio.wait_for(run.wait(), 60)
    assert response.output == "Result: wrote k"
    assert effects() == ["write_note k"]  # exactly once


async def test_a_started_mcp_call_is_reported_interrupted_after_the_process_died(
    sqlite_env, sqlite_location
):
    env, store_location = sqlite_env, sqlite_location
    child = start_child(env, "write_note", hang=True, approval="never")
    wait_until(lambda: effects() == ["write_note k"], child, "the call to start")
    kill(child)
    store = RunStore(store_location)
    [summary] = store.runs()
    agent = mcp_store_agents.agent("write_note", approval="never")
    response = await asyncio.wait_for(agent.resume(summary.run_id).send(), 60)
    assert "ToolCallInterrupted" in response.output
    assert effects() == ["write_note k"]  # not made again


async def test_an_idempotent_mcp_call_is_made_again_on_resume(sqlite_env, sqlite_location):
    env, store_location = sqlite_env, sqlite_location
    child = start_child(env, "set_flag", hang=True)
    store = RunStore(store_location)
    [approval] = wait_until(lambda: store.pending(), child, "the approval")
    store.approve(approval.run_id, approval.id)
    wait_until(lambda: effects() == ["set_flag x"], child, "the call to start")
    kill(child)
    [summary] = store.runs()
    response = await asyncio.wait_for(
        mcp_store_agents.agent("set_flag").resume(summary.run_id).send(), 60
    )
    assert response.output == "Result: flag x set"
    assert effects() == ["set_flag x", "set_flag x"]


async def test_a_question_of_a_server_whose_call_died_with_its_process_cannot_be_answered(
    sqlite_env, sqlite_location
):
    """The command line accepted the answer ("Answered", exit 0) and the record said so, but
    the call had ended with the process: the answer never reached the server."""
    from anvia_notebook import DecisionRefusedError

    env, store_location = sqlite_env, sqlite_location
    child = start_child(env, "ask_name")
    store = RunStore(store_location)
    [question] = wait_until(lambda: store.pending(), child, "the server's question")
    kill(child)
    answer = [{"questionId": "name", "answer": "Rex", "custom": True}]
    with pytest.raises(DecisionRefusedError, match="asked by an MCP server during a call that"):
        store.answer(question.run_id, question.id, answer)
    response = await asyncio.wait_for(
        mcp_store_agents.agent("ask_name").resume(question.run_id).send(), 60
    )
    assert "ToolCallInterrupted" in response.output
    [closed] = store.interactions(question.run_id)
    assert (closed.status, closed.decided_by, closed.answers) == ("cancelled", "runtime", [])
    # Closed with its call, saying why (before: pending until the resumed run ended, then
    # "The run ended before this was decided.")
    assert "ended with the process that ran it" in closed.decision_reason
    [trace] = [c for c in response.trace.tool_calls if c.name == "ask_name"]
    assert trace.question.decision_reason == closed.decision_reason


def test_the_killed_processs_server_does_not_outlive_it(sqlite_env):
    env = sqlite_env
    child = start_child(env, "write_note", hang=True, approval="never")
    wait_until(lambda: effects() == ["write_note k"], child, "the call to start")
    servers = [int(p) for p in os.listdir("/proc") if p.isdigit() and _parent(int(p)) == child.pid]
    assert servers, "the child's server process was not found"
    kill(child)
    deadline = time.monotonic() + 20
    while any(alive(pid) for pid in servers):
        assert time.monotonic() < deadline, "a server process outlived the killed process"
        time.sleep(0.05)


def _parent(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            return int(handle.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None

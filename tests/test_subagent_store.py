"""Sub-agents in the run store and the traces (API.md section 14): sub-runs stored with their
parent's ids and listed under it, the top-level run's pending interactions include the nested
ones, which the store and the command line decide given the top-level run's id or the sub-run's;
the sub-run's ``invoke_agent`` span nests under the parent's ``execute_tool`` span; a process
killed with SIGKILL while a nested approval or question waits (or while the sub-agent's tool
runs) resumes with ``agent.resume(top_run_id)``, the whole tree, nothing run twice."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import subagent_agents
from child_processes import child_environ, kill, start_python, wait_until

from anvia_notebook import (
    AgentBuilder,
    DecisionRefusedError,
    PromptCancelledError,
    RunNotFoundError,
    RunOwnedError,
    RunStore,
)
from anvia_notebook.__main__ import main as cli
from anvia_notebook.models import QueueModel

from helpers import call, wait_on_events

pytestmark = pytest.mark.timeout(120)


# -- in one process ------------------------------------------------------------------------------


async def test_a_decision_for_a_sub_run_whose_top_level_run_goes_on_is_not_said_to_wait(
    store_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sub-agent's run still names a process that is gone (its top-level run was resumed
    here and has not reached that call yet): the command line said nothing ran the run and
    told the person to resume the top-level run, which was running."""
    monkeypatch.setenv("ANVIA_TEST_EFFECTS", str(tmp_path / "effects.txt"))
    run = subagent_agents.lead().prompt("which region?").start()
    await wait_on_events(run, lambda: bool(run.interactions.pending))
    sub = run.children[0]
    other = RunStore(store_path)
    try:
        with sqlite3.connect(store_path) as db:  # (as a process that has ended left it)
            db.execute("UPDATE runs SET owner_pid = 999999999 WHERE run_id = ?", (sub.run_id,))
        assert other.decision_waits(sub.run_id) is None
        assert "are sent to run" in other.edit_waits(sub.run_id, "approval_x")  # (not "wait")
        with sqlite3.connect(store_path) as db:  # the top-level run's process gone too
            db.execute("UPDATE runs SET owner_pid = 999999999 WHERE run_id = ?", (run.run_id,))
        said = other.decision_waits(sub.run_id)
        assert said is not None and f"agent.resume({run.run_id!r})" in said
    finally:
        with sqlite3.connect(store_path) as db:  # (this process's again)
            db.execute("UPDATE runs SET owner_pid = ?", (os.getpid(),))
        run.cancel()
        with pytest.raises(PromptCancelledError):
            await asyncio.wait_for(run.wait(), 10)
        other.close()


async def test_the_store_lists_and_decides_a_nested_approval_by_the_top_level_run_id(
    store_path: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("ANVIA_TEST_EFFECTS", str(tmp_path / "effects.txt"))
    run = subagent_agents.lead().prompt("which region?").start()
    await wait_on_events(run, lambda: bool(run.interactions.pending))
    [record] = run.interactions.pending
    sub = run.children[0]
    other = RunStore(store_path)  # another connection, as another process would have
    try:
        [stored] = other.pending(run.run_id)
        assert stored.id == record.id and stored.run_id == sub.run_id
        assert stored.path == ["lead", "analyst"]
        # The command line says which agents it comes from (two may wait at once).
        assert cli(["show", run.run_id, "--store", str(store_path)]) == 0
        shown = capsys.readouterr().out
        assert f"Pending approval {record.id}: {record.tool_name} " in shown
        assert "\n  asked by: lead \u203a analyst\n" in shown
        assert [r.id for r in other.pending(sub.run_id)] == [record.id]
        top, child = other.runs()[:2]
        assert (top.run_id, top.parent_run_id, top.pending, top.status) == (
            run.run_id,
            None,
            1,
            "waiting",
        )
        assert (child.run_id, child.parent_run_id, child.agent_id) == (
            sub.run_id,
            run.run_id,
            "analyst",
        )
        assert other.get(sub.run_id).parent_run_id == run.run_id
        calls = {e.internal_call_id for e in run.events if e.type == "agent_tool_event"}
        assert calls == {child.parent_call_id} == {sub.state.parent_call_id}
        assert top.parent_call_id is None
        assert other.run_tree(run.run_id) == [run.run_id, sub.run_id]
        decided = other.approve(run.run_id, record.id, reason="fine")  # the top-level id
        assert decided.status == "approved"
        response = await asyncio.wait_for(run.wait(), 30)
        assert response.output == "lead: analyst: west +12% (select 1)"
        assert subagent_agents.effects() == ["started select 1", "done select 1"]
        with pytest.raises(DecisionRefusedError, match="No stored run 'run_unrelated'") as no_run:
            other.approve("run_unrelated", record.id)
        assert isinstance(no_run.value, RunNotFoundError)  # (the command line's hint goes by it)
        with pytest.raises(Exception, match="Unknown approval"):  # (a run of another tree)
            other.approve(other.runs()[-1].run_id, "approval_of_no_run")
    finally:
        other.close()


def test_a_sub_run_whose_row_a_store_of_an_earlier_version_wrote_is_listed_with_its_parent_call(
    tmp_path: Path,
) -> None:
    """Such a row has no ``parent_call_id`` of its own (the column came later): its state's."""
    path = tmp_path / "runs.sqlite"
    analyst = AgentBuilder("analyst", QueueModel(["42"])).build()
    lead = AgentBuilder("lead", QueueModel([call("ask_analyst", {"prompt": "q"}), "done"]))
    lead.tool(analyst.as_tool(name="ask_analyst")).build().prompt("x").store(path).send_sync()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE runs SET parent_call_id = NULL")
    db.close()
    store = RunStore(path)
    try:
        [sub] = [run for run in store.runs() if run.agent_id == "analyst"]
        assert sub.parent_call_id == store.get(sub.run_id).parent_call_id
        assert sub.parent_call_id is not None
    finally:
        store.close()


async def test_the_sub_run_s_span_nests_under_the_parent_s_execute_tool_span(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from anvia_notebook import instrument

    monkeypatch.setenv("ANVIA_TEST_EFFECTS", str(tmp_path / "effects.txt"))
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrument(provider)
    try:
        response = (
            await subagent_agents.lead()
            .prompt("which region?")
            .approvals(lambda request: True)
            .store(None)
            .send()
        )
    finally:
        instrument(False)
    assert response.output.startswith("lead: analyst:")
    spans = {span.name: span for span in exporter.get_finished_spans()}
    lead_root = spans["invoke_agent lead"]
    tool = spans["execute_tool ask_analyst"]
    analyst_root = spans["invoke_agent analyst"]
    sql = spans["execute_tool run_sql"]
    assert tool.parent.span_id == lead_root.context.span_id
    assert analyst_root.parent.span_id == tool.context.span_id
    assert sql.parent.span_id == analyst_root.context.span_id
    assert len({s.context.trace_id for s in exporter.get_finished_spans()}) == 1


# -- a process killed with SIGKILL ---------------------------------------------------------------


@pytest.fixture
def env(store_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A child's environment: the test's store (SQLite), its effects file."""
    monkeypatch.setenv("ANVIA_TEST_EFFECTS", str(tmp_path / "effects.txt"))
    monkeypatch.delenv("ANVIA_TEST_BLOCK_TOOL", raising=False)
    return child_environ()


def start_child(environ: dict[str, str], prompt: str, **extra: str) -> subprocess.Popen[str]:
    code = f"import subagent_agents; subagent_agents.run({prompt!r})"
    return start_python(code, {**environ, **extra})


def top_run(store: RunStore) -> Any:
    tops = [run for run in store.runs() if run.parent_run_id is None]
    return tops[0] if tops else None


def killed_at_the_nested_approval(env: dict[str, str], store: RunStore) -> tuple[Any, Any]:
    """The lead asked its analyst, whose approval waits; then the process is killed (SIGKILL):
    the lead's run and the approval."""
    child = start_child(env, "which region?")
    top = wait_until(lambda: top_run(store), child, "the lead's run")
    [pending] = wait_until(lambda: store.pending(top.run_id), child, "the nested approval")
    kill(child)
    return top, pending


def test_killed_while_a_nested_approval_waits_then_decided_by_the_cli_and_resumed(
    env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    location = env["ANVIA_NOTEBOOK_STORE"]
    store = RunStore(location)
    try:
        child = start_child(env, "which region?")
        top = wait_until(lambda: top_run(store), child, "the lead's run")
        [pending] = wait_until(lambda: store.pending(top.run_id), child, "the nested approval")
        assert pending.path == ["lead", "analyst"] and pending.tool_name == "run_sql"
        kill(child)
        listed = store.runs()
        assert [(r.agent_id, r.status) for r in listed] == [
            ("lead", "interrupted"),
            ("analyst", "interrupted"),
        ]
        assert listed[0].pending == 1
        # the sub-agent's call is taken up again with its run: not said to be interrupted
        capsys.readouterr()
        assert cli(["--store", location, "show", top.run_id]) == 0
        assert "had started" not in capsys.readouterr().out
        first_call = listed[1].parent_call_id
        assert first_call is not None and first_call == store.get(listed[1].run_id).parent_call_id
        # the command line decides it given the top-level run's id
        assert cli(["--store", location, "approve", top.run_id, pending.id]) == 0
        assert cli(["--store", location, "reject", top.run_id, pending.id]) == 1  # refused
        assert subagent_agents.effects() == []
        response = subagent_agents.lead().resume(top.run_id).send_sync()
        assert response.output == "lead: analyst: west +12% (select 1)"
        assert subagent_agents.effects() == ["started select 1", "done select 1"]
        sub = store.runs()[1]
        assert sub.parent_run_id == top.run_id and sub.status == "success"
        # the call that ran it this time (a resumed call has an internal id of its own)
        assert sub.parent_call_id == store.get(sub.run_id).parent_call_id != first_call
        assert store.get(top.run_id).status == "success"
    finally:
        store.close()


def test_show_by_the_lead_s_run_id_keeps_listing_a_refused_edit_of_the_sub_agent_s_approval(
    env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """An edit sent by the lead's run id (as ``show`` suggests), then a plain approval: once
    decided, ``show`` by the lead's id no longer listed the edit nor said it was refused."""
    location = env["ANVIA_NOTEBOOK_STORE"]
    store = RunStore(location)
    try:
        top, pending = killed_at_the_nested_approval(env, store)
        edit = json.dumps({"sql": "select 2"})
        assert cli(["--store", location, "approve", top.run_id, pending.id, "--args", edit]) == 0
        assert cli(["--store", location, "approve", top.run_id, pending.id]) == 0
        response = subagent_agents.lead().resume(top.run_id).send_sync()
        assert response.output == "lead: analyst: west +12% (select 1)"
        capsys.readouterr()
        assert cli(["--store", location, "show", top.run_id]) == 0
        shown = capsys.readouterr().out
        assert f"Edited arguments for run_sql ({pending.id}, approved), refused:" in shown
        assert cli(["--store", location, "show", top.run_id, "--json"]) == 0
        [refused] = json.loads(capsys.readouterr().out)["refused_edits"]
        assert (refused["approval_id"], refused["args"]) == (pending.id, {"sql": "select 2"})
    finally:
        store.close()


@contextlib.contextmanager
def held_elsewhere(env: dict[str, str], code: str) -> Iterator[tuple[RunStore, Any, Any, Any, Any]]:
    """The lead's run killed at its analyst's approval, then ``code`` (which prints "claimed"
    once it holds a run of that tree) run by another live process: yields ``(store, top,
    pending, sub, process)``; the process is killed at the end unless the test did (``kill`` sets
    ``process.returncode``)."""
    store = RunStore(env["ANVIA_NOTEBOOK_STORE"])
    process = None
    try:
        top, pending = killed_at_the_nested_approval(env, store)
        [sub] = store.sub_runs(top.run_id)
        process = start_python(code.format(top=top.run_id, sub=sub.run_id), env)
        assert process.stdout is not None and process.stdout.readline() == "claimed\n"
        yield store, top, pending, sub, process
    finally:
        if process is not None and process.returncode is None:
            kill(process)
        store.close()


def test_a_run_whose_sub_agent_s_run_goes_on_elsewhere_is_not_resumed_beside_it(
    env: dict[str, str],
) -> None:
    """The sub-agent's run resumed on its own in another process, then the lead's run resumed:
    the lead's call was made again, its sub-run refused as owned, and the lead's model told the
    call failed; the lead's run ended ``success`` while the sub-run went on, its effect
    unknown to the lead. Now the lead's resume is refused while that process runs it."""
    location = env["ANVIA_NOTEBOOK_STORE"]
    code = (
        "import subagent_agents\n"
        "from anvia_notebook import StoreHumanInput\n"
        "request = subagent_agents.analyst_agent().resume({sub!r})\n"
        "print('claimed', flush=True)\n"
        "request.human_input(StoreHumanInput()).send_sync()\n"
    )
    with held_elsewhere(env, code) as (store, top, pending, sub, elsewhere):
        with pytest.raises(RunOwnedError, match=f"sub-agent {sub.run_id!r} is still running"):
            subagent_agents.lead().resume(top.run_id)
        assert store.get(top.run_id).status == "interrupted"
        kill(elsewhere)
        request = subagent_agents.lead().resume(top.run_id)  # (once that process is gone)
        assert cli(["--store", location, "approve", top.run_id, pending.id]) == 0
        assert request.send_sync().output == "lead: analyst: west +12% (select 1)"
        assert subagent_agents.effects() == ["started select 1", "done select 1"]


def test_a_sub_agent_s_run_is_not_resumed_alone_while_its_parent_runs_elsewhere(
    env: dict[str, str],
) -> None:
    """The other order of the test above: the lead's run resumed by a live process that has not
    reached the sub-agent's call yet, then its sub-run resumed alone here: it was taken, and
    the lead's call then refused as owned, told to its model as failed."""
    location = env["ANVIA_NOTEBOOK_STORE"]
    code = (
        "import time\n"
        "from anvia_notebook import RunStore\n"
        f"RunStore({location!r}).claim_run({{top!r}})\n"
        "print('claimed', flush=True)\n"
        "time.sleep(600)\n"
    )
    with held_elsewhere(env, code) as (_, top, pending, sub, holder):
        with pytest.raises(RunOwnedError, match=f"sub-agent's run of {top.run_id!r}"):
            subagent_agents.analyst_agent().resume(sub.run_id)
        kill(holder)
        request = subagent_agents.lead().resume(top.run_id)  # (the tree, once it is gone)
        assert cli(["--store", location, "approve", top.run_id, pending.id]) == 0
        assert request.send_sync().output == "lead: analyst: west +12% (select 1)"


def test_killed_while_a_nested_question_waits_then_answered_and_resumed(
    env: dict[str, str],
) -> None:
    location = env["ANVIA_NOTEBOOK_STORE"]
    store = RunStore(location)
    try:
        child = start_child(env, "ask which table")
        top = wait_until(lambda: top_run(store), child, "the lead's run")
        [question] = wait_until(lambda: store.pending(top.run_id), child, "the nested question")
        assert question.kind == "question" and question.path == ["lead", "analyst"]
        kill(child)
        sub_id = question.run_id
        assert sub_id != top.run_id
        # answered given the sub-run's id this time
        store.answer(sub_id, question.id, [{"questionId": "table", "answer": "sales"}])
        request = subagent_agents.lead().resume(top.run_id).approvals(lambda request: True)
        response = request.send_sync()
        assert response.output == "lead: analyst: west +12% (from sales)"
        assert subagent_agents.effects() == ["started from sales", "done from sales"]
        # the question was asked once: the resumed sub-run took the stored answers
        assert len(store.interactions(sub_id)) == 2  # the question and run_sql's approval
    finally:
        store.close()


def test_killed_while_the_sub_agent_s_tool_runs_it_is_not_run_again(
    env: dict[str, str],
) -> None:
    location = env["ANVIA_NOTEBOOK_STORE"]
    store = RunStore(location)
    try:
        child = start_child(env, "which region?", ANVIA_TEST_BLOCK_TOOL="1")
        top = wait_until(lambda: top_run(store), child, "the lead's run")
        [pending] = wait_until(lambda: store.pending(top.run_id), child, "the nested approval")
        store.approve(top.run_id, pending.id)
        wait_until(lambda: subagent_agents.effects(), child, "run_sql to start")
        kill(child)
        response = subagent_agents.lead().resume(top.run_id).send_sync()
        assert subagent_agents.effects() == ["started select 1"]  # never twice
        assert response.output.startswith("lead: analyst: ToolCallInterrupted:")
        tree = store.run_tree(top.run_id)
        assert len(tree) == 2  # the sub-run was taken up, not started again
    finally:
        store.close()


def test_a_resumed_run_stopped_before_it_reaches_the_sub_agent_ends_the_whole_tree(
    env: dict[str, str],
) -> None:
    """Stopped at once after a resume (before its call to the sub-agent is taken up again):
    the sub-agent's run and its approval end with it (before: the approval stayed pending for
    ever, the sub-run ``interrupted``, and the command line accepted a decision nothing would
    carry out)."""
    location = env["ANVIA_NOTEBOOK_STORE"]
    store = RunStore(location)
    try:
        top, pending = killed_at_the_nested_approval(env, store)

        async def resume_and_stop() -> None:
            run = subagent_agents.lead().resume(top.run_id).start()
            run.cancel("Stop clicked.")
            with pytest.raises(Exception, match="Stop clicked"):
                await asyncio.wait_for(run.wait(), 30)

        asyncio.run(resume_and_stop())
        assert [(r.agent_id, r.status, r.pending) for r in store.runs()] == [
            ("lead", "cancelled", 0),
            ("analyst", "cancelled", 0),
        ]
        [closed] = store.interactions(pending.run_id)
        assert (closed.status, closed.decided_by) == ("cancelled", "runtime")
        assert store.get(pending.run_id).cancel_reason == (
            "The run that started this sub-agent's run ended before it did."
        )
        assert cli(["--store", location, "approve", top.run_id, pending.id]) == 1
        assert subagent_agents.effects() == []
    finally:
        store.close()


@pytest.mark.parametrize("nested", [False, True])
def test_a_decision_made_while_no_process_ran_the_run_is_told_when_it_resumes(
    env: dict[str, str], nested: bool
) -> None:
    """The resumed run's events (the transcript, a stream) say how the approval was decided,
    in the order section 6 gives (before: the request, then the result of the call, and the
    transcript showed the approval pending for ever)."""
    import store_agents

    location = env["ANVIA_NOTEBOOK_STORE"]
    store = RunStore(location)
    try:
        if nested:
            child = start_child(env, "which region?")
        else:
            child = start_python("import store_agents; store_agents.run('approval')", env)
        top = wait_until(lambda: top_run(store), child, "the run")
        [pending] = wait_until(lambda: store.pending(top.run_id), child, "the approval")
        kill(child)
        store.approve(top.run_id, pending.id, reason="ok by ops")
        agent = subagent_agents.lead() if nested else store_agents.agent("approval")
        agent.resume(top.run_id).send_sync()
        events = store.events(pending.run_id)
        kinds = [e.type for e in events if e.type.startswith("tool_")]
        # (the request is in the log when the killed process wrote it out in time)
        told_at = kinds.index("tool_approval_result")
        assert kinds[told_at + 1 :] == ["tool_result"]
        assert kinds.count("tool_approval_request") <= 1
        assert "tool_approval_request" not in kinds[told_at:]
        [told] = [e for e in events if e.type == "tool_approval_result"]
        assert told.approval.id == pending.id and told.approval.status == "approved"
        assert (told.approval.decided_via, told.approval.decision_reason) == ("store", "ok by ops")
    finally:
        store.close()


async def test_the_status_of_a_run_whose_sub_agent_waits_is_waiting(
    store_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As ``runs()`` lists it (before: ``RunStore.status`` and ``show`` said ``running``)."""
    monkeypatch.setenv("ANVIA_TEST_EFFECTS", str(tmp_path / "effects.txt"))
    run = subagent_agents.lead().prompt("which region?").start()
    await wait_on_events(run, lambda: bool(run.interactions.pending))
    other = RunStore(store_path)
    try:
        assert other.runs()[0].status == "waiting"
        assert other.status(run.run_id) == "waiting"
        [record] = run.interactions.pending
        other.approve(run.run_id, record.id)
        await asyncio.wait_for(run.wait(), 30)
        assert other.status(run.run_id) == "success"
    finally:
        other.close()


def test_two_sub_agents_waiting_side_by_side_wait_side_by_side_after_a_resume(
    env: dict[str, str],
) -> None:
    """The run's tool concurrency is stored: resumed without giving it again, both sub-agents'
    approvals are pending on the run (its handle) as in the store, and either is decided there
    (before: the second call waited behind the first, its approval listed by the store only and
    refused by the run as unknown)."""
    location = env["ANVIA_NOTEBOOK_STORE"]
    store = RunStore(location)
    try:
        code = "import subagent_agents; subagent_agents.run('east and west', concurrency=2)"
        child = start_python(code, env)
        top = wait_until(lambda: top_run(store), child, "the lead's run")
        wait_until(lambda: len(store.pending(top.run_id)) == 2, child, "both approvals")
        kill(child)

        async def resume() -> str:
            run = subagent_agents.lead().resume(top.run_id).start()
            await wait_on_events(run, lambda: len(run.interactions.pending) == 2)
            stored = sorted(r.id for r in store.pending(top.run_id))
            assert sorted(r.id for r in run.interactions.pending) == stored
            for record in run.interactions.pending:
                run.interactions.decide(record.id, approved=True, via="handle")
            return (await asyncio.wait_for(run.wait(), 30)).output

        output = asyncio.run(resume())
        assert output == "lead: analyst: west +12% (select 1) | analyst: west +12% (select 1)"
        assert sorted(subagent_agents.effects()) == ["done select 1"] * 2 + ["started select 1"] * 2
        assert store.get(top.run_id).tool_concurrency == 2
    finally:
        store.close()


def test_the_tree_and_top_run_of_a_run_the_store_does_not_have_are_refused(store_path):
    """``run_tree`` and ``top_run`` of a mistyped id said ``[id]`` and None, the answers of a
    stored top-level run without sub-agents (so a script resumed the typo as a top-level run),
    where every other read of a run (``get``, ``sub_runs``, ``pending``...) says it is not
    there."""
    model = QueueModel(["hello"])
    response = AgentBuilder("alone", model).build().prompt("hi").send_sync()
    with RunStore(store_path) as store:
        assert store.run_tree(response.run_id) == [response.run_id]
        assert store.top_run(response.run_id) is None
        with pytest.raises(RunNotFoundError, match="No stored run 'run_typo'"):
            store.run_tree("run_typo")
        with pytest.raises(RunNotFoundError, match="No stored run 'run_typo'"):
            store.top_run("run_typo")

"""The command line as a person uses it from a terminal of their own: the commands it suggests
work as written, with no `python` on PATH and from another folder."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import store_agents
from pydantic import BaseModel

from anvia_notebook import PromptCancelledError, RunStore

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def store_file(tmp_path, monkeypatch):
    location = tmp_path / "project" / ".anvia" / "runs.sqlite"
    monkeypatch.setenv("ANVIA_NOTEBOOK_STORE", str(location))
    monkeypatch.setenv("ANVIA_TEST_EFFECTS", str(tmp_path / "effects.txt"))
    monkeypatch.delenv("ANVIA_TEST_BLOCK_TOOL", raising=False)
    return location


def terminal(tmp_path: Path) -> dict[str, str]:
    """A terminal's environment with no `python` on PATH (and no store named by the environment):
    only the interpreter's full path finds the package (importable as an installed one would be)."""
    empty = tmp_path / "empty-bin"
    empty.mkdir(exist_ok=True)
    environ = {k: v for k, v in os.environ.items() if k != "ANVIA_NOTEBOOK_STORE"}
    return {**environ, "PATH": str(empty), "PYTHONPATH": str(ROOT)}


def run_line(command: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Run a printed command line as written, in a shell, from a folder of its own."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(exist_ok=True)
    return subprocess.run(
        ["/bin/bash", "-c", command],
        cwd=elsewhere,
        env=terminal(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )


def show(run_id: str, tmp_path: Path) -> list[str]:
    """`show` from the project's folder, with the store named relative to it."""
    result = subprocess.run(
        [sys.executable, "-m", "anvia_notebook", "show", run_id, "--store", ".anvia/runs.sqlite"],
        cwd=tmp_path / "project",
        env=terminal(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def suggested(lines: list[str], label: str) -> list[str]:
    return [line.split(": ", 1)[1] for line in lines if line.strip().startswith(f"{label}:")]


async def started(store: RunStore, prompt: str):
    run = store_agents.agent("approval").prompt(prompt).start()
    for _ in range(1000):
        if store.pending(run.run_id):
            return run, store.pending(run.run_id)[0]
        await asyncio.sleep(0.01)
    raise AssertionError("nothing pending")


async def stop(run) -> None:
    run.cancel()
    with pytest.raises(PromptCancelledError):
        await asyncio.wait_for(run.wait(), 10)


async def test_show_suggests_decisions_that_work_as_written_in_a_plain_terminal(
    store_file, tmp_path
):
    store = RunStore(store_file)
    run, approval = await started(store, "send 5 to a1")
    try:
        lines = show(run.run_id, tmp_path)
        [approve] = suggested(lines, "decide")
        assert approve.startswith(sys.executable)  # no bare `python`, which may be missing
        result = run_line(approve, tmp_path)
        assert result.returncode == 0, (approve, result.stderr)
        assert f"Approved {approval.id}." in result.stdout
        assert store.pending(run.run_id) == []  # decided
    finally:
        await stop(run)


async def test_the_suggested_answer_is_the_documented_form_and_refused_until_filled_in(
    store_file, tmp_path
):
    store = RunStore(store_file)
    run, question = await started(store, "ask me first")
    try:
        lines = show(run.run_id, tmp_path)
        [picked] = suggested(lines, "answer")
        [typed] = [s for s in suggested(lines, "or") if "answer" in s]
        assert '"choice": "<one of: savings>"' in picked
        assert '"custom": true' in typed
        for command in (picked, typed):  # sent unchanged: refused, and the question still waits
            result = run_line(command, tmp_path)
            assert result.returncode == 1, command
            assert "still holds the placeholder" in result.stderr
            assert "replace it with one of the question's choices" in result.stderr
            assert store.pending(run.run_id)[0].status == "pending"
        result = run_line(picked.replace("<one of: savings>", "savings"), tmp_path)
        assert result.returncode == 0, result.stderr
        assert f"Answered {question.id}." in result.stdout
        assert store.pending(run.run_id) == []
    finally:
        await stop(run)


def test_runs_lists_when_each_run_started_and_was_last_updated(store_file, tmp_path):
    response = store_agents.agent("plain").prompt("send 5 to a1").send_sync()
    [summary] = RunStore(store_file).runs()
    result = subprocess.run(
        [sys.executable, "-m", "anvia_notebook", "--store", str(store_file), "runs"],
        env=terminal(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    header, row = result.stdout.splitlines()
    assert header.split()[:5] == ["RUN", "AGENT", "STATUS", "STARTED", "UPDATED"]
    started = summary.created_at.astimezone().strftime("%Y-%m-%d %H:%M")
    updated = summary.updated_at.astimezone().strftime("%Y-%m-%d %H:%M")
    assert row.startswith(response.run_id) and f"success      {started} {updated} " in row


def test_runs_status_takes_every_status_the_store_does():
    """The command line keeps its own list (it loads no pydantic); it must not drift."""
    from anvia_notebook.__main__ import RUN_STATUSES as COMMAND_LINE
    from anvia_notebook.run_state import RUN_STATUSES

    assert sorted(COMMAND_LINE) == sorted(RUN_STATUSES)


def test_ctrl_c_while_the_store_is_held_locked_says_interrupted_without_a_traceback(
    tmp_path, monkeypatch, capsys
):
    """Ctrl-C while ``approve`` waited for a store another process held locked printed a
    whole KeyboardInterrupt traceback."""
    import anvia_notebook.__main__ as cli

    store_path = tmp_path / "runs.db"
    RunStore(store_path).close()

    def held(*_args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_run_command", held)
    assert cli.main(["--store", str(store_path), "approve", "run_x", "approval_x"]) == 130
    assert capsys.readouterr().err == "Interrupted.\n"


def test_a_run_that_failed_says_so_in_its_calls_and_show_prints_its_error(store_file, tmp_path):
    """A protected call with nobody to approve it fails the run: the call's result said the run
    "was stopped", and ``show`` printed no error at all."""
    from anvia_notebook import AgentBuilder, ToolApprovalRequiredError
    from anvia_notebook.models import ModelResponse, QueueModel, ToolCall

    call = ToolCall(id="t1", name="transfer", arguments={"account": "a1", "amount": 5})
    model = QueueModel([ModelResponse(tool_calls=[call]), "never"])
    request = (
        AgentBuilder("banker", model).tools([store_agents.transfer_tool()]).build().prompt("pay")
    )
    with pytest.raises(ToolApprovalRequiredError):
        request.send_sync()
    [run] = RunStore(store_file).runs()
    [result] = RunStore(store_file).get(run.run_id).messages[-1].tool_results
    assert result.content.startswith(
        "ToolCallCancelled: the run ended on an error before this tool call finished: "
        "ToolApprovalRequiredError: "
    )
    lines = show(run.run_id, tmp_path)
    assert lines[0].endswith(": error")
    assert lines[1].startswith("  error: ") and "transfer" in lines[1]
    assert "was stopped" not in "\n".join(lines)


def test_show_says_which_arguments_an_approved_call_ran_with(store_file, tmp_path):
    """Approved with edited arguments, the call ran with them: ``show`` printed only the model's
    (amount 5 where 2 was sent), and nothing of the edit."""
    from anvia_notebook import AgentBuilder, ApprovalDecision, CallbackHumanInput
    from anvia_notebook.models import ModelResponse, QueueModel, ToolCall

    call = ToolCall(id="t1", name="transfer", arguments={"account": "a1", "amount": 5})
    model = QueueModel([ModelResponse(tool_calls=[call]), "sent"])
    edited = ApprovalDecision(True, args={"account": "a1", "amount": 2})
    edit = CallbackHumanInput(approve=lambda request: edited)
    agent = AgentBuilder("banker", model).tools([store_agents.transfer_tool()]).build()
    response = agent.prompt("pay").human_input(edit).send_sync()
    lines = show(response.run_id, tmp_path)
    [line] = [line for line in lines if "transfer(" in line]
    assert line.endswith(
        'transfer({"account":"a1","amount":5}) approved with edited arguments '
        '{"account": "a1", "amount": 2}'
    ), line


def test_show_tells_edits_apart_for_calls_a_model_gave_the_same_id(store_file, tmp_path):
    """Some servers give every call the same id: a later call approved as it was read as run
    with the earlier call's edited arguments."""
    from anvia_notebook import AgentBuilder, ApprovalDecision
    from anvia_notebook.models import FunctionModel, ModelResponse, ToolCall

    def model(request: Any) -> ModelResponse:
        done = sum(m.role == "tool" for m in request.messages)
        if done < 2:
            call = ToolCall(
                id="call_0", name="transfer", arguments={"account": "a1", "amount": done + 1}
            )
            return ModelResponse(tool_calls=[call])
        return ModelResponse(text="sent")

    decisions = iter([ApprovalDecision(True, args={"account": "a1", "amount": 9}), True])
    agent = (
        AgentBuilder("banker", FunctionModel(model))
        .tools([store_agents.transfer_tool()])
        .approvals(lambda request: next(decisions))
        .build()
    )
    response = agent.prompt("pay").send_sync()
    lines = [line for line in show(response.run_id, tmp_path) if "transfer(" in line]
    assert [line.split("-> ")[1] for line in lines] == [
        'transfer({"account":"a1","amount":1}) approved with edited arguments '
        '{"account": "a1", "amount": 9}',
        'transfer({"account":"a1","amount":2})',
    ]


def test_show_gives_an_edit_to_the_call_of_its_own_tool_whatever_the_ids(store_file, tmp_path):
    """A call of a tool that needs no approval, with the id a later protected call reused, was
    said to have run with that call's edit."""
    from anvia_notebook import AgentBuilder, ApprovalDecision, create_tool
    from anvia_notebook.models import FunctionModel, ModelResponse, ToolCall

    class Lookup(BaseModel):
        account: str

    lookup = create_tool(
        name="lookup", description="Look up.", input=Lookup, execute=lambda a, c: "found"
    )

    def model(request: Any) -> ModelResponse:
        done = sum(m.role == "tool" for m in request.messages)
        if done == 0:
            return ModelResponse(tool_calls=[ToolCall("call_0", "lookup", {"account": "a1"})])
        if done == 1:
            arguments = {"account": "a1", "amount": 5}
            return ModelResponse(tool_calls=[ToolCall("call_0", "transfer", arguments)])
        return ModelResponse(text="sent")

    edit = ApprovalDecision(True, args={"account": "a1", "amount": 2})
    agent = (
        AgentBuilder("banker", FunctionModel(model))
        .tools([lookup, store_agents.transfer_tool()])
        .approvals(lambda request: edit)
        .build()
    )
    response = agent.prompt("pay").send_sync()
    lines = [line.split("-> ")[1] for line in show(response.run_id, tmp_path) if "-> " in line]
    assert lines == [
        'lookup({"account":"a1"})',
        'transfer({"account":"a1","amount":5}) approved with edited arguments '
        '{"account": "a1", "amount": 2}',
    ]


def test_show_finds_the_edit_of_a_call_that_left_out_an_argument_with_a_default(
    store_file, tmp_path
):
    """The approval keeps the arguments as the tool read them (its defaults filled in), which
    the model's call, without the default, did not match: the edit was not said."""
    from pydantic import BaseModel

    from anvia_notebook import AgentBuilder, ApprovalDecision, ToolApproval, create_tool
    from anvia_notebook.models import ModelResponse, QueueModel, ToolCall

    class Payment(BaseModel):
        account: str
        amount: int
        note: str = ""

    pay = create_tool(
        name="pay",
        description="Pay.",
        input=Payment,
        execute=lambda args, ctx: f"paid {args.amount}",
        approval=ToolApproval(),
    )
    call = ToolCall(id="t1", name="pay", arguments={"account": "a1", "amount": 5})
    edit = ApprovalDecision(True, args={"account": "a1", "amount": 2})
    model = QueueModel([ModelResponse(tool_calls=[call]), "done"])
    agent = AgentBuilder("payer", model).tool(pay).approvals(lambda request: edit).build()
    response = agent.prompt("pay").send_sync()
    [line] = [line for line in show(response.run_id, tmp_path) if "pay(" in line]
    assert line.endswith(
        'pay({"account":"a1","amount":5}) approved with edited arguments '
        '{"account": "a1", "amount": 2}'
    ), line

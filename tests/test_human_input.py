"""ConsoleHumanInput and CallbackHumanInput."""

from __future__ import annotations

import io
import json

from anvia_notebook import (
    AgentBuilder,
    ApprovalDecision,
    CallbackHumanInput,
    ConsoleHumanInput,
    ToolApproval,
    ToolApprovalRequiredError,
    ask_question,
)
from anvia_notebook.models import QueueModel

from helpers import call, make_add_tool, tool_results

QUESTIONS = {
    "questions": [
        {
            "id": "priority",
            "question": "Priority?",
            "choices": [{"label": "High", "value": "high"}, {"label": "Low", "value": "low"}],
        },
        {"id": "note", "question": "Note?", "choices": [{"label": "None", "value": "none"}]},
    ]
}


def scripted_input(lines):
    answers = iter(lines)
    return lambda prompt: next(answers)


def test_console_approve_and_reject_with_reason():
    out = io.StringIO()
    add = make_add_tool(approval=ToolApproval(reason="Check the sum"))
    model = QueueModel(
        [call("add", {"x": 1, "y": 2}), call("add", {"x": 3, "y": 4}, id="c2"), "ok"]
    )
    human = ConsoleHumanInput(input_fn=scripted_input(["maybe", "y", "n", "too big"]), output=out)
    AgentBuilder("a", model).tool(add).human_input(human).build().prompt("go").send_sync()
    assert add.calls == [(1, 2)]
    assert tool_results(model.requests[2])[0].content == "too big"
    text = out.getvalue()
    assert "Approval required for add" in text
    assert "reason: Check the sum" in text
    assert "Please answer y or n." in text


def test_console_questions_by_number_or_custom_text():
    out = io.StringIO()
    model = QueueModel([call("ask_question", QUESTIONS), "ok"])
    human = ConsoleHumanInput(input_fn=scripted_input(["", "1", "call me first"]), output=out)
    AgentBuilder("a", model).tool(ask_question).human_input(human).build().prompt("go").send_sync()
    assert json.loads(tool_results(model.requests[1])[0].content) == {
        "answers": [
            {"questionId": "priority", "answer": "high", "choice": "high"},
            {"questionId": "note", "answer": "call me first", "custom": True},
        ]
    }
    assert "Question 1 of 2: Priority?" in out.getvalue()


async def test_callback_human_input_sync_and_async_functions():
    decisions = []

    async def approve(request):
        decisions.append(request.approval_id)
        return ApprovalDecision(approved=True)

    add = make_add_tool(approval=ToolApproval())
    model = QueueModel([call("add", {"x": 1, "y": 2}), "ok"])
    agent = (
        AgentBuilder("a", model).tool(add).human_input(CallbackHumanInput(approve=approve)).build()
    )
    await agent.prompt("go").send()
    assert decisions[0].startswith("approval_")
    assert add.calls == [(1, 2)]


def test_callback_human_input_without_approve_means_approval_required():
    add = make_add_tool(approval=ToolApproval())
    model = QueueModel([call("add", {"x": 1, "y": 2}), "ok"])
    agent = (
        AgentBuilder("a", model).tool(add).human_input(CallbackHumanInput(ask=lambda r: [])).build()
    )
    try:
        agent.prompt("go").send_sync()
    except ToolApprovalRequiredError as error:
        assert error.request.tool_name == "add"
    else:
        raise AssertionError("expected ToolApprovalRequiredError")
    assert add.calls == []


def test_console_reads_a_digit_that_is_not_a_number_as_a_custom_answer():
    """``"²"`` is a digit to Python but no number: a custom answer (before: a ValueError)."""
    out = io.StringIO()
    model = QueueModel([call("ask_question", QUESTIONS), "ok"])
    human = ConsoleHumanInput(input_fn=scripted_input(["²", "call me first"]), output=out)
    AgentBuilder("a", model).tool(ask_question).human_input(human).build().prompt("go").send_sync()
    assert json.loads(tool_results(model.requests[1])[0].content)["answers"][0] == {
        "questionId": "priority",
        "answer": "²",
        "custom": True,
    }


def test_a_console_human_input_with_no_terminal_input_fails_the_run_saying_so(tmp_path):
    """A script with ``ConsoleHumanInput`` run with no terminal (nohup, cron, CI, ``< /dev/null``)
    ended in a bare ``EOFError`` traceback; a question got no word of why nobody answered."""
    import subprocess
    import sys

    from child_processes import child_environ

    script = """
import sys
from anvia_notebook import AgentBuilder, ConsoleHumanInput, ToolApprovalRequiredError, ask_question
from anvia_notebook import get_store
from anvia_notebook.models import ModelResponse, QueueModel, ToolCall
import store_agents

kind = sys.argv[1]
if kind == "approval":
    call = ToolCall(id="t1", name="transfer", arguments={"account": "a1", "amount": 5})
    tools = [store_agents.transfer_tool()]
else:
    question = {"id": "size", "question": "Which size?", "choices": [{"label": "S", "value": "s"}]}
    call = ToolCall(id="q1", name="ask_question", arguments={"questions": [question]})
    tools = [ask_question]
model = QueueModel([ModelResponse(tool_calls=[call]), "done"])
agent = AgentBuilder("a", model).tools(tools).human_input(ConsoleHumanInput()).build()
try:
    response = agent.prompt("go").send_sync()
except ToolApprovalRequiredError as error:
    print("refused:", error)
else:
    print("result:", response.messages[-2].tool_results[0].content)
    [record] = get_store().get(response.run_id).questions.values()
    print("reason:", record.decision_reason)
"""
    environ = {
        **child_environ(),
        "ANVIA_TEST_EFFECTS": str(tmp_path / "effects.txt"),
        "ANVIA_NOTEBOOK_STORE": str(tmp_path / "runs.sqlite"),
    }
    said = {}
    for kind in ("approval", "question"):
        done = subprocess.run(
            [sys.executable, "-c", script, kind],
            stdin=subprocess.DEVNULL,
            env=environ,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
        said[kind] = done.stdout
    from anvia_notebook.human import NO_TERMINAL

    assert f"refused: Tool approval required for transfer: {NO_TERMINAL}" in said["approval"]
    assert NO_TERMINAL in said["question"].split("result:")[0]  # told on the terminal too
    assert "No human answer was provided by this runtime." in said["question"].split("result:")[1]
    assert f"reason: {NO_TERMINAL}" in said["question"]


def test_the_check_of_edited_arguments_compiles_no_grammar_and_starts_no_thread():
    """Importing jsonschema compiled a grammar of rfc3987-syntax (where Jupyter is installed):
    most of a second, which the first decision with edited arguments waited for after the
    click; so it was made on a thread of its own while the approval waited, where its thousands
    of ``ast`` parses, not safe beside another thread's on Python 3.11, made a notebook cell
    (or pytest) fail now and then with "SystemError: AST constructor recursion depth mismatch".
    The check needs no such grammar (its formats are its own): none is compiled, no thread is
    started, and the module is left importable (a fresh process: this one has it imported)."""
    import subprocess
    import sys

    from child_processes import child_environ

    script = """
import importlib.util, sys, threading
from anvia_notebook import AgentBuilder, ApprovalDecision, CallbackHumanInput
from anvia_notebook.models import ModelResponse, QueueModel, ToolCall
import store_agents

started = []
threading.Thread.start = (lambda start: lambda self: (started.append(self.name), start(self)))(
    threading.Thread.start
)
call = ToolCall(id="t1", name="transfer", arguments={"account": "a1", "amount": 5})
model = QueueModel([ModelResponse(tool_calls=[call]), "done"])
edit = ApprovalDecision(approved=True, args={"account": "b2", "amount": 5})
human = CallbackHumanInput(approve=lambda request: edit)
agent = AgentBuilder("a", model).tools([store_agents.transfer_tool()]).human_input(human).build()
assert "jsonschema" not in sys.modules
print(agent.prompt("go").store(None).send_sync().output)
print("checked with jsonschema:", "jsonschema" in sys.modules)
print("grammar compiled:", "rfc3987_syntax" in sys.modules)
print("threads:", [name for name in started if "schema" in name])
installed = importlib.util.find_spec("rfc3987_syntax") is not None
if installed:
    import rfc3987_syntax
print("left importable:", not installed or rfc3987_syntax is not None)
"""
    environ = {**child_environ(), "ANVIA_TEST_EFFECTS": "/dev/null"}
    done = subprocess.run(
        [sys.executable, "-c", script], env=environ, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "done",
        "checked with jsonschema: True",
        "grammar compiled: False",
        "threads: []",
        "left importable: True",
    ]


def test_a_console_no_whose_reason_the_input_ends_before_is_still_a_no():
    """``printf 'n\\n' | python script.py``: the rejection was lost, and the run failed saying
    the input had ended."""
    import io

    answers = iter(["n"])

    def read(prompt: str) -> str:
        for answer in answers:
            return answer
        raise EOFError

    tool = make_add_tool(approval=ToolApproval())
    model = QueueModel([call("add", {"x": 1, "y": 2}), "ok"])
    human = ConsoleHumanInput(input_fn=read, output=io.StringIO())
    agent = AgentBuilder("a", model).tool(tool).human_input(human).build()
    assert agent.prompt("add").store(None).send_sync().output == "ok"
    [result] = tool_results(model.requests[1])
    assert "rejected" in result.content.lower() and tool.calls == []

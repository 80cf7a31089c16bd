"""An MCP server's tools whose input schemas a validator finds odd. A schema that refers to a
definition it does not have cannot check anything: the server checks the arguments, as it does
for a schema that is not valid (the call, and an edit on approval, are not an internal failure).
A draft-07 schema checks an edit the same way in the run and in another process."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mcp_helpers import SERVERS
from test_safety_mutants import pending_in

from anvia_notebook import AgentBuilder, DecisionRefusedError, StoreHumanInput, mcp
from anvia_notebook.models import QueueModel
from anvia_notebook.store import RunStore

from helpers import call, ran_with, tool_results

pytestmark = pytest.mark.timeout(60)
ROOT = Path(__file__).resolve().parent.parent


def command_line(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "anvia_notebook", *args],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
    )


def odd(**options):
    return mcp.stdio("odd", sys.executable, [str(SERVERS / "odd_schemas.py")], **options)


async def waiting(store_path, tool: str, args: dict, approval: str):
    """A run of one call of the odd server's ``tool`` waiting for a person (the store's human
    input), another store object, what waits, and the model."""
    model = QueueModel([call(tool, args), "done"])
    server = odd(approval=approval)
    agent = AgentBuilder("a", model).mcp([server]).human_input(StoreHumanInput()).build()
    run = agent.prompt("go").start()
    store = RunStore(store_path)
    [pending] = await pending_in(store, run.run_id)
    return run, store, pending, model


@pytest.mark.parametrize(
    ("tool", "args"),
    [("dangling", {"order": {"id": "A1"}}), ("self_ref", {"a": 1})],
    ids=["refers-to-nowhere", "refers-to-itself"],
)
async def test_a_tool_whose_schema_cannot_check_anything_can_be_called(tool, args):
    """(A schema referring to itself was followed until Python's recursion limit, a second or
    more of CPU, and every call failed with "maximum recursion depth exceeded".)"""
    model = QueueModel([call(tool, args), "done"])
    agent = AgentBuilder("a", model).mcp([odd(approval="never")]).build()
    try:
        assert (await agent.prompt("go").send()).output == "done"
    finally:
        await mcp.close_all()
    [result] = tool_results(model.requests[1])
    assert (result.is_error, result.content) == (False, json.dumps(args))


@pytest.mark.parametrize("front", ["run", "store"])
async def test_an_edit_of_such_a_call_is_decided_as_the_server_will_check_it(store_path, front):
    try:
        run, store, approval, model = await waiting(
            store_path, "dangling", {"order": {"id": "A1"}}, "always"
        )
        edit = {"order": {"id": "B2"}}
        if front == "run":
            run.interactions.decide(approval.id, approved=True, args=edit)
        else:
            store.approve(run.run_id, approval.id, args=edit)
        assert (await asyncio.wait_for(run.wait(), 30)).output == "done"
    finally:
        await mcp.close_all()
    told = ran_with("dangling", edit, '{"order": {"id": "B2"}}')
    assert tool_results(model.requests[1])[0].content == told


async def test_a_draft_07_schema_checks_an_edit_alike_in_the_run_and_in_another_process(
    store_path,
):
    args = {"when": "2025-01-02T10:00:00Z", "seats": 2}
    try:
        run, store, approval, model = await waiting(store_path, "booking", args, "always")
        for edit in ({**args, "when": "next week"}, {**args, "seats": "2"}):
            said = []
            for decide in (
                lambda a: run.interactions.decide(approval.id, approved=True, args=a),
                lambda a: store.approve(run.run_id, approval.id, args=a),
            ):
                with pytest.raises(DecisionRefusedError) as refused:
                    decide(edit)
                said.append(str(refused.value).replace(f" in run {run.run_id!r}", ""))
            assert said[0] == said[1]
            assert [p.id for p in store.pending(run.run_id)] == [approval.id]
        store.approve(run.run_id, approval.id, args={**args, "seats": 3})
        assert (await asyncio.wait_for(run.wait(), 30)).output == "done"
    finally:
        await mcp.close_all()
    assert '"seats": 3' in tool_results(model.requests[1])[0].content


async def test_answers_to_a_form_whose_fields_a_validator_cannot_use_reach_the_server(
    store_path, tmp_path
):
    """A form field with a ``pattern`` that is not a regular expression and a ``minimum`` given
    as text: the answers are checked by their type only (the server checks the rest), from the
    run, the store and the command line alike, with no internal failure."""
    try:
        run, _, question, model = await waiting(store_path, "ask_room", {}, "never")
        answers = [
            {"questionId": "room", "answer": "B-12", "custom": True},
            {"questionId": "floor", "answer": "3", "custom": True},
        ]
        with pytest.raises(DecisionRefusedError, match="must be a whole number"):
            run.interactions.answer(question.id, [answers[0], {**answers[1], "answer": "3rd"}])
        result = command_line(
            "--store", str(store_path), "answer", run.run_id, question.id,
            "--json", json.dumps(answers),
        )  # fmt: skip
        assert (result.returncode, result.stderr) == (0, ""), result.stderr
        assert (await asyncio.wait_for(run.wait(), 30)).output == "done"
    finally:
        await mcp.close_all()
    told = json.loads(tool_results(model.requests[1])[0].content)
    assert told == {"action": "accept", "content": {"floor": 3, "room": "B-12"}}


BACKTRACKS = "a" * 40 + "!"  # ^(a+)+$ in Python's engine: about 2**40 steps to refuse


@pytest.mark.timeout(30)
async def test_a_form_field_whose_pattern_backtracks_does_not_hang_the_kernel(store_path):
    """A server's form field with ``pattern: ^(a+)+$``: checking the answer ``aaaa...!`` took
    Python's regular expressions hours, the kernel frozen. It is refused at once, from the run
    and from the command line, and a fitting answer reaches the server."""
    try:
        run, _, question, model = await waiting(store_path, "ask_code", {}, "never")
        bad = [{"questionId": "code", "answer": BACKTRACKS, "custom": True}]
        with pytest.raises(DecisionRefusedError, match=r"does not match '\^\(a\+\)\+\$'"):
            run.interactions.answer(question.id, bad)
        refused = command_line(
            "--store", str(store_path), "answer", run.run_id, question.id, "--json", json.dumps(bad)
        )
        assert refused.returncode == 1 and "does not match" in refused.stderr
        run.interactions.answer(question.id, [{**bad[0], "answer": "aaa"}])
        assert (await asyncio.wait_for(run.wait(), 20)).output == "done"
    finally:
        await mcp.close_all()
    told = json.loads(tool_results(model.requests[1])[0].content)
    assert told == {"action": "accept", "content": {"code": "aaa"}}


@pytest.mark.timeout(30)
async def test_property_names_against_a_pattern_that_backtracks_do_not_hang_the_kernel(store_path):
    """A server's tool whose schema takes properties named by ``patternProperties: ^(a+)+$``
    (and no others): checking the model's name ``aaaa...!`` took Python's regular expressions
    hours, the kernel frozen. The call is refused at once, and the model told why; an edit
    with such a name is refused by every decider; a fitting call reaches the server."""
    model = QueueModel(
        [
            call("labels", {BACKTRACKS: 1}),
            call("labels", {"aaa": "x"}),
            call("labels", {"aa": 2}),
            "done",
        ]
    )
    told = await _told(model)
    assert (
        told[0].is_error and f"{BACKTRACKS!r} does not match any of the regexes" in told[0].content
    )
    assert told[1].is_error and "aaa: 'x' is not of type 'integer'" in told[1].content
    assert (told[2].is_error, told[2].content) == (False, '{"aa": 2}')
    try:
        run, store, approval, _ = await waiting(store_path, "labels", {"aa": 2}, "always")
        for decide in (
            lambda a: run.interactions.decide(approval.id, approved=True, args=a),
            lambda a: store.approve(run.run_id, approval.id, args=a),
        ):
            with pytest.raises(DecisionRefusedError, match="does not match any of the regexes"):
                decide({BACKTRACKS: 1})
        store.approve(run.run_id, approval.id, args={"aaaa": 4})
        assert (await asyncio.wait_for(run.wait(), 20)).output == "done"
    finally:
        await mcp.close_all()


@pytest.mark.timeout(30)
async def test_unevaluated_names_beside_a_pattern_that_backtracks_are_left_to_the_server():
    """The same with draft 2020-12's ``unevaluatedProperties``: jsonschema finds the names the
    patterns evaluate with Python's engine, so beside ``patternProperties`` that keyword is not
    checked here; the call reaches the server (which checks it) at once, the kernel not frozen.
    A value the pattern's schema refuses is still refused."""
    model = QueueModel(
        [call("labels_2020", {BACKTRACKS: 1}), call("labels_2020", {"aaa": "x"}), "done"]
    )
    told = await _told(model)
    assert (told[0].is_error, told[0].content) == (False, json.dumps({BACKTRACKS: 1}))
    assert told[1].is_error and "aaa: 'x' is not of type 'integer'" in told[1].content


async def _told(model: QueueModel) -> list:
    """Run the model's calls of the odd server's tools (no approval) to its "done"; what each
    call's result told the model."""
    agent = AgentBuilder("a", model).mcp([odd(approval="never")]).build()
    try:
        assert (await agent.prompt("go").send()).output == "done"
    finally:
        await mcp.close_all()
    return [tool_results(request)[0] for request in model.requests[1:]]


async def test_a_tool_that_runs_only_as_a_task_is_not_offered_and_the_user_is_told():
    """The package makes plain calls, which the server refuses for such a tool: before, the
    model was offered it, a person was asked to approve it, then the call failed."""
    model = QueueModel(["done"])
    agent = AgentBuilder("a", model).mcp([odd(approval="never")]).build()
    try:
        with pytest.warns(UserWarning, match="'research' runs only as a task"):
            await agent.prompt("go").send()
    finally:
        await mcp.close_all()
    offered = {tool.name for tool in model.requests[0].tools}
    assert "research" not in offered and {"dangling", "ask_room"} <= offered

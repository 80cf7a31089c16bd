"""A sub-agent's approvals and questions surface on the top-level run (API.md section 14):
the one interaction record with its ``path``, decided by the nearest approval handler up the
chain, else by the top-level run's human input, listed and decided (by id) on the top-level
run; "Always allow" scoped to the path; two nested approvals in one turn decided in reverse."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from pydantic import BaseModel

from anvia_notebook import (
    AgentBuilder,
    ApprovalDecision,
    CallbackHumanInput,
    ToolApproval,
    ask_question,
    create_tool,
)
from anvia_notebook.human import wait_for_a_decision
from anvia_notebook.models import FunctionModel, ModelResponse, ToolCall
from anvia_notebook.notebook._human_input import WidgetHumanInput

from helpers import pending_of, wait_on_events


class SqlInput(BaseModel):
    sql: str


def make_run_sql() -> Any:
    ran: list[str] = []

    def execute(args: SqlInput, ctx: Any) -> str:
        ran.append(args.sql)
        return f"rows for {args.sql}"

    tool = create_tool(
        name="run_sql",
        description="Run SQL.",
        input=SqlInput,
        execute=execute,
        approval=ToolApproval(reason=lambda ctx: f"Run {ctx.args.sql}?"),
    )
    tool.ran = ran  # type: ignore[attr-defined]
    return tool


def analyst_model() -> FunctionModel:
    """Runs the SQL its prompt names, then answers with the tool's result."""

    def respond(request: Any) -> ModelResponse:
        last = request.messages[-1]
        if last.role == "tool":
            return ModelResponse(text=f"analyst: {last.tool_results[0].content}")
        return ModelResponse(
            tool_calls=[
                ToolCall(id=f"sql-{last.content}", name="run_sql", arguments={"sql": last.content})
            ]
        )

    return FunctionModel(respond)


def lead_model(*prompts: str) -> FunctionModel:
    """Asks the analyst each prompt (in one turn), then answers with what it said."""

    def respond(request: Any) -> ModelResponse:
        last = request.messages[-1]
        if last.role == "tool":
            return ModelResponse(text=" | ".join(r.content for r in last.tool_results))
        return ModelResponse(
            tool_calls=[
                ToolCall(id=f"ask-{p}", name="ask_analyst", arguments={"prompt": p})
                for p in prompts
            ]
        )

    return FunctionModel(respond)


def build(*prompts: str, analyst_handler: Any = None, lead_handler: Any = None) -> Any:
    run_sql = make_run_sql()
    analyst = AgentBuilder("analyst", analyst_model()).tool(run_sql)
    if analyst_handler is not None:
        analyst.approvals(analyst_handler)
    lead = AgentBuilder("lead", lead_model(*prompts)).tool(
        analyst.build().as_tool(name="ask_analyst")
    )
    if lead_handler is not None:
        lead.approvals(lead_handler)
    return lead.build(), run_sql


async def test_the_lead_s_handler_decides_the_analyst_s_approval() -> None:
    seen: list[Any] = []

    def handler(request: Any) -> bool:
        seen.append(request)
        return True

    lead, run_sql = build("q1", lead_handler=handler)
    response = await lead.prompt("go").store(None).send()
    assert response.output == "analyst: rows for q1"
    assert run_sql.ran == ["q1"]
    assert seen[0].tool_name == "run_sql"
    assert seen[0].run.path == ("lead", "analyst")
    assert seen[0].run.parent_run_id == response.run_id


async def test_the_nearest_handler_decides_the_sub_agent_s_own_first() -> None:
    lead_calls: list[Any] = []
    lead, run_sql = build(
        "q1",
        analyst_handler=lambda request: ApprovalDecision(approved=False, reason="not today"),
        lead_handler=lambda request: lead_calls.append(request) or True,
    )
    response = await lead.prompt("go").store(None).send()
    assert lead_calls == []
    assert run_sql.ran == []
    assert response.output == "analyst: not today"


async def test_a_nested_approval_is_pending_on_the_top_level_run_and_decided_by_id() -> None:
    lead, run_sql = build("q1")
    human = CallbackHumanInput(approve=lambda request: wait_for_a_decision())
    run = lead.prompt("go").human_input(human).store(None).start()
    [record] = await pending_of(run)
    assert record.kind == "approval"
    assert record.path == ["lead", "analyst"]
    assert record.tool_name == "run_sql" and record.agent_id == "analyst"
    assert record.run_id == run.children[0].run_id != run.run_id
    assert run.status == "waiting"
    # the parent's stream carried the request, inside the sub-agent's events
    nested = [
        e.event
        for e in run.events
        if e.type == "agent_tool_event" and e.event.type == "tool_approval_request"
    ]
    assert nested[0].approval.id == record.id
    decided = run.interactions.decide(record.id, approved=True, via="handle")
    assert decided.status == "approved" and decided.decided_via == "handle"
    response = await run.wait()
    assert run_sql.ran == ["q1"]
    assert response.output == "analyst: rows for q1"
    with pytest.raises(Exception, match="already"):
        run.interactions.decide(record.id, approved=False)


async def test_a_nested_question_is_answered_on_the_top_level_run() -> None:
    def respond(request: Any) -> ModelResponse:
        last = request.messages[-1]
        if last.role == "tool":
            return ModelResponse(text=f"analyst heard {last.tool_results[0].content}")
        questions = [{"id": "region", "question": "Which region?", "choices": ["West", "East"]}]
        return ModelResponse(
            tool_calls=[ToolCall(id="q", name="ask_question", arguments={"questions": questions})]
        )

    analyst = AgentBuilder("analyst", FunctionModel(respond)).tool(ask_question).build()
    lead = AgentBuilder("lead", lead_model("which?")).tool(analyst.as_tool(name="ask_analyst"))
    human = CallbackHumanInput(
        approve=lambda r: wait_for_a_decision(), ask=lambda r: wait_for_a_decision()
    )
    run = lead.build().prompt("go").human_input(human).store(None).start()
    [record] = await pending_of(run)
    assert record.kind == "question" and record.path == ["lead", "analyst"]
    run.interactions.answer(
        record.id, [{"questionId": "region", "answer": "West", "choice": "West"}]
    )
    response = await run.wait()
    assert '"answer":"West"' in response.output


async def test_two_nested_approvals_in_one_turn_decided_in_reverse_order() -> None:
    lead, run_sql = build("q1", "q2")
    human = CallbackHumanInput(approve=lambda request: wait_for_a_decision())
    run = lead.prompt("go").human_input(human).with_tool_concurrency(2).store(None).start()
    pending = await pending_of(run, 2)
    by_sql = {record.args["sql"]: record for record in pending}
    assert set(by_sql) == {"q1", "q2"}
    assert all(record.path == ["lead", "analyst"] for record in pending)
    assert len({record.run_id for record in pending}) == 2  # two sub-runs
    run.interactions.decide(by_sql["q2"].id, approved=True)
    await wait_on_events(run, lambda: "q2" in run_sql.ran)
    assert run_sql.ran == ["q2"]
    run.interactions.decide(by_sql["q1"].id, approved=False, reason="too broad")
    response = await run.wait()
    assert run_sql.ran == ["q2"]
    # results in call order, whatever order they were decided in
    assert response.output == "analyst: too broad | analyst: rows for q2"


async def test_always_allow_is_scoped_to_the_path() -> None:
    human = WidgetHumanInput(auto=False)
    human.always_allowed.add("lead \u203a run_sql")  # the lead's own run_sql only
    lead, run_sql = build("q1")
    run = lead.prompt("go").human_input(human).store(None).start()
    [record] = await pending_of(run)  # the analyst's run_sql is still asked
    assert record.path == ["lead", "analyst"]
    run.interactions.decide(record.id, approved=False)
    await run.wait()

    human.always_allowed.add("lead \u203a analyst \u203a run_sql")
    lead, run_sql = build("q2")
    response = await lead.prompt("go").human_input(human).store(None).send()
    assert run_sql.ran == ["q2"]
    assert response.output == "analyst: rows for q2"


async def test_the_human_input_s_time_limit_reaches_the_nested_approval() -> None:
    lead, run_sql = build("q1")
    human = CallbackHumanInput(approve=lambda request: wait_for_a_decision(), timeout=0.05)
    response = await asyncio.wait_for(lead.prompt("go").human_input(human).store(None).send(), 10)
    assert run_sql.ran == []
    assert "timed out" in response.output


async def test_stop_cancels_a_nested_approval() -> None:
    lead, run_sql = build("q1")
    human = CallbackHumanInput(approve=lambda request: wait_for_a_decision())
    run = lead.prompt("go").human_input(human).store(None).start()
    [record] = await pending_of(run)
    run.cancel("Stop clicked.")
    with pytest.raises(Exception, match="Stop clicked"):
        await run.wait()
    sub = run.children[0]
    assert sub.state.approvals[record.id].status == "cancelled"
    assert sub.state.approvals[record.id].decided_by == "stop"
    assert sub.state.status == "cancelled"
    assert run_sql.ran == []
    assert run.interactions.pending == []


def _chain(levels: int, analyst_handler: Any) -> tuple[Any, Any]:
    """``lead`` asking ``levels - 1`` sub-agents down to the analyst, whose ``run_sql`` needs
    approval (decided by ``analyst_handler``)."""
    run_sql = make_run_sql()
    agent = AgentBuilder("analyst", analyst_model()).tool(run_sql).approvals(analyst_handler)
    for level in range(levels - 1):
        name = "lead" if level == levels - 2 else f"manager{level}"
        agent = AgentBuilder(name, lead_model("q1")).tool(agent.build().as_tool(name="ask_analyst"))
    return agent.build(), run_sql


@pytest.mark.parametrize("levels", [2, 3, 4])
@pytest.mark.parametrize("stop_from", ["the handler", "another thread"])
async def test_stop_of_the_top_level_run_wins_over_a_nested_handler_s_later_approval(
    stop_from: str, levels: int
) -> None:
    """Stop is the first decider of every interaction below the stopped run: a sub-agent's
    approval handler that answers after the Stop, before its own run is cancelled (one level
    at a time, from the top), is not taken, and the tool does not run."""
    top: list[Any] = []

    def approve_after_stop(request: Any) -> bool:
        if stop_from == "the handler":
            top[0].cancel("Stop clicked.")
        else:  # (Stop clicked in the page: another thread, while the handler decides)
            stopper = threading.Thread(target=top[0].cancel, args=("Stop clicked.",))
            stopper.start()
            stopper.join()
        return True

    lead, run_sql = _chain(levels, approve_after_stop)
    run = lead.prompt("go").store(None).create_run()
    top.append(run)
    run.start()
    with pytest.raises(Exception, match="Stop clicked"):
        await run.wait()
    sub = run
    for _ in range(levels - 1):
        sub = sub.children[0]
        assert sub.state.status == "cancelled"
    [record] = sub.state.approvals.values()
    assert run_sql.ran == []
    assert (record.status, record.decided_by, record.decision_reason) == (
        "cancelled",
        "stop",
        "Stop clicked.",
    )


async def test_an_eval_case_never_waits_for_a_nested_approval() -> None:
    from anvia_notebook import evals

    lead, run_sql = build("q1")
    report = await evals.evaluate(
        lead, [evals.Case(name="nested", input="go", expected="No reviewer")], [evals.contains()]
    )
    assert run_sql.ran == []
    [case] = report.cases
    assert case.status == "success" and case.passed
    assert case.output.startswith("analyst: No reviewer is present in an evaluation")


async def test_an_eval_s_approvals_handler_decides_nested_approvals() -> None:
    from anvia_notebook import evals

    lead, run_sql = build("q1")
    report = await evals.evaluate(
        lead,
        [evals.Case(input="go", expected="rows for q1")],
        [evals.contains()],
        approvals=lambda request: request.run.path == ("lead", "analyst"),
    )
    assert run_sql.ran == ["q1"] and report.cases[0].passed

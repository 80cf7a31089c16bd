"""Three levels of sub-agents for the hostile resume tests: ``lead`` asks ``manager``, which
asks ``analyst`` twice in one turn (two calls made together), whose ``run_sql`` needs
approval; used by a child process and by the test alike (see ``subagent_agents``, whose
``run_sql`` and effects file this reuses).

The child runs ``python -c "import subagent_deep_agents; subagent_deep_agents.run(PROMPT)"``.
"""

from __future__ import annotations

import sys
from typing import Any

from subagent_agents import SqlInput, _run_sql

from anvia_notebook import AgentBuilder, StoreHumanInput, ToolApproval, create_tool
from anvia_notebook.models import FunctionModel, ModelResponse, ToolCall


def _analyst(request: Any) -> ModelResponse:
    last = request.messages[-1]
    if last.role == "user":
        return ModelResponse(
            tool_calls=[ToolCall(id="s1", name="run_sql", arguments={"sql": last.content})]
        )
    return ModelResponse(text=f"analyst: {last.tool_results[0].content}")


def _manager(request: Any) -> ModelResponse:
    last = request.messages[-1]
    if last.role == "user":
        return ModelResponse(
            tool_calls=[
                ToolCall(
                    id=f"m{n}", name="ask_analyst", arguments={"prompt": f"{last.content} {n}"}
                )
                for n in (1, 2)
            ]
        )
    return ModelResponse(text="manager: " + " | ".join(r.content for r in last.tool_results))


def _lead(request: Any) -> ModelResponse:
    last = request.messages[-1]
    if last.role == "user":
        return ModelResponse(
            tool_calls=[ToolCall(id="l1", name="ask_manager", arguments={"prompt": last.content})]
        )
    return ModelResponse(text=f"lead: {last.tool_results[0].content}")


def _analyst_agent() -> Any:
    """The analyst: runs SQL on the warehouse, each query approved."""
    run_sql = create_tool(
        name="run_sql",
        description="Run SQL.",
        input=SqlInput,
        execute=_run_sql,
        approval=ToolApproval(reason="Runs a query on the warehouse."),
    )
    return AgentBuilder("analyst", FunctionModel(_analyst)).tool(run_sql).build()


def lead() -> Any:
    analyst = _analyst_agent()
    manager = AgentBuilder("manager", FunctionModel(_manager)).tool(
        analyst.as_tool(name="ask_analyst")
    )
    return (
        AgentBuilder("lead", FunctionModel(_lead))
        .tool(manager.build().as_tool(name="ask_manager"))
        .human_input(StoreHumanInput())
        .build()
    )


def run(prompt: str) -> None:
    print("started", flush=True)
    try:
        response = lead().prompt(prompt).with_tool_concurrency(1).send_sync()
    except Exception as error:  # pragma: no cover - shown in the test's failure output
        print(f"error: {error!r}", file=sys.stderr, flush=True)
        raise
    print(f"output: {response.output}", flush=True)


def _repeating_lead(request: Any) -> ModelResponse:
    """Asks the analyst in two turns, with the same call id each time (as some servers do)."""
    asked = [m for m in request.messages if m.role == "tool"]
    if len(asked) < 2:
        prompt = f"turn {len(asked) + 1}"
        return ModelResponse(
            tool_calls=[ToolCall(id="call_0", name="ask_analyst", arguments={"prompt": prompt})]
        )
    return ModelResponse(text="lead: " + " | ".join(m.tool_results[0].content for m in asked))


def repeating_lead() -> Any:
    """``lead`` whose model gives its two sub-agent calls (one per turn) the same id."""
    analyst = _analyst_agent()
    return (
        AgentBuilder("lead", FunctionModel(_repeating_lead))
        .tool(analyst.as_tool(name="ask_analyst"))
        .human_input(StoreHumanInput())
        .build()
    )


def run_repeating() -> None:
    print("started", flush=True)
    print(f"output: {repeating_lead().prompt('go').send_sync().output}", flush=True)

"""A lead agent that asks an analyst agent (``as_tool``), whose ``run_sql`` needs approval, for
the sub-agent crash-and-resume tests: used by a child process and by the test alike.

The child runs ``python -c "import subagent_agents; subagent_agents.run(PROMPT)"`` with
``ANVIA_NOTEBOOK_STORE`` set; every execution of ``run_sql`` appends a line to the file named by
``ANVIA_TEST_EFFECTS`` (the side effect that must never happen twice). A prompt with ``ask``
makes the analyst ask a question first; ``ANVIA_TEST_BLOCK_TOOL=1`` makes ``run_sql`` hang after
it started (the child is killed in the middle of the call).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from anvia_notebook import (
    AgentBuilder,
    Hook,
    StoreHumanInput,
    ToolApproval,
    ask_question,
    create_tool,
)
from anvia_notebook.models import FunctionModel, ModelResponse, ToolCall


class SqlInput(BaseModel):
    sql: str


def effects() -> list[str]:
    path = Path(os.environ["ANVIA_TEST_EFFECTS"])
    return path.read_text().splitlines() if path.exists() else []


def _run_sql(args: SqlInput, ctx: Any) -> str:
    path = Path(os.environ["ANVIA_TEST_EFFECTS"])
    with path.open("a") as out:
        out.write(f"started {args.sql}\n")
    if os.environ.get("ANVIA_TEST_BLOCK_TOOL") == "1":
        time.sleep(3600)
    with path.open("a") as out:
        out.write(f"done {args.sql}\n")
    return f"west +12% ({args.sql})"


def _analyst(request: Any) -> ModelResponse:
    last = request.messages[-1]
    if last.role == "user":
        if "ask" in last.content:
            questions = [{"id": "table", "question": "Which table?", "choices": ["sales"]}]
            return ModelResponse(
                tool_calls=[
                    ToolCall(id="aq", name="ask_question", arguments={"questions": questions})
                ]
            )
        return ModelResponse(
            tool_calls=[ToolCall(id="s1", name="run_sql", arguments={"sql": "select 1"})]
        )
    result = last.tool_results[0]
    if result.tool_name == "ask_question":
        table = json.loads(result.content)["answers"][0]["answer"]
        return ModelResponse(
            tool_calls=[ToolCall(id="s2", name="run_sql", arguments={"sql": f"from {table}"})]
        )
    final = next((tool for tool in request.tools if tool.name == "final_result"), None)
    if final is not None and "result" in final.parameters.get("properties", {}):
        # ``lead(typed="optional")``: the analyst found nothing (its valid value is None)
        return ModelResponse(
            text="Nothing to report.",
            tool_calls=[ToolCall(id="out", name="final_result", arguments={"result": None})],
        )
    if final is not None:  # typed: ``lead(typed=True)``
        finding = {"query": last.tool_results[0].content, "rows": len(request.messages)}
        return ModelResponse(
            text="Here is what I found.",
            tool_calls=[ToolCall(id="out", name="final_result", arguments=finding)],
        )
    return ModelResponse(text=f"analyst: {result.content}")


def _lead(request: Any) -> ModelResponse:
    """One call to the analyst per part of the prompt (``east and west``: two in one turn)."""
    last = request.messages[-1]
    if last.role == "user":
        parts = last.content.split(" and ")
        return ModelResponse(
            tool_calls=[
                ToolCall(id=f"a{i}", name="ask_analyst", arguments={"prompt": part})
                for i, part in enumerate(parts, 1)
            ]
        )
    return ModelResponse(text="lead: " + " | ".join(r.content for r in last.tool_results))


class Finding(BaseModel):
    """What the analyst of ``lead(typed=True)`` answers (its output type)."""

    query: str
    rows: int


class _HoldFirstResult(Hook):
    """With ``ANVIA_TEST_HOLD_RESULT`` set: the lead's process waits (to be killed) once the
    analyst's first call has finished, before the lead takes in its result."""

    def on_tool_result(self, event: Any) -> None:
        if os.environ.get("ANVIA_TEST_HOLD_RESULT"):
            print("holding", flush=True)
            time.sleep(3600)


def analyst_agent(typed: bool | str = False) -> Any:
    """The analyst of :func:`lead` (also alone, to resume its run on its own)."""
    run_sql = create_tool(
        name="run_sql",
        description="Run SQL.",
        input=SqlInput,
        execute=_run_sql,
        approval=ToolApproval(reason="Runs a query on the warehouse."),
    )
    analyst = AgentBuilder("analyst", FunctionModel(_analyst)).tools([run_sql, ask_question])
    if typed == "optional":
        analyst = analyst.output_type(Finding | None)  # type: ignore[arg-type]
    elif typed:
        analyst = analyst.output_type(Finding)
    return analyst.build()


def lead(typed: bool | str = False, stream: bool = True) -> Any:
    """The lead and its analyst; ``typed``: the analyst answers a :class:`Finding` (True) or
    ``Finding | None`` ("optional", and it answers None)."""
    return (
        AgentBuilder("lead", FunctionModel(_lead))
        .tool(analyst_agent(typed).as_tool(name="ask_analyst", stream=stream))
        .human_input(StoreHumanInput())
        .hook(_HoldFirstResult())
        .build()
    )


def run(prompt: str, concurrency: int = 1, typed: bool | str = False) -> None:
    print("started", flush=True)
    try:
        response = lead(typed).prompt(prompt).with_tool_concurrency(concurrency).send_sync()
    except Exception as error:  # pragma: no cover - shown in the test's failure output
        print(f"error: {error!r}", file=sys.stderr, flush=True)
        raise
    print(f"output: {response.output}", flush=True)

"""A lead agent whose ``ask_writer`` sub-agent streams a long answer in many deltas, then whose
``publish`` tool needs approval (decided through the run store): for the tests of a sub-run's
events held once in the parent's stored log, by a child process and the test alike.

The child runs ``python -c "import subagent_stream_agents; subagent_stream_agents.run()"`` with
``ANVIA_NOTEBOOK_STORE`` set.
"""

from __future__ import annotations

import sys
from typing import Any

from pydantic import BaseModel

from anvia_notebook import AgentBuilder, StoreHumanInput, ToolApproval, create_tool
from anvia_notebook.models import (
    FunctionModel,
    ModelResponse,
    StreamingQueueModel,
    TextDelta,
    ToolCall,
)

#: How many deltas the writer streams, and what they add up to.
DELTAS = 400
WORDS = [f"paragraph{i} " for i in range(DELTAS)]
ANSWER = "".join(WORDS)


class PublishInput(BaseModel):
    chars: int


def _lead(request: Any) -> ModelResponse:
    last = request.messages[-1]
    if last.role == "user":
        return ModelResponse(
            tool_calls=[ToolCall(id="w1", name="ask_writer", arguments={"prompt": "draft it"})]
        )
    result = last.tool_results[0]
    if result.tool_name == "ask_writer":
        chars = len(result.content)
        return ModelResponse(
            tool_calls=[ToolCall(id="p1", name="publish", arguments={"chars": chars})]
        )
    return ModelResponse(text=f"lead: {result.content}")


def lead() -> Any:
    writer = AgentBuilder(
        "writer", StreamingQueueModel([[TextDelta(delta=word) for word in WORDS]])
    ).name("Writer")
    publish = create_tool(
        name="publish",
        description="Publish the draft.",
        input=PublishInput,
        execute=lambda args, ctx: f"published {args.chars} characters",
        approval=ToolApproval(reason="Publishes the draft."),
    )
    return (
        AgentBuilder("lead", FunctionModel(_lead))
        .tools([writer.build().as_tool(name="ask_writer"), publish])
        .human_input(StoreHumanInput())
        .build()
    )


def run() -> None:
    print("started", flush=True)
    try:
        response = lead().prompt("write and publish").send_sync()
    except Exception as error:  # pragma: no cover - shown in the test's failure output
        print(f"error: {error!r}", file=sys.stderr, flush=True)
        raise
    print(f"output: {response.output}", flush=True)

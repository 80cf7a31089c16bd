"""An agent whose model gives every turn's call the same id (``call_0``, as some servers do),
for the hostile resume test of approvals: ``add`` needs approval; the first call is approved
with edited arguments from the run store; a hook holds the second call (before its approval is
asked) while ``ANVIA_TEST_HOLD`` names a file that exists, so the process is killed there.

The child runs ``python -c "import repeated_id_agents; repeated_id_agents.run()"``.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from anvia_notebook import AgentBuilder, Hook, StoreHumanInput, ToolApproval, create_tool
from anvia_notebook.models import FunctionModel, ModelResponse, ToolCall

from helpers import AddInput


def _model(request: Any) -> ModelResponse:
    results = [m for m in request.messages if m.role == "tool"]
    if len(results) < 2:
        arguments = {"x": len(results) + 1, "y": 1}
        return ModelResponse(tool_calls=[ToolCall(id="call_0", name="add", arguments=arguments)])
    return ModelResponse(text=" | ".join(m.tool_results[0].content for m in results))


class _Hold(Hook):
    """Holds the second call before its approval is asked (a process killed there)."""

    async def on_tool_call(self, event: Any) -> Any:
        hold = os.environ.get("ANVIA_TEST_HOLD")
        if hold and '"x":2' in event.args.replace(" ", ""):
            Path(hold).write_text("held")  # noqa: ASYNC240 - a few bytes, once
            await asyncio.sleep(3600)
        return None


def agent(ran: list[tuple[int, int]] | None = None) -> Any:
    def execute(args: AddInput, ctx: Any) -> int:
        if ran is not None:
            ran.append((args.x, args.y))
        return args.x + args.y

    add = create_tool(
        name="add", description="Add.", input=AddInput, execute=execute, approval=ToolApproval()
    )
    return (
        AgentBuilder("adder", FunctionModel(_model))
        .tool(add)
        .hook(_Hold())
        .human_input(StoreHumanInput())
        .build()
    )


def run() -> None:
    print("started", flush=True)
    print(f"output: {agent().prompt('add').send_sync().output}", flush=True)

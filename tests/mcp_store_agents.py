"""An agent with the toolbox MCP server, for the MCP crash-and-resume tests: a child process
runs ``python -c "import mcp_store_agents; mcp_store_agents.run(TOOL)"`` with
``ANVIA_NOTEBOOK_STORE`` set and is killed with SIGKILL; the test resumes the run. The toolbox
appends each call of a tool that changes things to ``ANVIA_TEST_EFFECTS`` (``TOOLBOX_LOG``)."""

from __future__ import annotations

import os
import sys

from mcp_helpers import TOOLBOX

from anvia_notebook import AgentBuilder, StoreHumanInput, mcp
from anvia_notebook.models import FunctionModel, ModelResponse, ToolCall

ARGUMENTS = {
    "write_note": {"key": "k", "text": "v"},
    "set_flag": {"name": "x"},
    "ask_name": {"label": "pet"},  # (the server asks the person for a name: a question)
}


def _script(tool: str):
    def script(request):
        last = request.messages[-1]
        if last.role == "user":
            return ModelResponse(
                tool_calls=[ToolCall(id="t1", name=tool, arguments=ARGUMENTS[tool])]
            )
        return ModelResponse(text=f"Result: {last.tool_results[0].content}")

    return script


def agent(tool: str, *, hang: bool = False, approval: str = "annotations"):
    env = {"TOOLBOX_LOG": os.environ["ANVIA_TEST_EFFECTS"]}
    if hang:
        env["TOOLBOX_HANG"] = "1"
    server = mcp.stdio("toolbox", sys.executable, [TOOLBOX], env=env, approval=approval)
    return (
        AgentBuilder("mcp-agent", FunctionModel(_script(tool)))
        .mcp([server])
        .human_input(StoreHumanInput())
        .build()
    )


def run(tool: str, hang: bool = False, approval: str = "annotations") -> None:
    print("started", flush=True)
    response = agent(tool, hang=hang, approval=approval).prompt("go").send_sync()
    print(f"output: {response.output}", flush=True)

"""MCP servers that misbehave, as a hostile user's servers would: an error text the model must
read whole, a tool list that never comes or never ends, a tool that clashes with the typed
output's ``final_result``. Each gives a clear error or result, never a hang."""

from __future__ import annotations

import asyncio
import sys

import pytest
from mcp_helpers import SERVERS

from anvia_notebook import AgentBuilder, mcp
from anvia_notebook.models import QueueModel

from helpers import call, tool_results

HOSTILE = str(SERVERS / "hostile.py")


@pytest.fixture(autouse=True)
def _close_sessions():
    yield
    asyncio.run(mcp.close_all())


def hostile(mode: str) -> mcp.McpServerConfig:
    return mcp.stdio(f"hostile-{mode}", sys.executable, [HOSTILE, mode])


def test_an_error_text_that_starts_with_a_bracket_reaches_the_model_whole():
    model = QueueModel([call("read_file", {}), "sorry"])
    agent = AgentBuilder("a", model).mcp([hostile("bracket_error")]).approvals(lambda r: True)
    agent.build().prompt("read my notes").send_sync()
    [result] = tool_results(model.requests[1])
    assert result.is_error
    assert "[Errno 2] No such file or directory: 'notes.txt'" in result.content
    assert "MCP tool returned an error" not in result.content

"""What an MCP tool call costs through the agent, over the same call with the bare ``mcp``
client session; and how long connecting takes.

Server: the tests' toolbox (``tests/mcp_servers/toolbox.py``, stdio), tool ``read_note``
(read-only: no approval). Three ways, taking turns call by call so a busy machine affects all
alike:

* ``bare``: ``ClientSession.call_tool`` on a session opened with the SDK directly, in the
  benchmark's own loop;
* ``tool``: the agent's ``McpTool.call`` (schema check, the hop to the MCP loop, result mapping);
* ``agent``: a whole agent turn calling the tool (a fake model with no delay), minus the same
  turn with a plain Python tool (so the figure is what MCP adds to a tool call of the loop).

Figures: medians in milliseconds; "overhead" is ``tool`` minus ``bare`` (the target: at most
1 ms); "agent overhead" is what an MCP call adds to an agent turn beyond the bare call
(``agent`` minus ``bare``). Then connection set-up: ``mcp.connect`` of a fresh server (process
start, initialize, list tools), median of a few: the toolbox (Python), and the MCP project's
reference server from npm (``@modelcontextprotocol/server-everything``, Node.js) when
``tests/mcp_servers/npm`` has it installed (``npm ci`` there). Last, the time to read a 20 MB
streamable-HTTP answer through the mending of escaped lone UTF-16 halves (``mcp/_halves.py``),
with no line end in it: a JSON body in 16 KB pieces, and an event stream's one ``data:`` line in
64 KB pieces (best of three, in milliseconds).

    python benchmarks/mcp_bench.py [--calls 300] [--connects 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
TOOLBOX = str(ROOT / "tests" / "mcp_servers" / "toolbox.py")
EVERYTHING = (
    ROOT
    / "tests"
    / "mcp_servers"
    / "npm"
    / "node_modules"
    / "@modelcontextprotocol"
    / "server-everything"
    / "dist"
    / "index.js"
)


async def bench(calls: int, connects: int) -> dict[str, float]:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    from anvia_notebook import AgentBuilder, mcp, tool
    from anvia_notebook.models import ModelResponse, QueueModel, ToolCall

    params = StdioServerParameters(command=sys.executable, args=[TOOLBOX])
    server = mcp.stdio("toolbox", sys.executable, [TOOLBOX])
    connected = await mcp.connect(server)
    read_note = next(t for t in connected.tools if t.name == "read_note")
    args = read_note.parse_args({"key": "greeting"})

    @tool
    def local_note(key: str) -> str:
        """A plain tool, for the baseline turn."""
        return "hello"

    def turn_agent(name: str):  # one tool call, then an answer
        asked = ToolCall(id="c", name=name, arguments={"key": "greeting"})
        model = QueueModel([ModelResponse(tool_calls=[asked]), "ok"])
        builder = AgentBuilder("bench", model)
        return (builder.mcp([server]) if name == "read_note" else builder.tool(local_note)).build()

    times: dict[str, list[float]] = {"bare": [], "tool": [], "agent_mcp": [], "agent_plain": []}
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        for _ in range(20):  # warm up
            await session.call_tool("read_note", {"key": "greeting"})
            await read_note.call(args, None)
        for _ in range(calls):
            t0 = time.perf_counter()
            await session.call_tool("read_note", {"key": "greeting"})
            t1 = time.perf_counter()
            await read_note.call(args, None)
            t2 = time.perf_counter()
            await turn_agent("read_note").prompt("go").send()
            t3 = time.perf_counter()
            await turn_agent("local_note").prompt("go").send()
            t4 = time.perf_counter()
            times["bare"].append(t1 - t0)
            times["tool"].append(t2 - t1)
            times["agent_mcp"].append(t3 - t2)
            times["agent_plain"].append(t4 - t3)
    await mcp.close_all()
    setup = await _connect_times(
        lambda index: mcp.stdio(f"fresh-{index}", sys.executable, [TOOLBOX]), connects
    )
    ms = {key: statistics.median(values) * 1000 for key, values in times.items()}
    figures = {
        "bare_call_ms": ms["bare"],
        "tool_call_ms": ms["tool"],
        "overhead_ms": ms["tool"] - ms["bare"],
        "agent_turn_mcp_ms": ms["agent_mcp"],
        "agent_turn_plain_tool_ms": ms["agent_plain"],
        "agent_overhead_ms": ms["agent_mcp"] - ms["agent_plain"] - ms["bare"],
        "connect_ms": setup,
    }
    if EVERYTHING.is_file() and shutil.which("node"):
        figures["connect_npm_everything_ms"] = await _connect_times(
            lambda index: mcp.stdio(f"everything-{index}", "node", [str(EVERYTHING), "stdio"]),
            connects,
        )
    figures["mend_20mb_json_ms"] = await _mend_time(False, 16 * 1024)
    figures["mend_20mb_event_line_ms"] = await _mend_time(True, 64 * 1024)
    return figures


async def _mend_time(events: bool, piece: int, size: int = 20 * 1024 * 1024) -> float:
    """The time to read a ``size`` body with no line end, in pieces of ``piece`` bytes, through
    the mending of the answers of a streamable HTTP server, in milliseconds (best of three)."""
    from anvia_notebook.mcp._halves import _mended_type

    body = (b"data: " if events else b"") + b'{"t": "' + b"x" * size + b'\\ud83d"}'
    pieces = [body[at : at + piece] for at in range(0, len(body), piece)]

    async def stream() -> Any:
        for each in pieces:
            yield each

    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        read = [each async for each in _mended_type()(stream(), events)]
        best = min(best, time.perf_counter() - t0)
    assert sum(map(len, read)) == len(body)
    return best * 1000


async def _connect_times(server: Callable[[int], Any], connects: int) -> float:
    """The median time ``mcp.connect`` takes for a fresh server, in milliseconds."""
    from anvia_notebook import mcp

    setup = []
    for index in range(connects):
        fresh = server(index)
        t0 = time.perf_counter()
        await mcp.connect(fresh)
        setup.append(time.perf_counter() - t0)
        await mcp.close_all()
    return statistics.median(setup) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--connects", type=int, default=3)
    parser.add_argument("--json", type=Path)
    options = parser.parse_args()
    figures = asyncio.run(bench(options.calls, options.connects))
    for key, value in figures.items():
        print(f"{key:28} {value:9.3f}")
    if options.json:
        options.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()

"""The process's MCP sessions: one per server, opened on first use, closed on request or at
exit; and connecting an agent's servers on its first run."""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import McpToolNameClashError
from ._connection import Connection
from ._loop_thread import on_exit, run_on_mcp_loop
from ._servers import HttpServer, McpServerConfig, StdioServer
from ._tool import McpTool

if TYPE_CHECKING:
    from ..agent import Agent

__all__ = ["McpServer", "attach_mcp_tools", "close_all", "connect"]

#: Open connections by the server's identity (what it runs or where it is, and its name).
_connections: dict[tuple[Any, ...], Connection] = {}
#: Every connection that opened a session since the last :func:`close_all`, including one a
#: run's tool opened again after ``close_all()`` (the tool keeps its connection).
_opened: set[Connection] = set()
_registered_exit = False


def _key(config: McpServerConfig) -> tuple[Any, ...]:
    if isinstance(config, StdioServer):
        env = tuple(sorted((config.env or {}).items()))
        where: tuple[Any, ...] = (config.command, config.args, env, config.cwd, config.roots)
    else:
        assert isinstance(config, HttpServer)
        where = (config.url, tuple(sorted((config.headers or {}).items())))
    return (config.transport, config.name, where)


def _connection(config: McpServerConfig) -> Connection:
    global _registered_exit
    if not isinstance(config, McpServerConfig):
        raise TypeError(
            f"Expected an MCP server from mcp.stdio, mcp.http or mcp.sse, got {config!r}."
        )
    key = _key(config)
    connection = _connections.get(key)
    if connection is None or connection.config is not config:
        if connection is None:
            connection = Connection(config, on_open=_opened.add)
        else:  # same server, new settings (approval, timeout): keep the session
            connection.config = config
        _connections[key] = connection
    if not _registered_exit:
        on_exit(_close_all_here)
        _registered_exit = True
    return connection


@dataclass
class McpServer:
    """A connected MCP server: its ``name``, its ``tools`` (ready to give an agent) and
    :meth:`close`."""

    name: str
    tools: list[McpTool] = field(default_factory=list)
    _connection: Connection | None = field(default=None, repr=False)

    async def close(self) -> None:
        """End the session (and stop a stdio server's process); a later call opens a new one."""
        if self._connection is not None:
            await run_on_mcp_loop(self._connection.close())

    @property
    def connected(self) -> bool:
        return self._connection is not None and self._connection.session is not None


#: The tools made from a connection's listing, per config (a new listing, after a reconnect,
#: or another config makes them anew): runs reuse them, their schema validators included.
_tool_cache: dict[tuple[int, int], tuple[McpServerConfig, list[Any], list[McpTool]]] = {}


async def _open(connection: Connection, config: McpServerConfig) -> list[McpTool]:
    await connection.ensure_open()
    key = (id(connection), id(config))
    cached = _tool_cache.get(key)
    if cached is not None and cached[0] is config and cached[1] is connection.tools:
        return list(cached[2])
    callable_ = [spec for spec in connection.tools if not _needs_tasks(spec, config)]
    tools = [McpTool(connection, spec, config) for spec in callable_]
    _tool_cache[key] = (config, connection.tools, tools)
    return list(tools)


def _needs_tasks(spec: Any, config: McpServerConfig) -> bool:
    """A tool the server runs only as a task (``execution.taskSupport: "required"``): this
    package makes plain calls, which the server refuses, so the model is not offered it."""
    if getattr(getattr(spec, "execution", None), "task_support", None) != "required":
        return False
    warnings.warn(
        f"MCP server {config.name!r}: its tool {spec.name!r} runs only as a task (an MCP "
        "feature this package does not use), so the agent is not given it.",
        UserWarning,
        stacklevel=2,
    )
    return True


async def connect(server: McpServerConfig) -> McpServer:
    """Open the session with ``server`` (or reuse this process's open one) and list its tools.

    Two tools of one server with one name is an error here.
    """
    connection = _connection(server)
    tools = await run_on_mcp_loop(_open(connection, server))
    _check_clashes([(server.name, tools)], {})
    return McpServer(name=server.name, tools=tools, _connection=connection)


async def close_all() -> None:
    """Close every MCP session of this process (each server process is stopped)."""
    if _connections or _opened:
        await run_on_mcp_loop(_close_all_here())


async def _close_all_here() -> None:
    connections = {*_connections.values(), *_opened}
    _connections.clear()
    _opened.clear()
    _tool_cache.clear()
    await asyncio.gather(*(c.close() for c in connections), return_exceptions=True)


def _check_clashes(
    listed: Sequence[tuple[str, list[McpTool]]], own: dict[str, Any]
) -> dict[str, McpTool]:
    """Every tool name once: no two servers (nor a server and the agent's own tools) may
    offer the same name."""
    seen: dict[str, McpTool] = {}
    given: dict[str, int] = {}  # server name: the listing it was first seen in
    for index, (server_name, tools) in enumerate(listed):
        if given.setdefault(server_name, index) != index:
            raise McpToolNameClashError(
                f"The MCP server {server_name!r} is given to this agent twice (two servers of "
                "that name in .mcp([...])); give each server once, under a name of its own."
            )
        for tool in tools:
            other = seen.get(tool.name)
            if other is not None:
                where = (
                    f"twice by the MCP server {server_name!r}"
                    if other.server_name == server_name
                    else f"by the MCP servers {other.server_name!r} and {server_name!r}"
                )
                raise McpToolNameClashError(
                    f"The tool name {tool.name!r} is offered {where}; tool names are unique in "
                    "an agent. Use only one of these servers in this agent."
                )
            mine = own.get(tool.name)
            if mine is not None:
                raise McpToolNameClashError(
                    f"The MCP server {server_name!r} offers a tool named {tool.name!r}, and the "
                    "agent already has a tool of that name; tool names are unique in an agent. "
                    "Rename the agent's tool or leave this server out."
                )
            seen[tool.name] = tool
    return seen


async def attach_mcp_tools(agent: Agent) -> None:
    """Connect the agent's MCP servers (first run) and give it their tools, checking that no
    name clashes, before any model call."""
    listed: list[tuple[str, list[McpTool]]] = []
    ours: set[int] = set()  # the connections of the agent's servers
    for server in agent.mcp_servers:
        connection = _connection(server)
        ours.add(id(connection))
        listed.append((server.name, await run_on_mcp_loop(_open(connection, server))))
    # The agent's own tools: MCP tools given with .tools(...) (from mcp.connect) included,
    # only the tools of its servers' earlier listings are replaced (also those of a session
    # closed since, by ``close_all``: a new one is open now).
    servers = {id(server) for server in agent.mcp_servers}
    own = {
        name: tool
        for name, tool in agent.tools.items()
        if not (
            isinstance(tool, McpTool)
            and (id(tool.connection) in ours or id(tool.connection.config) in servers)
        )
    }
    tools = _check_clashes(listed, own)
    for name in [name for name in agent.tools if name not in own]:
        del agent.tools[name]
    agent.tools.update(tools)

"""An MCP server's tool as an agent :class:`~anvia_notebook.tools.Tool`.

It runs through the same execution path as every tool (hooks, approval, the run store, resume,
traces): only its ``execute`` differs, calling the server on the MCP loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import warnings
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from .._schema_check import schema_problems
from .._util import quoted
from ..errors import McpToolError, ToolArgumentsError
from ..models.base import ToolDefinition
from ..tools import Tool, ToolContext, decode_arguments, sendable_name
from ._approval import tool_approval
from ._content import McpResult, map_result
from ._loop_thread import run_on_mcp_loop
from ._servers import McpServerConfig

if TYPE_CHECKING:
    import mcp.types as mcp_types

    from ._connection import Connection

__all__ = ["McpArguments", "McpTool"]


class McpArguments(BaseModel):
    """A call's arguments, as the server's JSON Schema checked them (any fields): read as
    ``args.name`` or ``args["name"]``. An argument named as a method of pydantic's models
    (``schema``, ``json``, ``copy``, ``validate``: common on database servers) is the
    argument, not the method: an approval's ``when`` that reads ``ctx.args.schema`` got a
    method, never equal to the value it checked, and the call ran without approval."""

    model_config = ConfigDict(extra="allow")

    def __getattribute__(self, name: str) -> Any:
        if not name.startswith(("_", "model_")):
            extra = object.__getattribute__(self, "__pydantic_extra__")
            if extra and name in extra:
                return extra[name]
        return super().__getattribute__(name)

    def __getitem__(self, name: str) -> Any:
        extra = self.__pydantic_extra__ or {}
        if name not in extra:
            raise KeyError(f"The call has no argument {name!r}; it has: {sorted(extra)}.")
        return extra[name]


class McpTool(Tool):
    """One tool of one MCP server. ``server_name`` names the server (traces, approvals)."""

    def __init__(
        self, connection: Connection, spec: mcp_types.Tool, config: McpServerConfig
    ) -> None:
        annotations = spec.annotations
        super().__init__(
            name=spec.name,
            description=spec.description or "",
            input=McpArguments,
            execute=self._call,
            approval=tool_approval(config.approval, config.name, spec.name, annotations),
            idempotent=bool(getattr(annotations, "idempotent_hint", None) is True),
        )
        self.connection = connection
        self.server_name = config.name
        self.annotations = annotations
        self.input_schema: dict[str, Any] = dict(spec.input_schema or {"type": "object"})
        self.timeout = config.timeout
        if not sendable_name(spec.name):
            warnings.warn(
                f"The MCP server {config.name!r} offers a tool named {quoted(spec.name)}: "
                "OpenAI and Anthropic take only letters, digits, _ and - (at most 64) in tool "
                "names, and refuse every request of an agent that has it. With those models, "
                "leave this server out (other servers may take the name).",
                UserWarning,
                stacklevel=2,
            )

    def __repr__(self) -> str:
        return f"McpTool(name={self.name!r}, server={self.server_name!r})"

    def definition(self) -> ToolDefinition:
        if self._definition is None:
            self._definition = ToolDefinition(
                name=self.name, description=self.description, parameters=self.input_schema
            )
        return self._definition

    def parse_args(self, raw: str | dict[str, Any]) -> BaseModel:
        """JSON text or a dict, checked against the server's input schema."""
        data = decode_arguments(self.name, raw)
        if not isinstance(data, dict):
            raise ToolArgumentsError(
                f"Invalid arguments for tool {self.name}: expected a JSON object. Call the "
                "tool again with a JSON object."
            )
        problems = schema_problems(self.input_schema, data)
        if problems:
            raise ToolArgumentsError(
                f"Invalid arguments for tool {self.name}: {'; '.join(problems)}. Call the tool "
                "again with corrected arguments."
            )
        return McpArguments.model_validate(data)

    async def _call(self, args: BaseModel, ctx: ToolContext) -> str:
        arguments = args.model_dump()
        from ._elicit import asker_for_this_call

        asker = asker_for_this_call()
        try:
            result = await run_on_mcp_loop(
                self.connection.call_tool(self.name, arguments, self.timeout, asker)
            )
        except asyncio.CancelledError:
            if asker is not None:  # Stop: a question still asked is decided by it, before
                # the call ends (a second cancel must not leave it for the run's end to close)
                stopping = asyncio.ensure_future(asker.stop())
                while not stopping.done():
                    with contextlib.suppress(asyncio.CancelledError):
                        await asyncio.shield(stopping)
            raise
        except Exception as error:
            from mcp import MCPError

            if not isinstance(error, MCPError):
                raise
            # The server answered the call with a JSON-RPC error (its session goes on).
            raise McpToolError(
                f"MCP server {self.server_name!r} answered the call of {self.name} with error "
                f"{error.code}: {error.message}",
                error_type=str(error.code),
            ) from None
        mapped: McpResult = map_result(result)
        from .._tool_exec import TOOL_CALL_PARTS

        parts = TOOL_CALL_PARTS.get()
        if parts is not None:
            parts.extend(
                {"type": m.type, "media_type": m.media_type, "data": m.data} for m in mapped.media
            )
        if mapped.is_error:
            raise McpToolError(mapped.text, error_type="tool_error")
        return mapped.text

"""Sub-agents: an agent called as another agent's tool (``agent.as_tool(...)``).

The tool's input is ``{"prompt": str}`` and its result the sub-agent's final output, as in
Anvia's ``agent.asTool`` (a sub-agent with an output type answers its validated value as
JSON). Called from a run, the sub-agent's run is a run of its own: its ``RunState`` names
the parent run and the parent's tool call, it goes to the parent's run store,
its approvals and questions are decided by the nearest approval handler up the chain, else by
the top-level run's human input, and they are listed and decided on the top-level run (its
interactions adopt the sub-run's). With ``stream=True`` its events reach the parent's stream as
``agent_tool_event``; with ``stream=False`` only its approvals and questions do (and the results
of their calls), so that the top-level run's cell shows what waits for a person. Stop, cancel
and the human input's time limit reach it through the parent; its failure is the tool call's
error result. On ``agent.resume(top_run_id)`` a sub-agent call
that was interrupted takes up the stored sub-run instead of starting again.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from ._run_context import current_run
from ._sub_run_log import InteractionsOnly
from ._tool_exec import CURRENT_TOOL_CALL
from ._util import compact_json
from .errors import DEFAULT_CANCEL_REASON, SubAgentError
from .records import PATH_SEPARATOR, approval_scope, path_label
from .tools import Tool, ToolContext, warn_unsendable_name

if TYPE_CHECKING:
    from .agent import Agent
    from .request import PromptRequest
    from .run import AgentRun
    from .run_state import PromptResponse

__all__ = [
    "AgentToolInput",
    "DEFAULT_MAX_DEPTH",
    "PATH_SEPARATOR",
    "agent_as_tool",
    "approval_scope",
    "path_label",
]

#: How many sub-agent levels below the top-level agent a call may nest by default.
DEFAULT_MAX_DEPTH = 5


class AgentToolInput(BaseModel):
    """What a sub-agent tool takes: the prompt for the sub-agent."""

    model_config = ConfigDict(extra="forbid")

    prompt: str = Field(description="The prompt to send to the agent.")


def agent_as_tool(
    agent: Agent,
    *,
    name: str | None = None,
    description: str | None = None,
    max_turns: int | None = None,
    stream: bool = True,
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> Tool:
    """The :class:`~anvia_notebook.tools.Tool` that runs ``agent`` (see :meth:`Agent.as_tool`)."""
    if max_turns is not None and (
        not isinstance(max_turns, int) or isinstance(max_turns, bool) or max_turns < 0
    ):
        raise ValueError("max_turns must be zero or more")
    if name is not None and not isinstance(name, str):
        raise TypeError(f"A tool's name must be a text, not {type(name).__name__}.")
    if not isinstance(stream, bool):
        raise TypeError(f"stream must be True or False, not {stream!r}.")
    if not isinstance(max_depth, int) or isinstance(max_depth, bool) or max_depth < 1:
        raise ValueError("max_depth must be a positive integer (sub-agent levels)")
    tool_name = (name or agent.id).strip()
    warn_unsendable_name(tool_name)  # (an agent's id may be "data analyst")
    if description is not None:
        text = description
    else:
        text = agent.description or f"Prompt the {tool_name} agent."
    call = _SubAgentCall(agent, tool_name, max_turns, stream, max_depth)
    return Tool(
        name=tool_name,
        description=text,
        input=AgentToolInput,
        execute=call.execute,
        # Run again on resume: the call takes up its stored sub-run, nothing is repeated.
        idempotent=True,
    )


def _result_text(request: PromptRequest, response: PromptResponse) -> str:
    """What the parent's model reads of a sub-run that succeeded: its output, or, for a
    sub-agent with an output type, the validated value as JSON (not the words said with it)."""
    spec = request.active_output_type
    if spec is None:
        return response.output
    return compact_json(spec.dump(response.data))


@dataclass(eq=False)
class _SubAgentCall:
    """What one sub-agent tool does when it is called."""

    agent: Agent
    tool_name: str
    max_turns: int | None
    stream: bool
    max_depth: int

    async def execute(self, args: AgentToolInput, ctx: ToolContext | None) -> str:
        parent = current_run()
        if parent is None or ctx is None:
            # Called directly (``tool.call({...})``, as Anvia's), not as a run's tool call: even
            # from code a run runs (another tool), it is a run of its own, not a sub-run.
            alone = self.agent.prompt(args.prompt)
            if self.max_turns is not None:
                alone.max_turns(self.max_turns)
            return _result_text(alone, await alone.send())
        depth = parent.depth + 1
        if depth > self.max_depth:
            chain = path_label((*parent.path, self.agent.id))
            raise SubAgentError(
                f"{self.tool_name} was not run: calling the {self.agent.id} agent here "
                f"({chain}) would nest {depth} sub-agent levels below the top-level agent, "
                f"more than this tool allows ({self.max_depth}). Answer without it."
            )
        stored = self._stored(parent, ctx)
        if isinstance(stored, str):
            return stored  # the sub-run had finished before the interruption
        if stored is not None:
            request = stored
        else:
            request = self.agent.prompt(args.prompt)
            request.sub_run_of(
                {
                    "parent_run_id": parent.run_id,
                    "parent_call_id": ctx.internal_call_id,
                    "parent_tool_call_id": ctx.tool_call_id,
                    "parent_turn": parent.state.turn,
                    "path": [*parent.path, self.agent.id],
                }
            )
            request.store(parent.store)
            if self.max_turns is not None:
                request.max_turns(self.max_turns)
        self._inherit(request, parent)
        run = request.create_run()
        parent.adopt(run)
        self._forward(run, parent, ctx)
        run.start()
        try:
            response = await run.wait()
        except asyncio.CancelledError:
            # The parent was stopped (or another of its calls failed): so is the sub-run, the
            # same way, and it ends (recording its own state) before this call does.
            call = CURRENT_TOOL_CALL.get()
            how = call.cut_short() if call is not None and call.cut_short is not None else None
            if how is not None and how.decided_by == "runtime":
                run.cut_short(how.reason)
            else:
                run.cancel(parent.state.cancel_reason or DEFAULT_CANCEL_REASON)
            await run.ended()
            raise
        return _result_text(request, response)

    def _inherit(self, request: PromptRequest, parent: AgentRun) -> None:
        """Who decides the sub-run's approvals and questions: the nearest approval handler up
        the chain (the sub-agent's own first), else the top-level run's human input."""
        if self.agent.approval_handler is None:
            handler = parent.request.active_approval_handler
            if handler is not None:
                request.approvals(handler)
        human = parent.request.active_human_input
        if human is not None:
            request.human_input(human)
        request.session(parent.state.session_id, parent.request.meta)

    def _stored(self, parent: AgentRun, ctx: ToolContext) -> PromptRequest | str | None:
        """On resume, for the call that was interrupted: the stored sub-run, taken up (a
        request), or its output when it had finished; None when it has none (start afresh)."""
        store = parent.store
        if store is None or parent.resumed_turn is None or parent.state.turn != parent.resumed_turn:
            return None
        for state in store.sub_runs(parent.run_id):
            if state.parent_tool_call_id != ctx.tool_call_id or state.agent_id != self.agent.id:
                continue
            if state.parent_turn is not None and state.parent_turn != parent.state.turn:
                continue  # an earlier turn's call that had the same id
            if state.status == "success":
                # (a store of an earlier version kept no value: its text, then; a value of
                # None is a value, kept as null)
                if state.output_type is not None and "data" in state.model_fields_set:
                    return compact_json(state.data)
                return state.output or ""
            if state.status in ("error", "cancelled"):
                raise SubAgentError(
                    f"The {self.agent.id} agent's run {state.run_id} had ended "
                    f"({state.status}) before the interruption: "
                    f"{state.error or state.cancel_reason or 'no answer'}."
                )
            request = self.agent.resume(state.run_id, store)
            resumed = request.resumed_state
            assert resumed is not None
            resumed.parent_call_id = ctx.internal_call_id
            if self.max_turns is not None:
                request.max_turns(self.max_turns)
            return request
        return None

    def _forward(self, run: AgentRun, parent: AgentRun, ctx: ToolContext) -> None:
        """Pass the sub-run's events on to the parent's log and stream as ``agent_tool_event``
        (for the sub-run's life: an ended run sends nothing more); with ``stream=False`` only
        its approvals and questions and their calls' results, which the top-level run's cell
        must show all the same (they are decided there)."""
        fields: dict[str, Any] = {
            "type": "agent_tool_event",
            "turn": parent.state.turn,
            "tool_name": ctx.tool_name,
            "tool_call_id": ctx.tool_call_id,
            "internal_call_id": ctx.internal_call_id,
            "agent_id": self.agent.id,
            "agent_name": self.agent.name,
            "run_id": run.run_id,
        }
        run.nest_in(parent, fields, None if self.stream else InteractionsOnly())

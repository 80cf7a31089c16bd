"""Which run a tool call, an approval or a question belongs to."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = ["RunInfo"]


class RunInfo(BaseModel):
    """Which run a tool call belongs to."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    agent_id: str
    run_id: str
    session_id: str | None = None
    metadata: dict[str, Any] | None = None
    #: The agents from the top-level run down to this one (just this agent for a plain run).
    path: tuple[str, ...] = ()
    #: For a sub-agent's run (``agent.as_tool``): the run that called it.
    parent_run_id: str | None = None

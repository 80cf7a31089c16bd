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

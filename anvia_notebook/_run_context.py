"""Which run the current task belongs to (a sub-agent tool finds the run that called it)."""

from __future__ import annotations

import contextvars
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .run import AgentRun

__all__ = ["CURRENT_RUN", "current_run"]

#: Set by the run loop in its own task; tasks it starts (its tool calls) inherit it.
CURRENT_RUN: contextvars.ContextVar[AgentRun | None] = contextvars.ContextVar(
    "anvia_current_run", default=None
)


def current_run() -> AgentRun | None:
    """The run whose task (or tool call) is running now, if any."""
    return CURRENT_RUN.get()

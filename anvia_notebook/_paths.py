"""How a sub-agent's interaction names where it happened: the agents from the top-level run down
to the one that asked, then the tool (``lead``, ``analyst``, ``run_sql``)."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["PATH_SEPARATOR", "approval_scope", "path_label"]

#: Between the agents of a path as people read it (a single right-pointing angle quote).
PATH_SEPARATOR = " \u203a "


def approval_scope(path: Sequence[str], tool_name: str) -> str:
    """What an "Always allow" covers: the tool of a top-level run by its name; a sub-agent's
    tool only on its path (allowing ``run_sql`` for the analyst under the lead allows it there
    only, not for the lead's own ``run_sql`` or another path's)."""
    return tool_name if len(path) <= 1 else path_label(path, tool_name)


def path_label(path: Sequence[str], tool_name: str | None = None) -> str:
    """The agents from the top-level run down, then the tool, as people read them (e.g.
    ``lead``, ``analyst``, ``run_sql`` joined by :data:`PATH_SEPARATOR`)."""
    return PATH_SEPARATOR.join([*path, *([tool_name] if tool_name else [])])

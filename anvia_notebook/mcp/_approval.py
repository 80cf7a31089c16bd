"""From a server's approval setting and a tool's annotations to the tool's approval policy."""

from __future__ import annotations

import re
from collections.abc import Mapping
from fnmatch import fnmatchcase
from typing import Any

from ..approvals import ToolApproval
from ._servers import ApprovalPolicy, ApprovalSetting

__all__ = ["describe_hints", "tool_approval", "policy_for"]


def policy_for(setting: ApprovalSetting, tool_name: str) -> ApprovalPolicy:
    """The policy for one tool: the setting itself, or the first pattern of a dict that
    matches the tool's name (``"annotations"`` when none does)."""
    if isinstance(setting, Mapping):
        for pattern, policy in setting.items():
            if fnmatchcase(tool_name, pattern):
                return policy
        return "annotations"
    return setting


def describe_hints(annotations: Any) -> str:
    """The tool's declared hints in words (the server's word, not a guarantee)."""
    if annotations is None:
        return "declares no hints"
    words: list[str] = []
    read_only = getattr(annotations, "read_only_hint", None)
    if read_only is True:
        words.append("read-only")
    else:
        words.append("not read-only" if read_only is False else "read-only not declared")
        destructive = getattr(annotations, "destructive_hint", None)
        if destructive is not None:
            words.append("destructive" if destructive else "not destructive")
        idempotent = getattr(annotations, "idempotent_hint", None)
        if idempotent is not None:
            words.append("idempotent" if idempotent else "not idempotent")
    open_world = getattr(annotations, "open_world_hint", None)
    if open_world is not None:
        words.append("reaches the outside world" if open_world else "closed world")
    return "declares: " + ", ".join(words)


_PLAIN_NAME = re.compile(r"[A-Za-z0-9_.:/-]{1,128}")


def tool_approval(
    setting: ApprovalSetting, server_name: str, tool_name: str, annotations: Any
) -> ToolApproval | None:
    """The :class:`ToolApproval` of one MCP tool (``None``: it runs without approval)."""
    policy = policy_for(setting, tool_name)
    # A name of more than name characters is quoted: one holding line breaks or words of its
    # own ("... (declares: read-only)") cannot pass for the rest of the reason.
    shown = tool_name if _PLAIN_NAME.fullmatch(tool_name) else repr(tool_name)
    reason = f"{shown} from the MCP server {server_name!r} ({describe_hints(annotations)})"
    if policy == "never":
        return None
    if policy == "annotations":
        if getattr(annotations, "read_only_hint", None) is True:
            return None
        return ToolApproval(when=True, reason=reason)
    if policy == "always":
        return ToolApproval(when=True, reason=reason)
    assert isinstance(policy, ToolApproval)
    if policy.reason is None:
        return ToolApproval(when=policy.when, reason=reason, reject_message=policy.reject_message)
    return policy

"""What an MCP server is (how to start or reach it) and how its tools are approved.

Nothing here imports the ``mcp`` SDK: describing a server costs nothing until it is used.
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, TypeVar
from urllib.parse import urlsplit

from .._util import quoted, shown_url
from ..approvals import ToolApproval
from ..errors import McpPrivateNetworkError

__all__ = [
    "ApprovalPolicy",
    "ApprovalSetting",
    "HttpServer",
    "McpServerConfig",
    "SseServer",
    "StdioServer",
    "check_url",
]

#: One policy: from the server's annotations (read-only tools run without approval), always,
#: never, or a :class:`ToolApproval` of your own.
ApprovalPolicy = Literal["annotations", "always", "never"] | ToolApproval
#: A policy for every tool of the server, or a dict from tool-name pattern (``fnmatch``; the
#: first matching pattern wins) to policy; a tool matching no pattern uses ``"annotations"``.
ApprovalSetting = ApprovalPolicy | Mapping[str, ApprovalPolicy]

DEFAULT_TIMEOUT = 60.0

_Remote = TypeVar("_Remote", bound="HttpServer")


def _common(name: str, approval: ApprovalSetting, timeout: float) -> dict[str, Any]:
    """The settings every transport shares, checked: the fields of any :class:`McpServerConfig`."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError("An MCP server needs a non-empty name, e.g. mcp.stdio('files', ...).")
    policies = list(approval.values()) if isinstance(approval, Mapping) else [approval]
    for policy in policies:
        if not (isinstance(policy, ToolApproval) or policy in ("annotations", "always", "never")):
            raise ValueError(
                f"MCP server {name!r}: approval must be 'annotations', 'always', 'never', a "
                f"ToolApproval, or a dict from tool-name pattern to one of those; got {policy!r}."
            )
    if not isinstance(timeout, (int, float)) or timeout <= 0:
        raise ValueError(f"MCP server {name!r}: timeout must be a positive number of seconds.")
    return {"name": name.strip(), "approval": approval, "timeout": float(timeout)}


def _names_to_values(
    name: str, what: str, given: Mapping[str, str] | None
) -> dict[str, str] | None:
    """``env`` or ``headers``: a dict from names to values (a value that is not a text is
    written as one), or None."""
    if given is None:
        return None
    if not isinstance(given, Mapping):
        raise TypeError(
            f"MCP server {name!r}: {what} must be a dict from names to values, not "
            f"{type(given).__name__}."
        )
    if not all(isinstance(key, str) and key for key in given):
        raise TypeError(f"MCP server {name!r}: the names in {what} must be non-empty texts.")
    return {key: value if isinstance(value, str) else str(value) for key, value in given.items()}


def _remote(
    kind: type[_Remote],
    name: str,
    url: str,
    headers: Mapping[str, str] | None,
    approval: ApprovalSetting,
    timeout: float,
    allow_private_network: bool,
) -> _Remote:
    """A server reached over HTTP (``kind``: streamable HTTP or SSE), its URL checked."""
    common = _common(name, approval, timeout)
    check_url(name, url, allow_private_network)
    return kind(
        **common,
        url=url,
        headers=_names_to_values(name, "headers", headers),
        allow_private_network=allow_private_network,
    )


@dataclass(frozen=True, eq=False)
class McpServerConfig:
    """An MCP server the agent can use; made by ``mcp.stdio``, ``mcp.http`` or ``mcp.sse``.

    Equality is identity: one config is one session per kernel.
    """

    name: str
    approval: ApprovalSetting = "annotations"
    timeout: float = DEFAULT_TIMEOUT

    @property
    def transport(self) -> str:
        raise NotImplementedError

    def describe(self) -> str:
        """Where the server is, for messages."""
        raise NotImplementedError

    def __repr__(self) -> str:
        """The settings, without secrets: the values of ``env`` and a URL's password and tokens
        are ``***`` (a notebook keeps what it prints); ``headers`` are left out."""
        shown = {f.name: getattr(self, f.name) for f in fields(self) if f.repr}
        if isinstance(shown.get("url"), str):
            shown["url"] = shown_url(shown["url"])
        if isinstance(shown.get("env"), Mapping):
            shown["env"] = dict.fromkeys(shown["env"], "***")
        settings = ", ".join(f"{name}={value!r}" for name, value in shown.items())
        return f"{type(self).__name__}({settings})"


@dataclass(frozen=True, eq=False, repr=False)
class StdioServer(McpServerConfig):
    """A server started as a local process that talks MCP on its standard input and output."""

    command: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] | None = None
    cwd: str | None = None
    roots: tuple[str, ...] | None = None

    @property
    def transport(self) -> str:
        return "stdio"

    def describe(self) -> str:
        return " ".join([self.command, *self.args])


@dataclass(frozen=True, eq=False, repr=False)
class HttpServer(McpServerConfig):
    """A server reached over streamable HTTP."""

    url: str = ""
    headers: Mapping[str, str] | None = field(default=None, repr=False)
    allow_private_network: bool = False

    @property
    def transport(self) -> str:
        return "http"

    def describe(self) -> str:
        return shown_url(self.url)


@dataclass(frozen=True, eq=False, repr=False)
class SseServer(HttpServer):
    """A server reached over HTTP with server-sent events (the older MCP transport)."""

    @property
    def transport(self) -> str:
        return "sse"


def stdio(
    name: str,
    command: str,
    args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    approval: ApprovalSetting = "annotations",
    timeout: float = DEFAULT_TIMEOUT,
    roots: Sequence[str] | None = None,
) -> StdioServer:
    """An MCP server run as a local command (``command args...``), talking on stdin/stdout.

    ``env`` is added to a minimal environment (as the ``mcp`` SDK does); ``roots`` are the
    folders declared to the server (none unless given): a relative one is taken from the
    server's ``cwd``, as its own arguments are (else from the current folder, now).
    """
    common = _common(name, approval, timeout)
    if not isinstance(command, str) or not command.strip():
        raise ValueError(f"MCP server {name!r}: command must be a non-empty string.")
    if isinstance(args, str):
        raise TypeError(f"MCP server {name!r}: args must be a list of strings, not one string.")
    if isinstance(roots, (str, bytes, os.PathLike)):
        # (a text would be read letter by letter: "/tmp/project" would declare "/" itself)
        raise TypeError(
            f"MCP server {name!r}: roots must be a list of folders, not one; write "
            f"roots=[{os.fspath(roots)!r}]."
        )
    if roots is not None and not all(isinstance(r, (str, os.PathLike)) for r in roots):
        raise TypeError(f"MCP server {name!r}: each of roots must be a folder's path (a text).")
    if cwd is not None and not isinstance(cwd, (str, os.PathLike)):
        raise TypeError(
            f"MCP server {name!r}: cwd must be a folder's path (a text), not {type(cwd).__name__}."
        )
    return StdioServer(
        **common,
        command=command,
        args=tuple(str(a) for a in args),
        env=_names_to_values(name, "env", env),
        cwd=os.fspath(cwd) if cwd is not None else None,
        roots=_absolute(roots, cwd) if roots is not None else None,
    )


def _absolute(
    roots: Sequence[str | os.PathLike[str]], cwd: str | os.PathLike[str] | None
) -> tuple[str, ...]:
    """The roots as absolute paths, a relative one taken from the server's working folder
    (``roots=["."]`` with ``cwd=sandbox`` is the sandbox, not the notebook's folder)."""
    base = Path(cwd if cwd is not None else os.getcwd()).resolve()
    return tuple(str((base / os.fspath(root)).resolve()) for root in roots)


def http(
    name: str,
    url: str,
    headers: Mapping[str, str] | None = None,
    approval: ApprovalSetting = "annotations",
    timeout: float = DEFAULT_TIMEOUT,
    allow_private_network: bool = False,
) -> HttpServer:
    """An MCP server reached over streamable HTTP at ``url``.

    As in Anvia, private, loopback and link-local addresses are refused unless
    ``allow_private_network=True``.
    """
    return _remote(HttpServer, name, url, headers, approval, timeout, allow_private_network)


def sse(
    name: str,
    url: str,
    headers: Mapping[str, str] | None = None,
    approval: ApprovalSetting = "annotations",
    timeout: float = DEFAULT_TIMEOUT,
    allow_private_network: bool = False,
) -> SseServer:
    """An MCP server reached over HTTP with server-sent events (the older transport)."""
    return _remote(SseServer, name, url, headers, approval, timeout, allow_private_network)


def check_url(name: str, url: str, allow_private_network: bool) -> None:
    """Refuse a URL that is not HTTP(S), and (unless allowed) one whose host is a private,
    loopback, link-local or otherwise non-public address, or a name that resolves to one."""
    parts = urlsplit(url) if isinstance(url, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        if not isinstance(url, str):
            shown = repr(url)
        elif parts is not None and parts.netloc:
            shown = repr(shown_url(url))
        else:  # (no scheme://: what is before an @ may be a password)
            shown = quoted(re.sub(r"^[^/]*@", "***@", url))
        raise ValueError(f"MCP server {name!r}: {shown} is not an http:// or https:// URL.")
    if allow_private_network:
        return
    host = parts.hostname.rstrip(".").lower()
    refused = _refusal(host)
    if refused is None and not _is_ip(host):
        refused = _resolved_refusal(host)
    if refused is not None:
        raise McpPrivateNetworkError(
            f"MCP server {name!r}: {shown_url(url)} is refused because {refused}. MCP over HTTP "
            "only connects to public addresses unless you allow it: pass "
            "allow_private_network=True if you trust this server."
        )


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _refusal(host: str) -> str | None:
    if host == "localhost" or host.endswith(".localhost"):
        return f"{host} is this machine (loopback)"
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return None
    mapped = getattr(address, "ipv4_mapped", None)
    if mapped is not None:
        address = mapped
    if address.is_loopback:
        return f"{host} is a loopback address (this machine)"
    if address.is_link_local:
        return f"{host} is a link-local address (such as a cloud metadata endpoint)"
    if address.is_private or address.is_reserved or address.is_multicast or address.is_unspecified:
        return f"{host} is a private or reserved network address"
    if not address.is_global:
        return f"{host} is not a public address"
    return None


def _resolved_refusal(host: str) -> str | None:
    """A host name resolving to a refused address is refused too (names that do not resolve
    now fail later, when connecting, with the transport's own error)."""
    import socket

    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return None
    for info in infos:
        address = str(info[4][0]).split("%")[0]
        reason = _refusal(address)
        if reason is not None:
            return f"{host} resolves to {address}, and {reason}"
    return None

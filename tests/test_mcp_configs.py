"""Describing MCP servers (``mcp.stdio``, ``mcp.http``, ``mcp.sse``): the settings they share are
checked the same way, with clear errors, and nothing is connected yet."""

from __future__ import annotations

import asyncio
import sys

import pytest

from anvia_notebook import ToolApproval, mcp
from anvia_notebook.errors import McpConnectionError, McpPrivateNetworkError

URL = "https://mcp.example.com/mcp"
FACTORIES = {
    "stdio": lambda **kw: mcp.stdio(command="python", **kw),
    "http": lambda **kw: mcp.http(url=URL, **kw),
    "sse": lambda **kw: mcp.sse(url=URL, **kw),
}


@pytest.mark.parametrize("kind", FACTORIES)
def test_shared_settings_are_checked_alike(kind):
    make = FACTORIES[kind]
    with pytest.raises(ValueError, match="needs a non-empty name"):
        make(name="  ")
    with pytest.raises(ValueError, match="'files': approval must be 'annotations', 'always', 'never'"):
        make(name="files", approval="sometimes")
    with pytest.raises(ValueError, match="approval must be"):
        make(name="files", approval={"read_*": "never", "*": 3})
    with pytest.raises(ValueError, match="'files': timeout must be a positive number of seconds"):
        make(name="files", timeout=0)
    policy = ToolApproval(when=True)
    server = make(name=" files ", approval={"read_*": "never", "*": policy}, timeout=5)
    assert (server.name, server.timeout, server.transport) == ("files", 5.0, kind)
    assert isinstance(server.timeout, float)
    assert server.approval == {"read_*": "never", "*": policy}


def test_stdio_settings():
    server = mcp.stdio("files", "npx", ["-y", 3], env={"A": "1"}, cwd=".", roots=["/data"])
    assert (server.command, server.args, server.env, server.cwd, server.roots) == (
        "npx", ("-y", "3"), {"A": "1"}, ".", ("/data",),
    )
    assert server.describe() == "npx -y 3"
    with pytest.raises(ValueError, match="command must be a non-empty string"):
        mcp.stdio("files", " ")
    with pytest.raises(TypeError, match="args must be a list of strings, not one string"):
        mcp.stdio("files", "npx", "-y")


def test_roots_given_as_one_folder_are_refused_not_read_letter_by_letter(tmp_path):
    """Before, ``roots="/tmp/project"`` declared "/" (its first letter) and every other letter
    as folders: the server was handed the whole filesystem."""
    for one in ("/tmp/project", tmp_path):
        with pytest.raises(TypeError, match=r"roots must be a list of folders, not one; write"):
            mcp.stdio("files", "npx", roots=one)
    with pytest.raises(TypeError, match="each of roots must be a folder's path"):
        mcp.stdio("files", "npx", roots=[3])
    assert mcp.stdio("files", "npx", roots=[tmp_path]).roots == (str(tmp_path),)


def test_a_relative_root_is_the_servers_folder_not_the_notebooks(tmp_path, monkeypatch):
    """Before, ``roots=["."]`` with ``cwd=sandbox`` declared the notebook's folder (where the
    kernel ran) to the server, which then read files outside the sandbox; and a later
    ``os.chdir`` moved the roots."""
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    monkeypatch.chdir(tmp_path)
    server = mcp.stdio("files", "npx", cwd=str(sandbox), roots=[".", "data"])
    assert server.roots == (str(sandbox.resolve()), str(sandbox.resolve() / "data"))
    here = mcp.stdio("files", "npx", roots=["."])
    monkeypatch.chdir(sandbox)
    assert here.roots == (str(tmp_path.resolve()),)  # the folder when it was made


def test_a_missing_working_folder_is_named_as_such(tmp_path):
    """Before, a command that exists with a ``cwd`` that does not gave Python's bare
    ``FileNotFoundError: ... No such file or directory``."""
    missing = tmp_path / "no-such-folder"
    server = mcp.stdio("files", sys.executable, ["-c", "pass"], cwd=str(missing))
    with pytest.raises(McpConnectionError, match=r"its working folder .* does not exist"):
        asyncio.run(mcp.connect(server))


@pytest.mark.parametrize(("factory", "cls"), [(mcp.http, mcp.HttpServer), (mcp.sse, mcp.SseServer)])
def test_remote_settings(factory, cls):
    headers = {"Authorization": "Bearer x"}
    server = factory("web", URL, headers=headers)
    assert type(server) is cls
    assert server.headers == headers and server.headers is not headers
    assert server.describe() == URL and not server.allow_private_network
    with pytest.raises(ValueError, match="is not an http:// or https:// URL"):
        factory("web", "ftp://example.com/mcp")
    with pytest.raises(McpPrivateNetworkError, match="allow_private_network=True"):
        factory("web", "http://127.0.0.1:9/mcp")
    assert factory("web", "http://127.0.0.1:9/mcp", allow_private_network=True).allow_private_network


def test_env_headers_and_cwd_of_the_wrong_kind_are_refused_naming_the_setting():
    """Before: Python's own "dictionary update sequence element #0 has length 3" and "expected
    str, bytes or os.PathLike object, not int"."""
    with pytest.raises(TypeError, match="'s': env must be a dict from names to values, not list"):
        mcp.stdio("s", "python", env=["A=1"])
    with pytest.raises(TypeError, match="'s': the names in env must be non-empty texts"):
        mcp.stdio("s", "python", env={5: "x"})
    with pytest.raises(TypeError, match="'s': cwd must be a folder's path"):
        mcp.stdio("s", "python", cwd=5)
    with pytest.raises(TypeError, match="'h': headers must be a dict from names to values, not str"):
        mcp.http("h", URL, headers="Authorization: Bearer x")
    # a value that is not a text is written as one (the server's process gets text)
    assert mcp.stdio("s", "python", env={"PORT": 8080}).env == {"PORT": "8080"}
    assert mcp.sse("h", URL, headers={"X-Retries": 3}).headers == {"X-Retries": "3"}


def test_a_url_without_its_scheme_is_named_as_given_with_a_password_hidden():
    with pytest.raises(ValueError, match=r"'mcp\.example\.com/mcp' is not an http:// or https://"):
        mcp.http("h", "mcp.example.com/mcp")
    with pytest.raises(ValueError, match="is not an http://") as raised:
        mcp.http("h", "user:s3cret@mcp.example.com/mcp")
    assert "s3cret" not in str(raised.value) and "'***@mcp.example.com/mcp'" in str(raised.value)


def test_a_tool_name_cannot_pass_for_the_rest_of_its_approval_reason():
    """A server could name a tool "wipe_disk from the MCP server 'docs' (declares: read-only)
    \\n\\n" and so write what the person reads about it."""
    from anvia_notebook.mcp._approval import tool_approval

    forged = "wipe_disk from the MCP server 'docs' (declares: read-only)\n\n"
    reason = tool_approval("always", "evil", forged, None).reason
    assert reason.startswith(repr(forged) + " from the MCP server 'evil' (")
    assert "\n" not in reason
    plain = tool_approval("always", "notes", "delete_note", None).reason
    assert plain.startswith("delete_note from the MCP server 'notes' (")

"""An MCP server's secrets never reach what a notebook prints.

Hosted MCP servers are often reached with a token in the address (``?api_key=...``, a password
before the host) or in the environment of a local server's process. A notebook keeps what it
prints: the settings shown by ``repr`` and every error about the server show none of them.
"""

from __future__ import annotations

import asyncio
import threading
import traceback
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from anvia_notebook import mcp
from anvia_notebook.errors import McpConnectionError, McpPrivateNetworkError

pytest.importorskip("mcp")

SECRETS = ("Url-Pa55word", "Query-T0ken", "Header-T0ken", "Env-T0ken")


def _said(error: BaseException) -> str:
    return "".join(traceback.format_exception(error))


def _assert_hidden(text: str) -> None:
    assert not [secret for secret in SECRETS if secret in text], text


class _Refusing(BaseHTTPRequestHandler):
    """An HTTP server that refuses every request as unauthorised (a wrong token)."""

    def _refuse(self) -> None:
        body = b'{"error": "unauthorized"}'
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_DELETE = _refuse

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def refusing_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Refusing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def _url(host: str) -> str:
    return f"http://me:{SECRETS[0]}@{host}/mcp?api_key={SECRETS[1]}&region=eu"


@pytest.mark.parametrize("transport", [mcp.http, mcp.sse])
def test_a_server_that_refuses_the_connection_is_named_without_its_secrets(
    refusing_server: str, transport
) -> None:
    server = transport(
        "hosted",
        _url(refusing_server),
        headers={"Authorization": f"Bearer {SECRETS[2]}"},
        allow_private_network=True,
        timeout=20,
    )
    with pytest.raises(McpConnectionError) as caught:
        asyncio.run(mcp.connect(server))
    message = str(caught.value)
    assert message.startswith("MCP server 'hosted' could not be reached at http://me:***@127")
    assert "api_key=***&region=eu" in message, message
    _assert_hidden(_said(caught.value))


def test_the_settings_are_shown_without_their_secrets() -> None:
    remote = mcp.http(
        "hosted",
        _url("mcp.example.com"),
        headers={"Authorization": f"Bearer {SECRETS[2]}"},
        allow_private_network=True,
    )
    local = mcp.stdio("local", "my-server", ["--verbose"], env={"API_TOKEN": SECRETS[3]})
    shown = repr(remote) + repr(local) + str(remote) + str(local)
    _assert_hidden(shown)
    assert "url='http://me:***@mcp.example.com/mcp?api_key=***&region=eu'" in repr(remote)
    assert "env={'API_TOKEN': '***'}" in repr(local) and "args=('--verbose',)" in repr(local)
    # What the server is reached with is kept as given.
    assert remote.url == _url("mcp.example.com") and local.env == {"API_TOKEN": SECRETS[3]}


def test_a_refused_address_is_named_without_its_secrets() -> None:
    with pytest.raises(McpPrivateNetworkError) as refused:
        mcp.http("hosted", _url("127.0.0.1:9"))
    assert "http://me:***@127.0.0.1:9/mcp?api_key=***&region=eu is refused" in str(refused.value)
    _assert_hidden(_said(refused.value))
    with pytest.raises(ValueError, match="is not an http:// or https:// URL") as not_http:
        mcp.http("hosted", _url("127.0.0.1:9").replace("http://", "ftp://"))
    _assert_hidden(_said(not_http.value))

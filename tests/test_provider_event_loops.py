"""A provider model used on several event loops: a script's ``send_sync()`` runs each prompt on
an event loop of its own, and the SDK client's kept-alive connection belongs to the first one.
The second prompt of a script failed ("Event loop is closed": OpenAI raised it as it is, after
sending the request; Anthropic's was a connection error). A server on 127.0.0.1 that keeps its
connections alive, replaying the recorded streams; never the network."""

from __future__ import annotations

import asyncio
import gc
import subprocess
import sys
import threading
import warnings
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from anvia_notebook import AgentBuilder
from anvia_notebook.errors import ModelError
from anvia_notebook.models.anthropic import AnthropicModel
from anvia_notebook.models.openai import OpenAIModel

from provider_replay import FIXTURES, ask, events_of


class _KeepAlive(BaseHTTPRequestHandler):
    """Answers each request with the recorded stream of its provider, keeping the connection."""

    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        name = "anthropic_text.sse" if self.path.endswith("/messages") else "openai_text.sse"
        body = (FIXTURES / name).read_bytes()
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        """A connection the client let go of is no error here. (Printed, its traceback would
        be parsed with ``ast`` in the server's threads at once, which Python 3.11's compiler
        is not safe for: "AST constructor recursion depth mismatch".)"""


@pytest.fixture
def server() -> Iterator[str]:
    httpd = _Server(("127.0.0.1", 0), _KeepAlive)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)


def _three_prompts(model: object) -> None:
    agent = AgentBuilder("a", model).build()
    for _ in range(3):  # (no retry hides a failed attempt)
        response = agent.prompt("Hi").with_completion_retries(max_attempts=1).send_sync()
        assert response.output


def _model(provider: str, server: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    if provider == "openai":
        return OpenAIModel("gpt-4o", api_key="sk-test", base_url=f"{server}/v1")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server)
    return AnthropicModel("claude-sonnet-4-6", api_key="sk-ant-test")


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_each_loop_s_client_is_closed_on_it_as_it_ends(server, provider, monkeypatch):
    """The client the model built for an event loop kept its connection open when the loop
    ended (asyncio.run() returned): let go when the next loop came, or with the model, it was
    "ResourceWarning: unclosed transport", and its socket stayed open until then."""
    model = _model(provider, server, monkeypatch)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            assert asyncio.run(events_of(model, ask()))
        gc.collect()
    assert [str(w.message) for w in caught if w.category is ResourceWarning] == []
    assert model.client.is_closed()  # (the first loop's, closed as that loop ended)

    async def still_open() -> bool:
        await events_of(model, ask())
        client = await model._loop_clients.on_this_loop(model.client)
        return not client.is_closed()

    assert asyncio.run(still_open())  # (not while its loop runs)


def test_openai_model_answers_each_send_sync_of_a_script(server):
    _three_prompts(OpenAIModel("gpt-4o", api_key="sk-test", base_url=f"{server}/v1"))


def test_anthropic_model_answers_each_send_sync_of_a_script(server, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server)
    _three_prompts(AnthropicModel("claude-sonnet-4-6", api_key="sk-ant-test"))


def test_a_client_is_kept_per_loop_and_let_go_with_its_loop(server):
    model = OpenAIModel("gpt-4o", api_key="sk-test", base_url=f"{server}/v1")
    agent = AgentBuilder("a", model).build()

    async def two_prompts() -> None:
        for _ in range(2):
            assert (await agent.prompt("Hi").send()).output

    asyncio.run(two_prompts())
    asyncio.run(two_prompts())
    # One loop's client (the model's own first), then another's; the closed loop's let go.
    clients = model._loop_clients._clients
    assert len(clients) == 1
    assert next(iter(clients.values()))[0] is not model.client


#: Prompts sent from two threads at once, then one after another, by a script of its own (what
#: the log says is its prompts' alone).
THREADS_SCRIPT = """
import sys
from concurrent.futures import ThreadPoolExecutor
from anvia_notebook import AgentBuilder
from anvia_notebook.models.openai import OpenAIModel

agent = AgentBuilder("a", OpenAIModel("gpt-4o", api_key="sk-test", base_url=sys.argv[1])).build()

def prompt(number):
    request = agent.prompt(f"Hi {number}").with_completion_retries(max_attempts=1)
    return request.send_sync().output

outputs = [prompt(-1)]  # (the first run's imports: not in two threads at once)
with ThreadPoolExecutor(2) as pool:
    outputs += pool.map(prompt, range(8))
outputs += [prompt(number) for number in range(4)]
print(all(outputs))
"""


def test_prompts_sent_from_several_threads_at_once_each_get_their_answer(server):
    """Each thread's send_sync() runs its own event loop, at the same time as the others': half
    the prompts failed ("Event loop is closed"); once each loop had its client, the clients of
    closed loops, let go while another loop ran, were closed on that loop, which failed in the
    log ("Task exception was never retrieved")."""
    result = subprocess.run(
        [sys.executable, "-c", THREADS_SCRIPT, f"{server}/v1"],
        cwd=Path(__file__).parent.parent,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (result.returncode, result.stdout.strip()) == (0, "True"), result.stderr
    assert "Task exception was never retrieved" not in result.stderr


#: A notebook's first prompt sent with send_sync() (on a loop of its own, closed after), then
#: the model's cell run again: the old model is let go while the kernel's loop runs.
MODEL_LET_GO_SCRIPT = """
import asyncio, gc, os, sys
from anvia_notebook import AgentBuilder
from anvia_notebook.models.anthropic import AnthropicModel
from anvia_notebook.models.openai import OpenAIModel

if sys.argv[2] == "openai":
    model = OpenAIModel("gpt-4o", api_key="sk-test", base_url=sys.argv[1] + "/v1")
else:
    os.environ["ANTHROPIC_BASE_URL"] = sys.argv[1]
    model = AnthropicModel("claude-sonnet-4-6", api_key="sk-ant-test")
agent = AgentBuilder("a", model).build()
print(bool(agent.prompt("Hi").send_sync().output))

async def cell_run_again():
    global model, agent
    model = agent = None
    gc.collect()
    await asyncio.sleep(0.2)

asyncio.run(cell_run_again())
"""


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_model_let_go_after_its_loop_closed_closes_nothing_on_another(server, provider):
    """The model's own first client had the SDK's HTTP client, which closes itself when
    collected, on whatever loop runs then: its connections of the closed loop failed there
    ("Task exception was never retrieved: Event loop is closed" in the kernel's log)."""
    result = subprocess.run(
        [sys.executable, "-c", MODEL_LET_GO_SCRIPT, server, provider],
        cwd=Path(__file__).parent.parent,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (result.returncode, result.stdout.strip()) == (0, "True"), result.stderr
    assert "Task exception was never retrieved" not in result.stderr, result.stderr


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_given_client_s_closed_loop_connection_is_a_connection_error_tried_again(
    server, provider
):
    """A client given to the model is used as it is: its kept-alive connection of a closed loop
    failed the next script prompt (OpenAI's as a bare RuntimeError, never tried again)."""
    if provider == "openai":
        import openai

        given: object = openai.AsyncOpenAI(api_key="k", base_url=f"{server}/v1", max_retries=0)
        model: object = OpenAIModel("gpt-4o", client=given)
    else:
        import anthropic

        given = anthropic.AsyncAnthropic(api_key="k", base_url=server, max_retries=0)
        model = AnthropicModel("claude-sonnet-4-6", client=given)
    agent = AgentBuilder("a", model).build()
    assert agent.prompt("Hi").send_sync().output
    with pytest.raises(ModelError, match=r"(?i)event loop (that has|is) closed") as failed:
        agent.prompt("Hi").with_completion_retries(max_attempts=1).send_sync()
    assert failed.value.retryable
    assert agent.prompt("Hi").send_sync().output  # (tried again, on a new connection)
    assert agent.prompt("Hi").send_sync().output


def test_a_client_given_to_the_model_is_used_as_it_is():
    import openai

    given = openai.AsyncOpenAI(api_key="sk-test", max_retries=0)
    model = OpenAIModel("gpt-4o", client=given)

    async def used() -> object:
        return await model._loop_clients.on_this_loop(model.client)

    assert asyncio.run(used()) is given
    assert asyncio.run(used()) is given
    assert not given.is_closed()  # (the user's: never closed by the model)

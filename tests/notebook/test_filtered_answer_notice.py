"""An answer the provider's content filter stopped (Azure OpenAI's ``finish_reason:
"content_filter"`` after some text) is said to be so under the run's end: the run ended in
success with the cut text, and nothing told the user, as the token limit's cut is told."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx
import openai
import pytest
from openai import _base_client as openai_base_client

from anvia_notebook import AgentBuilder
from anvia_notebook.models.openai import OpenAIModel
from anvia_notebook.notebook._session import TranscriptSession

from provider_replay import FIXTURES, Recorded, Server

pytestmark = pytest.mark.timeout(30)
#: The HTTP library the installed SDK is built on (httpx2 for the 3.x SDK, httpx before).
http: Any = getattr(openai_base_client, "httpx2", None) or httpx
recorded = Recorded(http)
SAID = "stopped by the provider's content filter"


@pytest.fixture
def serve(monkeypatch: pytest.MonkeyPatch) -> Callable[..., Server]:
    return recorded.serving(monkeypatch, openai, "AsyncOpenAI")


@pytest.mark.parametrize(("reason", "filtered"), [("content_filter", True), ("stop", False)])
async def test_an_answer_the_content_filter_stopped_is_said_to_be_so(
    serve: Callable[..., Server], reason: str, filtered: bool
) -> None:
    text = (FIXTURES / "openai_text.sse").read_text()
    text = text.replace('"finish_reason":"stop"', f'"finish_reason":"{reason}"')
    serve(http.Response(200, headers={"content-type": "text/event-stream"}, content=text.encode()))
    model = OpenAIModel("gpt-4o", api_key="sk-test")
    session = TranscriptSession(agent_id="a", loop=asyncio.get_running_loop())
    session._send = lambda message: None  # type: ignore[method-assign]
    run = AgentBuilder("a", model).build().prompt("go").store(None).create_run()
    session.attach(run)
    run.start()

    response = await run.wait()

    assert response.output  # (the text that came stands, as Anvia keeps it)
    assert response.trace is not None
    assert response.trace.turns[-1].response.finish_reason == reason
    for _ in range(5):
        await asyncio.sleep(0)
    notices = [e["text"] for e in session.state()["entries"] if e["kind"] == "notice"]
    assert any(SAID in notice for notice in notices) is filtered

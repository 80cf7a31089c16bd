"""What the transcript says under a run's end: an answer the model's token limit cut, or one
the provider left paused."""

from __future__ import annotations

import asyncio

import pytest

from anvia_notebook import AgentBuilder
from anvia_notebook.models import Finish, StreamingQueueModel, TextDelta
from anvia_notebook.notebook._session import TranscriptSession

pytestmark = pytest.mark.timeout(30)


async def notices_after(reason: str, text: str) -> list[str]:
    """The notices under the end of a run whose one answer (``text``) ended for ``reason``;
    the run ends in success with what came."""
    model = StreamingQueueModel([[TextDelta(delta=text), Finish(reason=reason)]])
    session = TranscriptSession(agent_id="a", loop=asyncio.get_running_loop())
    session._send = lambda message: None  # type: ignore[method-assign]
    run = AgentBuilder("a", model).build().prompt("go").store(None).create_run()
    session.attach(run)
    run.start()
    assert (await run.wait()).output == text
    for _ in range(5):
        await asyncio.sleep(0)
    return [e["text"] for e in session.state()["entries"] if e["kind"] == "notice"]


@pytest.mark.parametrize(
    ("reason", "cut"), [("length", True), ("max_tokens", True), ("stop", False)]
)
async def test_an_answer_the_token_limit_cut_is_said_to_be_cut(reason: str, cut: bool):
    """It read as a whole answer."""
    notices = await notices_after(reason, "The answer is")
    said = "The answer was cut short at the model's token limit"
    assert any(said in notice for notice in notices) is cut


@pytest.mark.parametrize(("reason", "paused"), [("pause_turn", True), ("stop", False)])
async def test_an_answer_the_provider_left_paused_is_said_to_be_so(reason: str, paused: bool):
    """Anthropic's ``pause_turn`` still there after the model's continuations."""
    notices = await notices_after(reason, "Searching")
    assert any("The provider paused the answer" in notice for notice in notices) is paused

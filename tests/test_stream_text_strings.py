"""A model may stream its text as plain strings (as pydantic-ai's FunctionModel does): each is a
piece of text, exactly as a ``TextDelta`` would be, everywhere a run's text goes."""

from __future__ import annotations

import asyncio

import pytest

from anvia_notebook import AgentBuilder, PromptCancelledError
from anvia_notebook.models import FunctionModel, ModelError, TextDelta, ToolCall

from helpers import make_add_tool


async def test_strings_and_text_deltas_stream_the_same_text():
    async def mixed(request):
        if any(m.role == "tool" for m in request.messages):
            yield "The sum "
            yield TextDelta(delta="is ")
            yield "3."
            return
        yield "Adding. "
        yield ToolCall(id="c1", name="add", arguments={"x": 1, "y": 2})

    add = make_add_tool()
    request = AgentBuilder("a", FunctionModel(mixed)).tool(add).build().prompt("1 + 2?")
    events = [e async for e in request.stream()]
    deltas = [(e.turn, e.delta) for e in events if e.type == "text_delta"]
    assert deltas == [(1, "Adding. "), (2, "The sum "), (2, "is "), (2, "3.")]
    final = events[-1]
    assert final.type == "final" and final.output == "The sum is 3."
    assert add.calls == [(1, 2)]
    first, second = request.trace.turns
    assert first.response.text == "Adding. " and first.first_token_ms is not None
    assert second.response.text == "The sum is 3."
    assert [m.content for m in final.messages if m.role == "assistant"] == [
        "Adding. ",
        "The sum is 3.",
    ]


async def test_a_model_that_fails_after_streaming_a_string_is_not_called_again():
    calls = 0

    async def flaky(request):
        nonlocal calls
        calls += 1
        yield "partial"
        raise ModelError("connection reset", status_code=503)

    request = (
        AgentBuilder("a", FunctionModel(flaky))
        .build()
        .prompt("go")
        .with_completion_retries(max_attempts=3, initial_delay=0, max_delay=0)
    )
    with pytest.raises(ModelError):
        await request.send()
    assert calls == 1  # text was shown already: a retry would show it twice


async def test_a_run_stopped_while_strings_stream_keeps_the_text_so_far():
    streaming = asyncio.Event()

    async def endless(request):
        yield "thinking"
        while True:
            streaming.set()
            yield "."
            await asyncio.sleep(0)  # a real model waits on the network between pieces

    run = AgentBuilder("a", FunctionModel(endless)).build().prompt("go").start()
    await asyncio.wait_for(streaming.wait(), 5)
    run.cancel("enough")
    with pytest.raises(PromptCancelledError):
        await run.wait()
    [turn] = run.trace.turns
    assert turn.response.text.startswith("thinking.")
    assert turn.error == "Stopped: enough"

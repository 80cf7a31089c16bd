"""A continuation of a paused Anthropic answer (``pause_turn``) that fails before it streams
anything (429, 529, 500, a lost connection, an ``overloaded_error`` right after
``message_start``) is tried again as the run tries a model call's first request: the same
policy, the same number of attempts. What was streamed before it is kept, not streamed again,
and a failed attempt's usage is not counted. An error not worth retrying ends the run, as does
one after the continuation began to stream (as for a first request)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import anthropic
import pytest
from test_provider_anthropic_pause_turn import (  # (the same streams' pieces)
    RESULT,
    SEARCH,
    block,
    end,
    http,
    recorded,
    stream,
    text,
)

from anvia_notebook import AgentBuilder, PromptCancelledError
from anvia_notebook.messages import Usage
from anvia_notebook.models.anthropic import AnthropicModel
from anvia_notebook.models.base import ModelError
from anvia_notebook.retry import RetryContext

from provider_replay import Server, anthropic_start, ask, events_of

OVERLOADED = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
#: The whole answer: the paused part, then its continuation.
ANSWER = "Let me search. Sunny and 21 degrees."


@pytest.fixture
def serve(monkeypatch: pytest.MonkeyPatch) -> Callable[..., Server]:
    return recorded.serving(monkeypatch, anthropic, "AsyncAnthropic")


def paused_search() -> Any:
    """A turn that searched, began its answer, and was paused (100 tokens in, 40 out)."""
    return stream(
        anthropic_start(100),
        *block(0, {"type": "text", "text": ""}, text("Let me search. ")),
        *block(
            1,
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
            {"type": "input_json_delta", "partial_json": '{"query": "paris weather"}'},
        ),
        *block(
            2,
            {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [RESULT]},
        ),
        *block(3, {"type": "text", "text": ""}, text("Sunny ")),
        *end("pause_turn", 40),
    )


def continued() -> Any:
    """The rest of the answer (300 tokens in, 10 out)."""
    return stream(
        anthropic_start(300),
        *block(0, {"type": "text", "text": ""}, text("and 21 degrees.")),
        *end("end_turn", 10),
    )


def overloaded_at_start() -> Any:
    """A continuation the API answered 200, then found itself overloaded before any answer."""
    return stream(anthropic_start(300), {"type": "ping"}, OVERLOADED)


def model() -> AnthropicModel:
    return AnthropicModel("claude-sonnet-4-6", api_key="sk-ant-test", tools=[SEARCH])


def request_of(**retries: Any) -> Any:
    agent = AgentBuilder("searcher", model()).build()
    # (no wait between the attempts: the test stays quick and deterministic)
    options = {"initial_delay": 0, "max_delay": 0, **retries}
    return agent.prompt("Weather in Paris?").store(None).with_completion_retries(**options)


async def run(request: Any) -> tuple[list[str], Any]:
    """The text deltas a run streamed, and its final event."""
    deltas: list[str] = []
    final: Any = None
    async for event in request.stream():
        if event.type == "text_delta":
            deltas.append(event.delta)
        elif event.type == "final":
            final = event
    return deltas, final


FAILURES = {
    "429": lambda: recorded.error_response(429, "anthropic_error_429.json"),
    "529": lambda: recorded.error_response(529, "anthropic_error_529.json"),
    "500": lambda: recorded.error_response(500, "anthropic_error_500.json"),
    "connection": lambda: http.ConnectError("connection refused"),
    "overloaded event": overloaded_at_start,
}


@pytest.mark.parametrize("failure", FAILURES.values(), ids=FAILURES.keys())
async def test_a_continuation_that_fails_before_streaming_is_tried_again(
    serve: Callable[..., Server], failure: Callable[[], Any]
) -> None:
    server = serve(paused_search(), failure(), continued())

    deltas, final = await run(request_of())

    assert len(server.requests) == 3
    assert final.output == ANSWER
    # (the paused part streamed once, not again for the attempt that failed)
    assert deltas == ["Let me search. ", "Sunny ", "and 21 degrees."]
    # (the failed attempt's usage, reported by its message_start, is not counted)
    assert final.usage == Usage(input_tokens=400, output_tokens=50)
    assert [m.role for m in final.messages] == ["user", "assistant"]
    # the attempt again sends what the failed one sent: the answer so far, once
    assert server.body(2) == server.body(1)
    assert [b["type"] for b in server.body(2)["messages"][-1]["content"]] == [
        "text",
        "server_tool_use",
        "web_search_tool_result",
        "text",
    ]


async def test_a_continuation_has_as_many_attempts_as_the_first_request(
    serve: Callable[..., Server],
) -> None:
    asked: list[RetryContext] = []

    def should_retry(context: RetryContext) -> bool:
        asked.append(context)
        return True

    server = serve(paused_search(), overloaded_at_start(), overloaded_at_start(), continued())

    deltas, final = await run(request_of(max_attempts=3, should_retry=should_retry))

    assert final.output == ANSWER and "".join(deltas) == ANSWER
    assert len(server.requests) == 4
    # (asked as for a first request: its attempt, the attempts in all, the run's turn)
    assert [(c.attempt, c.max_attempts, c.turn) for c in asked] == [(1, 3, 1), (2, 3, 1)]


async def test_a_retried_continuation_is_an_attempt_of_the_call_in_the_trace(
    serve: Callable[..., Server], spans: Any
) -> None:
    """Inspect and the spans said the call was made once, though a continuation failed and
    was sent again: the trace counts it among the call's attempts, and the call's span has a
    ``retry`` event for it (the span itself succeeded)."""
    serve(paused_search(), overloaded_at_start(), overloaded_at_start(), continued())
    request = request_of(max_attempts=3)

    _, final = await run(request)

    assert final.output == ANSWER
    [turn] = request.trace.turns
    assert turn.attempts == 3 and turn.error is None
    [chat] = [span for span in spans.get_finished_spans() if span.name.startswith("chat ")]
    assert chat.attributes["anvia.attempt"] == 3
    retries = [dict(event.attributes) for event in chat.events if event.name == "retry"]
    assert retries == [
        {"error.type": "ModelError", "anvia.attempt": 2},
        {"error.type": "ModelError", "anvia.attempt": 3},
    ]


async def test_a_stop_while_a_continuation_waits_to_be_sent_again_counts_no_attempt(
    serve: Callable[..., Server], spans: Any
) -> None:
    """Stop during the wait before a failed continuation is sent again: nothing more was sent,
    so the call was made once (the attempt was counted before the wait)."""
    serve(paused_search(), overloaded_at_start(), continued())
    waiting = asyncio.Event()

    def should_retry(context: RetryContext) -> bool:
        waiting.set()  # (the wait begins as this returns)
        return True

    request = request_of(initial_delay=60, max_delay=60, should_retry=should_retry)
    run = request.start()
    await asyncio.wait_for(waiting.wait(), 10)
    run.cancel("enough")
    with pytest.raises(PromptCancelledError):
        await run.wait()
    [turn] = request.trace.turns
    assert turn.attempts == 1 and turn.error == "Stopped: enough"
    [chat] = [span for span in spans.get_finished_spans() if span.name.startswith("chat ")]
    assert "anvia.attempt" not in chat.attributes
    # (why it waited is said: the failure, as a retry event)
    assert [event.name for event in chat.events] == ["retry", "cancelled"]


async def test_a_continuation_failing_at_every_attempt_ends_the_run(
    serve: Callable[..., Server],
) -> None:
    server = serve(paused_search(), *(overloaded_at_start() for _ in range(3)), continued())

    with pytest.raises(ModelError, match="Overloaded") as caught:
        await run(request_of(max_attempts=3))
    assert len(server.requests) == 4  # (the paused request, then the continuation 3 times)
    assert caught.value.status_code == 529


async def test_a_continuation_is_not_tried_again_with_retries_off(
    serve: Callable[..., Server],
) -> None:
    server = serve(paused_search(), overloaded_at_start(), continued())

    with pytest.raises(ModelError, match="Overloaded"):
        await run(request_of(max_attempts=1))

    assert len(server.requests) == 2


async def test_an_error_not_worth_retrying_ends_the_run(serve: Callable[..., Server]) -> None:
    server = serve(
        paused_search(), recorded.error_response(400, "anthropic_error_400.json"), continued()
    )
    request = request_of()

    with pytest.raises(ModelError) as caught:
        await run(request)

    assert len(server.requests) == 2
    assert caught.value.status_code == 400 and caught.value.retryable is False
    assert "tool_result" in str(caught.value)  # (the API's own words)
    [turn] = request.trace.turns
    assert turn.error and "400" in turn.error


async def test_a_continuation_that_began_to_stream_is_not_tried_again(
    serve: Callable[..., Server],
) -> None:
    """As a first request that has streamed is not: its text has been shown."""
    began = stream(
        anthropic_start(300),
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": text("and 21")},
        OVERLOADED,
    )
    server = serve(paused_search(), began, continued())

    with pytest.raises(ModelError, match="Overloaded"):
        await run(request_of())

    assert len(server.requests) == 2


async def test_a_model_called_outside_a_run_tries_a_continuation_once(
    serve: Callable[..., Server],
) -> None:
    """As its first request: only a run retries."""
    server = serve(paused_search(), overloaded_at_start(), continued())

    with pytest.raises(ModelError, match="Overloaded"):
        await events_of(model(), ask("Weather in Paris?"))

    assert len(server.requests) == 2


async def test_a_first_request_is_still_tried_by_the_run_alone(
    serve: Callable[..., Server],
) -> None:
    """Its attempts are the run's, not the run's times the model's."""
    server = serve(overloaded_at_start(), overloaded_at_start(), paused_search(), continued())
    request = request_of(max_attempts=2)

    with pytest.raises(ModelError, match="Overloaded"):
        await run(request)

    assert len(server.requests) == 2
    assert request.trace.turns[0].attempts == 2


async def test_a_task_started_during_a_model_call_does_not_retry_under_it_once_it_ended():
    """A task a subscriber starts while the model streams keeps the call's context: once the
    call (and the run) had ended, a model called in it still retried a continuation under that
    run's policy and turn (a direct call is tried once)."""
    from anvia_notebook.models import QueueModel
    from anvia_notebook.retry import retry_within_call

    answers: list[bool] = []
    tasks: list[asyncio.Task] = []
    agent = AgentBuilder("a", QueueModel(["hello there"])).build()
    request = agent.prompt("go").store(None)
    run = request.with_completion_retries(max_attempts=7, initial_delay=0).create_run()

    async def later() -> None:
        await run.wait()
        answers.append(await retry_within_call(ModelError("Overloaded", status_code=529), 1))

    def on_event(event):
        if event.type == "text_delta" and not tasks:
            tasks.append(asyncio.get_running_loop().create_task(later()))

    run.subscribe(on_event)
    run.start()
    await run.wait()
    await tasks[0]
    assert answers == [False]

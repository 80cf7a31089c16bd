"""Provider servers (and proxies in front of them) that misbehave: a stream cut short or empty, an
event that is not JSON, an error body that is plain text or a web page, a rate limit that says
how long to wait. Through the SDKs' real HTTP path (no network) and whole runs."""

from __future__ import annotations

import json
import re
import time
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime
from typing import Any

import anthropic
import httpx
import openai
import pytest
from anthropic import _base_client as anthropic_base_client
from openai import _base_client as openai_base_client
from pydantic import BaseModel

from anvia_notebook import AgentBuilder, create_tool
from anvia_notebook.errors import ModelError
from anvia_notebook.models.anthropic import AnthropicModel
from anvia_notebook.models.base import CompletionModel
from anvia_notebook.models.openai import OpenAIModel
from anvia_notebook.retry import CompletionRetries, RetryContext

from provider_replay import FIXTURES, Recorded, Server, ask

#: Each SDK's own HTTP library (httpx2 for the current SDKs, httpx before).
OPENAI = Recorded(getattr(openai_base_client, "httpx2", None) or httpx)
ANTHROPIC = Recorded(getattr(anthropic_base_client, "httpx2", None) or httpx)
PROVIDERS = ["openai", "anthropic"]
#: How each provider's errors name it.
NAMES = {"openai": "OpenAI", "anthropic": "Anthropic"}


def model_on(provider: str, *responses: Any) -> tuple[CompletionModel, Server]:
    """A provider model whose requests ``responses`` answer, in turn."""
    server = Server(*responses)
    if provider == "openai":
        return OpenAIModel("gpt-4o-mini", client=_openai_client(server)), server
    client = anthropic.AsyncAnthropic(
        api_key="sk-ant-test", max_retries=0, http_client=ANTHROPIC.client(server)
    )
    return AnthropicModel("claude-sonnet-4-6", client=client), server


async def stream_error(model: CompletionModel) -> ModelError:
    """The ``ModelError`` that streaming one request from ``model`` raises."""
    with pytest.raises(ModelError) as caught:
        async for _ in model.stream(ask()):
            pass
    return caught.value


def _openai_client(server: Server) -> Any:
    return openai.AsyncOpenAI(api_key="sk-test", max_retries=0, http_client=OPENAI.client(server))


def recorded(provider: str) -> Recorded:
    return OPENAI if provider == "openai" else ANTHROPIC


def stream_of(provider: str, body: str) -> Any:
    return recorded(provider).http.Response(
        200, headers={"content-type": "text/event-stream"}, content=body.encode()
    )


def events_in(fixture: str) -> list[str]:
    """A recorded stream's events (each its ``event:``/``data:`` lines)."""
    return [part for part in (FIXTURES / fixture).read_text().split("\n\n") if part.strip()]


def joined(events: list[str]) -> str:
    return "".join(f"{event}\n\n" for event in events)


def cut_before(events: list[str], marker: str) -> list[str]:
    """The events before the last one holding ``marker``."""
    last = max(i for i, event in enumerate(events) if marker in event)
    return events[:last]


TEXT_STREAMS = {"openai": "openai_text.sse", "anthropic": "anthropic_text.sse"}


class City(BaseModel):
    city: str


def agent_of(model: CompletionModel, ran: list[str]) -> Any:
    """An agent whose two tools note each call they run in ``ran``."""

    def noted(name: str) -> Any:
        def execute(args: City, ctx: Any) -> str:
            ran.append(f"{name}({args.city})")
            return "done"

        return execute

    tools = [
        create_tool(name=name, description=name, input=City, execute=noted(name))
        for name in ("get_weather", "get_time", "picture")
    ]
    return AgentBuilder("cut", model).tools(tools).build()


async def run_events(model: CompletionModel, ran: list[str], attempts: int = 1) -> list[Any]:
    """The events a run streams (a failed run's stream raises its error after them)."""
    request = (
        agent_of(model, ran)
        .prompt("Weather?")
        .with_completion_retries(max_attempts=attempts, initial_delay=0, max_delay=0)
    )
    seen: list[Any] = []
    try:
        async for event in request.stream():
            seen.append(event)
    except ModelError as error:
        assert seen[-1].type == "error" and seen[-1].error == str(error)
    return seen


# -- a stream cut short -----------------------------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_stream_that_stops_before_its_end_is_an_error_not_a_shorter_answer(
    provider: str,
) -> None:
    marker = '"finish_reason":"stop"' if provider == "openai" else "message_delta"
    events = cut_before(events_in(TEXT_STREAMS[provider]), marker)
    model, server = model_on(provider, stream_of(provider, joined(events)))
    ran: list[str] = []

    seen = await run_events(model, ran)

    ending = "a finish_reason" if provider == "openai" else "message_stop"
    name = NAMES[provider]
    assert seen[-1].type == "error"
    assert seen[-1].error == (
        f"{name} stream cut short: it ended before {ending} came; the answer so far is incomplete."
    )
    assert seen[-1].error_type == "ModelError"
    assert "final" not in [event.type for event in seen]
    assert len(server.requests) == 1, "text had streamed: not tried again"


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_stream_that_loses_only_its_last_event_is_whole(provider: str) -> None:
    """After the finish reason (OpenAI: the usage chunk and [DONE]; Anthropic: message_stop)
    nothing of the answer is missing."""
    events = events_in(TEXT_STREAMS[provider])
    model, _ = model_on(provider, stream_of(provider, joined(events[:-1])))

    seen = await run_events(model, [])

    assert seen[-1].type == "final"
    assert seen[-1].output


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_an_empty_answer_is_tried_again_then_an_error(provider: str) -> None:
    model, server = model_on(
        provider, stream_of(provider, ""), stream_of(provider, ""), stream_of(provider, "")
    )

    seen = await run_events(model, [], attempts=3)

    name = NAMES[provider]
    assert seen[-1].type == "error"
    assert seen[-1].error == (
        f"{name} stream cut short: the server sent no stream events (does it stream its answers?)."
    )
    assert len(server.requests) == 3


async def test_a_server_that_answers_without_streaming_is_told_apart() -> None:
    whole = {
        "id": "c",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "Hi"}, "finish_reason": "stop"}
        ],
    }
    answer = OPENAI.http.Response(200, json=whole)
    model, server = model_on("openai", answer, answer, answer)

    seen = await run_events(model, [], attempts=3)

    assert seen[-1].error == (
        "OpenAI stream cut short: the server answered with application/json, not a stream of "
        "events (it does not stream its answers, which this model needs)."
    )
    assert len(server.requests) == 1  # (asked again, it would answer and charge the same)


def _in_pieces(body: bytes) -> Any:
    """``body`` sent in two chunks, with no length given (as a gzip proxy or a stream sends)."""

    async def pieces() -> Any:
        yield body[: len(body) // 2]
        yield body[len(body) // 2 :]

    return pieces()


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("chunked", [False, True])
async def test_a_web_page_answered_with_status_200_is_named_and_not_asked_again(
    provider: str, chunked: bool
) -> None:
    """(a proxy's login page): it was "the server sent no stream events", tried again."""
    page = (
        b"\n  <!doctype html><html><head><title>Sign in &ndash; Corp Proxy</title></head>"
        b"<body>Please sign in.</body></html>"
    )
    answer = recorded(provider).http.Response(
        200,
        headers={"content-type": "text/html; charset=utf-8"},
        content=_in_pieces(page) if chunked else page,
    )
    model, server = model_on(provider, answer, answer, answer)

    seen = await run_events(model, [], attempts=3)

    assert seen[-1].error == (
        f'{NAMES[provider]} stream cut short: the server answered with a web page ("Sign in '
        '\u2013 Corp Proxy"), not an API error (from a proxy?).'
    )
    assert len(server.requests) == 1


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("chunked", [False, True])
async def test_an_event_stream_a_server_labels_a_web_page_is_still_read(
    provider: str, chunked: bool
) -> None:
    """(an nginx default_type): the SDKs read the events whatever the label, and so does the
    run; a page is told apart by how it starts, not by its label, nor by markup the model
    wrote in its answer."""
    stream = joined(events_in(TEXT_STREAMS[provider]))
    said = "<!doctype html><html><body>A page the model wrote</body></html>"
    first = json.dumps(said)[1:-1]
    written = re.sub(
        r'("(?:content|text)": ?")[^"]+"', lambda m: f'{m.group(1)}{first}"', stream, count=1
    )
    assert written != stream
    body = written.encode()
    answer = recorded(provider).http.Response(
        200, headers={"content-type": "text/html"}, content=_in_pieces(body) if chunked else body
    )
    model, _ = model_on(provider, answer)

    seen = await run_events(model, [])

    assert seen[-1].type == "final" and seen[-1].output.startswith(said)


@pytest.mark.parametrize(
    ("provider", "fixture", "cut"),
    [
        # the second call's arguments have come, not the event that ends its block
        ("anthropic", "anthropic_thinking_parallel_tools.sse", "content_block_stop"),
        # both calls' arguments have come, not the finish reason
        ("openai", "openai_parallel_tool_calls.sse", '"finish_reason"'),
    ],
)
async def test_no_tool_of_a_cut_answer_runs(provider: str, fixture: str, cut: str) -> None:
    events = cut_before(events_in(fixture), cut)
    model, _ = model_on(provider, stream_of(provider, joined(events)))
    ran: list[str] = []

    seen = await run_events(model, ran)

    assert seen[-1].type == "error"
    assert "cut short" in seen[-1].error
    assert ran == []
    assert not [event for event in seen if event.type == "tool_result"]


# -- an event that is not JSON -----------------------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_an_event_that_is_not_json_is_a_model_error_that_may_be_retried(
    provider: str,
) -> None:
    events = events_in(TEXT_STREAMS[provider])
    broken = [*events[:2], 'data: {"type": "content_bl']
    if provider == "anthropic":
        broken[-1] = 'event: content_block_delta\ndata: {"type": "content_bl'
    model, _ = model_on(provider, stream_of(provider, joined(broken)))

    error = await stream_error(model)

    name = NAMES[provider]
    assert str(error).startswith(f"{name} sent a stream event that is not valid JSON (")
    assert str(error).endswith("); the answer was cut short.")
    assert error.retryable is True
    assert isinstance(error.__cause__, json.JSONDecodeError)


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_an_event_that_is_not_utf8_is_a_model_error_that_may_be_retried(
    provider: str,
) -> None:
    """A proxy that cut a character in two (or a server writing Latin-1): the SDK's bare
    UnicodeDecodeError ended the run, not tried again."""
    body = (FIXTURES / TEXT_STREAMS[provider]).read_bytes().replace(b"Hello", b"Caf\xe9")
    model, _ = model_on(
        provider,
        recorded(provider).http.Response(
            200, headers={"content-type": "text/event-stream"}, content=body
        ),
    )

    error = await stream_error(model)

    name = NAMES[provider]
    assert str(error).startswith(f"{name} sent a stream event that is not valid UTF-8 text (")
    assert error.retryable is True
    assert isinstance(error.__cause__, UnicodeDecodeError)


# -- error bodies ----------------------------------------------------------------------------


async def test_an_error_event_with_a_plain_text_error_keeps_the_servers_words() -> None:
    """As text-generation-inference sends it: ``{"error": "..."}``."""
    said = "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096."
    events = events_in("openai_text.sse")
    body = joined([events[0], f"data: {json.dumps({'error': said})}"])
    model, _ = model_on("openai", stream_of("openai", body))

    seen = await run_events(model, [])

    assert seen[-1].error == f"OpenAI API error: {said}"


@pytest.mark.parametrize(("code", "retryable"), [(400, False), (503, True)])
async def test_an_error_event_with_a_numeric_code_as_vllm_sends_it_keeps_that_status(
    code: int, retryable: bool
) -> None:
    said = {"object": "error", "message": "Too long.", "type": "BadRequestError", "code": code}
    events = events_in("openai_text.sse")
    body = joined([events[0], f"data: {json.dumps({'error': said})}"])
    model, _ = model_on("openai", stream_of("openai", body))

    error = await stream_error(model)

    assert str(error) == f"OpenAI API error {code}: Too long."
    assert error.status_code == code
    assert error.retryable is retryable


PAGE = (
    "<!DOCTYPE html>\n<html><head><meta charset=utf-8><title>example.com | 502: Bad gateway"
    "</title><style>" + "body{margin:0}" * 800 + "</style></head><body><h1>Bad gateway</h1>"
    "<script>" + "var x=1;" * 500 + "</script></body></html>"
)


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_proxys_error_page_is_named_by_its_title_not_dumped(provider: str) -> None:
    page = recorded(provider).http.Response(
        502, headers={"content-type": "text/html"}, content=PAGE.encode()
    )
    model, _ = model_on(provider, page)

    error = await stream_error(model)

    name = NAMES[provider]
    assert str(error) == (
        f'{name} API error 502: the server answered with a web page ("example.com | 502: Bad '
        'gateway"), not an API error (from a proxy?)'
    )
    assert error.status_code == 502
    assert error.retryable is True


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_long_plain_text_error_is_kept_bounded(provider: str) -> None:
    text = "upstream connect error or disconnect/reset before headers. " * 50
    answer = recorded(provider).http.Response(
        503, headers={"content-type": "text/plain"}, content=text.encode()
    )
    model, _ = model_on(provider, answer)

    error = await stream_error(model)

    message = str(error)
    name = NAMES[provider]
    assert message.startswith(f"{name} API error 503: upstream connect error or disconnect")
    assert message.endswith("...")
    assert len(message) < 600


# -- a rate limit that says how long to wait ----------------------------------------------------

RATE_LIMITED = {"error": {"message": "Rate limit reached.", "type": "rate_limit_error"}}


def rate_limited(provider: str, **headers: str) -> Any:
    return recorded(provider).http.Response(
        429, headers={"content-type": "application/json", **headers}, json=RATE_LIMITED
    )


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(
    ("headers", "wait"),
    [
        ({"retry-after": "20"}, 20.0),
        ({"retry-after": "1.5"}, 1.5),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after": "soon"}, None),
        ({"retry-after": "-3"}, 0.0),
    ],
)
async def test_the_wait_a_rate_limit_asks_for_is_read(
    provider: str, headers: dict[str, str], wait: float | None
) -> None:
    model, _ = model_on(provider, rate_limited(provider, **headers))

    error = await stream_error(model)

    assert error.retry_after == wait
    if wait is None:
        assert "wait" not in str(error)


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_server_that_says_not_to_retry_is_not_retried(provider: str) -> None:
    """Before, ``x-should-retry: false`` (which both SDKs obey) was ignored: a 429 or 503 was
    sent again, as often as the retries allowed."""
    model, server = model_on(
        provider,
        rate_limited(provider, **{"x-should-retry": "false"}),
        stream_of(provider, joined(events_in(f"{provider}_text.sse"))),
    )

    seen = await run_events(model, [], attempts=3)

    assert seen[-1].type == "error" and "429" in seen[-1].error
    assert len(server.requests) == 1
    forced = await stream_error(model_on(provider, rate_limited(provider))[0])
    assert forced.retryable is True  # (no header: the status decides)
    told = recorded(provider).http.Response(
        400, headers={"x-should-retry": "true"}, json={"error": {"message": "try again"}}
    )
    assert (await stream_error(model_on(provider, told)[0])).retryable is True


async def test_an_account_without_credit_is_told_at_once_not_retried() -> None:
    """OpenAI's ``insufficient_quota`` is a 429 that no wait mends."""
    no_credit = recorded("openai").http.Response(
        429,
        json={
            "error": {
                "message": "You exceeded your current quota, please check your plan.",
                "type": "insufficient_quota",
                "code": "insufficient_quota",
            }
        },
    )
    model, server = model_on("openai", no_credit)

    seen = await run_events(model, [], attempts=3)

    assert seen[-1].type == "error"
    assert "You exceeded your current quota" in seen[-1].error
    assert len(server.requests) == 1


async def test_a_wait_given_as_a_date_is_read() -> None:
    when = datetime.now(timezone.utc) + timedelta(seconds=120)
    model, _ = model_on("openai", rate_limited("openai", **{"retry-after": format_datetime(when)}))

    error = await stream_error(model)

    assert error.retry_after is not None
    assert 100 < error.retry_after <= 120


def test_the_retry_waits_at_least_what_the_server_asked_for_up_to_a_limit() -> None:
    retries = CompletionRetries(initial_delay=0, max_delay=0, max_retry_after=30)
    asked = ModelError("slow down", status_code=429, retry_after=20)

    assert retries.delay(1, asked) == 20
    assert retries.delay(1, ModelError("x", status_code=429, retry_after=45)) == 30
    assert retries.delay(1, ModelError("x", status_code=429)) == 0
    assert retries.allows(RetryContext(asked, 1, 3, 1))
    too_long = ModelError("x", status_code=429, retry_after=31)
    assert not retries.allows(RetryContext(too_long, 1, 3, 1))
    anyway = CompletionRetries(max_retry_after=30, should_retry=lambda context: True)
    assert anyway.allows(RetryContext(too_long, 1, 3, 1))
    with pytest.raises(ValueError, match="negative"):
        CompletionRetries(max_retry_after=float("nan"))


async def test_a_run_waits_as_long_as_the_server_asked_before_trying_again() -> None:
    events = events_in("openai_text.sse")
    model, server = model_on(
        "openai",
        rate_limited("openai", **{"retry-after-ms": "300"}),
        stream_of("openai", joined(events)),
    )
    started = time.monotonic()

    seen = await run_events(model, [], attempts=2)

    assert seen[-1].type == "final"
    assert len(server.requests) == 2
    # (the backoff is 0 here: only the server's wait can make it this long; sleeps never end
    # early, so this cannot fail by chance)
    assert time.monotonic() - started >= 0.3


async def test_a_run_told_to_wait_longer_than_the_limit_fails_at_once_saying_so() -> None:
    model, server = model_on("openai", rate_limited("openai", **{"retry-after": "3600"}))

    seen = await run_events(model, [], attempts=3)

    assert seen[-1].type == "error"
    assert seen[-1].error == (
        "OpenAI API error 429: Rate limit reached. "
        "(the server asks to wait 3600 s before trying again)"
    )
    assert len(server.requests) == 1


# -- an OpenAI answer that may not be taken as it is (as Anvia's Chat Completions model) ---------


def chunks(*choice_lists: list[dict[str, Any]]) -> Any:
    """An OpenAI stream of one chunk per list of choices."""
    body = "".join(
        "data: "
        + json.dumps(
            {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": c}
        )
        + "\n\n"
        for c in choice_lists
    )
    return stream_of("openai", body + "data: [DONE]\n\n")


def weather_call(arguments: str = '{"city": "Paris"}') -> dict[str, Any]:
    fragment = {
        "index": 0,
        "id": "call_1",
        "function": {"name": "get_weather", "arguments": arguments},
    }
    return {"tool_calls": [fragment]}


def choice(delta: dict[str, Any], finish: str | None = None, **fields: Any) -> dict[str, Any]:
    return {"index": 0, "delta": delta, "finish_reason": finish, **fields}


TOOL_FINISH = "OpenAI Chat Completions tool-call stream ended with"


@pytest.mark.parametrize(
    ("finish", "message"),
    [
        ("length", f'{TOOL_FINISH} finish_reason "length"; provider output may be incomplete.'),
        (
            "content_filter",
            f'{TOOL_FINISH} finish_reason "content_filter"; tool calls will not be executed.',
        ),
        (
            "abort",
            f"{TOOL_FINISH} an unsupported finish reason ('abort'); provider output cannot be "
            "assembled safely.",
        ),
    ],
)
async def test_a_tool_call_that_ended_other_than_complete_does_not_run(
    finish: str, message: str
) -> None:
    """Before, the call ran (its arguments were whole) though the answer was cut by the length
    limit, filtered, or ended for a reason nobody knows."""
    model, server = model_on("openai", chunks([choice(weather_call(), finish)]))
    ran: list[str] = []

    seen = await run_events(model, ran, attempts=3)

    assert seen[-1].type == "error" and seen[-1].error == message
    assert ran == [] and len(server.requests) == 1  # (not tried again: it would end the same)


@pytest.mark.parametrize("finish", ["tool_calls", "stop", "function_call"])
async def test_a_tool_call_that_ended_complete_runs(finish: str) -> None:
    model, _ = model_on(
        "openai",
        chunks([choice(weather_call(), finish)]),
        chunks([choice({"content": "ok"}, "stop")]),
    )
    ran: list[str] = []
    seen = await run_events(model, ran)
    assert ran == ["get_weather(Paris)"] and seen[-1].type == "final"


async def test_conflicting_finish_reasons_are_refused() -> None:
    """A ``tool_calls`` then a ``content_filter``: before, the last reason won silently."""
    model, _ = model_on(
        "openai",
        chunks([choice(weather_call(), "tool_calls")], [choice({}, "content_filter")]),
    )
    ran: list[str] = []
    seen = await run_events(model, ran)
    assert seen[-1].error == (
        "OpenAI Chat Completions stream returned conflicting terminal finish reasons "
        "('tool_calls', then 'content_filter'); provider output cannot be assembled safely."
    )
    assert ran == []


async def test_a_lone_choice_without_an_index_is_the_answer() -> None:
    """Some OpenAI-compatible servers leave out the index; before, the answer was dropped and
    the run failed three times over with "stream cut short"."""
    model, server = model_on(
        "openai",
        chunks(
            [{"delta": {"content": "Hello"}, "finish_reason": None}],
            [{"delta": {"content": " there"}, "finish_reason": "stop"}],
        ),
    )
    response = await agent_of(model, []).prompt("Hi").send()
    assert response.output == "Hello there" and len(server.requests) == 1


@pytest.mark.parametrize(
    "choices",
    [
        [choice({"content": "first"}), choice({"content": "second"})],  # two of index 0
        [choice({"content": "a"}), {"delta": {"content": "b"}, "finish_reason": None}],
        [choice({"content": "a"}, index="0")],
        [choice({"content": "a"}, index=-1)],
    ],
    ids=["two-primary", "indexed-and-not", "text-index", "negative-index"],
)
async def test_choices_that_leave_the_answer_unclear_are_refused_not_merged(
    choices: list[dict[str, Any]],
) -> None:
    """Before, two choices of index 0 were merged into one answer (``firstsecond``; two tool
    calls' arguments joined), and a choice with a bad index was dropped."""
    model, server = model_on("openai", chunks(choices, [choice({}, "stop")]))
    ran: list[str] = []
    seen = await run_events(model, ran, attempts=3)
    assert seen[-1].error == (
        "OpenAI Chat Completions stream returned ambiguous completion choices without valid "
        "indices; provider output cannot be assembled safely."
    )
    assert len(server.requests) == 1


# -- an Anthropic answer: a gateway's tool input, a cut or refused call --------------------------


def anthropic_events(*events: dict[str, Any], stop: dict[str, Any] | None = None) -> Any:
    start = {
        "type": "message_start",
        "message": {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 1},
        },
    }
    body = "".join(
        f"event: {event['type']}\ndata: {json.dumps(event)}\n\n"
        for event in (start, *events, stop or {"type": "message_stop"})
    )
    return stream_of("anthropic", body)


def tool_use(given: Any, *partial_json: str, stop: str = "tool_use") -> Any:
    """A ``tool_use`` block whose start event carries ``given`` as its input, then ``partial_json``
    deltas, then the end of the answer with ``stop``."""
    block = {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": given}
    deltas = [
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": p},
        }
        for p in partial_json
    ]
    return anthropic_events(
        {"type": "content_block_start", "index": 0, "content_block": block},
        *deltas,
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 5}},
    )


def anthropic_text(text: str) -> Any:
    return anthropic_events(
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "text", "text": text},
        },
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 1},
        },
    )


@pytest.mark.parametrize(
    "deltas", [(), ('{"city": "Rome"}',)], ids=["start-only", "start-then-deltas"]
)
async def test_a_tool_input_a_gateway_sends_whole_at_the_blocks_start_is_used(
    deltas: tuple[str, ...],
) -> None:
    """Some gateways send the whole input in ``content_block_start``: before, it was dropped
    and the call went out as ``{}`` (a tool with defaults ran with them). The start wins, as in
    Anvia, over deltas that repeat it."""
    model, _ = model_on("anthropic", tool_use({"city": "Paris"}, *deltas), anthropic_text("ok"))
    ran: list[str] = []
    seen = await run_events(model, ran)
    assert ran == ["get_weather(Paris)"] and seen[-1].type == "final"


async def test_a_tool_input_streamed_after_an_empty_start_is_used() -> None:
    model, _ = model_on("anthropic", tool_use({}, '{"city":', ' "Oslo"}'), anthropic_text("ok"))
    ran: list[str] = []
    await run_events(model, ran)
    assert ran == ["get_weather(Oslo)"]


@pytest.mark.parametrize(
    ("stop", "end"),
    [
        ("max_tokens", "provider output may be incomplete"),
        ("refusal", "tool calls will not be executed"),
    ],
)
async def test_a_tool_call_in_an_answer_cut_or_refused_does_not_run(stop: str, end: str) -> None:
    model, server = model_on("anthropic", tool_use({}, '{"city": "Paris"}', stop=stop))
    ran: list[str] = []
    seen = await run_events(model, ran, attempts=3)
    assert seen[-1].error == f'Anthropic tool-call stream ended with stop_reason "{stop}"; {end}.'
    assert ran == [] and len(server.requests) == 1
    assert "tool_call" not in [e.type for e in seen]  # (it showed a call that never ran)


def whole_at_stop(*content: dict[str, Any], reason: str = "end_turn") -> Any:
    """A gateway's stream: no content blocks, the whole answer in ``message_stop``."""
    usage = {"input_tokens": 10, "output_tokens": 4, "cache_read_input_tokens": 2}
    message = {"id": "msg_1", "content": list(content), "stop_reason": reason, "usage": usage}
    return anthropic_events(
        {"type": "message_delta", "delta": {"stop_reason": reason}, "usage": {"output_tokens": 4}},
        stop={"type": "message_stop", "message": message},
    )


async def test_an_answer_a_gateway_sends_whole_in_message_stop_is_read() -> None:
    """As Anvia reads it; before, the run ended with an empty answer and no error."""
    model, _ = model_on("anthropic", whole_at_stop({"type": "text", "text": "Full final text"}))
    response = await agent_of(model, []).prompt("Hi").send()
    assert response.output == "Full final text"
    assert response.usage.input_tokens == 12 and response.usage.output_tokens == 4


async def test_a_tool_call_a_gateway_sends_whole_in_message_stop_runs() -> None:
    call = {"type": "tool_use", "id": "toolu_9", "name": "get_weather", "input": {"city": "Lima"}}
    model, _ = model_on("anthropic", whole_at_stop(call, reason="tool_use"), anthropic_text("ok"))
    ran: list[str] = []
    seen = await run_events(model, ran)
    assert ran == ["get_weather(Lima)"] and seen[-1].output == "ok"


@pytest.mark.parametrize("reason", ["max_tokens", "refusal"])
async def test_a_tool_call_a_gateway_sends_whole_in_a_cut_answer_is_not_shown(reason: str) -> None:
    call = {"type": "tool_use", "id": "toolu_9", "name": "get_weather", "input": {"city": "Lima"}}
    model, _ = model_on("anthropic", whole_at_stop(call, reason=reason))
    ran: list[str] = []
    seen = await run_events(model, ran, attempts=1)
    assert seen[-1].type == "error" and ran == []
    assert "tool_call" not in [e.type for e in seen]


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_gateway_s_error_said_as_json_with_status_200_is_told_and_tried_again(
    provider: str,
) -> None:
    """A streamed request answered 200 with an error object: its message, and asked again
    (an error, not a whole answer that asking again would charge for twice)."""
    error = recorded(provider).http.Response(
        200, json={"error": {"message": "upstream overloaded", "type": "overloaded"}}
    )
    model, server = model_on(
        provider, error, stream_of(provider, joined(events_in(TEXT_STREAMS[provider])))
    )

    seen = await run_events(model, [], attempts=2)

    assert seen[-1].type == "final" and seen[-1].output
    assert len(server.requests) == 2
    model, _ = model_on(provider, error)
    failure = await stream_error(model)
    name = "OpenAI" if provider == "openai" else "Anthropic"
    assert str(failure) == f"{name} API error: upstream overloaded" and failure.retryable


async def test_a_connection_lost_while_a_tool_call_is_still_open_is_a_cut_answer() -> None:
    """Anthropic: the stop reason came (a gateway's order) before the tool_use block's
    content_block_stop, then the connection was lost: the call may be cut, so the answer is
    not taken as whole (it was ended with no call at all)."""
    events = events_in("anthropic_tool_picture.sse")
    stops = [i for i, event in enumerate(events) if "content_block_stop" in event]
    delta = next(i for i, event in enumerate(events) if "message_delta" in event)
    reordered = [e for i, e in enumerate(events) if i != stops[-1] and "message_stop" not in e]
    assert delta > stops[-1]  # (the recorded order: the block's stop, then the stop reason)
    body = joined(reordered).encode()

    async def cut() -> Any:
        yield body
        raise ANTHROPIC.http.RemoteProtocolError("peer closed connection (incomplete chunked read)")

    response = ANTHROPIC.http.Response(
        200, headers={"content-type": "text/event-stream"}, content=cut()
    )
    model, _ = model_on("anthropic", response)

    failure = await stream_error(model)

    assert "connection" in str(failure) and failure.retryable


async def test_an_emoji_whose_halves_come_in_two_events_reaches_the_user_whole() -> None:
    # Some gateways cut a stream's text by UTF-16 unit: an emoji's halves come as "\ud83d" in
    # one event and "\ude00" in the next (each one U+FFFD alone).
    model, _ = model_on(
        "openai",
        chunks(
            [choice({"content": "Done \ud83d"})],
            [choice({"content": "\ude00 and \ud83d"})],
            [choice({"content": "\ude80!"}, "stop")],
        ),
    )
    events = await run_events(model, [])
    texts = [event.delta for event in events if event.type == "text_delta"]
    assert "".join(texts) == "Done \U0001f600 and \U0001f680!"
    assert events[-1].type == "final" and events[-1].output == "Done \U0001f600 and \U0001f680!"

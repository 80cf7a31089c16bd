"""OpenAIModel against recorded Chat Completions streams: no network, the SDK's real HTTP path."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from openai import _base_client as openai_base_client

from anvia_notebook import AgentBuilder
from anvia_notebook.messages import Message, MessageToolCall, ToolResultPart, Usage
from anvia_notebook.models.base import (
    CompletionRequest,
    Finish,
    ModelError,
    ReasoningDelta,
    ToolCall,
    ToolCallDelta,
    UsageUpdate,
)
from anvia_notebook.models.openai import OpenAIModel
from anvia_notebook.retry import is_transient_error

from provider_replay import (
    FIXTURES,
    TIME,
    WEATHER,
    Recorded,
    Server,
    TextDeltaObjects,
    ask,
    drain,
    events_of,
    weather_agent,
    whole_run,
)

ROOT = Path(__file__).parent.parent
#: The HTTP library the installed SDK is built on (httpx2 for the 3.x SDK, httpx before).
http: Any = getattr(openai_base_client, "httpx2", None) or httpx


recorded = Recorded(http)
sse = recorded.sse
error_response = recorded.error_response


@pytest.fixture
def serve(monkeypatch: pytest.MonkeyPatch) -> Callable[..., Server]:
    """Routes the clients OpenAIModel builds itself to a recorded server."""

    return recorded.serving(monkeypatch, openai, "AsyncOpenAI")


async def test_text_is_streamed_with_usage_and_finish(serve: Callable[..., Server]) -> None:
    server = serve(sse("openai_text.sse"))
    model = OpenAIModel("gpt-4o-mini", api_key="sk-test")

    events = await events_of(model, ask("Hi", instructions="Be brief."))

    assert events == [
        "Hello",
        "!",
        " How can I help?",
        UsageUpdate(usage=Usage(input_tokens=21, output_tokens=7), cached_tokens=0),
        Finish(reason="stop"),
    ]
    (request,) = server.requests
    assert str(request.url) == "https://api.openai.com/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-test"
    assert server.body() == {
        "model": "gpt-4o-mini",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hi"},
        ],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    assert model.name == "gpt-4o-mini"


async def test_history_tools_and_options_are_mapped(serve: Callable[..., Server]) -> None:
    server = serve(sse("openai_text.sse"))
    model = OpenAIModel("gpt-4o", api_key="sk-test", top_p=0.5, temperature=1.0)
    history = [
        Message.user("Weather and time in Paris?"),
        Message.assistant(
            "",
            [
                MessageToolCall(id="call_1", name="get_weather", arguments='{"city": "Paris"}'),
                MessageToolCall(id="call_2", name="get_time", arguments='{"tz": "Europe/Paris"}'),
            ],
            reasoning="Two tools at once.",
        ),
        Message.tool(
            [
                ToolResultPart(
                    tool_call_id="call_1", tool_name="get_weather", content="18C, sunny"
                ),
                ToolResultPart(
                    tool_call_id="call_2",
                    tool_name="get_time",
                    content="Unknown time zone",
                    is_error=True,
                ),
            ]
        ),
        Message.assistant("It is 18C and sunny; I could not get the time."),
        Message.user("Thanks!"),
    ]
    request = CompletionRequest(
        instructions="You are a weather bot.",
        messages=history,
        tools=[WEATHER, TIME],
        temperature=0.2,
        max_tokens=256,
        tool_choice="auto",
    )

    await events_of(model, request)

    assert server.body() == {
        "model": "gpt-4o",
        "messages": [
            {"role": "system", "content": "You are a weather bot."},
            {"role": "user", "content": "Weather and time in Paris?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                    },
                    {
                        "id": "call_2",
                        "type": "function",
                        "function": {"name": "get_time", "arguments": '{"tz": "Europe/Paris"}'},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "18C, sunny"},
            {"role": "tool", "tool_call_id": "call_2", "content": "Unknown time zone"},
            {"role": "assistant", "content": "It is 18C and sunny; I could not get the time."},
            {"role": "user", "content": "Thanks!"},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "description": "The current weather in a city.",
                    "parameters": WEATHER.parameters,
                },
            },
            {
                "type": "function",
                "function": {
                    "name": "get_time",
                    "description": "The local time in a time zone.",
                    "parameters": TIME.parameters,
                },
            },
        ],
        "tool_choice": "auto",
        "temperature": 0.2,
        "top_p": 0.5,
        "max_completion_tokens": 256,
        "stream": True,
        "stream_options": {"include_usage": True},
    }


@pytest.mark.parametrize(
    ("tool_choice", "sent"),
    [
        ("required", "required"),
        ("any", "required"),
        ("none", "none"),
        ("get_weather", {"type": "function", "function": {"name": "get_weather"}}),
        (
            {"type": "function", "function": {"name": "get_time"}},
            {"type": "function", "function": {"name": "get_time"}},
        ),
    ],
)
async def test_tool_choice(serve: Callable[..., Server], tool_choice: Any, sent: Any) -> None:
    server = serve(sse("openai_text.sse"))
    model = OpenAIModel("gpt-4o", api_key="sk-test")

    await events_of(model, ask(tools=[WEATHER, TIME], tool_choice=tool_choice))

    assert server.body()["tool_choice"] == sent


async def test_no_tool_choice_without_tools(serve: Callable[..., Server]) -> None:
    server = serve(sse("openai_text.sse"))
    model = OpenAIModel("gpt-4o", api_key="sk-test")

    await events_of(model, ask(tool_choice="required"))

    assert "tool_choice" not in server.body()
    assert "tools" not in server.body()


async def test_parallel_tool_calls_are_assembled_from_fragments(
    serve: Callable[..., Server],
) -> None:
    serve(sse("openai_parallel_tool_calls.sse"))
    model = OpenAIModel("gpt-4o", api_key="sk-test")

    events = await events_of(model, ask("Weather and time in Paris?", tools=[WEATHER, TIME]))

    weather_id, time_id = "call_Vq3HnT8kZ2mP4sX9bL1cR7dA", "call_Yt6WcJ2nQ9rB5vK3hM8xF1eS"
    assert events == [
        ToolCallDelta(id=weather_id, name="get_weather", arguments_delta=""),
        ToolCallDelta(id=weather_id, arguments_delta='{"ci'),
        ToolCallDelta(id=weather_id, arguments_delta='ty": "Par'),
        ToolCallDelta(id=weather_id, arguments_delta='is"}'),
        ToolCallDelta(id=time_id, name="get_time", arguments_delta=""),
        ToolCallDelta(id=time_id, arguments_delta='{"tz": '),
        ToolCallDelta(id=time_id, arguments_delta='"Europe/Paris"}'),
        ToolCall(id=weather_id, name="get_weather", arguments='{"city": "Paris"}'),
        ToolCall(id=time_id, name="get_time", arguments='{"tz": "Europe/Paris"}'),
        UsageUpdate(usage=Usage(input_tokens=143, output_tokens=52), cached_tokens=0),
        Finish(reason="tool_calls"),
    ]


async def test_complete_folds_the_stream(serve: Callable[..., Server]) -> None:
    serve(sse("openai_parallel_tool_calls.sse"))
    model = OpenAIModel("gpt-4o", api_key="sk-test")

    response = await model.complete(ask(tools=[WEATHER, TIME]))

    assert [call.to_message_call().parsed_arguments() for call in response.tool_calls] == [
        {"city": "Paris"},
        {"tz": "Europe/Paris"},
    ]
    assert response.usage == Usage(input_tokens=143, output_tokens=52)
    assert response.finish_reason == "tool_calls"


async def test_a_tool_call_cut_by_the_length_limit_is_refused(
    serve: Callable[..., Server],
) -> None:
    """As Anvia: a tool-call stream that ended with ``finish_reason="length"`` is not an answer
    (before, its cut arguments went to the run as if the model had sent them)."""
    serve(sse("openai_invalid_arguments.sse"))
    model = OpenAIModel("gpt-4o-mini", api_key="sk-test")

    with pytest.raises(ModelError) as refused:
        await events_of(model, ask(tools=[WEATHER]))
    assert str(refused.value) == (
        'OpenAI Chat Completions tool-call stream ended with finish_reason "length"; provider '
        "output may be incomplete."
    )
    assert not refused.value.retryable


async def test_ollama_server_with_reasoning(
    serve: Callable[..., Server], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server = serve(sse("openai_ollama_reasoning_tool_call.sse"))
    model = OpenAIModel("qwen3:8b", base_url="http://localhost:11434/v1")

    events = await events_of(model, ask("Weather in Paris?", tools=[WEATHER], max_tokens=512))

    assert events == [
        ReasoningDelta(delta="The user wants"),
        ReasoningDelta(delta=" the weather in Paris."),
        ToolCallDelta(id="call_5s1z8k2q", name="get_weather", arguments_delta='{"city":"Paris"}'),
        ToolCall(id="call_5s1z8k2q", name="get_weather", arguments='{"city":"Paris"}'),
        UsageUpdate(usage=Usage(input_tokens=187, output_tokens=41)),
        Finish(reason="tool_calls"),
    ]
    (request,) = server.requests
    assert str(request.url) == "http://localhost:11434/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer not-needed"
    body = server.body()
    assert body["max_tokens"] == 512
    assert "max_completion_tokens" not in body


async def test_reasoning_content_field(serve: Callable[..., Server]) -> None:
    serve(sse("openai_vllm_reasoning_content.sse"))
    model = OpenAIModel(
        "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B", base_url="http://vllm:8000/v1", api_key="k"
    )

    events = await events_of(model, ask("2 + 2?"))

    assert events == [
        ReasoningDelta(delta="2 + 2"),
        ReasoningDelta(delta=" is 4."),
        "4",
        UsageUpdate(usage=Usage(input_tokens=12, output_tokens=11)),
        Finish(reason="stop"),
    ]


def chunk_stream(*deltas: dict[str, Any], finish: str = "stop") -> Any:
    """An SSE response of one chunk per delta, then one with the ``finish`` reason, as a local
    server would send it (no usage)."""
    chunks = (
        {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "local",
            "choices": [{"index": 0, "delta": delta, "finish_reason": reason}],
        }
        for delta, reason in [*((delta, None) for delta in deltas), ({}, finish)]
    )
    body = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks) + "data: [DONE]\n\n"
    return http.Response(200, headers={"content-type": "text/event-stream"}, content=body)


async def test_tool_calls_without_index_each_get_their_own_call(
    serve: Callable[..., Server],
) -> None:
    serve(
        chunk_stream(
            {
                "tool_calls": [
                    {"id": "call_a", "function": {"name": "get_weather", "arguments": "{}"}}
                ]
            },
            {"tool_calls": [{"id": "call_b", "function": {"name": "get_time", "arguments": "{}"}}]},
            finish="tool_calls",
        )
    )
    model = OpenAIModel("local", base_url="http://localhost:1234/v1")

    events = await events_of(model, ask(tools=[WEATHER, TIME]))

    assert events == [
        ToolCallDelta(id="call_a", name="get_weather", arguments_delta="{}"),
        ToolCallDelta(id="call_b", name="get_time", arguments_delta="{}"),
        ToolCall(id="call_a", name="get_weather", arguments="{}"),
        ToolCall(id="call_b", name="get_time", arguments="{}"),
        Finish(reason="tool_calls"),
    ]


async def test_a_call_keeps_the_first_id_of_its_index(serve: Callable[..., Server]) -> None:
    serve(
        chunk_stream(
            {"tool_calls": [{"index": 0, "id": "call_first", "function": {"name": "get_weather"}}]},
            {"tool_calls": [{"index": 0, "id": "call_again", "function": {"arguments": '{"ci'}}]},
            {"tool_calls": [{"index": 0, "function": {"arguments": 'ty": "Oslo"}'}}]},
            finish="tool_calls",
        )
    )
    model = OpenAIModel("local", base_url="http://localhost:1234/v1")

    events = await events_of(model, ask(tools=[WEATHER]))

    assert events == [
        ToolCallDelta(id="call_first", name="get_weather", arguments_delta=""),
        ToolCallDelta(id="call_first", arguments_delta='{"ci'),
        ToolCallDelta(id="call_first", arguments_delta='ty": "Oslo"}'),
        ToolCall(id="call_first", name="get_weather", arguments='{"city": "Oslo"}'),
        Finish(reason="tool_calls"),
    ]


async def test_a_call_without_id_or_arguments_gets_an_id_and_empty_arguments(
    serve: Callable[..., Server],
) -> None:
    serve(
        chunk_stream(
            {"tool_calls": [{"index": 0, "function": {"name": "list_tickets"}}]},
            finish="tool_calls",
        )
    )
    model = OpenAIModel("local", base_url="http://localhost:1234/v1")

    events = await events_of(model, ask(tools=[WEATHER]))

    delta, call, finish = events
    assert delta.id == call.id
    assert call.id.startswith("call_")
    assert call.arguments == "{}"
    assert finish == Finish(reason="tool_calls")


@pytest.mark.parametrize(
    ("status", "fixture", "retryable"),
    [
        (429, "openai_error_429.json", True),
        (500, "openai_error_500.json", True),
        (400, "openai_error_400.json", False),
    ],
)
async def test_http_errors_keep_their_status(
    serve: Callable[..., Server], status: int, fixture: str, retryable: bool
) -> None:
    server = serve(error_response(status, fixture))
    model = OpenAIModel("gpt-4o-mini", api_key="sk-test")

    with pytest.raises(ModelError) as caught:
        await events_of(model, ask())

    error = caught.value
    assert error.status_code == status
    assert error.retryable is retryable
    assert isinstance(error.__cause__, openai.APIStatusError)
    message = json.loads((FIXTURES / fixture).read_text())["error"]["message"]
    assert str(error) == f"OpenAI API error {status}: {message}"
    assert len(server.requests) == 1, "the SDK must not retry: the run loop does"


@pytest.mark.parametrize(
    "failure",
    [http.ConnectError("connection refused"), http.ReadTimeout("timed out")],
    ids=["connect", "timeout"],
)
async def test_connection_errors_are_retryable(
    serve: Callable[..., Server], failure: Exception
) -> None:
    server = serve(failure)
    model = OpenAIModel("gpt-4o-mini", api_key="sk-test")

    with pytest.raises(ModelError) as caught:
        await events_of(model, ask())

    assert caught.value.status_code is None
    assert caught.value.retryable is True
    assert isinstance(caught.value.__cause__, openai.APIConnectionError)
    assert len(server.requests) == 1


async def test_an_error_inside_the_stream_is_a_model_error(serve: Callable[..., Server]) -> None:
    first = (FIXTURES / "openai_text.sse").read_text().split("\n\n")[1]
    error = {"error": {"message": "The server had an error.", "type": "server_error"}}
    serve(
        http.Response(
            200,
            headers={"content-type": "text/event-stream"},
            content=f"{first}\n\ndata: {json.dumps(error)}\n\n",
        )
    )
    model = OpenAIModel("gpt-4o-mini", api_key="sk-test")
    seen: list[Any] = []

    with pytest.raises(ModelError, match="The server had an error") as caught:
        await drain(model, ask(), into=seen)

    assert seen == ["Hello"]
    assert caught.value.status_code == 500
    assert isinstance(caught.value.__cause__, openai.APIError)


@pytest.mark.parametrize(("code", "status"), [("server_error", 500), ("502", 502)])
async def test_a_gateway_s_in_stream_error_with_a_text_code_is_retried(
    serve: Callable[..., Server], code: str, status: int
) -> None:
    """OpenRouter sends an error that happens while it generates as a chunk with an ``error``
    whose ``code`` is a text ("server_error") and no ``type``, after a 200: the error had no
    status, so it was never retried, even before any text came. Its code says what it is."""
    chunk = {
        "id": "gen-1",
        "object": "chat.completion.chunk",
        "error": {"code": code, "message": "Provider disconnected unexpectedly"},
        "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}],
    }
    failed = http.Response(
        200,
        headers={"content-type": "text/event-stream"},
        content=f"data: {json.dumps(chunk)}\n\n",
    )
    server = serve(failed, sse("openai_text.sse"))
    model = OpenAIModel("openai/gpt-4o-mini", api_key="sk-test")
    with pytest.raises(ModelError, match="Provider disconnected unexpectedly") as caught:
        await events_of(model, ask())
    assert caught.value.status_code == status
    assert is_transient_error(caught.value)

    agent = AgentBuilder("a", model).build()
    server.responses[:0] = [failed]
    response = await agent.prompt("hi").with_completion_retries(initial_delay=0).send()
    assert response.output.startswith("Hello")
    assert len(server.requests) == 3


async def test_azure_and_a_limit_given_as_an_option_name_the_token_limit_field() -> None:
    """Azure's o-series deployments refuse ``max_tokens`` (it was sent for any host but
    OpenAI's), and a ``max_completion_tokens`` given as an option was replaced by the request's
    own limit under the other name."""
    server = Server(*(sse("openai_text.sse") for _ in range(3)))
    azure = openai.AsyncAzureOpenAI(
        api_key="azure-key",
        api_version="2024-12-01-preview",
        azure_endpoint="https://myres.openai.azure.com",
        azure_deployment="o3-mini",
        http_client=recorded.client(server),
    )
    await events_of(OpenAIModel("o3-mini", client=azure), ask(max_tokens=100))
    assert server.body(0)["max_completion_tokens"] == 100 and "max_tokens" not in server.body(0)
    local = openai.AsyncOpenAI(
        api_key="k", base_url="http://localhost:8000/v1", http_client=recorded.client(server)
    )
    await events_of(OpenAIModel("m", client=local, max_completion_tokens=50), ask(max_tokens=200))
    assert server.body(1)["max_completion_tokens"] == 200 and "max_tokens" not in server.body(1)
    await events_of(OpenAIModel("m", client=local), ask(max_tokens=200))
    assert server.body(2)["max_tokens"] == 200 and "max_completion_tokens" not in server.body(2)


async def test_stream_options_given_are_kept_and_none_sends_none() -> None:
    """``stream_options={"include_usage": False}`` was sent as True; a server that refuses
    ``stream_options`` (older Azure versions, some gateways) could not be used."""
    server = Server(sse("openai_text.sse"), sse("openai_text.sse"))
    client = openai.AsyncOpenAI(api_key="k", http_client=recorded.client(server))
    await events_of(OpenAIModel("m", client=client, stream_options={"include_usage": False}), ask())
    assert server.body(0)["stream_options"] == {"include_usage": False}
    await events_of(OpenAIModel("m", client=client, stream_options=None), ask())
    assert "stream_options" not in server.body(1)


async def test_a_server_that_refuses_stream_options_is_asked_again_without() -> None:
    """Azure's API versions before 2024-09 (and some gateways) refuse ``stream_options``:
    every run failed with that 400 until the user found ``stream_options=None``."""
    refused = recorded.http.Response(
        400,
        json={
            "error": {
                "message": "Unrecognized request argument supplied: stream_options",
                "type": "invalid_request_error",
            }
        },
    )
    server = Server(refused, sse("openai_text.sse"), sse("openai_text.sse"))
    azure = openai.AsyncAzureOpenAI(
        api_key="azure-key",
        api_version="2024-02-01",
        azure_endpoint="https://myres.openai.azure.com",
        azure_deployment="gpt-4o",
        http_client=recorded.client(server),
    )
    model = OpenAIModel("gpt-4o", client=azure)
    assert "".join(e for e in await events_of(model, ask()) if isinstance(e, str)).startswith(
        "Hello"
    )
    assert "stream_options" in server.body(0) and "stream_options" not in server.body(1)
    assert model.asks_usage is False
    await events_of(model, ask())  # (not asked for again)
    assert len(server.requests) == 3 and "stream_options" not in server.body(2)


async def test_a_400_that_only_repeats_the_request_keeps_stream_options(
    serve: Callable[..., Server],
) -> None:
    """vLLM's validation errors repeat the whole request body, ``stream_options`` included:
    such a 400 (here for another field) is not a refusal of it, so it is raised as it is,
    not sent again, and usage is still asked for."""
    said = (
        "[{'type': 'value_error', 'loc': ('body',), 'msg': 'Value error, max_tokens must be at "
        "least 1, got -1.', 'input': {'model': 'qwen', 'messages': [{'role': 'user', 'content': "
        "'Hi'}], 'stream': True, 'stream_options': {'include_usage': True}, 'max_tokens': -1}}]"
    )
    refused = recorded.http.Response(400, json={"object": "error", "message": said, "code": 400})
    server = serve(refused, refused)
    model = OpenAIModel("qwen", base_url="http://localhost:8000/v1")
    with pytest.raises(ModelError, match="max_tokens must be at least 1"):
        await events_of(model, ask())
    assert len(server.requests) == 1
    assert model.asks_usage is True


async def test_a_refusal_naming_stream_options_as_a_key_is_still_one(
    serve: Callable[..., Server],
) -> None:
    said = "{'stream_options': ['Unknown field.']}"
    refused = recorded.http.Response(400, json={"error": {"message": said}})
    server = serve(refused, sse("openai_text.sse"))
    model = OpenAIModel("qwen", base_url="http://localhost:8000/v1")
    await events_of(model, ask())
    assert "stream_options" not in server.body(1) and model.asks_usage is False


def test_a_local_server_set_in_the_environment_needs_no_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``OPENAI_BASE_URL`` (an Ollama server) without a key was refused ("needs an API key"),
    while the same address given as ``base_url=`` worked."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:11434/v1")
    model = OpenAIModel("llama3.2")
    assert model._no_key is None
    assert str(model.client.base_url) == "http://localhost:11434/v1/"


async def test_a_server_not_running_is_named_with_the_reason() -> None:
    """An Ollama server not running read "OpenAI connection error: Connection error.": the
    address and the reason were only in the exception's causes."""
    refused = http.ConnectError(
        "[Errno 111] Connect call failed ('127.0.0.1', 11434)",
        request=http.Request("POST", "http://localhost:11434/v1/chat/completions"),
    )
    client = openai.AsyncOpenAI(
        api_key="k",
        base_url="http://user:s3cret@localhost:11434/v1",
        http_client=recorded.client(Server(refused)),
        max_retries=0,
    )
    with pytest.raises(ModelError) as caught:
        await events_of(OpenAIModel("llama3.2", client=client), ask())
    message = str(caught.value)
    assert message.startswith("OpenAI connection error: Connection error. (http://")
    assert "localhost:11434/v1/chat/completions" in message
    assert "[Errno 111] Connect call failed" in message
    assert "s3cret" not in message
    assert caught.value.retryable is True


async def test_a_given_client_is_used_as_is() -> None:
    server = Server(sse("openai_text.sse"))
    client = openai.AsyncOpenAI(
        api_key="sk-mine",
        base_url="https://gateway.example/v1",
        max_retries=5,
        http_client=http.AsyncClient(transport=http.MockTransport(server)),
    )
    model = OpenAIModel("gpt-4o", client=client)

    events = await events_of(model, ask())

    assert model.client is client
    assert client.max_retries == 5
    assert events[-1] == Finish(reason="stop")
    assert str(server.requests[0].url) == "https://gateway.example/v1/chat/completions"
    assert server.requests[0].headers["authorization"] == "Bearer sk-mine"


def test_built_client_has_no_retries_and_reads_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    model = OpenAIModel("gpt-4o")
    assert model.client.api_key == "sk-from-env"
    assert model.client.max_retries == 0
    assert model.max_tokens_field == "max_completion_tokens"

    # A key in the environment is still used for an OpenAI-compatible server.
    assert OpenAIModel("m", base_url="https://proxy.example/v1").client.api_key == "sk-from-env"
    monkeypatch.delenv("OPENAI_API_KEY")
    local = OpenAIModel("m", base_url="http://localhost:11434/v1")
    assert local.client.api_key == "not-needed"
    assert local.max_tokens_field == "max_tokens"


def test_options_the_model_sets_itself_are_refused() -> None:
    with pytest.raises(TypeError, match="messages, stream"):
        OpenAIModel("gpt-4o", api_key="sk-test", stream=False, messages=[])


def test_an_option_the_sdk_does_not_take_is_refused_where_the_model_is_made() -> None:
    """Before, ``OpenAIModel("gpt-4o", temprature=0.2)`` was built, and every run failed with
    the SDK's bare "create() got an unexpected keyword argument 'temprature'"."""
    with pytest.raises(TypeError, match=r"no option 'temprature' \(did you mean temperature\?\)"):
        OpenAIModel("gpt-4o", api_key="sk-test", temprature=0.2)
    with pytest.raises(TypeError, match=r"extra_body=\{'top_k': \.\.\.\}"):
        OpenAIModel("local", base_url="http://127.0.0.1:1/v1", top_k=3)
    taken = OpenAIModel(
        "gpt-4o",
        api_key="sk-test",
        temperature=0.2,
        extra_body={"top_k": 3},
        extra_headers={"x": "y"},
        timeout=30,
        stream_options=None,
    )
    assert "extra_body" in taken.request_options


def test_missing_sdk_gives_an_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)
    with pytest.raises(ImportError, match=r'pip install "anvia_notebook\[openai\]"'):
        OpenAIModel("gpt-4o", api_key="sk-test")


def test_importing_the_module_does_not_import_the_sdk() -> None:
    code = (
        "import sys, anvia_notebook.models.openai\n"
        "print(sorted(name for name in ('openai', 'httpx2') if name in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


def files_bytes(folder: Path) -> bytes:
    return b"".join(path.read_bytes() for path in folder.iterdir() if path.is_file())


async def test_credentials_given_as_request_options_reach_the_server_and_not_the_trace(
    serve: Callable[..., Server], tmp_path: Path
) -> None:
    """A gateway's key header (Portkey, Azure API Management) or an ``api_key`` in
    ``extra_body`` was kept in the trace's settings: in the run store, Inspect and a saved
    notebook. They go to the server; the trace shows the option, its value hidden."""
    secret = "sk-live-gateway-9f8e7d"
    server = serve(sse("openai_parallel_tool_calls.sse"), sse("openai_cached_prompt.sse"))
    model = OpenAIModel(
        "gpt-4o",
        api_key="sk-test",
        extra_headers={"x-portkey-api-key": secret, "Ocp-Apim-Subscription-Key": secret},
        extra_body={"api_key": secret, "options": {"num_ctx": 4096}},
        max_completion_tokens=300,
    )
    location = tmp_path / "runs.sqlite"
    request = weather_agent(model).prompt("Weather and time in Paris?").store(str(location))
    response = await request.send()
    assert server.requests[0].headers["x-portkey-api-key"] == secret
    assert server.body(0)["api_key"] == secret
    settings = response.trace.turns[0].request.settings
    assert settings["extra_headers"] == {
        "x-portkey-api-key": "***",
        "Ocp-Apim-Subscription-Key": "***",
    }
    assert settings["extra_body"] == {"api_key": "***", "options": {"num_ctx": 4096}}
    assert settings["max_completion_tokens"] == 300
    assert secret not in response.trace.model_dump_json()
    assert secret.encode() not in files_bytes(tmp_path)


async def test_a_run_traces_the_usage_cached_tokens_and_finish_reasons_the_sdk_reports(
    serve: Callable[..., Server],
) -> None:
    server = serve(sse("openai_parallel_tool_calls.sse"), sse("openai_cached_prompt.sse"))
    model = OpenAIModel("gpt-4o", api_key="sk-test", top_p=0.5)
    response = await weather_agent(model).prompt("Weather and time in Paris?").send()
    first, second = response.trace.turns
    assert first.usage.model_dump() == {
        "input_tokens": 143,
        "output_tokens": 52,
        "cached_tokens": 0,
    }
    assert first.response.finish_reason == "tool_calls"
    assert [c.name for c in first.response.tool_calls] == ["get_weather", "get_time"]
    assert second.usage.model_dump() == {
        "input_tokens": 1290,
        "output_tokens": 12,
        "cached_tokens": 1024,
    }
    assert second.response.finish_reason == "stop"
    assert second.response.text == "Paris: 18 °C, 14:05 local time."
    assert first.provider == "openai" and first.model == "gpt-4o"
    assert first.request.settings == {"model": "gpt-4o", "top_p": 0.5}
    # The trace's request is what went over the wire: instructions, then the conversation.
    sent = server.body(1)["messages"]
    assert sent[0] == {"role": "system", "content": second.request.instructions}
    assert len(sent) == 1 + 1 + 1 + 2  # system, user, assistant, one tool message per result
    assert [m.role for m in second.request.messages] == ["user", "assistant", "tool"]
    assert [t["function"]["name"] for t in server.body(1)["tools"]] == [
        t.name for t in second.request.tools
    ]
    assert [c.status for c in response.trace.tool_calls] == ["success", "success"]
    assert response.trace.summary()["cached_tokens"] == 1024


async def test_a_server_that_reports_no_cache_leaves_cached_tokens_unknown(
    serve: Callable[..., Server],
) -> None:
    serve(sse("openai_vllm_reasoning_content.sse"))
    model = OpenAIModel("qwen3", base_url="http://localhost:8000/v1")
    response = await weather_agent(model).prompt("Hi").send()
    [turn] = response.trace.turns
    assert turn.usage.model_dump() == {
        "input_tokens": 12,
        "output_tokens": 11,
        "cached_tokens": None,
    }
    assert turn.response.finish_reason == "stop"


@pytest.mark.parametrize(
    ("fixtures", "text_deltas"),
    [
        (
            ("openai_parallel_tool_calls.sse", "openai_cached_prompt.sse"),
            [(2, "Paris: 18 °C, "), (2, "14:05 local time.")],
        ),
        (("openai_vllm_reasoning_content.sse",), [(1, "4")]),
    ],
    ids=["tools-then-text", "reasoning-then-text"],
)
async def test_text_as_strings_gives_a_run_the_same_events_as_text_delta_objects(
    serve: Callable[..., Server], fixtures: tuple[str, ...], text_deltas: list[Any]
) -> None:
    serve(*(sse(name) for name in fixtures))
    strings = await whole_run(OpenAIModel("gpt-4o", api_key="sk-test"), "Weather in Paris?")
    serve(*(sse(name) for name in fixtures))
    objects = await whole_run(
        TextDeltaObjects(OpenAIModel("gpt-4o", api_key="sk-test")), "Weather in Paris?"
    )

    assert strings == objects
    assert strings["text_deltas"] == text_deltas
    assert strings["output"] == "".join(delta for _, delta in text_deltas)
    assert strings["turns"][-1]["text"] == strings["output"]


async def test_text_pieces_are_plain_strings(serve: Callable[..., Server]) -> None:
    serve(sse("openai_text.sse"))
    model = OpenAIModel("gpt-4o-mini", api_key="sk-test")

    events = await events_of(model, ask())

    # Exactly str (no subclass): what the run loop's per-delta path takes as text.
    assert [type(event) for event in events[:3]] == [str, str, str]


async def test_a_refusal_streams_as_text(serve: Callable[..., Server]) -> None:
    serve(
        chunk_stream(
            {"role": "assistant", "content": None, "refusal": ""},
            {"refusal": "I can't help"},
            {"refusal": " with that."},
        ),
        chunk_stream({"refusal": "No."}),
    )
    model = OpenAIModel("local", base_url="http://localhost:8000/v1")

    events = await events_of(model, ask())

    # (a refusal ends as the Anthropic model says of one: a typed run does not ask again)
    assert events == ["I can't help", " with that.", Finish(reason="content_filter")]
    assert (await model.complete(ask())).text == "No."


def test_reasoning_is_read_from_fields_extras_or_attributes() -> None:
    from types import SimpleNamespace

    from openai.types.chat.chat_completion_chunk import ChoiceDelta

    from anvia_notebook.models.openai import _reasoning_text

    # The SDK's delta type declares no reasoning field: a server's arrives as an extra field.
    assert _reasoning_text(ChoiceDelta.model_validate({"content": "4"})) is None
    assert _reasoning_text(ChoiceDelta.model_validate({"reasoning_content": "Hm"})) == "Hm"
    assert _reasoning_text(ChoiceDelta.model_validate({"reasoning": "", "content": "x"})) is None
    both = ChoiceDelta.model_validate({"reasoning_content": "", "reasoning": "So"})
    assert _reasoning_text(both) == "So"
    # A delta type that declares the field (a newer SDK) keeps it among its fields.

    class Declared(ChoiceDelta):
        reasoning: str | None = None

    assert _reasoning_text(Declared(reasoning="Well")) == "Well"
    # Any other object: its attributes.
    assert _reasoning_text(SimpleNamespace(reasoning="Plain")) == "Plain"
    assert _reasoning_text(SimpleNamespace(reasoning=3, reasoning_content=None)) is None


def test_a_chunk_taken_as_text_only_is_what_feed_makes_of_it() -> None:
    from openai.types.chat import ChatCompletionChunk

    from anvia_notebook.models.openai import _ChunkAssembler

    taken = passed = 0
    for path in sorted(FIXTURES.glob("openai_*.sse")):
        for line in path.read_text().splitlines():
            if not line.startswith("data: {"):
                continue
            chunk = ChatCompletionChunk.model_validate(json.loads(line.removeprefix("data: ")))
            text = _ChunkAssembler().text_only(chunk)
            if text is None:
                passed += 1
                continue
            taken += 1
            assembler = _ChunkAssembler()
            before = vars(assembler).copy()
            assert list(assembler.feed(chunk)) == [text], line
            assert vars(assembler) == before, line  # nothing else to keep from it
    assert taken >= 8 and passed >= 20

    # A piece of text with anything else is not taken: feed keeps or yields the rest.
    def chunk(delta: dict[str, Any], **fields: Any) -> Any:
        choice = {"index": 0, "delta": {"content": "Hi", **delta}, "finish_reason": None}
        body = {
            "id": "c",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "m",
            "choices": [choice],
            **fields,
        }
        return ChatCompletionChunk.model_validate(body)

    usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    two = [{"index": i, "delta": {"content": "Hi"}, "finish_reason": None} for i in (0, 1)]
    other = [{"index": 1, "delta": {"content": "Hi"}, "finish_reason": None}]
    finished = [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": "stop"}]
    call = {"index": 0, "id": "c1", "function": {"name": "f", "arguments": ""}}
    assert _ChunkAssembler().text_only(chunk({})) == "Hi"
    for mixed in (
        chunk({"reasoning_content": "Hm"}),
        chunk({"reasoning": "Hm"}),
        chunk({"refusal": "No"}),
        chunk({"tool_calls": [call]}),
        chunk({}, usage=usage),
        chunk({}, choices=two),
        chunk({}, choices=other),
        chunk({}, choices=finished),
        chunk({"content": ""}),
    ):
        assert _ChunkAssembler().text_only(mixed) is None


def chunks_response(*choices: dict[str, Any] | None) -> Any:
    """An SSE response of one chunk per ``choices[i]`` (its whole choice, ``delta`` as given,
    None for a missing key), as servers other than OpenAI's send them."""
    body = ""
    for choice in choices:
        chunk = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "local"}
        chunk["choices"] = [{"index": 0, "finish_reason": None, **(choice or {})}]
        body += f"data: {json.dumps(chunk)}\n\n"
    body += "data: [DONE]\n\n"
    return http.Response(200, headers={"content-type": "text/event-stream"}, content=body)


def whole(call_id: str | None, city: str, index: int | None = 0) -> dict[str, Any]:
    call: dict[str, Any] = {"type": "function"}
    call["function"] = {"name": "get_weather", "arguments": json.dumps({"city": city})}
    if call_id is not None:
        call["id"] = call_id
    if index is not None:
        call["index"] = index
    return call


@pytest.mark.parametrize(
    "deltas",
    [  # parallel calls all numbered 0 (Ollama, some gateways): in one chunk, or one each
        [{"tool_calls": [whole("call_a", "Paris"), whole("call_b", "Rome")]}],
        [{"tool_calls": [whole("call_a", "Paris")]}, {"tool_calls": [whole("call_b", "Rome")]}],
        # the same id for both, or no id at all: a named call after a whole one is another
        [{"tool_calls": [whole("call_a", "Paris", None), whole("call_a", "Rome", None)]}],
        [{"tool_calls": [whole(None, "Paris", None)]}, {"tool_calls": [whole(None, "Rome", None)]}],
    ],
)
async def test_parallel_calls_a_server_numbers_alike_stay_two_calls(
    serve: Callable[..., Server], deltas: list[dict[str, Any]]
) -> None:
    """They were merged into one call of arguments '{"city": "Paris"}{"city": "Rome"}'."""
    serve(chunk_stream(*deltas, finish="tool_calls"))
    events = await events_of(OpenAIModel("local", base_url="http://localhost:1234/v1"), ask())
    calls = [event for event in events if isinstance(event, ToolCall)]
    assert [json.loads(call.arguments) for call in calls] == [{"city": "Paris"}, {"city": "Rome"}]
    assert len({call.id for call in calls}) == 2


async def test_a_call_streamed_without_index_keeps_its_pieces_together(
    serve: Callable[..., Server],
) -> None:
    """id and name on the first piece only, no index: the later pieces made a nameless call."""
    serve(
        chunk_stream(
            {
                "tool_calls": [
                    {"id": "call_x", "function": {"name": "get_weather", "arguments": ""}}
                ]
            },
            {"tool_calls": [{"function": {"arguments": '{"city":'}}]},
            {"tool_calls": [{"function": {"arguments": ' "Oslo"}'}}]},
            finish="tool_calls",
        )
    )
    events = await events_of(OpenAIModel("local", base_url="http://localhost:1234/v1"), ask())
    assert [event for event in events if isinstance(event, ToolCall)] == [
        ToolCall(id="call_x", name="get_weather", arguments='{"city": "Oslo"}')
    ]


async def test_a_name_told_again_with_each_piece_is_still_one_call(
    serve: Callable[..., Server],
) -> None:
    named = {"index": 0, "id": "call_1", "function": {"name": "get_weather"}}
    serve(
        chunk_stream(
            {"tool_calls": [{**named, "function": {**named["function"], "arguments": '{"city"'}}]},
            {
                "tool_calls": [
                    {**named, "function": {**named["function"], "arguments": ': "Oslo"}'}}
                ]
            },
            {"tool_calls": [{**named, "function": {**named["function"], "arguments": ""}}]},
            finish="tool_calls",
        )
    )
    events = await events_of(OpenAIModel("local", base_url="http://localhost:1234/v1"), ask())
    assert [event for event in events if isinstance(event, ToolCall)] == [
        ToolCall(id="call_1", name="get_weather", arguments='{"city": "Oslo"}')
    ]


async def test_a_name_split_over_pieces_is_joined(serve: Callable[..., Server]) -> None:
    """The call was named by its first piece only ("get_"): a tool nobody has."""
    piece = {"index": 0, "id": "call_1", "function": {"name": "get_", "arguments": ""}}
    serve(
        chunk_stream(
            {"tool_calls": [piece]},
            {"tool_calls": [{"index": 0, "function": {"name": "weather"}}]},
            {"tool_calls": [{"index": 0, "function": {"arguments": "{"}}]},
            {"tool_calls": [{"index": 0, "function": {"arguments": '"city": "Oslo"}'}}]},
            finish="tool_calls",
        )
    )
    events = await events_of(OpenAIModel("local", base_url="http://localhost:1234/v1"), ask())
    assert [event for event in events if isinstance(event, ToolCall)] == [
        ToolCall(id="call_1", name="get_weather", arguments='{"city": "Oslo"}')
    ]


async def test_arguments_sent_as_a_json_object_are_taken_as_its_text(
    serve: Callable[..., Server],
) -> None:
    """(llama.cpp and TGI have sent them so): a pydantic error about ToolCallDelta before."""
    call = {
        "index": 0,
        "id": "c1",
        "function": {"name": "get_weather", "arguments": {"city": "Paris"}},
    }
    serve(chunk_stream({"tool_calls": [call]}, finish="tool_calls"))
    events = await events_of(OpenAIModel("local", base_url="http://localhost:1234/v1"), ask())
    assert [event for event in events if isinstance(event, ToolCall)] == [
        ToolCall(id="c1", name="get_weather", arguments='{"city":"Paris"}')
    ]


@pytest.mark.parametrize("last", [{"delta": None}, {}])
async def test_a_chunk_without_a_delta_is_read_as_an_empty_one(
    serve: Callable[..., Server], last: dict[str, Any]
) -> None:
    """(Azure's content-filter and finish chunks): an AttributeError on None before."""
    serve(chunks_response({"delta": {"content": "Hello"}}, {**last, "finish_reason": "stop"}))
    events = await events_of(OpenAIModel("local", base_url="http://localhost:1234/v1"), ask())
    assert events[-1] == Finish(reason="stop")
    assert "".join(e for e in events if isinstance(e, str)) == "Hello"


async def test_content_given_as_parts_is_text_and_reasoning(serve: Callable[..., Server]) -> None:
    """(Mistral's reasoning models): "an unknown completion event" before."""
    think = [{"type": "thinking", "thinking": [{"type": "text", "text": "Let me think"}]}]
    serve(
        chunks_response(
            {"delta": {"content": think}},
            {"delta": {"content": [{"type": "text", "text": "Hello"}]}},
            {"delta": {"content": ""}, "finish_reason": "stop"},
        )
    )
    events = await events_of(OpenAIModel("local", base_url="http://localhost:1234/v1"), ask())
    assert [e for e in events if isinstance(e, ReasoningDelta)] == [
        ReasoningDelta(delta="Let me think")
    ]
    assert "".join(e for e in events if isinstance(e, str)) == "Hello"


async def test_reasoning_goes_back_once_the_server_refuses_a_request_without_it(
    serve: Callable[..., Server],
) -> None:
    """DeepSeek's thinking mode refuses a history whose tool-calling assistant message comes
    without its ``reasoning_content``: the request is sent again with each assistant message's
    reasoning, and the model sends it from then on. Until a server asks, it is not sent (most
    servers refuse the field)."""
    missing = http.Response(
        400,
        json={
            "error": {
                "message": "Missing `reasoning_content` field in the assistant message at "
                "message index 2.",
                "type": "invalid_request_error",
            }
        },
    )
    server = serve(
        chunk_stream(
            {"role": "assistant", "reasoning_content": "I should look"},
            {"reasoning_content": " it up."},
            {"tool_calls": [tool_fragment(0, "call_1", "get_weather", '{"city":"Paris"}')]},
            finish="tool_calls",
        ),
        missing,
        chunk_stream({"content": "18 °C."}),
        chunk_stream({"content": "Warm too."}),
    )
    model = OpenAIModel("deepseek-v4-flash", base_url="http://deepseek:8000/v1", api_key="k")
    agent = weather_agent(model)

    first = await agent.prompt("Weather in Paris?").send()
    assert first.output == "18 °C." and model.sends_reasoning is True
    refused, sent = server.body(1)["messages"], server.body(2)["messages"]
    assert [m for m in refused if "reasoning_content" in m] == []
    [assistant] = [m for m in sent if m["role"] == "assistant"]
    assert assistant["reasoning_content"] == "I should look it up."
    assert assistant["tool_calls"][0]["function"]["arguments"] == '{"city":"Paris"}'

    await agent.prompt([*first.messages, Message.user("And Rome?")]).send()
    later = [m for m in server.body(3)["messages"] if m["role"] == "assistant"]
    assert [m["reasoning_content"] for m in later] == ["I should look it up.", ""]

    other = serve(chunk_stream({"content": "Sunny."}))
    fresh = OpenAIModel("gpt-4o-mini", api_key="sk-test")  # (another server: not asked)
    await weather_agent(fresh).prompt([*first.messages, Message.user("Rome?")]).send()
    assert all("reasoning_content" not in m for m in other.body()["messages"])


@pytest.mark.parametrize(
    "said",
    [
        "The `reasoning_content` in the thinking mode must be passed back to the API.",
        "thinking is enabled but reasoning_content is missing in assistant tool call message at "
        "index 2",
        "messages[2]: assistant message with tool_calls must include reasoning_content.",
    ],
)
async def test_each_server_s_way_of_asking_for_the_reasoning_is_heard(
    serve: Callable[..., Server], said: str
) -> None:
    """DeepSeek V4, Moonshot's Kimi and LiteLLM say it in their own words."""
    missing = http.Response(400, json={"error": {"message": said, "type": "invalid_request"}})
    server = serve(missing, chunk_stream({"content": "18 °C."}))
    model = OpenAIModel("kimi-k2.5", base_url="http://localhost:8000/v1", api_key="k")
    await events_of(model, ask())
    assert model.sends_reasoning is True and len(server.requests) == 2


async def test_a_400_that_repeats_a_conversation_naming_reasoning_content_is_raised(
    serve: Callable[..., Server],
) -> None:
    """vLLM's validation errors repeat the whole request: a conversation that names
    ``reasoning_content`` (a question about it, a tool's result reading code) made any such 400,
    here for another field, turn on sending the reasoning for good (and the request was sent
    again). Servers that do not know the field then refused every later request."""
    asked = "Why does my server say reasoning_content is not allowed?"
    said = (
        "[{'type': 'value_error', 'loc': ('body',), 'msg': 'Value error, max_tokens must be at "
        f"least 1, got -1.', 'input': {{'model': 'qwen', 'messages': [{{'role': 'user', "
        f"'content': '{asked}'}}, {{'role': 'assistant', 'content': 'See reasoning_content: "
        "missing'}], 'max_tokens': -1}}]"
    )
    refused = http.Response(400, json={"object": "error", "message": said, "code": 400})
    server = serve(refused, refused)
    model = OpenAIModel("qwen", base_url="http://localhost:8000/v1")
    with pytest.raises(ModelError, match="max_tokens must be at least 1"):
        await events_of(model, ask(asked))
    assert len(server.requests) == 1 and model.sends_reasoning is False


async def test_arguments_that_are_not_a_json_object_go_back_as_an_empty_object(
    serve: Callable[..., Server],
) -> None:
    """The model is told its arguments were invalid; the call itself goes back with ``{}``
    (vLLM and other servers that read the history refuse arguments that are not JSON)."""
    server = serve(
        chunk_stream(
            {"tool_calls": [tool_fragment(0, "call_1", "get_weather", "{'city': 'Paris'}")]},
            {"tool_calls": [tool_fragment(1, "call_2", "get_weather", '["Paris"]')]},
            {"tool_calls": [tool_fragment(2, "call_3", "get_weather", '{"city": NaN}')]},
            finish="tool_calls",
        ),
        chunk_stream({"content": "Sorry."}),
    )
    model = OpenAIModel("local", base_url="http://localhost:1234/v1")

    await weather_agent(model).prompt("Weather in Paris?").send()

    messages = server.body(1)["messages"]
    [assistant] = [m for m in messages if m["role"] == "assistant"]
    assert [c["function"]["arguments"] for c in assistant["tool_calls"]] == ["{}", "{}", "{}"]
    told = [m["content"] for m in messages if m["role"] == "tool"]
    assert all("Invalid arguments for tool get_weather" in text for text in told), told


def tool_fragment(index: int, call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {
        "index": index,
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    }


async def test_a_connection_lost_after_the_finish_reason_keeps_the_whole_answer(
    serve: Callable[..., Server],
) -> None:
    """Lost once the answer's finish reason came: the answer stands (only the usage chunk that
    follows it is lost); lost before it, the answer is cut short and the error says so."""
    serve(recorded.cut("openai_text.sse", '"choices":[],"usage"'))
    model = OpenAIModel("gpt-4o-mini", api_key="sk-test")

    events = await events_of(model, ask())

    assert events == ["Hello", "!", " How can I help?", Finish(reason="stop")]

    serve(recorded.cut("openai_text.sse", '"finish_reason":"stop"'))
    model = OpenAIModel("gpt-4o-mini", api_key="sk-test")  # (a client of that server)
    got: list[Any] = []
    with pytest.raises(ModelError, match="connection") as caught:
        await drain(model, ask(), into=got)
    assert got == ["Hello", "!", " How can I help?"] and caught.value.retryable is True

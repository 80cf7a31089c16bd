"""AnthropicModel against recorded Messages API streams: no network, the SDK's real HTTP path."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import httpx
import pytest
from anthropic import _base_client as anthropic_base_client

from anvia_notebook.messages import Message, MessageToolCall, ToolResultPart, Usage
from anvia_notebook.models.anthropic import AnthropicModel, to_anthropic_messages
from anvia_notebook.models.base import (
    CompletionRequest,
    Finish,
    ModelError,
    ProviderData,
    ReasoningDelta,
    ToolCall,
    ToolCallDelta,
    UsageUpdate,
)

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
#: The HTTP library the installed SDK is built on (httpx2 for the 2.x SDK, httpx before).
http: Any = getattr(anthropic_base_client, "httpx2", None) or httpx


recorded = Recorded(http)
sse = recorded.sse
error_response = recorded.error_response


def api_key_sent(request: Any) -> str:
    """The key a request carries (``x-api-key`` before the 2.x SDK, a bearer token since)."""
    if "x-api-key" in request.headers:
        return str(request.headers["x-api-key"])
    return str(request.headers["authorization"]).removeprefix("Bearer ")


@pytest.fixture
def serve(monkeypatch: pytest.MonkeyPatch) -> Callable[..., Server]:
    """Routes the clients AnthropicModel builds itself to a recorded server."""

    return recorded.serving(monkeypatch, anthropic, "AsyncAnthropic")


async def test_text_is_streamed_with_usage_and_finish(serve: Callable[..., Server]) -> None:
    server = serve(sse("anthropic_text.sse"))
    model = AnthropicModel("claude-sonnet-4-6", api_key="sk-ant-test")

    events = await events_of(model, ask("Hi", instructions="Be brief."))

    assert events == [
        UsageUpdate(usage=Usage(input_tokens=25, output_tokens=1), cached_tokens=0),
        "Hello",
        "! How can I help you today?",
        UsageUpdate(usage=Usage(input_tokens=0, output_tokens=11), cached_tokens=0),
        Finish(reason="stop"),
    ]
    (request,) = server.requests
    assert str(request.url) == "https://api.anthropic.com/v1/messages"
    assert api_key_sent(request) == "sk-ant-test"
    assert "anthropic-version" in request.headers
    assert server.body() == {
        "model": "claude-sonnet-4-6",
        "max_tokens": 4096,
        "system": "Be brief.",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}],
        "stream": True,
    }
    assert model.name == "claude-sonnet-4-6"


async def test_history_tools_and_options_are_mapped(serve: Callable[..., Server]) -> None:
    server = serve(sse("anthropic_text.sse"))
    model = AnthropicModel("claude-sonnet-4-6", api_key="sk-ant-test", stop_sequences=["END"])
    history = [
        Message.user("Weather and time in Paris?"),
        Message.assistant(
            "I'll check both.",
            [
                MessageToolCall(id="toolu_1", name="get_weather", arguments='{"city": "Paris"}'),
                MessageToolCall(id="toolu_2", name="get_time", arguments='{"tz": "Europe/'),
            ],
            reasoning="Two tools at once.",
        ),
        Message.tool(
            [
                ToolResultPart(tool_call_id="toolu_1", tool_name="get_weather", content="18C"),
                ToolResultPart(
                    tool_call_id="toolu_2",
                    tool_name="get_time",
                    content="Invalid JSON arguments",
                    is_error=True,
                ),
            ]
        ),
        Message.user("Also, is it windy?"),
    ]
    request = CompletionRequest(
        instructions="You are a weather bot.",
        messages=history,
        tools=[WEATHER, TIME],
        max_tokens=1024,
        tool_choice="auto",
    )

    await events_of(model, request)

    assert server.body() == {
        "model": "claude-sonnet-4-6",
        "max_tokens": 1024,
        "system": "You are a weather bot.",
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Weather and time in Paris?"}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "I'll check both."},
                    {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": "get_weather",
                        "input": {"city": "Paris"},
                    },
                    # Arguments that were not a JSON object go back as an empty input.
                    {"type": "tool_use", "id": "toolu_2", "name": "get_time", "input": {}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_1",
                        "content": "18C",
                        "is_error": False,
                    },
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_2",
                        "content": "Invalid JSON arguments",
                        "is_error": True,
                    },
                    {"type": "text", "text": "Also, is it windy?"},
                ],
            },
        ],
        "tools": [
            {
                "name": "get_weather",
                "description": "The current weather in a city.",
                "input_schema": WEATHER.parameters,
            },
            {
                "name": "get_time",
                "description": "The local time in a time zone.",
                "input_schema": TIME.parameters,
            },
        ],
        "tool_choice": {"type": "auto"},
        "stop_sequences": ["END"],
        "stream": True,
    }


async def test_temperature_is_left_out_where_the_api_has_none(
    serve: Callable[..., Server],
) -> None:
    server = serve(sse("anthropic_text.sse"))
    model = AnthropicModel("claude-sonnet-4-6", api_key="sk-ant-test")

    if model._sends_temperature:  # an SDK from before 2.x (the lowest the package allows)
        await events_of(model, ask(temperature=0.2))
        assert server.body()["temperature"] == 0.2
        return
    with pytest.warns(UserWarning, match="temperature is not sent"):
        await events_of(model, ask(temperature=0.2))

    assert "temperature" not in server.body()


async def test_signed_thinking_goes_back_with_its_tool_calls(
    serve: Callable[..., Server],
) -> None:
    server = serve(sse("anthropic_thinking_parallel_tools.sse"), sse("anthropic_text.sse"))
    model = AnthropicModel(
        "claude-sonnet-4-6", api_key="sk-ant-test", thinking={"type": "adaptive"}
    )
    question = Message.user("Weather and time in Paris?")

    first = await model.complete(CompletionRequest(messages=[question], tools=[WEATHER, TIME]))
    results = Message.tool(
        [
            ToolResultPart(tool_call_id=call.id, tool_name=call.name, content="ok")
            for call in first.tool_calls
        ]
    )
    history = [question, first.to_message(), results]
    await model.complete(CompletionRequest(messages=history, tools=[WEATHER, TIME]))

    assistant = server.body(1)["messages"][1]
    assert assistant["role"] == "assistant"
    assert [block["type"] for block in assistant["content"]] == [
        "thinking",
        "text",
        "tool_use",
        "tool_use",
    ]
    assert assistant["content"][0] == {
        "type": "thinking",
        "thinking": first.reasoning,
        "signature": (
            "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds7f2e4kxmhbh0zLcLBy4HHFEC2vB"
            "TXQRZqMGOM3pTCIlBHG8sEl2GQNoOvQzKQ=="
        ),
    }
    # The blocks travel in the message itself: a history saved as JSON and loaded keeps them.
    restored = [Message.model_validate_json(m.model_dump_json()) for m in history]
    assert to_anthropic_messages(restored)[1]["content"][0] == assistant["content"][0]
    # A message without them (written by hand, or from another provider) sends none.
    bare = history[1].model_copy(update={"provider_data": None})
    assert [
        block["type"] for block in to_anthropic_messages([question, bare, results])[1]["content"]
    ] == [
        "text",
        "tool_use",
        "tool_use",
    ]


async def test_interleaved_thinking_goes_back_where_it_came_and_a_missing_signature_is_empty(
    serve: Callable[..., Server],
) -> None:
    """With interleaved thinking, a turn streams thinking between its tool calls; it went back
    with all the thinking first (the API refuses a tool-use turn's blocks moved). A gateway's
    thinking block without a signature failed the run with a TypeError."""
    server = serve(sse("anthropic_interleaved_thinking.sse"), sse("anthropic_text.sse"))
    model = AnthropicModel(
        "claude-sonnet-4-6", api_key="sk-ant-test", thinking={"type": "adaptive"}
    )
    question = Message.user("Weather in Paris and Rome?")
    first = await model.complete(CompletionRequest(messages=[question], tools=[WEATHER]))
    results = Message.tool(
        [
            ToolResultPart(tool_call_id=call.id, tool_name=call.name, content="sun")
            for call in first.tool_calls
        ]
    )
    await model.complete(
        CompletionRequest(messages=[question, first.to_message(), results], tools=[WEATHER])
    )
    sent = server.body(1)["messages"][1]["content"]
    assert [block["type"] for block in sent] == [
        "redacted_thinking",
        "thinking",
        "text",
        "tool_use",
        "thinking",
        "tool_use",
    ]
    assert sent[1] == {
        "type": "thinking",
        "thinking": "Paris first.",
        "signature": "EqQBCgIYAhIMSig1",
    }
    assert sent[4] == {"type": "thinking", "thinking": "Now Rome.", "signature": "EqQBCgIYAhIMSig2"}
    assert [block.get("id") for block in sent if block["type"] == "tool_use"] == [
        "toolu_01Paris",
        "toolu_01Rome",
    ]


@pytest.mark.parametrize(
    ("tool_choice", "sent"),
    [
        ("none", {"type": "none"}),
        ("required", {"type": "any"}),
        ("any", {"type": "any"}),
        ("get_weather", {"type": "tool", "name": "get_weather"}),
        (
            {"type": "function", "function": {"name": "get_time"}},
            {"type": "tool", "name": "get_time"},
        ),
        ({"type": "tool", "name": "get_time"}, {"type": "tool", "name": "get_time"}),
    ],
)
async def test_tool_choice(serve: Callable[..., Server], tool_choice: Any, sent: Any) -> None:
    server = serve(sse("anthropic_text.sse"))
    model = AnthropicModel("claude-sonnet-4-6", api_key="sk-ant-test")

    await events_of(model, ask(tools=[WEATHER, TIME], tool_choice=tool_choice))

    assert server.body()["tool_choice"] == sent


async def test_a_server_tool_given_as_an_option_is_sent_with_the_agents_tools(
    serve: Callable[..., Server],
) -> None:
    """Web search given as the model's ``tools`` was dropped once the agent had tools."""
    server = serve(sse("anthropic_text.sse"), sse("anthropic_text.sse"))
    search = {"type": "web_search_20250305", "name": "web_search", "max_uses": 3}
    model = AnthropicModel("claude-sonnet-4-6", api_key="sk-ant-test", tools=[search])

    await events_of(model, ask(tools=[WEATHER]))
    await events_of(model, ask())

    assert [tool["name"] for tool in server.body(0)["tools"]] == ["web_search", "get_weather"]
    assert server.body(1)["tools"] == [search]


async def test_thinking_and_parallel_tool_calls(serve: Callable[..., Server]) -> None:
    serve(sse("anthropic_thinking_parallel_tools.sse"))
    model = AnthropicModel(
        "claude-sonnet-4-6",
        api_key="sk-ant-test",
        thinking={"type": "adaptive"},
    )

    events = await events_of(model, ask("Weather and time in Paris?", tools=[WEATHER, TIME]))

    weather_id, time_id = "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "toolu_01Lq8Wz5Mn3Vb7Xc2Rt9Ky4d"
    assert events == [
        UsageUpdate(usage=Usage(input_tokens=1636, output_tokens=4), cached_tokens=1024),
        ReasoningDelta(delta="The user asks for the weather and the time"),
        ReasoningDelta(delta=" in Paris; both tools can run at once."),
        "I'll check both.",
        ToolCallDelta(id=weather_id, name="get_weather"),
        ToolCallDelta(id=weather_id, arguments_delta='{"city": "Pa'),
        ToolCallDelta(id=weather_id, arguments_delta='ris"}'),
        ToolCallDelta(id=time_id, name="get_time"),
        ToolCallDelta(id=time_id, arguments_delta='{"tz": "Europe/'),
        ToolCallDelta(id=time_id, arguments_delta='Paris"}'),
        UsageUpdate(usage=Usage(input_tokens=0, output_tokens=127), cached_tokens=0),
        # (the whole calls once the stop reason says none was cut)
        ToolCall(id=weather_id, name="get_weather", arguments='{"city": "Paris"}'),
        ToolCall(id=time_id, name="get_time", arguments='{"tz": "Europe/Paris"}'),
        ProviderData(
            data={
                "anthropic_thinking": [
                    {
                        "type": "thinking",
                        "thinking": "The user asks for the weather and the time in Paris; "
                        "both tools can run at once.",
                        "signature": (
                            "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds7f2e4kxmhbh0zLc"
                            "LBy4HHFEC2vBTXQRZqMGOM3pTCIlBHG8sEl2GQNoOvQzKQ=="
                        ),
                    }
                ],
                "anthropic_block_order": ["thinking", "text", "tool_use", "tool_use"],
            }
        ),
        Finish(reason="tool_calls"),
    ]


async def test_complete_folds_the_stream(serve: Callable[..., Server]) -> None:
    server = serve(sse("anthropic_thinking_parallel_tools.sse"))
    model = AnthropicModel(
        "claude-sonnet-4-6",
        api_key="sk-ant-test",
        thinking={"type": "adaptive"},
    )

    response = await model.complete(ask(tools=[WEATHER, TIME]))

    assert response.reasoning == (
        "The user asks for the weather and the time in Paris; both tools can run at once."
    )
    assert response.text == "I'll check both."
    assert [call.to_message_call().parsed_arguments() for call in response.tool_calls] == [
        {"city": "Paris"},
        {"tz": "Europe/Paris"},
    ]
    # The running totals of message_start and message_delta, counted once, cache reads included.
    assert response.usage == Usage(input_tokens=1636, output_tokens=131)
    assert response.finish_reason == "tool_calls"
    assert server.body()["thinking"] == {"type": "adaptive"}


async def test_empty_and_invalid_tool_input(serve: Callable[..., Server]) -> None:
    """A tool call with no input is ``{}``; an answer the length limit cut in the middle of a
    call's input is refused at its end: the calls streamed so far never run, and none is told
    as a whole call (the run showed a call that never ran)."""
    serve(sse("anthropic_tool_no_input.sse"))
    model = AnthropicModel("claude-haiku-4-5", api_key="sk-ant-test")

    events = []
    with pytest.raises(ModelError) as refused:
        async for event in model.stream(ask(tools=[WEATHER])):
            events.append(event)

    assert [event for event in events if isinstance(event, ToolCall)] == []
    streamed = [e for e in events if isinstance(e, ToolCallDelta)]
    assert [(e.id, e.name) for e in streamed if e.name] == [
        ("toolu_01Bn5Xs2Qw8Er4Ty7Ui1Op3a", "list_tickets"),
        ("toolu_01Zx9Cv3Bn7Ml2Kj5Hg8Fd4s", "search"),
    ]
    assert str(refused.value) == (
        'Anthropic tool-call stream ended with stop_reason "max_tokens"; provider output may be '
        "incomplete."
    )
    assert not refused.value.retryable


async def test_arguments_that_are_not_json_go_back_as_an_empty_object(
    serve: Callable[..., Server],
) -> None:
    """A call whose input held NaN (an Anthropic-compatible server's) is told it was invalid;
    sent back as it came, the SDK could not send the next request ("Out of range float values
    are not JSON compliant") and the run failed."""
    text = (FIXTURES / "anthropic_thinking_parallel_tools.sse").read_text()
    text = text.replace('{\\"city\\": \\"Pa', '{\\"city\\": NaN').replace('"ris\\"', '"')
    server = serve(
        recorded.http.Response(
            200, headers={"content-type": "text/event-stream"}, content=text.encode()
        ),
        sse("anthropic_text.sse"),
    )
    model = AnthropicModel("claude-sonnet-4-6", api_key="sk-ant-test")

    response = await weather_agent(model).prompt("Weather and time in Paris?").send()

    assert response.output
    [weather, _] = [b for b in server.body(1)["messages"][1]["content"] if b["type"] == "tool_use"]
    assert weather["input"] == {}
    [told, _] = server.body(1)["messages"][2]["content"]
    assert told["is_error"] and "NaN" in told["content"]


@pytest.mark.parametrize(
    ("status", "fixture", "retryable"),
    [
        (429, "anthropic_error_429.json", True),
        (500, "anthropic_error_500.json", True),
        (529, "anthropic_error_529.json", True),
        (400, "anthropic_error_400.json", False),
    ],
)
async def test_http_errors_keep_their_status(
    serve: Callable[..., Server], status: int, fixture: str, retryable: bool
) -> None:
    server = serve(error_response(status, fixture))
    model = AnthropicModel("claude-sonnet-4-6", api_key="sk-ant-test")

    with pytest.raises(ModelError) as caught:
        await events_of(model, ask())

    error = caught.value
    assert error.status_code == status
    assert error.retryable is retryable
    assert isinstance(error.__cause__, anthropic.APIStatusError)
    message = json.loads((FIXTURES / fixture).read_text())["error"]["message"]
    assert str(error) == f"Anthropic API error {status}: {message}"
    assert len(server.requests) == 1, "the SDK must not retry: the run loop does"


async def test_an_error_event_inside_the_stream(serve: Callable[..., Server]) -> None:
    serve(sse("anthropic_overloaded_midstream.sse"))
    model = AnthropicModel("claude-sonnet-4-6", api_key="sk-ant-test")
    seen: list[Any] = []

    with pytest.raises(ModelError, match="Overloaded") as caught:
        await drain(model, ask(), into=seen)

    assert seen == [
        UsageUpdate(usage=Usage(input_tokens=25, output_tokens=1), cached_tokens=0),
        "Let me",
    ]
    # The stream answered 200; the error's type says what the status would have been.
    assert caught.value.status_code == 529
    assert caught.value.retryable is True


@pytest.mark.parametrize(
    "failure",
    [http.ConnectError("connection refused"), http.ReadTimeout("timed out")],
    ids=["connect", "timeout"],
)
async def test_connection_errors_are_retryable(
    serve: Callable[..., Server], failure: Exception
) -> None:
    server = serve(failure)
    model = AnthropicModel("claude-sonnet-4-6", api_key="sk-ant-test")

    with pytest.raises(ModelError) as caught:
        await events_of(model, ask())

    assert caught.value.status_code is None
    assert caught.value.retryable is True
    assert isinstance(caught.value.__cause__, anthropic.APIConnectionError)
    assert len(server.requests) == 1


async def test_a_connection_lost_inside_the_stream_is_retryable(
    serve: Callable[..., Server],
) -> None:
    head = (FIXTURES / "anthropic_text.sse").read_bytes().split(b"event: content_block_stop")[0]

    async def dropped() -> Any:
        yield head
        raise http.RemoteProtocolError("peer closed connection without sending complete message")

    serve(http.Response(200, headers={"content-type": "text/event-stream"}, content=dropped()))
    model = AnthropicModel("claude-sonnet-4-6", api_key="sk-ant-test")
    seen: list[Any] = []

    with pytest.raises(ModelError, match="peer closed connection") as caught:
        await drain(model, ask(), into=seen)

    assert "Hello" in seen
    assert caught.value.status_code is None
    assert caught.value.retryable is True


async def test_a_given_client_is_used_as_is() -> None:
    server = Server(sse("anthropic_text.sse"))
    client = anthropic.AsyncAnthropic(
        api_key="sk-ant-mine",
        base_url="https://gateway.example",
        max_retries=5,
        http_client=http.AsyncClient(transport=http.MockTransport(server)),
    )
    model = AnthropicModel("claude-sonnet-4-6", client=client, max_tokens=100)

    events = await events_of(model, ask())

    assert model.client is client
    assert client.max_retries == 5
    assert events[-1] == Finish(reason="stop")
    assert str(server.requests[0].url) == "https://gateway.example/v1/messages"
    assert api_key_sent(server.requests[0]) == "sk-ant-mine"
    assert server.body()["max_tokens"] == 100


async def test_the_key_comes_from_the_environment(
    serve: Callable[..., Server], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-from-env")
    server = serve(sse("anthropic_text.sse"))
    model = AnthropicModel("claude-sonnet-4-6")

    await events_of(model, ask())

    assert model.client.max_retries == 0
    assert api_key_sent(server.requests[0]) == "sk-ant-from-env"


def test_options_the_model_sets_itself_are_refused() -> None:
    with pytest.raises(TypeError, match="messages, stream"):
        AnthropicModel("claude-sonnet-4-6", api_key="sk-ant-test", stream=False, messages=[])


def test_an_option_the_sdk_does_not_take_is_refused_where_the_model_is_made() -> None:
    """Before, ``AnthropicModel(..., stop_sequence=[...])`` was built, and every run failed
    with the SDK's bare "create() got an unexpected keyword argument"."""
    with pytest.raises(TypeError, match=r"no option 'stop_sequence' \(did you mean stop_seq"):
        AnthropicModel("claude-sonnet-4-6", api_key="sk-ant-test", stop_sequence=["END"])
    with pytest.raises(TypeError, match=r"extra_body=\{'betas_x': \.\.\.\}"):
        AnthropicModel("claude-sonnet-4-6", api_key="sk-ant-test", betas_x=1)
    taken = AnthropicModel(
        "claude-sonnet-4-6",
        api_key="sk-ant-test",
        metadata={"user_id": "u"},
        output_config={},
        extra_body={"anything": 1},
        timeout=30,
    )
    assert set(taken.request_options) == {"metadata", "output_config", "extra_body", "timeout"}


def test_missing_sdk_gives_an_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "anthropic", None)
    with pytest.raises(ImportError, match=r'pip install "anvia_notebook\[anthropic\]"'):
        AnthropicModel("claude-sonnet-4-6", api_key="sk-ant-test")


def test_importing_the_module_does_not_import_the_sdk() -> None:
    code = (
        "import sys, anvia_notebook.models.anthropic\n"
        "print(sorted(name for name in ('anthropic', 'httpx2') if name in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


async def test_a_run_traces_the_usage_cached_tokens_and_stop_reasons_the_sdk_reports(
    serve: Callable[..., Server],
) -> None:
    server = serve(sse("anthropic_thinking_parallel_tools.sse"), sse("anthropic_text.sse"))
    model = AnthropicModel("claude-sonnet-4-6", api_key="sk-ant-test")
    response = await weather_agent(model).prompt("Weather and time in Paris?").send()
    first, second = response.trace.turns
    # Input tokens are the API's input, cache-creation and cache-read tokens together.
    assert first.usage.model_dump() == {
        "input_tokens": 1636,
        "output_tokens": 131,
        "cached_tokens": 1024,
    }
    assert first.response.finish_reason == "tool_calls"  # the API's "tool_use"
    assert first.response.reasoning.startswith("The user asks for the weather")
    assert second.usage.model_dump() == {
        "input_tokens": 25,
        "output_tokens": 12,
        "cached_tokens": 0,
    }
    assert second.response.finish_reason == "stop"  # the API's "end_turn"
    assert first.provider == "anthropic"
    assert server.body(1)["system"] == second.request.instructions
    assert [t["name"] for t in server.body(1)["tools"]] == [t.name for t in second.request.tools]
    assert response.trace.summary()["input_tokens"] == 1661


async def test_a_stream_error_is_on_the_traced_turn(serve: Callable[..., Server]) -> None:
    serve(sse("anthropic_overloaded_midstream.sse"))
    model = AnthropicModel("claude-sonnet-4-6", api_key="sk-ant-test")
    request = weather_agent(model).prompt("Hi")
    with pytest.raises(ModelError):
        await request.send()
    [turn] = request.trace.turns
    assert turn.error is not None and "ModelError" in turn.error
    assert turn.duration_ms is not None
    assert request.trace.status == "error"


async def test_text_as_strings_gives_a_run_the_same_events_as_text_delta_objects(
    serve: Callable[..., Server],
) -> None:
    fixtures = ("anthropic_thinking_parallel_tools.sse", "anthropic_text.sse")
    serve(*(sse(name) for name in fixtures))
    model = AnthropicModel("claude-sonnet-4-6", api_key="sk-ant-test")
    strings = await whole_run(model, "Weather and time in Paris?")
    serve(*(sse(name) for name in fixtures))
    model = AnthropicModel("claude-sonnet-4-6", api_key="sk-ant-test")
    objects = await whole_run(TextDeltaObjects(model), "Weather and time in Paris?")

    assert strings == objects
    assert strings["text_deltas"] == [
        (1, "I'll check both."),
        (2, "Hello"),
        (2, "! How can I help you today?"),
    ]
    assert strings["output"] == "Hello! How can I help you today?"
    assert [turn["text"] for turn in strings["turns"]] == ["I'll check both.", strings["output"]]
    assert strings["turns"][0]["reasoning"].startswith("The user asks for the weather")


async def test_text_pieces_are_plain_strings(serve: Callable[..., Server]) -> None:
    serve(sse("anthropic_text.sse"))
    model = AnthropicModel("claude-sonnet-4-6", api_key="sk-ant-test")

    events = await events_of(model, ask())

    # Exactly str (no subclass): what the run loop's per-delta path takes as text.
    assert [type(event) for event in events if isinstance(event, str)] == [str, str]


async def test_tool_calls_a_server_sent_without_an_id_get_one(
    serve: Callable[..., Server],
) -> None:
    """An empty ``tool_use`` id was kept (and a second one made ``_2``): the API refuses both
    when they are sent back with the results."""
    text = (FIXTURES / "anthropic_tool_no_input.sse").read_text()
    text = text.replace('"toolu_01Bn5Xs2Qw8Er4Ty7Ui1Op3a"', '""').replace(
        '"toolu_01Zx9Cv3Bn7Ml2Kj5Hg8Fd4s"', '""'
    )
    serve(
        recorded.http.Response(
            200, headers={"content-type": "text/event-stream"}, content=text.encode()
        )
    )
    model = AnthropicModel("claude-haiku-4-5", api_key="sk-ant-test")
    events: list[Any] = []
    with pytest.raises(ModelError):  # (the fixture's answer is cut by max_tokens)
        async for event in model.stream(ask(tools=[WEATHER])):
            events.append(event)
    ids = list(dict.fromkeys(e.id for e in events if isinstance(e, ToolCallDelta)))
    assert len(ids) == 2 and len(set(ids)) == 2
    assert all(re.fullmatch(r"toolu_[0-9a-f]{24}", call_id) for call_id in ids)


async def test_a_connection_lost_after_the_stop_reason_keeps_the_whole_answer(
    serve: Callable[..., Server],
) -> None:
    """Lost once ``message_delta`` gave the stop reason (before ``message_stop``): the answer
    and its usage stand; lost before it, the answer is cut short and the error says so."""
    serve(recorded.cut("anthropic_text.sse", "event: message_stop"))
    model = AnthropicModel("claude-sonnet-4-6", api_key="sk-ant-test")

    events = await events_of(model, ask())

    assert events[-2:] == [
        UsageUpdate(usage=Usage(input_tokens=0, output_tokens=11), cached_tokens=0),
        Finish(reason="stop"),
    ]
    assert events[1:3] == ["Hello", "! How can I help you today?"]

    serve(recorded.cut("anthropic_text.sse", "event: message_delta"))
    model = AnthropicModel("claude-sonnet-4-6", api_key="sk-ant-test")  # (a client of it)
    with pytest.raises(ModelError, match="connection"):
        await events_of(model, ask())

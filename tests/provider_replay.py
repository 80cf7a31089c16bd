"""Replaying recorded provider HTTP through an SDK's own transport: shared by the provider tests.

Each SDK is built on its own HTTP library (``httpx2`` for openai 3.x and anthropic 2.x, ``httpx``
before), so the helpers take that module; ``Recorded`` binds them to one SDK.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from anvia_notebook.messages import Message
from anvia_notebook.models.base import (
    CompletionModel,
    CompletionRequest,
    TextDelta,
    ToolDefinition,
)

FIXTURES = Path(__file__).parent / "fixtures" / "providers"

WEATHER = ToolDefinition(
    name="get_weather",
    description="The current weather in a city.",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
)
TIME = ToolDefinition(
    name="get_time",
    description="The local time in a time zone.",
    parameters={"type": "object", "properties": {"tz": {"type": "string"}}, "required": ["tz"]},
)


class Server:
    """A recorded server: answers each request with the next response and keeps the requests."""

    def __init__(self, *responses: Any) -> None:
        self.responses = list(responses)
        self.requests: list[Any] = []

    def __call__(self, request: Any) -> Any:
        self.requests.append(request)
        response = self.responses.pop(0)
        if isinstance(response, BaseException):
            raise response
        return response

    def body(self, index: int = 0) -> Any:
        return json.loads(self.requests[index].content)


class Recorded:
    """Responses and clients of one SDK's HTTP library (``http``)."""

    def __init__(self, http: Any) -> None:
        self.http = http

    def sse(self, name: str) -> Any:
        return self.http.Response(
            200,
            headers={"content-type": "text/event-stream"},
            content=(FIXTURES / name).read_bytes(),
        )

    def events(self, *events: dict[str, Any]) -> Any:
        """A stream of the server-sent ``events`` written here (each named by its ``type``)."""
        body = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
        return self.http.Response(
            200, headers={"content-type": "text/event-stream"}, content=body.encode()
        )

    def cut(self, name: str, before: str) -> Any:
        """The recorded stream ``name`` up to the text ``before``, then the connection lost
        (as a proxy resetting it: the HTTP library's error for a body cut short)."""
        body = (FIXTURES / name).read_bytes()
        sent = body[: body.index(before.encode())]
        http = self.http

        async def chunks() -> Any:
            yield sent
            raise http.RemoteProtocolError(
                "peer closed connection without sending complete message body "
                "(incomplete chunked read)"
            )

        return http.Response(200, headers={"content-type": "text/event-stream"}, content=chunks())

    def error_response(self, status: int, name: str) -> Any:
        return self.http.Response(
            status,
            headers={"content-type": "application/json", "x-request-id": "req_test"},
            content=(FIXTURES / name).read_bytes(),
        )

    def client(self, server: Server) -> Any:
        return self.http.AsyncClient(transport=self.http.MockTransport(server))

    def serving(self, monkeypatch: Any, sdk: Any, client_class: str) -> Any:
        """A function of a test's recorded responses: it makes their :class:`Server` and routes
        the clients a model builds itself to it (see :meth:`route`), for the rest of the test."""

        def serve(*responses: Any) -> Server:
            server = Server(*responses)
            self.route(monkeypatch, sdk, client_class, server)
            return server

        return serve

    def route(self, monkeypatch: Any, sdk: Any, client_class: str, server: Server) -> None:
        """Make the clients a model builds itself (``sdk.<client_class>``, such as
        ``openai.AsyncOpenAI``) talk to ``server``, for the rest of the test."""
        original = getattr(sdk, client_class)

        def built(*args: Any, **kwargs: Any) -> Any:
            # (the SDK's default HTTP client, which a model gives the clients it builds for
            # another event loop, is replaced too; a test's own is kept)
            given = kwargs.get("http_client")
            if given is None or isinstance(given, sdk.DefaultAsyncHttpxClient):
                kwargs["http_client"] = self.client(server)
            return original(*args, **kwargs)

        monkeypatch.setattr(sdk, client_class, built)


def ask(text: str = "Hi", **fields: Any) -> CompletionRequest:
    return CompletionRequest(messages=[Message.user(text)], **fields)


async def events_of(model: CompletionModel, request: CompletionRequest) -> list[Any]:
    return [event async for event in model.stream(request)]


async def drain(model: CompletionModel, request: CompletionRequest, *, into: list[Any]) -> None:
    """Stream into ``into``, which keeps the events that came before a failure."""
    async for event in model.stream(request):
        into.append(event)


def weather_agent(model: CompletionModel) -> Any:
    """An agent with the recorded streams' two tools (get_weather, get_time), for whole runs."""
    from pydantic import BaseModel

    from anvia_notebook import AgentBuilder, create_tool

    class City(BaseModel):
        city: str

    class Zone(BaseModel):
        tz: str

    weather = create_tool(
        name="get_weather",
        description=WEATHER.description,
        input=City,
        execute=lambda args, ctx: f"18 °C in {args.city}",
    )
    local_time = create_tool(
        name="get_time", description=TIME.description, input=Zone, execute=lambda a, c: "14:05"
    )
    return (
        AgentBuilder("weather", model)
        .instructions("Answer with the tools.")
        .tools([weather, local_time])
        .build()
    )


class TextDeltaObjects(CompletionModel):
    """A provider model as it streamed before its text went out as plain strings: each piece of
    text as a ``TextDelta``; every other event as the model streams it."""

    def __init__(self, model: CompletionModel) -> None:
        self.model = model
        self.name = model.name
        self.provider = model.provider

    async def stream(self, request: CompletionRequest) -> Any:
        async for event in self.model.stream(request):
            yield TextDelta(delta=event) if isinstance(event, str) else event


#: Fields of a run's events that differ from run to run (fresh ids).
VOLATILE = ("run_id", "internal_call_id")


async def whole_run(model: CompletionModel, prompt: str) -> dict[str, Any]:
    """What a user of ``weather_agent(model).prompt(prompt).stream()`` sees: the public events
    (without their fresh ids), the final text, the conversation and each traced turn's response."""
    request = weather_agent(model).prompt(prompt)
    events = [event async for event in request.stream()]
    dumped = []
    for event in events:
        fields = event.model_dump(mode="json")
        for name in VOLATILE:
            fields.pop(name, None)
        dumped.append(fields)
    final = events[-1]
    return {
        "events": dumped,
        "text_deltas": [(e.turn, e.delta) for e in events if e.type == "text_delta"],
        "output": final.output,
        "messages": [m.model_dump(mode="json") for m in final.messages],
        "turns": [turn.response.model_dump(mode="json") for turn in request.trace.turns],
    }


def anthropic_start(input_tokens: int) -> dict[str, Any]:
    """Anthropic's ``message_start`` event of an answer, reporting ``input_tokens``."""
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-6",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": 1},
    }
    return {"type": "message_start", "message": message}

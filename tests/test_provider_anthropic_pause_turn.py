"""An answer the Messages API paused (``stop_reason: "pause_turn"``, a long turn of server tools
such as web search) is continued as Anthropic documents it: the request again, with the answer
so far as the last assistant message; the parts stream as one answer, their usage added up."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anthropic
import httpx
import pytest
from anthropic import _base_client as anthropic_base_client

from anvia_notebook import AgentBuilder
from anvia_notebook.messages import Usage
from anvia_notebook.models.anthropic import PAUSED_TURN_CONTINUATIONS, AnthropicModel
from anvia_notebook.models.base import Finish, UsageUpdate

from provider_replay import Recorded, Server, anthropic_start, ask, events_of

http: Any = getattr(anthropic_base_client, "httpx2", None) or httpx
recorded = Recorded(http)
SEARCH = {"type": "web_search_20250305", "name": "web_search", "max_uses": 5}
RESULT = {
    "type": "web_search_result",
    "url": "https://weather.example/paris",
    "title": "Paris weather",
    "encrypted_content": "EqgfCioIARgBIiQ3YTAwMjY1Mi1mZjM5",
    "page_age": "2 hours ago",
}
CITATION = {
    "type": "web_search_result_location",
    "url": "https://weather.example/paris",
    "title": "Paris weather",
    "encrypted_index": "Eo8BCioIAhgBIiQyYjQ0OWJmZi1lNm",
    "cited_text": "Sunny, 21 degrees",
}


@pytest.fixture
def serve(monkeypatch: pytest.MonkeyPatch) -> Callable[..., Server]:
    return recorded.serving(monkeypatch, anthropic, "AsyncAnthropic")


def stream(*events: dict[str, Any]) -> Any:
    return recorded.events(*events)


start = anthropic_start


def block(index: int, content_block: dict[str, Any], *deltas: dict[str, Any]) -> list[Any]:
    return [
        {"type": "content_block_start", "index": index, "content_block": content_block},
        *({"type": "content_block_delta", "index": index, "delta": d} for d in deltas),
        {"type": "content_block_stop", "index": index},
    ]


def end(reason: str, output_tokens: int) -> list[dict[str, Any]]:
    return [
        {
            "type": "message_delta",
            "delta": {"stop_reason": reason, "stop_sequence": None},
            "usage": {"output_tokens": output_tokens},
        },
        {"type": "message_stop"},
    ]


def text(value: str) -> dict[str, Any]:
    return {"type": "text_delta", "text": value}


def paused_search() -> Any:
    """A turn that searched, began its answer, and was paused."""
    return stream(
        start(100),
        *block(0, {"type": "text", "text": ""}, text("Let me search. ")),
        *block(
            1,
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
            {"type": "input_json_delta", "partial_json": '{"query": '},
            {"type": "input_json_delta", "partial_json": '"paris weather"}'},
        ),
        *block(
            2,
            {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [RESULT]},
        ),
        *block(
            3,
            {"type": "text", "text": ""},
            {"type": "citations_delta", "citation": CITATION},
            text("Sunny "),
        ),
        *end("pause_turn", 40),
    )


def continued() -> Any:
    return stream(
        start(300),
        *block(0, {"type": "text", "text": ""}, text("and 21 degrees.")),
        *end("end_turn", 10),
    )


async def test_a_paused_answer_is_continued_with_its_content_sent_back(
    serve: Callable[..., Server],
) -> None:
    server = serve(paused_search(), continued())
    model = AnthropicModel("claude-sonnet-4-6", api_key="sk-ant-test", tools=[SEARCH])

    events = await events_of(model, ask("Weather in Paris?", instructions="Be brief."))

    assert [e for e in events if isinstance(e, str)] == [
        "Let me search. ",
        "Sunny ",
        "and 21 degrees.",
    ]
    assert [e for e in events if isinstance(e, Finish)] == [Finish(reason="stop")]
    usage = [e.usage for e in events if isinstance(e, UsageUpdate)]
    assert sum(usage, Usage()) == Usage(input_tokens=400, output_tokens=50)
    assert len(server.requests) == 2
    first, second = server.body(0), server.body(1)
    assert second["messages"][:-1] == first["messages"]
    assert {k: v for k, v in second.items() if k != "messages"} == {
        k: v for k, v in first.items() if k != "messages"
    }
    assert second["messages"][-1] == {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Let me search. "},
            {
                "type": "server_tool_use",
                "id": "srvtoolu_1",
                "name": "web_search",
                "input": {"query": "paris weather"},
            },
            {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [RESULT]},
            # (the last block's trailing white space left out: the API refuses it)
            {"type": "text", "text": "Sunny", "citations": [CITATION]},
        ],
    }


async def test_a_run_gets_the_continued_answer_as_one_turn(serve: Callable[..., Server]) -> None:
    serve(paused_search(), continued())
    model = AnthropicModel("claude-sonnet-4-6", api_key="sk-ant-test", tools=[SEARCH])
    request = AgentBuilder("searcher", model).build().prompt("Weather in Paris?").store(None)
    deltas: list[str] = []
    final: Any = None
    async for event in request.stream():
        if event.type == "text_delta":
            deltas.append(event.delta)
        elif event.type == "final":
            final = event
    assert final.output == "Let me search. Sunny and 21 degrees."
    assert "".join(deltas) == final.output  # (streamed as they came, the parts one answer)
    assert final.usage.input_tokens == 400 and final.usage.output_tokens == 50
    assert [m.role for m in final.messages] == ["user", "assistant"]
    assert request.trace is not None
    [turn] = request.trace.turns
    assert turn.response.finish_reason == "stop"


async def test_continuing_is_bounded_and_then_the_pause_is_the_finish_reason(
    serve: Callable[..., Server],
) -> None:
    tries = PAUSED_TURN_CONTINUATIONS + 1
    server = serve(*(paused_search() for _ in range(tries)))
    model = AnthropicModel("claude-sonnet-4-6", api_key="sk-ant-test", tools=[SEARCH])

    events = await events_of(model, ask("Weather in Paris?"))

    assert len(server.requests) == tries
    assert [e for e in events if isinstance(e, Finish)] == [Finish(reason="pause_turn")]
    # each continuation sends back all the content so far
    assert len(server.body(tries - 1)["messages"][-1]["content"]) == 4 * (tries - 1)

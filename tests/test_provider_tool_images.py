"""A tool's images reach the providers that take them (the request bodies, through the SDKs'
real HTTP path with a mock transport; never the network).

* Anthropic: the ``tool_result`` holds the text (with its placeholder) and an image block.
* OpenAI Chat Completions: tool messages take only text, so the tool message keeps the
  placeholder; with ``tool_result_images=True`` a user message with the image follows the turn's
  tool messages (as pydantic-ai does), on OpenAI's API as on any compatible server.
* Models that take no images (scripted ones, ``tool_result_images=False``) read the placeholder.
"""

from __future__ import annotations

import asyncio
import base64
import sys
from typing import Any

import anthropic
import httpx
import openai
import pytest
from anthropic import _base_client as anthropic_base_client
from mcp_helpers import TOOLBOX
from openai import _base_client as openai_base_client

from anvia_notebook import AgentBuilder, mcp
from anvia_notebook.messages import Message, MessageToolCall, ToolResultMedia, ToolResultPart
from anvia_notebook.models.anthropic import AnthropicModel, to_anthropic_messages
from anvia_notebook.models.openai import OpenAIModel, to_openai_messages

from provider_replay import Recorded, Server

ANTHROPIC = Recorded(getattr(anthropic_base_client, "httpx2", None) or httpx)
OPENAI = Recorded(getattr(openai_base_client, "httpx2", None) or httpx)

#: The toolbox's 1x1 PNG (tests/mcp_servers/toolbox.py).
PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360f8cf000000030101007e1ff5d60000000049454e44ae426082"
    )
).decode()
PLACEHOLDER = "a red dot\n[image image/png, 70 bytes, shown to the user]"


@pytest.fixture(scope="module", autouse=True)
def _close_sessions():
    yield
    asyncio.run(mcp.close_all())


def _run_picture(model: Any) -> None:
    server = mcp.stdio("toolbox", sys.executable, [TOOLBOX])
    agent = AgentBuilder("a", model).mcp([server]).build()
    assert agent.prompt("Show me the picture.").send_sync().output


def _anthropic(monkeypatch: pytest.MonkeyPatch, **options: Any) -> tuple[Server, AnthropicModel]:
    server = Server(ANTHROPIC.sse("anthropic_tool_picture.sse"), ANTHROPIC.sse("anthropic_text.sse"))
    ANTHROPIC.route(monkeypatch, anthropic, "AsyncAnthropic", server)
    return server, AnthropicModel("claude-sonnet-4-6", api_key="sk-ant-test", **options)


def _openai(monkeypatch: pytest.MonkeyPatch, **options: Any) -> tuple[Server, OpenAIModel]:
    server = Server(OPENAI.sse("openai_tool_picture.sse"), OPENAI.sse("openai_text.sse"))
    OPENAI.route(monkeypatch, openai, "AsyncOpenAI", server)
    return server, OpenAIModel("gpt-4o", api_key="sk-test", **options)


def test_anthropic_gets_the_image_in_the_tool_result(monkeypatch):
    server, model = _anthropic(monkeypatch)
    _run_picture(model)
    results = server.body(1)["messages"][-1]
    assert results == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_01Pc4Ws8Dn2Fg6Hj9Kl3Mq7r",
                "is_error": False,
                "content": [
                    {"type": "text", "text": PLACEHOLDER},
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": PNG},
                    },
                ],
            }
        ],
    }


def test_anthropic_without_tool_result_images_reads_the_placeholder(monkeypatch):
    server, model = _anthropic(monkeypatch, tool_result_images=False)
    _run_picture(model)
    [result] = server.body(1)["messages"][-1]["content"]
    assert result["content"] == PLACEHOLDER


def test_openai_gets_the_image_in_a_user_message_after_the_tool_messages(monkeypatch):
    server, model = _openai(monkeypatch, tool_result_images=True)
    _run_picture(model)
    messages = server.body(1)["messages"]
    assert messages[-2:] == [
        {"role": "tool", "tool_call_id": "call_Pc4Ws8Dn2Fg6Hj9Kl3Mq7r", "content": PLACEHOLDER},
        {
            "role": "user",
            "content": [
                {
                    "type": "text",
                    "text": "The image returned by the tool picture (call call_Pc4Ws8Dn2Fg6Hj9Kl3Mq7r):",
                },
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
            ],
        },
    ]


def test_openai_reads_the_placeholder_unless_told_otherwise(monkeypatch):
    for options in ({}, {"base_url": "http://localhost:11434/v1"}):
        server, model = _openai(monkeypatch, **options)
        _run_picture(model)
        last = server.body(1)["messages"][-1]
        assert last == {"role": "tool", "tool_call_id": "call_Pc4Ws8Dn2Fg6Hj9Kl3Mq7r", "content": PLACEHOLDER}

    server, model = _openai(monkeypatch, base_url="http://localhost:11434/v1", tool_result_images=True)
    _run_picture(model)
    assert server.body(1)["messages"][-1]["content"][1]["image_url"]["url"].endswith(PNG)


def test_tool_result_images_is_not_sent_as_a_request_option(monkeypatch):
    server, model = _openai(monkeypatch, tool_result_images=False)
    _run_picture(model)
    body = server.body(1)
    assert "tool_result_images" not in body
    assert body["messages"][-1]["role"] == "tool"


def _turn(*parts: ToolResultPart) -> list[Message]:
    calls = [MessageToolCall(id=p.tool_call_id, name=p.tool_name) for p in parts]
    return [Message.user("go"), Message.assistant("", calls), Message.tool(list(parts))]


def _image(media_type: str = "image/png", data: str = PNG) -> ToolResultMedia:
    return ToolResultMedia(type="image", media_type=media_type, data=data)


def test_only_images_a_provider_takes_are_sent_the_rest_stay_placeholders():
    big = base64.b64encode(b"\0" * (5 * 1024 * 1024 + 1)).decode()
    parts = [
        ToolResultPart(tool_call_id="c1", tool_name="draw", content="[svg]", media=[_image("image/svg+xml")]),
        ToolResultPart(tool_call_id="c2", tool_name="draw", content="[big]", media=[_image(data=big)]),
        ToolResultPart(
            tool_call_id="c3", tool_name="draw", content="[audio]",
            media=[ToolResultMedia(type="audio", media_type="audio/wav", data=PNG)],
        ),
        ToolResultPart(tool_call_id="c4", tool_name="draw", content="failed", is_error=True, media=[_image()]),
        ToolResultPart(tool_call_id="c5", tool_name="draw", content="two", media=[_image(), _image("image/jpeg")]),
    ]
    anthropic_results = to_anthropic_messages(_turn(*parts))[-1]["content"]
    assert [r["content"] for r in anthropic_results[:4]] == ["[svg]", "[big]", "[audio]", "failed"]
    assert [b["type"] for b in anthropic_results[4]["content"]] == ["text", "image", "image"]

    openai_messages = to_openai_messages(None, _turn(*parts), images=True)
    assert [m["role"] for m in openai_messages] == ["user", "assistant", *["tool"] * 5, "user"]
    shown = openai_messages[-1]["content"]
    assert [p["type"] for p in shown] == ["text", "image_url", "image_url"]
    assert shown[0]["text"] == "The 2 images returned by the tool draw (call c5):"
    assert shown[2]["image_url"]["url"].startswith("data:image/jpeg;base64,")
    # Without images (the default of to_openai_messages): tool messages only.
    assert [m["role"] for m in to_openai_messages(None, _turn(*parts))][-1] == "tool"


def test_an_image_is_sent_only_while_its_base64_text_fits_anthropics_5_mb():
    """Anthropic measures its limit on the base64 text: a 4.5 MB image file is 6 MB of it."""
    fits = "A" * (5 * 1024 * 1024)
    parts = [
        ToolResultPart(tool_call_id="c1", tool_name="read", content="[4.5 MB]",
                       media=[_image(data=base64.b64encode(b"\0" * (4_500_000)).decode())]),
        ToolResultPart(tool_call_id="c2", tool_name="read", content="[fits]", media=[_image(data=fits)]),
        ToolResultPart(tool_call_id="c3", tool_name="read", content="[one more]",
                       media=[_image(data=fits + "AAAA")]),
    ]
    results = to_anthropic_messages(_turn(*parts))[-1]["content"]
    assert [r["content"] if isinstance(r["content"], str) else "sent" for r in results] == [
        "[4.5 MB]",
        "sent",
        "[one more]",
    ]


def test_scripted_models_read_the_placeholder_and_the_history_keeps_the_image():
    from anvia_notebook.models import QueueModel

    from helpers import call, tool_results

    model = QueueModel([call("picture", {}), "done"])
    server = mcp.stdio("toolbox", sys.executable, [TOOLBOX])
    response = AgentBuilder("a", model).mcp([server]).build().prompt("go").send_sync()
    [result] = tool_results(model.requests[1])
    assert result.content == PLACEHOLDER
    assert result.media == [_image()]
    [kept] = [r for m in response.messages if m.role == "tool" for r in m.tool_results]
    assert kept.media == [_image()]
    assert PNG not in repr(kept)  # the data is left out of the repr

"""The Inspect view's kernel side: ``inspect`` answered from the run's trace, and the run summary
in the status line (no kernel, no browser)."""

from __future__ import annotations

import json

from notebook_helpers import Page, finished
from pydantic import BaseModel

from anvia_notebook import AgentBuilder, create_tool
from anvia_notebook.messages import Usage
from anvia_notebook.models import FunctionModel, ModelResponse, QueueModel, ToolCall
from anvia_notebook.notebook import _inspect as inspect
from anvia_notebook.notebook import _runner as runner
from anvia_notebook.notebook._protocol import parse_outbound


class LookupInput(BaseModel):
    item: int


def lookup_tool():
    return create_tool(
        name="lookup",
        description="Look an item up in the inventory.",
        input=LookupInput,
        execute=lambda args, _ctx: {"item": args.item, "status": "ok"},
    )


def inventory_agent():
    model = QueueModel(
        [
            ModelResponse(
                text="Checking item **7**.",
                tool_calls=[ToolCall(id="c1", name="lookup", arguments={"item": 7})],
                usage=Usage(input_tokens=120, output_tokens=15),
                cached_tokens=100,
            ),
            ModelResponse(
                text="Item 7 is in stock.", usage=Usage(input_tokens=160, output_tokens=8)
            ),
        ]
    )
    return (
        AgentBuilder("inventory", model)
        .instructions("You check the inventory <script>alert(1)</script>.")
        .tool(lookup_tool())
        .build()
    )


async def test_inspect_answers_one_model_call_with_its_request_response_usage_and_tools():
    handle = runner.show(inventory_agent().prompt("Is item 7 in stock?"))
    page = Page(handle.widget)
    await page.sync()
    await finished(handle)

    latest = await page.request("inspect", index=None)
    assert parse_outbound(latest).type == "inspect_reply"
    assert latest["ok"] and latest["error"] is None
    assert latest["count"] == 2
    assert latest["turn"]["index"] == 1
    assert latest["turn"]["response_text"] == "Item 7 is in stock."

    first = (await page.request("inspect", index=0))["turn"]
    assert first["turn"] == 1
    assert first["instructions"] == "You check the inventory <script>alert(1)</script>."
    assert [tool["name"] for tool in first["tools"]] == ["lookup"]
    schema = json.loads(first["tools"][0]["parameters"])
    assert schema["properties"]["item"]["type"] == "integer"
    assert schema["required"] == ["item"]
    assert (first["input_tokens"], first["output_tokens"], first["cached_tokens"]) == (120, 15, 100)
    assert first["finish_reason"] == "tool_calls"
    assert json.loads(first["response_tool_calls"])[0]["arguments"] == {"item": 7}
    assert first["message_count"] == 1
    assert first["messages"] == [{"role": "user", "text": "Is item 7 in stock?"}]
    [call] = first["tool_calls"]
    assert (call["name"], call["status"]) == ("lookup", "success")
    assert json.loads(call["args"]) == {"item": 7}
    assert json.loads(call["result"]) == {"item": 7, "status": "ok"}
    assert first["duration_ms"] is not None and first["first_token_ms"] is not None

    # The second call's request holds the whole conversation so far.
    second = latest["turn"]
    assert second["message_count"] == 3
    assert [m["role"] for m in second["messages"]] == ["user", "assistant", "tool"]
    assert second["messages"][1]["text"].endswith('Tool call lookup (c1): {"item":7}')
    assert second["messages"][2]["text"] == 'Result of lookup (c1): {"item":7,"status":"ok"}'


async def test_inspect_refuses_a_call_that_is_not_there_and_a_malformed_request():
    handle = runner.show(inventory_agent().prompt("Is item 7 in stock?"))
    page = Page(handle.widget)
    await page.sync()
    await finished(handle)
    missing = await page.request("inspect", index=5)
    assert parse_outbound(missing).ok is False
    assert missing["turn"] is None and missing["count"] == 2
    assert "there is no call 6" in missing["error"]
    bad = await page.request("inspect", index=-1)
    assert bad["type"] == "reply" and bad["ok"] is False
    assert "index" in bad["error"]


async def test_the_status_line_gets_the_run_summary_when_the_run_ends():
    handle = runner.show(inventory_agent().prompt("Is item 7 in stock?"))
    page = Page(handle.widget)
    await page.sync()  # (the one-millisecond run may have ended by now: no check before)
    await finished(handle)
    page.pump()
    status = page.state.status
    assert status["state"] == "success"
    assert (status["input_tokens"], status["output_tokens"]) == (280, 23)
    summary = handle.trace.summary()
    assert status["first_token_ms"] == summary["first_token_ms"] > 0
    assert status["duration_ms"] == summary["duration_ms"] >= status["first_token_ms"]


async def test_a_1000_call_trace_answers_its_latest_call_bounded():
    # How fast the kernel answers is measured by benchmarks/inspect_bench.py.
    def respond(request):
        done = sum(1 for m in request.messages if m.role == "tool")
        if done < 999:
            return ModelResponse(
                text=f"Step {done}.",
                tool_calls=[ToolCall(id=f"c{done}", name="lookup", arguments={"item": done})],
            )
        return ModelResponse(text="All checked.")

    agent = (
        AgentBuilder("long", FunctionModel(respond))
        .tool(lookup_tool())
        .default_max_turns(1_100)
        .build()
    )
    handle = runner.show(agent.prompt("Check every item."))
    page = Page(handle.widget)
    await page.sync()
    await finished(handle)
    assert len(handle.trace.turns) == 1_000
    reply = await page.request("inspect", index=None)
    assert reply["ok"] and reply["count"] == 1_000
    turn = reply["turn"]
    assert turn["message_count"] == 1_999
    assert len(turn["messages"]) == inspect.MAX_MESSAGES
    assert turn["messages"][-1]["role"] == "tool"
    assert len(json.dumps(reply)) < 200_000


def test_long_texts_are_cut_with_a_note():
    text = "x" * (inspect.MAX_FIELD + 5)
    cut = inspect._cut(text)
    assert cut.startswith("x" * inspect.MAX_FIELD)
    assert cut.endswith("… (5 more characters)")
    assert inspect._json('{"a": [1, 2]}') == '{\n  "a": [\n    1,\n    2\n  ]\n}'
    assert inspect._json("not json") == "not json"

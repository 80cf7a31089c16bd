"""The run loop through the public API: send, stream, send_sync, turns, concurrency, errors."""

from __future__ import annotations

import asyncio
import sys
import threading

import pytest
from pydantic import BaseModel

from anvia_notebook import (
    AgentBuilder,
    MaxTurnsError,
    Message,
    RequestAlreadyUsedError,
    Usage,
    create_hook,
    create_tool,
)
from anvia_notebook.models import (
    Finish,
    FunctionModel,
    ModelError,
    ModelResponse,
    QueueModel,
    StreamingQueueModel,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    UsageUpdate,
)

from helpers import call, calls, make_add_tool, tool_results


def test_blank_agent_id_is_refused():
    with pytest.raises(ValueError, match="agent id"):
        AgentBuilder("  ", QueueModel([]))


async def test_send_returns_output_usage_messages_and_run_id():
    model = QueueModel(
        [
            ModelResponse(
                tool_calls=[ToolCall(id="c", name="add", arguments={"x": 1, "y": 2})],
                usage=Usage(input_tokens=10, output_tokens=2),
            ),
            ModelResponse(text="It is 3.", usage=Usage(input_tokens=20, output_tokens=4)),
        ]
    )
    response = await AgentBuilder("a", model).tool(make_add_tool()).build().prompt("1+2?").send()
    assert response.output == "It is 3."
    assert response.usage == Usage(input_tokens=30, output_tokens=6)
    assert response.usage.total_tokens == 36
    assert response.status == "success"
    assert response.run_id.startswith("run_")
    assert [m.role for m in response.messages] == ["user", "assistant", "tool", "assistant"]


async def test_stream_event_sequence_with_text_and_tool_deltas():
    model = StreamingQueueModel(
        [
            [
                TextDelta(delta="Let me "),
                TextDelta(delta="add."),
                ToolCallDelta(id="c1", name="add", arguments_delta='{"x": 1,'),
                ToolCallDelta(id="c1", arguments_delta=' "y": 2}'),
                UsageUpdate(usage=Usage(input_tokens=5, output_tokens=5)),
                Finish(reason="tool_calls"),
            ],
            [TextDelta(delta="3")],
        ]
    )
    agent = AgentBuilder("a", model).tool(make_add_tool()).build()
    events = [e async for e in agent.prompt("go").stream()]
    assert [e.type for e in events] == [
        "turn_start",
        "generation_start",
        "text_delta",
        "text_delta",
        "tool_call_delta",
        "tool_call_delta",
        "tool_call",
        "turn_end",
        "tool_result",
        "turn_start",
        "generation_start",
        "text_delta",
        "turn_end",
        "final",
    ]
    call_event = events[6]
    assert call_event.tool_call.arguments == '{"x": 1, "y": 2}'
    assert events[7].usage == Usage(input_tokens=5, output_tokens=5)
    assert events[8].result == "3"
    assert events[1].model == "streaming-queue-model"
    assert events[-1].output == "3"
    assert model.requests[1].messages[1].content == "Let me add."


async def test_stream_yields_the_error_event_then_raises():
    model = StreamingQueueModel([[ModelError("invalid key", status_code=401)]])
    agent = AgentBuilder("a", model).build()
    seen = []
    with pytest.raises(ModelError, match="invalid key"):
        async for event in agent.prompt("go").stream():
            seen.append(event)
    assert seen[-1].type == "error"
    assert seen[-1].error == "invalid key"
    assert seen[-1].error_type == "ModelError"


async def test_a_request_runs_once():
    agent = AgentBuilder("a", QueueModel(["one", "two"])).build()
    request = agent.prompt("go")
    await request.send()
    with pytest.raises(RequestAlreadyUsedError):
        await request.send()
    with pytest.raises(RequestAlreadyUsedError):
        request.start()


def test_max_turns_counts_like_anvia():
    # The loop runs while the turn counter is at most n + 1: n + 2 model calls at most.
    model = QueueModel(
        [
            ModelResponse(
                tool_calls=[ToolCall(id=f"c{i}", name="add", arguments={"x": 1, "y": 1})],
                usage=Usage(input_tokens=10, output_tokens=1),
            )
            for i in range(6)
        ]
    )
    add = make_add_tool()
    agent = AgentBuilder("a", model).tool(add).default_max_turns(2).build()
    with pytest.raises(MaxTurnsError, match="Reached max turn limit: 2") as caught:
        agent.prompt("go").send_sync()
    assert len(model.requests) == 4
    assert len(add.calls) == 4  # every tool round ran, the last one too, as in Anvia
    assert caught.value.usage.input_tokens == 40  # the usage of every turn
    assert caught.value.prompt.role == "tool"
    assert [m.role for m in caught.value.messages][-2:] == ["assistant", "tool"]
    # max_turns(0) still allows one tool round and a final answer
    model = QueueModel([call("add", {"x": 1, "y": 1}), "done"])
    agent = AgentBuilder("a", model).tool(make_add_tool()).build()
    assert agent.prompt("go").max_turns(0).send_sync().output == "done"
    # ... and fails when the model keeps calling tools (Anvia's own test)
    model = QueueModel(
        [call("add", {"x": 1, "y": 2}, id="c1"), call("add", {"x": 3, "y": 4}, id="c2")]
    )
    agent = AgentBuilder("a", model).tool(make_add_tool()).default_max_turns(0).build()
    with pytest.raises(MaxTurnsError):
        agent.prompt("loop").send_sync()


def test_hooks_get_each_turns_prompt_and_the_history_before_it():
    seen = []

    def on_turn_start(event):
        seen.append(("turn", event.turn, event.prompt.role, [m.role for m in event.history]))

    def on_completion_call(event):
        seen.append(("call", event.prompt.role, [m.role for m in event.history]))

    model = QueueModel([call("add", {"x": 1, "y": 1}), "done"])
    agent = (
        AgentBuilder("a", model)
        .tool(make_add_tool())
        .hook(create_hook(on_turn_start=on_turn_start, on_completion_call=on_completion_call))
        .build()
    )
    agent.prompt([Message.user("earlier"), Message.assistant("ok"), Message.user("go")]).send_sync()
    assert seen == [
        ("turn", 1, "user", ["user", "assistant"]),
        ("call", "user", ["user", "assistant"]),
        ("turn", 2, "tool", ["user", "assistant", "user", "assistant"]),
        ("call", "tool", ["user", "assistant", "user", "assistant"]),
    ]


def test_builder_trims_the_id_and_a_second_tool_of_the_same_name_replaces_the_first():
    first = make_add_tool()
    second = make_add_tool()
    with pytest.warns(UserWarning, match="replaces the first"):
        agent = AgentBuilder("  adder  ", QueueModel([])).tools([first, second]).build()
    assert agent.id == "adder"
    assert agent.tools["add"] is second


def test_default_max_turns_is_twenty():
    agent = AgentBuilder("a", QueueModel([])).build()
    assert agent.default_max_turns == 20
    assert agent.prompt("x").max_turn_count == 20


async def test_tool_concurrency_runs_in_parallel_and_keeps_call_order():
    class Wait(BaseModel):
        ms: int

    running = 0
    peak = 0

    async def wait(args: Wait, ctx) -> str:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(args.ms / 1000)
        running -= 1
        return f"slept {args.ms}"

    tool = create_tool(name="wait", description="", input=Wait, execute=wait)
    items = [("wait", {"ms": ms}, f"c{i}") for i, ms in enumerate([40, 5, 20, 1])]
    model = QueueModel([calls(*items), "ok"])
    await AgentBuilder("a", model).tool(tool).build().prompt("go").with_tool_concurrency(2).send()
    assert peak == 2
    assert [r.content for r in tool_results(model.requests[1])] == [
        "slept 40",
        "slept 5",
        "slept 20",
        "slept 1",
    ]
    model = QueueModel([calls(*items), "ok"])
    peak = 0
    await AgentBuilder("a", model).tool(tool).build().prompt("go").send()
    assert peak == 1


def test_with_tool_concurrency_validates():
    request = AgentBuilder("a", QueueModel([])).build().prompt("x")
    with pytest.raises(ValueError, match="positive integer"):
        request.with_tool_concurrency(0)


def test_send_sync_from_a_script_and_from_a_thread():
    agent = AgentBuilder("a", QueueModel(["one", "two"])).build()
    assert agent.prompt("x").send_sync().output == "one"
    out = {}
    thread = threading.Thread(target=lambda: out.setdefault("r", agent.prompt("y").send_sync()))
    thread.start()
    thread.join(10)
    assert out["r"].output == "two"


async def test_send_sync_inside_a_running_loop_outside_a_kernel_says_what_to_do():
    agent = AgentBuilder("a", QueueModel(["one"])).build()
    with pytest.raises(RuntimeError, match=r"await request\.send"):
        agent.prompt("x").send_sync()


async def test_multi_turn_history_from_a_previous_response():
    model = QueueModel(["Hi Ada.", "Your name is Ada."])
    agent = AgentBuilder("a", model).build()
    first = await agent.prompt("I am Ada").send()
    second = await agent.prompt([*first.messages, Message.user("Who am I?")]).send()
    assert [m.content for m in model.requests[1].messages] == ["I am Ada", "Hi Ada.", "Who am I?"]
    assert len(second.messages) == 4


def test_prompt_validation():
    agent = AgentBuilder("a", QueueModel([])).build()
    with pytest.raises(ValueError, match="empty list"):
        agent.prompt([])
    with pytest.raises(TypeError, match="list of Messages"):
        agent.prompt(["hello"])  # type: ignore[list-item]


def test_empty_tool_name_from_a_provider_fails_the_run():
    model = QueueModel([ModelResponse(tool_calls=[ToolCall(id="c", name="", arguments={})])])
    with pytest.raises(ValueError, match="empty name"):
        AgentBuilder("a", model).build().prompt("go").send_sync()


def test_queue_model_running_out_is_a_clear_error():
    with pytest.raises(ModelError, match="ran out of responses: it was given 0"):
        AgentBuilder("a", QueueModel([])).build().prompt("go").send_sync()


async def test_function_model_variants():
    sync_model = FunctionModel(lambda request: f"you said {request.messages[-1].content}")
    assert (await AgentBuilder("a", sync_model).build().prompt("hi").send()).output == "you said hi"

    async def async_fn(request):
        return ModelResponse(text="async")

    assert (
        await AgentBuilder("a", FunctionModel(async_fn)).build().prompt("hi").send()
    ).output == "async"

    async def gen(request):
        yield TextDelta(delta="gen")
        yield TextDelta(delta="erated")

    assert (
        await AgentBuilder("a", FunctionModel(gen)).build().prompt("hi").send()
    ).output == "generated"
    bad = FunctionModel(lambda request: 42)
    with pytest.raises(ModelError, match="must return a ModelResponse"):
        await AgentBuilder("a", bad).build().prompt("hi").send()


def test_queue_model_records_requests():
    model = QueueModel(["ok"])
    AgentBuilder("a", model).instructions("Be nice.").tool(make_add_tool()).build().prompt(
        "hi"
    ).send_sync()
    request = model.requests[0]
    assert request.instructions == "Be nice."
    assert request.messages[0].content == "hi"
    assert request.tools[0].name == "add"


async def test_a_subscriber_that_raises_does_not_break_the_run(caplog):
    run = AgentBuilder("a", QueueModel(["ok"])).build().prompt("go").create_run()

    def bad(event):
        raise RuntimeError("subscriber bug")

    run.subscribe(bad)
    run.start()
    assert (await run.wait()).output == "ok"
    assert "subscriber bug" in caplog.text


async def test_provider_data_travels_with_the_assistant_message():
    from anvia_notebook.models import ProviderData

    model = StreamingQueueModel(
        [
            [
                ToolCall(id="c1", name="add", arguments={"x": 1, "y": 2}),
                ProviderData(data={"signed": ["block"]}),
            ],
            [TextDelta(delta="3")],
        ]
    )
    response = await AgentBuilder("a", model).tool(make_add_tool()).build().prompt("go").send()
    assert response.messages[1].provider_data == {"signed": ["block"]}
    assert model.requests[1].messages[1].provider_data == {"signed": ["block"]}
    assert response.messages[3].provider_data is None


def test_a_response_is_only_ever_a_success():
    """A run that fails or is stopped raises; a response cannot claim another status."""
    import pydantic

    from anvia_notebook import PromptResponse, Usage

    with pytest.raises(pydantic.ValidationError):
        PromptResponse(output="", usage=Usage(), messages=[], run_id="r", status="error")


async def test_the_event_log_read_from_another_thread_while_text_streams_loses_no_piece():
    """Text deltas join the log by a list append each (the fast path): a reader on another
    thread sees a prefix of the text each time, and the whole text at the end. A race here
    shows only now and then, so this guard can pass on broken code; it never fails on sound
    code."""
    pieces = [f"p{i} " for i in range(6_000)]
    whole = "".join(pieces)

    async def stream(_request: object) -> object:
        for index, piece in enumerate(pieces):
            yield TextDelta(delta=piece)
            if index % 20 == 0:
                await asyncio.sleep(0)

    run = AgentBuilder("a", FunctionModel(stream)).build().prompt("go").create_run()
    seen: list[str] = []
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            texts = [e.delta for e in run.events if e.type == "text_delta"]
            if texts:
                seen.append(texts[0])

    reader = threading.Thread(target=read)
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # the threads take turns as often as they can
    reader.start()
    try:
        run.start()
        await run.wait()
    finally:
        stop.set()
        reader.join(5)
        sys.setswitchinterval(switch)
    assert seen and all(whole.startswith(text) for text in seen)
    [logged] = [e for e in run.events if e.type == "text_delta"]
    assert logged.delta == whole

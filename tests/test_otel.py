"""Runs exported as OpenTelemetry spans (GenAI semantic conventions), checked with the SDK's
in-memory exporter: names, parents, attributes, events, errors, and content only when asked."""

from __future__ import annotations

import asyncio
import json

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry import trace as otel_trace
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ParentBased, Sampler
from opentelemetry.trace import StatusCode

from anvia_notebook import (
    AgentBuilder,
    ApprovalDecision,
    CallbackHumanInput,
    PromptCancelledError,
    ToolApproval,
    Usage,
    ask_question,
    create_hook,
    create_tool,
    instrument,
)
from anvia_notebook.instrumentation import instrumented
from anvia_notebook.messages import Message
from anvia_notebook.models import (
    ModelError,
    ModelResponse,
    QueueModel,
    StreamingQueueModel,
    TextDelta,
)

from helpers import NoteInput, call, calls, make_add_tool


def by_name(exporter):
    return {span.name: span for span in exporter.get_finished_spans()}


def tool_run(**tool_options):
    add = make_add_tool(**tool_options)
    model = QueueModel(
        [
            ModelResponse(
                tool_calls=call("add", {"x": 2, "y": 3}, id="c1").tool_calls,
                usage=Usage(input_tokens=30, output_tokens=5),
                cached_tokens=10,
            ),
            ModelResponse(text="It is 5.", usage=Usage(input_tokens=50, output_tokens=4)),
        ]
    )
    builder = (
        AgentBuilder("calc", model)
        .name("Calculator")
        .instructions("Use the add tool.")
        .tool(add)
        .temperature(0.1)
    )
    return builder, add


def test_a_run_is_an_invoke_agent_span_with_chat_and_execute_tool_children(spans) -> None:
    builder, _ = tool_run()
    response = builder.build().prompt("2 + 3?").send_sync()
    finished = spans.get_finished_spans()
    assert [s.name for s in finished] == [
        "chat queue-model",
        "execute_tool add",
        "chat queue-model",
        "invoke_agent Calculator",
    ]
    named = by_name(spans)
    root = named["invoke_agent Calculator"]
    assert root.parent is None
    assert root.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert root.attributes["gen_ai.agent.name"] == "Calculator"
    assert root.attributes["gen_ai.agent.id"] == "calc"
    assert root.attributes["anvia.run_id"] == response.run_id
    assert root.attributes["gen_ai.usage.input_tokens"] == 80
    assert root.status.status_code == StatusCode.UNSET
    for span in finished[:3]:
        assert span.parent is not None and span.parent.span_id == root.context.span_id
        assert span.context.trace_id == root.context.trace_id

    first_chat, tool, second_chat = finished[:3]
    assert dict(first_chat.attributes) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "offline",
        "gen_ai.request.model": "queue-model",
        "gen_ai.request.temperature": 0.1,
        "anvia.turn": 1,
        "gen_ai.usage.input_tokens": 30,
        "gen_ai.usage.output_tokens": 5,
        "gen_ai.usage.cache_read.input_tokens": 10,
        "gen_ai.response.finish_reasons": ("tool_calls",),
    }
    assert second_chat.attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert "gen_ai.usage.cache_read.input_tokens" not in second_chat.attributes
    assert dict(tool.attributes) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "add",
        "gen_ai.tool.call.id": "c1",
        "gen_ai.tool.type": "function",
        "anvia.turn": 1,
        "anvia.tool.status": "success",
    }
    # No content without capture_content.
    for span in finished:
        assert not [k for k in span.attributes if "messages" in k or "arguments" in k]
        assert "gen_ai.tool.call.result" not in span.attributes
        assert "gen_ai.system_instructions" not in span.attributes


def test_a_session_is_the_conversation_id(spans) -> None:
    AgentBuilder("a", QueueModel(["hi"])).build().prompt("go").session("chat-7").send_sync()
    root = by_name(spans)["invoke_agent a"]
    assert root.attributes["gen_ai.conversation.id"] == "chat-7"


def test_capture_content_adds_messages_arguments_and_results(content_spans) -> None:
    builder, _ = tool_run()
    builder.build().prompt("2 + 3?").send_sync()
    finished = content_spans.get_finished_spans()
    first_chat, tool, second_chat = finished[:3]
    assert json.loads(first_chat.attributes["gen_ai.system_instructions"]) == [
        {"type": "text", "content": "Use the add tool."}
    ]
    assert json.loads(first_chat.attributes["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": "2 + 3?"}]}
    ]
    [definition] = json.loads(first_chat.attributes["gen_ai.tool.definitions"])
    assert definition["name"] == "add" and definition["parameters"]["required"] == ["x", "y"]
    [output] = json.loads(first_chat.attributes["gen_ai.output.messages"])
    assert output["finish_reason"] == "tool_calls"
    assert output["parts"][0]["type"] == "tool_call" and output["parts"][0]["name"] == "add"
    assert json.loads(tool.attributes["gen_ai.tool.call.arguments"]) == {"x": 2, "y": 3}
    assert tool.attributes["gen_ai.tool.call.result"] == "5"
    sent = json.loads(second_chat.attributes["gen_ai.input.messages"])
    assert sent[2] == {
        "role": "tool",
        "parts": [{"type": "tool_call_response", "id": "c1", "response": "5"}],
    }
    # (the call as the next request sends it back: its arguments as data, as in the answer;
    # they were the JSON text)
    assert sent[1]["parts"] == output["parts"]


def test_captured_texts_are_bounded_and_the_json_stays_json(content_spans) -> None:
    """A 1 MB argument and a 1 MB result were exported whole on the tool's span, the chat span
    that asked for them and every later chat span (OTLP exporters refuse messages of a few MB)."""
    from anvia_notebook import tool

    @tool
    def echo(text: str) -> str:
        """Echo."""
        return text.upper()

    big = "a" * 1_000_000
    model = QueueModel([call("echo", {"text": big}, id="c1"), "done " + "b" * 1_000_000])
    AgentBuilder("a", model).tool(echo).build().prompt("go").send_sync()
    finished = content_spans.get_finished_spans()
    for span in finished:
        for name, value in span.attributes.items():
            assert len(str(value)) < 50_000, (span.name, name, len(str(value)))
    tool_span = by_name(content_spans)["execute_tool echo"]
    assert "characters not kept" in tool_span.attributes["gen_ai.tool.call.result"]
    assert tool_span.attributes["gen_ai.tool.call.result"].startswith("AAAA")
    chats = [s for s in finished if s.name.startswith("chat")]
    sent = json.loads(chats[-1].attributes["gen_ai.input.messages"])  # still JSON
    assert sent[-1]["parts"][0]["response"].startswith("AAAA")
    [answer] = json.loads(chats[-1].attributes["gen_ai.output.messages"])
    assert answer["parts"][0]["content"].startswith("done bbb")


def test_captured_arguments_are_the_json_the_model_sent(content_spans) -> None:
    sent = '{"x":2,\n  "y":3}'  # the model's own JSON text, kept as it came
    add = make_add_tool()
    model = QueueModel([call("add", sent, id="c1"), call("add", "not json", id="c2"), "5"])
    AgentBuilder("a", model).tool(add).build().prompt("2 + 3?").send_sync()
    first, second = [s for s in content_spans.get_finished_spans() if s.name == "execute_tool add"]
    assert first.attributes["gen_ai.tool.call.arguments"] == sent
    assert first.attributes["gen_ai.tool.call.result"] == "5"
    assert second.attributes["gen_ai.tool.call.arguments"] == "not json"
    assert second.attributes["anvia.tool.status"] == "error"


def test_arguments_edited_on_approval_are_the_ones_captured(content_spans) -> None:
    add = make_add_tool(approval=ToolApproval())
    model = QueueModel([call("add", {"x": 1, "y": 2}), "ok"])
    approve = ApprovalDecision(approved=True, args={"x": 10, "y": 20})
    AgentBuilder("a", model).tool(add).approvals(lambda r: approve).build().prompt("go").send_sync()
    tool = by_name(content_spans)["execute_tool add"]
    assert json.loads(tool.attributes["gen_ai.tool.call.arguments"]) == {"x": 10, "y": 20}
    assert tool.attributes["gen_ai.tool.call.result"] == "30"


def test_every_model_call_captures_the_whole_conversation_it_received(content_spans) -> None:
    # Each chat span carries every message that call sent (a message a hook replaced too).
    def redact(event):
        if len(event.request.messages) == 5:  # the third call: its first message replaced
            event.request.messages = [Message.user("[redacted]"), *event.request.messages[1:]]

    add = make_add_tool()
    model = QueueModel(
        [call("add", {"x": 1, "y": 1}, id="a"), call("add", {"x": 2, "y": 2}, id="b"), "done"]
    )
    agent = (
        AgentBuilder("a", model)
        .instructions("Add.")
        .tool(add)
        .hook(create_hook(on_completion_call=redact))
        .build()
    )
    agent.prompt("secret café").send_sync()
    chats = [s for s in content_spans.get_finished_spans() if s.name.startswith("chat")]
    assert len(chats) == 3
    for chat, request in zip(chats, model.requests, strict=True):
        expected = [
            {
                "role": m.role,
                "parts": [{"type": "text", "content": m.content}] * bool(m.content)
                + [
                    {
                        "type": "tool_call",
                        "id": c.id,
                        "name": c.name,
                        "arguments": json.loads(c.arguments),
                    }
                    for c in m.tool_calls
                ]
                + [
                    {"type": "tool_call_response", "id": r.tool_call_id, "response": r.content}
                    for r in m.tool_results
                ],
            }
            for m in request.messages
        ]
        assert json.loads(chat.attributes["gen_ai.input.messages"]) == expected
        assert json.loads(chat.attributes["gen_ai.system_instructions"])[0]["content"] == "Add."
        [definition] = json.loads(chat.attributes["gen_ai.tool.definitions"])
        assert definition["name"] == "add"
    assert json.loads(chats[2].attributes["gen_ai.input.messages"])[0]["parts"] == [
        {"type": "text", "content": "[redacted]"}
    ]
    assert json.loads(chats[1].attributes["gen_ai.input.messages"])[0]["parts"] == [
        {"type": "text", "content": "secret café"}
    ]
    assert "secret café" in chats[1].attributes["gen_ai.input.messages"]  # readable as sent


def test_approvals_are_events_on_the_tool_span(spans, content_spans) -> None:
    # content_spans replaced spans: the last instrument() call wins.
    decisions = iter([False, True])
    add = make_add_tool(approval=ToolApproval(reason="Check it."))
    model = QueueModel(
        [calls(("add", {"x": 1, "y": 1}, "no"), ("add", {"x": 2, "y": 2}, "yes")), "done"]
    )
    agent = AgentBuilder("a", model).tool(add).approvals(lambda r: next(decisions)).build()
    agent.prompt("go").send_sync()
    assert spans.get_finished_spans() == ()
    tools = [s for s in content_spans.get_finished_spans() if s.name == "execute_tool add"]
    rejected, approved = tools
    assert [e.name for e in rejected.events] == ["tool_approval_request", "tool_approval_result"]
    result = rejected.events[1].attributes
    assert result["anvia.approval.status"] == "rejected"
    assert result["anvia.approval.decided_by"] == "handler"
    assert rejected.events[0].attributes["anvia.approval.reason"] == "Check it."
    assert rejected.attributes["anvia.tool.status"] == "rejected"
    assert approved.events[1].attributes["anvia.approval.status"] == "approved"
    assert approved.attributes["anvia.tool.status"] == "success"


def test_questions_are_events_without_their_text_unless_content_is_captured(spans) -> None:
    questions = {
        "questions": [
            {"id": "p", "question": "Priority?", "choices": [{"label": "High", "value": "high"}]}
        ]
    }
    model = QueueModel([call("ask_question", questions, id="q"), "ok"])
    human = CallbackHumanInput(ask=lambda r: [{"questionId": "p", "answer": "high"}])
    agent = AgentBuilder("a", model).tool(ask_question).human_input(human).build()
    agent.prompt("go").send_sync()
    tool = by_name(spans)["execute_tool ask_question"]
    asked, answered = tool.events
    assert (asked.name, answered.name) == ("tool_question_request", "tool_question_result")
    assert asked.attributes["anvia.question.count"] == 1
    assert answered.attributes["anvia.question.status"] == "answered"
    assert "anvia.question.answers" not in answered.attributes
    assert "anvia.question.questions" not in asked.attributes


def test_a_failing_tool_and_a_failing_model_are_errors_on_their_spans(spans) -> None:
    def broken(args, ctx):
        raise RuntimeError("disk full")

    save = create_tool(name="save", description="Save.", input=NoteInput, execute=broken)
    model = StreamingQueueModel(
        [
            call("save", {"text": "a"}, id="s").tool_calls,
            [TextDelta(delta="Half"), ModelError("connection reset", status_code=502)],
        ]
    )
    with pytest.raises(ModelError):
        AgentBuilder("a", model).tool(save).build().prompt("go").send_sync()
    finished = spans.get_finished_spans()
    assert [s.name for s in finished] == [
        "chat streaming-queue-model",
        "execute_tool save",
        "chat streaming-queue-model",
        "invoke_agent a",
    ]
    _, tool, chat, root = finished
    assert tool.status.status_code == StatusCode.ERROR
    assert tool.attributes["error.type"] == "RuntimeError"  # as the exception, like the others
    [raised] = [e for e in tool.events if e.name == "exception"]
    assert raised.attributes["exception.type"] == "RuntimeError"
    assert raised.attributes["exception.message"] == "disk full"
    assert chat.status.status_code == StatusCode.ERROR
    assert chat.attributes["error.type"] == "ModelError"
    assert [e.name for e in chat.events] == ["exception"]
    assert root.status.status_code == StatusCode.ERROR
    assert root.attributes["anvia.run.status"] == "error"


@pytest.mark.parametrize("ending", ["fails", "is stopped"])
async def test_a_model_call_that_ends_badly_keeps_the_usage_it_was_told(spans, ending) -> None:
    """The provider told the call's usage, then the stream broke (or Stop came): its chat span
    had no token attributes, so the chat spans did not add up to the run's usage."""
    from anvia_notebook.models import FunctionModel, UsageUpdate

    told = asyncio.Event()

    async def answer(request):
        yield TextDelta(delta="partial ")
        yield UsageUpdate(usage=Usage(input_tokens=100, output_tokens=10))
        told.set()
        if ending == "fails":
            raise ModelError("stream broke")
        await asyncio.Event().wait()

    run = AgentBuilder("a", FunctionModel(answer)).build().prompt("go").start()
    await asyncio.wait_for(told.wait(), 5)
    if ending == "is stopped":
        run.cancel("Stop pressed")
    with pytest.raises(ModelError if ending == "fails" else PromptCancelledError):
        await run.wait()
    named = by_name(spans)
    for name in ("chat function-model", "invoke_agent a"):
        attributes = named[name].attributes
        tokens = (attributes["gen_ai.usage.input_tokens"], attributes["gen_ai.usage.output_tokens"])
        assert tokens == (100, 10) == (run.state.usage.input_tokens, run.state.usage.output_tokens)


def test_a_huge_error_is_bounded_on_every_span(spans) -> None:
    """A provider's 200 KB error body was exported whole, three times per span (the status,
    the event's message, its stack trace): 1.2 MB for one failed run."""
    huge = "provider said: " + "q" * 200_000
    model = StreamingQueueModel([[ModelError(huge, status_code=500)]])
    with pytest.raises(ModelError):
        AgentBuilder("a", model).build().prompt("go").with_completion_retries(
            max_attempts=1
        ).send_sync()
    for span in spans.get_finished_spans():
        assert span.status.status_code == StatusCode.ERROR
        assert len(span.status.description) < 5_000
        for event in span.events:
            assert event.attributes["exception.type"] == "ModelError"
            assert event.attributes["exception.message"].startswith("provider said: qqq")
            assert "characters not kept" in event.attributes["exception.message"]
            assert len(event.attributes["exception.message"]) < 5_000
            assert len(event.attributes["exception.stacktrace"]) < 9_000


async def test_a_cancelled_run_ends_every_span(spans) -> None:
    started = asyncio.Event()

    async def wait_forever(args, ctx):
        started.set()
        await asyncio.Event().wait()

    slow = create_tool(name="slow", description="Slow.", input=NoteInput, execute=wait_forever)
    model = QueueModel([call("slow", {"text": "a"}), "never"])
    run = AgentBuilder("a", model).tool(slow).build().prompt("go").start()
    await asyncio.wait_for(started.wait(), 5)
    run.cancel("Stop pressed")
    with pytest.raises(PromptCancelledError):
        await run.wait()
    named = by_name(spans)
    assert set(named) == {"chat queue-model", "execute_tool slow", "invoke_agent a"}
    assert named["execute_tool slow"].attributes["anvia.tool.status"] == "cancelled"
    root = named["invoke_agent a"]
    assert root.attributes["anvia.run.status"] == "cancelled"
    assert [e.name for e in root.events] == ["cancelled"]
    assert root.status.status_code == StatusCode.UNSET  # a stop is not an error


def test_spans_made_inside_a_tool_nest_under_its_execute_tool_span(spans) -> None:
    def traced(args, ctx):
        return otel_trace.get_current_span().get_span_context().span_id

    tool = create_tool(name="work", description="Work.", input=NoteInput, execute=traced)
    model = QueueModel([call("work", {"text": "a"}), "done"])
    trace = AgentBuilder("a", model).tool(tool).build().prompt("go").send_sync().trace
    named = by_name(spans)
    assert trace.tool_calls[0].result == str(named["execute_tool work"].context.span_id)


def test_only_the_tool_itself_runs_inside_its_execute_tool_span(spans) -> None:
    """Hooks before and after the call are not the tool: spans they make are not its children."""
    current: dict[str, int] = {}

    def note(where):
        return lambda e: current.__setitem__(
            where, otel_trace.get_current_span().get_span_context().span_id
        )

    def traced(args, ctx):
        current["tool"] = otel_trace.get_current_span().get_span_context().span_id
        return "ok"

    tool = create_tool(name="work", description="Work.", input=NoteInput, execute=traced)
    hook = create_hook(on_tool_call=note("before"), on_tool_result=note("after"))
    model = QueueModel([call("work", {"text": "a"}), "done"])
    AgentBuilder("a", model).tool(tool).hook(hook).build().prompt("go").send_sync()
    named = by_name(spans)
    tool_span = named["execute_tool work"].context.span_id
    assert current["tool"] == tool_span
    assert current["before"] != tool_span
    assert current["after"] == current["before"]  # the tool's span is current no longer


def test_a_run_the_sampler_drops_makes_no_other_span_and_passes_the_decision_on() -> None:
    class Noting(Sampler):
        """Drops every trace (as a ratio sampler does most), noting what it was asked about."""

        def __init__(self) -> None:
            self.asked: list[tuple[str, int]] = []
            self.inner = ParentBased(ALWAYS_OFF)

        def should_sample(self, parent_context, trace_id, name, *args, **kwargs):
            self.asked.append((name, trace_id))
            return self.inner.should_sample(parent_context, trace_id, name, *args, **kwargs)

        def get_description(self) -> str:
            return "noting"

    sampler = Noting()
    exporter = InMemorySpanExporter()
    provider = TracerProvider(sampler=sampler)
    provider.add_span_processor(SimpleSpanProcessor(exporter))

    def traced(args, ctx):
        with provider.get_tracer("user code").start_as_current_span("inside the tool"):
            return "ok"

    tool = create_tool(name="work", description="Work.", input=NoteInput, execute=traced)
    model = QueueModel([call("work", {"text": "a"}), "done"])
    instrument(provider)
    try:
        response = AgentBuilder("a", model).tool(tool).build().prompt("go").send_sync()
    finally:
        instrument(False)
    assert exporter.get_finished_spans() == ()
    # Only the root was started; the tool's own span joined the dropped trace instead of
    # starting one of its own.
    (root, root_trace), (inner, inner_trace) = sampler.asked
    assert (root, inner) == ("invoke_agent a", "inside the tool")
    assert inner_trace == root_trace
    # The run's own trace is whole.
    assert response.output == "done"
    assert [c.status for c in response.trace.tool_calls] == ["success"]
    assert len(response.trace.turns) == 2


def test_instrument_off_exports_nothing_and_bad_input_is_refused() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrument(provider)
    assert instrumented()
    instrument(False)
    assert not instrumented()
    AgentBuilder("a", QueueModel(["hi"])).build().prompt("go").send_sync()
    assert exporter.get_finished_spans() == ()
    with pytest.raises(TypeError, match="TracerProvider"):
        instrument("console")
    with pytest.raises(TypeError, match="capture_content"):
        instrument(provider, capture_content="yes")  # type: ignore[arg-type]
    assert not instrumented()


def test_a_broken_tracer_provider_never_stops_a_run(caplog) -> None:
    class Broken:
        def get_tracer(self, *args, **kwargs):
            return self

        def start_span(self, *args, **kwargs):
            raise RuntimeError("exporter misconfigured")

    instrument(Broken())
    try:
        response = AgentBuilder("a", QueueModel(["fine"])).build().prompt("go").send_sync()
    finally:
        instrument(False)
    assert response.output == "fine" and response.trace.status == "success"
    assert "Exporting OpenTelemetry spans failed" in caplog.text


class RaisingProcessor(SpanProcessor):
    def __init__(self, when: str) -> None:
        self.when = when

    def on_start(self, span, parent_context=None) -> None:
        if self.when == "start":
            raise RuntimeError("span processor bug")

    def on_end(self, span) -> None:
        if self.when == "end":
            raise RuntimeError("span processor bug")


@pytest.mark.parametrize("when", ["start", "end"])
@pytest.mark.parametrize("content", [False, True])
def test_a_span_processor_that_raises_never_fails_a_run(caplog, when, content) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    provider.add_span_processor(RaisingProcessor(when))
    instrument(provider, capture_content=content)
    try:
        for _ in range(2):  # the warning is given once per instrument(), not once per run
            builder, _tool = tool_run(approval=ToolApproval(reason="Check it."))
            agent = builder.approvals(lambda request: True).build()  # approval events too
            response = agent.prompt("2 + 3?").send_sync()
            assert response.output == "It is 5."
            assert response.trace.status == "success"
            assert [c.status for c in response.trace.tool_calls] == ["success"]
    finally:
        instrument(False)
    warnings = [r for r in caplog.records if "OpenTelemetry spans failed" in r.getMessage()]
    assert len(warnings) == 1 and warnings[0].levelname == "WARNING"
    assert "span processor bug" in caplog.text  # (the traceback, for whoever configured it)
    # Nothing was left current: a span started now is a root of its own.
    assert otel_trace.get_current_span() is otel_trace.INVALID_SPAN
    if when == "end":  # the processor before it got every span
        names = sorted(span.name for span in exporter.get_finished_spans())
        one_run = [
            "invoke_agent Calculator",
            "chat queue-model",
            "chat queue-model",
            "execute_tool add",
        ]
        assert names == sorted(one_run * 2)

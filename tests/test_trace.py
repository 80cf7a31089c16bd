"""The trace of a run, through the public API: what the model received and returned on each turn,
what each tool call did, timings through a fake clock, and the trace of a stored, resumed run."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest

import anvia_notebook._tracing as tracing
from anvia_notebook import (
    AgentBuilder,
    CallbackHumanInput,
    HumanInputTimeout,
    Message,
    PromptCancelledError,
    RunStore,
    ToolApproval,
    Usage,
    ask_question,
    create_hook,
    create_tool,
)
from anvia_notebook.models import (
    FunctionModel,
    ModelError,
    ModelResponse,
    QueueModel,
    StreamingQueueModel,
    TextDelta,
    ToolCall,
    UsageUpdate,
)
from anvia_notebook.trace import Trace

from helpers import NoteInput, call, calls, make_add_tool


class FakeClock:
    """Seconds that move only when a test says so."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(tracing, "clock", fake)
    return fake


def add_agent(model, **tool_options):
    add = make_add_tool(**tool_options)
    builder = (
        AgentBuilder("calc", model)
        .name("Calculator")
        .instructions("Add numbers with the add tool.")
        .tool(add)
        .temperature(0.2)
        .max_tokens(300)
    )
    return builder, add


def test_a_tool_call_run_traces_requests_responses_usage_and_the_call(clock: FakeClock) -> None:
    async def answer(request):
        clock.advance(0.25)  # time to the first token
        if len(request.messages) == 1:
            yield ToolCall(id="c1", name="add", arguments={"x": 2, "y": 3})
        else:
            yield TextDelta(delta="It is ")
            clock.advance(0.5)
            yield TextDelta(delta="5.")
        yield UsageUpdate(usage=Usage(input_tokens=40, output_tokens=6), cached_tokens=32)

    builder, _ = add_agent(FunctionModel(answer, name="scripted"))
    response = builder.build().prompt("What is 2 + 3?").send_sync()
    trace = response.trace
    assert isinstance(trace, Trace)
    assert trace.status == "success" and trace.error is None
    assert trace.agent_name == "Calculator" and trace.run_id == response.run_id
    assert [t.index for t in trace.turns] == [0, 1]
    assert [t.turn for t in trace.turns] == [1, 2]

    first, second = trace.turns
    assert first.request.instructions == "Add numbers with the add tool."
    assert [m.content for m in first.request.messages] == ["What is 2 + 3?"]
    [tool] = first.request.tools
    assert tool.name == "add" and tool.parameters["required"] == ["x", "y"]
    assert first.request.settings == {"model": "scripted", "temperature": 0.2, "max_tokens": 300}
    assert first.model == "scripted" and first.provider == "offline"
    assert first.response.tool_calls[0].name == "add"
    assert first.response.finish_reason is None  # this model reports none
    assert first.usage.model_dump() == {
        "input_tokens": 40,
        "output_tokens": 6,
        "cached_tokens": 32,
    }
    assert first.first_token_ms == 250.0 and first.duration_ms == 250.0
    # The second call got the whole conversation: the prompt, the call and its result.
    assert [m.role for m in second.request.messages] == ["user", "assistant", "tool"]
    assert second.request.messages[2].tool_results[0].content == "5"
    assert second.response.text == "It is 5."
    assert second.first_token_ms == 250.0 and second.duration_ms == 750.0
    assert second.started_at - first.started_at == timedelta(seconds=0.25)

    [traced] = trace.tool_calls
    assert traced.model_dump(exclude={"started_at"}) == {
        "id": "c1",
        "name": "add",
        "args": {"x": 2, "y": 3},
        "result": "5",
        "status": "success",
        "turn": 1,
        "duration_ms": 0.0,
        "approval": None,
        "question": None,
        "questions": [],
        "output": "",  # what it printed, as a notebook view captured it
        "traceback": None,  # the tool did not raise
        "mcp_server": None,  # not a tool of an MCP server
    }
    assert trace.calls_of(0) == [traced] and trace.calls_of(1) == []
    assert trace.summary() == {
        "turns": 2,
        "input_tokens": 80,
        "output_tokens": 12,
        "cached_tokens": 64,
        "first_token_ms": 250.0,
        "duration_ms": 1000.0,
        "tool_calls": 1,
    }


def test_turn_view_is_json_ready_and_checks_its_index() -> None:
    model = QueueModel(
        [call("add", {"x": 1, "y": 2}), ModelResponse(text="3", usage=Usage(input_tokens=9))]
    )
    builder, _ = add_agent(model)
    trace = builder.build().prompt("1 + 2?").send_sync().trace
    view = trace.turn_view(0)
    assert json.loads(json.dumps(view)) == view  # plain JSON data
    assert set(view) >= {
        "index",
        "request",
        "response",
        "usage",
        "started_at",
        "first_token_ms",
        "duration_ms",
        "error",
        "tool_calls",
    }
    assert set(view["request"]) == {"instructions", "messages", "tools", "settings"}
    assert view["request"]["tools"][0]["parameters"]["properties"]["x"]["type"] == "integer"
    assert view["request"]["messages"][0]["content"] == "1 + 2?"
    assert view["response"]["tool_calls"][0]["arguments"] == {"x": 1, "y": 2}
    assert view["response"]["finish_reason"] == "tool_calls"
    [tool_call] = view["tool_calls"]
    assert {k: tool_call[k] for k in ("id", "name", "args", "result", "status")} == {
        "id": "call_1",
        "name": "add",
        "args": {"x": 1, "y": 2},
        "result": "3",
        "status": "success",
    }
    assert isinstance(tool_call["duration_ms"], float)
    assert trace.turn_view(1)["usage"] == {
        "input_tokens": 9,
        "output_tokens": 0,
        "cached_tokens": None,
    }
    assert trace.turn_view(1)["tool_calls"] == []
    with pytest.raises(IndexError, match="2 model calls \\(0 to 1\\); there is no turn 2"):
        trace.turn_view(2)
    with pytest.raises(IndexError):
        trace.turn_view(-1)
    with pytest.raises(TypeError, match="index"):
        trace.turn_view("0")  # type: ignore[arg-type]


def test_to_pandas_has_one_row_per_model_call_and_tool_call() -> None:
    pd = pytest.importorskip("pandas")
    model = QueueModel(
        [
            calls(("add", {"x": 1, "y": 2}, "a"), ("add", {"x": 3, "y": 4}, "b")),
            ModelResponse(text="3 and 7", usage=Usage(input_tokens=5, output_tokens=2)),
        ]
    )
    builder, _ = add_agent(model)
    trace = builder.build().prompt("two sums").send_sync().trace
    frame = trace.to_pandas()
    assert isinstance(frame, pd.DataFrame)
    assert list(frame["kind"]) == ["model", "tool", "tool", "model"]
    assert list(frame["turn"]) == [1, 1, 1, 2]
    assert list(frame["name"]) == ["queue-model", "add", "add", "queue-model"]
    assert list(frame["status"]) == ["success"] * 4
    assert list(frame["result"])[1:3] == ["3", "7"]
    assert frame["input_tokens"].iloc[3] == 5
    assert frame["finish_reason"].iloc[3] == "stop"
    assert json.loads(frame["args"].iloc[2]) == {"x": 3, "y": 4}


def test_a_table_of_the_trace_keeps_arguments_readable() -> None:
    """Every letter past ASCII was escaped (caf\\u00e9): a search for the text found nothing."""
    from anvia_notebook import tool

    @tool
    def note(text: str) -> str:
        """Keep a note."""
        return "kept"

    model = QueueModel([call("note", {"text": "café 東京 🎉"}), "done"])
    trace = AgentBuilder("a", model).tools([note]).build().prompt("n").send_sync().trace
    [tool_row] = [row for row in trace.rows() if row["kind"] == "tool"]
    assert tool_row["args"] == '{"text": "café 東京 🎉"}'


def test_to_pandas_without_pandas_says_how_to_install_it(monkeypatch) -> None:
    trace = Trace(run_id="r", agent_id="a")
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match="pip install pandas"):
        trace.to_pandas()
    assert trace.rows() == []  # the rows themselves need no pandas


def test_approvals_rejected_and_approved_are_on_their_calls() -> None:
    decisions = iter([False, True])
    model = QueueModel(
        [
            calls(("add", {"x": 1, "y": 1}, "no"), ("add", {"x": 2, "y": 2}, "yes")),
            "done",
        ]
    )
    builder, add = add_agent(model, approval=ToolApproval(reason="Check the sum."))
    agent = builder.approvals(lambda request: next(decisions)).build()
    trace = agent.prompt("go").send_sync().trace
    rejected, approved = trace.tool_calls
    assert add.calls == [(2, 2)]
    assert rejected.status == "rejected" and rejected.id == "no"
    assert rejected.approval is not None and rejected.approval.status == "rejected"
    assert rejected.approval.reason == "Check the sum."
    assert rejected.approval.decided_by == "handler"
    assert "rejected" in (rejected.result or "").lower()
    assert approved.status == "success" and approved.result == "4"
    assert approved.approval is not None and approved.approval.status == "approved"
    assert approved.approval.resolved_at is not None
    view = trace.turn_view(0)["tool_calls"]
    assert [c["approval"]["status"] for c in view] == ["rejected", "approved"]


def test_an_approval_that_timed_out_and_a_skipped_and_a_failing_call() -> None:
    def approve(request):
        raise HumanInputTimeout(30)

    def broken(args, ctx):
        raise RuntimeError("disk full")

    failing = create_tool(name="save", description="Save.", input=NoteInput, execute=broken)
    model = QueueModel(
        [
            calls(
                ("add", {"x": 1, "y": 1}, "slow"),
                ("save", {"text": "a"}, "fails"),
                ("save", {"text": "skip me"}, "skipped"),
            ),
            "done",
        ]
    )
    skip = create_hook(
        on_tool_call=lambda e: e.tool.skip("Not now.") if "skip me" in e.args else None
    )
    builder, _ = add_agent(model, approval=ToolApproval())
    agent = builder.tool(failing).human_input(CallbackHumanInput(approve=approve)).build()
    trace = agent.prompt("go").add_hook(skip).send_sync().trace
    statuses = {c.id: c.status for c in trace.tool_calls}
    assert statuses == {"slow": "timed_out", "fails": "error", "skipped": "skipped"}
    by_id = {c.id: c for c in trace.tool_calls}
    assert by_id["slow"].approval is not None and by_id["slow"].approval.status == "timed_out"
    assert by_id["fails"].result == "ToolCallError: disk full"
    assert by_id["skipped"].result == "Not now."


def test_a_question_and_its_answers_are_on_the_call() -> None:
    questions = {
        "questions": [
            {"id": "p", "question": "Priority?", "choices": [{"label": "High", "value": "high"}]}
        ]
    }
    model = QueueModel([call("ask_question", questions, id="q"), "noted"])
    human = CallbackHumanInput(ask=lambda r: [{"questionId": "p", "answer": "high"}])
    agent = AgentBuilder("a", model).tool(ask_question).human_input(human).build()
    trace = agent.prompt("escalate").send_sync().trace
    [asked] = trace.tool_calls
    assert asked.status == "success"
    assert asked.question is not None and asked.question.status == "answered"
    assert asked.question.questions[0].question == "Priority?"
    assert [a.answer for a in asked.question.answers] == ["high"]
    assert json.loads(asked.result or "")["answers"][0]["answer"] == "high"
    assert trace.turn_view(0)["tool_calls"][0]["question"]["status"] == "answered"


async def test_a_model_error_mid_stream_is_on_the_turn_and_the_run() -> None:
    model = StreamingQueueModel(
        [[TextDelta(delta="Half an "), ModelError("connection reset", status_code=502)]]
    )
    request = AgentBuilder("a", model).build().prompt("hi")
    with pytest.raises(ModelError):
        await request.send()
    trace = request.trace
    assert trace is not None and trace.status == "error"
    assert trace.error == "connection reset"
    [turn] = trace.turns
    assert turn.error == "ModelError: connection reset"
    assert turn.response.text == "Half an "  # what had streamed
    assert turn.first_token_ms is not None and turn.duration_ms is not None
    assert trace.summary()["duration_ms"] is not None


async def test_retried_attempts_are_counted_on_one_turn() -> None:
    model = StreamingQueueModel([[ModelError("busy", status_code=503)], [TextDelta(delta="ok")]])
    request = (
        AgentBuilder("a", model)
        .build()
        .prompt("hi")
        .with_completion_retries(max_attempts=2, initial_delay=0)
    )
    response = await request.send()
    [turn] = response.trace.turns
    assert turn.attempts == 2 and turn.error is None and turn.response.text == "ok"


async def test_a_cancelled_run_keeps_its_trace() -> None:
    started = asyncio.Event()
    release = asyncio.Event()

    async def wait_forever(args, ctx):
        started.set()
        await release.wait()

    slow = create_tool(name="slow", description="Slow.", input=NoteInput, execute=wait_forever)
    model = QueueModel(
        [calls(("slow", {"text": "a"}, "first"), ("slow", {"text": "b"}, "second")), "never"]
    )
    request = AgentBuilder("a", model).tool(slow).build().prompt("go")
    run = request.start()
    await asyncio.wait_for(started.wait(), 5)
    assert run.trace.status == "running"
    assert run.trace.tool_calls[0].status is None  # still running
    assert run.trace.summary()["duration_ms"] is None
    run.cancel("Stop pressed")
    with pytest.raises(PromptCancelledError):
        await run.wait()
    trace = request.trace
    assert trace is run.trace and trace.status == "cancelled"
    first, second = trace.tool_calls
    assert first.status == "cancelled" and first.duration_ms is not None
    assert second.status == "cancelled" and second.started_at is None  # it never began
    assert (first.args, second.args) == ({"text": "a"}, {"text": "b"})  # what was asked
    assert trace.summary()["duration_ms"] is not None


async def test_a_run_stopped_while_streaming_marks_its_turn() -> None:
    streaming = asyncio.Event()

    async def endless(request):
        yield TextDelta(delta="thinking...")
        streaming.set()
        await asyncio.Event().wait()

    run = AgentBuilder("a", FunctionModel(endless)).build().prompt("go").start()
    await asyncio.wait_for(streaming.wait(), 5)
    run.cancel("Enough")
    with pytest.raises(PromptCancelledError):
        await run.wait()
    [turn] = run.trace.turns
    assert turn.error == "Stopped: Enough"
    assert turn.response.text == "thinking..."
    # (its row is cancelled, not an error: counting failed model calls counted every Stop)
    [row] = run.trace.rows()
    assert (row["kind"], row["status"], row["error"]) == ("model", "cancelled", "Stopped: Enough")


def test_a_hook_that_changes_the_messages_is_traced_with_what_was_sent() -> None:
    def redact(event):
        event.request.messages = [Message.user("[redacted]")]

    model = QueueModel(["fine"])
    agent = AgentBuilder("a", model).hook(create_hook(on_completion_call=redact)).build()
    trace = agent.prompt("my secret").send_sync().trace
    assert [m.content for m in trace.turns[0].request.messages] == ["[redacted]"]
    assert model.requests[0].messages[0].content == "[redacted]"


def test_the_requests_share_the_conversation_instead_of_copying_it() -> None:
    model = QueueModel([call("add", {"x": i, "y": i}, id=f"c{i}") for i in range(30)] + ["end"])
    builder, _ = add_agent(model)
    trace = builder.default_max_turns(40).build().prompt("count").send_sync().trace
    assert len(trace.turns) == 31
    assert [t.request.message_count for t in trace.turns] == [1 + 2 * i for i in range(31)]
    last = trace.turns[-1].request.messages
    assert trace.turns[10].request.messages == last[:21]
    assert trace.turns[10].request.messages[0] is last[0]  # the same message objects


def test_a_stored_run_keeps_its_trace(store_location) -> None:
    model = QueueModel([call("add", {"x": 1, "y": 2}), ModelResponse(text="3")])
    builder, _ = add_agent(model)
    response = builder.build().prompt("1 + 2?").send_sync()
    stored = RunStore(store_location).trace(response.run_id)
    live = response.trace
    assert stored.model_dump() == live.model_dump()
    assert stored.turns[1].request.messages[2].role == "tool"
    assert stored.turns[1].request.tools == live.turns[0].request.tools


def _start_child(kind: str) -> subprocess.Popen[str]:
    """A process that runs one of the store agents (tests/store_agents.py) on the test's store."""
    environ = dict(os.environ)
    tests = str(Path(__file__).parent)
    environ["PYTHONPATH"] = os.pathsep.join([tests, environ.get("PYTHONPATH", "")])
    code = f"import store_agents; store_agents.run({kind!r}, 'send 5 to a1')"
    return subprocess.Popen(
        [sys.executable, "-c", code],
        env=environ,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.timeout(60)
async def test_a_resumed_run_continues_its_stored_trace(store_path, tmp_path, monkeypatch) -> None:
    """A process dies while an approval waits; the run resumed here continues the same trace."""
    import store_agents

    monkeypatch.setenv("ANVIA_TEST_EFFECTS", str(tmp_path / "effects.txt"))
    child = _start_child("approval")
    store = RunStore(store_path)
    try:
        deadline = time.monotonic() + 30
        while not store.pending():
            assert child.poll() is None, child.stderr.read() if child.stderr else ""
            assert time.monotonic() < deadline, "the child never asked for the approval"
            await asyncio.sleep(0.02)
    finally:
        child.send_signal(signal.SIGKILL)  # the kernel dies
        child.wait(10)
        if child.stderr:
            child.stderr.close()
    [summary] = store.runs()
    before = store.trace(summary.run_id)
    assert before.status == "interrupted" and len(before.turns) == 1  # (as the run says)
    [waiting] = before.tool_calls
    assert waiting.status is None and waiting.approval is not None
    assert waiting.approval.status == "pending"

    request = store_agents.agent("approval").resume(summary.run_id)
    run = request.start()
    for _ in range(500):
        if run.status == "waiting":
            break
        await asyncio.sleep(0.01)
    [approval] = store.pending(summary.run_id)
    store.approve(summary.run_id, approval.id)
    response = await asyncio.wait_for(run.wait(), 10)
    trace = response.trace
    assert trace.run_id == summary.run_id and trace.status == "success"
    assert [t.turn for t in trace.turns] == [1, 2]
    assert trace.turns[0].started_at == before.turns[0].started_at  # the same first turn
    [transfer] = trace.tool_calls  # the same call, taken up again, not a second one
    assert transfer.id == "t1" and transfer.status == "success"
    assert transfer.approval is not None and transfer.approval.status == "approved"
    assert trace.turns[1].response.text.startswith("Result:")
    assert store.trace(summary.run_id).model_dump() == trace.model_dump()


def test_printed_output_kept_with_a_call_is_bounded():
    from anvia_notebook._tracing import OUTPUT_CUT, TraceRecorder
    from anvia_notebook.models import ToolCall
    from anvia_notebook.trace import OUTPUT_LIMIT, Trace

    recorder = TraceRecorder(Trace(run_id="run_1", agent_id="a"))
    entry = recorder.tool_call(ToolCall(id="c1", name="t", arguments={}), 1)
    recorder.tool_output("c1", "x" * (OUTPUT_LIMIT - 1))
    recorder.tool_output("unknown-call", "ignored")
    recorder.tool_output("c1", "ab")  # one character too many: cut, and said so
    recorder.tool_output("c1", "more")
    assert entry.output == "x" * (OUTPUT_LIMIT - 1) + "a" + OUTPUT_CUT


@pytest.mark.timeout(60)
async def test_a_model_call_cut_off_by_a_dead_kernel_is_marked_and_made_again(
    store_path, tmp_path, monkeypatch
) -> None:
    import store_agents

    monkeypatch.setenv("ANVIA_TEST_EFFECTS", str(tmp_path / "effects.txt"))
    child = _start_child("stream")
    store = RunStore(store_path)
    try:
        deadline = time.monotonic() + 30
        while True:  # until the streamed text is stored (within a second of streaming)
            stored = store.runs()
            if stored and store.trace(stored[0].run_id).turns:
                break
            assert child.poll() is None, child.stderr.read() if child.stderr else ""
            assert time.monotonic() < deadline, "the child's model call was never stored"
            await asyncio.sleep(0.02)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(10)
        if child.stderr:
            child.stderr.close()
    run_id = store.runs()[0].run_id
    [cut] = store.trace(run_id).turns
    assert cut.duration_ms is None  # it never ended
    monkeypatch.setenv("ANVIA_TEST_FAST", "1")
    response = await asyncio.wait_for(store_agents.agent("stream").resume(run_id).send(), 10)
    first, again = response.trace.turns
    assert first.error is not None and first.error.startswith("Interrupted")
    assert again.response.text == "complete answer" and again.error is None
    assert response.trace.status == "success"


def test_instrument_without_opentelemetry_says_how_to_install_it(monkeypatch) -> None:
    from anvia_notebook import instrument

    monkeypatch.delitem(sys.modules, "anvia_notebook._otel", raising=False)
    for name in [m for m in sys.modules if m.split(".")[0] == "opentelemetry"]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "opentelemetry", None)
    with pytest.raises(ImportError, match=r'pip install "anvia_notebook\[otel\]"'):
        instrument()


async def test_stopping_while_an_approval_or_a_question_waits_cancels_the_call() -> None:
    forever = asyncio.Event()

    async def wait(request):
        await forever.wait()

    questions = {
        "questions": [{"id": "p", "question": "P?", "choices": [{"label": "A", "value": "a"}]}]
    }
    model = QueueModel(
        [calls(("add", {"x": 1, "y": 1}, "guarded"), ("ask_question", questions, "asked")), "-"]
    )
    add = make_add_tool(approval=ToolApproval())
    human = CallbackHumanInput(approve=wait, ask=wait)
    agent = AgentBuilder("a", model).tools([add, ask_question]).human_input(human).build()
    run = agent.prompt("go").with_tool_concurrency(2).start()
    waiting = asyncio.Event()
    run.subscribe(lambda e: waiting.set() if e.type == "tool_question_request" else None)
    await asyncio.wait_for(waiting.wait(), 5)
    run.cancel("Stop")
    with pytest.raises(PromptCancelledError):
        await run.wait()
    guarded, asked = run.trace.tool_calls
    assert (guarded.status, guarded.approval.status) == ("cancelled", "cancelled")
    assert (asked.status, asked.question.status) == ("cancelled", "cancelled")
    assert add.calls == []


def test_calls_run_concurrently_are_traced_in_call_order() -> None:
    async def slow_then_fast(args, ctx):
        if args.text == "slow":
            await asyncio.sleep(0)  # yields, so the second call finishes first
            await asyncio.sleep(0)
        return args.text

    echo = create_tool(name="echo", description="Echo.", input=NoteInput, execute=slow_then_fast)
    model = QueueModel(
        [calls(("echo", {"text": "slow"}, "a"), ("echo", {"text": "fast"}, "b")), "done"]
    )
    agent = AgentBuilder("a", model).tool(echo).build()
    trace = agent.prompt("go").with_tool_concurrency(2).send_sync().trace
    assert [(c.id, c.result, c.status) for c in trace.tool_calls] == [
        ("a", "slow", "success"),
        ("b", "fast", "success"),
    ]


def test_a_run_handle_shows_its_run_trace() -> None:
    from anvia_notebook.notebook._handle import RunHandle

    request = AgentBuilder("a", QueueModel(["hi"])).build().prompt("go")
    request.send_sync()
    assert RunHandle(request._run, session=None).trace is request.trace  # type: ignore[arg-type]


def test_a_trace_shows_as_an_escaped_table_in_a_notebook(monkeypatch) -> None:
    import anvia_notebook.trace as trace_module

    model = QueueModel(
        [call("save", {"text": "<script>alert(1)</script>"}), ModelResponse(text="<b>ok</b>")]
    )
    save = create_tool(
        name="save", description="Save.", input=NoteInput, execute=lambda args, ctx: args.text
    )
    trace = AgentBuilder("a", model).tool(save).build().prompt("go").send_sync().trace
    html = trace._repr_html_()
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "&lt;b&gt;ok&lt;/b&gt;" in html
    assert "2 model calls, 1 tool call, no token counts" in html
    assert html.count("<tr>") == 1 + 3  # the header and three rows
    monkeypatch.setattr(trace_module, "HTML_ROWS", 2)
    html = trace._repr_html_()
    assert html.count("<tr>") == 1 + 2 and "And 1 more: <code>trace.to_pandas()</code>" in html


def test_a_question_nobody_answered_in_time_is_timed_out() -> None:
    def ask(request):
        raise HumanInputTimeout(60)

    questions = {
        "questions": [{"id": "p", "question": "P?", "choices": [{"label": "A", "value": "a"}]}]
    }
    model = QueueModel([call("ask_question", questions, id="q"), "ok"])
    agent = AgentBuilder("a", model).tool(ask_question).human_input(CallbackHumanInput(ask=ask))
    [asked] = agent.build().prompt("go").send_sync().trace.tool_calls
    assert asked.status == "timed_out" and asked.question.status == "timed_out"
    assert "did not answer within 60 s" in (asked.result or "")


async def test_a_run_stopped_while_waiting_to_retry_ends_its_model_call() -> None:
    waiting = asyncio.Event()

    def should_retry(context):
        waiting.set()
        return True

    model = StreamingQueueModel([[ModelError("busy", status_code=503)], [TextDelta(delta="ok")]])
    request = (
        AgentBuilder("a", model)
        .build()
        .prompt("hi")
        .with_completion_retries(
            max_attempts=3, initial_delay=60, max_delay=60, should_retry=should_retry
        )
    )
    run = request.start()
    await asyncio.wait_for(waiting.wait(), 5)
    await asyncio.sleep(0)  # into the wait before the next attempt
    run.cancel("Stop")
    with pytest.raises(PromptCancelledError):
        await run.wait()
    [turn] = request.trace.turns
    assert turn.error == "Stopped: Stop" and turn.duration_ms is not None


async def test_a_should_retry_that_raises_still_ends_the_model_call() -> None:
    def should_retry(context):
        raise ValueError("bad policy")

    model = StreamingQueueModel([[ModelError("busy", status_code=503)]])
    request = (
        AgentBuilder("a", model)
        .build()
        .prompt("hi")
        .with_completion_retries(max_attempts=3, should_retry=should_retry)
    )
    with pytest.raises(ValueError, match="bad policy"):
        await request.send()
    [turn] = request.trace.turns
    assert turn.error == "ModelError: busy" and request.trace.status == "error"


def test_a_tool_name_and_call_id_of_any_length_are_cut_in_inspect_and_the_table() -> None:
    """The model chooses them: 2,000,000 characters each stay within the Inspect view's bounds
    and the trace table a saved notebook keeps (the trace itself keeps them whole)."""
    from anvia_notebook.notebook._inspect import MAX_FIELD, inspect_turn

    name, call_id = "n" * 2_000_000, "i" * 2_000_000
    model = QueueModel([call(name, {"x": 1}, id=call_id), ModelResponse(text="done")])
    agent = AgentBuilder("a", model).tool(make_add_tool()).build()
    trace = agent.prompt("go").send_sync().trace
    assert trace.tool_calls[0].name == name and trace.tool_calls[0].id == call_id
    for index in (0, 1):
        _, view = inspect_turn(trace, index)
        size = len(json.dumps(view))
        assert size < 4 * MAX_FIELD, (index, size)
    _, view = inspect_turn(trace, 0)
    [shown] = view["tool_calls"]
    assert shown["name"].startswith("nnn") and "(1,998,000 more characters)" in shown["name"]
    assert shown["id"].startswith("iii") and "(1,998,000 more characters)" in shown["id"]
    html = trace._repr_html_()
    assert len(html) < 5_000 and "n" * 79 + "…" in html


def test_a_model_call_made_again_on_resume_owns_its_turns_tool_calls() -> None:
    """A model call cut short by a stopped process is made again as the same turn: the tool
    calls of that turn were listed under both calls (``calls_of``, Inspect) and shown in the
    table under the one cut short, before the call that asked for them."""
    when = "2026-01-01T00:00:00Z"
    trace = Trace.model_validate(
        {
            "run_id": "run_1",
            "agent_id": "a",
            "turns": [
                {"index": 0, "turn": 1, "request": {}, "started_at": when, "error": "Interrupted"},
                {"index": 1, "turn": 1, "request": {}, "started_at": when},
                {"index": 2, "turn": 2, "request": {}, "started_at": when},
            ],
            "tool_calls": [{"id": "c1", "name": "add", "turn": 1, "status": "success"}],
        }
    )
    assert [[c.id for c in trace.calls_of(i)] for i in range(3)] == [[], ["c1"], []]
    assert [(row["kind"], row["turn"]) for row in trace.rows()] == [
        ("model", 1),
        ("model", 1),
        ("tool", 1),
        ("model", 2),
    ]
    assert [c["id"] for c in trace.turn_view(0)["tool_calls"]] == []
    assert [c.id for c in trace.calls_of(trace.turns[1].model_copy())] == ["c1"]  # (a copy)

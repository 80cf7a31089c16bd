"""The transcript reducer, driven by run events directly."""

from __future__ import annotations

import sys
import tracemalloc
from collections import Counter
from typing import Any

from notebook_helpers import Recorder

from anvia_notebook.events import (
    ApprovalRecord,
    CancelledEvent,
    FinalEvent,
    QuestionRecord,
    TextDeltaEvent,
    ToolApprovalRequestEvent,
    ToolApprovalResultEvent,
    ToolCallDeltaEvent,
    ToolCallEvent,
    ToolQuestionRequestEvent,
    ToolResultEvent,
    TurnEndEvent,
    TurnStartEvent,
)
from anvia_notebook.messages import Usage
from anvia_notebook.models import ToolCall
from anvia_notebook.notebook._transcript import Transcript
from anvia_notebook.question_types import Question


def approval(status: str = "pending", **kw: Any) -> ApprovalRecord:
    return ApprovalRecord(
        id="ap1",
        run_id="r1",
        agent_id="agent",
        tool_name="refund",
        tool_call_id="c1",
        internal_call_id="i1",
        args={"amount": 3},
        reason="Check it",
        status=status,  # type: ignore[arg-type]
        **kw,
    )


def test_statuses_of_a_tool_from_deltas_to_done():
    r = Recorder()
    t = r.transcript
    t.begin_run("r1", "agent", "refund please")
    t.apply(TurnStartEvent(turn=1))
    t.apply(TextDeltaEvent(turn=1, delta="On it"))
    t.apply(ToolCallDeltaEvent(turn=1, id="c1", name=None, arguments_delta='{"amo'))
    t.apply(ToolCallDeltaEvent(turn=1, id="c1", name="refund", arguments_delta='unt": 3}'))
    r.check()
    tool = r.page.entries[2]
    assert tool["tool_name"] == "refund" and tool["arguments"] == '{"amount": 3}'
    assert tool["status"] == "running"
    t.apply(
        ToolCallEvent(turn=1, tool_call=ToolCall(id="c1", name="refund", arguments={"amount": 3}))
    )
    t.apply(TurnEndEvent(turn=1, usage=Usage(input_tokens=5, output_tokens=7)))
    t.apply(ToolApprovalRequestEvent(approval=approval()))
    r.check()
    assert r.page.status["state"] == "waiting"
    assert r.page.entries[2]["status"] == "approval_required"
    assert r.page.status["input_tokens"] == 5
    t.apply(ToolApprovalResultEvent(approval=approval("approved", decided_by="human")))
    r.check()
    assert r.page.entries[2]["status"] == "approved"
    assert r.page.entries[2]["approval"]["decided_by"] == "human"
    assert r.page.status["state"] == "running"
    t.apply(
        ToolResultEvent(
            turn=1,
            tool_name="refund",
            tool_call_id="c1",
            internal_call_id="i1",
            args='{"amount": 3}',
            result="ok",
        )
    )
    t.tool_output("r1", "c1", "i1", "printed\n")
    t.apply(
        FinalEvent(
            run_id="r1", output="", usage=Usage(input_tokens=9, output_tokens=9), messages=[]
        )
    )
    r.check()
    assert r.page.entries[2]["status"] == "done"
    assert r.page.entries[2]["output"] == "printed\n"
    assert r.page.status["state"] == "success"
    assert r.page.status["input_tokens"] == 9


def test_rejected_and_timed_out_stay_after_the_result():
    for status, expected in (("rejected", "rejected"), ("timed_out", "timed_out")):
        r = Recorder()
        t = r.transcript
        t.begin_run("r1", "agent", "x")
        t.apply(ToolCallEvent(turn=1, tool_call=ToolCall(id="c1", name="refund")))
        t.apply(ToolApprovalRequestEvent(approval=approval()))
        t.apply(ToolApprovalResultEvent(approval=approval(status, decided_by="runtime")))
        t.apply(
            ToolResultEvent(
                turn=1,
                tool_name="refund",
                tool_call_id="c1",
                internal_call_id="i1",
                args="{}",
                result="Tool approval was rejected.",
            )
        )
        r.check()
        assert r.page.entries[1]["status"] == expected


def test_a_call_skipped_by_a_hook_shows_skipped():
    r = Recorder()
    t = r.transcript
    t.begin_run("r1", "agent", "x")
    t.apply(ToolCallEvent(turn=1, tool_call=ToolCall(id="c1", name="refund")))
    t.apply(
        ToolResultEvent(
            turn=1,
            tool_name="refund",
            tool_call_id="c1",
            internal_call_id="i1",
            args="{}",
            result="Not during business hours.",
            skipped=True,
        )
    )
    r.check()
    assert r.page.entries[1]["status"] == "skipped"
    assert r.page.entries[1]["result"] == "Not during business hours."


def test_cancel_marks_everything_unfinished_cancelled():
    r = Recorder()
    t = r.transcript
    t.begin_run("r1", "agent", "x")
    t.apply(ToolCallEvent(turn=1, tool_call=ToolCall(id="c1", name="refund")))
    t.apply(ToolCallEvent(turn=1, tool_call=ToolCall(id="c2", name="ask_question")))
    t.apply(ToolApprovalRequestEvent(approval=approval()))
    question = QuestionRecord(
        id="qq",
        run_id="r1",
        agent_id="agent",
        tool_name="ask_question",
        tool_call_id="c2",
        internal_call_id="i2",
        questions=[Question(id="a", question="A?", choices=[{"label": "x", "value": "x"}])],
    )
    t.apply(ToolQuestionRequestEvent(question=question))
    r.check()
    t.apply(CancelledEvent(run_id="r1", reason="Stopped"))
    r.check()
    tools = [e for e in r.page.entries if e["kind"] == "tool"]
    assert [e["status"] for e in tools] == ["cancelled", "cancelled"]
    assert tools[0]["approval"]["status"] == "cancelled"
    assert tools[1]["question"]["status"] == "cancelled"
    assert tools[1]["result"] == '{"answers": []}'
    assert r.page.entries[-1]["text"] == "Run cancelled: Stopped"
    assert r.page.status["state"] == "cancelled"


def test_output_before_the_entry_is_known_is_kept_for_it():
    r = Recorder()
    t = r.transcript
    t.begin_run("r1", "agent", "x")
    t.tool_output("r1", None, "i9", "early ")
    t.tool_output("other-run", None, "i9", "ignored")
    t.apply(
        ToolResultEvent(
            turn=1, tool_name="t", tool_call_id="c9", internal_call_id="i9", args="{}", result="ok"
        )
    )
    r.check()
    assert r.page.entries[-1]["output"] == "early "


def test_printed_terminal_colours_and_cursor_moves_are_not_shown_as_text():
    """A tool's coloured print (a logging or testing library's) showed as "[31mRED[0m"; a
    sequence split between two prints is taken out whole; the run keeps what was printed."""
    r = Recorder()
    t = r.transcript
    t.begin_run("r1", "agent", "x")
    t.apply(ToolCallEvent(turn=1, tool_call=ToolCall(id="c1", name="check", arguments={})))
    t.tool_output("r1", "c1", "i1", "\x1b[1;3")  # (cut off: the rest comes next)
    t.tool_output("r1", "c1", "i1", "1mRED\x1b[0m plain \x1b]8;;https://x.test\x07link\x1b]8;;\x07")
    t.tool_output("r1", "c1", "i1", " \x1b[2K\x1b")
    t.tool_output("r1", "c1", "i1", "[Gdone \x1b(B\x1bMend\n\x1b]8;;https://y.test\x1b")
    t.tool_output("r1", "c1", "i1", "\\more\x1b]8;;\x1b\\\n")  # (a link cut at its ESC \\)
    r.check()
    [entry] = [e for e in r.page.entries if e["kind"] == "tool"]
    assert entry["output"] == "RED plain link done end\nmore\n"
    assert "\x1b" not in entry["output"]


def _fed(count: int, delta: str = "token ") -> tuple[Transcript, list[TextDeltaEvent]]:
    """A transcript with a run begun, and ``count`` text deltas (the same string) to feed it."""
    t = Transcript("a", emit=lambda op: None)
    t.begin_run("r", "a", "x")
    return t, [TextDeltaEvent(turn=1, delta=delta) for _ in range(count)]


def _calls(count: int) -> Counter[str]:
    """What feeding ``count`` text deltas calls (Python functions and built-ins), by name."""
    t, events = _fed(count)
    calls: Counter[str] = Counter()

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            calls[f"{frame.f_code.co_filename}:{frame.f_code.co_name}"] += 1
        elif event == "c_call":
            calls[getattr(arg, "__qualname__", repr(arg))] += 1

    earlier = sys.getprofile()
    sys.setprofile(profile)
    try:
        for event in events:
            t.apply(event)
    finally:
        sys.setprofile(earlier)
    return calls


def _memory_grown(count: int, delta: str) -> int:
    """Bytes the transcript holds more after ``count`` deltas (all one string object)."""
    t, events = _fed(count, delta)
    tracing = tracemalloc.is_tracing()  # already on (python -X tracemalloc): leave it on
    if not tracing:
        tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for event in events:
            t.apply(event)
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        if not tracing:
            tracemalloc.stop()


def test_text_deltas_are_constant_time():
    """The work per text delta does not grow with the text (the CPU figure per delta is
    benchmarks/kernel_cost.py's, at any --deltas): each delta is one append op carrying only
    itself, the same calls whatever came before and no join, and the text is kept as the
    pieces it came in (joined when read), not copied on each delta."""
    ops: list[dict[str, Any]] = []
    t = Transcript("a", emit=ops.append)
    t.begin_run("r", "a", "x")
    ops.clear()
    for _ in range(1000):
        t.apply(TextDeltaEvent(turn=1, delta="ab"))
    assert ops[0]["op"] == "add" and ops[0]["entry"]["text"] == "ab"
    assert (
        ops[1:]
        == [{"op": "append", "id": ops[0]["entry"]["id"], "field": "text", "text": "ab"}] * 999
    )
    assert t.entries[1]["text"] == "ab" * 1000

    one, two, three = _calls(1000), _calls(2000), _calls(3000)
    assert two - one == three - two  # each thousand deltas calls the same, in number and kind
    assert two - one, "the profile saw no calls"
    assert not [name for name in three if name.endswith("join")]  # joined when read, not here

    # A copy of the text on each delta (or every few hundred) would hold 1,000 times more
    # for 2,000-character deltas than for 2-character ones.
    short, long = _memory_grown(2000, "ab"), _memory_grown(2000, "ab" * 1000)
    assert long - short < 2000 * 100, (short, long)


def test_reset_clears_entries_and_keeps_the_agent():
    r = Recorder()
    r.transcript.begin_run("r1", "agent", "x")
    r.check()
    r.transcript.reset()
    r.check()
    assert r.page.entries == []
    assert r.page.status == {
        "state": "idle",
        "turn": 0,
        "input_tokens": 0,
        "output_tokens": 0,
        "error": None,
        "agent_id": "agent",
    }


def test_a_turn_made_again_after_a_stop_mid_stream_shows_its_text_apart():
    """A resumed run makes a model call that was cut short again, as the same turn: its text
    is a reply of its own after what the first try streamed, not glued to it."""
    r = Recorder()
    t = r.transcript
    t.begin_run("r1", "agent", "talk")
    t.apply(TurnStartEvent(turn=1))
    t.apply(TextDeltaEvent(turn=1, delta="partial "))
    t.apply(TextDeltaEvent(turn=1, delta="try "))  # (a second delta: the per-delta path)
    t.apply(TurnStartEvent(turn=1))
    t.apply(TextDeltaEvent(turn=1, delta="complete "))
    t.apply(TextDeltaEvent(turn=1, delta="answer"))
    r.check()
    replies = [e["text"] for e in r.page.entries if e["kind"] == "assistant"]
    assert replies == ["partial try ", "complete answer"]


async def test_a_sync_tool_stopped_while_it_ran_shows_as_cancelled_as_in_its_trace(monkeypatch):
    """Stop while a sync tool still runs: the trace says ``cancelled`` (it may have completed);
    the widget said ``error``. Played from the run's own events."""
    import asyncio

    import pytest

    from anvia_notebook import AgentBuilder, create_tool
    from anvia_notebook import tools as tools_module
    from anvia_notebook.errors import PromptCancelledError
    from anvia_notebook.models import ModelResponse, QueueModel

    monkeypatch.setattr(tools_module, "SYNC_TOOL_STOP_GRACE", 0.0, raising=False)
    import threading

    from pydantic import BaseModel

    class NoInput(BaseModel):
        pass

    started, release = threading.Event(), threading.Event()

    def slow(args: NoInput, ctx: Any) -> str:
        started.set()
        release.wait(10)
        return "done"

    tool = create_tool(name="slow_sync", description="Slow.", input=NoInput, execute=slow)
    call = ModelResponse(tool_calls=[ToolCall(id="c1", name="slow_sync", arguments={})])
    run = AgentBuilder("a", QueueModel([call, "never"])).tool(tool).build().prompt("go").start()
    try:
        assert await asyncio.to_thread(started.wait, 10)
        run.cancel("Stop")
        with pytest.raises(PromptCancelledError):
            await run.wait()
    finally:
        release.set()
    entry = _replayed_tool_entry(run)
    assert entry["status"] == "cancelled" == run.trace.tool_calls[0].status
    assert entry["result"].startswith("ToolCallStopped:") and entry["is_error"] is True


async def test_an_async_tool_stopped_while_it_awaited_gets_its_result_event_as_a_sync_one():
    """Stop while an async tool awaits: its ``tool_result`` event comes (it came for a sync tool
    only), saying it was cut short; the widget, the trace and the history agree."""
    import asyncio

    import pytest

    from anvia_notebook import AgentBuilder, tool
    from anvia_notebook.errors import PromptCancelledError
    from anvia_notebook.models import ModelResponse, QueueModel

    started = asyncio.Event()

    @tool
    async def slow_async() -> str:
        """Slow."""
        started.set()
        await asyncio.Event().wait()
        return "done"

    call = ModelResponse(tool_calls=[ToolCall(id="c1", name="slow_async", arguments={})])
    run = AgentBuilder("a", QueueModel([call, "never"])).tool(slow_async).build().prompt("go")
    run = run.start()
    await asyncio.wait_for(started.wait(), 10)
    run.cancel("Stop")
    with pytest.raises(PromptCancelledError):
        await run.wait()
    [event] = [e for e in run.events if e.type == "tool_result"]
    assert event.is_error and event.result.startswith(
        "ToolCallStopped: the run was stopped while slow_async was running; it was cancelled"
    )
    [told] = [r for m in run.state.messages if m.role == "tool" for r in m.tool_results]
    assert told.content == event.result
    entry = _replayed_tool_entry(run)
    assert entry["status"] == "cancelled" == run.trace.tool_calls[0].status


def _replayed_tool_entry(run: Any) -> dict[str, Any]:
    """A stopped run's events replayed into a transcript (checked against the page's copy):
    its one tool entry, as the page shows it."""
    r = Recorder()
    r.transcript.begin_run(run.run_id, "a", "go")
    for event in run.events:
        r.transcript.apply(event)
    r.check()
    [entry] = [e for e in r.page.entries if e["kind"] == "tool"]
    return entry

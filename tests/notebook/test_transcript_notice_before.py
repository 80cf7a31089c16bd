"""The note a transcript draws above the first tool call of a resumed run that waits for a
person (``Transcript.notice_before``): where it lands, whatever the replay brings."""

from __future__ import annotations

from anvia_notebook.events import AgentToolEvent, ToolCallDeltaEvent, ToolCallEvent, TurnStartEvent
from anvia_notebook.models import ToolCall
from anvia_notebook.notebook._transcript import Transcript

NOTE = "Resumed: ..."


def _kinds(t: Transcript) -> list[str]:
    return [f"{e['kind']}:{e.get('tool_call_id') or e.get('text')}" for e in t.entries]


def _call(call_id: str, turn: int = 1) -> ToolCallEvent:
    return ToolCallEvent(turn=turn, tool_call=ToolCall(id=call_id, name="refund", arguments={}))


def _begun() -> Transcript:
    t = Transcript("shop")
    t.begin_run("r1", "shop", "refund A-1")
    return t


def test_the_note_goes_above_the_first_call_that_waits():
    t = _begun()
    t.notice_before({"c2"}, NOTE)
    t.apply(TurnStartEvent(turn=1))
    t.apply(_call("c1"))
    t.apply(ToolCallDeltaEvent(turn=1, index=1, id="c2", name="refund", arguments_delta="{"))
    t.apply(_call("c2"))
    t.apply(_call("c3"))
    t.place_notice()  # drawn already: nothing more
    assert _kinds(t) == [
        "user:refund A-1",
        "tool:c1",
        f"notice:{NOTE}",
        "tool:c2",
        "tool:c3",
    ]


def test_without_a_waiting_call_the_note_goes_at_the_end_once():
    t = _begun()
    t.notice_before({"c9"}, NOTE)
    t.apply(_call("c1"))
    t.place_notice()
    t.place_notice()
    t.apply(_call("c9"))  # a later call with that id draws no second note
    assert _kinds(t) == ["user:refund A-1", "tool:c1", f"notice:{NOTE}", "tool:c9"]


def test_a_waiting_interaction_without_a_call_id_puts_the_note_first():
    t = _begun()
    t.notice_before({None, "c1"}, NOTE)
    t.apply(_call("c1"))
    assert _kinds(t) == ["user:refund A-1", f"notice:{NOTE}", "tool:c1"]


def test_a_sub_agents_call_with_the_same_id_is_not_the_one_that_waits():
    t = _begun()
    t.notice_before({"c1"}, NOTE)
    t.apply(
        AgentToolEvent(
            turn=1,
            tool_name="analyst",
            tool_call_id="lead-1",
            internal_call_id="i-lead-1",
            agent_id="analyst",
            run_id="sub-1",
            event=_call("c1"),
        )
    )
    t.apply(_call("c1"))
    # (the sub-agent's c1 is drawn inside lead-1, with no note; the lead's c1 has it)
    assert _kinds(t) == [
        "user:refund A-1",
        "tool:lead-1",
        "tool:c1",
        f"notice:{NOTE}",
        "tool:c1",
    ]

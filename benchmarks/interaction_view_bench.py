"""What the wire view of an approval or a question costs the kernel (issue 18's serialiser).

No browser and no kernel. Three figures, each the median of ``--repeats`` runs:

- ``serialiser``: the wire view of one record (``interaction_view``), per call, for a pending
  approval, a decided approval with edited arguments, and an answered question of three
  questions;
- ``transcript``: what one interaction costs the transcript, per interaction: a tool call, its
  approval asked and decided, its result (four events folded in, the ops JSON-encoded as the
  comm would send them), minus the same tool call without the approval;
- ``run``: a whole run of ``--turns`` turns, one protected tool call per turn approved by an
  approval handler, with and without a ``TranscriptSession`` attached (the run store off), per
  turn.

    python benchmarks/interaction_view_bench.py [--repeats 7] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("ANVIA_NOTEBOOK_STORE", "off")

from pydantic import BaseModel

from anvia_notebook import AgentBuilder, ToolApproval, create_tool
from anvia_notebook.events import (
    ApprovalRecord,
    QuestionRecord,
    ToolApprovalRequestEvent,
    ToolApprovalResultEvent,
    ToolCallEvent,
    ToolResultEvent,
    TurnStartEvent,
)
from anvia_notebook.models import FunctionModel, ModelResponse, ToolCall
from anvia_notebook.notebook import _transcript
from anvia_notebook.notebook._transcript import Transcript
from anvia_notebook.question_types import Answer, Choice, Question

try:  # after issue 18's wire view: the wire models' serialiser
    from anvia_notebook.notebook._protocol import interaction_view
except ImportError:  # before: the transcript's hand-built dict
    interaction_view = _transcript.interaction_view  # type: ignore[attr-defined]


class RefundInput(BaseModel):
    order_id: str


NOW = datetime(2026, 5, 1, 10, 0, tzinfo=timezone.utc)


def records() -> dict[str, ApprovalRecord | QuestionRecord]:
    common: dict[str, Any] = {"run_id": "r", "agent_id": "a", "path": ["a"], "tool_name": "refund"}
    pending = ApprovalRecord(
        id="ap1",
        tool_call_id="c1",
        args={"order_id": "A-1", "amount": 42.5, "notes": ["damaged", "late"]},
        reason="Refunds need a person.",
        expires_at=NOW + timedelta(minutes=5),
        **common,
    )
    decided = pending.model_copy(
        update={
            "status": "approved",
            "decided_by": "human",
            "decided_via": "widget",
            "resolved_at": NOW,
            "decision_reason": "Checked the order.",
            "edited_args": {"order_id": "A-1", "amount": 40.0, "notes": []},
        }
    )
    choices = [Choice(label=f"Option {i}", value=f"o{i}") for i in range(3)]
    question = QuestionRecord(
        id="q1",
        tool_call_id="c2",
        questions=[Question(id=f"q{i}", question=f"Which {i}?", choices=choices) for i in range(3)],
        status="answered",
        answers=[
            Answer(question_id=f"q{i}", answer=f"Option {i}", choice=f"o{i}") for i in range(3)
        ],
        decided_by="human",
        decided_via="widget",
        resolved_at=NOW,
        **common,
    )
    return {"pending approval": pending, "decided approval": decided, "answered question": question}


def time_per(fn: Callable[[], None], count: int, repeats: int) -> float:
    """Median seconds per call of ``fn`` run ``count`` times, over ``repeats`` runs."""
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(count):
            fn()
        samples.append((time.perf_counter() - start) / count)
    return statistics.median(samples)


def transcript_cost(interactions: int, repeats: int, with_approval: bool) -> float:
    """Seconds per tool call folded into a transcript (with its approval, or without)."""
    pending = records()["pending approval"]
    decided = records()["decided approval"]

    events: list[Any] = []  # made beforehand: only folding them in is timed
    for index in range(interactions):
        call_id = f"c{index}"
        call = ToolCall(id=call_id, name="refund", arguments='{"order_id": "A-1"}')
        events.append(ToolCallEvent(turn=1, tool_call=call))
        if with_approval:
            update = {"id": f"ap{index}", "tool_call_id": call_id, "internal_call_id": call_id}
            events.append(ToolApprovalRequestEvent(approval=pending.model_copy(update=update)))
            events.append(ToolApprovalResultEvent(approval=decided.model_copy(update=update)))
        events.append(
            ToolResultEvent(
                turn=1,
                tool_name="refund",
                tool_call_id=call_id,
                internal_call_id=call_id,
                args="",
                result="Refunded.",
            )
        )

    def run() -> None:
        transcript = Transcript("bench", emit=lambda op: json.dumps(op))
        transcript.begin_run("r", "a", "Refund, please.")
        transcript.apply(TurnStartEvent(turn=1))
        for event in events:
            transcript.apply(event)

    return time_per(run, 1, repeats) / interactions


def run_cost(turns: int, repeats: int, with_session: bool) -> float:
    """Seconds per turn of a run whose every turn has one protected call, approved."""

    def respond(request: Any) -> ModelResponse:
        done = sum(1 for m in request.messages if m.role == "tool")
        if done >= turns:
            return ModelResponse(text="All refunded.")
        return ModelResponse(
            tool_calls=[ToolCall(id=f"c{done}", name="refund", arguments={"order_id": "A-1"})]
        )

    tool = create_tool(
        name="refund",
        description="Refund an order.",
        input=RefundInput,
        execute=lambda args, _ctx: "Refunded.",
        approval=ToolApproval(reason="Refunds need a person."),
    )
    agent = AgentBuilder("bench", FunctionModel(respond)).tool(tool).build()

    async def main() -> None:
        request = agent.prompt("Refund, please.").approvals(lambda _request: True)
        run = request.create_run()
        if with_session:
            from anvia_notebook.notebook._session import TranscriptSession

            session = TranscriptSession(agent_id="bench", loop=asyncio.get_running_loop())
            session.attach(run)
        run.start()
        await run.wait()

    return time_per(lambda: asyncio.run(main()), 1, repeats) / turns


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--count", type=int, default=5000, help="serialiser calls per run")
    parser.add_argument("--interactions", type=int, default=500)
    parser.add_argument("--turns", type=int, default=15)
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args(argv)
    out: dict[str, float] = {}
    for name, record in records().items():
        seconds = time_per(lambda r=record: interaction_view(r), args.count, args.repeats)
        out[f"serialiser: {name} (µs per view)"] = seconds * 1e6
    plain = transcript_cost(args.interactions, args.repeats, with_approval=False)
    approved = transcript_cost(args.interactions, args.repeats, with_approval=True)
    out["transcript: tool call without approval (µs)"] = plain * 1e6
    out["transcript: tool call with approval (µs)"] = approved * 1e6
    out["transcript: the approval's two events (µs)"] = (approved - plain) * 1e6
    bare = run_cost(args.turns, args.repeats, with_session=False)
    shown = run_cost(args.turns, args.repeats, with_session=True)
    out["run: per protected turn, no view (µs)"] = bare * 1e6
    out["run: per protected turn, with a view (µs)"] = shown * 1e6
    for name, value in out.items():
        print(f"{name:<52} {value:>10.1f}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

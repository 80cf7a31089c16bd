"""Helpers for the widget tests: a fake page that talks to the kernel side like the real one.

``Page`` reads what the widget sent (``AnviaWidget.send`` is replaced by a recorder in
``conftest.py``), applies snapshots and numbered batches with a pure-Python op applier (the
reference for ``js/src/store.ts``), and sends page messages through the widget's own custom
message handler, exactly as dicts from the page arrive.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import itertools
import json
from typing import Any

from pydantic import BaseModel

from anvia_notebook import ApprovalDecision, create_tool
from anvia_notebook.models import FunctionModel, TextDelta
from anvia_notebook.notebook._protocol import ENTRY_FIELDS, parse_outbound
from anvia_notebook.notebook._transcript import Transcript
from anvia_notebook.notebook._widget import AnviaWidget

_ids = itertools.count(1)


class PageState:
    """The page's transcript: a snapshot plus the batches that follow it, seq checked."""

    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []
        self.status: dict[str, Any] | None = None
        self.seq: int | None = None
        self.gaps = 0

    def by_id(self, entry_id: str) -> dict[str, Any]:
        return next(e for e in self.entries if e["id"] == entry_id)

    def apply(self, message: dict[str, Any]) -> None:
        if message["type"] == "snapshot":
            assert message["seq"] == message["transcript"]["seq"]
            self.entries = copy.deepcopy(message["transcript"]["entries"])
            self.status = copy.deepcopy(message["transcript"]["status"])
            self.seq = message["seq"]
        elif message["type"] == "batch":
            if self.seq is None:
                return  # before the first snapshot: the page waits for the one it asked for
            if message["seq"] != self.seq + 1:
                self.gaps += 1
                return
            self.seq = message["seq"]
            for op in message["ops"]:
                self.apply_op(op)

    def apply_op(self, op: dict[str, Any]) -> None:
        kind = op["op"]
        if kind == "add":
            assert all(e["id"] != op["entry"]["id"] for e in self.entries), op
            self.entries.append(copy.deepcopy(op["entry"]))
        elif kind == "append":
            entry = self.by_id(op["id"])
            assert op["field"] in ENTRY_FIELDS[entry["kind"]], op
            entry[op["field"]] += op["text"]
        elif kind == "patch":
            entry = self.by_id(op["id"])
            assert set(op["changes"]) <= ENTRY_FIELDS[entry["kind"]], op
            entry.update(copy.deepcopy(op["changes"]))
        elif kind == "status":
            self.status = copy.deepcopy(op["status"])
        elif kind == "reset":
            self.entries = []
            assert self.status is not None
            self.status = {
                "state": "idle",
                "turn": 0,
                "input_tokens": 0,
                "output_tokens": 0,
                "error": None,
                "agent_id": self.status["agent_id"],
            }
        else:  # pragma: no cover
            raise AssertionError(op)

    def transcript(self) -> dict[str, Any]:
        return {"entries": self.entries, "status": self.status, "seq": self.seq}


class Recorder:
    """A transcript (of the agent ``agent_id``) and a page kept in step with it by its ops."""

    def __init__(self, agent_id: str = "agent") -> None:
        self.ops: list[dict[str, Any]] = []
        self.transcript = Transcript(agent_id, emit=self.ops.append)
        self.page = PageState()
        self.page.apply({"type": "snapshot", "seq": 0, "transcript": self.transcript.state(0)})
        self.seq = 0

    def check(self) -> None:
        """The ops so far, as one batch, bring a page to the same state."""
        self.seq += 1
        batch = {"type": "batch", "seq": self.seq, "ops": list(self.ops)}
        self.ops.clear()
        parse_outbound(batch)
        self.page.apply(batch)
        assert self.page.transcript() == self.transcript.state(self.seq)


def gated_model(gate: asyncio.Event) -> FunctionModel:
    """A model that streams "working", waits for ``gate``, then streams " done": a run that
    stays in progress until the test opens the gate."""

    async def stream(request: Any) -> Any:
        yield TextDelta(delta="working")
        await gate.wait()
        yield TextDelta(delta=" done")

    return FunctionModel(stream)


def sent(widget: AnviaWidget) -> list[dict[str, Any]]:
    """Everything the kernel sent to this widget so far."""
    return widget.__dict__.setdefault("_test_sent", [])


class Page:
    """One view of a widget: reads the kernel's messages from where it joined, sends requests."""

    def __init__(self, widget: AnviaWidget, *, from_start: bool = False) -> None:
        self.widget = widget
        self.state = PageState()
        self.cursor = 0 if from_start else len(sent(widget))
        self.replies: dict[str, dict[str, Any]] = {}
        self.studio: dict[str, Any] | None = None

    def pump(self) -> None:
        messages = sent(self.widget)
        while self.cursor < len(messages):
            message = messages[self.cursor]
            self.cursor += 1
            if message["type"] in ("reply", "inspect_reply"):
                self.replies[message["request_id"]] = message
            elif message["type"] == "studio":
                self.studio = message
            else:
                self.state.apply(message)

    def post(self, message: dict[str, Any]) -> str:
        """Send a page message (the request id is added); returns the request id."""
        request_id = message.get("request_id") or f"view-{next(_ids)}"
        self.widget._handle_custom_msg({**message, "request_id": request_id}, [])
        return request_id

    async def reply_to(self, request_id: str, timeout: float = 5.0) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            self.pump()
            if request_id in self.replies:
                return self.replies[request_id]
            if loop.time() > deadline:
                raise AssertionError(f"no reply to {request_id}")
            await asyncio.sleep(0.001)

    async def request(self, type: str, **fields: Any) -> dict[str, Any]:
        return await self.reply_to(self.post({"type": type, **fields}))

    async def sync(self) -> dict[str, Any]:
        reply = await self.request("sync")
        assert reply["ok"], reply
        return reply

    async def approve(
        self,
        approval_id: str,
        *,
        approved: bool = True,
        reason: str | None = None,
        edited_args: dict[str, Any] | None = None,
        always_allow: bool = False,
    ) -> dict[str, Any]:
        return await self.request(
            "approval_decision",
            approval_id=approval_id,
            approved=approved,
            reason=reason,
            edited_args=edited_args,
            always_allow=always_allow,
        )

    async def answer(self, question_id: str, answers: list[dict[str, Any]]) -> dict[str, Any]:
        return await self.request("question_answers", question_id=question_id, answers=answers)

    def tools(self) -> list[dict[str, Any]]:
        self.pump()
        return [e for e in self.state.entries if e["kind"] == "tool"]


async def until(predicate: Any, timeout: float = 5.0, what: str = "condition") -> Any:
    """Wait (yielding to the loop) until ``predicate()`` is truthy; returns its value."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.002)


async def pending_approval(page: Page, timeout: float = 5.0) -> dict[str, Any]:
    """The first tool entry with a pending approval (as the page sees it)."""

    def find() -> dict[str, Any] | None:
        for entry in page.tools():
            approval = entry.get("approval")
            if approval and approval["status"] == "pending":
                return entry
        return None

    result: dict[str, Any] = await until(find, timeout, "a pending approval")
    return result


async def pending_question(page: Page, timeout: float = 5.0) -> dict[str, Any]:
    def find() -> dict[str, Any] | None:
        for entry in page.tools():
            question = entry.get("question")
            if question and question["status"] == "pending":
                return entry
        return None

    result: dict[str, Any] = await until(find, timeout, "a pending question")
    return result


async def finished(handle: Any) -> None:
    """Wait for a handle's run to end (whatever the outcome) and its last messages."""
    with contextlib.suppress(Exception):
        await handle.wait()
    for _ in range(3):
        await asyncio.sleep(0)


def record_send(widget: AnviaWidget, content: Any, buffers: Any = None) -> None:
    """The recorder that replaces ``AnviaWidget.send``: checks every message on the way."""
    json.dumps(content)  # JSON-native, as the comm needs
    parse_outbound(content)  # valid under the protocol
    sent(widget).append(copy.deepcopy(content))


# -- tools -------------------------------------------------------------------------------------


class RefundInput(BaseModel):
    order_id: str
    amount: float
    reason: str = "Damaged item"


def refund_tool(**kwargs: Any) -> Any:
    from anvia_notebook import ToolApproval

    calls: list[RefundInput] = []

    def execute(args: RefundInput, ctx: Any) -> dict[str, Any]:
        calls.append(args)
        print(f"refunding {args.order_id}")
        return {"refund_id": f"rf_{args.order_id.lower()}", "amount": args.amount}

    tool = create_tool(
        name="issue_refund",
        description="Issue a refund.",
        input=RefundInput,
        execute=execute,
        approval=ToolApproval(
            reason=lambda ctx: (
                f"Review refund of ${ctx.args.amount} for order {ctx.args.order_id}."
            ),
            reject_message="Refund rejected.",
        ),
        **kwargs,
    )
    tool.calls = calls  # type: ignore[attr-defined]
    return tool


__all__ = [
    "ApprovalDecision",
    "Page",
    "PageState",
    "Recorder",
    "finished",
    "gated_model",
    "pending_approval",
    "pending_question",
    "record_send",
    "refund_tool",
    "sent",
    "until",
]

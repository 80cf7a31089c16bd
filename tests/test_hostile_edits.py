"""Edited arguments a person could send that every decider must treat alike: the run's own
(``run.interactions``, behind ``RunHandle`` and the widget) and the run store's (``RunStore`` in
any process, behind the command line). What one refuses the other refuses, with the same words,
before anything is recorded; nothing changes; the tool runs only with what was approved.
"""

from __future__ import annotations

import asyncio
import math
from datetime import date, datetime
from decimal import Decimal
from functools import partial
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from pydantic import BaseModel, Field
from test_safety_mutants import THREE_CHOICES, pending_in

from anvia_notebook import (
    AgentBuilder,
    ApprovalDecision,
    DecisionRefusedError,
    StoreHumanInput,
    ToolApproval,
    create_tool,
)
from anvia_notebook.models import QueueModel
from anvia_notebook.store import RunStore

from helpers import call, tool_results

FRONTS = ["run", "store"]


def _approve(front: str, run: Any, store: RunStore) -> Any:
    if front == "run":
        return partial(run.interactions.decide, approved=True)
    return partial(store.approve, run.run_id)


async def waiting_for_approval(
    store_path: Path, input_model: type[BaseModel], args: dict[str, Any]
):
    """A run waiting for the approval of a call of ``t`` (input ``input_model``), another store
    object, the approval, the calls the tool got and the model."""
    ran: list[BaseModel] = []
    tool = create_tool(
        name="t",
        description="A protected tool.",
        input=input_model,
        execute=lambda a, ctx: ran.append(a) or "ran",
        approval=ToolApproval(),
    )
    model = QueueModel([call("t", args), "done"])
    agent = AgentBuilder("a", model).tool(tool).human_input(StoreHumanInput()).build()
    run = agent.prompt("go").start()
    store = RunStore(store_path)
    [approval] = await pending_in(store, run.run_id)
    return run, store, approval, ran, model


async def _refusals(
    store_path: Path, input_model: type[BaseModel], args: dict[str, Any], edits: list[Any]
) -> dict[str, list[str]]:
    """What each front says refusing each of ``edits``, after checking that each refusal changed
    nothing (the approval still pending, in the run and in the store; the tool not run)."""
    said: dict[str, list[str]] = {}
    for front in FRONTS:
        run, store, approval, ran, _ = await waiting_for_approval(store_path, input_model, args)
        said[front] = []
        for edit in edits:
            with pytest.raises(DecisionRefusedError) as refused:
                _approve(front, run, store)(approval.id, args=edit)
            said[front].append(str(refused.value).replace(f" in run {run.run_id!r}", ""))
            assert [r.id for r in run.interactions.pending] == [approval.id]
            assert [r.id for r in store.pending(run.run_id)] == [approval.id]
        run.cancel("done")
        await asyncio.wait_for(asyncio.gather(run.wait(), return_exceptions=True), 5)
        assert ran == []
    return said


class Limits(BaseModel):
    limit: float | None = None
    note: Any = None


NOT_JSON = [
    {"limit": math.nan},
    {"limit": math.inf},
    {"limit": -math.inf},
    {"limit": 1.0, "note": [{"deep": [math.nan]}]},
]


async def test_nan_and_infinity_are_refused_by_every_decider(store_path: Path):
    """JSON has no NaN nor Infinity (the command line reads them, Python's json does): the store
    would keep them as null, so approving ``limit=NaN`` ran the tool with no limit at all."""
    said = await _refusals(store_path, Limits, {"limit": 5.0}, NOT_JSON)
    assert said["run"] == said["store"]
    assert all("NaN" in words or "Infinity" in words for words in said["run"])


@pytest.mark.parametrize("front", FRONTS)
async def test_the_tool_runs_with_the_edit_that_was_approved(store_path: Path, front: str):
    run, store, approval, ran, _ = await waiting_for_approval(store_path, Limits, {"limit": 5.0})
    with pytest.raises(DecisionRefusedError):
        _approve(front, run, store)(approval.id, args={"limit": math.nan})
    _approve(front, run, store)(approval.id, args={"limit": 2.5})
    assert (await asyncio.wait_for(run.wait(), 5)).output == "done"
    assert ran == [Limits(limit=2.5)]
    assert store.get(run.run_id).approvals[approval.id].edited_args == {"limit": 2.5}


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


async def test_a_deeply_nested_edit_is_refused_by_every_decider(store_path: Path):
    """An edit nested hundreds of levels deep cannot be written as JSON by the store: it broke
    the run's store (the run went on in memory only), raised a RecursionError to the person,
    and the tool still ran."""
    said = await _refusals(store_path, Limits, {"limit": 5.0}, [{"note": _nested(600)}])
    assert said["run"] == said["store"]
    assert "deep" in said["run"][0]


@pytest.mark.parametrize("front", FRONTS)
async def test_after_a_deep_edit_is_refused_the_run_and_its_store_go_on(
    store_path: Path, front: str
):
    run, store, approval, ran, _ = await waiting_for_approval(store_path, Limits, {"limit": 5.0})
    with pytest.raises(DecisionRefusedError):
        _approve(front, run, store)(approval.id, args={"note": _nested(600)})
    _approve(front, run, store)(approval.id, args={"note": _nested(20)})
    assert (await asyncio.wait_for(run.wait(), 5)).output == "done"
    assert ran == [Limits(limit=None, note=_nested(20))]
    assert run.store is not None
    assert store.status(run.run_id) == "success"


class Booking(BaseModel):
    when: datetime
    day: date | None = None
    ref: UUID | None = None


BOOKED = {"when": "2024-05-01T10:00:00Z"}


async def test_dates_and_ids_that_do_not_parse_are_refused_by_every_decider(store_path: Path):
    """The tool's JSON Schema says these strings are a date-time, a date, a uuid: another
    process refuses what the tool's model would refuse, instead of recording an approval the
    run then turns into a rejection."""
    edits = [
        {"when": "tomorrow"},
        {**BOOKED, "day": "2024-13-01"},
        {**BOOKED, "ref": "not-a-uuid"},
    ]
    said = await _refusals(store_path, Booking, BOOKED, edits)
    assert said["run"] == said["store"]


@pytest.mark.parametrize("front", FRONTS)
async def test_dates_the_tool_accepts_are_accepted_by_every_decider(store_path: Path, front: str):
    run, store, approval, ran, _ = await waiting_for_approval(store_path, Booking, BOOKED)
    edit = {
        "when": "2024-05-02 09:30",  # no zone, a space: the tool's model reads it
        "day": "2024-05-02",
        "ref": "12345678-1234-5678-1234-567812345678",
    }
    decided = _approve(front, run, store)(approval.id, args=edit)
    assert decided.status == "approved"
    assert (await asyncio.wait_for(run.wait(), 5)).output == "done"
    assert [b.model_dump(mode="json") for b in ran] == [
        {
            "when": "2024-05-02T09:30:00",
            "day": "2024-05-02",
            "ref": "12345678-1234-5678-1234-567812345678",
        }
    ]


class Legacy(BaseModel):
    prompt: str


async def test_edited_questions_the_run_refuses_are_refused_by_every_decider(store_path: Path):
    """An approval-guarded ``ask_question``: a blank question or two questions with one id
    broke no rule of the JSON Schema, so another process recorded them approved and the run then
    rejected the call; the questions' own rules are known in every process."""
    own = create_tool(
        name="ask_question",
        description="Ask the operator.",
        input=Legacy,
        execute=lambda args, ctx: "unused",
        approval=ToolApproval(),
    )
    edits = [
        {"questions": [{"question": "   ", "choices": ["s"]}]},
        {
            "questions": [
                {"id": "fit", "question": "Fit?", "choices": ["s"]},
                {"id": "fit", "question": "Fit, again?", "choices": ["m"]},
            ]
        },
    ]
    said: dict[str, list[str]] = {}
    for front in FRONTS:
        model = QueueModel([call("ask_question", THREE_CHOICES), "done"])
        agent = AgentBuilder("a", model).tool(own).human_input(StoreHumanInput()).build()
        run = agent.prompt("go").start()
        store = RunStore(store_path)
        [approval] = await pending_in(store, run.run_id)
        said[front] = []
        for edit in edits:
            with pytest.raises(DecisionRefusedError) as refused:
                _approve(front, run, store)(approval.id, args=edit)
            said[front].append(str(refused.value).replace(f" in run {run.run_id!r}", ""))
            assert [r.id for r in store.pending(run.run_id)] == [approval.id]
        run.cancel("done")
        await asyncio.wait_for(asyncio.gather(run.wait(), return_exceptions=True), 5)
        assert len(model.requests) == 1  # the model was told nothing
    assert said["run"] == said["store"]
    assert "non-empty" in said["run"][0] and "unique" in said["run"][1]


async def test_a_refused_edit_tells_the_model_nothing_and_a_later_approval_runs_the_tool(
    store_path: Path,
):
    run, store, approval, ran, model = await waiting_for_approval(store_path, Booking, BOOKED)
    with pytest.raises(DecisionRefusedError):
        store.approve(run.run_id, approval.id, args={"when": "tomorrow"})
    store.approve(run.run_id, approval.id)
    assert (await asyncio.wait_for(run.wait(), 5)).output == "done"
    assert tool_results(model.requests[1])[0].content == "ran"
    assert len(ran) == 1


def _looped() -> dict[str, Any]:
    looped: dict[str, Any] = {"limit": 1.0}
    looped["note"] = {"back": looped}
    return looped


async def test_edits_that_are_no_json_object_at_all_are_refused_by_every_decider(
    store_path: Path,
):
    """Deeper than Python's JSON writer can go (thousands of levels), an object that holds itself,
    or keys that are not texts (JSON keys are; a store would keep ``5`` as ``"5"``, a tuple not at
    all): the decision raised RecursionError, ValueError or TypeError, or (an int key) was
    recorded as something the store could not keep as it was."""
    edits = [{"note": _nested(5000)}, _looped(), {"limit": 1.0, 5: "x"}, {("a", "b"): 1}]
    said = await _refusals(store_path, Limits, {"limit": 5.0}, edits)
    assert said["run"] == said["store"]
    assert "deep" in said["run"][0] and "deep" in said["run"][1]
    assert all("keys of an object must be texts" in words for words in said["run"][2:])


@pytest.mark.parametrize("front", FRONTS)
@pytest.mark.parametrize("approved", [True, False])
async def test_a_reason_that_is_not_a_text_is_refused(store_path: Path, front: str, approved):
    """A reason given as a number, a list or bytes raised AttributeError from deep inside, or
    (bytes) was recorded as the reason the model is told."""
    run, store, approval, ran, model = await waiting_for_approval(store_path, Limits, {})
    decide = (
        partial(run.interactions.decide, approved=approved)
        if front == "run"
        else partial(store.approve if approved else store.reject, run.run_id)
    )
    for reason in (123, ["no"], b"no"):
        with pytest.raises(DecisionRefusedError, match="The reason must be a text, not "):
            decide(approval.id, reason=reason)
        assert [r.id for r in run.interactions.pending] == [approval.id]
        assert [r.id for r in store.pending(run.run_id)] == [approval.id]
    # A 20 MB reason was taken: the model, the page, the trace and the store each got a copy.
    with pytest.raises(DecisionRefusedError, match="is 20,000,000 characters long; at most 20,"):
        decide(approval.id, reason="R" * 20_000_000)
    assert [r.id for r in store.pending(run.run_id)] == [approval.id]
    decide(approval.id, reason="  because  ")
    assert (await asyncio.wait_for(run.wait(), 5)).output == "done"
    assert ran == ([Limits()] if approved else [])
    record = store.get(run.run_id).approvals[approval.id]
    assert record.decision_reason == "because"
    if not approved:
        [told] = tool_results(model.requests[-1])
        assert told.content == "because"


@pytest.mark.parametrize("front", FRONTS)
async def test_a_decider_the_record_has_no_word_for_is_refused(store_path: Path, front: str):
    """``decided_by="admin"`` was recorded as it was in the run, where the record's own type
    allows six deciders only; read back from the store it said ``runtime``."""
    run, store, approval, ran, _ = await waiting_for_approval(store_path, Limits, {})
    approve = _approve(front, run, store)
    with pytest.raises(DecisionRefusedError, match="Unknown decided_by 'admin'"):
        approve(approval.id, decided_by="admin")
    with pytest.raises(DecisionRefusedError, match="Unknown via 'email'"):
        approve(approval.id, via="email")
    assert [r.id for r in store.pending(run.run_id)] == [approval.id]
    approve(approval.id, decided_by="policy")
    assert (await asyncio.wait_for(run.wait(), 5)).output == "done"
    assert ran == [Limits()]
    for record in (run.state.approvals[approval.id], store.get(run.run_id).approvals[approval.id]):
        assert record.decided_by == "policy"
        assert record.decided_via == (None if front == "run" else "store")


@pytest.mark.parametrize("front", FRONTS)
async def test_an_approval_given_by_neither_id_nor_record_is_refused(store_path: Path, front: str):
    """``approve(123)`` (or None, or a dict of the record) raised AttributeError from inside."""
    run, store, approval, ran, _ = await waiting_for_approval(store_path, Limits, {})
    approve = _approve(front, run, store)
    for given in (123, None, approval.model_dump()):
        with pytest.raises(DecisionRefusedError, match=r"given by its id \(a text\) or its record"):
            approve(given)
    assert [r.id for r in store.pending(run.run_id)] == [approval.id]
    approve(approval)  # its record
    assert (await asyncio.wait_for(run.wait(), 5)).output == "done"
    assert ran == [Limits()]


class Coded(BaseModel):
    code: str = Field(pattern=r"^(a+)+$")


@pytest.mark.timeout(30)
@pytest.mark.parametrize("front", FRONTS)
async def test_an_edit_against_a_pattern_that_backtracks_does_not_hang(store_path, front):
    """A tool's field declared with ``pattern=r"^(a+)+$"``: checking the edit ``aaaa...!``
    against its JSON Schema took Python's regular expressions hours (the kernel frozen, or the
    terminal's ``approve``); the tool's own model never did. Refused at once, by every decider."""
    run, store, approval, ran, _ = await waiting_for_approval(store_path, Coded, {"code": "a"})
    with pytest.raises(DecisionRefusedError, match="does not match"):
        _approve(front, run, store)(approval.id, args={"code": "a" * 40 + "!"})
    _approve(front, run, store)(approval.id, args={"code": "aaa"})
    assert (await asyncio.wait_for(run.wait(), 5)).output == "done"
    assert ran == [Coded(code="aaa")]


class Refund(BaseModel):
    order_id: str
    amount: float


class Open(BaseModel, extra="allow"):
    order_id: str


async def test_a_key_the_tool_has_no_argument_of_is_refused_by_every_decider(store_path: Path):
    """The tool's input would drop it, so the record would say the tool ran with what it never
    got (before: recorded as the edit, and silently left out of the call)."""
    edits = [{"order_id": "A", "amount": 1, "notify_customer": False}, {"orderId": "A"}]
    said = await _refusals(store_path, Refund, {"order_id": "A", "amount": 5}, edits)
    assert said["run"] == said["store"]
    assert said["run"][0] == (
        "The edited arguments are not valid for t: 'notify_customer' is not among its "
        "arguments (order_id, amount)"
    )
    assert "'orderId' is not among its arguments" in said["run"][1]


async def test_a_tool_that_takes_any_key_takes_an_edit_with_more(store_path: Path):
    run, store, approval, ran, _ = await waiting_for_approval(store_path, Open, {"order_id": "A"})
    store.approve(run.run_id, approval.id, args={"order_id": "B", "note": "call first"})
    assert (await asyncio.wait_for(run.wait(), 5)).output == "done"
    assert ran == [Open(order_id="B", note="call first")]


class Priced(BaseModel):
    amount: Decimal
    when: datetime
    tags: set[str] = set()


@pytest.mark.parametrize("front", FRONTS)
async def test_python_values_pydantic_writes_as_json_are_taken_as_it_writes_them(
    store_path: Path, front: str
):
    """An edit holding a Decimal, a datetime or a set (what a notebook user has at hand) ended
    the run with "Object of type Decimal is not JSON serializable"; it is the text pydantic
    writes, which the tool's model reads back."""
    run, store, approval, ran, _ = await waiting_for_approval(
        store_path, Priced, {"amount": "10", "when": "2024-05-01T10:00:00"}
    )
    edit = {"amount": Decimal("5.50"), "when": datetime(2024, 5, 2, 9, 30), "tags": {"vip"}}
    decided = _approve(front, run, store)(approval.id, args=edit)
    assert decided.edited_args == {
        "amount": "5.50",
        "when": "2024-05-02T09:30:00",
        "tags": ["vip"],
    }
    assert (await asyncio.wait_for(run.wait(), 5)).output == "done"
    assert ran == [Priced(amount=Decimal("5.50"), when=datetime(2024, 5, 2, 9, 30), tags={"vip"})]


async def test_an_edit_holding_what_json_cannot_hold_is_refused_by_every_decider(
    store_path: Path,
):
    """Before: recorded, then the run ended with "Object of type ... is not JSON
    serializable"."""
    edits = [{"limit": 1.0, "note": object()}, {"note": [1, {"x": Path}]}]
    said = await _refusals(store_path, Limits, {"limit": 5.0}, edits)
    assert said["run"] == said["store"]
    assert "a value of type object has no JSON form" in said["run"][0]
    assert "a value of type type has no JSON form" in said["run"][1]


async def test_an_approval_handler_s_edit_of_python_values_runs_the_tool_with_them():
    ran: list[Priced] = []
    tool = create_tool(
        name="t",
        description="A protected tool.",
        input=Priced,
        execute=lambda a, ctx: ran.append(a) or "ran",
        approval=ToolApproval(),
    )
    model = QueueModel([call("t", {"amount": "10", "when": "2024-05-01T10:00:00"}), "done"])
    edit = {"amount": Decimal("5.50"), "when": datetime(2024, 5, 2, 9, 30)}
    response = await (
        AgentBuilder("a", model)
        .tool(tool)
        .approvals(lambda request: ApprovalDecision(approved=True, args=edit))
        .build()
        .prompt("go")
        .store(None)
        .send()
    )
    assert response.output == "done"
    assert ran == [Priced(amount=Decimal("5.50"), when=datetime(2024, 5, 2, 9, 30))]

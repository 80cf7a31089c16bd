"""Shared test helpers: tools and model responses used across the runtime tests."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from anvia_notebook import AgentBuilder, StoreHumanInput, create_tool
from anvia_notebook.decisions import RAN_WITH_EDITS
from anvia_notebook.models import ModelResponse, ToolCall


class Empty(BaseModel):
    """A tool's input with no fields."""


class AddInput(BaseModel):
    x: int
    y: int


def make_add_tool(**kwargs: Any):
    calls: list[tuple[int, int]] = []

    def execute(args: AddInput, ctx: Any) -> int:
        calls.append((args.x, args.y))
        return args.x + args.y

    tool = create_tool(
        name="add", description="Add two numbers.", input=AddInput, execute=execute, **kwargs
    )
    tool.calls = calls  # type: ignore[attr-defined]
    return tool


def make_gated_tool(name: str, description: str) -> Any:
    """An add tool that, once called, sets ``tool.started`` and waits for ``tool.release``
    (asyncio events) before it answers: it holds a run inside a tool call until the test lets
    it go on."""
    started, release = asyncio.Event(), asyncio.Event()

    async def execute(args: AddInput, ctx: Any) -> int:
        started.set()
        await release.wait()
        return args.x + args.y

    tool = create_tool(name=name, description=description, input=AddInput, execute=execute)
    tool.started, tool.release = started, release  # type: ignore[attr-defined]
    return tool


class NoteInput(BaseModel):
    text: str


def make_note_tool(name: str = "note", description: str = "", **kwargs: Any):
    """A tool that records the texts it was called with in ``tool.calls``."""
    notes: list[str] = []

    def execute(args: NoteInput, ctx: Any) -> str:
        notes.append(args.text)
        return "noted"

    tool = create_tool(
        name=name, description=description, input=NoteInput, execute=execute, **kwargs
    )
    tool.calls = notes  # type: ignore[attr-defined]
    return tool


def ran_with(name: str, args: Any, result: str) -> str:
    """``result`` as the model is told it when an approval changed the arguments of a call of
    the tool ``name`` to ``args`` (it is told them first: its own call in the history still has
    its own)."""
    written = json.dumps(args, separators=(",", ":"), ensure_ascii=False)
    return RAN_WITH_EDITS.format(args=written) + result


def call(name: str, arguments: Any = None, id: str = "call_1") -> ModelResponse:
    return ModelResponse(
        tool_calls=[
            ToolCall(id=id, name=name, arguments=arguments if arguments is not None else {})
        ]
    )


def calls(*items: tuple[str, Any, str]) -> ModelResponse:
    return ModelResponse(tool_calls=[ToolCall(id=i, name=n, arguments=a) for n, a, i in items])


async def wait_on_events(run: Any, done: Callable[[], Any]) -> None:
    """Wait, on the run's events (no clock), until ``done()`` is true."""
    changed = asyncio.Event()
    unsubscribe = run.subscribe(lambda event: changed.set(), replay=False)
    try:
        while not done():
            changed.clear()
            await changed.wait()
    finally:
        unsubscribe()


async def pending_of(run: Any, count: int = 1, timeout: float = 60.0) -> list[Any]:
    """The interactions pending on ``run`` (its sub-agents' runs' included) once ``count`` are,
    waited for on the run's events (``timeout`` only turns a hang into a clear failure)."""
    try:
        await asyncio.wait_for(
            wait_on_events(run, lambda: len(run.interactions.pending) >= count), timeout
        )
    except asyncio.TimeoutError:
        raise AssertionError(f"fewer than {count} interactions became pending") from None
    return run.interactions.pending


def tool_results(request) -> list:
    """The tool results of the last tool message in a recorded completion request."""
    return [m for m in request.messages if m.role == "tool"][-1].tool_results


def stored_decision(store: Any, item_id: str) -> tuple[str, dict[str, Any] | None]:
    """``(status, decision)`` of an interaction as ``store`` holds it, the decision in the JSON
    form older stores kept beside the record (None while pending): what the tests compare."""
    record = store.record(item_id)
    assert record is not None, f"no interaction {item_id!r} in the store"
    if record.pending:
        return record.status, None
    by = record.decided_by or "human"
    if record.kind == "question":
        return record.status, {"answers": [a.to_wire() for a in record.answers], "decided_by": by}
    edited = record.edited_args if isinstance(record.edited_args, dict) else None
    return record.status, {
        "approved": record.status == "approved",
        "reason": record.decision_reason,
        "args": edited,
        "decided_by": by,
    }


def fix_asking_agent(model: Any, output_type: Any, timeout: float | None = None) -> Any:
    """An agent whose typed output, when invalid, is put to a person to fix at once (no paid
    retry), waiting through the run store's human input (``StoreHumanInput(timeout)``)."""
    return (
        AgentBuilder("typed", model)
        .output_type(output_type, retries=0)
        .human_input(StoreHumanInput(timeout=timeout))
        .build()
    )

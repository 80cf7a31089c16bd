"""Batching: a few hundred messages for a long stream, appends merged, flushes when it matters."""

from __future__ import annotations

import asyncio
import itertools
import time
from typing import Any

from notebook_helpers import Page, finished, pending_approval, refund_tool, sent

from anvia_notebook import AgentBuilder
from anvia_notebook.models import FunctionModel, ModelResponse, QueueModel, TextDelta, ToolCall
from anvia_notebook.notebook import runner
from anvia_notebook.notebook.batcher import Batcher


async def test_twenty_thousand_deltas_make_a_few_hundred_batches_with_exact_text():
    pieces = [f"t{i} " for i in range(20_000)]

    async def stream(request: Any) -> Any:
        for index, piece in enumerate(pieces):
            yield TextDelta(delta=piece)
            if index % 50 == 0:
                await asyncio.sleep(0.0005)  # a provider's pace: the loop turns meanwhile

    handle = runner.show(AgentBuilder("a", FunctionModel(stream)).build().prompt("go"))
    page = Page(handle.widget)
    await page.sync()
    started = time.monotonic()
    await finished(handle)
    elapsed = time.monotonic() - started
    page.pump()
    batches = [m for m in sent(handle.widget) if m["type"] == "batch"]
    assert 1 < len(batches) <= max(10, int(elapsed / 0.03) + 10)
    assert len(batches) < 400
    assert page.state.entries[1]["text"] == "".join(pieces)
    assert page.state.transcript() == handle.session.state()
    # Consecutive appends to the same field went out merged: one append op per batch at most.
    for batch in batches:
        appends = [op for op in batch["ops"] if op["op"] == "append"]
        assert len(appends) <= 1


async def test_batches_are_spaced_by_the_interval():
    sent_at: list[float] = []
    batcher = Batcher(lambda message: sent_at.append(time.monotonic()), interval=0.03)
    batcher.bind(asyncio.get_running_loop())
    for index in range(200):
        batcher.push({"op": "append", "id": "e1", "field": "text", "text": str(index)})
        await asyncio.sleep(0.001)
    await asyncio.sleep(0.05)
    gaps = [b - a for a, b in itertools.pairwise(sent_at)]
    assert len(sent_at) >= 2
    assert min(gaps) >= 0.025


def test_appends_merge_and_status_ops_collapse():
    messages: list[dict[str, Any]] = []
    batcher = Batcher(messages.append)
    status = {
        "state": "running",
        "turn": 1,
        "input_tokens": 0,
        "output_tokens": 0,
        "error": None,
        "agent_id": "a",
    }
    batcher.push({"op": "append", "id": "e1", "field": "text", "text": "a"})
    batcher.push({"op": "append", "id": "e1", "field": "text", "text": "b"})
    batcher.push({"op": "append", "id": "e2", "field": "text", "text": "c"})
    batcher.push({"op": "append", "id": "e2", "field": "output", "text": "d"})
    batcher.push({"op": "status", "status": status})
    batcher.push({"op": "status", "status": {**status, "turn": 2}})
    batcher.push({"op": "append", "id": "e1", "field": "text", "text": "e"})
    assert batcher.pending == 5
    assert messages == []  # no loop bound: only explicit flushes
    assert batcher.flush()
    assert not batcher.flush()
    assert messages == [
        {
            "type": "batch",
            "seq": 1,
            "ops": [
                {"op": "append", "id": "e1", "field": "text", "text": "ab"},
                {"op": "append", "id": "e2", "field": "text", "text": "c"},
                {"op": "append", "id": "e2", "field": "output", "text": "d"},
                {"op": "status", "status": {**status, "turn": 2}},
                {"op": "append", "id": "e1", "field": "text", "text": "e"},
            ],
        }
    ]


async def test_a_pending_approval_is_flushed_at_once():
    handle = runner.show(
        AgentBuilder(
            "shop",
            QueueModel(
                [
                    ModelResponse(
                        tool_calls=[
                            ToolCall(
                                id="c1",
                                name="issue_refund",
                                arguments={"order_id": "A", "amount": 1},
                            )
                        ]
                    ),
                    "ok",
                ]
            ),
        )
        .tools([refund_tool()])
        .build()
        .prompt("refund"),
    )
    handle.session.batcher.interval = 60.0  # only the flushes that do not wait for the timer
    page = Page(handle.widget)
    await page.sync()
    entry = await pending_approval(page, timeout=2)
    assert (await page.approve(entry["approval"]["id"]))["ok"]
    await finished(handle)
    page.pump()
    assert page.state.status["state"] == "success"  # flushed at the end too

"""Batching: a few hundred messages for a long stream, appends merged, flushes when it matters."""

from __future__ import annotations

import asyncio
import itertools
import time
from typing import Any

import pytest
import virtual_time
from notebook_helpers import Page, finished, pending_approval, refund_tool, sent, until

from anvia_notebook import AgentBuilder, create_hook
from anvia_notebook.events import TextDeltaEvent
from anvia_notebook.models import FunctionModel, ModelResponse, QueueModel, TextDelta, ToolCall
from anvia_notebook.notebook import _runner as runner
from anvia_notebook.notebook._batcher import DEFAULT_INTERVAL, Batcher


def test_twenty_thousand_deltas_go_out_in_one_batch_per_interval_with_exact_text():
    """On a virtual clock (the loop's, the batcher's): 20,000 deltas over 2 s of a provider's
    pace go out as about one batch per 50 ms interval, with the exact text, appends merged."""
    pieces = [f"t{i} " for i in range(20_000)]

    async def stream(request: Any) -> Any:
        for index, piece in enumerate(pieces):
            yield TextDelta(delta=piece)
            if index % 50 == 49:
                await asyncio.sleep(0.005)  # a provider's pace: the loop turns meanwhile

    async def main() -> None:
        loop = asyncio.get_running_loop()
        started = loop.time()
        handle = runner.show(AgentBuilder("a", FunctionModel(stream)).build().prompt("go"))
        batcher = handle.session.batcher
        batcher._clock = loop.time
        assert batcher.interval == DEFAULT_INTERVAL
        sent_at: list[float] = []
        send = batcher._send

        def timed(message: dict[str, Any]) -> None:
            sent_at.append(loop.time())
            send(message)

        batcher._send = timed
        page = Page(handle.widget)
        await page.sync()
        await finished(handle)
        assert loop.time() - started == pytest.approx(2.0)  # 400 pauses of 5 ms, nothing else
        page.pump()
        batches = [m for m in sent(handle.widget) if m["type"] == "batch"]
        assert len(batches) == len(sent_at)
        # While it streams (after the view's sync, before the end of the turn and of the run,
        # which go out at once): a batch every interval, so 39 for 2 s, each with ~500 deltas.
        streaming = [t - started for t in sent_at if started < t < started + 2.0 - 1e-9]
        assert streaming == pytest.approx([k * DEFAULT_INTERVAL for k in range(1, 40)])
        assert len(batches) <= len(streaming) + 4
        assert page.state.entries[1]["text"] == "".join(pieces)
        assert page.state.transcript() == handle.session.state()
        # Consecutive appends to the same field went out merged: one append op per batch at most.
        for batch in batches:
            appends = [op for op in batch["ops"] if op["op"] == "append"]
            assert len(appends) <= 1

    virtual_time.run(main)


def test_batches_are_spaced_by_the_interval():
    """200 pushes 1 ms apart on a virtual clock: a batch every 30 ms, none sooner."""

    async def main() -> list[float]:
        loop = asyncio.get_running_loop()
        sent_at: list[float] = []
        texts: list[str] = []

        def send(message: dict[str, Any]) -> None:
            sent_at.append(loop.time())
            texts.extend(op["text"] for op in message["ops"])

        batcher = Batcher(send, interval=0.03, clock=loop.time)
        batcher.bind(loop)
        started = loop.time()
        for index in range(200):
            batcher.push({"op": "append", "id": "e1", "field": "text", "text": f"{index} "})
            await asyncio.sleep(0.001)
        await asyncio.sleep(0.05)
        assert "".join(texts) == "".join(f"{i} " for i in range(200))
        return [t - started for t in sent_at]

    sent_at = virtual_time.run(main)
    gaps = [b - a for a, b in itertools.pairwise(sent_at)]
    assert min(gaps) >= 0.03 - 1e-9
    # The first push goes out at once (nothing was sent for an interval), then a batch every
    # interval while pushes keep coming, and one for the last pushes (at 180-199 ms).
    assert sent_at == pytest.approx([k * 0.03 for k in range(8)])


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


async def test_a_producer_that_never_yields_still_gets_a_batch_every_interval():
    """The loop is hogged (no await between deltas), so the timer cannot run: the push that
    finds the oldest waiting op an interval old sends the batch."""
    now = [100.0]
    messages: list[dict[str, Any]] = []
    batcher = Batcher(messages.append, interval=0.05, clock=lambda: now[0])
    batcher.bind(asyncio.get_running_loop())
    batcher.flush()
    for index in range(30):  # 30 deltas, 20 ms apart, never yielding to the loop
        batcher.push({"op": "append", "id": "e1", "field": "text", "text": f"{index} "})
        now[0] += 0.02
    # Sent while the producer still held the loop: each time the oldest waiting delta had
    # waited 50 ms (pushed at 0, 20, 40 ms: sent with the one pushed at 60 ms).
    assert [len(m["ops"]) for m in messages] == [1] * 7
    assert [m["ops"][0]["text"] for m in messages] == [
        "".join(f"{i} " for i in range(start, start + 4)) for start in range(0, 28, 4)
    ]
    assert [m["seq"] for m in messages] == list(range(1, 8))
    await asyncio.sleep(0)  # the loop turns: the timer sends the rest
    batcher.flush()
    text = "".join(op["text"] for m in messages for op in m["ops"])
    assert text == "".join(f"{i} " for i in range(30))


async def test_a_hogged_loop_streams_a_whole_run_in_several_batches():
    """Through a run: a model that streams without ever awaiting still reaches the page in
    batches while it streams, not in one batch at the end."""
    now = [time.monotonic()]  # the run's first ops are stamped with the real clock

    async def stream(_request: Any) -> Any:
        for index in range(40):
            now[0] += 0.01  # 10 ms of work per token, never giving the loop a turn
            yield TextDelta(delta=f"w{index} ")

    handle = runner.show(AgentBuilder("a", FunctionModel(stream)).build().prompt("go"))
    handle.session.batcher._clock = lambda: now[0]
    page = Page(handle.widget)
    await page.sync()
    await finished(handle)
    page.pump()
    batches = [m for m in sent(handle.widget) if m["type"] == "batch"]
    texts = [
        "".join(op.get("text", "") for op in b["ops"] if op["op"] == "append") for b in batches
    ]
    assert sum(1 for text in texts if text) >= 6  # 400 ms of streaming, a batch every 50 ms
    assert page.state.entries[1]["text"] == "".join(f"w{i} " for i in range(40))


async def test_a_turns_last_text_reaches_the_page_before_the_end_of_run_work():
    """The end of a turn sends the batch at once: the text's last piece is on its way to the
    page before the run-end hooks, the store's last write and the static copy."""
    seen_at_run_end: list[str] = []

    async def stream(_request: Any) -> Any:
        for index in range(30):
            yield TextDelta(delta=f"w{index} ")

    def on_run_end(_event: Any) -> None:  # the assistant text the page has been sent so far
        text, ids = "", set()
        for message in sent(handle.widget):
            for op in message.get("ops", []) if message["type"] == "batch" else []:
                if op["op"] == "add" and op["entry"]["kind"] == "assistant":
                    ids.add(op["entry"]["id"])
                    text += op["entry"]["text"]
                elif op["op"] == "append" and op["id"] in ids and op["field"] == "text":
                    text += op["text"]
        seen_at_run_end.append(text)

    agent = AgentBuilder("a", FunctionModel(stream)).hook(create_hook(on_run_end=on_run_end))
    handle = runner.show(agent.build().prompt("go"))
    handle.session.batcher.interval = 60.0  # only the flushes that do not wait for the timer
    await finished(handle)
    assert handle.status == "success"
    assert seen_at_run_end == ["".join(f"w{i} " for i in range(30))]


async def test_a_view_builds_no_validated_event_per_delta(monkeypatch: Any):
    """A view takes the run's text deltas as (turn, delta): no pydantic model is validated per
    delta; stream() still gets every delta as a TextDeltaEvent, in order."""
    validated = [0]
    init = TextDeltaEvent.__init__

    def counting_init(self: Any, **data: Any) -> None:
        validated[0] += 1
        init(self, **data)

    monkeypatch.setattr(TextDeltaEvent, "__init__", counting_init)
    pieces = [f"w{i} " for i in range(200)]

    async def stream(_request: Any) -> Any:
        for piece in pieces:
            yield TextDelta(delta=piece)

    handle = runner.show(AgentBuilder("a", FunctionModel(stream)).build().prompt("go"))
    page = Page(handle.widget)
    await page.sync()
    await finished(handle)
    page.pump()
    assert validated[0] == 0
    assert page.state.entries[1]["text"] == "".join(pieces)

    streamed: list[Any] = []
    request = AgentBuilder("b", FunctionModel(stream)).build().prompt("go")
    async for event in request.stream():
        streamed.append(event)
    deltas = [e for e in streamed if e.type == "text_delta"]
    assert deltas == [TextDeltaEvent(turn=1, delta=piece) for piece in pieces]
    assert [type(e) for e in deltas] == [TextDeltaEvent] * len(pieces)
    assert validated[0] == len(pieces)  # the comparison's own events only


async def test_the_end_of_a_run_goes_out_once_with_its_numbers():
    """The run's end and its time to the first token and whole time share one batch: no
    status-only batch follows it."""

    async def stream(_request: Any) -> Any:
        for index in range(30):
            yield f"w{index} "

    handle = runner.show(AgentBuilder("a", FunctionModel(stream)).build().prompt("go"))
    page = Page(handle.widget)
    await page.sync()
    await finished(handle)
    page.pump()
    batches = [m for m in sent(handle.widget) if m["type"] == "batch"]
    ended = [
        index
        for index, batch in enumerate(batches)
        for op in batch["ops"]
        if op["op"] == "status" and op["status"]["state"] == "success"
    ]
    assert ended == [len(batches) - 1]  # only the last batch says the run ended
    final = batches[-1]["ops"][-1]["status"]
    assert final["duration_ms"] is not None and final["first_token_ms"] is not None
    assert page.state.status == handle.session.state()["status"]


async def test_a_sync_sends_what_waits_in_the_snapshot_not_in_a_batch_before_it():
    """A page that joins gets the whole transcript in the snapshot; what was waiting for the next
    batch is in it, and every page (they all get the kernel's messages) carries on from it."""
    start, release = asyncio.Event(), asyncio.Event()

    async def stream(_request: Any) -> Any:
        await start.wait()
        yield "Hello "
        await release.wait()
        yield "world."

    handle = runner.show(AgentBuilder("a", FunctionModel(stream)).build().prompt("go"))
    handle.session.batcher.interval = 60.0  # the waiting ops stay waiting
    early = Page(handle.widget)
    await early.sync()
    start.set()
    await until(lambda: handle.session.batcher.pending, what="ops waiting for the next batch")
    before = len(sent(handle.widget))
    late = Page(handle.widget)
    await late.sync()
    types = [m["type"] for m in sent(handle.widget)[before:]]
    assert types == ["snapshot", "reply"]  # no batch of the waiting ops before the snapshot
    assert handle.session.batcher.pending == 0
    release.set()
    await finished(handle)
    for page in (early, late):
        page.pump()
        assert page.state.gaps == 0
        assert page.state.transcript() == handle.session.state()
    assert late.state.entries[1]["text"] == "Hello world."

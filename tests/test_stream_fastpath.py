"""The per-delta path of a streaming run: nothing lost, nothing twice, nothing late.

A text delta joins the run's log without a lock, a view takes it as ``(turn, text)`` and the
store looks for a due write only now and then; these tests hold the behaviours that the fast
path must keep.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from typing import Any

from anvia_notebook import AgentBuilder, Usage
from anvia_notebook import run as run_module
from anvia_notebook.events import TextDeltaEvent, TurnEndEvent, TurnStartEvent
from anvia_notebook.models import FunctionModel, TextDelta
from anvia_notebook.notebook._transcript import Transcript
from anvia_notebook.store import RunStore


def _text(events: list[Any]) -> str:
    return "".join(e.delta for e in events if e.type == "text_delta")


async def test_a_subscriber_from_another_thread_mid_stream_gets_each_piece_once():
    """A thread subscribes while the run streams: its replay holds the text so far, and every
    later piece reaches it live, none twice (with and without replay, with a text fast path)."""
    pieces = [f"p{i} " for i in range(400)]
    whole = "".join(pieces)
    replayed: list[Any] = []
    live: list[Any] = []
    fast: list[str] = []
    fast_events: list[Any] = []

    def subscribe_from_a_thread() -> None:
        def subscribe() -> None:
            run.subscribe(replayed.append)
            run.subscribe(live.append, replay=False)
            run.subscribe(fast_events.append, on_text=lambda _turn, text: fast.append(text))

        thread = threading.Thread(target=subscribe)
        thread.start()
        thread.join(10)

    async def stream(_request: object) -> Any:
        for index, piece in enumerate(pieces):
            if index == 150:  # the loop waits while the other thread subscribes
                subscribe_from_a_thread()
            yield TextDelta(delta=piece)

    run = AgentBuilder("a", FunctionModel(stream)).build().prompt("go").create_run()
    run.start()
    await run.wait()
    assert _text(replayed) == whole
    assert _text(live) == "".join(pieces[150:])
    assert _text(fast_events) + "".join(fast) == whole
    others = [e.type for e in run.events if e.type != "text_delta"]
    assert [e.type for e in replayed if e.type != "text_delta"] == others
    assert replayed[-1].type == live[-1].type == fast_events[-1].type == "final"


async def test_subscribers_joining_from_a_thread_while_text_streams_see_the_whole_text():
    """Many subscribers join from another thread while the loop streams flat out: each one's
    replay and live deltas hold every piece of the text once. A race here shows only now and
    then, so this guard can pass on broken code; it never fails on sound code."""
    pieces = [f"w{i} " for i in range(6_000)]
    whole = "".join(pieces)

    async def stream(_request: object) -> Any:
        for index, piece in enumerate(pieces):
            yield TextDelta(delta=piece)
            if index % 200 == 0:
                await asyncio.sleep(0)

    run = AgentBuilder("a", FunctionModel(stream)).build().prompt("go").create_run()
    logs: list[list[Any]] = []
    texts: list[list[str]] = []
    stop = threading.Event()

    def join() -> None:
        while not stop.is_set() and len(logs) < 200:
            log: list[Any] = []
            text: list[str] = []
            if len(logs) % 2:
                run.subscribe(log.append)
            else:
                run.subscribe(
                    log.append, on_text=lambda _turn, delta, text=text: text.append(delta)
                )
            logs.append(log)
            texts.append(text)

    joiner = threading.Thread(target=join)
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    joiner.start()
    try:
        run.start()
        await run.wait()
    finally:
        stop.set()
        joiner.join(10)
        sys.setswitchinterval(switch)
    assert logs
    words = sorted(whole.split())
    for log, text in zip(logs, texts, strict=True):
        if not log:  # subscribed after the run's last event
            continue
        # The past events replayed (the text merged so far) and the rest live: nothing lost,
        # nothing twice. (Live deltas may go out while the other thread still replays.)
        streamed = "".join(e.delta for e in log if e.type == "text_delta") + "".join(text)
        assert sorted(streamed.split()) == words


async def _stream_against_a_fake_clock(
    store_path: Any, monkeypatch: Any, count: int, step: float, read_every: int
) -> list[tuple[float, int]]:
    """A producer that never yields to the loop (the store's write timer cannot run), on a
    clock that advances ``step`` before each delta of one character; returns the longest time a
    delta waited to be in the store, and how much text the store held at the last look."""
    now = [1_000.0]
    monkeypatch.setattr(run_module, "_clock", lambda: now[0])
    reader = RunStore(store_path)
    longest = [0.0]
    stored = [0]

    async def stream(_request: object) -> Any:
        for index in range(count):
            if index % read_every == 0:  # deltas 0 .. index - 1 are out
                stored[0] = len(_text(reader.events(run.run_id)))
                if stored[0] < index:  # the oldest delta not stored went out at:
                    longest[0] = max(longest[0], now[0] - (1_000.0 + (stored[0] + 1) * step))
            now[0] += step
            yield TextDelta(delta="x")

    run = AgentBuilder("a", FunctionModel(stream)).build().prompt("go").create_run()
    run.start()
    await run.wait()
    return [(longest[0], stored[0])]


async def test_slow_deltas_from_a_producer_that_hogs_the_loop_reach_the_store_each_second(
    store_path, monkeypatch
):
    step = 0.1  # a delta every 100 ms, the loop never free: the clock is read at each
    [(longest, stored)] = await _stream_against_a_fake_clock(store_path, monkeypatch, 40, step, 1)
    assert stored >= 28  # at 3.9 s: what streamed by 2.9 s is stored
    assert longest <= 1.0 + step


async def test_fast_deltas_from_a_producer_that_hogs_the_loop_reach_the_store_each_second(
    store_path, monkeypatch
):
    step = 0.0001  # 10,000 deltas a second: the clock is read at every 64th
    [(longest, stored)] = await _stream_against_a_fake_clock(
        store_path, monkeypatch, 30_000, step, 250
    )
    assert stored >= 19_000
    assert longest <= 1.0 + 64 * step


def _page_text(ops: list[dict[str, Any]]) -> dict[str, str]:
    """Each entry's text as a page that applies ``ops`` would have it."""
    texts: dict[str, str] = {}
    for op in ops:
        if op["op"] == "add":
            texts[op["entry"]["id"]] = op["entry"].get("text") or ""
        elif op["op"] == "append" and op["field"] == "text":
            texts[op["id"]] += op["text"]
        elif op["op"] == "reset":
            texts.clear()
    return texts


def test_the_transcript_keeps_every_delta_across_reads_turns_runs_and_resets():
    """The transcript appends to the entry the last delta grew without looking it up: a
    snapshot, a turn's end, a new run and a reset in between leave no delta in the wrong place
    and none lost."""
    ops: list[dict[str, Any]] = []
    transcript = Transcript("a", emit=ops.append)
    transcript.begin_run("r1", "a", "hi")
    transcript.apply(TurnStartEvent(turn=1))
    first = [f"a{i} " for i in range(1_300)]  # more than one join of the pieces
    for index, piece in enumerate(first):
        transcript.text_delta(1, piece)
        if index in (3, 700):
            assert transcript.entries[1]["text"] == "".join(first[: index + 1])
    transcript.apply(TextDeltaEvent(turn=1, delta="end."))
    assert transcript.entries[1]["text"] == "".join(first) + "end."
    transcript.apply(TurnStartEvent(turn=2))
    transcript.text_delta(2, "two ")
    transcript.text_delta(2, "more")
    transcript.text_delta(1, "late ")  # a delta of the earlier turn still lands there
    transcript.apply(TurnEndEvent(turn=2, usage=Usage()))  # joins every entry's pieces
    transcript.text_delta(1, "after ")
    transcript.begin_run("r2", "a", "again")  # a new run: its turn 1 is a new entry
    transcript.text_delta(1, "second ")
    transcript.text_delta(1, "run")
    transcript.reset()  # a new session: the next delta starts a new entry
    transcript.text_delta(1, "fresh ")
    transcript.text_delta(1, "start")
    assert [e["text"] for e in transcript.entries] == ["fresh start"]
    assert _page_text(ops) == {e["id"]: e["text"] for e in transcript.entries}
    assert _page_text(ops[: ops.index({"op": "reset"})]) == {
        "e1": "hi",
        "e2": "".join(first) + "end.late after ",
        "e3": "two more",
        "e4": "again",
        "e5": "second run",
    }

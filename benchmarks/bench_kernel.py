"""Kernel side of the browser benchmarks: imported by the benchmark notebooks' cells.

Every scenario writes its kernel-side figures (``time.time()`` stamps, message counts) as JSON
into ``OUT_DIR`` (set by :func:`setup`), where ``browser_bench.py`` reads them. Times are
``time.time()`` seconds: the page measures with ``performance.timeOrigin + performance.now()``,
on the same machine clock.

Streaming scenarios (same model, same deltas, same pacing):

- ``ours``: ``agent.prompt(...).show()``, the transcript widget, in the background;
- ``floor``: a minimal anywidget that gets one batch of deltas per 50 ms and appends it to a text
  node, fed by a background task whose producer is a bare loop over the same deltas, at the same
  pace (no agent run: the floor of what any streaming costs);
- ``naive``: the hand-written approach, ``display(Markdown(...), display_id=True)`` then
  ``handle.update(Markdown(text))`` on every delta, in the cell (foreground).

Each model waits until its view is ready (the page asked our widget for a snapshot, or the
floor's view said so), so that loading a view's code is not counted as streaming.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anywidget
import traitlets
from IPython.display import Markdown, display
from pydantic import BaseModel

from anvia_notebook import AgentBuilder, ToolApproval, ask_question, create_hook, create_tool
from anvia_notebook.models import FunctionModel, ModelResponse, ToolCall

OUT_DIR = Path(".")
#: Time stamps recorded by the click scenarios, by kind (``baseline``, ``bg-approve``, ...).
TIMES: dict[str, list[float]] = {}
#: Floor batches go out at most this often (seconds).
FLOOR_INTERVAL = 0.05

#: The streamed text's words (a support agent's summary, over and over).
WORDS = (
    *("the", "agent", "reads", "each", "order", "and", "checks", "the", "refund", "policy"),
    *("before", "it", "answers", "with", "a", "short", "summary", "of", "what", "changed"),
    *("in", "the", "account", "since", "the", "last", "review", "of", "the", "customer"),
    "history",
)


def setup(out_dir: str) -> None:
    """Where the results go (a directory the benchmark script reads)."""
    global OUT_DIR
    OUT_DIR = Path(out_dir)
    OUT_DIR.mkdir(parents=True, exist_ok=True)


def use_store(mode: str) -> None:
    """Store the runs made after this (``"on"``: the default store, ``.anvia/runs.sqlite`` in the
    kernel's folder) or not (``"off"``), as a user does with ``ANVIA_NOTEBOOK_STORE=off``."""
    if mode not in ("on", "off"):
        raise ValueError(f"store mode {mode!r}: 'on' or 'off'")
    if mode == "off":
        os.environ["ANVIA_NOTEBOOK_STORE"] = "off"
    else:
        os.environ.pop("ANVIA_NOTEBOOK_STORE", None)


def write_result(tag: str, data: dict[str, Any]) -> None:
    """Write ``data`` as ``OUT_DIR/<tag>.json`` (atomically: the reader polls for the file)."""
    tmp = OUT_DIR / f".{tag}.json.tmp"
    tmp.write_text(json.dumps(data))
    os.replace(tmp, OUT_DIR / f"{tag}.json")


def deltas(count: int, marker: str) -> list[str]:
    """``count`` word-sized deltas (a paragraph break every 50 words); the last one ends with
    ``marker``, the text the page waits for."""
    out = []
    for i in range(count - 1):
        word = WORDS[i % len(WORDS)]
        out.append(f"{word}.\n\n" if i % 50 == 49 else f"{word} ")
    out.append(marker)
    return out


# --------------------------------------------------------------------------------------------
# Streaming
# --------------------------------------------------------------------------------------------


class StreamProbe:
    """The stream's timing: when the first delta went out, when the last one did."""

    def __init__(self, pieces: list[str], rate: float) -> None:
        self.pieces = pieces
        self.rate = rate
        self.ready = asyncio.Event()
        self.t_ready = 0.0
        self.t_first = 0.0
        self.t_last = 0.0

    def mark_ready(self) -> None:
        if not self.ready.is_set():
            self.t_ready = time.time()
            self.ready.set()

    async def paced(self, _request: Any = None) -> AsyncIterator[str]:
        """Waits for the view, then yields the deltas flat out or paced (a bare loop). The floor
        reads it directly; ours is this same generator as the model (a model may stream text as
        plain strings)."""
        await asyncio.wait_for(self.ready.wait(), 60)
        self.t_first = time.time()
        start = time.monotonic()
        for i, piece in enumerate(self.pieces):
            if self.rate > 0:
                due = start + i / self.rate
                wait = due - time.monotonic()
                if wait > 0.0005:
                    await asyncio.sleep(wait)
            else:
                await asyncio.sleep(0)  # flat out: yield to the loop, as a network read would
            yield piece
        self.t_last = time.time()

    def times(self) -> dict[str, float]:
        return {"t_ready": self.t_ready, "t_first": self.t_first, "t_last": self.t_last}


def _stream_agent(probe: StreamProbe) -> Any:
    return AgentBuilder("stream", FunctionModel(probe.paced, name="stream-model")).build()


def stream_ours(tag: str, count: int, rate: float, marker: str) -> Any:
    """(a) the transcript widget: ``show()`` in the background. Returns the RunHandle."""
    probe = StreamProbe(deltas(count, marker), rate)
    handle = _stream_agent(probe).prompt("Stream, please.").show()
    session = handle.session
    on_sync = session.handlers["sync"]

    def sync_then_go(message: Any) -> Any:
        result = on_sync(message)
        probe.mark_ready()  # on the run's loop: the snapshot has been sent
        return result

    session.handlers["sync"] = sync_then_go

    def done(_run: Any) -> None:
        write_result(
            tag,
            {
                **probe.times(),
                "t_done": time.time(),
                "messages": session.batcher.batches_sent,
                "chars": len("".join(probe.pieces)),
            },
        )

    session.add_done_listener(done)
    return handle


class FloorWidget(anywidget.AnyWidget):
    """(c) the floor: appends each received batch to one text node."""

    _esm = """
    export default {
      render({ model, el }) {
        const pre = document.createElement("pre");
        pre.className = "bench-floor";
        pre.style.whiteSpace = "pre-wrap";
        const text = document.createTextNode("");
        pre.appendChild(text);
        el.appendChild(pre);
        const onMsg = (msg) => {
          if (msg && typeof msg.text === "string") text.appendData(msg.text);
        };
        model.on("msg:custom", onMsg);
        model.send({ type: "ready" });
        return () => model.off("msg:custom", onMsg);
      },
    };
    """

    def __init__(self, on_ready: Callable[[], None]) -> None:
        super().__init__()
        self._on_ready = on_ready
        self.on_msg(self._on_custom)

    def _on_custom(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if isinstance(content, dict) and content.get("type") == "ready":
            self._on_ready()


def stream_floor(tag: str, count: int, rate: float, marker: str) -> asyncio.Task[None]:
    """(c) the floor, fed by a background task (like ``show()``) whose producer is a bare loop
    over the deltas (no agent run); the cell returns at once."""
    loop = asyncio.get_running_loop()
    probe = StreamProbe(deltas(count, marker), rate)
    widget = FloorWidget(lambda: loop.call_soon_threadsafe(probe.mark_ready))
    display(widget)

    async def feed() -> None:
        buffer: list[str] = []
        sent = 0
        last = 0.0
        async for piece in probe.paced():
            buffer.append(piece)
            now = time.monotonic()
            if now - last >= FLOOR_INTERVAL:
                widget.send({"text": "".join(buffer)})
                buffer.clear()
                sent += 1
                last = now
        if buffer:
            widget.send({"text": "".join(buffer)})
            sent += 1
        write_result(
            tag,
            {
                **probe.times(),
                "t_done": time.time(),
                "messages": sent,
                "chars": len("".join(probe.pieces)),
            },
        )

    return loop.create_task(feed())


async def stream_naive(tag: str, count: int, rate: float, marker: str) -> None:
    """(b) the usual hand-written approach: re-render the whole Markdown on every delta."""
    probe = StreamProbe(deltas(count, marker), rate)
    probe.mark_ready()  # nothing to wait for: the first update creates the output
    handle = display(Markdown(""), display_id=True)
    text = ""
    sent = 0
    async for event in _stream_agent(probe).prompt("Stream, please.").stream():
        if event.type == "text_delta":
            text += event.delta
            handle.update(Markdown(text))
            sent += 1
            if sent % 500 == 0:  # progress, for a run cut short by the time cap
                write_result(f"{tag}-progress", {**probe.times(), "messages": sent})
    write_result(
        tag, {**probe.times(), "t_done": time.time(), "messages": sent, "chars": len(text)}
    )


# --------------------------------------------------------------------------------------------
# Click latency
# --------------------------------------------------------------------------------------------


class ClickProbe(anywidget.AnyWidget):
    """The floor of click latency: a button whose click reaches a trivial kernel handler."""

    _esm = """
    export default {
      render({ model, el }) {
        const b = document.createElement("button");
        b.textContent = "Probe click";
        b.className = "bench-probe";
        b.addEventListener("click", () => model.send({ type: "click" }));
        const seen = document.createElement("span");
        const show = () => { seen.textContent = `Clicked ${model.get("count")}`; };
        model.on("change:count", show);
        show();
        el.append(b, seen);
      },
    };
    """
    count = traitlets.Int(0).tag(sync=True)

    def __init__(self) -> None:
        super().__init__()
        self.on_msg(self._on_custom)

    def _on_custom(self, _widget: Any, _content: Any, _buffers: Any) -> None:
        TIMES.setdefault("baseline", []).append(time.time())
        self.count += 1  # after the stamp: shows the page that the click arrived


class ProbeInput(BaseModel):
    item: int


def approve_agent(kind: str) -> Any:
    """An agent whose one tool call needs approval; the tool stamps its first line."""

    def execute(args: ProbeInput, _ctx: Any) -> dict[str, int]:
        TIMES.setdefault(kind, []).append(time.time())
        return {"item": args.item}

    tool = create_tool(
        name="probe_tool",
        description="A tool that needs approval.",
        input=ProbeInput,
        execute=execute,
        approval=ToolApproval(reason="Benchmark approval."),
    )

    def respond(request: Any) -> ModelResponse:
        if any(m.role == "tool" for m in request.messages):
            return ModelResponse(text="Done.")
        return ModelResponse(
            tool_calls=[ToolCall(id="c1", name="probe_tool", arguments={"item": 1})]
        )

    return AgentBuilder("approver", FunctionModel(respond)).tool(tool).build()


QUESTIONS = {
    "questions": [
        {
            "id": "pick",
            "question": "Which one?",
            "choices": [{"label": "First", "value": "first"}, {"label": "Second", "value": "s"}],
        }
    ]
}


def question_agent(kind: str) -> Any:
    """An agent that asks one question; a hook stamps the tool result."""

    def on_result(event: Any) -> None:
        if event.tool_name == "ask_question":
            TIMES.setdefault(kind, []).append(time.time())

    def respond(request: Any) -> ModelResponse:
        if any(m.role == "tool" for m in request.messages):
            return ModelResponse(text="Answered.")
        return ModelResponse(
            tool_calls=[ToolCall(id="q1", name="ask_question", arguments=QUESTIONS)]
        )

    return (
        AgentBuilder("asker", FunctionModel(respond))
        .tool(ask_question)
        .hook(create_hook(on_tool_result=on_result))
        .build()
    )


def dump_times(tag: str) -> None:
    write_result(tag, {"times": TIMES})


# --------------------------------------------------------------------------------------------
# Long transcripts
# --------------------------------------------------------------------------------------------


class LookupInput(BaseModel):
    item: int


def long_run(tag: str, entries: int) -> Any:
    """A finished-looking run of ``entries`` entries: the prompt, then per turn a message and a
    tool call, then the answer. Shown in the background; returns the RunHandle."""
    turns = max(0, (entries - 2) // 2)
    lookup = create_tool(
        name="lookup",
        description="Look an item up.",
        input=LookupInput,
        execute=lambda args, _ctx: {"item": args.item, "status": "ok", "notes": "in stock"},
    )

    def respond(request: Any) -> ModelResponse:
        done = sum(1 for m in request.messages if m.role == "tool")
        if done < turns:
            return ModelResponse(
                text=f"Step {done + 1}: checking item **{done + 1}** against the inventory.",
                tool_calls=[ToolCall(id=f"c{done}", name="lookup", arguments={"item": done})],
            )
        return ModelResponse(text=f"All {turns} items checked.")

    agent = (
        AgentBuilder("long", FunctionModel(respond))
        .tool(lookup)
        .default_max_turns(turns + 5)
        .build()
    )
    started = time.time()
    handle = agent.prompt("Check every item.").show()
    session = handle.session

    def done(_run: Any) -> None:
        snapshot = json.dumps(session.state())
        write_result(
            tag,
            {
                "t_start": started,
                "t_done": time.time(),
                "entries": len(session.transcript),
                "snapshot_bytes": len(snapshot.encode()),
            },
        )

    session.add_done_listener(done)
    return handle


#: Sub-agent levels below the lead in :func:`nested_long_run`.
NESTED_LEVELS = 3


def nested_long_run(tag: str, entries: int) -> Any:
    """A finished-looking run of about ``entries`` entries with three levels of sub-agents: per
    turn the lead writes a line and asks ``ask_level1``, which asks ``ask_level2``, which asks
    ``ask_level3``, whose agent answers; each level then answers with what it heard. One turn is
    seven entries (the lead's line and tool call, one tool call and one answer per level below,
    the innermost's answer once). Shown in the background; returns the RunHandle."""
    per_turn = 2 + 2 * NESTED_LEVELS - 1
    turns = max(1, -(-(entries - 2) // per_turn))
    started = time.time()
    handle = nested_lead(turns).prompt("Check every item through the three levels.").show()
    session = handle.session

    def done(_run: Any) -> None:
        snapshot = json.dumps(session.state())
        write_result(
            tag,
            {
                "t_start": started,
                "t_done": time.time(),
                "entries": len(session.transcript),
                "nested_entries": sum(1 for e in session.state()["entries"] if e.get("parent")),
                "snapshot_bytes": len(snapshot.encode()),
            },
        )

    session.add_done_listener(done)
    return handle


def nested_lead(turns: int) -> Any:
    """The lead of :func:`nested_long_run`, for ``turns`` turns."""

    def relay(level: int) -> FunctionModel:
        """A sub-agent that asks the level below (if any), then answers with what it heard."""

        def respond(request: Any) -> ModelResponse:
            last = request.messages[-1]
            if level == NESTED_LEVELS:
                return ModelResponse(text=f"Level {level} found item **{last.content}** in stock.")
            if last.role == "tool":
                return ModelResponse(text=f"Level {level}: {last.tool_results[0].content}")
            return ModelResponse(
                tool_calls=[
                    ToolCall(
                        id=f"l{level}",
                        name=f"ask_level{level + 1}",
                        arguments={"prompt": last.content},
                    )
                ]
            )

        return FunctionModel(respond)

    agent: Any = None
    for level in range(NESTED_LEVELS, 0, -1):
        builder = AgentBuilder(f"level{level}", relay(level)).name(f"Level {level} agent")
        if agent is not None:
            builder = builder.tool(agent.as_tool(name=f"ask_level{level + 1}"))
        agent = builder.build()

    def lead(request: Any) -> ModelResponse:
        done = sum(1 for m in request.messages if m.role == "tool")
        if done < turns:
            return ModelResponse(
                text=f"Step {done + 1}: asking about item **{done + 1}**.",
                tool_calls=[
                    ToolCall(id=f"c{done}", name="ask_level1", arguments={"prompt": str(done + 1)})
                ],
            )
        return ModelResponse(text=f"All {turns} items checked.")

    return (
        AgentBuilder("lead", FunctionModel(lead))
        .tool(agent.as_tool(name="ask_level1"))
        .default_max_turns(turns + 5)
        .build()
    )

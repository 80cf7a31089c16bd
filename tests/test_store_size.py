"""What a run writes to the run store: a long tool argument is stored once (with the messages),
not again in the event log, the trace and the run's state, and everything reads back exactly.
``benchmarks/store_size_bench.py`` measures the same for several runs, side by side."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel

from anvia_notebook import AgentBuilder, ApprovalDecision, RunStore, ToolApproval, create_tool
from anvia_notebook.models import ModelResponse, QueueModel, ToolCall

MB = 1_000_000


class Document(BaseModel):
    text: str


def save_tool(**options):
    saved: list[int] = []

    def execute(args: Document, ctx) -> str:
        saved.append(len(args.text))
        return f"saved {len(args.text)} characters"

    tool = create_tool(
        name="save", description="Save a document.", input=Document, execute=execute, **options
    )
    tool.saved = saved  # type: ignore[attr-defined]
    return tool


def store_bytes(folder: Path) -> int:
    """The store's database and write-ahead log (the shared-memory index is not data)."""
    return sum(p.stat().st_size for p in folder.iterdir() if not p.name.endswith("-shm"))


def document_run(tool, arguments: str, **builder):
    model = QueueModel(
        [
            ModelResponse(tool_calls=[ToolCall(id="c1", name="save", arguments=arguments)]),
            ModelResponse(text="Saved."),
        ]
    )
    agent = AgentBuilder("writer", model).tool(tool)
    if "approvals" in builder:
        agent = agent.approvals(builder["approvals"])
    return agent.build()


def assert_reads_back(store: RunStore, run) -> None:
    """What the store gives back is what the run had in memory."""
    stored = store.events(run.run_id)
    assert [e.model_dump(mode="json") for e in stored] == [
        e.model_dump(mode="json") for e in run.events
    ]
    assert store.trace(run.run_id).model_dump(mode="json") == run.trace.model_dump(mode="json")
    state = store.get(run.run_id)
    assert [m.model_dump() for m in state.messages] == [m.model_dump() for m in run.state.messages]
    assert state.calls == run.state.calls


async def test_a_one_megabyte_argument_is_stored_within_three_times_its_size(tmp_path):
    folder = tmp_path / "store"
    RunStore(folder / "runs.sqlite").close()
    empty = store_bytes(folder)
    # (spaces after the separators: the tools and the event log get the compact form)
    arguments = json.dumps({"text": "é and x " * (MB // 8)})
    tool = save_tool()
    store = RunStore(folder / "runs.sqlite")
    run = document_run(tool, arguments).prompt("Save the document.").store(store).start()
    response = await run.wait()
    assert response.output == "Saved." and tool.saved == [MB]
    written = store_bytes(folder) - empty
    assert written <= 3 * len(arguments.encode()), (written, len(arguments.encode()))
    reader = RunStore(folder / "runs.sqlite")
    assert_reads_back(reader, run)
    [call] = reader.trace(run.run_id).tool_calls
    assert call.args == json.loads(arguments)
    [event] = [e for e in reader.events(run.run_id) if e.type == "tool_call"]
    assert event.tool_call.arguments == arguments
    [result] = [e for e in reader.events(run.run_id) if e.type == "tool_result"]
    assert json.loads(result.args) == json.loads(arguments)
    assert result.args.startswith('{"text":"')  # the compact form, as the tool was given
    reader.close()
    store.close()


async def test_arguments_edited_on_approval_are_stored_as_edited(tmp_path):
    arguments = json.dumps({"text": "draft " * (MB // 60)})
    tool = save_tool(approval=ToolApproval(reason="Check the document."))
    agent = document_run(
        tool,
        arguments,
        approvals=lambda request: ApprovalDecision(approved=True, args={"text": "final " * 300}),
    )
    store = RunStore(tmp_path / "runs.sqlite")
    run = agent.prompt("Save the document.").store(store).start()
    await run.wait()
    assert tool.saved == [1800]
    reader = RunStore(tmp_path / "runs.sqlite")
    assert_reads_back(reader, run)
    assert reader.trace(run.run_id).tool_calls[0].args == {"text": "final " * 300}
    [event] = [e for e in reader.events(run.run_id) if e.type == "tool_call"]
    assert event.tool_call.arguments == arguments  # what the model sent
    reader.close()
    store.close()


def test_a_started_call_keeps_its_arguments_in_the_stored_state(tmp_path):
    """The progress of a call that began (what a resumed run must not repeat) reads back with
    its arguments, also when they are left to the stored messages."""
    from anvia_notebook.messages import Message, MessageToolCall
    from anvia_notebook.run_state import RunState, ToolCallProgress

    arguments = json.dumps({"text": "z " * 2000})
    compact = json.dumps({"text": "z " * 2000}, separators=(",", ":"))
    calls = [MessageToolCall(id="c1", name="save", arguments=arguments)]
    state = RunState(
        run_id="run_started",
        agent_id="writer",
        status="running",
        messages=[
            Message(role="user", content="Save it."),
            Message(role="assistant", content="", tool_calls=calls),
        ],
        calls={
            "c1": ToolCallProgress(
                tool_call_id="c1", tool_name="save", turn=1, status="started", args=compact
            )
        },
    )
    store = RunStore(tmp_path / "runs.sqlite")
    store.create_run(state, "Save it.")
    assert store.get("run_started").calls["c1"].args == compact
    raw = store._q("SELECT state FROM runs WHERE run_id = 'run_started'")[0][0]
    assert len(raw) < 1000  # (the arguments are not in the state's row)
    store.close()


async def test_a_slow_stream_adds_its_new_text_at_each_write_instead_of_rewriting_it(
    tmp_path, monkeypatch
):
    """A write after every delta (as a model streaming for minutes gets one each second): each
    write adds what is new; the whole text is not written again each time."""
    from anvia_notebook import run as run_module
    from anvia_notebook.models import FunctionModel

    monkeypatch.setattr(run_module, "STORE_FLUSH_INTERVAL", 0.0)
    monkeypatch.setattr(run_module, "_DELTAS_PER_CLOCK", 1)  # look at the clock at every delta
    pieces = [f"{i:04d}" + "w" * 996 for i in range(200)]

    async def stream(request):
        for piece in pieces:
            yield piece

    folder = tmp_path / "store"
    RunStore(folder / "runs.sqlite").close()
    empty = store_bytes(folder)
    store = RunStore(folder / "runs.sqlite")
    run = AgentBuilder("writer", FunctionModel(stream)).build().prompt("Go.").store(store).start()
    response = await run.wait()
    assert response.output == "".join(pieces)
    reader = RunStore(folder / "runs.sqlite")
    [(parts,)] = reader._q("SELECT COUNT(*) FROM event_parts")
    assert parts >= 100  # (the writes did happen while the text grew)
    assert_reads_back(reader, run)
    reader.close()
    store.close()
    written = store_bytes(folder) - empty
    assert written <= 3 * len(response.output), (written, len(response.output))


async def test_texts_left_to_the_messages_read_back_exactly_from_either_store(
    store_location, monkeypatch
):
    """SQLite and PostgreSQL: a long argument, a long streamed reply grown by parts."""
    from anvia_notebook import run as run_module
    from anvia_notebook.models import FunctionModel

    monkeypatch.setattr(run_module, "STORE_FLUSH_INTERVAL", 0.0)
    monkeypatch.setattr(run_module, "_DELTAS_PER_CLOCK", 1)
    arguments = json.dumps({"text": "a\u0000b " * 2000})  # (NUL, escaped in JSON)
    pieces = [f"{i:03d} reply text, part by part. " * 20 for i in range(60)]
    turns = iter(["call", "reply"])

    async def model(request):
        if next(turns) == "call":
            yield ToolCall(id="c1", name="save", arguments=arguments)
        else:
            for piece in pieces:
                yield piece

    tool = save_tool()
    agent = AgentBuilder("writer", FunctionModel(model)).tool(tool).build()
    store = RunStore(store_location)
    run = agent.prompt("Save, then tell me.").store(store).start()
    response = await run.wait()
    assert response.output == "".join(pieces) and tool.saved == [len("a\u0000b " * 2000)]
    reader = RunStore(store_location)
    assert_reads_back(reader, run)
    assert reader.get(run.run_id).output == response.output
    reader.close()
    store.close()

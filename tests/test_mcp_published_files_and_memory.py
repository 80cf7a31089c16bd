"""Two servers others publish on npm, used as a user would: ``@modelcontextprotocol/server-filesystem``
(files in the folders it is given) and ``@modelcontextprotocol/server-memory`` (a knowledge
graph in a JSON lines file), pinned in ``tests/mcp_servers/npm/package.json`` and installed by
``.ci/run`` with ``npm ci`` in that folder. They run offline once installed.

Through the agent: writes and edits behind approvals (approved as the person edited them,
rejected), the server's refusals (a path outside its folder) read by the model while the run
goes on, arguments checked against the servers' schemas before anyone is asked, nested arrays
of objects as the providers are sent them and as the model's streamed calls bring them back,
images and binary files in results, roots instead of folders on the command line, and no
``node`` process left at close.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest
from anthropic import _base_client as anthropic_base_client
from mcp_helpers import SERVERS, alive, processes_running
from openai import _base_client as openai_base_client

from anvia_notebook import AgentBuilder, ApprovalDecision, CallbackHumanInput, mcp
from anvia_notebook.models import QueueModel
from anvia_notebook.models.anthropic import AnthropicModel
from anvia_notebook.models.openai import OpenAIModel

from helpers import call, calls, tool_results
from provider_replay import Recorded, Server

pytestmark = pytest.mark.timeout(120)

NPM_FOLDER = SERVERS / "npm"
PACKAGES = NPM_FOLDER / "node_modules" / "@modelcontextprotocol"
FILESYSTEM = PACKAGES / "server-filesystem" / "dist" / "index.js"
MEMORY = PACKAGES / "server-memory" / "dist" / "index.js"

OPENAI = Recorded(getattr(openai_base_client, "httpx2", None) or httpx)
ANTHROPIC = Recorded(getattr(anthropic_base_client, "httpx2", None) or httpx)

#: A 1x1 PNG, and the start of a JPEG file (enough for its signature).
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360f8cf000000030101007e1ff5d60000000049454e44ae426082"
)
JPEG = bytes.fromhex("ffd8ffe000104a46494600010100000100010000ffd9")


def _script(path: Path) -> str:
    """An installed server's entry point; missing: a failure in CI, else a skip saying how."""
    if path.is_file() and shutil.which("node"):
        return str(path)
    package = path.parent.parent.name
    how = f"run `npm ci` in {NPM_FOLDER.relative_to(Path(__file__).parent.parent)} (.ci/run does)"
    if os.environ.get("CI"):
        pytest.fail(f"@modelcontextprotocol/{package} is not installed: {how}")
    pytest.skip(f"@modelcontextprotocol/{package} is not installed: {how}")


@pytest.fixture(autouse=True)
def _close_sessions():
    yield
    asyncio.run(mcp.close_all())


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """The one folder the filesystem server may touch, with a note in it."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("hello\nworld\n")
    return work


@pytest.fixture
def files(folder: Path) -> mcp.McpServerConfig:
    return mcp.stdio("files", "node", [_script(FILESYSTEM), str(folder)])


@pytest.fixture
def memory(tmp_path: Path) -> mcp.McpServerConfig:
    # (without MEMORY_FILE_PATH the server writes beside its own code, in node_modules)
    env = {"MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")}
    return mcp.stdio("memory", "node", [_script(MEMORY)], env=env)


def _results(model: QueueModel) -> list[Any]:
    """Every tool result the model read, in order (each request's newest)."""
    return [result for request in model.requests[1:] for result in tool_results(request)]


# Approvals


def test_a_write_approved_with_edited_arguments_writes_what_the_person_chose(folder, files):
    asked = []

    def approve(request):
        asked.append((request.tool_name, request.args.model_dump()))
        return ApprovalDecision(
            True, args={"path": str(folder / "kept.txt"), "content": "the person's words"}
        )

    model = QueueModel(
        [call("write_file", {"path": str(folder / "draft.txt"), "content": "model's"}), "done"]
    )
    agent = AgentBuilder("a", model).mcp([files]).human_input(CallbackHumanInput(approve=approve))
    assert agent.build().prompt("save it").send_sync().output == "done"

    assert asked == [("write_file", {"path": str(folder / "draft.txt"), "content": "model's"})]
    assert (folder / "kept.txt").read_text() == "the person's words"
    assert not (folder / "draft.txt").exists()
    [result] = _results(model)
    assert not result.is_error
    assert result.content.startswith("[Approved with changed arguments: ")
    assert result.content.endswith(f"Successfully wrote to {folder / 'kept.txt'}")


def test_an_edit_with_an_array_of_edits_is_asked_whole_and_a_rejected_move_never_runs(
    folder, files
):
    """edit_file's arguments hold an array of objects: the person sees them as the model wrote
    them, and an edit of them is checked against the server's schema (each edit needs its
    newText) before it runs."""
    asked = []
    edits = [{"oldText": "world", "newText": "there"}]

    def approve(request):
        asked.append((request.tool_name, request.args.model_dump()))
        if request.tool_name == "move_file":
            return ApprovalDecision(False, reject_message="Leave my notes where they are.")
        if len(asked) == 1:
            return ApprovalDecision(
                True, args={**request.args.model_dump(), "edits": [{"oldText": "world"}]}
            )
        return True

    notes = str(folder / "notes.txt")
    model = QueueModel(
        [
            call("edit_file", {"path": notes, "edits": edits}, id="c1"),
            call("edit_file", {"path": notes, "edits": edits}, id="c2"),
            call("move_file", {"source": notes, "destination": str(folder / "old.txt")}, id="c3"),
            "done",
        ]
    )
    agent = AgentBuilder("a", model).mcp([files]).human_input(CallbackHumanInput(approve=approve))
    assert agent.build().prompt("fix my notes").send_sync().output == "done"

    assert asked[0] == ("edit_file", {"path": notes, "edits": edits})
    assert [name for name, _ in asked] == ["edit_file", "edit_file", "move_file"]
    first, second, moved = _results(model)
    assert first.is_error
    assert first.content == (
        "Edited arguments were rejected: The edited arguments are not valid for edit_file: "
        "edits.0: 'newText' is a required property"
    )
    assert not second.is_error and "-world\n+there" in second.content
    assert moved.content == "Leave my notes where they are."
    assert (folder / "notes.txt").read_text() == "hello\nthere\n"
    assert not (folder / "old.txt").exists()


def test_approval_patterns_pick_which_of_its_tools_ask(folder, tmp_path):
    """A dict of patterns: writes run on their own, moves always ask, the rest as annotated
    (read_text_file declares readOnlyHint: true, create_directory does not)."""
    asked = []
    server = mcp.stdio(
        "files",
        "node",
        [_script(FILESYSTEM), str(folder)],
        approval={"write_*": "never", "move_file": "always"},
    )
    model = QueueModel(
        [
            calls(
                ("write_file", {"path": str(folder / "a.txt"), "content": "A"}, "c1"),
                ("read_text_file", {"path": str(folder / "a.txt")}, "c2"),
                ("create_directory", {"path": str(folder / "sub")}, "c3"),
                ("move_file", {"source": str(folder / "a.txt"), "destination": "b"}, "c4"),
            ),
            "done",
        ]
    )
    agent = AgentBuilder("a", model).mcp([server])
    agent = agent.approvals(lambda request: asked.append(request.tool_name) is None).build()
    assert agent.prompt("go").send_sync().output == "done"
    assert sorted(asked) == ["create_directory", "move_file"]
    assert [r.content for r in _results(model)][:2] == [
        f"Successfully wrote to {folder / 'a.txt'}",
        "A",
    ]


# What the server refuses, and what never reaches it


def test_a_path_outside_its_folder_is_the_servers_error_and_the_run_goes_on(
    folder, files, tmp_path
):
    secret = tmp_path / "secret.txt"
    secret.write_text("password")
    model = QueueModel(
        [
            call("read_text_file", {"path": str(secret)}, id="c1"),
            call("write_file", {"path": str(tmp_path / "escaped.txt"), "content": "x"}, id="c2"),
            call("read_text_file", {"path": str(folder / "notes.txt")}, id="c3"),
            "done",
        ]
    )
    agent = AgentBuilder("a", model).mcp([files]).approvals(lambda request: True).build()
    assert agent.prompt("look around").send_sync().output == "done"

    read, write, notes = _results(model)
    for refused, path in ((read, secret), (write, tmp_path / "escaped.txt")):
        assert refused.is_error
        assert refused.content == (
            "ToolCallError: Access denied - path outside allowed directories: "
            f"{path} not in {folder}"
        )
    assert "password" not in read.content
    assert not (tmp_path / "escaped.txt").exists()
    assert not notes.is_error and notes.content == "hello\nworld\n"


def test_invalid_arguments_are_our_schema_message_before_approval_and_the_servers_after(
    folder, files
):
    """Arguments that break the server's schema are answered by the run (the server, and the
    person, are never asked); a rule only the server knows (head and tail together) is the
    server's own error."""
    asked = []
    notes = str(folder / "notes.txt")
    model = QueueModel(
        [
            call("edit_file", {"path": notes, "edits": [{"oldText": "world"}]}, id="c1"),
            call("read_multiple_files", {"paths": []}, id="c2"),
            call("read_text_file", {"path": notes, "head": "1"}, id="c3"),
            call("read_text_file", {"path": notes, "head": 1, "tail": 1}, id="c4"),
            call("edit_file", {"path": notes, "edits": [{"oldText": "?", "newText": "!"}]}),
            "done",
        ]
    )
    agent = AgentBuilder("a", model).mcp([files])
    agent = agent.approvals(lambda request: asked.append(request.tool_name) is None).build()
    assert agent.prompt("go").send_sync().output == "done"

    results = _results(model)
    assert all(result.is_error for result in results)
    contents = [result.content for result in results]
    # (an empty list "is too short" in the words of older jsonschema releases)
    contents[1] = contents[1].replace("[] is too short.", "[] should be non-empty.")
    assert contents == [
        "Invalid arguments for tool edit_file: edits.0: 'newText' is a required property. "
        "Call the tool again with corrected arguments.",
        "Invalid arguments for tool read_multiple_files: paths: [] should be non-empty. "
        "Call the tool again with corrected arguments.",
        "Invalid arguments for tool read_text_file: head: '1' is not of type 'number'. "
        "Call the tool again with corrected arguments.",
        "ToolCallError: Cannot specify both head and tail parameters simultaneously",
        "ToolCallError: Could not find exact match for edit:\n?",
    ]
    assert asked == ["edit_file"]  # only the well-formed edit was put to the person
    assert (folder / "notes.txt").read_text() == "hello\nworld\n"


# The memory server's knowledge graph


def test_the_model_builds_and_reads_a_knowledge_graph(memory, tmp_path):
    asked = []
    entities = [
        {"name": "Ada", "entityType": "person", "observations": ["wrote the first program"]},
        {"name": "Engine", "entityType": "machine", "observations": []},
    ]
    relation = {"from": "Ada", "to": "Engine", "relationType": "programmed"}
    model = QueueModel(
        [
            call("create_entities", {"entities": entities}, id="c1"),
            call("create_relations", {"relations": [relation]}, id="c2"),
            call("search_nodes", {"query": "program"}, id="c3"),
            call("add_observations", {"observations": [{"entityName": "Bob", "contents": ["x"]}]}),
            call("read_graph", {}, id="c5"),
            "done",
        ]
    )
    agent = AgentBuilder("a", model).mcp([memory])
    agent = agent.approvals(lambda request: asked.append(request.tool_name) is None).build()
    assert agent.prompt("remember Ada").send_sync().output == "done"

    # the writes ask (readOnlyHint: false), the reads do not (readOnlyHint: true)
    assert asked == ["create_entities", "create_relations", "add_observations"]
    created, related, found, unknown, graph = _results(model)
    assert json.loads(created.content) == entities
    assert json.loads(related.content) == [relation]
    assert json.loads(found.content) == {"entities": entities[:1], "relations": [relation]}
    assert unknown.is_error and unknown.content == "ToolCallError: Entity with name Bob not found"
    assert json.loads(graph.content) == {"entities": entities, "relations": [relation]}
    stored = [json.loads(line) for line in (tmp_path / "memory.jsonl").read_text().splitlines()]
    assert [(row["type"], row["name"] if "name" in row else row["to"]) for row in stored] == [
        ("entity", "Ada"),
        ("entity", "Engine"),
        ("relation", "Engine"),
    ]


# Media and binary files


def test_read_media_file_shows_images_and_names_what_it_cannot_show(folder, files):
    (folder / "dot.png").write_bytes(PNG)
    (folder / "clip.wav").write_bytes(b"RIFF\x04\x00\x00\x00WAVE")
    (folder / "data.bin").write_bytes(bytes(range(256)))
    model = QueueModel(
        [
            calls(
                ("read_media_file", {"path": str(folder / "dot.png")}, "c1"),
                ("read_media_file", {"path": str(folder / "clip.wav")}, "c2"),
                ("read_media_file", {"path": str(folder / "data.bin")}, "c3"),
            ),
            "done",
        ]
    )
    agent = AgentBuilder("a", model).mcp([files]).build()

    async def collect():
        return [e async for e in agent.prompt("show me").stream()]

    events = asyncio.run(collect())
    parts = [e.parts for e in events if e.type == "tool_result"]
    assert parts == [
        [{"type": "image", "media_type": "image/png", "data": base64.b64encode(PNG).decode()}],
        [{"type": "audio", "media_type": "audio/wav", "data": "UklGRgQAAABXQVZF"}],
        [],
    ]
    assert [r.content for r in _results(model)] == [
        "[image image/png, 70 bytes, shown to the user]",
        "[audio audio/wav, 12 bytes, not shown: only PNG, JPEG, GIF and WebP images are shown "
        "to the user]",
        f"MCP resource ({(folder / 'data.bin').as_uri()}; application/octet-stream; binary, "
        "256 bytes)",  # (was 258 bytes: the base64 padding counted as data)
    ]


def _anthropic_calls(*calls: tuple[str, str, dict[str, Any]]) -> Any:
    """Claude's streamed answer calling ``calls`` (id, name, input), each input sent in two
    pieces of JSON."""
    events: list[dict[str, Any]] = [
        {
            "type": "message_start",
            "message": {
                "id": "msg_01",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-6",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 10, "output_tokens": 1},
            },
        }
    ]
    for index, (id, name, arguments) in enumerate(calls):
        text = json.dumps(arguments)
        events += [
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}},
            },
            *(
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": piece},
                }
                for piece in (text[:7], text[7:])
            ),
            {"type": "content_block_stop", "index": index},
        ]
    events += [
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use", "stop_sequence": None},
            "usage": {"output_tokens": 20},
        },
        {"type": "message_stop"},
    ]
    return ANTHROPIC.events(*events)


def test_a_jpeg_named_png_reaches_claude_as_the_jpeg_it_is(monkeypatch, folder, files):
    """The filesystem server names an image's type from its file's extension; Claude refuses
    an image whose bytes are not of the type it is sent as ("Image does not match the provided
    media type"), so the run failed, and so did every later request of the conversation."""
    (folder / "photo.png").write_bytes(JPEG)
    (folder / "dot.png").write_bytes(PNG)
    server = Server(
        _anthropic_calls(
            ("toolu_1", "read_media_file", {"path": str(folder / "photo.png")}),
            ("toolu_2", "read_media_file", {"path": str(folder / "dot.png")}),
        ),
        ANTHROPIC.sse("anthropic_text.sse"),
    )
    ANTHROPIC.route(monkeypatch, anthropic, "AsyncAnthropic", server)
    model = AnthropicModel("claude-sonnet-4-6", api_key="sk-ant-test")
    assert AgentBuilder("a", model).mcp([files]).build().prompt("look").send_sync().output

    sent = [
        (block["content"][0]["text"], block["content"][1]["source"]["media_type"])
        for block in server.body(1)["messages"][-1]["content"]
    ]
    assert sent == [
        ("[image image/jpeg, 22 bytes, shown to the user]", "image/jpeg"),
        ("[image image/png, 70 bytes, shown to the user]", "image/png"),
    ]


@pytest.mark.parametrize(
    ("data", "declared", "sent_as"),
    [
        (JPEG, "image/png", "image/jpeg"),
        (PNG, "image/jpeg", "image/png"),
        (b"GIF89a\x01\x00\x01\x00\x00\x00\x00;", "image/png", "image/gif"),
        (b"RIFF\x1a\x00\x00\x00WEBPVP8L\x0d\x00\x00\x00", "image/png", "image/webp"),
        (b"not an image at all", "image/png", "image/png"),  # (the bytes say nothing)
        (JPEG, "image/svg+xml", "image/svg+xml"),  # (not a type providers are sent)
    ],
    ids=["jpeg", "png", "gif", "webp", "unknown-bytes", "svg"],
)
def test_an_images_bytes_name_its_type_among_those_providers_take(data, declared, sent_as):
    from anvia_notebook.mcp._content import map_result

    encoded = base64.b64encode(data).decode()
    result = map_result({"content": [{"type": "image", "mimeType": declared, "data": encoded}]})
    [part] = result.media
    assert (part.media_type, part.data) == (sent_as, encoded)


# The providers' requests


def test_every_tool_reaches_both_providers_with_the_servers_own_schema(monkeypatch, files, memory):
    """Their schemas (nested arrays of objects, optional properties, defaults) are not what
    OpenAI's strict mode takes (every property required, no default), so they are sent as the
    servers wrote them, without ``strict``, to OpenAI and to Anthropic."""
    openai_server = Server(OPENAI.sse("openai_text.sse"))
    OPENAI.route(monkeypatch, openai, "AsyncOpenAI", openai_server)
    anthropic_server = Server(ANTHROPIC.sse("anthropic_text.sse"))
    ANTHROPIC.route(monkeypatch, anthropic, "AsyncAnthropic", anthropic_server)
    for model in (
        OpenAIModel("gpt-4o", api_key="sk-test"),
        AnthropicModel("claude-sonnet-4-6", api_key="sk-ant-test"),
    ):
        agent = AgentBuilder("a", model).mcp([files, memory]).build()
        assert agent.prompt("hi").send_sync().output
    schemas = {name: tool.input_schema for name, tool in agent.tools.items()}

    sent_to_openai = [tool["function"] for tool in openai_server.body()["tools"]]
    assert {tool["name"]: tool["parameters"] for tool in sent_to_openai} == schemas
    assert not [tool for tool in sent_to_openai if "strict" in tool]
    sent_to_anthropic = anthropic_server.body()["tools"]
    assert {tool["name"]: tool["input_schema"] for tool in sent_to_anthropic} == schemas

    assert len(schemas) == 23
    edits = schemas["edit_file"]["properties"]["edits"]
    assert edits["items"]["required"] == ["oldText", "newText"]
    entity = schemas["create_entities"]["properties"]["entities"]["items"]
    assert entity["properties"]["observations"] == {
        "type": "array",
        "items": {"type": "string"},
        "description": "An array of observation contents associated with the entity",
    }
    relation = schemas["create_relations"]["properties"]["relations"]["items"]
    assert relation["required"] == ["from", "to", "relationType"]


def _openai_call(id: str, name: str, arguments: dict[str, Any]) -> Any:
    """GPT's streamed answer calling ``name``, its arguments sent in pieces of 10 characters."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        body = {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "gpt-4o",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        return f"data: {json.dumps(body)}\n\n"

    text = json.dumps(arguments)
    first = {"index": 0, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}
    pieces = [chunk({"role": "assistant", "tool_calls": [first]})]
    pieces += [
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": text[i : i + 10]}}]})
        for i in range(0, len(text), 10)
    ]
    pieces += [chunk({}, "tool_calls"), "data: [DONE]\n\n"]
    return OPENAI.http.Response(
        200, headers={"content-type": "text/event-stream"}, content="".join(pieces).encode()
    )


def test_gpts_streamed_nested_arguments_reach_the_memory_server(monkeypatch, memory, tmp_path):
    entities = [
        {"name": "Ada", "entityType": "person", "observations": ["wrote the first program"]},
        {"name": "Engine", "entityType": "machine", "observations": ["analytical", "unbuilt"]},
    ]
    server = Server(
        _openai_call("call_1", "create_entities", {"entities": entities}),
        OPENAI.sse("openai_text.sse"),
    )
    OPENAI.route(monkeypatch, openai, "AsyncOpenAI", server)
    model = OpenAIModel("gpt-4o", api_key="sk-test")
    agent = AgentBuilder("a", model).mcp([memory]).approvals(lambda request: True).build()
    assert agent.prompt("remember Ada").send_sync().output

    [told] = [m for m in server.body(1)["messages"] if m["role"] == "tool"]
    assert told["tool_call_id"] == "call_1" and json.loads(told["content"]) == entities
    stored = (tmp_path / "memory.jsonl").read_text().splitlines()
    assert [json.loads(line)["observations"] for line in stored] == [
        e["observations"] for e in entities
    ]


# Roots and processes


async def test_roots_instead_of_folders_on_its_command_line(folder):
    """Started with no folder, the filesystem server asks the client for its roots: the one
    given (relative to the server's working folder) is the folder it may use."""
    server = mcp.stdio("files", "node", [_script(FILESYSTEM)], cwd=folder, roots=["."])
    listing = next(t for t in (await mcp.connect(server)).tools if t.name.endswith("_directories"))
    # The server asks for the roots once the session has started and applies them without
    # holding calls back (modelcontextprotocol/servers#3204): a call made at once may find no
    # folder allowed yet. Its own listing says when they are in place.
    deadline = time.monotonic() + 30
    while str(folder) not in await listing.call(listing.parse_args({}), None):
        assert time.monotonic() < deadline, "the server never took the roots"
        await asyncio.sleep(0.05)
    model = QueueModel(
        [
            call("list_allowed_directories", {}, id="c1"),
            call("read_text_file", {"path": str(folder / "notes.txt")}, id="c2"),
            call("read_text_file", {"path": str(folder.parent / "x")}, id="c3"),
            "done",
        ]
    )
    run = AgentBuilder("a", model).mcp([server]).build().prompt("go").start()
    assert (await asyncio.wait_for(run.wait(), 60)).output == "done"
    allowed, notes, outside = _results(model)
    assert allowed.content == f"Allowed directories:\n{folder}"
    assert notes.content == "hello\nworld\n"
    assert outside.is_error and "Access denied - path outside allowed directories" in (
        outside.content
    )


def _gone(pids: list[int], within: float = 20.0) -> bool:
    deadline = time.monotonic() + within
    while any(alive(pid) for pid in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_closing_the_sessions_leaves_no_node_process(folder, files, memory):
    before = set(processes_running(str(FILESYSTEM))) | set(processes_running(str(MEMORY)))
    model = QueueModel(
        [
            calls(
                ("list_allowed_directories", {}, "c1"),
                ("read_graph", {}, "c2"),
            ),
            "done",
        ]
    )
    AgentBuilder("a", model).mcp([files, memory]).build().prompt("go").send_sync()
    assert [r.is_error for r in _results(model)] == [False, False]
    started = [
        pid
        for script in (FILESYSTEM, MEMORY)
        for pid in processes_running(str(script))
        if pid not in before
    ]
    assert len(started) == 2
    asyncio.run(mcp.close_all())
    assert _gone(started)

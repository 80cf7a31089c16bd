"""MCP servers that misbehave, as a hostile user's servers would: an error text the model must
read whole, a tool list that never comes or never ends, a tool that clashes with the typed
output's ``final_result``. Each gives a clear error or result, never a hang."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import warnings

import pytest
from mcp_helpers import SERVERS
from pydantic import BaseModel

from anvia_notebook import AgentBuilder, mcp
from anvia_notebook.errors import McpConnectionError, McpToolNameClashError
from anvia_notebook.mcp import _connection
from anvia_notebook.models import QueueModel

from helpers import call, calls, tool_results

HOSTILE = str(SERVERS / "hostile.py")


@pytest.fixture(autouse=True)
def _close_sessions():
    yield
    asyncio.run(mcp.close_all())


def hostile(mode: str) -> mcp.McpServerConfig:
    return mcp.stdio(f"hostile-{mode}", sys.executable, [HOSTILE, mode])


def test_an_error_text_that_starts_with_a_bracket_reaches_the_model_whole():
    model = QueueModel([call("read_file", {}), "sorry"])
    agent = AgentBuilder("a", model).mcp([hostile("bracket_error")]).approvals(lambda r: True)
    agent.build().prompt("read my notes").send_sync()
    [result] = tool_results(model.requests[1])
    assert result.is_error
    assert "[Errno 2] No such file or directory: 'notes.txt'" in result.content
    assert "MCP tool returned an error" not in result.content


def test_the_model_is_told_which_media_the_person_sees_and_which_not():
    model = QueueModel([call("read_file", {}), "ok"])
    agent = AgentBuilder("a", model).mcp([hostile("odd_media")]).approvals(lambda r: True)
    agent.build().prompt("show me").send_sync()
    [result] = tool_results(model.requests[1])
    svg, audio, png = result.content.splitlines()
    assert svg.startswith("[image image/svg+xml, 8 bytes, not shown")
    assert audio.startswith("[audio audio/wav, 8 bytes, not shown")
    assert png == "[image image/png, 8 bytes, shown to the user]"


def test_a_server_that_prints_to_its_output_works_and_each_line_is_one_short_warning(caplog):
    model = QueueModel([call("read_file", {}), "ok"])
    agent = AgentBuilder("a", model).mcp([hostile("noisy")]).approvals(lambda r: True)
    with caplog.at_level(logging.WARNING):
        agent.build().prompt("go").send_sync()
    assert [part.content for part in tool_results(model.requests[1])] == ["done"]
    stray = [record for record in caplog.records if record.name == "mcp.client.stdio"]
    assert [record.getMessage().split("was skipped: ", 1)[1] for record in stray] == [
        "'Starting the hostile server v0 ...'",
        """'{"status": "ready", "port": 0}'""",  # (it was pydantic's 11 errors about it)
        "'working...'",
    ]
    assert all(record.levelname == "WARNING" and not record.exc_info for record in stray)
    assert "not an MCP message to its standard output" in stray[0].getMessage()


def test_a_server_that_never_lists_its_tools_is_a_clear_error_not_a_hang(monkeypatch):
    monkeypatch.setattr(_connection, "START_TIMEOUT", 1.0)
    model = QueueModel(["never asked"])
    server = mcp.stdio(
        "hostile-silent_listing", sys.executable, [HOSTILE, "silent_listing"], timeout=1
    )
    agent = AgentBuilder("a", model).mcp([server]).build()
    with pytest.raises(McpConnectionError) as caught:
        agent.prompt("go").send_sync()
    text = str(caught.value)
    assert "'hostile-silent_listing' could not start" in text
    assert "did not answer within 1 s (a server that takes longer to start" in text
    assert model.requests == []


def test_a_tool_list_whose_pages_never_end_is_a_clear_error_not_a_hang():
    model = QueueModel(["never asked"])
    agent = AgentBuilder("a", model).mcp([hostile("endless_listing")]).build()
    with pytest.raises(McpConnectionError) as caught:
        agent.prompt("go").send_sync()
    text = str(caught.value)
    assert "'hostile-endless_listing' could not start" in text
    assert "its list of tools" in text and "'page-2'" in text
    assert model.requests == []


def test_a_tool_list_that_is_not_valid_mcp_is_named_without_pydantic_jargon():
    model = QueueModel(["never asked"])
    agent = AgentBuilder("a", model).mcp([hostile("bad_listing")]).build()
    with pytest.raises(McpConnectionError) as caught:
        agent.prompt("go").send_sync()
    text = str(caught.value)
    assert "'hostile-bad_listing' could not start" in text
    assert text.endswith(
        "its answer to ListTools is not valid MCP (tools.2.inputSchema: Field required)."
    )
    assert "errors.pydantic.dev" not in text
    assert model.requests == []


class City(BaseModel):
    name: str


def test_a_server_tool_named_final_result_clashes_with_a_typed_output_before_any_model_call():
    model = QueueModel(["never asked"])
    agent = AgentBuilder("a", model).mcp([hostile("final_result")]).output_type(City).build()
    with pytest.raises(McpToolNameClashError) as caught:
        agent.prompt("go").send_sync()
    text = str(caught.value)
    assert "'hostile-final_result'" in text and "'final_result'" in text
    assert 'mode="native"' in text
    assert model.requests == []
    # In native mode there is no final_result tool of the run's: the server's tool is usable.
    native = QueueModel([call("final_result", {}), '{"name": "Paris"}'])
    agent = AgentBuilder("a", native).mcp([hostile("final_result")]).approvals(lambda r: True)
    response = agent.output_type(City, mode="native").build().prompt("go").send_sync()
    assert response.data == City(name="Paris")
    assert [t.name for t in native.requests[0].tools].count("final_result") == 1


def test_a_server_that_writes_bytes_that_are_not_utf8_keeps_working(caplog):
    """A Latin-1 banner, a line of raw bytes at each call, an answer with a byte that is not
    UTF-8: the stray lines are warnings, the bad byte reads as U+FFFD, and each call answers
    (before, the first bad byte ended the reading of the server's output for good)."""
    model = QueueModel([call("read_file", {}, "c1"), call("read_file", {}, "c2"), "ok"])
    agent = AgentBuilder("a", model).mcp([hostile("bad_bytes")]).approvals(lambda r: True)
    with caplog.at_level(logging.WARNING):
        response = agent.build().prompt("go").send_sync()
    assert response.output == "ok"
    for request in model.requests[1:]:
        assert [part.content for part in tool_results(request)] == ["caf\ufffd au lait"]
    stray = [record for record in caplog.records if record.name == "mcp.client.stdio"]
    assert [record.getMessage().rsplit(": ", 1)[1] for record in stray] == [
        "'D\ufffdmarrage du serveur'",
        "'\ufffd\ufffd progress 50%'",
        "'\ufffd\ufffd progress 50%'",
    ]


def test_a_server_error_with_the_sdk_s_closed_code_is_the_server_s_error_not_a_lost_server():
    """JSON-RPC error -32000 is in the range servers use for their own errors; the MCP SDK
    also uses it for a closed connection. The server's message reaches the model, the server
    is not restarted, and a call running beside it keeps its answer."""
    model = QueueModel(
        [
            calls(("read_file", {"fail": True}, "c1"), ("read_file", {}, "c2")),
            call("read_file", {"fail": True}, "c3"),
            "ok",
        ]
    )
    agent = AgentBuilder("a", model).mcp([hostile("server_error")]).approvals(lambda r: True)
    built = agent.build()
    built.prompt("go").with_tool_concurrency(2).send_sync()
    failed, beside = tool_results(model.requests[1])
    assert failed.is_error and "quota exceeded for today" in failed.content
    assert "went away" not in failed.content
    assert not beside.is_error and beside.content == "done"
    [again] = tool_results(model.requests[2])
    assert again.is_error and "quota exceeded for today" in again.content
    assert built.get_tool("read_file").connection.opened == 1


@pytest.mark.parametrize(
    ("arguments", "told"),
    [
        ({"units": 15}, "Weekly report \ufffd"),  # (half of the emoji's pair)
        ({"units": 16}, "Weekly report \U0001f600"),
        ({"broken": True}, "the server's answer was not a valid MCP message"),
        ({"deep": 700}, "done"),  # (too deep to read: skipped, the call answered)
        ({"quoting": True}, "done"),  # (a text that holds JSON is not the message)
    ],
)
def test_an_answer_the_sdk_cannot_read_is_read_again_not_waited_for(arguments, told, caplog):
    """A JavaScript server that cut a text inside an emoji writes half of its pair (``\ud83d``),
    which the SDK's JSON reader refuses: the answer was skipped as "not an MCP message" and
    the call waited out its whole timeout, then was told it gave no result. An answer that is
    no valid MCP answer (``"result": null``) waited the same way."""
    model = QueueModel([call("read_file", arguments), "ok"])
    server = mcp.stdio("hostile-cut", sys.executable, [HOSTILE, "cut_text"], timeout=30)
    agent = AgentBuilder("a", model).mcp([server]).approvals(lambda r: True).build()
    with caplog.at_level(logging.WARNING):
        response = agent.prompt("go").send_sync()
    assert response.output == "ok"
    [result] = tool_results(model.requests[1])
    assert told in result.content and result.is_error == ("broken" in arguments)
    assert "within 30 s" not in result.content
    skipped = [r.getMessage() for r in caplog.records if "not an MCP message" in r.getMessage()]
    assert len(skipped) == ("deep" in arguments or "quoting" in arguments)
    if "quoting" in arguments:  # (the line the server wrote, not the text inside it)
        written = skipped[0].split("was skipped: ", 1)[1]
        assert written.startswith('\'{"jsonrpc": "2.0", "id": "p1"')


@pytest.mark.parametrize("schema", ["prod", "dev"])
def test_an_argument_named_as_a_pydantic_method_is_the_argument_in_an_approval(schema):
    """``ctx.args.schema`` was pydantic's ``BaseModel.schema`` method, never ``"prod"``: a
    policy asking for approval only in production let every call run unasked; and
    ``ctx.args["schema"]`` failed the run."""
    from anvia_notebook import ToolApproval

    seen = []

    def when(ctx):
        seen.append((ctx.args.schema, ctx.args["json"], ctx.args.copy))
        return ctx.args["schema"] == "prod"

    arguments = {"schema": schema, "json": "j", "copy": "users"}
    model = QueueModel([call("drop_table", arguments), "ok"])
    server = mcp.stdio(
        "hostile-db", sys.executable, [HOSTILE, "shadowing"], approval=ToolApproval(when=when)
    )
    asked = []
    agent = AgentBuilder("a", model).mcp([server]).approvals(lambda r: asked.append(r) or False)
    agent.build().prompt("clean up").send_sync()
    assert seen == [(schema, "j", "users")]
    assert len(asked) == (schema == "prod")
    [result] = tool_results(model.requests[1])
    ran = f"dropped {schema}.users (j)"
    assert result.content == ("Tool approval was rejected." if schema == "prod" else ran)


async def test_a_form_a_server_asks_for_a_call_that_was_stopped_is_answered_cancel(tmp_path):
    """Asked after Stop had ended its call: it was answered ``decline`` (a server may read that
    as the person's refusal), with a warning that the run had nobody to ask, though it had."""
    from child_processes import wait_until

    from anvia_notebook import CallbackHumanInput, PromptCancelledError

    log = tmp_path / "answers.log"
    server = mcp.stdio("hostile-late", sys.executable, [HOSTILE, "late_form", str(log)])
    asked = []
    human = CallbackHumanInput(ask=lambda request: asked.append(request) or [])
    agent = AgentBuilder("a", QueueModel([call("read_file", {}), "never"])).mcp([server])
    run = agent.human_input(human).approvals(lambda r: True).build().prompt("go").start()
    await asyncio.to_thread(wait_until, lambda: log.exists(), None, "the call")
    run.cancel("Stop")
    with pytest.raises(PromptCancelledError):
        await run.wait()
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        answered = await asyncio.to_thread(
            wait_until, lambda: log.read_text().splitlines()[1:], None, "the answer"
        )
    assert json.loads(answered[0])["result"] == {"action": "cancel"}
    assert asked == [] and not [w for w in said if "nobody to ask" in str(w.message)]


async def test_a_form_for_a_stopped_call_that_comes_during_the_next_call_is_not_put_to_its_person(
    tmp_path,
):
    """Over stdio a server's question names no call. One the server sent for a call that was
    stopped, just before it read the cancel, came while the next call (of another run) was in
    progress, and was put to that run's person as if it were that call's question."""
    from child_processes import wait_until

    from anvia_notebook import CallbackHumanInput, PromptCancelledError

    log = tmp_path / "answers.log"
    server = mcp.stdio("hostile-late-next", sys.executable, [HOSTILE, "late_form_next", str(log)])
    asked: list[object] = []
    human = CallbackHumanInput(ask=lambda request: asked.append(request) or [])

    def agent(model: QueueModel):
        return AgentBuilder("a", model).mcp([server]).human_input(human).approvals(lambda r: True)

    first = agent(QueueModel([call("read_file", {}), "never"])).build().prompt("go").start()
    await asyncio.to_thread(wait_until, lambda: log.exists(), None, "the call")
    first.cancel("Stop")
    with pytest.raises(PromptCancelledError):
        await first.wait()
    model = QueueModel([call("read_file", {}), "ok"])
    second = agent(model).build().prompt("go again").start()
    assert (await second.wait()).output == "ok"
    [result] = tool_results(model.requests[1])
    assert result.content == "done" and not result.is_error
    answered = await asyncio.to_thread(
        wait_until, lambda: log.read_text().splitlines()[1:], None, "the answer"
    )
    assert json.loads(answered[0])["result"] == {"action": "cancel"}
    assert asked == []


@pytest.mark.parametrize("answer", ["error", "silent"])
async def test_a_ping_answered_with_an_error_or_not_at_all_fences_the_session_once(
    tmp_path, monkeypatch, answer
):
    """After a call that ended without its answer, the next call pings the server first (see
    ``Connection._fence``). A ping answered with an error, or not in time, left the session
    marked: every later call pinged again, and waited for it as long as the call's own time
    limit."""
    from anvia_notebook.errors import McpTimeoutError

    monkeypatch.setattr(_connection, "FENCE_PING_TIMEOUT", 0.2)
    log = tmp_path / "pings.log"
    server = mcp.stdio(
        "hostile-ping", sys.executable, [HOSTILE, "bad_ping", str(log), answer], timeout=1
    )
    connected = await mcp.connect(server)
    try:
        [tool] = connected.tools
        with pytest.raises(McpTimeoutError):
            await tool.call(tool.parse_args({}), None)
        assert await tool.call(tool.parse_args({}), None) == "done"
        assert await tool.call(tool.parse_args({}), None) == "done"
    finally:
        await connected.close()
    assert log.read_text() == "ping\n"


def test_an_mcp_sdk_of_another_major_version_is_named_not_waited_on(monkeypatch):
    """With the SDK 1.x installed (``pip install mcp`` in an older environment), a run with an
    MCP server waited for ever, without a word: the package uses what only 2.3 and later have."""
    import importlib.metadata

    real = importlib.metadata.version
    monkeypatch.setattr(
        importlib.metadata, "version", lambda name: "1.30.0" if name == "mcp" else real(name)
    )
    agent = AgentBuilder("a", QueueModel(["never"])).mcp([hostile("noisy")]).build()
    with pytest.raises(ImportError, match=r"mcp>=2\.3,<3; version 1\.30\.0 is installed"):
        agent.prompt("go").send_sync()

"""``runs`` and ``show`` in a terminal, for runs whose texts carry terminal control characters
(a model's or a tool's text, a prompt, an approval's reason): they are shown as visible escapes
(``\\x1b``), never sent to the terminal, where they could clear the screen, rewrite a line (a
pending approval's reason made to read "Approved already"), set the clipboard or recolour the
rest of the output."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from anvia_notebook import (
    AgentBuilder,
    Message,
    RunStore,
    StoreHumanInput,
    ToolApproval,
    create_tool,
)
from anvia_notebook.models import QueueModel

from helpers import call

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.timeout(120)

CLEAR = "\x1b[2J\x1b[H"
CLIPBOARD = "\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x07"
REWRITE = "\r\x1b[2KApproved already"
FLIP = "\u202e"  # right-to-left override: what follows reads backwards


class Transfer(BaseModel):
    account: str
    memo: str


def command_line(store: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "anvia_notebook", "--store", store, *args],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
    )


def controls(text: str) -> list[str]:
    """The control characters a terminal would act on (a line's end aside)."""
    return [c for c in text if (ord(c) < 32 and c != "\n") or 127 <= ord(c) < 160 or c == FLIP]


async def waiting_run(store: RunStore) -> Any:
    transfer = create_tool(
        name="transfer",
        description="Move money.",
        input=Transfer,
        approval=ToolApproval(reason=lambda ctx: f"Check the memo {ctx.args.memo}{REWRITE}"),
        execute=lambda args, ctx: f"done{CLEAR}",
    )
    model = QueueModel(
        [
            f"Sure{CLIPBOARD}",
            call("transfer", {"account": f"a1{FLIP}", "memo": f"rent{CLEAR}"}),
            "sent",
        ]
    )
    agent = AgentBuilder("payer", model).tool(transfer).human_input(StoreHumanInput()).build()
    first = await agent.prompt(f"hello{CLEAR}").store(store).send()
    run = agent.prompt([*first.messages, Message.user(f"pay{CLIPBOARD}")]).store(store).start()
    for _ in range(1000):
        if store.pending(run.run_id):
            return run
        await asyncio.sleep(0.01)
    raise AssertionError("nothing pending")


async def test_show_and_runs_print_control_characters_as_visible_escapes(tmp_path):
    location = str(tmp_path / "runs.sqlite")
    store = RunStore(location)
    run = await waiting_run(store)
    try:
        shown = await asyncio.to_thread(command_line, location, "show", run.run_id)
        assert shown.returncode == 0, shown.stderr
        assert controls(shown.stdout) == [], shown.stdout
        assert "\\x1b[2J" in shown.stdout and "\\x1b]52;c;" in shown.stdout
        assert "Check the memo rent\\x1b[2J\\x1b[H\\r\\x1b[2KApproved already" in shown.stdout
        assert "\\u202e" in shown.stdout
        listed = await asyncio.to_thread(command_line, location, "runs")
        assert listed.returncode == 0, listed.stderr
        assert controls(listed.stdout) == [], listed.stdout
        assert "pay\\x1b]52;c;" in listed.stdout
        as_json = await asyncio.to_thread(command_line, location, "show", run.run_id, "--json")
        assert controls(as_json.stdout) == []  # (JSON escapes them itself)
        [approval] = store.pending(run.run_id)
        assert store.approve(run.run_id, approval.id)
        response = await asyncio.wait_for(run.wait(), 10)
    finally:
        if not run.done:
            run.cancel()
        store.close()
    assert response.output == "sent"
    after = await asyncio.to_thread(command_line, location, "show", run.run_id)
    assert controls(after.stdout) == [] and "done\\x1b[2J" in after.stdout


async def test_runs_with_a_filter_that_matches_nothing_says_so_and_refuses_unknown_statuses(
    tmp_path,
):
    location = str(tmp_path / "runs.sqlite")
    store = RunStore(location)
    try:
        agent = AgentBuilder("payer", QueueModel(["hi"])).build()
        await agent.prompt("hello").store(store).send()
    finally:
        store.close()
    unknown = await asyncio.to_thread(command_line, location, "runs", "--status", "bogus")
    assert unknown.returncode == 2 and "Traceback" not in unknown.stderr
    assert "bogus" in unknown.stderr and "interrupted" in unknown.stderr  # the statuses it knows
    for args, words in (
        (("--status", "error"), "No stored runs with status error in"),
        (("--agent", "nobody"), "No stored runs of agent 'nobody' in"),
        (("--limit", "0"), "No runs shown: --limit 0 asks for none."),
    ):
        listed = await asyncio.to_thread(command_line, location, "runs", *args)
        assert listed.returncode == 0, listed.stderr
        assert words in listed.stdout
        # the store has runs: no advice to look for another store
        assert ".anvia/runs.sqlite next to the notebook" not in listed.stdout
    listed = await asyncio.to_thread(command_line, location, "runs", "--status", "success")
    assert "payer" in listed.stdout


@pytest.mark.parametrize("command", [("runs",), ("show", "run_x"), ("steer", "run_x", "hi")])
def test_a_folder_given_as_the_store_is_named_as_a_folder(tmp_path, command):
    folder = tmp_path / ".anvia"
    folder.mkdir()
    (folder / "runs.sqlite").touch()
    result = command_line(str(folder), *command)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert f"{folder} is a folder" in result.stderr
    assert "runs.sqlite" in result.stderr  # the file to pass instead
    assert sorted(p.name for p in folder.iterdir()) == ["runs.sqlite"]  # nothing made in it


@pytest.mark.parametrize("command", [("runs",), ("show", "run_x"), ("approve", "run_x", "a")])
@pytest.mark.parametrize(
    ("location", "words"),
    [("sqlite:///runs.db", "not a sqlite:// address"), ("host=db dbname=runs", "keywords")],
)
def test_a_store_address_of_another_kind_is_refused_by_the_command_line(
    tmp_path, command, location, words
):
    """Before, PostgreSQL's keyword form was read as a file path ("no run store at
    .../host=db dbname=runs"), and ``RunStore`` made a SQLite file of that name."""
    result = subprocess.run(
        [sys.executable, "-m", "anvia_notebook", "--store", location, *command],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert words in result.stderr
    assert list(tmp_path.iterdir()) == []

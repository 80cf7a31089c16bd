"""Decisions typed in a terminal that are not what they look like: each is refused with a clear
error (no traceback, a non-zero exit status), the approval still waits, and a later, valid
decision runs the tool with what it approved."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
import store_agents
from test_command_line import started, stop

from anvia_notebook import RunStore

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def store_file(tmp_path, monkeypatch):
    location = tmp_path / ".anvia" / "runs.sqlite"
    monkeypatch.setenv("ANVIA_NOTEBOOK_STORE", str(location))
    monkeypatch.setenv("ANVIA_TEST_EFFECTS", str(tmp_path / "effects.txt"))
    monkeypatch.delenv("ANVIA_TEST_BLOCK_TOOL", raising=False)
    return location


def command_line(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "anvia_notebook", "--store", str(store), *args],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
    )


NESTED = '{"account": "a1", "amount": 5, "memo": ' + "[" * 5000 + "]" * 5000 + "}"

REFUSED_ARGS = [
    ("null", "--args must be a JSON object"),
    ("", "--args is not valid JSON"),
    ('{"account": "a1", "amount": NaN}', "NaN and Infinity are not JSON numbers"),
    ('{"account": "a1", "amount": Infinity}', "NaN and Infinity are not JSON numbers"),
    (NESTED, "--args is nested too deeply"),
]


async def test_edited_arguments_that_are_not_a_json_object_are_refused(store_file, tmp_path):
    store = RunStore(store_file)
    run, approval = await started(store, "send 5 to a1")
    try:
        for text, words in REFUSED_ARGS:
            result = command_line(store_file, "approve", run.run_id, approval.id, "--args", text)
            assert (result.returncode, result.stdout) == (1, ""), (text[:40], result.stderr)
            assert "Traceback" not in result.stderr
            assert words in result.stderr, (text[:40], result.stderr)
            assert [p.id for p in store.pending(run.run_id)] == [approval.id]
        assert store_agents.effects() == []
        edit = '{"account": "a1", "amount": 3}'
        result = command_line(store_file, "approve", run.run_id, approval.id, "--args", edit)
        assert result.returncode == 0, result.stderr
        await asyncio.wait_for(run.wait(), 10)
    finally:
        if not run.done:
            await stop(run)
    assert store_agents.effects() == ["started a1 3", "done a1 3"]


async def test_answers_nested_too_deeply_are_refused_without_a_traceback(store_file, tmp_path):
    store = RunStore(store_file)
    run, question = await started(store, "ask me first")
    try:
        nested = "[" * 5000 + "]" * 5000
        result = command_line(store_file, "answer", run.run_id, question.id, "--json", nested)
        assert result.returncode == 1
        assert "Traceback" not in result.stderr
        assert "--json is nested too deeply" in result.stderr
        assert [p.id for p in store.pending(run.run_id)] == [question.id]
    finally:
        await stop(run)


def _read_stopped_early(store_file: Path, args: list[str]) -> str:
    """Run the command with its output going to a reader that has stopped; its error output."""
    child = subprocess.Popen(
        [sys.executable, "-m", "anvia_notebook", "--store", str(store_file), *args],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None and child.stderr is not None
    child.stdout.close()  # the reader stops before the command writes
    error = child.stderr.read()
    code = child.wait(60)
    child.stderr.close()
    # (as a shell gives a command SIGPIPE ended: 1, before, is also a refused decision's)
    assert code == 141, (args, code, error)
    return error


async def test_output_piped_into_a_reader_that_stops_ends_without_a_traceback(store_file):
    """``runs | head -1``: before, a ``BrokenPipeError`` traceback."""
    store = RunStore(store_file)
    run, _ = await started(store, "send 5 to a1")
    try:
        for args in (["runs"], ["show", run.run_id], ["runs", "--json"]):
            error = await asyncio.to_thread(_read_stopped_early, store_file, args)
            assert "Traceback" not in error and "BrokenPipe" not in error, (args, error)
    finally:
        await stop(run)


def test_show_does_not_print_a_postgresql_password_back(monkeypatch, capsys):
    """The commands ``show`` suggests name the store without its password, and say to give it
    as PGPASSWORD (they named it ``op:***@``: ``***`` was then sent as the password, which
    also overrides PGPASSWORD)."""
    from anvia_notebook import __main__ as cli
    from anvia_notebook.messages import Message
    from anvia_notebook.records import ApprovalRecord
    from anvia_notebook.run_state import RunState

    class FakeStore:
        location = "postgresql://op:***@db.example/runs"

        def get(self, run_id):
            return RunState(run_id=run_id, agent_id="banker", messages=[Message.user("hi")])

        def status(self, run_id):
            return "interrupted"

        def pending(self, run_id):
            record = ApprovalRecord(
                id="approval_1",
                run_id=run_id,
                agent_id="banker",
                tool_name="transfer",
                tool_call_id="t1",
                args={"account": "a1"},
            )
            return [record]

        def interactions(self, run_id):
            return []

        def edit_requests(self, interaction_id):
            return []

        def too_late(self, run_id, record):
            return None

        def queued_steering(self, run_id):
            return []

        def sub_runs(self, run_id):
            return []

        def top_run(self, run_id):
            return None

    monkeypatch.setattr(cli, "_refused_edits", lambda store, run_id: [])
    args = cli._parser().parse_args(
        ["--store", "postgresql://op:s3cret@db.example/runs", "show", "run_1"]
    )
    cli._print_run(FakeStore(), args)
    out = capsys.readouterr().out
    assert "s3cret" not in out and "***" not in out
    assert "--store postgresql://op@db.example/runs approve run_1 approval_1" in out
    assert "set PGPASSWORD to its login password first" in out
    assert "agent.resume('run_1', store='postgresql://op@db.example/runs')" in out


async def test_output_a_terminal_cannot_encode_or_a_full_disk_ends_without_a_traceback(
    store_file,
):
    """An ASCII terminal: a character it has not (the prompt's é) failed the command half-way
    with the codec's words; a full disk (/dev/full) printed a traceback."""
    store = RunStore(store_file)
    run, _ = await started(store, "send 5 to a1 (café)")
    try:
        ascii_only = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONIOENCODING": "ascii"}
        shown = await asyncio.to_thread(
            subprocess.run,
            [
                sys.executable,
                "-m",
                "anvia_notebook",
                "--store",
                str(store_file),
                "show",
                run.run_id,
            ],
            env=ascii_only,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert shown.returncode == 0, shown.stderr
        assert "caf\\xe9" in shown.stdout and "codec" not in shown.stderr
        written = await asyncio.to_thread(_runs_into_a_full_disk, store_file)
        assert written.returncode == 1
        assert written.stderr.strip() == (
            "error: the output could not be written: No space left on device."
        )
    finally:
        await stop(run)


def _runs_into_a_full_disk(store_file: Path) -> subprocess.CompletedProcess[str]:
    with open("/dev/full", "w") as full:
        return subprocess.run(
            [sys.executable, "-m", "anvia_notebook", "--store", str(store_file), "runs"],
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )


@pytest.mark.parametrize(
    ("args", "code"),
    [(("runs",), 0), (("show", "run-1"), 1), (("approve", "run-1", "approval-1"), 1)],
)
def test_an_empty_file_given_as_the_store_is_said_to_be_empty_and_left_as_it_is(
    tmp_path, args, code
):
    # (a file another program made, or one cut to nothing: a read must not make it a run store)
    empty = tmp_path / "runs.sqlite"
    empty.touch()
    result = command_line(empty, *args)
    assert result.returncode == code, result.stderr
    said = result.stdout if code == 0 else result.stderr
    assert f"there is no run store at {empty} (the file is empty)." in said
    assert "Traceback" not in result.stderr
    assert empty.stat().st_size == 0


@pytest.mark.parametrize(
    ("address", "written", "secret"),
    [
        ("postgresql://op:pw@db/runs", "postgresql://op@db/runs", True),
        (
            "postgresql://op@db/runs?password=pw&sslmode=require",
            "postgresql://op@db/runs?sslmode=require",
            True,
        ),
        # (settings named like secrets that are none: a command without them connects elsewhere,
        # or not at all, and no password was left out)
        ("postgresql://op@a,b/runs?target_session_attrs=read-write", None, False),
        ("postgresql://op@db/runs?sslcert=/c.crt&sslkey=/c.key&passfile=/p", None, False),
        ("postgresql://op@db/runs?require_auth=scram-sha-256", None, False),
        # (a scheme in capitals is a PostgreSQL address too: a password with "/" or "#" in it,
        # not percent-encoded, was written out whole in the command, as a path or a fragment)
        ("PostgreSQL://op:p/w@db/runs", "postgresql://op@db/runs", True),
        ("POSTGRES://op:p#w@db/runs", "postgres://op@db/runs", True),
    ],
)
def test_the_store_address_in_suggested_commands_drops_only_its_password(address, written, secret):
    from anvia_notebook._util import url_for_commands

    assert url_for_commands(address) == (written or address, secret)


@pytest.mark.parametrize(
    "address",
    ["postgresql://op:p/w@db/runs", "PostgreSQL://op:p/w@db/runs", "POSTGRES://op:p#w@db"],
)
def test_a_password_with_a_slash_or_hash_is_not_shown_whatever_the_scheme_s_case(address):
    from anvia_notebook._util import shown_url

    shown = shown_url(address)
    assert "p/w" not in shown and "p#w" not in shown and "op:***@db" in shown, shown

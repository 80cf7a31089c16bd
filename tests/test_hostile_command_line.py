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

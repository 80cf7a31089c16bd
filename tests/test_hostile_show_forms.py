"""``show`` for a question with no choices (a text or number field of an MCP server's form):
the answer it suggests is a text of the person's own for that field, never "<one of: >" (a
choice among none, which no answer can fill in), and it works once its placeholders are
filled in."""

from __future__ import annotations

import asyncio
import json
import shlex

import pytest
from mcp_helpers import toolbox

from anvia_notebook import AgentBuilder, RunStore, StoreHumanInput, mcp
from anvia_notebook.__main__ import main as cli
from anvia_notebook.models import QueueModel

from helpers import call, tool_results

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module", autouse=True)
def _close_sessions():
    yield
    asyncio.run(mcp.close_all())


async def pending(run, timeout: float = 60.0):
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not run.interactions.pending:
        assert loop.time() < deadline, "no question was asked"
        await asyncio.sleep(0.01)
    [record] = run.interactions.pending
    return record


async def test_show_suggests_an_own_answer_for_a_field_without_choices(store_path, capsys):
    model = QueueModel([call("book_table", {}), "done"])
    agent = AgentBuilder("a", model).mcp([toolbox("booker")]).human_input(StoreHumanInput())
    run = agent.build().prompt("book").start()
    record = await pending(run)
    location = str(store_path)
    try:
        assert cli(["show", run.run_id, "--store", location]) == 0
        shown = capsys.readouterr().out
        assert "<one of: >" not in shown
        [guests] = [line for line in shown.splitlines() if line.strip().startswith("[guests]")]
        assert guests.endswith("(no choices: a text of your own)")
        # The fields of fixed values take only their choices: no own answer is suggested.
        assert "choices: 'small' (small), 'large' (large) (only these)" in shown
        assert "choices: 'true' (Yes), 'false' (No) (only these)" in shown
        assert "choices: '(blank)' (Leave blank)\n" in shown  # a text of one's own too
        [typed] = [
            line
            for line in shown.splitlines()
            if line.strip().startswith("or:") and "--json" in line
        ]
        owns = {a["questionId"] for a in json.loads(shlex.split(typed)[-1]) if a.get("custom")}
        assert owns == {"guests", "note"}
        [picked] = [line for line in shown.splitlines() if line.strip().startswith("answer:")]
        answers = json.loads(shlex.split(picked)[-1])
        assert {"questionId": "guests", "answer": "<your own answer>", "custom": True} in answers
        filled = []
        for answer in answers:
            value = {"size": "large", "outdoor": "true", "guests": "4", "note": "(blank)"}
            filled.append({**answer, "answer": value[answer["questionId"]]})
            if "choice" in answer:
                filled[-1]["choice"] = value[answer["questionId"]]
        command = ["answer", run.run_id, record.id, "--json", json.dumps(filled)]
        assert cli([*command, "--store", location]) == 0, capsys.readouterr().err
        await asyncio.wait_for(run.wait(), 60)
    finally:
        if not run.done:
            run.cancel()
    assert tool_results(model.requests[1])[0].content == (
        "accept size='large' outdoor=True guests=4 note=None"
    )
    store = RunStore(location)
    try:
        assert store.get(run.run_id).questions[record.id].status == "answered"
    finally:
        store.close()

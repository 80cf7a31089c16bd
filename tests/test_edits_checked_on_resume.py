"""An approval with edited arguments decided while no process runs the run (the command line,
``RunStore.approve`` in another process, after the run's process was killed) is not recorded: it
waits for the run, which checks it with the tool's own model (a validator the JSON Schema cannot
say) when it is resumed, and records it or refuses it in its words, with or without a human input
attached. The store never says "approved" for an edit the run then refuses."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import confirm_agents
import pytest
from child_processes import kill, wait_until
from test_edits_confirmed_by_the_run import (
    REFUSED,
    RULE,
    TOLD_REJECTED,
    command_line,
    start_owner,
    told_the_model,
)

from anvia_notebook import RunStore, ToolApprovalRequiredError

from helpers import ran_with

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def effects(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "effects.txt"
    monkeypatch.setenv("ANVIA_TEST_EFFECTS", str(path))
    return path


async def killed_while_waiting(store: RunStore, location: str, effects: Path, lead: bool = False):
    """A run whose process was killed (SIGKILL) while the approval of ``pay`` waited."""
    owner = start_owner(location, effects, lead=lead)
    [approval] = await asyncio.to_thread(wait_until, lambda: store.pending(), owner, "approval")
    kill(owner)
    return approval


def edit(location: str, run_id: str, approval_id: str, amount: int) -> Any:
    args = ("approve", run_id, approval_id, "--args", json.dumps({"amount": amount}))
    return command_line(location, *args)


async def test_a_bad_edit_waits_for_the_run_which_refuses_it_on_resume_without_a_human(
    store_location: str, effects: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = RunStore(store_location)
    approval = await killed_while_waiting(store, store_location, effects)
    run_id = approval.run_id
    sent = await asyncio.to_thread(edit, store_location, run_id, approval.id, 5)
    assert sent.returncode == 0, sent.stderr
    assert "Approved" not in sent.stdout
    assert f"wait for run {run_id}" in sent.stdout and f"agent.resume({run_id!r})" in sent.stdout
    [still] = store.pending(run_id)
    assert (still.id, still.decided_by, still.edited_args) == (approval.id, None, None)
    shown = await asyncio.to_thread(command_line, store_location, "show", run_id)
    assert 'edited arguments {"amount": 5}: waits for the run to check it' in shown.stdout
    data = json.loads(
        (await asyncio.to_thread(command_line, store_location, "show", run_id, "--json")).stdout
    )
    assert data["pending"][0]["edits"] == [
        {"status": "queued", "args": {"amount": 5}, "refused": None}
    ]

    resuming = confirm_agents.agent(human=False).resume(run_id)
    with (
        caplog.at_level(logging.WARNING, logger="anvia_notebook"),
        pytest.raises(ToolApprovalRequiredError),
    ):
        await asyncio.wait_for(resuming.send(), 60)
    [(status, _, words)] = store.edit_requests(approval.id)
    assert status == "refused" and words.startswith(REFUSED) and RULE in words
    assert any(approval.id in r.getMessage() and RULE in r.getMessage() for r in caplog.records)
    assert confirm_agents.effects() == []
    [record] = store.interactions(run_id)
    assert record.status != "approved" and record.edited_args is None
    assert not any(TOLD_REJECTED in text for text in told_the_model(store, run_id))
    store.close()


async def test_a_bad_then_a_good_edit_both_waiting_the_resumed_run_applies_the_good_one(
    store_location: str, effects: Path
) -> None:
    store = RunStore(store_location)
    approval = await killed_while_waiting(store, store_location, effects)
    run_id = approval.run_id
    for amount in (5, 4):
        sent = await asyncio.to_thread(edit, store_location, run_id, approval.id, amount)
        assert sent.returncode == 0, sent.stderr
    assert [status for status, _, _ in store.edit_requests(approval.id)] == ["queued"] * 2
    response = await asyncio.wait_for(confirm_agents.agent(human=False).resume(run_id).send(), 60)
    assert response.output == f"told: {ran_with('pay', {'amount': 4}, 'paid 4')}"
    assert confirm_agents.effects() == ["paid 4"]
    [record] = store.interactions(run_id)
    assert (record.status, record.edited_args, record.decided_via) == (
        "approved",
        {"amount": 4},
        "cli",
    )
    [(refused, args, words)] = store.edit_requests(approval.id)  # the applied one is done
    assert (refused, args) == ("refused", {"amount": 5}) and RULE in words
    store.close()


async def test_two_good_edits_waiting_the_resumed_run_applies_the_first_and_refuses_the_second(
    store_location: str, effects: Path
) -> None:
    store = RunStore(store_location)
    approval = await killed_while_waiting(store, store_location, effects)
    run_id = approval.run_id
    for amount in (4, 6):
        sent = await asyncio.to_thread(edit, store_location, run_id, approval.id, amount)
        assert sent.returncode == 0, sent.stderr
    response = await asyncio.wait_for(confirm_agents.agent(human=False).resume(run_id).send(), 60)
    assert response.output == f"told: {ran_with('pay', {'amount': 4}, 'paid 4')}"
    assert confirm_agents.effects() == ["paid 4"]
    [record] = store.interactions(run_id)
    assert (record.status, record.edited_args) == ("approved", {"amount": 4})
    # The second came after the first was recorded: refused as any second decision is (it was
    # marked done before, as if applied, and the sender could not tell it was not).
    [(status, args, words)] = store.edit_requests(approval.id)
    assert (status, args) == ("refused", {"amount": 6})
    assert words == "This approval is already approved; a second decision is refused."
    # The command line tells its sender so, after the approval was decided.
    shown = await asyncio.to_thread(command_line, store_location, "show", run_id)
    assert f"Edited arguments for pay ({approval.id}, approved), refused:" in shown.stdout
    assert f'  {{"amount": 6}}: {words}' in shown.stdout
    data = json.loads(
        (await asyncio.to_thread(command_line, store_location, "show", run_id, "--json")).stdout
    )
    assert data["pending"] == []
    assert data["refused_edits"] == [
        {"approval_id": approval.id, "tool_name": "pay", "args": {"amount": 6}, "refused": words}
    ]
    store.close()


async def test_a_rejection_after_a_waiting_edit_wins_and_the_edit_is_never_applied(
    store_location: str, effects: Path
) -> None:
    store = RunStore(store_location)
    approval = await killed_while_waiting(store, store_location, effects)
    run_id = approval.run_id
    await asyncio.to_thread(store.approve, run_id, approval.id, args={"amount": 4})
    rejected = await asyncio.to_thread(
        command_line, store_location, "reject", run_id, approval.id, "--reason", "not today"
    )
    assert rejected.returncode == 0 and "Rejected" in rejected.stdout, rejected.stderr
    [(status, _, words)] = store.edit_requests(approval.id)
    assert status == "refused" and "already rejected" in words
    response = await asyncio.wait_for(confirm_agents.agent(human=False).resume(run_id).send(), 60)
    assert response.output == "told: not today"
    assert confirm_agents.effects() == []
    [record] = store.interactions(run_id)
    assert (record.status, record.edited_args) == ("rejected", None)
    store.close()


async def test_a_sub_agent_s_edit_waits_for_the_top_level_run(
    store_location: str, effects: Path
) -> None:
    store = RunStore(store_location)
    approval = await killed_while_waiting(store, store_location, effects, lead=True)
    [(top, _)] = [(r.run_id, r) for r in store.runs() if r.run_id != approval.run_id]
    sent = await asyncio.to_thread(edit, store_location, top, approval.id, 7)
    assert sent.returncode == 0, sent.stderr
    assert f"agent.resume({top!r})" in sent.stdout and approval.run_id in sent.stdout
    resumed = confirm_agents.agent(lead=True).resume(top).start()
    for _ in range(3000):
        if store.edit_requests(approval.id)[0][0] == "refused":
            break
        await asyncio.sleep(0.02)
    assert RULE in store.edit_requests(approval.id)[0][2]
    assert [p.id for p in store.pending(top)] == [approval.id]
    await asyncio.to_thread(store.approve, top, approval.id, args={"amount": 8})
    assert (
        await asyncio.wait_for(resumed.wait(), 60)
    ).output == f"lead told: {ran_with('pay', {'amount': 8}, 'paid 8')}"
    assert confirm_agents.effects() == ["paid 8"]
    assert not any(TOLD_REJECTED in text for text in told_the_model(store, top))
    store.close()

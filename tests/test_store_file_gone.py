"""A store file deleted (``rm -rf .anvia``) or replaced by another copy while a run waits for a
decision: the run's next write says so in one warning and the run goes on in memory, as with any
store that fails, instead of writing on into a deleted file (lost when it ends) or disagreeing
with the file now there. New runs are stored in a store opened anew at that place."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import sqlite3
import warnings

import pytest
import store_agents

from anvia_notebook import RunStore, RunStoreError
from anvia_notebook import store as store_module

from helpers import pending_of

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def project(tmp_path, monkeypatch):
    """The default store of a notebook's folder: ``.anvia/runs.sqlite``."""
    path = tmp_path / ".anvia" / "runs.sqlite"
    monkeypatch.setenv("ANVIA_NOTEBOOK_STORE", str(path))
    monkeypatch.setenv("ANVIA_TEST_EFFECTS", str(tmp_path / "effects.txt"))
    monkeypatch.delenv("ANVIA_TEST_BLOCK_TOOL", raising=False)
    store_module._reset_for_tests()
    yield path
    store_module._reset_for_tests()


async def waiting_run():
    """A run of the approval agent in the default store, once its approval waits."""
    run = store_agents.agent("approval").prompt("send 5 to a1").start()
    store = store_module.get_store()
    assert store is not None
    for _ in range(1000):
        if store.pending(run.run_id):
            return run, store, store.pending(run.run_id)[0]
        await asyncio.sleep(0.01)
    raise AssertionError("nothing pending")


@pytest.mark.parametrize("how", ["deleted", "replaced"])
async def test_a_store_file_deleted_or_replaced_while_a_run_waits_is_reported_at_its_next_write(
    project, how
):
    run, store, approval = await waiting_run()
    shutil.rmtree(project.parent)  # the user cleans up: rm -rf .anvia
    if how == "replaced":  # ... and puts another store there (a restored copy)
        RunStore(project).close()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run.interactions.decide(approval.id, approved=True)
        response = await asyncio.wait_for(run.wait(), 10)
    assert response.output.startswith("Result:")  # it went on, in memory
    assert store_agents.effects() == ["started a1 5", "done a1 5"]  # the tool ran once
    [warning] = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    what = "deleted (or moved away)" if how == "deleted" else "replaced by another file"
    assert f"The run store {project} was {what} while this process used it" in warning
    assert "goes on in memory only" in warning
    assert "The store keeps it" not in warning  # (it does not: the file is gone)
    # A copy restored at the store's place holds the run as it was then: the warning says a
    # resume from it would repeat what the run did since (a deleted file holds nothing).
    assert ("resuming one from it does again" in warning) == (how == "replaced")
    with pytest.raises(RunStoreError, match=re.escape(f"was {what}")):
        store.approve(run.run_id, approval.id)  # the old store object says so too
    # Nothing of the run was written into the file now at that place; a new run is stored there.
    after = store_module.get_store()
    assert after is not None and after is not store
    assert run.run_id not in [r.run_id for r in after.runs()]
    await store_agents.agent("plain").prompt("send 6 to a2").send()
    assert [r.prompt for r in RunStore(project).runs()] == ["send 6 to a2"]


async def test_a_decision_in_a_copy_put_at_the_store_s_place_is_not_carried_out(project):
    """A copy of the store (a backup restored) put at its place while a run waits through the
    store, and the approval given in that copy: the waiting run heard it (the two files share
    the write-ahead log beside them) and ran the tool, though it could record nothing there,
    so resuming the run from the copy ran the tool a second time. The run now ends saying its
    store was replaced, and the resumed run runs the tool once."""
    from anvia_notebook import ToolApprovalRequiredError

    run, _, approval = await waiting_run()
    copy = project.with_name("copy.sqlite")
    with (
        contextlib.closing(sqlite3.connect(project)) as source,
        contextlib.closing(sqlite3.connect(copy)) as target,
    ):
        source.backup(target)
    with contextlib.ExitStack() as stack:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")  # (from the replacement on, whenever the run sees it)
            os.replace(copy, project)
            restored = stack.enter_context(contextlib.closing(RunStore(project)))
            restored.approve(run.run_id, approval.id)
            with pytest.raises(ToolApprovalRequiredError, match="replaced by another file"):
                await asyncio.wait_for(run.wait(), 10)
        assert store_agents.effects() == []
        assert any("replaced by another file" in str(w.message) for w in caught)
        resumed = store_agents.agent("approval").resume(run.run_id)
        response = await asyncio.wait_for(resumed.store(restored).send(), 30)
        assert response.output.startswith("Result:")
        assert store_agents.effects() == ["started a1 5", "done a1 5"]


def test_a_store_opened_by_a_relative_path_is_kept_after_a_change_of_folder(tmp_path, monkeypatch):
    """``RunStore("runs.sqlite")``, then ``%cd sub``: the file is still where it was opened, so
    runs go on being stored in it (not taken as deleted, nor opened anew in the other folder)."""
    from anvia_notebook import AgentBuilder
    from anvia_notebook.models import QueueModel

    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path)
    store = RunStore("runs.sqlite")

    def run(prompt: str) -> None:
        agent = AgentBuilder("a", QueueModel(["hi"])).build()
        agent.prompt(prompt).store(store).send_sync()

    try:
        run("q1")
        monkeypatch.chdir(tmp_path / "sub")
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            run("q2")
        assert [r.prompt for r in RunStore(tmp_path / "runs.sqlite").runs()] == ["q2", "q1"]
        assert not (tmp_path / "sub" / "runs.sqlite").exists()
    finally:
        store.close()


async def test_store_human_input_without_a_store_says_who_can_still_decide(project):
    """StoreHumanInput waits for decisions made through the run store: with none (store(None),
    set_store(None)), or once the store failed, the command line's decisions could not reach it
    and a script waited for ever, silently; it is said, and this process can still decide."""
    request = store_agents.agent("approval").prompt("send 5 to a1").store(None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = request.start()
        [waiting] = await pending_of(run)
    [told] = [str(w.message) for w in caught if "this run has no store" in str(w.message)]
    assert f"Approval {waiting.id} of run {run.run_id} waits" in told
    assert "RunHandle.approve/reject/answer in this process" in told
    run.interactions.decide(waiting.id, approved=True)  # (as RunHandle.approve does)
    assert (await asyncio.wait_for(run.wait(), 10)).output.startswith("Result:")


@pytest.mark.parametrize("waiting", ["already", "asked after"])
async def test_an_approval_through_a_store_that_failed_ends_the_run_saying_why(project, waiting):
    """A write failed (a PostgreSQL server down longer than it is waited for, a full disk)
    while a script's run waited through StoreHumanInput: the approval waiting then, and the
    next one it asked, waited for ever in that process (a warning said only this process
    could decide: a script that called send_sync() cannot), while the store said the run had
    ended. The run now ends there, saying no decision can reach it."""
    from anvia_notebook import ToolApprovalRequiredError

    run = store_agents.stepper().prompt("three steps").start()
    [first] = await pending_of(run)
    with pytest.warns(RuntimeWarning, match="goes on in memory only"):
        run.store_failed(OSError("Connection refused"))  # what the run does when a write fails
    if waiting == "asked after":
        run.interactions.decide(first.id, approved=True)  # (decided here before it ended)
    with pytest.raises(ToolApprovalRequiredError) as caught:
        await asyncio.wait_for(run.wait(), 30)
    assert str(caught.value) == (
        "Tool approval required for step: The run store could not be written (Connection "
        "refused), so no decision made through it can reach this run."
    )
    ended = run.state.approvals[caught.value.request.approval_id]
    assert (ended.status, ended.decided_by) == ("cancelled", "runtime")
    assert len(run.state.approvals) == (1 if waiting == "already" else 2)


@pytest.mark.parametrize(
    "beside", ["a tool called after it", "a tool called before it", "a question asked beside it"]
)
async def test_an_approval_through_the_store_ends_whichever_write_fails(
    project, monkeypatch, beside
):
    """The approval's wait began in the same step as another call's write failed (its wait
    was registered after the run had left the store), or the write that failed was a question's
    opened beside it (it left the store without waking the wait): it waited for ever."""
    from pydantic import BaseModel

    from anvia_notebook import (
        AgentBuilder,
        StoreHumanInput,
        ToolApprovalRequiredError,
        ask_question,
        create_tool,
    )
    from anvia_notebook.models import FunctionModel, ModelResponse, ToolCall

    class Nothing(BaseModel):
        pass

    plain = create_tool(name="plain", description="", input=Nothing, execute=lambda a, c: "ok")
    other = ToolCall(id="p1", name="plain", arguments={})
    if beside.startswith("a question"):
        chosen = [{"label": "S", "value": "s"}]
        asked = {"questions": [{"id": "x", "question": "Which?", "choices": chosen}]}
        other = ToolCall(id="q1", name="ask_question", arguments=asked)
    transfer = ToolCall(id="t1", name="transfer", arguments={"account": "a1", "amount": 5})
    calls = [other, transfer] if beside == "a tool called before it" else [transfer, other]
    model = FunctionModel(
        lambda r: ModelResponse(tool_calls=calls) if len(r.messages) == 1 else "done"
    )
    tools = [store_agents.transfer_tool(), plain, ask_question]
    agent = AgentBuilder("banker", model).tools(tools).human_input(StoreHumanInput()).build()
    store = store_module.get_store()
    opened: list[str] = []
    real_open, real_save = store.open_interaction, store.save_run

    def open_interaction(record, **options):
        opened.append(record.kind)
        if record.kind == "question":
            raise OSError("Connection refused")  # (the server went away)
        return real_open(record, **options)

    def save_run(*args, **options):
        # (an interaction is opened in the run's write of the state that asked for it)
        kinds = [record.kind for record, _ in options.get("opening", ())]
        if opened or "question" in kinds:
            opened.extend(kinds)
            raise OSError("Connection refused")
        opened.extend(kinds)
        return real_save(*args, **options)

    monkeypatch.setattr(store, "open_interaction", open_interaction)
    monkeypatch.setattr(store, "save_run", save_run)
    run = agent.prompt("go").with_tool_concurrency(2).start()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the run says it goes on in memory only)
        with pytest.raises(ToolApprovalRequiredError, match="no decision made through it"):
            await asyncio.wait_for(run.wait(), 30)


def test_a_store_file_that_cannot_be_looked_at_for_a_moment_is_not_taken_as_gone(
    tmp_path, monkeypatch
):
    """A look at the file that fails for another reason than its absence (a network folder's
    ``EIO`` or stale handle for a moment, a folder made unreadable): the file is not taken as
    deleted, so the decisions the store's watcher waits for are not dropped (before: a
    moment's failure dropped them all, and the waiting runs were told their store had left)."""
    import errno
    import time

    from anvia_notebook.store import _sqlite

    path = tmp_path / "runs.sqlite"
    store = RunStore(path)
    try:
        store.runs()
        lost: list[Exception] = []
        store.watch("q_1", lambda record: None, lost=lost.append)
        absolute = os.path.abspath(path)
        real_stat = os.stat

        def failing_stat(location, *args, **kwargs):
            if os.fspath(location) == absolute:
                raise OSError(errno.EIO, "Input/output error", absolute)
            return real_stat(location, *args, **kwargs)

        monkeypatch.setattr(_sqlite.os, "stat", failing_stat)
        time.sleep(1.0)  # (the watcher looks every 0.2 s)
        monkeypatch.setattr(_sqlite.os, "stat", real_stat)
        time.sleep(0.5)
        assert lost == []
        assert "q_1" in store._watched
    finally:
        store.close()

"""Runs that outlive their process: SIGKILL a process mid-run, then list, decide and resume.

Each test starts a child Python process that runs an agent against the test's own run store,
kills it with SIGKILL at a chosen point, and resumes the run here with the same agent.
"""

from __future__ import annotations

import asyncio
import gc
import os
import subprocess
import sys
import time
from typing import Any

import pytest
import store_agents
from child_processes import agents_environ, child_environ, kill, start_python, wait_until
from store_agents import effects

from anvia_notebook import (
    DecisionRefusedError,
    PromptCancelledError,
    RunOwnedError,
    RunStore,
    RunStoreError,
    runs,
)
from anvia_notebook.__main__ import main as cli

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def env(store_location, tmp_path, monkeypatch):
    return agents_environ(tmp_path, monkeypatch)


def start_child(environ, kind, prompt="send 5 to a1", **extra):
    code = f"import store_agents; store_agents.run({kind!r}, {prompt!r})"
    return start_python(code, {**environ, **extra})


def killed_at_the_approval(env, store):
    """A child runs the approval agent until its approval waits, then is killed (SIGKILL):
    what is pending then."""
    child = start_child(env, "approval")
    pending = wait_until(lambda: store.pending(), child, "the approval")
    kill(child)
    return pending


def killed_while_the_tool_runs(env):
    """A child runs the plain agent until its tool has started, then is killed (SIGKILL)."""
    child = start_child(env, "plain", ANVIA_TEST_BLOCK_TOOL="1")
    wait_until(lambda: effects() == ["started a1 5"], child, "the tool to start")
    kill(child)


def only_run(store):
    [summary] = store.runs()
    return summary


async def settle(request_run, store, kind=None):
    for _ in range(1000):
        pending = store.pending(request_run.run_id)
        if pending and (kind is None or type(pending[0]).__name__ == kind):
            return pending
        await asyncio.sleep(0.01)
    raise AssertionError("nothing pending after resume")


async def test_killed_while_an_approval_waits_then_resumed_and_approved_runs_once(
    env, store_location
):
    store = RunStore(store_location)
    [approval] = killed_at_the_approval(env, store)
    summary = only_run(store)
    assert summary.status == "interrupted"
    assert runs(status="interrupted")[0].run_id == summary.run_id
    # The stored state says what the listing says (its row still says the run waits).
    assert store.get(summary.run_id).status == store.status(summary.run_id) == "interrupted"
    assert store.trace(summary.run_id).status == "interrupted"  # (it said "running")
    request = store_agents.agent("approval").resume(summary.run_id)
    run = request.start()
    [again] = await settle(run, store)
    assert again.id == approval.id  # the same approval comes back pending
    assert run.status == store.get(summary.run_id).status == "waiting"
    store.approve(summary.run_id, approval.id, reason="ok after restart")
    response = await asyncio.wait_for(run.wait(), 10)
    assert response.output.startswith("Result:")
    assert effects() == ["started a1 5", "done a1 5"]
    assert store.runs()[0].status == "success" == store.trace(summary.run_id).status


async def test_a_decision_written_while_no_process_runs_it_is_used_on_resume(
    env, store_location, capsys
):
    store = RunStore(store_location)
    [approval] = killed_at_the_approval(env, store)
    run_id = only_run(store).run_id
    assert cli(["--store", store_location, "approve", run_id, approval.id]) == 0
    # (it said only "Approved ...": nothing of the resume that must follow)
    assert capsys.readouterr().out.splitlines() == [
        f"Approved {approval.id}.",
        f"Run {run_id} is not running anywhere now: the decision is used when it is resumed "
        f"(agent.resume({run_id!r})).",
    ]
    assert cli(["--store", store_location, "reject", run_id, approval.id]) == 1  # second: refused
    # ``show`` says what the resume does with it (it said only "No pending approvals or
    # questions.", the call's line without its decision)
    capsys.readouterr()
    assert cli(["--store", store_location, "show", run_id]) == 0
    shown = capsys.readouterr().out
    assert (
        f'Approval {approval.id} transfer {{"account": "a1", "amount": 5}} was approved '
        "(from the cli): the call runs when the run resumes."
    ) in shown
    response = await asyncio.wait_for(store_agents.agent("approval").resume(run_id).send(), 10)
    assert effects() == ["started a1 5", "done a1 5"]  # the approved call ran, once
    assert "sent" in response.output
    # Once its process is gone, the run that took the decision and ended is not said to wait
    # for a resume (it was, after an edit the run itself recorded just before it ended).
    store._q(
        "UPDATE runs SET owner_host = 'gone', owner_pid = 1, heartbeat_at = 0 WHERE run_id = ?",
        (run_id,),
    )
    assert store.decision_waits(run_id) is None


async def test_the_resumed_runs_handle_refuses_a_decision_made_before_it_as_already_made(
    env, store_location
):
    """The run's handle (``RunHandle.approve``, ``run.interactions``) called an approval decided
    while no process ran it "Unknown" once resumed, where the store and the command line say it
    is already approved."""
    store = RunStore(store_location)
    [approval] = killed_at_the_approval(env, store)
    run_id = only_run(store).run_id
    store.approve(run_id, approval.id)
    run = store_agents.agent("approval").resume(run_id).start()
    await asyncio.wait_for(run.wait(), 10)
    with pytest.raises(DecisionRefusedError, match="already approved; a second decision"):
        run.interactions.decide(approval.id, approved=False, via="handle")
    with pytest.raises(DecisionRefusedError, match="Unknown approval"):
        run.interactions.decide("approval_not_of_this_run", approved=False, via="handle")
    with pytest.raises(DecisionRefusedError, match="is an approval, not a question"):
        run.interactions.answer(approval.id, ["yes"], via="handle")
    assert effects() == ["started a1 5", "done a1 5"]


async def test_a_call_killed_midway_is_reported_as_interrupted_not_run_again(
    env, store_location, capsys
):
    killed_while_the_tool_runs(env)
    store = RunStore(store_location)
    run_id = only_run(store).run_id
    # ``show`` says the call had started (it said only "No pending approvals or questions.")
    capsys.readouterr()
    assert cli(["--store", str(store_location), "show", run_id]) == 0
    shown = capsys.readouterr().out
    assert "(transfer " in shown and "had started when the run's process ended" in shown
    model_agent = store_agents.agent("plain")
    response = await asyncio.wait_for(model_agent.resume(run_id).send(), 10)
    assert effects() == ["started a1 5"]  # never executed twice
    assert "ToolCallInterrupted" in response.output
    tool_message = [m for m in response.messages if m.role == "tool"]
    assert len(tool_message) == 1 and tool_message[0].tool_results[0].is_error


async def test_an_idempotent_tool_interrupted_midway_runs_again(env, store_location):
    killed_while_the_tool_runs(env)
    store = RunStore(store_location)
    run_id = only_run(store).run_id
    agent = store_agents.agent("plain", idempotent=True)
    response = await asyncio.wait_for(agent.resume(run_id).send(), 10)
    assert effects() == ["started a1 5", "started a1 5", "done a1 5"]
    assert "sent" in response.output


async def resumed_after_a_kill_in_the_next_model_call(env, store, kind, idempotent):
    """A child runs ``kind``'s agent through a tool round and is killed (SIGKILL) while the
    model call after it waits (well within the second the store's next write may take); the
    run is resumed here: its response and id. The transfer ran once, the model is asked again
    once."""
    child = start_child(env, kind, ANVIA_TEST_BLOCK_MODEL="1")
    wait_until(lambda: "model asked again" in effects(), child, "the next model call")
    kill(child)
    assert effects() == ["started a1 5", "done a1 5", "model asked again"]
    run_id = only_run(store).run_id
    agent = store_agents.agent(kind, idempotent=idempotent)
    response = await asyncio.wait_for(agent.resume(run_id, store).send(), 10)
    assert effects() == ["started a1 5", "done a1 5", "model asked again", "model asked again"]
    return response, run_id


@pytest.mark.parametrize("idempotent", [False, True], ids=["plain", "idempotent"])
async def test_a_tool_round_that_ended_before_the_kill_is_kept_on_resume(
    env, store_location, idempotent
):
    """The round's results were stored as it ended: the resumed run neither runs the call
    again nor says it was cut off, sends its result to the model once, and its transcript
    shows the round once."""
    store = RunStore(store_location)
    response, run_id = await resumed_after_a_kill_in_the_next_model_call(
        env, store, "slow_answer", idempotent
    )
    [tool_message] = [m for m in response.messages if m.role == "tool"]
    [result] = tool_message.tool_results
    assert not result.is_error and '"sent"' in result.content
    assert response.output == f"Result: {result.content}"
    logged = [
        (e.type, e.turn) for e in store.events(run_id) if e.type in ("tool_call", "tool_result")
    ]
    assert logged == [("tool_call", 1), ("tool_result", 1)]


@pytest.mark.parametrize("idempotent", [False, True], ids=["plain", "idempotent"])
async def test_a_typed_result_s_tool_round_that_ended_before_the_kill_is_kept_on_resume(
    env, store_location, idempotent
):
    """The same for a round of a typed result the model got wrong, beside a tool: its end was
    stored only within the second, so the resumed run said the finished transfer was cut off
    (or made it again)."""
    response, _ = await resumed_after_a_kill_in_the_next_model_call(
        env, RunStore(store_location), "typed_slow_answer", idempotent
    )
    assert response.data.n == 3
    [tool_message, _] = [m for m in response.messages if m.role == "tool"]
    transfer, refused = tool_message.tool_results
    assert not transfer.is_error and '"sent"' in transfer.content
    assert refused.is_error


async def test_a_model_call_cut_off_mid_stream_is_made_again(env, store_location):
    child = start_child(env, "stream", prompt="talk")
    store = RunStore(store_location)

    def streamed():
        return any(e.type == "text_delta" for r in store.runs() for e in store.events(r.run_id))

    wait_until(streamed, child, "the first streamed text")
    kill(child)
    run_id = only_run(store).run_id
    os.environ["ANVIA_TEST_FAST"] = "1"
    try:
        response = await asyncio.wait_for(store_agents.agent("stream").resume(run_id).send(), 10)
    finally:
        del os.environ["ANVIA_TEST_FAST"]
    assert response.output == "complete answer"
    assert [m.role for m in response.messages] == ["user", "assistant"]
    # Made again as the same turn: a stop mid-stream cost the run a turn (a tight
    # ``max_turns`` then failed the resumed run with MaxTurnsError, and hooks saw turn 2).
    assert [e.turn for e in store.events(run_id) if e.type == "turn_start"] == [1, 1]
    assert store.get(run_id).turn == 1


async def test_a_pending_question_survives_and_is_answered_from_the_command_line(
    env, store_location
):
    child = start_child(env, "approval", prompt="ask me first")
    store = RunStore(store_location)
    [question] = wait_until(lambda: store.pending(), child, "the question")
    kill(child)
    run_id = only_run(store).run_id
    run = store_agents.agent("approval").resume(run_id).start()
    await settle(run, store)
    code = cli(
        [
            "--store",
            store_location,
            "answer",
            run_id,
            question.id,
            "--json",
            '[{"questionId": "account", "answer": "savings", "choice": "savings"}]',
        ]
    )
    assert code == 0
    [approval] = await settle(run, store, "ApprovalRecord")
    assert approval.args == {"account": "savings", "amount": 7}
    store.approve(run_id, approval.id)
    await asyncio.wait_for(run.wait(), 10)
    assert effects() == ["started savings 7", "done savings 7"]


async def test_resuming_a_run_a_live_process_owns_is_refused(env, store_location):
    child = start_child(env, "approval")
    store = RunStore(store_location)
    wait_until(lambda: store.pending(), child, "the approval")
    try:
        run_id = only_run(store).run_id
        assert store.runs()[0].status == "waiting"
        with pytest.raises(RunOwnedError, match="still running in process"):
            store_agents.agent("approval").resume(run_id)
    finally:
        kill(child)


def test_two_resumers_one_wins(env, store_location):
    store = RunStore(store_location)
    killed_at_the_approval(env, store)
    run_id = only_run(store).run_id
    code = (
        "import sys, store_agents\n"
        "from anvia_notebook import RunOwnedError\n"
        "try:\n"
        f"    request = store_agents.agent('approval').resume({run_id!r})  # held: still claimed\n"
        "except RunOwnedError as e:\n"
        "    print('refused', e); sys.exit(3)\n"
        "print('claimed', flush=True)\n"
        "import time; time.sleep(30)\n"
    )
    first = subprocess.Popen(
        [sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert first.stdout.readline().strip() == "claimed"
        second = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
        )
        assert second.returncode == 3, second.stdout + second.stderr
        assert "still running" in second.stdout
        with pytest.raises(RunOwnedError):
            store_agents.agent("approval").resume(run_id)
    finally:
        first.kill()
        first.wait(10)
        first.stdout.close()


def test_a_finished_run_cannot_be_resumed(env, store_location):
    response = store_agents.agent("plain").prompt("send 5 to a1").send_sync()
    with pytest.raises(RunStoreError, match="already ended"):
        store_agents.agent("plain").resume(response.run_id)


def test_the_command_line_lists_and_shows(env, store_location, capsys):
    store = RunStore(store_location)
    [approval] = killed_at_the_approval(env, store)
    run_id = only_run(store).run_id
    assert cli(["--store", store_location, "runs"]) == 0
    listing = capsys.readouterr().out
    assert run_id in listing and "interrupted" in listing
    assert cli(["--store", store_location, "show", run_id]) == 0
    shown = capsys.readouterr().out
    assert approval.id in shown and "transfer" in shown
    assert cli(["--store", store_location, "show", "run_missing"]) == 1
    assert "No stored run" in capsys.readouterr().err
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "anvia_notebook",
            "--store",
            store_location,
            "approve",
            run_id,
            approval.id,
            "--args",
            "{oops",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert result.returncode == 1 and "not valid JSON" in result.stderr
    assert store.pending(run_id)[0].status == "pending"


@pytest.mark.parametrize(
    "command",
    [
        ["runs"],
        ["show", "RUN"],
        ["approve", "RUN", "approval_missing"],
        ["reject", "RUN", "approval_missing"],
        ["answer", "RUN", "question_missing", "--json", "[]"],
    ],
)
def test_the_store_can_be_named_after_the_command(env, store_location, capsys, command):
    run_id = store_agents.agent("plain").prompt("send 5 to a1").send_sync().run_id
    argv = [run_id if word == "RUN" else word for word in command]
    # After the command, and also overriding one given before it.
    for args in (
        [*argv, "--store", store_location],
        ["--store", "elsewhere.sqlite", *argv, "--store", store_location],
    ):
        code = cli(args)
        out, err = capsys.readouterr()
        assert "No stored run" not in err and "no run store" not in err
        if command[0] in ("runs", "show"):
            assert code == 0 and run_id in out
        else:
            assert code == 1 and "missing" in err  # found the run, not the approval/question


def test_when_no_run_is_found_the_command_line_says_where_it_looked(tmp_path, capsys):
    missing = tmp_path / "nothing" / "runs.sqlite"
    hint = "runs in .anvia/runs.sqlite in the notebook's folder"
    assert cli(["runs", "--store", str(missing)]) == 0
    out = capsys.readouterr().out
    assert str(missing) in out and hint in out and "--store notebooks/.anvia/runs.sqlite" in out
    assert cli(["show", "run_x", "--store", str(missing)]) == 1
    err = capsys.readouterr().err
    assert "run_x" in err and str(missing) in err and hint in err
    assert not missing.parent.exists()  # looking created no empty store
    empty = tmp_path / "empty.sqlite"
    RunStore(empty)
    assert cli(["runs", "--store", str(empty)]) == 0
    out = capsys.readouterr().out
    assert str(empty) in out and hint in out
    assert cli(["--store", str(empty), "show", "run_x"]) == 1
    err = capsys.readouterr().err
    assert str(empty) in err and hint in err
    # Deciding in a run that is not there says so (it said "Unknown approval ... in run").
    assert cli(["--store", str(empty), "approve", "run_x", "approval_y"]) == 1
    err = capsys.readouterr().err
    assert f"No stored run 'run_x' in {empty}" in err and hint in err


async def test_show_prints_a_pending_question_readably_once(env, store_location, capsys):
    store = RunStore(store_location)
    run = store_agents.agent("approval").prompt("ask me first").start()
    try:
        [question] = await settle(run, store)
        assert cli(["show", run.run_id, "--store", store_location]) == 0
    finally:
        run.cancel()
        with pytest.raises(PromptCancelledError):
            await asyncio.wait_for(run.wait(), 10)
    shown = capsys.readouterr().out
    assert '"questions"' not in shown and '"choices"' not in shown
    assert shown.count("Which account?") == 1
    assert f"ask_question: pending question {question.id}" in shown
    assert "[account] Which account?  choices: 'savings' (Savings)" in shown


def _state_of(pid: int) -> str:
    """The process state letter from ``/proc/PID/stat`` ("" when there is no such process)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return ""


def test_an_owner_killed_but_not_yet_reaped_counts_as_gone(env, store_location):
    """A killed process its parent has not waited for yet (a zombie) runs nothing: before, its
    runs showed ``waiting`` and resuming them raised ``RunOwnedError``."""
    store = RunStore(store_location)
    child = start_child(env, "approval")
    try:
        [pending] = wait_until(lambda: store.pending(), child, "the approval")
        os.kill(child.pid, 9)  # killed; not waited for (``child.poll()`` would reap it)
        deadline = time.monotonic() + 30
        while _state_of(child.pid) != "Z":
            assert time.monotonic() < deadline, _state_of(child.pid)
            time.sleep(0.02)
        assert store.status(pending.run_id) == "interrupted"
        request = store_agents.agent("approval").resume(pending.run_id)
        store.approve(pending.run_id, pending.id)
        assert request.send_sync().output.startswith("Result:")
        assert effects() == ["started a1 5", "done a1 5"]
    finally:
        kill(child)


def killed_with_a_time_limit(env: dict[str, str], store: RunStore) -> Any:
    """The approval of a run whose approvals have a time limit, its process killed."""
    child = start_child(env, "timed")
    [pending] = wait_until(lambda: store.pending(), child, "the approval")
    kill(child)
    assert pending.expires_at is not None
    return pending


def once_the_limit_passed(monkeypatch: pytest.MonkeyPatch, pending: Any) -> None:
    """The store's clock set a second past ``pending``'s time limit."""
    from datetime import timedelta

    from anvia_notebook.store import _store

    later = pending.expires_at + timedelta(seconds=1)
    monkeypatch.setattr(_store, "utc_now", lambda: later)


def test_a_decision_after_the_time_limit_while_no_process_runs_the_run_is_refused(
    env, store_location, monkeypatch, capsys
):
    """Before, a decision written after ``expires_at`` (the owner killed, so no timer fired)
    was recorded, and the tool ran on resume: the time limit held only while the owner lived."""
    from anvia_notebook import DecisionRefusedError

    store = RunStore(store_location)
    pending = killed_with_a_time_limit(env, store)
    once_the_limit_passed(monkeypatch, pending)
    with pytest.raises(DecisionRefusedError) as refused:
        store.approve(pending.run_id, pending.id)
    assert str(refused.value).startswith(
        f"Too late: the time limit of approval {pending.id} passed at "
    )
    assert f"when the run resumes (agent.resume('{pending.run_id}'))" in str(refused.value)
    assert store.pending(pending.run_id) == [pending] and effects() == []
    # ``show`` says so too, instead of the command to decide it (which would be refused)
    import anvia_notebook.__main__ as cli

    capsys.readouterr()
    assert cli.main(["--store", str(store_location), "show", pending.run_id]) == 0
    shown = capsys.readouterr().out
    assert f"  {refused.value}" in shown
    assert f"approve {pending.run_id} {pending.id}" not in shown


async def test_a_resume_without_a_time_limit_clears_the_one_that_passed(
    env, store_location, monkeypatch
):
    """The approval reopened by a resume with no time limit kept the earlier run's
    ``expires_at``: once that had passed, every decision sent through the store was refused
    as too late, also after the resumed process died in its turn."""
    from helpers import pending_of

    store = RunStore(store_location)
    pending = killed_with_a_time_limit(env, store)
    once_the_limit_passed(monkeypatch, pending)
    run = store_agents.agent("approval").resume(pending.run_id).start()
    await pending_of(run)
    [reopened] = store.pending(pending.run_id)
    assert reopened.id == pending.id and reopened.expires_at is None
    store.approve(pending.run_id, pending.id)
    await asyncio.wait_for(run.wait(), 10)
    assert effects() == ["started a1 5", "done a1 5"]


def test_an_edit_sent_before_the_time_limit_is_said_to_decide_the_approval_on_resume(
    env, store_location, monkeypatch, capsys
):
    """Edited arguments sent while no process ran the run, before the approval's time limit,
    decide it when the run resumes; after the limit, ``show`` hid them and a late reject was
    told the approval would be asked again, which the resumed run did not do."""
    import anvia_notebook.__main__ as cli
    from anvia_notebook import DecisionRefusedError

    store = RunStore(store_location)
    pending = killed_with_a_time_limit(env, store)
    edit = {"account": "b2", "amount": 5}
    assert store.approve(pending.run_id, pending.id, args=edit).pending  # queued for the run
    once_the_limit_passed(monkeypatch, pending)
    with pytest.raises(DecisionRefusedError) as refused:
        store.reject(pending.run_id, pending.id)
    assert str(refused.value).startswith(
        f"Too late: the time limit of approval {pending.id} passed at "
    )
    assert "the edited arguments sent for it before then decide it when the run resumes" in str(
        refused.value
    )
    assert "it is asked again" not in str(refused.value).split("unless the run refuses")[0]
    capsys.readouterr()
    assert cli.main(["--store", str(store_location), "show", pending.run_id]) == 0
    shown = capsys.readouterr().out
    assert f'Pending approval {pending.id}: transfer {{"account": "a1", "amount": 5}}' in shown
    assert f"  {refused.value}" in shown
    assert 'edited arguments {"account": "b2", "amount": 5}: waits for the run to check it' in shown
    response = store_agents.agent("timed").resume(pending.run_id).send_sync()
    assert response.output.startswith("Result:")
    assert effects() == ["started b2 5", "done b2 5"]
    decided = store.get(pending.run_id).approvals[pending.id]
    assert (decided.status, decided.edited_args) == ("approved", edit)


def test_a_resume_dropped_unstarted_lets_other_processes_resume_the_run(env, store_location):
    """A resume request that never made its run (a cell that failed on an option, a request
    never sent) gives its claim back once dropped: before, other processes got
    ``RunOwnedError`` until this one ended. Another unstarted request of the run keeps it."""
    store = RunStore(store_location)
    [pending] = killed_at_the_approval(env, store)
    code = (
        "import store_agents\n"
        f"store_agents.agent('approval').resume({pending.run_id!r})\n"
        "print('resumed')"
    )

    def resume_elsewhere() -> subprocess.CompletedProcess[str]:
        child = start_python(code, child_environ())
        out, err = child.communicate(timeout=60)
        return subprocess.CompletedProcess(child.args, child.returncode, out, err)

    kept = store_agents.agent("approval").resume(pending.run_id)
    with pytest.raises(ValueError, match="tool concurrency must be a positive integer"):
        store_agents.agent("approval").resume(pending.run_id).with_tool_concurrency(0)
    gc.collect()  # (the failed cell's request is gone; ``kept`` still holds the claim)
    refused = resume_elsewhere()
    assert refused.returncode == 1 and "RunOwnedError" in refused.stderr
    del kept
    gc.collect()
    # (given back by the store's background thread, at its next look: within a second)
    deadline = time.monotonic() + 30
    while store.status(pending.run_id) != "interrupted" and time.monotonic() < deadline:
        time.sleep(0.05)
    resumed = resume_elsewhere()
    assert resumed.returncode == 0 and resumed.stdout.strip() == "resumed", resumed.stderr
    assert effects() == []  # nothing ran


async def test_a_resume_never_started_does_not_lock_the_run_in_this_kernel(env, store_location):
    """A cell that resumed a run and then failed (a bad option) left the run claimed: before,
    running the fixed cell raised ``RunOwnedError`` ("still running in this kernel") until the
    kernel restarted. Of two resumes made here, only the first started runs it."""
    store = RunStore(store_location)
    [pending] = killed_at_the_approval(env, store)
    with pytest.raises(ValueError, match="tool concurrency must be a positive integer"):
        store_agents.agent("approval").resume(pending.run_id).with_tool_concurrency(0)
    first = store_agents.agent("approval").resume(pending.run_id)  # the fixed cell
    second = store_agents.agent("approval").resume(pending.run_id)
    run = first.start()
    with pytest.raises(RunOwnedError, match="already running in this kernel"):
        second.start()
    with pytest.raises(RunOwnedError, match="still running in this kernel"):
        store_agents.agent("approval").resume(pending.run_id)
    store.approve(pending.run_id, pending.id)
    response = await asyncio.wait_for(run.wait(), 30)
    assert response.output.startswith("Result:") and effects() == ["started a1 5", "done a1 5"]

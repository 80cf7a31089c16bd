"""Safety paths that mutation testing (scripts/mutation.py) found untested, checked by what
happens: which calls run, with which arguments, what the model and the records are told.
"""

from __future__ import annotations

import asyncio
import io
import json
import re
import warnings
from pathlib import Path

import pytest
from pydantic import BaseModel

from anvia_notebook import (
    AgentBuilder,
    DecisionRefusedError,
    Hook,
    PromptCancelledError,
    RunStore,
    StoreHumanInput,
    ToolApproval,
    ask_question,
    compose_hooks,
    create_hook,
    create_question_tool,
    create_tool,
)
from anvia_notebook.errors import ToolArgumentsError
from anvia_notebook.hooks import HookAction, RunControl
from anvia_notebook.human import ConsoleHumanInput
from anvia_notebook.models import ModelError, QueueModel, StreamingQueueModel
from anvia_notebook.questions import NO_HUMAN_ANSWER

from helpers import (
    call,
    calls,
    make_add_tool,
    make_note_tool,
    pending_of,
    ran_with,
    stored_decision,
    tool_results,
)

# -- composed hooks ------------------------------------------------------------------------------


class Log(Hook):
    def __init__(self, log: list[str], name: str, fail: tuple[str, ...] = ()) -> None:
        self.log = log
        self.name = name
        self.fail = fail

    def _note(self, what: str, event: object = "") -> None:
        self.log.append(f"{self.name}:{what}" + ("" if event is not None else ":no event"))
        if what in self.fail:
            raise RuntimeError(f"{self.name} failed in {what}")

    def on_run_start(self, event):
        self._note("run_start", event)

    def on_tool_result(self, event):
        self._note("tool_result", event)

    def on_tool_error(self, event):
        self._note("tool_error", event)

    def on_completion_error(self, event):
        self._note("completion_error", event)

    def on_run_error(self, event):
        self._note("run_error", event)


def test_a_composed_hook_failing_before_the_outcome_is_known_fails_the_run():
    log: list[str] = []
    add = make_add_tool()
    model = QueueModel([call("add", {"x": 1, "y": 2}), "ok"])
    hook = compose_hooks(Log(log, "a", fail=("run_start",)), Log(log, "b"))
    agent = AgentBuilder("a", model).tool(add).hook(hook).build()
    with pytest.raises(RuntimeError):
        agent.prompt("go").send_sync()
    assert add.calls == []
    assert "b:run_start" not in log


def test_a_composed_hook_failing_after_the_tool_ran_keeps_the_result_and_asks_the_next_hook(
    caplog: pytest.LogCaptureFixture,
):
    log: list[str] = []
    add = make_add_tool()
    model = QueueModel([call("add", {"x": 1, "y": 2}), "ok"])
    hook = compose_hooks(Log(log, "a", fail=("tool_result",)), Log(log, "b"))
    response = AgentBuilder("a", model).tool(add).hook(hook).build().prompt("go").send_sync()
    assert response.output == "ok"
    assert add.calls == [(1, 2)]
    assert tool_results(model.requests[1])[0].content == "3"
    assert log.count("b:tool_result") == 1


def test_a_composed_hook_sees_tool_errors_completion_errors_and_run_errors():
    log: list[str] = []

    class Boom(BaseModel):
        pass

    def explode(args: Boom, ctx) -> str:
        raise ValueError("no")

    tool = create_tool(name="boom", description="", input=Boom, execute=explode)
    model = QueueModel([call("boom", {}), "ok"])
    hook = compose_hooks(Log(log, "a"), Log(log, "b"))
    AgentBuilder("a", model).tool(tool).hook(hook).build().prompt("go").send_sync()
    assert log.count("a:tool_error") == 1 and log.count("b:tool_error") == 1

    log.clear()
    failing = StreamingQueueModel([[ModelError("down", status_code=400)]])
    agent = AgentBuilder("a", failing).hook(compose_hooks(Log(log, "a"), Log(log, "b"))).build()
    with pytest.raises(ModelError):
        agent.prompt("go").send_sync()
    assert [e for e in log if not e.endswith("run_start")] == [
        "a:completion_error",
        "b:completion_error",
        "a:run_error",
        "b:run_error",
    ]


def test_a_composed_hook_asks_the_next_hook_after_a_run_decision():
    add = make_add_tool()
    model = QueueModel([call("add", {"x": 1, "y": 2}), "ok"])
    first = create_hook(on_tool_call=lambda event: event.tool.run())
    second = create_hook(on_tool_call=lambda event: event.tool.skip("not today"))
    agent = AgentBuilder("a", model).tool(add).hook(compose_hooks(first, second)).build()
    agent.prompt("go").send_sync()
    assert add.calls == []
    assert tool_results(model.requests[1])[0].content == "not today"


def test_a_composed_hook_s_repr_shows_each_of_its_hooks():
    first, second = Log([], "a"), Log([], "b")
    shown = repr(compose_hooks(first, second))
    assert repr(first) in shown and repr(second) in shown


def test_continue_is_a_continue_action():
    assert RunControl().continue_() == HookAction("continue")
    log: list[str] = []
    hook = create_hook(on_run_start=lambda event: event.run.continue_())
    model = QueueModel(["ok"])
    response = AgentBuilder("a", model).hook(hook).build().prompt("go").send_sync()
    assert response.output == "ok" and log == []


def test_with_hook_warns_when_it_drops_a_hook_class_that_decides_tool_calls():
    class Guard(Hook):
        def on_tool_call(self, event):
            return event.tool.request_approval("check")

    class Audit(Hook):
        def on_tool_result(self, event):
            return None

    agent = AgentBuilder("a", QueueModel(["ok"])).hook(Guard()).build()
    with pytest.warns(UserWarning, match="Guard"):  # it names the hook it drops
        agent.prompt("go").with_hook(Audit())
    quiet = AgentBuilder("a", QueueModel(["ok"])).hook(Audit()).build()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        quiet.prompt("go").with_hook(Guard())


# -- the console -----------------------------------------------------------------------------------


def console(lines: list[str]) -> tuple[ConsoleHumanInput, io.StringIO]:
    answers = iter(lines)
    out = io.StringIO()
    return ConsoleHumanInput(input_fn=lambda prompt: next(answers), output=out), out


@pytest.mark.parametrize(("typed", "runs"), [("yes", True), ("YES", True), ("no", False)])
def test_the_console_takes_yes_and_no_in_full(typed: str, runs: bool):
    add = make_add_tool(approval=ToolApproval())
    model = QueueModel([call("add", {"x": 1, "y": 2}), "ok"])
    human, _ = console([typed, ""])
    AgentBuilder("a", model).tool(add).human_input(human).build().prompt("go").send_sync()
    assert add.calls == ([(1, 2)] if runs else [])


def test_the_console_shows_the_arguments_it_asks_about():
    add = make_add_tool(approval=ToolApproval())
    model = QueueModel([call("add", {"x": 1234, "y": 5678}), "ok"])
    human, out = console(["n", ""])
    AgentBuilder("a", model).tool(add).human_input(human).build().prompt("go").send_sync()
    assert "1234" in out.getvalue() and "5678" in out.getvalue()


SIZES = [{"label": label, "value": label[0].lower()} for label in ("Small", "Medium", "Large")]
THREE_CHOICES = {"questions": [{"id": "size", "question": "Which size?", "choices": SIZES}]}


@pytest.mark.parametrize(("label", "value"), [("Small", "s"), ("Large", "l")])
def test_the_number_shown_beside_a_choice_picks_that_choice(label: str, value: str):
    ask = create_question_tool()
    model = QueueModel([call("ask_question", THREE_CHOICES), "ok"])
    out = io.StringIO()
    typed: list[str] = []

    def read(prompt: str) -> str:
        shown = re.search(rf"(\d+)\. {label}\b", out.getvalue())
        assert shown is not None, out.getvalue()
        typed.append(shown.group(1))
        return shown.group(1)

    human = ConsoleHumanInput(input_fn=read, output=out)
    AgentBuilder("a", model).tool(ask).human_input(human).build().prompt("go").send_sync()
    assert json.loads(tool_results(model.requests[1])[0].content) == {
        "answers": [{"questionId": "size", "answer": value, "choice": value}]
    }


# -- ask_question ---------------------------------------------------------------------------------


def test_a_question_tool_made_without_a_name_is_ask_question_and_answers_without_a_human():
    ask = create_question_tool()
    assert ask.name == "ask_question"
    model = QueueModel([call("ask_question", THREE_CHOICES), "ok"])
    AgentBuilder("a", model).tool(ask).build().prompt("go").send_sync()
    result = tool_results(model.requests[1])[0]
    assert result.is_error is False
    assert json.loads(result.content) == {
        "answers": [{"questionId": "size", "answer": NO_HUMAN_ANSWER}]
    }


def test_ask_question_accepts_a_call_and_refuses_a_broken_one():
    assert [q.id for q in ask_question.parse_args(THREE_CHOICES).questions] == ["size"]
    with pytest.raises(ValueError, match="choices"):  # it names what is wrong
        ask_question.parse_args({"questions": [{"id": "a", "question": "?", "choices": []}]})


# -- a decision made just before a crash ------------------------------------------------------------


class Args(BaseModel):
    n: int


class DiesAfterADecision(RunStore):
    """A store whose process dies right after it wrote a decision: nothing more is written,
    and the run is dropped (``on_death``)."""

    dead = False
    on_death = staticmethod(lambda: None)

    #: "claim": right after a decision is written; a status ("answered", "approved"): after a
    #: record with that status is saved (before the tool call runs or its result is stored).
    moment = "claim"

    def die(self) -> None:
        self.dead = True
        self.on_death()

    def claim(self, record):
        result = super().claim(record)
        if self.moment in ("claim", record.status):  # the claim writes the whole record
            self.die()
        return result

    def save_run(self, *args, **kwargs):
        if not self.dead:
            super().save_run(*args, **kwargs)

    def save_interaction(self, record, *args, **kwargs):
        if not self.dead:
            super().save_interaction(record, *args, **kwargs)
            if record.status == self.moment:
                self.die()

    def save_events(self, *args, **kwargs):
        if not self.dead:
            super().save_events(*args, **kwargs)


#: Whether the first process has "died": a dead process runs no more tool code.
PROCESS = {"dead": False}


async def crash_after_the_decision(
    path: Path, request, decide=None, moment="claim", stop=False
) -> str:
    """Run ``request`` until its first decision is stored, then let its process "die"."""
    store = DiesAfterADecision(path)
    store.moment = moment
    run = request.store(store).create_run()

    def die() -> None:
        PROCESS["dead"] = True
        run.cancel("the process died")

    store.on_death = die
    run.start()
    if decide is not None:
        for _ in range(200):
            if run.interactions.pending:
                break
            await asyncio.sleep(0.01)
        [pending] = run.interactions.pending
        decide(run.interactions, pending.id)
        if stop:
            run.cancel()
    try:
        with pytest.raises(PromptCancelledError):
            await run.wait()
    finally:
        PROCESS["dead"] = False
    RunStore(path).release_run(run.run_id)  # as if its owner had gone
    return run.run_id


def store_decided(tool, model: QueueModel):
    """An agent with ``tool`` whose decisions are taken through the run store."""
    return AgentBuilder("a", model).tool(tool).human_input(StoreHumanInput()).build()


def guarded_tool(ran: list[int]):
    async def execute(args: Args, ctx) -> str:
        if PROCESS["dead"]:
            raise asyncio.CancelledError
        ran.append(args.n)
        return f"did {args.n}"

    return create_tool(
        name="guarded", description="", input=Args, execute=execute, approval=ToolApproval()
    )


async def crash_and_resume_guarded(path: Path, decide, moment: str = "claim", stop: bool = False):
    """Run the guarded tool until its approval's ``moment`` is stored, "crash", resume.

    Returns the run's id, the calls run before the crash, all the calls run and the resumed
    run's model."""
    ran: list[int] = []
    guarded = guarded_tool(ran)
    first = store_decided(guarded, QueueModel([call("guarded", {"n": 1})]))
    run_id = await crash_after_the_decision(path, first.prompt("go"), decide, moment, stop=stop)
    before = list(ran)
    model = QueueModel(["done"])
    resumed = store_decided(guarded, model).resume(run_id, RunStore(path)).create_run()
    resumed.start()
    response = await asyncio.wait_for(resumed.wait(), 10)
    assert response.output == "done"
    return run_id, before, ran, model


@pytest.mark.parametrize("moment", ["claim", "approved"])
async def test_an_approval_stored_just_before_a_crash_is_the_one_the_resumed_run_follows(
    tmp_path: Path, moment: str
):
    """Claimed in the store, or also recorded as approved: the call runs once, as edited."""
    path = tmp_path / "runs.sqlite"
    run_id, before, ran, model = await crash_and_resume_guarded(
        path,
        lambda interactions, approval_id: interactions.decide(
            approval_id, approved=True, reason="checked", args={"n": 42}, decided_by="policy"
        ),
        moment,
    )
    assert (before, ran) == ([], [42])
    assert tool_results(model.requests[0])[0].content == ran_with("guarded", {"n": 42}, "did 42")
    [record] = RunStore(path).get(run_id).approvals.values()
    assert (record.status, record.decided_by, record.decision_reason) == (
        "approved",
        "policy",
        "checked",
    )
    assert record.edited_args == {"n": 42}


async def test_a_handler_s_rejection_stored_just_before_a_crash_stands_after_resume(
    tmp_path: Path,
):
    from anvia_notebook import ApprovalDecision

    path = tmp_path / "runs.sqlite"
    ran: list[int] = []
    guarded = guarded_tool(ran)
    rejection = ApprovalDecision(approved=False, reject_message="Not this one.")
    first = QueueModel([call("guarded", {"n": 1})])
    agent = AgentBuilder("a", first).tool(guarded).approvals(lambda request: rejection).build()
    run_id = await crash_after_the_decision(path, agent.prompt("go"))

    # The resumed run has a handler that would approve: the stored rejection stands.
    model = QueueModel(["done"])
    again = AgentBuilder("a", model).tool(guarded).approvals(lambda request: True).build()
    resumed = again.resume(run_id, RunStore(path)).create_run()
    resumed.start()
    await asyncio.wait_for(resumed.wait(), 10)
    assert ran == []
    assert tool_results(model.requests[0])[0].content == "Not this one."
    [record] = RunStore(path).get(run_id).approvals.values()
    assert (record.status, record.decided_by) == ("rejected", "handler")


@pytest.mark.parametrize("moment", ["claim", "answered"])
async def test_a_question_answered_just_before_a_crash_is_not_asked_again(
    tmp_path: Path, moment: str
):
    path = tmp_path / "runs.sqlite"
    ask = create_question_tool()

    def agent(model):
        return store_decided(ask, model)

    answers = [{"questionId": "size", "answer": "Extra large", "custom": True}]
    run_id = await crash_after_the_decision(
        path,
        agent(QueueModel([call("ask_question", THREE_CHOICES)])).prompt("go"),
        lambda interactions, question_id: interactions.answer(question_id, answers),
        moment,
    )
    model = QueueModel(["done"])
    resumed = agent(model).resume(run_id, RunStore(path)).create_run()
    resumed.start()
    response = await asyncio.wait_for(resumed.wait(), 10)
    assert response.output == "done"
    result = tool_results(model.requests[0])[0]
    assert result.is_error is False
    assert json.loads(result.content) == {"answers": answers}
    [record] = RunStore(path).get(run_id).questions.values()
    assert record.status == "answered"


async def test_a_question_stopped_just_before_a_crash_stays_unanswered_after_resume(
    tmp_path: Path,
):
    path = tmp_path / "runs.sqlite"
    ask = create_question_tool()

    def agent(model):
        return store_decided(ask, model)

    run_id = await crash_after_the_decision(
        path,
        agent(QueueModel([call("ask_question", THREE_CHOICES)])).prompt("go"),
        lambda interactions, question_id: None,  # Stop: the run is cancelled, nothing answered
        "claim",
        stop=True,
    )
    model = QueueModel(["done"])
    resumed = agent(model).resume(run_id, RunStore(path)).create_run()
    resumed.start()
    await asyncio.wait_for(resumed.wait(), 10)
    result = tool_results(model.requests[0])[0]
    assert (json.loads(result.content), result.is_error) == ({"answers": []}, False)
    assert resumed.interactions.pending == []
    [traced] = resumed.trace.tool_calls  # the call ended with the question, not as a success
    assert (traced.status, traced.question.status) == ("cancelled", "cancelled")


async def test_a_question_timed_out_just_before_a_crash_stays_timed_out_after_resume(
    tmp_path: Path,
):
    path = tmp_path / "runs.sqlite"
    ask = create_question_tool()
    first = (
        AgentBuilder("a", QueueModel([call("ask_question", THREE_CHOICES)]))
        .tool(ask)
        .human_input(StoreHumanInput(timeout=0.05))
        .build()
    )
    run_id = await crash_after_the_decision(path, first.prompt("go"))  # dies at the timeout
    model = QueueModel(["done"])
    resumed = store_decided(ask, model).resume(run_id, RunStore(path)).create_run()
    resumed.start()
    await asyncio.wait_for(resumed.wait(), 10)
    result = tool_results(model.requests[0])[0]
    # Not asked again: the model is told it timed out, as the run before the crash would have.
    assert "timed out" in result.content and result.is_error
    [traced] = resumed.trace.tool_calls
    assert (traced.status, traced.question.status) == ("timed_out", "timed_out")
    [record] = RunStore(path).get(run_id).questions.values()
    assert record.status == "timed_out"


# -- the trace of a resumed run: decisions taken before the crash ----------------------------------


def tool_span_events(exporter, run_id: str, tool: str) -> list[tuple[str, str]]:
    """(event name, status) of the resumed run's ``execute_tool {tool}`` span."""
    finished = exporter.get_finished_spans()
    [root] = [s for s in finished if s.attributes.get("anvia.run_id") == run_id]
    [span] = [
        s
        for s in finished
        if s.name == f"execute_tool {tool}" and s.context.trace_id == root.context.trace_id
    ]
    return [
        (
            e.name,
            e.attributes.get("anvia.question.status") or e.attributes.get("anvia.approval.status"),
        )
        for e in span.events
    ]


async def test_a_resumed_run_traces_a_question_answered_before_the_crash_as_answered(
    tmp_path: Path, spans
):
    path = tmp_path / "runs.sqlite"
    ask = create_question_tool()
    answers = [{"questionId": "size", "answer": "Large", "custom": True}]
    run_id = await crash_after_the_decision(
        path,
        store_decided(ask, QueueModel([call("ask_question", THREE_CHOICES)])).prompt("go"),
        lambda interactions, question_id: interactions.answer(question_id, answers),
        "answered",
    )
    spans.clear()
    resumed = store_decided(ask, QueueModel(["done"])).resume(run_id, RunStore(path)).create_run()
    resumed.start()
    await asyncio.wait_for(resumed.wait(), 10)
    # Not asked again: the resumed call only reports the answer it already had.
    assert tool_span_events(spans, run_id, "ask_question") == [("tool_question_result", "answered")]
    [traced] = [c for c in resumed.trace.tool_calls if c.name == "ask_question"]
    assert traced.question is not None and traced.question.status == "answered"


async def test_a_resumed_run_traces_an_approval_given_before_the_crash_as_decided(
    tmp_path: Path, spans
):
    path = tmp_path / "runs.sqlite"
    ran: list[int] = []
    guarded = guarded_tool(ran)
    first = store_decided(guarded, QueueModel([call("guarded", {"n": 1})]))
    run_id = await crash_after_the_decision(
        path,
        first.prompt("go"),
        lambda interactions, approval_id: interactions.decide(approval_id, approved=True),
        "approved",
    )
    spans.clear()
    resumed = store_decided(guarded, QueueModel(["done"])).resume(run_id, RunStore(path))
    run = resumed.create_run()
    run.start()
    await asyncio.wait_for(run.wait(), 10)
    assert ran == [1]
    assert tool_span_events(spans, run_id, "guarded") == [("tool_approval_result", "approved")]


# -- a store that fails while an approval waits ------------------------------------------------------


class FailsOnInteractions(RunStore):
    """Every write of an interaction's row fails: the one of the run's write that opens it (the
    state that asked, in the same transaction, is not written either) or one on its own."""

    def _q(self, sql, params=()):
        if sql.lstrip().startswith("INSERT INTO interactions"):
            raise OSError("disk I/O error")
        return super()._q(sql, params)

    def open_interaction(self, record, **options):
        raise OSError("disk I/O error")


def test_a_store_failing_at_an_approval_warns_once_and_the_run_goes_on_in_memory(tmp_path: Path):
    path = tmp_path / "runs.sqlite"
    add = make_add_tool(approval=ToolApproval())
    model = QueueModel([call("add", {"x": 1, "y": 2}), call("add", {"x": 3, "y": 4}, "c2"), "ok"])
    agent = AgentBuilder("a", model).tool(add).approvals(lambda request: True).build()
    with pytest.warns(RuntimeWarning) as caught:
        response = agent.prompt("go").store(FailsOnInteractions(path)).send_sync()
    assert response.output == "ok"
    assert add.calls == [(1, 2), (3, 4)]
    store_warnings = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(store_warnings) == 1
    assert str(path) in store_warnings[0] and "disk I/O error" in store_warnings[0]


# -- decisions through the run store ---------------------------------------------------------------


async def pending_in(store: RunStore, run_id: str, count: int = 1) -> list:
    """The run's pending approvals and questions, once there are ``count`` of them."""
    for _ in range(500):
        pending = store.pending(run_id)
        if len(pending) >= count:
            return pending
        await asyncio.sleep(0.01)
    raise AssertionError("nothing became pending")


def started(tool, model: QueueModel):
    """A started run of an agent with ``tool``, decided through the store's human input."""
    run = store_decided(tool, model).prompt("go").create_run()
    run.start()
    return run


def store_agent(*responses):
    add = make_add_tool(approval=ToolApproval())
    model = QueueModel(list(responses))
    agent = AgentBuilder("a", model).tool(add).tool(create_question_tool()).build()
    return agent.prompt("go").human_input(StoreHumanInput()), add, model


async def approval_and_question(store_path: Path):
    """A run waiting for an approval of ``add`` and a question at once, and another store."""
    request, add, _ = store_agent(
        calls(("add", {"x": 1, "y": 2}, "c1"), ("ask_question", THREE_CHOICES, "c2")), "ok"
    )
    run = request.with_tool_concurrency(2).start()
    other = RunStore(store_path)
    pending = await pending_in(other, run.run_id, 2)
    approval = next(p for p in pending if type(p).__name__ == "ApprovalRecord")
    question = next(p for p in pending if type(p).__name__ == "QuestionRecord")
    return run, other, approval, question, add


async def test_a_store_approval_brings_its_arguments_and_who_decided_to_the_run(store_path: Path):
    request, add, _ = store_agent(call("add", {"x": 1, "y": 2}), "ok")
    run = request.start()
    other = RunStore(store_path)
    [approval] = await pending_in(other, run.run_id)
    other.approve(run.run_id, approval.id, reason="fine", args={"x": 5, "y": 6}, via="cli")
    await asyncio.wait_for(run.wait(), 5)
    assert add.calls == [(5, 6)]
    record = other.get(run.run_id).approvals[approval.id]
    assert (record.status, record.decided_by, record.decided_via, record.decision_reason) == (
        "approved",
        "human",
        "cli",
        "fine",
    )


async def test_a_store_rejection_is_a_person_s_and_the_tool_does_not_run(store_path: Path):
    request, add, model = store_agent(call("add", {"x": 1, "y": 2}), "ok")
    run = request.start()
    other = RunStore(store_path)
    [approval] = await pending_in(other, run.run_id)
    other.reject(run.run_id, approval.id, reason="too much")
    await asyncio.wait_for(run.wait(), 5)
    assert add.calls == []
    record = other.get(run.run_id).approvals[approval.id]
    assert (record.status, record.decided_by) == ("rejected", "human")
    assert tool_results(model.requests[1])[0].content == "too much"


async def test_store_decisions_for_another_run_or_another_kind_are_refused(store_path: Path):
    run, other, approval, question, add = await approval_and_question(store_path)
    answers = [{"questionId": "size", "answer": "s", "choice": "s"}]

    attempts = [
        lambda: other.approve("run_elsewhere", approval.id),
        lambda: other.reject("run_elsewhere", approval.id),
        lambda: other.answer("run_elsewhere", question.id, answers),
        lambda: other.approve(run.run_id, question.id),
        lambda: other.reject(run.run_id, question.id),
        lambda: other.answer(run.run_id, approval.id, answers),
        lambda: other.answer(run.run_id, "question_unknown", answers),
        lambda: other.approve(run.run_id, "approval_unknown"),
    ]
    for attempt in attempts:
        with pytest.raises(DecisionRefusedError):
            attempt()
    assert {p.id for p in other.pending(run.run_id)} == {approval.id, question.id}

    other.approve(run.run_id, approval.id)
    other.answer(run.run_id, question.id, answers)
    await asyncio.wait_for(run.wait(), 5)
    assert add.calls == [(1, 2)]


# -- the scripted operator ------------------------------------------------------------------------


def two_tools():
    approval = ToolApproval()
    return make_add_tool(approval=approval), make_note_tool(approval=approval)


@pytest.mark.parametrize(
    ("rule", "add_runs", "note_runs"),
    [
        ({"add": False, "*": True}, False, True),
        ({"add": True, "*": False}, True, False),
        ({"note": False}, True, False),  # no "*": the others are approved
        ({}, True, True),
    ],
)
def test_the_scripted_operator_approves_by_tool_name(rule, add_runs: bool, note_runs: bool):
    from anvia_notebook.notebook import WidgetHumanInput

    add, note = two_tools()
    model = QueueModel(
        [calls(("add", {"x": 1, "y": 2}, "c1"), ("note", {"text": "hi"}, "c2")), "ok"]
    )
    human = WidgetHumanInput(auto=json.dumps({"approve": rule}))
    AgentBuilder("a", model).tools([add, note]).human_input(human).build().prompt("go").send_sync()
    assert (add.calls == [(1, 2)]) is add_runs
    assert (note.calls == ["hi"]) is note_runs


def test_the_scripted_operator_marks_choices_as_choices_and_other_text_as_custom():
    from anvia_notebook.notebook import WidgetHumanInput

    questions = {
        "questions": [
            {"id": "size", "question": "Size?", "choices": ["s", "m"]},
            {"id": "colour", "question": "Colour?", "choices": ["red"]},
            {"id": "note", "question": "Note?", "choices": ["none"]},
        ]
    }
    rule = {"answers": {"size": "m", "colour": "teal"}}
    model = QueueModel([call("ask_question", questions), "ok"])
    human = WidgetHumanInput(auto=json.dumps(rule))
    ask = create_question_tool()
    AgentBuilder("a", model).tool(ask).human_input(human).build().prompt("go").send_sync()
    assert json.loads(tool_results(model.requests[1])[0].content) == {
        "answers": [
            {"questionId": "size", "answer": "m", "choice": "m"},
            {"questionId": "colour", "answer": "teal", "custom": True},
            {"questionId": "note", "answer": "none", "choice": "none"},
        ]
    }


def test_a_widget_input_says_whether_it_decides_by_itself():
    from anvia_notebook.notebook import WidgetHumanInput

    assert "auto=True" in repr(WidgetHumanInput(auto="approve"))
    assert "auto=False" in repr(WidgetHumanInput(auto=False))


# -- answers from a callback ----------------------------------------------------------------------


def test_a_callback_may_answer_with_snake_case_question_ids():
    from anvia_notebook import CallbackHumanInput

    model = QueueModel([call("ask_question", THREE_CHOICES), "ok"])
    human = CallbackHumanInput(
        ask=lambda request: [{"question_id": "size", "answer": "l", "choice": "l"}]
    )
    ask = create_question_tool()
    AgentBuilder("a", model).tool(ask).human_input(human).build().prompt("go").send_sync()
    result = tool_results(model.requests[1])[0]
    assert result.is_error is False
    assert json.loads(result.content) == {
        "answers": [{"questionId": "size", "answer": "l", "choice": "l"}]
    }


# -- questions a human input cannot or does not answer ---------------------------------------------


async def question_outcome(human) -> tuple[list[str], object]:
    model = QueueModel([call("ask_question", THREE_CHOICES), "ok"])
    agent = AgentBuilder("a", model).tool(create_question_tool()).human_input(human).build()
    events = [event async for event in agent.prompt("go").stream()]
    statuses = [e.question.status for e in events if e.type == "tool_question_result"]
    return statuses, tool_results(model.requests[1])[0]


async def test_a_question_a_human_input_cannot_ask_is_cancelled_and_answered_by_the_tool():
    from anvia_notebook import CallbackHumanInput

    statuses, result = await question_outcome(CallbackHumanInput(approve=lambda r: True))
    assert statuses == ["cancelled"]
    assert json.loads(result.content) == {
        "answers": [{"questionId": "size", "answer": NO_HUMAN_ANSWER}]
    }


async def test_invalid_answers_cancel_the_question_and_the_model_is_told():
    from anvia_notebook import CallbackHumanInput

    human = CallbackHumanInput(ask=lambda r: [{"questionId": "size", "answer": "l", "choice": "x"}])
    statuses, result = await question_outcome(human)
    assert statuses == ["cancelled"]
    assert result.is_error is True


async def test_a_store_decision_returns_the_record_it_decided(store_path: Path):
    run, other, approval, question, _ = await approval_and_question(store_path)
    assert other.approve(run.run_id, approval.id).id == approval.id
    answers = [{"questionId": "size", "answer": "s", "choice": "s"}]
    assert other.answer(run.run_id, question.id, answers).id == question.id
    await asyncio.wait_for(run.wait(), 5)


def test_an_approval_handler_may_answer_with_a_decision_as_a_dict():
    add = make_add_tool(approval=ToolApproval())
    model = QueueModel([call("add", {"x": 1, "y": 2}), call("add", {"x": 3, "y": 4}, "c2"), "ok"])
    answers = iter([{"approved": True}, {"approved": False, "reason": "no"}])
    agent = AgentBuilder("a", model).tool(add).approvals(lambda request: next(answers)).build()
    agent.prompt("go").send_sync()
    assert add.calls == [(1, 2)]
    assert tool_results(model.requests[2])[0].content == "no"


# -- the scripted operator's rules ----------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "  ", "0", "off", "false", "FALSE", "no", "No", "none"])
def test_these_rules_turn_the_scripted_operator_off(text: str):
    from anvia_notebook.notebook._human_input import AutoOperator

    assert AutoOperator.parse(text) is None


@pytest.mark.parametrize(
    ("text", "approves"),
    [
        ("approve", True),
        ("first-choice", True),
        ("1", True),
        ("true", True),
        ("TRUE", True),
        ("yes", True),
        ("YES", True),
        ("reject", False),
        ("Reject", False),
    ],
)
def test_these_rules_approve_or_reject_every_call(text: str, approves: bool):
    from anvia_notebook.notebook._human_input import AutoOperator

    rule = AutoOperator.parse(text)
    assert rule is not None
    assert rule.approves("any_tool") is approves


def test_a_json_rule_s_reason_and_default_answer_are_used():
    from anvia_notebook.notebook import WidgetHumanInput

    rule = {"reason": "Scripted CI run", "default_answer": "n/a", "answers": {"size": "s"}}
    questions = {
        "questions": [
            {"id": "size", "question": "Size?", "choices": ["s", "m"]},
            {"id": "note", "question": "Note?", "choices": ["none"]},
        ]
    }
    add = make_add_tool(approval=ToolApproval())
    model = QueueModel(
        [calls(("add", {"x": 1, "y": 2}, "c1"), ("ask_question", questions, "c2")), "ok"]
    )
    human = WidgetHumanInput(auto=json.dumps(rule))
    agent = AgentBuilder("a", model).tools([add, create_question_tool()]).human_input(human)
    events = []

    async def run() -> None:
        async for event in agent.build().prompt("go").stream():
            events.append(event)

    asyncio.run(run())
    [approval] = [e.approval for e in events if e.type == "tool_approval_result"]
    assert (approval.status, approval.decided_by, approval.decision_reason) == (
        "approved",
        "policy",
        "Scripted CI run",
    )
    assert json.loads(tool_results(model.requests[1])[1].content) == {
        "answers": [
            {"questionId": "size", "answer": "s", "choice": "s"},
            {"questionId": "note", "answer": "n/a", "custom": True},
        ]
    }


def test_a_widget_input_takes_a_rule_object_and_refuses_a_timeout_of_zero():
    from anvia_notebook.notebook import WidgetHumanInput
    from anvia_notebook.notebook._human_input import AutoOperator

    add = make_add_tool(approval=ToolApproval())
    model = QueueModel([call("add", {"x": 1, "y": 2}), "ok"])
    human = WidgetHumanInput(auto=AutoOperator(approve=False))
    AgentBuilder("a", model).tool(add).human_input(human).build().prompt("go").send_sync()
    assert add.calls == []
    for bad in (0, -1):
        with pytest.raises(ValueError, match="timeout"):
            WidgetHumanInput(timeout=bad)


@pytest.mark.parametrize(
    ("approve", "says", "never"), [(True, "Approved", "Rejected"), (False, "Rejected", "Approved")]
)
def test_the_scripted_operator_s_own_reason_says_what_it_decided(approve, says, never):
    """Shown in the transcript next to the decision: it must not contradict it."""
    from anvia_notebook.notebook import WidgetHumanInput
    from anvia_notebook.notebook._human_input import AutoOperator

    add = make_add_tool(approval=ToolApproval())
    model = QueueModel([call("add", {"x": 1, "y": 2}), "ok"])
    human = WidgetHumanInput(auto=AutoOperator(approve=approve))
    request = AgentBuilder("a", model).tool(add).human_input(human).build().prompt("go")
    events = [e for e in asyncio.run(_collect(request)) if e.type == "tool_approval_result"]
    [approval] = [e.approval for e in events]
    assert approval.status == ("approved" if approve else "rejected")
    assert says in approval.decision_reason and never not in approval.decision_reason


async def _collect(request) -> list:
    return [event async for event in request.stream()]


# -- a run cancelled after its tool ran ------------------------------------------------------------


async def test_a_run_cancelled_after_a_tool_failed_reports_that_call_s_failure():
    class Boom(BaseModel):
        pass

    def explode(args: Boom, ctx) -> str:
        raise ValueError("broken")

    tool = create_tool(name="boom", description="", input=Boom, execute=explode)
    model = QueueModel([call("boom", {}, "the_call"), "never"])
    hook = create_hook(on_tool_error=lambda event: event.run.cancel("enough"))
    request = AgentBuilder("a", model).tool(tool).hook(hook).build().prompt("go")
    events = []
    with pytest.raises(PromptCancelledError):
        async for event in request.stream():
            events.append(event)
    [result] = [e for e in events if e.type == "tool_result"]
    assert (result.tool_call_id, result.is_error) == ("the_call", True)


# -- waiting for a decision through the store --------------------------------------------------------


async def test_a_store_input_s_timeout_applies_and_must_be_positive(store_path: Path):
    with pytest.raises(ValueError, match="timeout"):
        StoreHumanInput(timeout=0)
    add = make_add_tool(approval=ToolApproval())
    model = QueueModel([call("add", {"x": 1, "y": 2}), "ok"])
    human = StoreHumanInput(timeout=0.2)
    agent = AgentBuilder("a", model).tool(add).human_input(human).build()
    events = [e async for e in agent.prompt("go").stream()]
    assert add.calls == []
    [approval] = [e.approval for e in events if e.type == "tool_approval_result"]
    assert approval.status == "timed_out"


# -- deciding a run's interactions ------------------------------------------------------------------


async def test_an_approval_id_and_a_question_id_cannot_be_swapped(store_path: Path):
    request, add, _ = store_agent(
        calls(("add", {"x": 1, "y": 2}, "c1"), ("ask_question", THREE_CHOICES, "c2")), "ok"
    )
    run = request.with_tool_concurrency(2).start()
    await pending_of(run, 2)
    approval = next(p for p in run.interactions.pending if type(p).__name__ == "ApprovalRecord")
    question = next(p for p in run.interactions.pending if type(p).__name__ == "QuestionRecord")
    answers = [{"questionId": "size", "answer": "s", "choice": "s"}]
    with pytest.raises(DecisionRefusedError):
        run.interactions.decide(question.id, approved=True)
    with pytest.raises(DecisionRefusedError):
        run.interactions.answer(approval.id, answers)
    with pytest.raises(DecisionRefusedError):
        run.interactions.decide("approval_unknown", approved=True)
    assert {p.id for p in run.interactions.pending} == {approval.id, question.id}
    run.interactions.decide(approval.id, approved=True)
    run.interactions.answer(question.id, answers)
    await asyncio.wait_for(run.wait(), 5)
    assert add.calls == [(1, 2)]


async def test_who_answered_a_question_is_recorded(store_path: Path):
    store = RunStore(store_path)
    request, _, _ = store_agent(call("ask_question", THREE_CHOICES), "ok")
    run = request.store(store).start()
    [question] = await pending_of(run)
    answers = [{"questionId": "size", "answer": "s", "choice": "s"}]
    run.interactions.answer(question.id, answers, decided_by="policy", via="handle")
    await asyncio.wait_for(run.wait(), 5)
    status, decision = stored_decision(store, question.id)
    assert status == "answered"
    assert decision is not None and decision["decided_by"] == "policy"


async def test_a_rejection_without_a_reason_tells_the_model_the_tool_s_reject_message():
    add = make_add_tool(approval=ToolApproval(reject_message="Sums need a second look."))
    model = QueueModel([call("add", {"x": 1, "y": 2}), "ok"])
    run = started(add, model)
    await pending_of(run)
    [approval] = run.interactions.pending
    run.interactions.decide(approval.id, approved=False)
    await asyncio.wait_for(run.wait(), 5)
    assert add.calls == []
    assert tool_results(model.requests[1])[0].content == "Sums need a second look."


@pytest.mark.parametrize(
    ("decision", "recorded"),
    [
        ({"approved": False, "reject_message": "Not on Sundays."}, "Not on Sundays."),
        ({"approved": False, "reason": "Too big", "reject_message": "No."}, "No."),
        ({"approved": True, "reject_message": "unused"}, None),
        ({"approved": True, "reason": "Fine"}, "Fine"),
    ],
)
async def test_the_recorded_reason_of_a_handler_s_decision(decision: dict, recorded: str | None):
    add = make_add_tool(approval=ToolApproval())
    model = QueueModel([call("add", {"x": 1, "y": 2}), "ok"])
    agent = AgentBuilder("a", model).tool(add).approvals(lambda request: decision).build()
    [approval], _, _ = await approval_events(agent.prompt("go"))
    assert approval.decision_reason == recorded


async def test_a_human_input_s_decision_is_recorded_as_a_person_s():
    from anvia_notebook import CallbackHumanInput

    add = make_add_tool(approval=ToolApproval())
    model = QueueModel([call("add", {"x": 1, "y": 2}), "ok"])
    human = CallbackHumanInput(approve=lambda request: True)
    agent = AgentBuilder("a", model).tool(add).human_input(human).build()
    [approval], _, _ = await approval_events(agent.prompt("go"))
    assert (approval.status, approval.decided_by) == ("approved", "human")


@pytest.mark.parametrize("returned", ["cancel", "continue", "something else"])
def test_a_composed_hook_s_lifecycle_action_is_followed(returned: str):
    def on_turn_start(event):
        if returned == "cancel":
            return event.run.cancel("stop here")
        if returned == "continue":
            return event.run.continue_()
        return "something else"

    model = QueueModel(["ok"])
    hook = compose_hooks(create_hook(on_turn_start=on_turn_start), Log([], "b"))
    request = AgentBuilder("a", model).hook(hook).build().prompt("go")
    if returned == "cancel":
        with pytest.raises(PromptCancelledError):
            request.send_sync()
        assert model.requests == []
    else:
        assert request.send_sync().output == "ok"


def test_the_console_s_timeout_applies_and_it_always_prompts():
    import time

    prompts: list[object] = []

    def slow(prompt):
        prompts.append(prompt)
        time.sleep(1)
        return "y"

    add = make_add_tool(approval=ToolApproval())
    model = QueueModel([call("add", {"x": 1, "y": 2}), "ok"])
    human = ConsoleHumanInput(input_fn=slow, output=io.StringIO(), timeout=0.1)
    AgentBuilder("a", model).tool(add).human_input(human).build().prompt("go").send_sync()
    assert add.calls == []
    assert prompts and all(isinstance(p, str) and p.strip() for p in prompts)


def test_the_console_prompts_for_each_answer():
    prompts: list[object] = []
    answers = iter(["n", "", "2"])

    def read(prompt):
        prompts.append(prompt)
        return next(answers)

    add = make_add_tool(approval=ToolApproval())
    model = QueueModel(
        [call("add", {"x": 1, "y": 2}), call("ask_question", THREE_CHOICES, "c2"), "ok"]
    )
    human = ConsoleHumanInput(input_fn=read, output=io.StringIO())
    agent = AgentBuilder("a", model).tools([add, create_question_tool()]).human_input(human)
    agent.build().prompt("go").send_sync()
    assert len(prompts) == 3
    assert all(isinstance(p, str) and p.strip() for p in prompts)


# -- answers in any documented form ---------------------------------------------------------------


async def test_answers_may_be_answer_objects_or_objects_with_those_attributes(store_path: Path):
    from types import SimpleNamespace

    from anvia_notebook import Answer

    def ask_twice():
        questions = {
            "questions": [
                {"id": "size", "question": "Size?", "choices": ["s", "m"]},
                {"id": "note", "question": "Note?", "choices": ["none"]},
            ]
        }
        request, _, model = store_agent(call("ask_question", questions), "ok")
        return request.start(), model

    given = [
        Answer(question_id="size", answer="s", choice="s"),
        SimpleNamespace(questionId="note", answer="hello", custom=True),  # no "choice" attribute
    ]
    run, model = ask_twice()
    await pending_of(run)
    run.interactions.answer(run.interactions.pending[0].id, given)
    await asyncio.wait_for(run.wait(), 5)
    expected = {
        "answers": [
            {"questionId": "size", "answer": "s", "choice": "s"},
            {"questionId": "note", "answer": "hello", "custom": True},
        ]
    }
    assert json.loads(tool_results(model.requests[1])[0].content) == expected

    run, model = ask_twice()
    other = RunStore(store_path)
    [question] = await pending_in(other, run.run_id)
    other.answer(run.run_id, question.id, given)
    await asyncio.wait_for(run.wait(), 5)
    assert json.loads(tool_results(model.requests[1])[0].content) == expected


async def test_a_custom_flag_that_is_not_a_bool_is_refused():
    """As Anvia's schema (``custom?: boolean``) refuses it; it used to be dropped unread, so a
    ``"true"`` beside a choice passed as that choice."""
    request, _, model = store_agent(call("ask_question", THREE_CHOICES), "ok")
    run = request.start()
    await pending_of(run)
    question_id = run.interactions.pending[0].id
    with pytest.raises(DecisionRefusedError, match="has custom='maybe'; custom is true or false"):
        run.interactions.answer(
            question_id, [{"questionId": "size", "answer": "huge", "custom": "maybe"}]
        )
    assert [p.id for p in run.interactions.pending] == [question_id]
    run.interactions.answer(question_id, [{"questionId": "size", "answer": "huge", "custom": True}])
    await asyncio.wait_for(run.wait(), 5)
    assert json.loads(tool_results(model.requests[1])[0].content) == {
        "answers": [{"questionId": "size", "answer": "huge", "custom": True}]
    }


# -- approvals that end without a person's decision ---------------------------------------------------


async def approval_events(request):
    """Run to the end; returns the approval results, the events and the error it ended with."""
    events: list = []
    error: BaseException | None = None
    try:
        async for event in request.stream():
            events.append(event)
    except Exception as raised:
        error = raised
    return [e.approval for e in events if e.type == "tool_approval_result"], events, error


async def test_a_stopped_approval_is_cancelled_by_the_runtime_with_the_stop_reason():
    add = make_add_tool(approval=ToolApproval())
    model = QueueModel([call("add", {"x": 1, "y": 2}), "ok"])
    run = started(add, model)
    await pending_of(run)
    run.cancel("Closing time.")
    with pytest.raises(PromptCancelledError):
        await run.wait()
    [approval] = [e.approval for e in run.events if e.type == "tool_approval_result"]
    assert (approval.status, approval.decided_by, approval.decision_reason) == (
        "cancelled",
        "stop",
        "Closing time.",
    )
    assert add.calls == []


@pytest.mark.parametrize("failure", ["cannot", "cancel", "required", "error"])
async def test_an_approval_that_fails_is_cancelled_by_the_runtime_and_the_call_never_runs(
    failure: str,
):
    from anvia_notebook import CallbackHumanInput, ToolApprovalRequiredError

    def handler(request):
        if failure == "cancel":
            raise PromptCancelledError("the operator left")
        if failure == "required":
            raise ToolApprovalRequiredError(request)
        raise ValueError("boom")

    add = make_add_tool(approval=ToolApproval())
    model = QueueModel([call("add", {"x": 1, "y": 2}), "ok"])
    builder = AgentBuilder("a", model).tool(add)
    if failure == "cannot":  # a human input with no way to approve
        builder = builder.human_input(CallbackHumanInput(ask=lambda request: []))
    else:
        builder = builder.approvals(handler)
    approvals, _, error = await approval_events(builder.build().prompt("go"))
    expected = {
        "cannot": ToolApprovalRequiredError,
        "cancel": PromptCancelledError,
        "required": ToolApprovalRequiredError,
        "error": ValueError,
    }[failure]
    assert isinstance(error, expected)
    [approval] = approvals
    assert (approval.status, approval.decided_by) == ("cancelled", "runtime")
    if failure == "error":
        assert "boom" in (approval.decision_reason or "")
    assert add.calls == []


async def test_a_timed_out_approval_records_what_the_model_is_told():
    add = make_add_tool(approval=ToolApproval())
    model = QueueModel([call("add", {"x": 1, "y": 2}), "ok"])
    human = StoreHumanInput(timeout=0.1)
    agent = AgentBuilder("a", model).tool(add).human_input(human).build()
    approvals, _, error = await approval_events(agent.prompt("go"))
    assert error is None
    [approval] = approvals
    assert approval.status == "timed_out"
    assert approval.decision_reason == tool_results(model.requests[1])[0].content
    assert add.calls == []


async def test_an_approval_stopped_just_before_a_crash_is_not_run_after_resume(tmp_path: Path):
    path = tmp_path / "runs.sqlite"
    run_id, _, ran, model = await crash_and_resume_guarded(
        path,
        lambda interactions, approval_id: None,  # Stop: nobody decided
        "claim",
        stop=True,
    )
    assert ran == []
    result = tool_results(model.requests[0])[0]
    [approval] = RunStore(path).get(run_id).approvals.values()
    assert approval.status == "cancelled"
    assert result.content == approval.decision_reason


# -- what a tool is told about its call -------------------------------------------------------------


def test_a_tool_s_context_describes_its_call():
    seen = []

    class In(BaseModel):
        x: int

    def execute(args: In, ctx) -> str:
        seen.append(ctx)
        return "ok"

    tool = create_tool(name="probe", description="", input=In, execute=execute)
    model = QueueModel([call("probe", {"x": 3}, "call_probe"), "done"])
    events = []

    async def run() -> None:
        async for event in AgentBuilder("a", model).tool(tool).build().prompt("go").stream():
            events.append(event)

    asyncio.run(run())
    [ctx] = seen
    [result] = [e for e in events if e.type == "tool_result"]
    assert (ctx.tool_name, ctx.tool_call_id) == ("probe", "call_probe")
    assert json.loads(ctx.raw_args) == {"x": 3}
    assert ctx.internal_call_id and ctx.internal_call_id == result.internal_call_id


def test_an_on_tool_error_hook_is_told_which_call_failed():
    seen = []

    class In(BaseModel):
        x: int

    def explode(args: In, ctx) -> str:
        raise ValueError("broken")

    tool = create_tool(name="boom", description="", input=In, execute=explode)
    model = QueueModel([call("boom", {"x": 1}, "call_boom"), "ok"])
    hook = create_hook(on_tool_error=seen.append)
    AgentBuilder("a", model).tool(tool).hook(hook).build().prompt("go").send_sync()
    [event] = seen
    assert (event.tool_name, event.tool_call_id) == ("boom", "call_boom")
    assert event.internal_call_id and json.loads(event.args) == {"x": 1}
    assert isinstance(event.error, ValueError)


# -- a human input whose ask() returns something that is not a list of answers -------------------


@pytest.mark.parametrize("returned", [None, 42, "Large", {"questionId": "size", "answer": "Large"}])
def test_answers_that_are_not_a_list_are_refused_and_the_run_goes_on(returned):
    from anvia_notebook import CallbackHumanInput

    model = QueueModel([call("ask_question", THREE_CHOICES), "done"])
    agent = (
        AgentBuilder("a", model)
        .tool(create_question_tool())
        .human_input(CallbackHumanInput(ask=lambda request: returned))
        .build()
    )
    response = agent.prompt("go").send_sync()
    assert response.output == "done"
    result = tool_results(model.requests[1])[0]
    assert result.is_error
    assert result.content.startswith("ToolCallError: the human input returned invalid answers")
    [traced] = response.trace.tool_calls
    assert traced.question is not None and traced.question.status == "cancelled"


# -- an approval-guarded ask_question of one's own, its questions edited on approval --------------


class _Legacy(BaseModel):
    prompt: str


def guarded_ask_question():
    """A tool of one's own named ask_question, behind an approval, whose own input is not
    questions (its calls' arguments are read as questions all the same)."""
    return create_tool(
        name="ask_question",
        description="Ask the operator.",
        input=_Legacy,
        execute=lambda args, ctx: "unused",
        approval=ToolApproval(),
    )


@pytest.mark.parametrize("through", ["handler", "run"])
async def test_questions_edited_on_approval_are_the_ones_asked(through: str):
    """Any tool named ask_question is put to the person (as in Anvia). Its arguments are
    questions, whatever the tool's own input model: an edit on approval is read as questions
    too, and checked as questions when a person edits it."""
    from anvia_notebook import ApprovalDecision, CallbackHumanInput

    own = guarded_ask_question()
    asked: list[str] = []
    edited = {"questions": [{"id": "size", "question": "Size, really?", "choices": ["s", "m"]}]}

    def ask(request):
        asked.extend(q.question for q in request.questions)
        return [{"questionId": "size", "answer": "m", "choice": "m"}]

    model = QueueModel([call("ask_question", THREE_CHOICES), "done"])
    if through == "handler":
        human = CallbackHumanInput(
            approve=lambda request: ApprovalDecision(approved=True, args=edited), ask=ask
        )
        agent = AgentBuilder("a", model).tool(own).human_input(human).build()
        response = await agent.prompt("go").send()
    else:
        human = CallbackHumanInput(approve=lambda request: asyncio.Event().wait(), ask=ask)
        run = AgentBuilder("a", model).tool(own).human_input(human).build().prompt("go").start()
        [approval] = await pending_of(run)
        with pytest.raises(DecisionRefusedError):  # not questions: refused, still pending
            run.interactions.decide(approval.id, approved=True, args={"prompt": "Size?"})
        run.interactions.decide(approval.id, approved=True, args=edited)
        response = await asyncio.wait_for(run.wait(), 5)
    assert response.output == "done"
    assert asked == ["Size, really?"]
    result = tool_results(model.requests[1])[0]
    assert (json.loads(result.content), result.is_error) == (
        {"answers": [{"questionId": "size", "answer": "m", "choice": "m"}]},
        False,
    )


def test_an_own_ask_question_falls_back_to_its_tool_and_its_argument_error_is_reported():
    """With a human input that cannot answer questions, an intercepted call runs the tool's own
    execute; arguments that do not fit its input are an argument error for the model, and the
    on_tool_error hooks are told, as for any other tool."""
    from anvia_notebook import CallbackHumanInput

    class Legacy(BaseModel):
        prompt: str

    ran: list[str] = []
    own = create_tool(
        name="ask_question",
        description="Ask the operator.",
        input=Legacy,
        execute=lambda args, ctx: ran.append(args.prompt) or "asked",
    )
    errors: list = []
    hook = create_hook(on_tool_error=errors.append)
    model = QueueModel([call("ask_question", THREE_CHOICES, "c9"), "done"])
    human = CallbackHumanInput(approve=lambda request: True)  # no ask function
    agent = AgentBuilder("a", model).tool(own).hook(hook).human_input(human).build()

    async def run() -> list:
        return [event async for event in agent.prompt("go").stream()]

    events = asyncio.run(run())
    assert events[-1].type == "final" and ran == []
    result = tool_results(model.requests[1])[0]
    assert result.is_error
    assert "prompt" in result.content  # names the missing field of the tool's own input
    [error] = errors
    [shown] = [e for e in events if e.type == "tool_result"]
    assert (error.tool_call_id, error.tool_name) == ("c9", "ask_question")
    assert error.internal_call_id == shown.internal_call_id and error.internal_call_id
    assert json.loads(error.args) == THREE_CHOICES
    assert isinstance(error.error, ToolArgumentsError)


# -- what is recorded and told when a turn's tool calls end early ---------------------------------


async def test_a_question_stopped_mid_turn_tells_the_model_it_got_no_answers():
    """Anvia's Studio resolves a question cancelled by Stop with no answers (not an error)."""
    model = QueueModel([call("ask_question", THREE_CHOICES, "q1"), "never"])
    agent = AgentBuilder("a", model).tool(create_question_tool()).human_input(StoreHumanInput())
    run = agent.build().prompt("go").start()
    await pending_of(run)
    run.cancel("Stop")
    with pytest.raises(PromptCancelledError) as raised:
        await asyncio.wait_for(run.wait(), 5)
    [part] = raised.value.messages[-1].tool_results
    assert (part.tool_call_id, json.loads(part.content), part.is_error) == (
        "q1",
        {"answers": []},
        False,
    )
    [traced] = run.trace.tool_calls  # the trace says what the model was told
    assert (traced.status, traced.result) == ("cancelled", part.content)


def test_a_run_that_fails_during_its_tool_calls_traces_them_as_errors_not_cancelled():
    add = make_add_tool(approval=ToolApproval())  # no approval handler, no human input
    model = QueueModel([call("add", {"x": 1, "y": 2}), "never"])
    request = AgentBuilder("a", model).tool(add).build().prompt("go")
    with pytest.raises(Exception, match="approval"):
        request.send_sync()
    [traced] = request.trace.tool_calls
    assert traced.status == "error"
    assert add.calls == []


def test_the_error_hook_of_invalid_arguments_gets_the_arguments_the_model_sent():
    errors: list = []
    hook = create_hook(on_tool_error=errors.append)
    model = QueueModel([call("add", {"x": 1, "y": "two"}, "c1"), "ok"])
    agent = AgentBuilder("a", model).tool(make_add_tool()).hook(hook).build()
    assert agent.prompt("go").send_sync().output == "ok"
    [error] = errors
    assert json.loads(error.args) == {"x": 1, "y": "two"}
    assert isinstance(error.error, ToolArgumentsError)


def test_answers_given_as_answer_objects_are_accepted():
    from anvia_notebook import Answer, CallbackHumanInput

    model = QueueModel([call("ask_question", THREE_CHOICES), "done"])
    human = CallbackHumanInput(ask=lambda r: [Answer(question_id="size", answer="m", choice="m")])
    agent = AgentBuilder("a", model).tool(create_question_tool()).human_input(human).build()
    assert agent.prompt("go").send_sync().output == "done"
    result = tool_results(model.requests[1])[0]
    assert (json.loads(result.content), result.is_error) == (
        {"answers": [{"questionId": "size", "answer": "m", "choice": "m"}]},
        False,
    )


async def test_an_approval_written_to_the_store_is_recorded_as_a_person_s(store_path: Path):
    store = RunStore(store_path)
    request, add, _ = store_agent(call("add", {"x": 1, "y": 2}), "ok")
    run = request.store(store).start()
    [approval] = await pending_of(run)
    RunStore(store_path).approve(run.run_id, approval.id)  # as from another process
    await asyncio.wait_for(run.wait(), 10)
    assert add.calls == [(1, 2)]
    status, decision = stored_decision(store, approval.id)
    assert status == "approved" and decision["decided_by"] == "human"
    [result] = [e.approval for e in run.events if e.type == "tool_approval_result"]
    assert result.decided_by == "human"


async def test_a_call_failing_while_a_question_waits_settles_the_question_before_the_run_ends(
    store_path: Path,
):
    """Two calls at once: a hook fails on one while the other waits for answers. The run fails,
    and the question is settled (cancelled, no answers), not left pending in the store."""

    def fail_on_add(event):
        if event.tool_name == "add":
            raise RuntimeError("audit service down")

    store = RunStore(store_path)
    model = QueueModel(
        [calls(("ask_question", THREE_CHOICES, "q1"), ("add", {"x": 1, "y": 2}, "c2")), "never"]
    )
    agent = (
        AgentBuilder("a", model)
        .tools([create_question_tool(), make_add_tool()])
        .hook(create_hook(on_tool_call=fail_on_add))
        .human_input(StoreHumanInput())
        .build()
    )
    run = agent.prompt("go").store(store).with_tool_concurrency(2).start()
    with pytest.raises(RuntimeError, match="audit service down"):
        await asyncio.wait_for(run.wait(), 5)
    assert run.interactions.pending == []
    [record] = store.interactions(run.run_id)
    assert stored_decision(store, record.id)[0] == "cancelled"
    results = {p.tool_call_id: p for p in run.state.messages[-1].tool_results}
    assert (json.loads(results["q1"].content), results["q1"].is_error) == ({"answers": []}, False)

"""Text that is not valid Unicode (a lone surrogate: a file name read with ``surrogateescape``, or
an emoji's halves cut apart in a model's stream) coming into a run from a tool or from the model
becomes U+FFFD where it enters: the run, its stored copy and what the user gets all hold valid
text, and the run is stored to its end (it went on unstored, or failed, before)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from anvia_notebook import AgentBuilder, RunStore, create_tool
from anvia_notebook.models import FunctionModel, ModelResponse, ReasoningDelta, ToolCall

from helpers import ran_with, wait_on_events

pytestmark = pytest.mark.timeout(60)


class Listing(BaseModel):
    folder: str


def _model(request: Any) -> Any:
    if request.messages[-1].role == "user":
        return ModelResponse(tool_calls=[ToolCall(id="c1", name="ls", arguments={"folder": "."})])
    return ModelResponse(text="Found \ud83d.")


async def _streamed(request: Any) -> Any:
    yield ReasoningDelta(delta="thinking \udc80")
    yield "Done \ud800"
    yield " and more."


def _valid(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


async def test_a_tool_result_and_the_model_s_text_with_a_lone_surrogate_are_stored_as_valid_text(
    store_path: Path,
) -> None:
    ls = create_tool(
        name="ls", description="List a folder.", input=Listing, execute=lambda a, c: "caf\udce9.txt"
    )
    store = RunStore(store_path)
    agent = AgentBuilder("lister", FunctionModel(_model)).tool(ls).build()
    response = await agent.prompt("list").store(store).send()
    assert response.output == "Found \ufffd."
    [result] = [r for m in response.messages for r in m.tool_results]
    assert result.content == "caf\ufffd.txt"
    assert store.runs()[0].status == "success"
    stored = store.get(response.run_id).messages
    assert [m.content for m in stored][-1] == "Found \ufffd."
    assert [r.content for m in stored for r in m.tool_results] == ["caf\ufffd.txt"]
    assert store.trace(response.run_id).tool_calls[0].result == "caf\ufffd.txt"
    store.close()


async def test_streamed_text_and_reasoning_with_a_lone_surrogate_are_stored_as_valid_text(
    store_path: Path,
) -> None:
    store = RunStore(store_path)
    agent = AgentBuilder("writer", FunctionModel(_streamed)).build()
    run = agent.prompt("write").store(store).start()
    response = await run.wait()
    assert response.output == "Done \ufffd and more."
    assert store.runs()[0].status == "success"
    assert all(_valid(getattr(e, "delta", "")) for e in run.events)
    assert store.get(response.run_id).messages[-1].content == "Done \ufffd and more."
    store.close()


async def _halves(request: Any) -> Any:
    yield ReasoningDelta(delta="Hmm \ud83e")
    yield "Done \ud83d"
    yield ReasoningDelta(delta="\udd14 so")
    yield "\ude00 and"
    yield " \ud83d"  # (its second half never comes)


async def test_an_emoji_streamed_as_two_halves_is_one_character_and_a_lone_half_is_u_fffd(
    store_path: Path,
) -> None:
    store = RunStore(store_path)
    agent = AgentBuilder("writer", FunctionModel(_halves)).build()
    run = agent.prompt("write").store(store).start()
    response = await run.wait()
    assert response.output == "Done \U0001f600 and \ufffd"
    assert response.messages[-1].reasoning == "Hmm \U0001f914 so"
    deltas = [e.delta for e in run.events if e.type in ("text_delta", "reasoning_delta")]
    assert all(_valid(delta) for delta in deltas)
    assert store.get(response.run_id).messages[-1].content == "Done \U0001f600 and \ufffd"
    store.close()


async def test_a_decision_holding_a_lone_surrogate_is_refused_and_the_approval_still_waits(
    store_path: Path,
) -> None:
    from anvia_notebook import DecisionRefusedError, StoreHumanInput, ToolApproval

    def model(request: Any) -> Any:
        if request.messages[-1].role == "user":
            return ModelResponse(
                tool_calls=[ToolCall(id="c1", name="ls", arguments={"folder": "."})]
            )
        return ModelResponse(text=request.messages[-1].tool_results[0].content)

    ls = create_tool(
        name="ls",
        description="List a folder.",
        input=Listing,
        execute=lambda a, c: f"listed {a.folder}",
        approval=ToolApproval(),
    )
    store = RunStore(store_path)
    agent = AgentBuilder("lister", FunctionModel(model)).tool(ls)
    run = agent.human_input(StoreHumanInput()).build().prompt("list").store(store).start()
    for _ in range(500):
        if run.interactions.pending:
            break
        await asyncio.sleep(0.01)
    [approval] = run.interactions.pending
    for bad in ({"reason": "fine \ud800"}, {"args": {"folder": "caf\udce9"}}):
        with pytest.raises(DecisionRefusedError, match="not valid text"):
            run.interactions.decide(approval.id, approved=True, **bad)
    assert [p.id for p in store.pending(run.run_id)] == [approval.id]
    run.interactions.decide(approval.id, approved=True, args={"folder": "docs"})
    told = ran_with("ls", {"folder": "docs"}, "listed docs")  # (edited: the model said ".")
    assert (await asyncio.wait_for(run.wait(), 10)).output == told
    assert store.runs()[0].status == "success"
    store.close()


# -- what code decides or says (a handler, a human input, a policy, a hook, Stop) and what the
# model sends as a call's arguments: U+FFFD where it enters, as code cannot be asked again.


def _asks_ls(arguments: Any) -> Any:
    def model(request: Any) -> Any:
        if request.messages[-1].role == "user":
            return ModelResponse(tool_calls=[ToolCall(id="c1", name="ls", arguments=arguments)])
        return ModelResponse(text=request.messages[-1].tool_results[0].content)

    return model


def _ls(ran: list[str] | None = None, approval: Any = None) -> Any:
    def execute(args: Listing, ctx: Any) -> str:
        if ran is not None:
            ran.append(args.folder)
        return f"listed {args.folder}"

    return create_tool(
        name="ls", description="List a folder.", input=Listing, execute=execute, approval=approval
    )


@pytest.mark.parametrize(
    ("decision", "output", "status", "stored_reason"),
    [
        ({"approved": True, "reason": "ok \ud800"}, "listed .", "approved", "ok \ufffd"),
        (
            {"approved": False, "reason": "no \ud800", "reject_message": "Refused \udc80."},
            "Refused \ufffd.",
            "rejected",
            "Refused \ufffd.",
        ),
        (
            {"approved": True, "args": {"folder": "caf\udce9"}},
            ran_with("ls", {"folder": "caf\ufffd"}, "listed caf\ufffd"),
            "approved",
            None,
        ),
    ],
)
async def test_an_approval_handler_s_decision_with_a_lone_surrogate_is_stored_as_valid_text(
    store_path: Path, decision: dict[str, Any], output: str, status: str, stored_reason: Any
) -> None:
    from anvia_notebook import ToolApproval

    store = RunStore(store_path)
    agent = AgentBuilder("lister", FunctionModel(_asks_ls({"folder": "."})))
    agent = agent.tool(_ls(approval=ToolApproval())).approvals(lambda request: decision)
    response = await agent.build().prompt("list").store(store).send()
    assert response.output == output
    assert store.runs()[0].status == "success"
    [record] = store.get(response.run_id).approvals.values()
    assert (record.status, record.decided_by, record.decision_reason) == (
        status,
        "handler",
        stored_reason,
    )
    assert _valid(json.dumps(record.edited_args, ensure_ascii=False))
    store.close()


@pytest.mark.parametrize("asked_by", ["policy", "hook"])
async def test_an_approval_s_reason_and_reject_message_from_code_with_a_lone_surrogate_are_valid(
    store_path: Path, asked_by: str
) -> None:
    from anvia_notebook import ToolApproval, create_hook

    texts = {"reason": "Review \ud800", "reject_message": "Refused \udc80."}
    store = RunStore(store_path)
    agent = AgentBuilder("lister", FunctionModel(_asks_ls({"folder": "."})))
    if asked_by == "policy":
        agent = agent.tool(_ls(approval=ToolApproval(**texts)))
    else:
        hook = create_hook(on_tool_call=lambda call: call.tool.request_approval(**texts))
        agent = agent.tool(_ls()).hook(hook)
    response = (
        await agent.approvals(lambda request: False).build().prompt("list").store(store).send()
    )
    assert response.output == "Refused \ufffd."
    assert store.runs()[0].status == "success"
    [record] = store.get(response.run_id).approvals.values()
    assert (record.reason, record.reject_message) == ("Review \ufffd", "Refused \ufffd.")
    store.close()


async def test_a_human_input_s_answer_with_a_lone_surrogate_is_stored_as_valid_text(
    store_path: Path,
) -> None:
    from anvia_notebook import CallbackHumanInput, ask_question

    questions = {
        "questions": [
            {"id": "size", "question": "Which size?", "choices": [{"label": "S", "value": "s"}]}
        ]
    }

    def model(request: Any) -> Any:
        if request.messages[-1].role == "user":
            return ModelResponse(
                tool_calls=[ToolCall(id="c1", name="ask_question", arguments=questions)]
            )
        return ModelResponse(text=request.messages[-1].tool_results[0].content)

    store = RunStore(store_path)
    human = CallbackHumanInput(ask=lambda r: [{"questionId": "size", "answer": "big \udc80"}])
    agent = AgentBuilder("asker", FunctionModel(model)).tool(ask_question).human_input(human)
    response = await agent.build().prompt("ask").store(store).send()
    assert json.loads(response.output) == {
        "answers": [{"questionId": "size", "answer": "big \ufffd"}]
    }
    assert store.runs()[0].status == "success"
    [record] = store.get(response.run_id).questions.values()
    assert (record.status, record.answers[0].answer) == ("answered", "big \ufffd")
    store.close()


async def test_stopping_a_run_with_a_reason_holding_a_lone_surrogate_stores_its_end(
    store_path: Path,
) -> None:
    from anvia_notebook import PromptCancelledError, StoreHumanInput, ToolApproval

    store = RunStore(store_path)
    agent = AgentBuilder("lister", FunctionModel(_asks_ls({"folder": "."})))
    agent = agent.tool(_ls(approval=ToolApproval())).human_input(StoreHumanInput())
    run = agent.build().prompt("list").store(store).start()
    asked = asyncio.Event()
    run.subscribe(lambda event: asked.set() if event.type == "tool_approval_request" else None)
    await asyncio.wait_for(asked.wait(), 60)
    assert run.cancel("Stopped \ud800 here")
    with pytest.raises(PromptCancelledError) as stopped:
        await asyncio.wait_for(run.wait(), 10)
    assert stopped.value.reason == "Stopped \ufffd here"
    stored = store.get(run.run_id)
    assert (store.runs()[0].status, stored.cancel_reason) == ("cancelled", "Stopped \ufffd here")
    [record] = stored.approvals.values()
    assert (record.status, record.decision_reason) == ("cancelled", "Stopped \ufffd here")
    store.close()


async def test_a_hook_cancelling_with_a_lone_surrogate_in_its_reason_stores_the_run_s_end(
    store_path: Path,
) -> None:
    from anvia_notebook import PromptCancelledError, create_hook

    store = RunStore(store_path)
    hook = create_hook(on_tool_call=lambda call: call.tool.cancel("No \ud800"))
    agent = AgentBuilder("lister", FunctionModel(_asks_ls({"folder": "."})))
    run = agent.tool(_ls()).hook(hook).build().prompt("list").store(store).start()
    with pytest.raises(PromptCancelledError, match="No \ufffd"):
        await asyncio.wait_for(run.wait(), 10)
    assert store.runs()[0].status == "cancelled"
    assert _valid(store.get(run.run_id).model_dump_json())
    store.close()


async def _streamed_call(request: Any) -> Any:
    from anvia_notebook.models import ToolCallDelta

    if request.messages[-1].role == "user":
        # As OpenAI streams a call: its JSON arguments in fragments, with an escaped surrogate.
        yield ToolCallDelta(id="c1", name="ls", arguments_delta='{"folder": "caf')
        yield ToolCallDelta(id="c1", arguments_delta='\\udce9"}')
        return
    yield request.messages[-1].tool_results[0].content


async def _streamed_raw(request: Any) -> Any:
    from anvia_notebook.models import ToolCallDelta

    if request.messages[-1].role == "user":
        # A fragment holding the character itself, not its escape (a server's bad decoding).
        yield ToolCallDelta(id="c1", name="ls", arguments_delta='{"folder": "caf\udce9')
        yield ToolCallDelta(id="c1", arguments_delta='"}')
        return
    yield request.messages[-1].tool_results[0].content


@pytest.mark.parametrize(
    "model",
    [
        _asks_ls('{"folder": "caf\\udce9"}'),  # JSON text with the escape
        _asks_ls({"folder": "caf\udce9"}),  # arguments as data
        _streamed_call,
        _streamed_raw,
    ],
    ids=["json", "data", "streamed", "streamed-raw"],
)
async def test_a_model_s_call_arguments_with_a_lone_surrogate_reach_the_tool_and_store_as_valid(
    store_path: Path, model: Any
) -> None:
    from anvia_notebook import StoreHumanInput, ToolApproval

    ran: list[str] = []
    store = RunStore(store_path)
    agent = AgentBuilder("lister", FunctionModel(model)).tool(_ls(ran, ToolApproval()))
    run = agent.human_input(StoreHumanInput()).build().prompt("list").store(store).start()
    other = RunStore(store_path)  # (as another process sees the store)
    for _ in range(500):
        if other.pending(run.run_id):
            break
        await asyncio.sleep(0.01)
    [record] = other.pending(run.run_id)
    assert record.args == {"folder": "caf\ufffd"}
    other.approve(run.run_id, record.id)
    response = await asyncio.wait_for(run.wait(), 10)
    assert (response.output, ran) == ("listed caf\ufffd", ["caf\ufffd"])
    assert other.runs()[0].status == "success"
    stored = other.get(run.run_id)
    assert [json.loads(c.arguments) for m in stored.messages for c in m.tool_calls] == [
        {"folder": "caf\ufffd"}
    ]
    store.close()
    other.close()


async def _streamed_bad_id_and_name(request: Any) -> Any:
    from anvia_notebook.models import ToolCallDelta

    if request.messages[-1].role == "user":
        yield ToolCallDelta(id="c\ud800", name="l\udcffs", arguments_delta='{"folder": "."}')
        yield ToolCallDelta(id="c\ud800", arguments_delta="")
        return
    yield "done"


async def test_a_streamed_call_s_id_and_name_with_a_lone_surrogate_are_stored_as_valid_text(
    store_path: Path,
) -> None:
    """The run failed writing its event log (the fragments' id and name went in unchecked)."""
    store = RunStore(store_path)
    agent = AgentBuilder("lister", FunctionModel(_streamed_bad_id_and_name)).build()
    response = await agent.prompt("list").store(store).send()
    assert response.output == "done"
    assert store.status(response.run_id) == "success"
    [asked] = [m for m in response.messages if m.role == "assistant" and m.tool_calls]
    assert [(c.id, c.name) for c in asked.tool_calls] == [("c\ufffd", "l\ufffds")]
    assert _valid(json.dumps([e.model_dump(mode="json") for e in store.events(response.run_id)]))
    store.close()


async def _cut_after_a_half(request: Any) -> Any:
    yield "Hi \ud83d"
    await asyncio.Event().wait()  # (until the run is stopped)


async def test_a_run_stopped_while_a_half_is_held_keeps_it_as_u_fffd(store_path: Path) -> None:
    agent = AgentBuilder("writer", FunctionModel(_cut_after_a_half)).build()
    run = agent.prompt("write").start()
    await wait_on_events(run, lambda: "Hi " in "".join(getattr(e, "delta", "") for e in run.events))
    run.cancel("enough")
    with pytest.raises(Exception, match="enough"):
        await run.wait()
    assert run.state.messages[-1].content == "Hi \ufffd"

"""Agents for the crash-and-resume tests, used by a child process and by the test alike.

The child runs ``python -c "import store_agents; store_agents.run(KIND)"`` with
``ANVIA_NOTEBOOK_STORE`` set; the test kills it with SIGKILL at the right moment, then resumes
the stored run in its own process with the same agent. Every execution of a tool appends a line
to the file named by ``ANVIA_TEST_EFFECTS`` (the side effect that must never happen twice).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path

from pydantic import BaseModel, field_validator

from anvia_notebook import AgentBuilder, StoreHumanInput, ToolApproval, ask_question, create_tool
from anvia_notebook.models import FunctionModel, ModelResponse, TextDelta, ToolCall


class TransferInput(BaseModel):
    account: str
    amount: int

    @field_validator("account")
    @classmethod
    def _checked(cls, account: str) -> str:
        """An account named ``slow...`` is being checked for a long time with
        ``ANVIA_TEST_BLOCK_CHECK=1`` (the child is killed while its run checks an edit)."""
        if account.startswith("slow") and os.environ.get("ANVIA_TEST_BLOCK_CHECK") == "1":
            with effects_file().open("a") as out:
                out.write(f"checking {account}\n")
            time.sleep(3600)
        return account


def effects_file() -> Path:
    return Path(os.environ["ANVIA_TEST_EFFECTS"])


def effects() -> list[str]:
    path = effects_file()
    return path.read_text().splitlines() if path.exists() else []


def _transfer(args: TransferInput, ctx: object) -> dict[str, str]:
    with effects_file().open("a") as out:
        out.write(f"started {args.account} {args.amount}\n")
    if os.environ.get("ANVIA_TEST_BLOCK_TOOL") == "1":
        time.sleep(3600)  # the child is killed here, in the middle of the call
    with effects_file().open("a") as out:
        out.write(f"done {args.account} {args.amount}\n")
    return {"status": "sent", "account": args.account}


def transfer_tool(idempotent: bool = False, approval: bool = True):
    return create_tool(
        name="transfer",
        description="Send money.",
        input=TransferInput,
        execute=_transfer,
        approval=ToolApproval(reason="Money leaves the account.") if approval else None,
        idempotent=idempotent,
    )


def _script(request):
    """Call transfer once (or ask_question first when asked to), then answer with the result."""
    last = request.messages[-1]
    if last.role == "user":
        if "ask" in last.content:
            return ModelResponse(
                tool_calls=[
                    ToolCall(
                        id="q1",
                        name="ask_question",
                        arguments={
                            "questions": [
                                {
                                    "id": "account",
                                    "question": "Which account?",
                                    "choices": [{"label": "Savings", "value": "savings"}],
                                }
                            ]
                        },
                    )
                ]
            )
        return ModelResponse(
            tool_calls=[
                ToolCall(id="t1", name="transfer", arguments={"account": "a1", "amount": 5})
            ]
        )
    result = last.tool_results[0]
    if result.tool_name == "ask_question":
        account = json.loads(result.content)["answers"][0]["answer"]
        return ModelResponse(
            tool_calls=[
                ToolCall(id="t2", name="transfer", arguments={"account": account, "amount": 7})
            ]
        )
    return ModelResponse(text=f"Result: {result.content}")


async def _slow_stream(request):
    """Streams a first piece, then hangs (the child is killed mid-stream); once resumed
    (``ANVIA_TEST_FAST=1``) answers at once."""
    if os.environ.get("ANVIA_TEST_FAST") == "1":
        yield TextDelta(delta="complete answer")
        return
    yield TextDelta(delta="partial ")
    await asyncio.sleep(3600)


async def _answer_announced(request):
    """``_script``, its call to the model after the tool round announced in the effects file;
    with ``ANVIA_TEST_BLOCK_MODEL=1`` that call never answers (the child is killed while it
    waits, as for a slow provider)."""
    if request.messages[-1].role == "tool":
        with effects_file().open("a") as out:
            out.write("model asked again\n")
        if os.environ.get("ANVIA_TEST_BLOCK_MODEL") == "1":
            await asyncio.sleep(3600)
    return _script(request)


class Count(BaseModel):
    n: int


async def _typed_answer_announced(request):
    """Call transfer beside a final_result the output type refuses; then, announced as in
    ``_answer_announced`` (and hanging the same way), give a valid one."""
    if not any(message.role == "tool" for message in request.messages):
        transfer = ToolCall(id="t1", name="transfer", arguments={"account": "a1", "amount": 5})
        wrong = ToolCall(id="f1", name="final_result", arguments={"n": "not a number"})
        return ModelResponse(tool_calls=[transfer, wrong])
    with effects_file().open("a") as out:
        out.write("model asked again\n")
    if os.environ.get("ANVIA_TEST_BLOCK_MODEL") == "1":
        await asyncio.sleep(3600)
    return ModelResponse(tool_calls=[ToolCall(id="f2", name="final_result", arguments={"n": 3})])


def _steerable_script(request):
    """Call transfer once; after that, answer with the result and every message steered in
    (the user messages after the first)."""
    if not any(m.role == "tool" for m in request.messages):
        return _script(request)
    steered = [m.content for m in request.messages if m.role == "user"][1:]
    return ModelResponse(text=f"Done; steered: {steered}")


def agent(kind: str, *, idempotent: bool = False):
    if kind == "stream":
        return AgentBuilder("streamer", FunctionModel(_slow_stream)).build()
    if kind == "slow_answer":  # the plain transfer, then a model call that may hang
        tool = transfer_tool(idempotent=idempotent, approval=False)
        return AgentBuilder("banker", FunctionModel(_answer_announced)).tools([tool]).build()
    if kind == "typed_slow_answer":  # the same, beside a typed result the model gets wrong
        tool = transfer_tool(idempotent=idempotent, approval=False)
        model = FunctionModel(_typed_answer_announced)
        return AgentBuilder("banker", model).tools([tool]).output_type(Count).build()
    if kind == "steerable":
        return (
            AgentBuilder("banker", FunctionModel(_steerable_script))
            .tools([transfer_tool()])
            .human_input(StoreHumanInput())
            .build()
        )
    tools = [transfer_tool(idempotent=idempotent, approval=kind != "plain"), ask_question]
    # "timed": its approvals wait at most 10 minutes (expires_at is set)
    human = StoreHumanInput(timeout=600) if kind == "timed" else StoreHumanInput()
    return AgentBuilder("banker", FunctionModel(_script)).tools(tools).human_input(human).build()


def run(kind: str, prompt: str = "send 5 to a1") -> None:
    request = agent(kind).prompt(prompt)
    print("started", flush=True)
    try:
        response = request.send_sync()
    except Exception as error:  # pragma: no cover - shown in the test's failure output
        print(f"error: {error!r}", file=sys.stderr, flush=True)
        raise
    print(f"output: {response.output}", flush=True)


class StepInput(BaseModel):
    step: int


def _record_step(args: StepInput, ctx: object) -> str:
    with effects_file().open("a") as out:
        out.write(f"{ctx.run.run_id} {ctx.tool_call_id}\n")  # type: ignore[attr-defined]
    time.sleep(0.05)  # a window in which the process may be killed mid-call
    return f"step {args.step} done"


def _three_steps(request):
    done = sum(1 for m in request.messages if m.role == "tool")
    if done < 3:
        return ModelResponse(
            tool_calls=[ToolCall(id=f"s{done}", name="step", arguments={"step": done})]
        )
    return ModelResponse(text="all steps handled")


def stepper():
    """Three protected calls in a row; every execution is logged with its run and call id."""
    step = create_tool(
        name="step",
        description="Do one step.",
        input=StepInput,
        execute=_record_step,
        approval=ToolApproval(reason="step"),
    )
    return (
        AgentBuilder("stepper", FunctionModel(_three_steps))
        .tools([step])
        .human_input(StoreHumanInput())
        .build()
    )


def run_stepper() -> None:
    print("started", flush=True)
    stepper().prompt("do the steps").send_sync()


class CityRow(BaseModel):
    name: str
    population: int


def _invalid_cities(request):
    """Give an invalid list of cities through final_result (any retry count is used up at once)."""
    return ModelResponse(
        tool_calls=[
            ToolCall(
                id="out_1",
                name="final_result",
                arguments={"result": [{"name": "Paris", "population": "many"}]},
            )
        ]
    )


def typed_agent(model=None):
    """An agent whose typed output the model gets wrong: the repair waits for a person."""
    return (
        AgentBuilder("typed-store", model or FunctionModel(_invalid_cities))
        .output_type(list[CityRow], retries=0)
        .human_input(StoreHumanInput())
        .build()
    )


def run_typed() -> None:
    asyncio.run(typed_agent().prompt("cities").send())


def untyped_agent(model=None):
    """``typed_agent`` without an output type of its own: its runs get one from the request
    (``run_request_typed``)."""
    return (
        AgentBuilder("typed-request-store", model or FunctionModel(_invalid_cities))
        .human_input(StoreHumanInput())
        .build()
    )


def run_request_typed() -> None:
    request = untyped_agent().prompt("cities").output_type(list[CityRow], retries=0)
    asyncio.run(request.send())


def _invalid_cities_text(request):
    """Answer with an invalid list of cities as JSON text (native mode: no tool call)."""
    return ModelResponse(text=json.dumps([{"name": "Paris", "population": "many"}]))


def native_typed_agent(model=None):
    """An agent whose typed output (mode="native") the model gets wrong: the repair waits for
    a person."""
    return (
        AgentBuilder("typed-native-store", model or FunctionModel(_invalid_cities_text))
        .output_type(list[CityRow], mode="native", retries=0)
        .human_input(StoreHumanInput())
        .build()
    )


def run_native_typed() -> None:
    asyncio.run(native_typed_agent().prompt("cities").send())

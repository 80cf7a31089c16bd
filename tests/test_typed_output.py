"""Typed output: ``output_type(...)`` on the builder and the request, ``PromptResponse.data``,
validation retries, the repair by a person through the one interaction record, and
``OutputValidationError`` when nobody can fix it."""

from __future__ import annotations

import asyncio
import functools
import json
from dataclasses import dataclass
from typing import Any

import pytest
from pydantic import BaseModel, Field

from anvia_notebook import (
    AgentBuilder,
    ApprovalDecision,
    CallbackHumanInput,
    DecisionRefusedError,
    OutputValidationError,
    PromptCancelledError,
    RunStore,
    StoreHumanInput,
)
from anvia_notebook._util import compact_json
from anvia_notebook.models import ModelResponse, QueueModel, ToolCall

from helpers import call, calls, fix_asking_agent, make_add_tool, tool_results


class City(BaseModel):
    name: str
    population: int = Field(gt=0)


class Report(BaseModel):
    title: str
    cities: list[City]


GOOD_CITY = {"name": "Paris", "population": 2_100_000}
BAD_CITY = {"name": "Paris", "population": "many"}


def final(arguments: Any, id: str = "out_1", text: str = "") -> ModelResponse:
    return ModelResponse(
        text=text, tool_calls=[ToolCall(id=id, name="final_result", arguments=arguments)]
    )


async def wait_for(run: Any, kind: str) -> Any:
    seen = asyncio.Event()
    found: list[Any] = []

    def on(event: Any) -> None:
        if event.type == kind:
            found.append(event)
            seen.set()

    run.subscribe(on)
    await asyncio.wait_for(seen.wait(), 30)
    return found[-1]


# -- the happy paths ---------------------------------------------------------------------------


async def test_a_model_is_the_data_and_the_tools_stay_usable() -> None:
    model = QueueModel([call("add", {"x": 1, "y": 2}), final(GOOD_CITY)])
    add = make_add_tool()
    agent = AgentBuilder("typed", model).tools([add]).output_type(City).build()

    response = await agent.prompt("Paris?").store(None).send()

    assert response.data == City(name="Paris", population=2_100_000)
    assert add.calls == [(1, 2)]  # the other tool ran first
    assert json.loads(response.output) == GOOD_CITY  # the text: the value as JSON
    tools = [tool.name for tool in model.requests[0].tools]
    assert tools == ["add", "final_result"]
    schema = model.requests[0].tools[-1].parameters
    assert schema["properties"]["population"]["exclusiveMinimum"] == 0
    assert model.requests[0].response_format is None
    # The call got its result in the conversation (a saved history stays valid).
    last = response.messages[-1]
    assert last.role == "tool" and last.tool_results[0].content == "Final result accepted."


async def test_a_list_is_wrapped_as_result() -> None:
    model = QueueModel([final({"result": [GOOD_CITY, {"name": "Lyon", "population": 500}]})])
    agent = AgentBuilder("typed", model).build()

    response = await agent.prompt("cities").output_type(list[City]).store(None).send()

    assert response.data == [City(**GOOD_CITY), City(name="Lyon", population=500)]
    parameters = model.requests[0].tools[0].parameters
    assert parameters["type"] == "object" and parameters["required"] == ["result"]
    assert parameters["properties"]["result"]["type"] == "array"
    assert parameters["properties"]["result"]["items"] == {"$ref": "#/$defs/City"}
    assert "City" in parameters["$defs"]  # references still resolve from the top


async def test_the_requests_output_type_wins_over_the_agents() -> None:
    model = QueueModel([final({"result": 3})])
    agent = AgentBuilder("typed", model).output_type(City).build()
    response = await agent.prompt("count").output_type(int).store(None).send()
    assert response.data == 3


async def test_the_model_text_of_the_final_turn_stays_the_output() -> None:
    model = QueueModel([final(GOOD_CITY, text="Here it is.")])
    agent = AgentBuilder("typed", model).output_type(City).build()
    response = await agent.prompt("Paris?").store(None).send()
    assert response.output == "Here it is." and response.data.name == "Paris"


async def test_the_final_event_carries_the_data_as_json() -> None:
    model = QueueModel([final({"result": [GOOD_CITY]})])
    agent = AgentBuilder("typed", model).output_type(list[City]).build()
    events = [event async for event in agent.prompt("x").store(None).stream()]
    assert events[-1].type == "final" and events[-1].data == [GOOD_CITY]


async def test_a_dataclass_and_a_dict_are_not_wrapped() -> None:
    @dataclass
    class Point:
        x: int
        y: int

    model = QueueModel([final({"x": 1, "y": 2}), final({"a": 1})])
    agent = AgentBuilder("typed", model).build()
    point = await agent.prompt("p").output_type(Point).store(None).send()
    assert point.data == Point(1, 2)
    assert model.requests[0].tools[0].parameters["required"] == ["x", "y"]
    mapping = await agent.prompt("m").output_type(dict[str, int]).store(None).send()
    assert mapping.data == {"a": 1}


# -- bad input at build time ---------------------------------------------------------------------


def test_a_type_pydantic_cannot_validate_is_refused_at_build_time() -> None:
    class Opaque:
        pass

    builder = AgentBuilder("typed", QueueModel([]))
    with pytest.raises(TypeError, match=r"output_type\(Opaque\): pydantic cannot validate"):
        builder.output_type(Opaque)
    with pytest.raises(TypeError, match=r"list\[Opaque\]"):
        builder.output_type(list[Opaque])
    with pytest.raises(ValueError, match="mode must be"):
        builder.output_type(City, mode="json")
    with pytest.raises(ValueError, match="retries"):
        builder.output_type(City, retries=-1)
    agent = builder.build()
    with pytest.raises(TypeError, match="pydantic cannot validate"):
        agent.prompt("x").output_type(Opaque)


def test_a_function_or_a_value_given_as_the_type_is_refused_at_build_time() -> None:
    """A function was taken: pydantic called it with the model's arguments at each validation
    (an async one: "coroutine was never awaited"); a dict or a JSON schema raised pydantic's
    own KeyError or SchemaError."""
    calls: list[Any] = []

    def city(name: str) -> str:
        calls.append(name)
        return name

    async def city_async(name: str) -> str:
        return name

    builder = AgentBuilder("typed", QueueModel([]))
    for function in (city, city_async, functools.partial(city)):
        with pytest.raises(TypeError, match=r"takes a type, not the function city"):
            builder.output_type(function)
    for value in ({"name": str}, {}, {"type": "object"}, "City"):
        with pytest.raises(TypeError, match=rf"takes a type, not a {type(value).__name__} value"):
            builder.output_type(value)
    assert calls == []


def test_a_tool_named_final_result_clashes_with_tool_mode() -> None:
    from anvia_notebook import create_tool

    clash = create_tool(
        name="final_result", description="", input=City, execute=lambda args, ctx: "ok"
    )
    with pytest.raises(ValueError, match="rename that tool"):
        AgentBuilder("typed", QueueModel([])).tool(clash).output_type(City).build()
    agent = AgentBuilder("typed", QueueModel([])).tool(clash).output_type(City, "native").build()
    with pytest.raises(ValueError, match="rename that tool"):
        agent.prompt("x").output_type(City)


# -- retries -------------------------------------------------------------------------------------


async def test_an_invalid_value_goes_back_with_pydantics_errors() -> None:
    model = QueueModel([final(BAD_CITY, "a"), final(GOOD_CITY, "b")])
    agent = AgentBuilder("typed", model).output_type(City, retries=1).build()

    response = await agent.prompt("Paris?").store(None).send()

    assert response.data.population == 2_100_000
    (told,) = tool_results(model.requests[1])
    assert told.is_error and told.tool_call_id == "a"
    assert "population: Input should be a valid integer" in told.content
    assert '(got "many")' in told.content and "call final_result again" in told.content


async def test_a_model_that_never_calls_final_result_ends_with_a_clear_error() -> None:
    model = QueueModel(["Paris has 2 million people.", "Still text.", "And text again."])
    agent = AgentBuilder("typed", model).output_type(list[City], retries=2).build()

    with pytest.raises(OutputValidationError, match=r"without calling final_result.*list\[City\]"):
        await agent.prompt("cities").store(None).send()

    assert len(model.requests) == 3  # reminded twice, then the end (not a hang)
    reminder = model.requests[1].messages[-1]
    assert reminder.role == "user" and "final_result" in reminder.content


async def test_text_first_then_final_result_after_a_reminder() -> None:
    model = QueueModel(["I think Paris.", final(GOOD_CITY)])
    agent = AgentBuilder("typed", model).output_type(City).build()
    response = await agent.prompt("Paris?").store(None).send()
    assert response.data.name == "Paris"


async def test_nobody_attached_is_an_output_validation_error_with_errors_and_output() -> None:
    model = QueueModel([final(BAD_CITY, "a"), final(BAD_CITY, "b"), final(BAD_CITY, "c")])
    agent = AgentBuilder("typed", model).output_type(City, retries=2).build()

    with pytest.raises(OutputValidationError) as caught:
        await agent.prompt("Paris?").store(None).send()

    error = caught.value
    assert len(model.requests) == 3
    assert error.errors[0]["loc"] == ("population",)
    assert error.errors[0]["type"] == "int_parsing"
    assert json.loads(error.output) == BAD_CITY
    assert error.output_type is City
    assert "nobody" not in str(error) and "no approval handler or person" in str(error)


async def test_invalid_json_arguments_are_a_validation_failure_too() -> None:
    model = QueueModel([final('{"name": "Paris",', "a"), final(GOOD_CITY, "b")])
    agent = AgentBuilder("typed", model).output_type(City, retries=1).build()
    response = await agent.prompt("Paris?").store(None).send()
    assert response.data.name == "Paris"
    assert "Invalid JSON" in tool_results(model.requests[1])[0].content


# -- the repair ----------------------------------------------------------------------------------


async def test_an_approval_handler_fixes_the_value() -> None:
    asked: list[Any] = []

    def handler(request: Any) -> ApprovalDecision:
        asked.append(request)
        return ApprovalDecision(approved=True, args={"name": "Paris", "population": 2})

    model = QueueModel([final(BAD_CITY, "a")])
    agent = AgentBuilder("typed", model).output_type(City, retries=0).approvals(handler).build()

    response = await agent.prompt("Paris?").store(None).send()

    assert response.data == City(name="Paris", population=2)
    (request,) = asked
    assert request.tool_name == "final_result" and request.fix_required
    assert "population: Input should be a valid integer" in request.reason
    [record] = response.trace.tool_calls[0].approval and [response.trace.tool_calls[0].approval]
    assert record.status == "approved" and record.edited_args == {"name": "Paris", "population": 2}
    assert record.decided_by == "handler" and record.fix_required
    assert response.messages[-1].tool_results[0].content == (
        "Final result accepted, as fixed by a person."
    )


async def test_a_handler_that_approves_without_a_fix_ends_the_run() -> None:
    model = QueueModel([final(BAD_CITY, "a")])
    agent = (
        AgentBuilder("typed", model).output_type(City, retries=0).approvals(lambda r: True).build()
    )
    run = agent.prompt("Paris?").store(None).start()
    with pytest.raises(OutputValidationError, match="approved without a fix"):
        await run.wait()
    [record] = run.state.approvals.values()
    assert record.status == "rejected"  # the record says what happened


async def test_a_handlers_invalid_fix_ends_the_run_with_the_fixes_errors() -> None:
    decision = ApprovalDecision(approved=True, args={"name": "Paris", "population": -1})
    model = QueueModel([final(BAD_CITY, "a")])
    agent = (
        AgentBuilder("typed", model)
        .output_type(City, retries=0)
        .approvals(lambda r: decision)
        .build()
    )
    with pytest.raises(OutputValidationError, match="The fix is not a valid City") as caught:
        await agent.prompt("Paris?").store(None).send()
    assert caught.value.errors[0]["type"] == "greater_than"


async def test_a_rejection_goes_back_to_the_model_which_gets_its_retries_again() -> None:
    decisions = iter(
        [
            ApprovalDecision(approved=False, reason="Use the city's population in 2020."),
        ]
    )
    model = QueueModel([final(BAD_CITY, "a"), final(BAD_CITY, "b"), final(GOOD_CITY, "c")])
    agent = (
        AgentBuilder("typed", model)
        .output_type(City, retries=1)
        .approvals(lambda r: next(decisions))
        .build()
    )
    response = await agent.prompt("Paris?").store(None).send()
    assert response.data.population == 2_100_000
    told = tool_results(model.requests[2])[0]
    assert "rejected: Use the city's population in 2020." in told.content


async def test_the_person_fixes_it_through_the_handle_and_an_invalid_fix_is_refused() -> None:
    """The repair decided from outside (``RunHandle.approve`` calls ``interactions.decide``): an
    approval without a fix and a fix that is itself invalid are refused with the errors, and
    the interaction stays pending; a valid fix ends the run with it."""
    model = QueueModel([final({"result": [BAD_CITY]}, "a")])
    agent = fix_asking_agent(model, list[City])
    run = agent.prompt("cities").store(None).start()
    asked = await wait_for(run, "tool_approval_request")
    record = asked.approval
    assert record.fix_required and record.args == {"result": [BAD_CITY]}
    assert "result.0.population" in record.reason

    with pytest.raises(DecisionRefusedError, match="edited arguments that fix the errors"):
        run.interactions.decide(record.id, approved=True, via="handle")
    with pytest.raises(DecisionRefusedError, match=r"result\.0\.population"):
        run.interactions.decide(
            record.id, approved=True, args={"result": [{"name": "P", "population": 0}]}
        )
    assert [item.id for item in run.interactions.pending] == [record.id]  # the form stays

    fixed = {"result": [{"name": "Paris", "population": 2}]}
    decided = run.interactions.decide(record.id, approved=True, args=fixed, via="handle")
    response = await asyncio.wait_for(run.wait(), 30)

    assert decided.status == "approved" and decided.decided_via == "handle"
    assert response.data == [City(name="Paris", population=2)]
    assert len(model.requests) == 1  # no paid retry


async def test_a_stop_while_the_repair_waits_ends_its_call_in_the_trace_as_cancelled() -> None:
    """Stop while the person was asked to fix the value: the approval was cancelled, but the
    call's trace entry kept no status (trace tables skipped it); it is cancelled, as a stopped
    call of any tool."""
    model = QueueModel([final({"result": [BAD_CITY]}, "a")])
    agent = fix_asking_agent(model, list[City])
    request = agent.prompt("cities").store(None)
    run = request.start()
    await wait_for(run, "tool_approval_request")
    run.cancel("Stopped")
    with pytest.raises(PromptCancelledError):
        await asyncio.wait_for(run.wait(), 30)
    [entry] = request.trace.tool_calls
    assert (entry.name, entry.status, entry.approval.status) == (
        "final_result",
        "cancelled",
        "cancelled",
    )
    assert entry.result.startswith("ToolCallCancelled")


async def test_the_repair_decided_through_the_run_store(tmp_path: Any) -> None:
    path = tmp_path / "runs.sqlite"
    model = QueueModel([final(BAD_CITY, "a")])
    agent = fix_asking_agent(model, City)
    run = agent.prompt("Paris?").store(RunStore(path)).start()
    asked = await wait_for(run, "tool_approval_request")

    other = RunStore(path)  # as another process would
    [pending] = other.pending(run.run_id)
    assert pending.id == asked.approval.id and pending.fix_required
    with pytest.raises(DecisionRefusedError):
        other.approve(run.run_id, pending.id)  # no fix
    with pytest.raises(DecisionRefusedError, match="population"):
        other.approve(run.run_id, pending.id, args={"name": "Paris", "population": "x"})
    other.approve(run.run_id, pending.id, args={"name": "Paris", "population": 3})

    response = await asyncio.wait_for(run.wait(), 30)
    assert response.data == City(name="Paris", population=3)
    [stored] = [r for r in other.interactions(run.run_id) if r.id == pending.id]
    assert stored.status == "approved" and stored.decided_via == "store"
    assert stored.edited_args == {"name": "Paris", "population": 3}


async def test_a_callback_human_input_is_asked_with_the_errors() -> None:
    seen: list[str] = []

    def approve(request: Any) -> ApprovalDecision:
        seen.append(request.reason)
        return ApprovalDecision(approved=True, args=GOOD_CITY)

    model = QueueModel([final(BAD_CITY, "a"), final(BAD_CITY, "b")])
    human = CallbackHumanInput(approve=approve)
    agent = AgentBuilder("typed", model).output_type(City, retries=1).human_input(human).build()
    response = await agent.prompt("Paris?").store(None).send()
    assert response.data == City(**GOOD_CITY)
    assert len(seen) == 1 and "not valid after 1 retry" in seen[0]


async def test_a_huge_invalid_output_is_bounded_in_the_request() -> None:
    rows = [{"name": f"c{i}", "population": "x"} for i in range(20_000)]
    model = QueueModel([final({"result": rows}, "a")])
    asked: list[Any] = []

    def handler(request: Any) -> bool:
        asked.append(request)
        return False

    agent = (
        AgentBuilder("typed", model).output_type(list[City], retries=0).approvals(handler).build()
    )
    model._responses.append(final({"result": [GOOD_CITY]}, "b"))  # after the rejection
    response = await agent.prompt("cities").store(None).send()
    assert response.data == [City(**GOOD_CITY)]
    (request,) = asked
    assert len(request.reason) < 3_000
    assert "and 19990 more errors" in request.reason
    assert "too long to edit here" in request.reason
    assert request.args == {"result": None}
    told = tool_results(model.requests[1])[0].content
    assert len(told) < 3_000


async def test_a_huge_invalid_native_answer_is_bounded_in_the_request_too() -> None:
    rows = [{"name": f"c{i}", "population": "x"} for i in range(20_000)]
    model = QueueModel([json.dumps(rows), json.dumps([GOOD_CITY])])
    asked: list[Any] = []

    def handler(request: Any) -> bool:
        asked.append(request)
        return False

    agent = (
        AgentBuilder("typed", model)
        .output_type(list[City], "native", retries=0)
        .approvals(handler)
        .build()
    )
    response = await agent.prompt("cities").store(None).send()
    assert response.data == [City(**GOOD_CITY)]
    (request,) = asked
    assert request.tool_name == "final_result" and request.fix_required
    assert len(request.reason) < 3_000 and "too long to edit here" in request.reason
    assert request.args == {"result": None}
    told = model.requests[1].messages[-1]
    assert told.role == "user" and len(told.content) < 3_000


# -- native mode ---------------------------------------------------------------------------------


async def test_native_mode_sends_the_schema_and_validates_the_text() -> None:
    model = QueueModel([json.dumps(GOOD_CITY)])
    agent = (
        AgentBuilder("typed", model).tools([make_add_tool()]).output_type(City, "native").build()
    )

    response = await agent.prompt("Paris?").store(None).send()

    assert response.data == City(**GOOD_CITY)
    assert response.output == json.dumps(GOOD_CITY)
    request = model.requests[0]
    assert [tool.name for tool in request.tools] == ["add"]  # no final_result tool
    assert request.response_format is not None
    assert request.response_format.name == "City"
    assert request.response_format.json_schema == City.model_json_schema()


async def test_native_mode_retries_with_the_errors_then_nobody_is_an_error() -> None:
    model = QueueModel(["not json", json.dumps(BAD_CITY)])
    agent = AgentBuilder("typed", model).output_type(City, "native", retries=1).build()
    with pytest.raises(OutputValidationError) as caught:
        await agent.prompt("Paris?").store(None).send()
    retry = model.requests[1].messages[-1]
    assert retry.role == "user" and "Invalid JSON" in retry.content
    assert caught.value.output == json.dumps(BAD_CITY)
    assert caught.value.errors[0]["loc"] == ("population",)


async def test_native_mode_repair_by_a_handler() -> None:
    model = QueueModel([json.dumps({"result": [BAD_CITY]})])
    fix = ApprovalDecision(approved=True, args={"result": [GOOD_CITY]})
    asked: list[Any] = []
    agent = (
        AgentBuilder("typed", model)
        .output_type(list[City], "native", retries=0)
        .approvals(lambda request: asked.append(request) or fix)
        .build()
    )
    response = await agent.prompt("cities").store(None).send()
    assert response.data == [City(**GOOD_CITY)]
    assert json.loads(response.output) == [GOOD_CITY]  # the fixed value as JSON
    assert asked[0].args == {"result": [BAD_CITY]}  # the wrapped form it was asked for


async def test_a_turn_with_final_result_and_other_calls_runs_them_all() -> None:
    add = make_add_tool()
    model = QueueModel([calls(("add", {"x": 2, "y": 3}, "c1"), ("final_result", GOOD_CITY, "c2"))])
    agent = AgentBuilder("typed", model).tools([add]).output_type(City).build()
    response = await agent.prompt("x").store(None).send()
    assert add.calls == [(2, 3)] and response.data.name == "Paris"
    results = response.messages[-1].tool_results
    assert [part.tool_call_id for part in results] == ["c1", "c2"]


# -- to_pandas -----------------------------------------------------------------------------------


async def test_to_pandas_of_a_list_a_single_model_and_what_is_not_a_table() -> None:
    pytest.importorskip("pandas")
    model = QueueModel(
        [
            final({"result": [GOOD_CITY, {"name": "Lyon", "population": 500}]}),
            final(GOOD_CITY),
            final({"result": 3}),
            "plain text",
        ]
    )
    agent = AgentBuilder("typed", model).build()
    many = await agent.prompt("a").output_type(list[City]).store(None).send()
    frame = many.to_pandas()
    assert frame.shape == (2, 2) and frame["population"].tolist() == [2_100_000, 500]
    one = await agent.prompt("b").output_type(City).store(None).send()
    assert one.to_pandas().to_dict("records") == [GOOD_CITY]
    number = await agent.prompt("c").output_type(int).store(None).send()
    with pytest.raises(TypeError, match="needs a list of models"):
        number.to_pandas()
    text = await agent.prompt("d").store(None).send()
    assert text.data is None
    with pytest.raises(ValueError, match="no typed data"):
        text.to_pandas()


class Trip(BaseModel):
    start: City
    stops: list[City]


async def test_to_pandas_gives_models_inside_a_row_as_dicts_at_every_depth() -> None:
    """A model in a field was a dict, models in a list field were model objects."""
    pytest.importorskip("pandas")
    trip = {"start": GOOD_CITY, "stops": [{"name": "Lyon", "population": 500}]}
    model = QueueModel([final(trip)])
    request = AgentBuilder("typed", model).build().prompt("a").output_type(Trip).store(None)
    response = await request.send()
    [row] = response.to_pandas().to_dict("records")
    assert row == {"start": GOOD_CITY, "stops": [{"name": "Lyon", "population": 500}]}


async def test_to_pandas_of_models_by_key_has_a_row_per_key() -> None:
    """A dict[str, City] was one row of one column per key, each cell a whole city."""
    pytest.importorskip("pandas")
    lyon = {"name": "Lyon", "population": 500}
    model = QueueModel([final({"fr": GOOD_CITY, "lyon": lyon}), final({"a": 1, "b": 2})])
    agent = AgentBuilder("typed", model).build()
    cities = await agent.prompt("a").output_type(dict[str, City]).store(None).send()
    frame = cities.to_pandas()
    assert frame.index.tolist() == ["fr", "lyon"]
    assert frame.to_dict("records") == [GOOD_CITY, lyon]
    counts = await agent.prompt("b").output_type(dict[str, int]).store(None).send()
    assert counts.to_pandas().to_dict("records") == [{"a": 1, "b": 2}]  # one record, as before


async def test_to_pandas_of_an_optional_table_the_model_left_empty_has_its_columns() -> None:
    """A ``list[City] | None`` answered with None said "no typed data: set output_type", and one
    answered with rows or keyed cities lost its float columns and keys."""
    pytest.importorskip("pandas")
    model = QueueModel(
        [final({"result": None}), final({"result": None}), final({"result": {"fr": GOOD_CITY}})]
    )
    agent = AgentBuilder("typed", model).build()
    none = await agent.prompt("a").output_type(list[City] | None).store(None).send()
    assert none.data is None
    frame = none.to_pandas()
    assert frame.empty and frame.columns.tolist() == ["name", "population"]
    one = await agent.prompt("b").output_type(City | None).store(None).send()
    assert one.to_pandas().columns.tolist() == ["name", "population"]
    keyed = await agent.prompt("c").output_type(dict[str, City] | None).store(None).send()
    assert keyed.to_pandas().index.tolist() == ["fr"]


class Growth(BaseModel):
    region: str
    growth_pct: float
    target: float | None = None


async def test_to_pandas_keeps_a_float_field_float_when_its_values_are_whole() -> None:
    """A float field whose values were whole became an Int64 column: setting 2.5 in it raised."""
    pytest.importorskip("pandas")
    rows = [
        {"region": "north", "growth_pct": 2.0, "target": 3.0},
        {"region": "south", "growth_pct": 4},
    ]
    model = QueueModel([final({"result": rows})])
    request = AgentBuilder("typed", model).build().prompt("a").output_type(list[Growth])
    frame = (await request.store(None).send()).to_pandas()
    assert str(frame["growth_pct"].dtype) == "Float64" and str(frame["target"].dtype) == "Float64"
    frame.loc[0, "growth_pct"] = 2.5
    assert frame["growth_pct"].tolist() == [2.5, 4.0]


async def test_a_repair_nobody_decides_in_time_ends_the_run() -> None:
    model = QueueModel([final(BAD_CITY, "a")])
    agent = fix_asking_agent(model, City, timeout=0.2)
    run = agent.prompt("Paris?").store(None).start()
    with pytest.raises(OutputValidationError, match="the fix asked for was timed out"):
        await asyncio.wait_for(run.wait(), 30)
    [record] = run.state.approvals.values()
    assert record.status == "timed_out" and record.decided_by == "timeout"


async def test_a_message_steered_as_final_result_comes_keeps_the_run_going() -> None:
    """A valid result that arrives while a steered message waits does not end the run: the
    model is told to read the message and give its result again, and the next one ends it."""
    from anvia_notebook import create_hook

    request: Any = None
    steered: list[bool] = []

    def on_turn_end(event: Any) -> None:
        if event.turn == 1:
            steered.append(request.steer("Also add Lyon."))

    model = QueueModel([final(GOOD_CITY, "a"), final({"name": "Lyon", "population": 500}, "b")])
    agent = (
        AgentBuilder("typed", model)
        .output_type(City)
        .hook(create_hook(on_turn_end=on_turn_end))
        .build()
    )
    request = agent.prompt("Paris?").store(None)
    response = await request.send()
    assert steered == [True]
    assert response.data.name == "Lyon"
    told = model.requests[1].messages
    assert told[-2].tool_results[0].content.startswith("Result received, but new messages")
    assert told[-1].content == "Also add Lyon."
    assert request.steer("too late") is False


async def fixed_while_steered(model: QueueModel, mode: str, *hooks: Any) -> Any:
    """Run a typed agent on ``model`` until its result's approval is asked, steer a message to
    it, approve with ``GOOD_CITY`` and wait for the end: the response."""
    agent = (
        AgentBuilder("typed", model)
        .output_type(City, mode, retries=0)  # type: ignore[arg-type]
        .human_input(StoreHumanInput())
    )
    for hook in hooks:
        agent = agent.hook(hook)
    run = agent.build().prompt("Paris?").store(None).start()
    asked = await wait_for(run, "tool_approval_request")
    assert run.steer("Also add Lyon.") is True
    run.interactions.decide(asked.approval.id, approved=True, args=GOOD_CITY, via="handle")
    response = await asyncio.wait_for(run.wait(), 30)
    assert response.data == City(name="Lyon", population=500)
    assert run.steer("too late") is False
    return run


def changed_to_good_city(tool: bool) -> str:
    again = "call final_result again with the result" if tool else "give the result again"
    return (
        f"A person changed your result to: {compact_json(GOOD_CITY)}. New messages from the "
        f"user follow: take them into account and {again}."
    )


async def test_a_message_steered_while_a_native_repair_waits_is_delivered_after_the_fix() -> None:
    """In native mode the repair of the model's answer waits for a person, and the run stays
    open to steering meanwhile (as while any approval waits): the message is delivered after
    the fix, and the model, having read it, gives the result."""
    model = QueueModel([json.dumps(BAD_CITY), json.dumps({"name": "Lyon", "population": 500})])
    run = await fixed_while_steered(model, "native")
    # The model hears of the person's fix first (it was lost: only the message reached it).
    told = model.requests[1].messages
    assert [m.role for m in told] == ["user", "assistant", "user", "user"]
    assert told[2].content == changed_to_good_city(tool=False)
    assert told[-1].content == "Also add Lyon."
    [steered] = [e for e in run.events if e.type == "steering_message"]
    assert steered.turn == 2


async def test_a_message_steered_while_a_tool_mode_repair_waits_keeps_the_fix_told() -> None:
    """Tool mode: the final_result call's result told the model its invalid value was
    "received" and nothing of the person's fix; it says the fixed value now."""
    model = QueueModel([final(BAD_CITY), final({"name": "Lyon", "population": 500}, "out_2")])
    await fixed_while_steered(model, "tool")
    told = model.requests[1].messages
    [result] = told[2].tool_results
    assert result.content == changed_to_good_city(tool=True)
    assert told[-1].content == "Also add Lyon."


async def test_an_edit_at_a_hook_s_approval_of_the_result_is_told_when_a_message_was_steered():
    """A hook asks approval of a valid final_result; the person edits it while a message is
    steered: the model was told "Result received" beside its own value, the edit lost."""
    from anvia_notebook import create_hook

    def on_tool_call(event: Any) -> Any:
        if event.tool_call_id == "out_1":
            return event.tool.request_approval("Check the city.")
        return None

    mine = {"name": "Pariss", "population": 5}
    model = QueueModel([final(mine), final({"name": "Lyon", "population": 500}, "out_2")])
    await fixed_while_steered(model, "tool", create_hook(on_tool_call=on_tool_call))
    [result] = model.requests[1].messages[2].tool_results
    assert result.content == changed_to_good_city(tool=True)


@pytest.mark.parametrize("mode", ["tool", "native"])
async def test_the_run_stays_open_to_steering_while_the_model_is_asked_again(mode: str) -> None:
    """An answer that is not the result (no final_result call, or invalid JSON) sends the model
    back with a reminder: the run goes on, so a message steered then is taken and delivered."""
    from anvia_notebook import create_hook

    request: Any = None
    steered: list[bool] = []

    def on_turn_start(event: Any) -> None:
        if event.turn == 2:
            steered.append(request.steer("Round the population."))

    first = "It is Paris." if mode == "tool" else "not json"
    second = final(GOOD_CITY, "a") if mode == "tool" else json.dumps(GOOD_CITY)
    model = QueueModel([first, second, final(GOOD_CITY, "b"), json.dumps(GOOD_CITY)])
    agent = (
        AgentBuilder("typed", model)
        .output_type(City, mode, retries=1)  # type: ignore[arg-type]
        .hook(create_hook(on_turn_start=on_turn_start))
        .build()
    )
    request = agent.prompt("Paris?").store(None)
    response = await request.send()
    assert steered == [True]
    assert response.data == City(**GOOD_CITY)
    # Delivered: after the final_result call's result in tool mode (the run then goes on),
    # before the run would end in native mode.
    seen = [m.content for m in model.requests[2].messages if m.role == "user"]
    assert seen[-1] == "Round the population."


def test_a_typing_typed_dict_is_refused_with_pydantic_s_advice_intact() -> None:
    """The advice lost its module names: "use `TypedDict` instead of `TypedDict` on Python
    < 12"."""
    import sys
    import typing

    if sys.version_info >= (3, 12):
        pytest.skip("pydantic takes typing.TypedDict from Python 3.12 on")

    class Row(typing.TypedDict):
        a: int

    with pytest.raises(TypeError) as refused:
        AgentBuilder("typed", QueueModel([])).output_type(Row)
    assert "use `typing_extensions.TypedDict` instead of `typing.TypedDict`" in str(refused.value)
    assert "Python < 3.12)" in str(refused.value)

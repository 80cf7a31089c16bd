"""Tools: schemas, @tool, result normalisation, output validation, and tool errors in a run."""

from __future__ import annotations

import asyncio
import json
from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, Field, PositiveFloat

from anvia_notebook import AgentBuilder, ToolContext, create_tool, tool
from anvia_notebook.models import ModelResponse, QueueModel

from helpers import AddInput, call, make_add_tool, tool_results


class RefundInput(BaseModel):
    order_id: str
    amount: PositiveFloat
    reason: str


class RefundOutput(BaseModel):
    refund_id: str
    status: Literal["issued"]


def test_create_tool_exposes_the_input_json_schema():
    refund = create_tool(
        name="issue_refund",
        description="Issue a customer refund.",
        input=RefundInput,
        output=RefundOutput,
        execute=lambda a, c: RefundOutput(refund_id="rf", status="issued"),
    )
    definition = refund.definition()
    assert definition.name == "issue_refund"
    assert definition.description == "Issue a customer refund."
    assert definition.parameters["properties"]["amount"]["exclusiveMinimum"] == 0
    assert set(definition.parameters["required"]) == {"order_id", "amount", "reason"}


def test_create_tool_rejects_a_non_model_input():
    with pytest.raises(TypeError, match="pydantic model"):
        create_tool(name="x", description="", input=dict, execute=lambda a, c: None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="non-empty name"):
        create_tool(name=" ", description="", input=AddInput, execute=lambda a, c: None)


def test_tool_decorator_builds_the_input_model_and_description():
    @tool
    def lookup_order(order_id: str, include_items: bool = False) -> dict:
        """Look up an order by id."""
        return {"order_id": order_id, "items": include_items}

    assert lookup_order.name == "lookup_order"
    assert lookup_order.description == "Look up an order by id."
    schema = lookup_order.definition().parameters
    assert schema["required"] == ["order_id"]
    assert schema["properties"]["include_items"]["default"] is False


def test_tool_decorator_with_options_and_context_parameter():
    seen = {}

    @tool(name="whoami", description="Tell the run id.")
    async def who(ctx: ToolContext, loud: bool = False) -> str:
        seen["run"] = ctx.run.run_id
        return "ME" if loud else "me"

    assert who.name == "whoami"
    assert "ctx" not in who.definition().parameters.get("properties", {})
    model = QueueModel([call("whoami", {"loud": True}), "done"])
    response = AgentBuilder("a", model).tool(who).build().prompt("go").send_sync()
    assert tool_results(model.requests[1])[0].content == "ME"
    assert seen["run"] == response.run_id


def test_tool_decorator_runs_functions_of_any_number_of_parameters():
    """Not only two: the decorated function is called with its own parameters, by name or
    by position (positional-only), sync or async, with or without the context."""

    @tool
    def today() -> str:
        """The date."""
        return "2026-12-05"

    @tool
    def weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    @tool
    async def book(city: str, day: str, seats: int = 1) -> str:
        """Book seats."""
        return f"{seats} in {city} on {day}"

    @tool
    def scale(x: float, /, factor: float, *, ctx: ToolContext) -> float:
        """Scale a number."""
        return x * factor if ctx.tool_name == "scale" else -1

    calls = [
        call("today", {}, "c1"),
        call("weather", {"city": "Oslo"}, "c2"),
        call("book", {"city": "Oslo", "day": "Mon", "seats": 3}, "c3"),
        call("scale", {"x": 2, "factor": 1.5}, "c4"),
    ]
    model = QueueModel([ModelResponse(tool_calls=[c.tool_calls[0] for c in calls]), "done"])
    agent = AgentBuilder("a", model).tools([today, weather, book, scale]).build()
    agent.prompt("go").send_sync()
    assert [r.content for r in tool_results(model.requests[1])] == [
        "2026-12-05",
        "sunny in Oslo",
        "3 in Oslo on Mon",
        "3.0",
    ]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("plain text", "plain text"),
        ({"a": 1}, '{"a":1}'),
        ([1, 2], "[1,2]"),
        (3, "3"),
        (None, "null"),
        (RefundOutput(refund_id="rf_1", status="issued"), '{"refund_id":"rf_1","status":"issued"}'),
        (
            {1, 2} if False else object.__new__(type("Odd", (), {"__str__": lambda s: "odd!"})),
            "odd!",
        ),
        (  # models, dates and sets inside were Python's repr: JSON, as JSON.stringify writes
            [RefundOutput(refund_id="rf_1", status="issued")],
            '[{"refund_id":"rf_1","status":"issued"}]',
        ),
        (
            {"on": __import__("datetime").date(2026, 12, 5), "tags": {"a"}},
            '{"on":"2026-12-05","tags":["a"]}',
        ),
    ],
)
def test_results_are_normalised(value, expected):
    echo = create_tool(name="echo", description="", input=AddInput, execute=lambda a, c: value)
    model = QueueModel([call("echo", {"x": 1, "y": 2}), "ok"])
    AgentBuilder("a", model).tool(echo).build().prompt("go").send_sync()
    assert tool_results(model.requests[1])[0].content == expected


def test_output_is_validated_and_a_mismatch_becomes_a_tool_error():
    bad = create_tool(
        name="issue_refund",
        description="",
        input=RefundInput,
        output=RefundOutput,
        execute=lambda a, c: {"refund_id": "x", "status": "pending"},
    )
    good = create_tool(
        name="issue_refund2",
        description="",
        input=RefundInput,
        output=RefundOutput,
        execute=lambda a, c: {"refund_id": "x", "status": "issued"},
    )
    args = {"order_id": "A1", "amount": 5, "reason": "late"}
    model = QueueModel([call("issue_refund", args), call("issue_refund2", args, id="call_2"), "ok"])
    AgentBuilder("a", model).tools([bad, good]).build().prompt("go").send_sync()
    first = tool_results(model.requests[1])[0]
    assert first.is_error
    assert first.content.startswith("ToolCallError: ")
    assert "status" in first.content
    assert json.loads(tool_results(model.requests[2])[0].content) == {
        "refund_id": "x",
        "status": "issued",
    }


def test_a_tool_exception_becomes_a_result_and_the_run_goes_on():
    def boom(args, ctx):
        raise RuntimeError("database is down")

    broken = create_tool(name="broken", description="", input=AddInput, execute=boom)
    model = QueueModel([call("broken", {"x": 1, "y": 2}), "sorry"])
    response = AgentBuilder("a", model).tool(broken).build().prompt("go").send_sync()
    result = tool_results(model.requests[1])[0]
    assert result.content == "ToolCallError: database is down"
    assert result.is_error
    assert response.output == "sorry"


@pytest.mark.parametrize(
    ("arguments", "needle"),
    [
        ('{"x": 1, "y": ', "not valid JSON"),
        ({"x": "one", "y": 2}, "x: Input should be a valid integer"),
        ({"x": 1}, "y: Field required"),
    ],
)
def test_invalid_arguments_become_a_result_naming_the_error(arguments, needle):
    add = make_add_tool()
    model = QueueModel([call("add", arguments), "fixed"])
    response = AgentBuilder("a", model).tool(add).build().prompt("go").send_sync()
    result = tool_results(model.requests[1])[0]
    assert result.is_error
    assert result.content.startswith("Invalid arguments for tool add:")
    assert needle in result.content
    assert add.calls == []
    assert response.output == "fixed"


def test_unknown_tool_becomes_a_not_found_result():
    model = QueueModel([call("nope", {}), "ok"])
    AgentBuilder("a", model).build().prompt("go").send_sync()
    assert tool_results(model.requests[1])[0].content == "ToolNotFoundError: Tool not found: nope"


def test_async_and_sync_tools_both_run():
    class Wait(BaseModel):
        ms: int

    async def slow(args: Wait, ctx) -> str:
        await asyncio.sleep(args.ms / 1000)
        return f"waited {args.ms}"

    waiter = create_tool(name="wait", description="", input=Wait, execute=slow)
    model = QueueModel([call("wait", {"ms": 5}), "done"])
    AgentBuilder("a", model).tool(waiter).build().prompt("go").send_sync()
    assert tool_results(model.requests[1])[0].content == "waited 5"


def test_the_model_sees_the_tools_and_instructions():
    add = make_add_tool()
    model = QueueModel([ModelResponse(text="hi")])
    agent = (
        AgentBuilder("a", model)
        .instructions(["Be brief.", "Use tools."])
        .instructions("Third block.")
        .context("Orders ship in 2 days.", id="shipping")
        .tool(add)
        .build()
    )
    agent.prompt("hello").send_sync()
    request = model.requests[0]
    assert request.instructions.startswith("Be brief.\n\nUse tools.\n\nThird block.")
    assert '<context id="shipping">' in request.instructions
    assert [t.name for t in request.tools] == ["add"]


def test_a_duplicate_tool_name_replaces_the_first_with_a_warning():
    second = make_add_tool()
    with pytest.warns(UserWarning, match="'add' replaces the first"):
        agent = AgentBuilder("a", QueueModel([])).tools([make_add_tool(), second]).build()
    assert agent.tools == {"add": second}


@pytest.mark.parametrize("arguments", ['{"x": NaN, "y": 1}', {"x": float("nan"), "y": 1}])
def test_arguments_the_run_refuses_as_not_json_are_traced_and_stored_as_sent(arguments, tmp_path):
    """NaN is no JSON number: the model is told so, and the trace (live and stored) keeps the
    text it sent (before: ``{'x': nan}`` live and ``{'x': None}`` from the store)."""
    from anvia_notebook import RunStore

    model = QueueModel([call("add", arguments), "done"])
    store = RunStore(tmp_path / "runs.db")
    agent = AgentBuilder("a", model).tool(make_add_tool()).build()
    response = agent.prompt("go").store(store).send_sync()
    [result] = tool_results(model.requests[1])
    assert "NaN is not a JSON number" in result.content
    for trace in (response.trace, store.trace(response.run_id)):
        assert trace.tool_calls[0].args == '{"x":NaN,"y":1}'


def test_a_scripted_call_s_arguments_may_hold_what_pydantic_writes_as_json():
    """A test model's call with a date or a Decimal in its arguments ended the run with "Object
    of type date is not JSON serializable"."""
    from datetime import date
    from decimal import Decimal

    class Booking(BaseModel):
        day: date
        price: Decimal

    seen: list[Booking] = []
    book = create_tool(
        name="book", description="Book.", input=Booking, execute=lambda a, c: seen.append(a)
    )
    model = QueueModel([call("book", {"day": date(2026, 12, 5), "price": Decimal("9.90")}), "done"])
    AgentBuilder("a", model).tool(book).build().prompt("go").send_sync()
    assert seen == [Booking(day=date(2026, 12, 5), price=Decimal("9.90"))]
    with pytest.raises(ValueError, match="the arguments have no JSON form"):
        call("book", {"day": object()})


def test_tool_decorator_keeps_annotated_field_constraints_in_the_schema_and_the_check():
    """``Annotated[float, Field(gt=0)]`` lost its constraint: the model could refund -500."""
    refunded: list[float] = []

    @tool
    def refund(amount: Annotated[float, Field(gt=0, description="USD amount")]) -> str:
        """Refund."""
        refunded.append(amount)
        return "ok"

    schema = refund.definition().parameters["properties"]["amount"]
    assert schema["exclusiveMinimum"] == 0 and schema["description"] == "USD amount"
    model = QueueModel([call("refund", {"amount": -500}), "done"])
    AgentBuilder("a", model).tool(refund).build().prompt("go").send_sync()
    assert "greater than 0" in tool_results(model.requests[1])[0].content
    assert refunded == []


@pytest.mark.parametrize("optional", [True, False])
def test_an_optional_or_annotated_context_parameter_is_given_the_context_not_asked_of_the_model(
    optional,
):
    """``ctx: ToolContext | None = None`` was a field of the schema: never given the context,
    and the model could send one of its own (a forged run id)."""
    seen: list[str] = []
    if optional:

        def lookup(order_id: str, ctx: ToolContext | None = None) -> str:
            seen.append(ctx.run.run_id if ctx else "none")
            return order_id
    else:

        def lookup(order_id: str, ctx: Annotated[ToolContext, "the run"] = None) -> str:  # type: ignore[assignment]
            seen.append(ctx.run.run_id)
            return order_id

    made = tool(lookup)
    assert list(made.definition().parameters["properties"]) == ["order_id"]
    forged = {"order_id": "A1", "ctx": {"run": {"run_id": "FORGED"}}}
    model = QueueModel([call("lookup", {"order_id": "A1"}), call("lookup", forged, "c2"), "ok"])
    response = AgentBuilder("a", model).tool(made).build().prompt("go").send_sync()
    assert seen == [response.run_id]
    assert "Extra inputs are not permitted" in tool_results(model.requests[2])[0].content


def test_tool_decorator_takes_a_partial_and_a_callable_object():
    import functools

    def search(query: str, limit: int) -> str:
        return f"{query}:{limit}"

    class Weather:
        def __call__(self, city: str) -> str:
            """The weather."""
            return f"sunny in {city}"

    class Slow:
        async def __call__(self, x: int) -> int:
            return x + 1

    search5 = tool(name="search5")(functools.partial(search, limit=5))
    weather = tool(Weather())
    slow = tool(name="slow")(Slow())
    assert list(search5.definition().parameters["properties"]) == ["query"]  # limit is bound
    assert weather.name == "Weather" and weather.description == "The weather."
    model = QueueModel(
        [
            ModelResponse(
                tool_calls=[
                    call("search5", {"query": "q"}, "c1").tool_calls[0],
                    call("Weather", {"city": "Oslo"}, "c2").tool_calls[0],
                    call("slow", {"x": 1}, "c3").tool_calls[0],
                ]
            ),
            "done",
        ]
    )
    AgentBuilder("a", model).tools([search5, weather, slow]).build().prompt("go").send_sync()
    assert [r.content for r in tool_results(model.requests[1])] == ["q:5", "sunny in Oslo", "2"]


def test_tool_decorator_refuses_what_the_model_could_never_call_when_made():
    with pytest.raises(TypeError, match="'_cursor' of page starts with an underscore"):

        @tool
        def page(_cursor: str = "start", size: int = 10) -> str:
            return _cursor

    with pytest.raises(ValueError, match=r"A lambda has no name .* @tool\(name=...\)"):
        tool(lambda city: city)
    assert tool(name="echo")(lambda city: city).name == "echo"


def test_arguments_that_are_not_json_are_told_in_json_s_own_words():
    model = QueueModel([call("add", '{"x": 1, "y": "tw'), "done"])
    AgentBuilder("a", model).tool(make_add_tool()).build().prompt("go").send_sync()
    assert tool_results(model.requests[1])[0].content.startswith(
        "Invalid arguments for tool add: not valid JSON (Unterminated string starting at: line 1 "
        "column 15 (char 14))."
    )


class QuotaExceeded(Exception):
    pass


@pytest.mark.parametrize("raised", [RuntimeError(), QuotaExceeded()])
def test_a_tool_failing_without_a_message_tells_the_model_what_failed(raised: Exception):
    """``raise RuntimeError()`` told the model "ToolCallError: " and nothing more."""

    def fail(args: AddInput, ctx: ToolContext) -> int:
        raise raised

    model = QueueModel([call("add", {"x": 1, "y": 2}), "done"])
    failing = create_tool(name="add", description="Add", input=AddInput, execute=fail)
    AgentBuilder("a", model).tool(failing).build().prompt("go").send_sync()
    result = tool_results(model.requests[1])[0]
    assert result.is_error and result.content == f"ToolCallError: {type(raised).__name__}"


@pytest.mark.parametrize("name", ["model_config", "model_dump", "model_validate"])
def test_tool_decorator_refuses_a_parameter_named_as_pydantic_s_own(name):
    # (model_config was taken as the input model's settings: the model never saw the parameter,
    # a call with it was refused, and the function got {'extra': 'forbid'} instead)
    source = f'def train({name}: dict, epochs: int) -> str:\n    """Train."""\n    return ""\n'
    scope: dict = {}
    exec(source, scope)
    with pytest.raises(TypeError, match=rf"'{name}' of train is a name pydantic keeps"):
        tool(scope["train"])


class Numbers(BaseModel):
    x: int


class Config(BaseModel):
    config: dict = Field(alias="model_config")
    epochs: int


def test_the_alias_the_refusal_suggests_gives_the_model_that_name():
    train = create_tool(
        name="train", description="Train.", input=Config, execute=lambda a, c: a.config
    )
    assert set(train.definition().parameters["properties"]) == {"model_config", "epochs"}
    model = QueueModel([call("train", {"model_config": {"lr": 0.1}, "epochs": 3}), "done"])
    AgentBuilder("a", model).tool(train).build().prompt("go").send_sync()
    assert [r.content for r in tool_results(model.requests[1])] == ['{"lr":0.1}']


async def _five() -> int:
    return 5


async def _returns_a_coroutine(args, ctx):
    return _five()  # (not awaited)


async def _yields(args, ctx):
    yield 1
    yield {"b": 2}


@pytest.mark.parametrize(
    ("execute", "told"),
    [
        (_returns_a_coroutine, "5"),
        (lambda args, ctx: _five(), "5"),
        (_yields, '[1,{"b":2}]'),
    ],
)
def test_a_coroutine_returned_is_awaited_and_an_async_generator_s_items_are_the_result(
    execute, told
):
    # (the model was told "<coroutine object ...>" or "<async_generator object ...>", a success)
    probe = create_tool(name="probe", description="Probe.", input=Numbers, execute=execute)
    model = QueueModel([call("probe", {"x": 1}), "done"])
    AgentBuilder("a", model).tool(probe).build().prompt("go").send_sync()
    assert [r.content for r in tool_results(model.requests[1])] == [told]


async def test_a_tool_called_outside_a_run_takes_its_arguments_as_a_dict_and_validates_them():
    """agent-tool.test.ts: "delegates tool calls to the wrapped agent" calls
    ``tool.call({prompt: "do work"})``: here that raised ``TypeError`` (no ``ctx``), then
    ``AttributeError`` (a dict is no input model), and unchecked arguments reached the tool."""
    from anvia_notebook import ToolArgumentsError

    add = make_add_tool()
    assert await add.call({"x": 1, "y": 2}) == "3"
    assert await add.call('{"x": 4, "y": 5}', None) == "9"
    with pytest.raises(ToolArgumentsError, match="Invalid arguments for tool add"):
        await add.call({"x": "one", "y": 2})
    assert add.calls == [(1, 2), (4, 5)]
    worker = AgentBuilder("worker", QueueModel(["done: do work"])).build()
    assert await worker.as_tool().call({"prompt": "do work"}) == "done: do work"


async def test_a_sub_agent_tool_called_directly_by_a_run_s_tool_runs_the_agent_alone():
    """``ctx`` left out inside a run (a tool delegating by calling another): it failed on
    ``ctx.internal_call_id``."""
    worker = AgentBuilder("worker", QueueModel(["done: sort"])).build().as_tool()

    @tool
    async def delegate(task: str) -> str:
        """Hand a task on."""
        return await worker.call({"prompt": task})

    lead = AgentBuilder("lead", QueueModel([call("delegate", {"task": "sort"}), "ok"]))
    response = await lead.tool(delegate).build().prompt("go").store(None).send()
    [result] = [r for m in response.messages if m.role == "tool" for r in m.tool_results]
    assert (result.content, result.is_error) == ("done: sort", False)


def test_a_tool_whose_input_is_pydantic_base_model_itself_is_refused_when_made():
    """It was accepted, and every run of an agent with it failed before calling the model."""
    with pytest.raises(TypeError, match="a pydantic model class of the tool's own"):
        create_tool(name="t", description="d", input=BaseModel, execute=lambda args: "x")

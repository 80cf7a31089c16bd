"""Options of ``AgentBuilder`` and of a request that a run could not use are refused where they
are set, with words naming the option.

Before, ``.approvals("yes")`` or ``.human_input("widget")`` were taken and failed only when an
approval was asked (``'str' object is not callable``), ``.hook(a_function)`` failed the run with
``'function' object has no attribute 'on_run_start'``, ``.max_turns("3")`` with a comparison
error, ``.temperature("hot")`` and ``.session(5)`` with pydantic errors about inner models, and
``agent.prompt(None)`` with ``'NoneType' object is not iterable``.
"""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from anvia_notebook import (
    AgentBuilder,
    CallbackHumanInput,
    ExtractorBuilder,
    Hook,
    StoreHumanInput,
    create_hook,
    create_parsed_completion,
)
from anvia_notebook.models import QueueModel

from helpers import make_add_tool


def builder() -> AgentBuilder:
    return AgentBuilder("a", QueueModel(["ok"])).tool(make_add_tool())


def request():
    return builder().build().prompt("go")


@pytest.mark.parametrize(
    ("apply", "error", "words"),
    [
        (lambda b: b.approvals("yes"), TypeError, "approvals() takes a function"),
        (lambda b: b.approvals(True), TypeError, "returns True, False or an ApprovalDecision"),
        (lambda b: b.human_input("widget"), TypeError, "human_input() takes a human input"),
        (
            lambda b: b.human_input(StoreHumanInput),
            TypeError,
            "not the class StoreHumanInput itself (make one: StoreHumanInput())",
        ),
        (lambda b: b.hook(lambda event: None), TypeError, "Hooks are made with create_hook"),
        (lambda b: b.hook({"on_tool_call": print}), TypeError, "or by subclassing Hook, not dict"),
        (lambda b: b.hook(Hook), TypeError, "not the class Hook itself (make one: Hook())"),
        (lambda b: b.default_max_turns("3"), TypeError, "max turns must be a whole number"),
        (lambda b: b.default_max_turns(2.5), TypeError, "not 2.5"),
        (lambda b: b.default_max_turns(-1), ValueError, "max turns must be zero or more"),
        (lambda b: b.temperature("hot"), TypeError, "temperature must be a number, not 'hot'."),
        (lambda b: b.temperature(-0.5), ValueError, "temperature must be zero or more"),
        (lambda b: b.temperature(float("nan")), ValueError, "temperature must be zero or more"),
        (lambda b: b.max_tokens(0), ValueError, "max_tokens must be one or more, not 0."),
        (lambda b: b.max_tokens("100"), TypeError, "max_tokens must be a whole number"),
        (lambda b: b.tools(make_add_tool()), TypeError, "for one tool, use .tool(...)"),
        (lambda b: b.name(5), TypeError, "An agent's name must be a text or None, not int."),
        (lambda b: b.description(["x"]), TypeError, "description must be a text or None"),
        (lambda b: b.instructions(5), TypeError, "instructions() takes a text or a list of"),
        (lambda b: b.instructions(None), TypeError, "not NoneType"),
        (lambda b: b.instructions(["ok", 1]), TypeError, "instruction block 2 is int"),
        (lambda b: b.instructions("\ud800"), ValueError, "is not valid text"),
        (lambda b: b.context(None), TypeError, "context() takes the document's text, not None"),
        (lambda b: b.context({"text": "x"}), TypeError, "not dict"),
        (lambda b: b.context("facts", id=3), TypeError, "A context document's id must be a"),
    ],
)
def test_a_builder_option_a_run_cannot_use_is_refused_where_it_is_set(apply, error, words):
    with pytest.raises(error) as raised:
        apply(builder())
    assert words in str(raised.value)


@pytest.mark.parametrize(
    ("apply", "error", "words"),
    [
        (lambda r: r.approvals(42), TypeError, "approvals() takes a function"),
        (lambda r: r.human_input(object()), TypeError, "human_input() takes a human input"),
        (lambda r: r.with_hook(print), TypeError, "Hooks are made with create_hook"),
        (lambda r: r.add_hook("on_tool_call"), TypeError, "Hooks are made with create_hook"),
        (lambda r: r.max_turns("3"), TypeError, "max turns must be a whole number"),
        (lambda r: r.session(5), TypeError, "A session id must be a text or None, not int."),
        (lambda r: r.session("s", ["x"]), TypeError, "metadata must be a dict or None, not list"),
    ],
)
def test_a_request_option_a_run_cannot_use_is_refused_where_it_is_set(apply, error, words):
    with pytest.raises(error) as raised:
        apply(request())
    assert words in str(raised.value)


@pytest.mark.parametrize("prompt", [None, 123, b"hi", {"role": "user", "content": "hi"}])
def test_a_prompt_of_another_kind_is_refused_naming_it(prompt):
    with pytest.raises(TypeError, match="takes a str, a Message or a list of Messages, not"):
        builder().build().prompt(prompt)


class AllCallbacks:
    """Not a Hook subclass, but with every callback a Hook has."""

    def __getattr__(self, name):
        if name.startswith("on_"):
            return lambda event: None
        raise AttributeError(name)


def test_what_a_run_can_use_is_still_taken():
    class Mine(Hook):
        pass

    agent = (
        AgentBuilder("a", QueueModel(["ok"]))
        .hook(create_hook(on_run_start=lambda event: None))
        .hook(Mine())
        .approvals(lambda request: True)
        .approvals(None)
        .human_input(CallbackHumanInput(approve=lambda request: True))
        .human_input(None)
        .temperature(0)
        .temperature(None)
        .max_tokens(256)
        .default_max_turns(0)
        .tools((make_add_tool(),))
        .name("Helper")
        .name(None)
        .description("Adds numbers")
        .instructions(("Be brief.", "  "))
        .instructions("Answer in English.")
        .context("Orders ship in 2 days.", id="shipping")
        .context("")
        .build()
    )
    response = (
        agent.prompt("go")
        .with_hook(Mine())
        .add_hook(AllCallbacks())
        .max_turns(3)
        .session("s-1", {"user": "ann"})
        .send_sync()
    )
    assert response.output == "ok"
    assert agent.instructions.startswith("Be brief.\n\nAnswer in English.\n\n<context id=")
    assert agent.description == "Adds numbers"


@pytest.mark.parametrize("message", [[], ()])
def test_a_steer_with_nothing_in_it_is_refused_not_reported_as_delivered(message):
    request = builder().build().prompt("go")
    with pytest.raises(ValueError, match="steer\\(\\) was given an empty list: nothing to send"):
        request.steer(message)
    run = builder().build().prompt("go").create_run()
    with pytest.raises(ValueError, match="nothing to send"):
        run.steer(message)


def test_a_steer_with_a_list_that_holds_something_else_names_it():
    with pytest.raises(TypeError, match="item 2 is str"):
        request().steer([__import__("anvia_notebook").Message.user("a"), "b"])


class _Pick(BaseModel):
    name: str


@pytest.mark.parametrize(
    ("value", "error", "words"),
    [
        (5, TypeError, "not int"),
        (["auto"], TypeError, "not list"),
        ("  ", ValueError, "needs a value"),
    ],
)
async def test_a_tool_choice_the_providers_cannot_read_is_refused_where_it_is_given(
    value, error, words
):
    """Before, ``tool_choice(5)`` was taken, and only a real provider refused it, at a run."""
    with pytest.raises(error, match=words):
        AgentBuilder("a", QueueModel([])).tool_choice(value)
    with pytest.raises(error, match=words):
        ExtractorBuilder(QueueModel([]), _Pick).tool_choice(value)
    with pytest.raises(error, match=words):
        await create_parsed_completion(QueueModel([]), "hi", _Pick, tool_choice=value)
    for good in ("auto", "required", "lookup", {"type": "auto"}, None):
        AgentBuilder("a", QueueModel([])).tool_choice(good)

"""What ``create_tool`` is given is checked where it is written, with words that name it.

Before, ``approval=True`` (or ``"always"``, a dict) was taken, and every call of the tool then
failed the run with ``'bool' object has no attribute 'required'``; ``execute=None`` and
``description=None`` failed only when a run used the tool, with a ``TypeError`` the model was told
of or a pydantic error about ``ToolDefinition``. An ``execute`` written to take only the
arguments (as Anvia's JavaScript tools may be) is called with them alone; before, the model was
told ``<lambda>() takes 1 positional argument but 2 were given``.
"""

from __future__ import annotations

import functools

import pytest
from pydantic import BaseModel

from anvia_notebook import AgentBuilder, create_tool
from anvia_notebook.models import QueueModel

from helpers import call


class Numbers(BaseModel):
    x: int


def _tool(**options):
    given = {"name": "t", "description": "Add one.", "input": Numbers, "execute": _add_one}
    return create_tool(**{**given, **options})


def _add_one(args, ctx):
    return args.x + 1


@pytest.mark.parametrize(
    ("options", "error", "words"),
    [
        ({"approval": True}, TypeError, "`approval` must be a ToolApproval or None, not bool"),
        ({"approval": "always"}, TypeError, "`approval` must be a ToolApproval or None, not str"),
        ({"approval": {"reason": "r"}}, TypeError, "not dict: approval=ToolApproval() asks"),
        ({"execute": None}, TypeError, "`execute` must be a function, not NoneType."),
        ({"execute": lambda: 1}, TypeError, "`execute` must take the arguments and the context"),
        ({"execute": lambda a, b, c: 1}, TypeError, "<lambda>(a, b, c) cannot be called so."),
        ({"description": None}, TypeError, "The description of tool 't' must be a text"),
        ({"name": 7}, TypeError, "A tool's name must be a text, not int."),
        ({"name": "  "}, ValueError, "A tool needs a non-empty name."),
        ({"idempotent": "yes"}, TypeError, "`idempotent` must be True or False, not 'yes'."),
    ],
)
def test_what_a_tool_cannot_use_is_refused_when_it_is_made(options, error, words):
    with pytest.raises(error) as raised:
        _tool(**options)
    assert words in str(raised.value)


def _only_args(args):
    return args.x + 1


async def _only_args_async(args):
    return args.x + 1


def _with_default_context(args, ctx=None):
    return args.x + 1


@pytest.mark.parametrize(
    "execute",
    [
        _only_args,
        _only_args_async,
        lambda args: args.x + 1,
        _with_default_context,
        functools.partial(lambda offset, args, ctx: args.x + offset, 1),
        functools.partial(lambda offset, args: args.x + offset, 1),
    ],
)
async def test_an_execute_of_the_arguments_alone_or_of_both_is_called_as_written(execute):
    model = QueueModel([call("t", {"x": 41}), "done"])
    response = (
        await AgentBuilder("a", model).tool(_tool(execute=execute)).build().prompt("go").send()
    )
    (part,) = model.requests[1].messages[-1].tool_results
    assert response.output == "done" and (part.content, part.is_error) == ("42", False)


async def test_a_callable_object_is_an_execute():
    class Adder:
        def __call__(self, args, ctx):
            return args.x + ctx.tool_name.count("t")

    model = QueueModel([call("t", {"x": 41}), "done"])
    await AgentBuilder("a", model).tool(_tool(execute=Adder())).build().prompt("go").send()
    assert model.requests[1].messages[-1].tool_results[0].content == "42"

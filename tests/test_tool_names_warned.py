"""A tool name OpenAI and Anthropic refuse is said at once, wherever the tool is made."""

from __future__ import annotations

import pytest

from anvia_notebook import AgentBuilder, create_question_tool
from anvia_notebook.models import FunctionModel

UNSENDABLE = "OpenAI and Anthropic take only letters, digits, _ and -"


def test_a_sub_agent_tool_named_after_an_agent_id_with_spaces_is_warned_about():
    """``as_tool()`` names the tool after the agent's id, which may hold spaces: the providers
    would refuse every request of the parent at its first model call, far from the cause (no
    warning was given, where ``create_tool`` gives one)."""
    analyst = AgentBuilder("data analyst", FunctionModel(lambda request: "7")).build()
    with pytest.warns(UserWarning, match=UNSENDABLE) as caught:
        analyst.as_tool()
    assert caught[0].filename == __file__  # told at the user's line, not inside the package
    with pytest.warns(UserWarning, match="'ask the analyst'"):
        analyst.as_tool(name="ask the analyst")


def test_a_question_tool_with_an_unsendable_name_is_warned_about():
    with pytest.warns(UserWarning, match=UNSENDABLE) as caught:
        create_question_tool(name="ask a person")
    assert caught[0].filename == __file__

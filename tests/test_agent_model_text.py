"""A model given by its name (``AgentBuilder("x", "gpt-4o-mini")``) is refused with a message
naming the model object to make instead."""

from __future__ import annotations

import pytest

from anvia_notebook import AgentBuilder


@pytest.mark.parametrize(
    ("text", "suggested"),
    [
        ("gpt-4o-mini", "OpenAIModel('gpt-4o-mini')"),
        ("openai:gpt-4o-mini", "OpenAIModel('gpt-4o-mini')"),
        ("anthropic:claude-sonnet-4-6", "AnthropicModel('claude-sonnet-4-6')"),
        ("claude-sonnet-4-6", "AnthropicModel('claude-sonnet-4-6')"),
    ],
)
def test_a_model_name_is_refused_with_the_object_to_make(text, suggested):
    with pytest.raises(TypeError) as caught:
        AgentBuilder("x", text)  # type: ignore[arg-type]
    message = str(caught.value)
    assert f"not the text {text!r}" in message
    assert suggested in message
    assert "from anvia_notebook import OpenAIModel, AnthropicModel" in message
    assert "DemoModel" in message and "stream(request)" not in message


def test_the_suggested_objects_exist_where_the_message_says():
    from anvia_notebook import AnthropicModel, OpenAIModel  # noqa: F401
    from anvia_notebook.models import DemoModel, QueueModel

    AgentBuilder("x", DemoModel()).build()
    AgentBuilder("x", QueueModel(["hi"])).build()


def test_another_object_without_stream_keeps_the_old_message():
    with pytest.raises(TypeError, match=r"`model` must have an async `stream\(request\)` method"):
        AgentBuilder("x", 42)  # type: ignore[arg-type]


def test_a_judge_given_a_model_name_names_the_object_to_make():
    """Before: "model must be a model (with a stream method)."."""
    from anvia_notebook import evals

    with pytest.raises(TypeError, match=r"llm_judge\(model, rubric\): .*OpenAIModel\('gpt-4o'\)"):
        evals.llm_judge("gpt-4o", "Is it right?")

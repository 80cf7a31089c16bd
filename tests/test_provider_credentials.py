"""A provider model used without its key: the error says which key to set, in the package's terms."""

from __future__ import annotations

import os

import pytest

from anvia_notebook.messages import Message
from anvia_notebook.models.anthropic import AnthropicModel
from anvia_notebook.models.base import CompletionRequest, ModelError


@pytest.fixture
def no_anthropic_credentials(monkeypatch, tmp_path):
    for name in list(os.environ):
        if name.startswith("ANTHROPIC_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path))  # no profile of the machine's user
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


async def test_anthropic_without_a_key_names_the_variable_to_set(no_anthropic_credentials):
    model = AnthropicModel("claude-sonnet-4-6")
    request = CompletionRequest(messages=[Message.user("hi")])
    with pytest.raises(ModelError, match="ANTHROPIC_API_KEY") as caught:
        async for _ in model.stream(request):
            pass
    assert "api_key=" in str(caught.value)
    assert caught.value.retryable is False
    assert isinstance(caught.value.__cause__, TypeError)  # the SDK's own error is kept


@pytest.fixture
def no_openai_key(monkeypatch):
    for name in list(os.environ):
        if name.startswith("OPENAI_"):
            monkeypatch.delenv(name)


async def test_openai_without_a_key_names_the_variable_to_set_at_the_first_request(no_openai_key):
    import openai

    from anvia_notebook.models.openai import OpenAIModel

    model = OpenAIModel("gpt-4o-mini")  # built as Anthropic's is: the key is asked for on use
    request = CompletionRequest(messages=[Message.user("hi")])
    with pytest.raises(ModelError, match="OPENAI_API_KEY") as caught:
        async for _ in model.stream(request):
            pass
    assert "api_key=" in str(caught.value)
    assert caught.value.retryable is False
    assert isinstance(caught.value.__cause__, openai.OpenAIError)  # the SDK's own error is kept


async def test_openai_without_a_key_fails_the_run_with_those_words_and_sends_nothing(
    no_openai_key, store_path
):
    from anvia_notebook import AgentBuilder
    from anvia_notebook.models.openai import OpenAIModel

    model = OpenAIModel("gpt-4o-mini")
    model.client = None  # anything sent would fail otherwise: nothing may be
    with pytest.raises(ModelError, match="OPENAI_API_KEY"):
        await AgentBuilder("helper", model).build().prompt("hi").send()


def test_openai_with_a_base_url_and_no_key_still_talks_to_a_local_server(no_openai_key):
    from anvia_notebook.models.openai import NO_API_KEY, OpenAIModel

    model = OpenAIModel("llama3", base_url="http://localhost:11434/v1")
    assert model.client.api_key == NO_API_KEY
    assert OpenAIModel("gpt-4o-mini", api_key="sk-test").client.api_key == "sk-test"


def test_a_model_is_shown_without_its_key_or_a_token_in_its_address():
    """A notebook keeps what it prints: a model's repr names the model and the server only."""
    from anvia_notebook.models.openai import OpenAIModel

    openai_model = OpenAIModel(
        "llama3", api_key="sk-K3y", base_url="https://me:Pa55@proxy.example/v1?api_key=T0ken"
    )
    shown = repr(openai_model) + repr(AnthropicModel("claude-sonnet-4-5", api_key="sk-ant-K3y"))
    assert not [secret for secret in ("K3y", "Pa55", "T0ken") if secret in shown], shown
    # (the SDK may add a slash after /v1: its versions differ)
    assert "base_url='https://me:***@proxy.example/v1" in shown, shown
    assert "?api_key=***'" in shown, shown


@pytest.mark.parametrize("make", ["openai", "anthropic"])
def test_a_model_name_or_key_that_is_not_a_text_is_refused_when_the_model_is_made(make):
    """Before, ``OpenAIModel(5)`` or ``api_key=5`` was taken, and only the first request failed
    (the provider refusing the body, or the SDK's own error about the key)."""
    from anvia_notebook.models.openai import OpenAIModel

    cls = OpenAIModel if make == "openai" else AnthropicModel
    name = cls.__name__
    with pytest.raises(TypeError, match=f"{name} takes the model's name as a text, e.g. "):
        cls(5)
    with pytest.raises(ValueError, match=f"{name} needs the model's name"):
        cls("  ")
    with pytest.raises(TypeError, match=f"{name}: api_key must be a text, not int") as raised:
        cls("some-model", api_key=12345)
    assert "12345" not in str(raised.value)  # (a key is never shown)

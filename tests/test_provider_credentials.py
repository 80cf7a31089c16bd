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

"""Completion retries: transient failures before the first streamed event are retried."""

from __future__ import annotations

import pytest

from anvia_notebook import AgentBuilder, create_hook
from anvia_notebook.models import ModelError, StreamingQueueModel, TextDelta
from anvia_notebook.retry import CompletionRetries, is_transient_error


def fast(request):
    return request.with_completion_retries(max_attempts=3, initial_delay=0, max_delay=0)


@pytest.mark.parametrize("status", [408, 409, 425, 429, 500, 503])
def test_transient_statuses_are_retried(status):
    model = StreamingQueueModel([[ModelError("busy", status_code=status)], [TextDelta(delta="ok")]])
    response = fast(AgentBuilder("a", model).build().prompt("go")).send_sync()
    assert response.output == "ok"
    assert len(model.requests) == 2


def test_permanent_errors_are_not_retried():
    model = StreamingQueueModel([[ModelError("bad", status_code=400)], [TextDelta(delta="ok")]])
    with pytest.raises(ModelError, match="bad"):
        fast(AgentBuilder("a", model).build().prompt("go")).send_sync()
    assert len(model.requests) == 1


def test_gives_up_after_max_attempts_and_reports_one_error():
    hook_calls = []
    model = StreamingQueueModel([[ModelError("rate", status_code=429)]] * 3)
    hook = create_hook(
        on_completion_call=lambda e: hook_calls.append("call"),
        on_completion_error=lambda e: hook_calls.append("error"),
    )
    with pytest.raises(ModelError, match="rate"):
        fast(AgentBuilder("a", model).hook(hook).build().prompt("go")).send_sync()
    assert len(model.requests) == 3
    assert hook_calls == ["call", "error"]


def test_no_retry_after_the_first_streamed_event():
    model = StreamingQueueModel(
        [
            [TextDelta(delta="partial"), ModelError("dropped", status_code=503)],
            [TextDelta(delta="ok")],
        ]
    )
    with pytest.raises(ModelError, match="dropped"):
        fast(AgentBuilder("a", model).build().prompt("go")).send_sync()
    assert len(model.requests) == 1


def test_custom_should_retry_and_connection_errors():
    model = StreamingQueueModel([[ConnectionResetError("reset")], [TextDelta(delta="ok")]])
    assert fast(AgentBuilder("a", model).build().prompt("go")).send_sync().output == "ok"
    model = StreamingQueueModel([[ModelError("bad", status_code=400)], [TextDelta(delta="ok")]])
    request = (
        AgentBuilder("a", model)
        .build()
        .prompt("go")
        .with_completion_retries(
            max_attempts=2, initial_delay=0, max_delay=0, should_retry=lambda ctx: ctx.attempt == 1
        )
    )
    assert request.send_sync().output == "ok"


def test_retry_options_are_validated_and_backoff_is_capped(monkeypatch):
    import random

    with pytest.raises(ValueError, match="positive integer"):
        CompletionRetries(max_attempts=0)
    with pytest.raises(ValueError, match="max_delay"):
        CompletionRetries(initial_delay=2, max_delay=1)
    retries = CompletionRetries(initial_delay=0.1, max_delay=0.3)
    monkeypatch.setattr(random, "random", lambda: 1.0)  # the jitter's top: the capped delays
    assert [retries.delay(n) for n in (1, 2, 3, 4)] == [0.1, 0.2, 0.3, 0.3]
    monkeypatch.setattr(random, "random", lambda: 0.25)
    assert [retries.delay(n) for n in (1, 2, 3, 4)] == pytest.approx([0.025, 0.05, 0.075, 0.075])
    assert is_transient_error(TimeoutError())
    assert not is_transient_error(ValueError())
    assert ModelError("x", status_code=503).status_code == 503

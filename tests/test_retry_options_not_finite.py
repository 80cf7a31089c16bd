"""Retry options that are not finite numbers are refused when the request is configured, as
Anvia v0 does (packages/core/src/request/retry.ts, ``assertDelay``: a delay must be finite,
``maxAttempts`` a safe integer; prompt-request.test.ts: "validates completion retry options
when configuring the request").

Before, ``initial_delay=float("nan")`` (or ``max_delay=float("nan")``, or an infinite initial
delay) was taken, and the first retry then slept forever: ``asyncio.sleep(nan)`` never returns,
so the run hung where Anvia refuses the options with a ``RangeError``. ``max_attempts=True``
was taken as one attempt.
"""

from __future__ import annotations

import asyncio
import math

import pytest

from anvia_notebook import AgentBuilder
from anvia_notebook.models import ModelError, QueueModel, StreamingQueueModel, TextDelta
from anvia_notebook.retry import CompletionRetries


@pytest.mark.parametrize(
    "options",
    [
        {"initial_delay": math.nan},
        {"max_delay": math.nan},
        {"initial_delay": math.nan, "max_delay": math.nan},
        {"initial_delay": math.inf, "max_delay": math.inf},
        {"max_delay": math.inf},
        {"max_attempts": True},
    ],
    ids=["nan-initial", "nan-max", "nan-both", "inf-both", "inf-max", "bool-attempts"],
)
def test_retry_options_that_are_not_finite_numbers_are_refused(options):
    request = AgentBuilder("test-agent", QueueModel(["unused"])).build().prompt("hello")
    with pytest.raises(ValueError, match=r"max_attempts|delay"):
        request.with_completion_retries(**options)
    with pytest.raises(ValueError, match=r"max_attempts|delay"):
        CompletionRetries(**options)


async def test_a_run_with_valid_retry_options_retries_and_ends():
    """The finite options still retry (and the wait ends)."""
    model = StreamingQueueModel([[ModelError("busy", status_code=503)], [TextDelta(delta="ready")]])
    request = (
        AgentBuilder("test-agent", model)
        .build()
        .prompt("hello")
        .store(None)
        .with_completion_retries(initial_delay=0, max_delay=0)
    )
    response = await asyncio.wait_for(request.send(), 30)
    assert response.output == "ready"
    assert len(model.requests) == 2


def test_the_wait_of_a_late_attempt_is_the_cap_not_an_overflow() -> None:
    """With many attempts (``should_retry`` saying yes each time), the 1,026th wait raised
    ``OverflowError``: the doubling went past what a float holds."""
    retries = CompletionRetries(max_attempts=5_000, initial_delay=0.1, max_delay=2.0)
    assert 0 <= retries.delay(1_500) <= 2.0


def test_max_retry_after_is_not_a_bool() -> None:
    with pytest.raises(ValueError, match="max_retry_after"):
        CompletionRetries(max_retry_after=True)

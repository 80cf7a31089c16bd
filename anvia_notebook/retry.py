"""Completion retries: transient provider failures are retried before the first streamed event."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["CompletionRetries", "RetryContext", "is_transient_error"]

RETRYABLE_STATUS_CODES = frozenset({408, 409, 425, 429})


@dataclass(frozen=True)
class RetryContext:
    error: BaseException
    attempt: int
    max_attempts: int
    turn: int


def is_transient_error(error: BaseException) -> bool:
    """Rate limits, timeouts, 5xx and connection failures are transient; the rest are not."""
    retryable = getattr(error, "retryable", None)
    if isinstance(retryable, bool):
        return retryable
    status = getattr(error, "status_code", None)
    if isinstance(status, int):
        return status in RETRYABLE_STATUS_CODES or status >= 500
    return isinstance(error, (ConnectionError, TimeoutError))


@dataclass(frozen=True)
class CompletionRetries:
    """How a failed completion is retried: attempts in all, exponential backoff with a cap."""

    max_attempts: int = 3
    initial_delay: float = 0.1
    max_delay: float = 1.0
    should_retry: Callable[[RetryContext], bool] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.max_attempts, int) or self.max_attempts < 1:
            raise ValueError("max_attempts must be a positive integer")
        if self.initial_delay < 0 or self.max_delay < 0:
            raise ValueError("retry delays must not be negative")
        if self.max_delay < self.initial_delay:
            raise ValueError("max_delay must be greater than or equal to initial_delay")

    def delay(self, attempt: int) -> float:
        return float(min(self.max_delay, self.initial_delay * (2 ** (attempt - 1))))

    def allows(self, context: RetryContext) -> bool:
        if context.attempt >= context.max_attempts:
            return False
        if self.should_retry is not None:
            return bool(self.should_retry(context))
        return is_transient_error(context.error)

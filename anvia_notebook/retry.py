"""Completion retries: transient provider failures are retried before the first streamed event."""

from __future__ import annotations

import asyncio
import contextvars
import errno
import math
import random
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass

__all__ = ["CompletionRetries", "RetryContext", "is_transient_error", "server_delay"]

RETRYABLE_STATUS_CODES = frozenset({408, 409, 425, 429})
#: Error class names that mean "the connection failed or timed out" (the SDKs' and HTTP
#: libraries' own classes, which are not subclasses of the built-in ``ConnectionError``).
RETRYABLE_ERROR_NAMES = frozenset(
    {"APIConnectionError", "APIConnectionTimeoutError", "APITimeoutError", "TransportError"}
)
#: A string ``code`` that means "try again", as Anvia lists them (Node's network codes, gRPC's
#: status names, undici's timeouts).
RETRYABLE_ERROR_CODES = frozenset(
    {
        "DEADLINE_EXCEEDED",
        "EAI_AGAIN",
        "ECONNREFUSED",
        "ECONNRESET",
        "EHOSTUNREACH",
        "ENETDOWN",
        "ENETUNREACH",
        "EPIPE",
        "ETIMEDOUT",
        "RESOURCE_EXHAUSTED",
        "UNAVAILABLE",
        "UND_ERR_CONNECT_TIMEOUT",
        "UND_ERR_HEADERS_TIMEOUT",
        "UND_ERR_SOCKET",
    }
)
#: A numeric ``code`` that is a gRPC status worth retrying: DEADLINE_EXCEEDED,
#: RESOURCE_EXHAUSTED, UNAVAILABLE.
RETRYABLE_GRPC_CODES = frozenset({4, 8, 14})
#: The same network failures as ``errno`` values of an ``OSError`` (not all of which are a
#: ``ConnectionError``: an unreachable host or network, a network that is down, a timeout).
RETRYABLE_ERRNOS = frozenset(
    {
        errno.ECONNREFUSED,
        errno.ECONNRESET,
        errno.EHOSTUNREACH,
        errno.ENETDOWN,
        errno.ENETUNREACH,
        errno.EPIPE,
        errno.ETIMEDOUT,
    }
)


@dataclass(frozen=True)
class RetryContext:
    error: BaseException
    attempt: int
    max_attempts: int
    turn: int


def error_chain(error: BaseException) -> Iterator[BaseException]:
    """``error``, then what caused it (``__cause__``, else ``__context__``), and so on."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _status(error: BaseException) -> int | None:
    """The HTTP status an error carries: ``status_code`` (the SDKs), ``status`` (aiohttp), or
    a numeric ``code`` from 100 to 599 (urllib's ``HTTPError``), as Anvia reads them."""
    status = _int(getattr(error, "status_code", None))
    if status is None:
        status = _int(getattr(error, "status", None))
    if status is not None:
        return status
    code = _int(getattr(error, "code", None))
    return code if code is not None and 100 <= code <= 599 else None


def _connection_failure(error: BaseException) -> bool:
    if getattr(error, "retryable", None) is True:
        return True
    if isinstance(error, (ConnectionError, TimeoutError)):
        return True
    if isinstance(error, OSError) and error.errno in RETRYABLE_ERRNOS:
        return True
    if isinstance(error, socket.gaierror) and error.errno == socket.EAI_AGAIN:
        return True
    code = getattr(error, "code", None)
    if isinstance(code, str) and code.upper() in RETRYABLE_ERROR_CODES:
        return True
    if _int(code) in RETRYABLE_GRPC_CODES:
        return True
    return any(cls.__name__ in RETRYABLE_ERROR_NAMES for cls in type(error).__mro__)


def is_transient_error(error: BaseException) -> bool:
    """Rate limits, timeouts, 5xx and connection failures are transient; the rest are not.

    As in Anvia the whole cause chain counts (``__cause__`` / ``__context__``): a cancellation
    anywhere in it is never retried; the first HTTP status found decides (408, 409, 425, 429 and
    5xx are retried; an error that says ``retryable`` with its status has the last word);
    otherwise a connection error or a timeout anywhere in the chain is retried (by class, by
    ``errno``, by a network or gRPC ``code``).
    """
    chain = list(error_chain(error))
    if any(isinstance(e, asyncio.CancelledError) for e in chain):
        return False
    for item in chain:
        status = _status(item)
        if status is not None:
            retryable = getattr(item, "retryable", None)
            if isinstance(retryable, bool):
                return retryable
            return status in RETRYABLE_STATUS_CODES or 500 <= status <= 599
    return any(_connection_failure(item) for item in chain)


def server_delay(error: BaseException) -> float | None:
    """The wait in seconds the server asked for before trying again (a ``retry_after`` in the
    cause chain: a :class:`~anvia_notebook.errors.ModelError`'s, from ``Retry-After``), or None."""
    for item in error_chain(error):
        value = getattr(item, "retry_after", None)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if math.isfinite(value) and value >= 0:
            return float(value)
    return None


@dataclass(frozen=True)
class CompletionRetries:
    """How a failed completion is retried: attempts in all, exponential backoff with a cap and
    full jitter (each wait is a random fraction of the capped delay, as in Anvia, so that many
    runs failing together do not all come back at the same moment).

    A server that says how long to wait (``Retry-After``, on a 429 or a 503) is waited for, up to
    ``max_retry_after`` seconds; one that asks for longer is not retried (the error says how long
    it asked for), unless ``should_retry`` says so, which then waits ``max_retry_after``."""

    max_attempts: int = 3
    initial_delay: float = 0.1
    max_delay: float = 1.0
    should_retry: Callable[[RetryContext], bool] | None = None
    max_retry_after: float = 60.0

    def __post_init__(self) -> None:
        if self.should_retry is not None and not callable(self.should_retry):
            raise TypeError(
                "should_retry must be a function of the retry context (returning True to retry), "
                f"not {self.should_retry!r}"
            )
        if (
            not isinstance(self.max_attempts, int)
            or isinstance(self.max_attempts, bool)
            or self.max_attempts < 1
        ):
            raise ValueError("max_attempts must be a positive integer")
        # As in Anvia, a delay must be a finite number: a NaN (or an infinite wait) would make
        # the first retry sleep forever.
        for name in ("initial_delay", "max_delay"):
            value = getattr(self, name)
            if isinstance(value, bool) or not math.isfinite(value):
                raise ValueError(f"{name} must be a finite number of seconds, not {value!r}")
        if isinstance(self.max_retry_after, bool):
            raise ValueError(
                f"max_retry_after must be a number of seconds, not {self.max_retry_after!r}"
            )
        if self.initial_delay < 0 or self.max_delay < 0 or not self.max_retry_after >= 0:
            raise ValueError("retry delays must not be negative")
        if self.max_delay < self.initial_delay:
            raise ValueError("max_delay must be greater than or equal to initial_delay")

    def delay(self, attempt: int, error: BaseException | None = None) -> float:
        """The wait before attempt ``attempt + 1``: up to ``initial_delay * 2**(attempt - 1)``,
        capped at ``max_delay``; at least what the server asked for with ``error`` (at most
        ``max_retry_after``)."""
        # (the exponent bounded: past 2**1023 a float overflows, for a long run of attempts)
        capped = min(self.max_delay, self.initial_delay * 2.0 ** min(attempt - 1, 1023))
        wait = float(random.random() * capped)
        asked = server_delay(error) if error is not None else None
        if asked is not None:
            wait = min(max(wait, asked), self.max_retry_after)
        return wait

    def allows(self, context: RetryContext) -> bool:
        if context.attempt >= context.max_attempts:
            return False
        if self.should_retry is not None:
            return bool(self.should_retry(context))
        asked = server_delay(context.error)
        if asked is not None and asked > self.max_retry_after:
            return False
        return is_transient_error(context.error)


@dataclass
class CallRetries:
    """Package-internal: the retry policy of the model call the run loop is making, and the
    call's turn, while the call is under way (``ended`` once it is: a task that code started
    during the call, and that outlives it, does not retry under it)."""

    retries: CompletionRetries
    turn: int
    ended: bool = False
    #: Told of each request within the call that failed and is to be tried again, before the
    #: wait (``False``) and when it is sent again, after it (``True``): the trace counts it
    #: among the call's attempts.
    retried: Callable[[BaseException, bool], None] | None = None


#: The :class:`CallRetries` of the model call under way, set while the model streams (None
#: outside a run, whose model calls are made once, and in each run's own task). A model that
#: sends a request of its own within the call (Anthropic continuing a paused answer) retries it
#: under the same policy with :func:`retry_within_call`.
CALL_RETRIES: contextvars.ContextVar[CallRetries | None] = contextvars.ContextVar(
    "anvia_call_retries", default=None
)


async def retry_within_call(error: BaseException, attempt: int) -> bool:
    """Whether a request a model sends within one model call, after its first (Anthropic's
    continuation of a paused answer), is tried again: it failed with ``error`` on its
    ``attempt``-th try (1, 2, ...) before streaming anything. It is, as the run loop tries the
    call's first request: the same policy, as many attempts, the same waits (True once the
    wait is over). Outside a run, never (nothing retries a model called directly)."""
    given = CALL_RETRIES.get()
    if given is None or given.ended:
        return False
    retries = given.retries
    if not retries.allows(RetryContext(error, attempt, retries.max_attempts, given.turn)):
        return False
    if given.retried is not None:
        given.retried(error, False)
    await asyncio.sleep(retries.delay(attempt, error))
    if given.retried is not None:  # (after the wait: a Stop during it sends nothing again)
        given.retried(error, True)
    return True

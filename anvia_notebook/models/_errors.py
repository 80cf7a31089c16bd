"""Provider SDK failures as :class:`ModelError`, shared by the OpenAI and Anthropic models.

Every SDK error reaches the caller as a ``ModelError`` raised *from* the SDK error (so
``__cause__`` keeps the original), with:

- ``status_code``: the HTTP status of the failed request; for an error sent as an event inside a
  stream that answered 200, the status its documented error type stands for (``overloaded_error``
  is 529, ``rate_limit_error`` 429, ...), or ``None`` when the type is unknown;
- ``retryable``: computed from the status (408, 409, 425, 429, 5xx), and ``True`` for connection
  errors and timeouts, which have no status.
"""

from __future__ import annotations

import sys

from .base import ModelError

__all__ = ["api_error", "connection_error", "missing_sdk", "transport_error_types"]

#: The HTTP status each documented error ``type`` stands for (Anthropic's error types, which its
#: streams also send as ``event: error``, and OpenAI's ``server_error``).
_STATUS_OF_ERROR_TYPE: dict[str, int] = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "server_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}


def missing_sdk(package: str) -> ImportError:
    """The ImportError to raise (from the original one) when a provider's SDK is not installed."""
    return ImportError(
        f"The {package!r} package is needed for this model; install it with "
        f'pip install "anvia_notebook[{package}]"',
        name=package,
    )


def transport_error_types() -> tuple[type[BaseException], ...]:
    """The network error classes of the HTTP libraries the SDKs use (already imported by them).

    Some SDKs let a connection dropped in the middle of a stream escape as the HTTP library's own
    error rather than their ``APIConnectionError``.
    """
    types: list[type[BaseException]] = []
    for name in ("httpx2", "httpx"):
        module = sys.modules.get(name)
        error_type = getattr(module, "TransportError", None)
        if isinstance(error_type, type) and issubclass(error_type, BaseException):
            types.append(error_type)
    return tuple(types)


def connection_error(provider: str, exc: BaseException) -> ModelError:
    """A connection error or timeout: no HTTP status, but worth retrying."""
    detail = str(exc) or type(exc).__name__
    return ModelError(f"{provider} connection error: {detail}", status_code=None, retryable=True)


def api_error(provider: str, exc: BaseException) -> ModelError:
    """An error the API answered with: an HTTP error status, or an error event in a stream."""
    body = getattr(exc, "body", None)
    error = _error_object(body)
    status = getattr(exc, "status_code", None)
    if not isinstance(status, int) or status < 400:
        error_type = error.get("type") if error else None
        status = _STATUS_OF_ERROR_TYPE.get(error_type) if isinstance(error_type, str) else None
    message = error.get("message") if error else None
    if not isinstance(message, str) or not message:
        message = str(getattr(exc, "message", None) or exc)
    prefix = f"{provider} API error" + (f" {status}" if status is not None else "")
    return ModelError(f"{prefix}: {message}", status_code=status)


def _error_object(body: object) -> dict[str, object] | None:
    """The ``{"type", "message", ...}`` object of an error body, nested under "error" or not."""
    if not isinstance(body, dict):
        return None
    inner = body.get("error")
    if isinstance(inner, dict):
        return inner
    return body

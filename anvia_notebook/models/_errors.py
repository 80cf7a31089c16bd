"""Provider SDK failures as :class:`ModelError`, shared by the OpenAI and Anthropic models.

Every SDK error reaches the caller as a ``ModelError`` raised *from* the SDK error (so
``__cause__`` keeps the original), with:

- ``status_code``: the HTTP status of the failed request; for an error sent as an event inside a
  stream that answered 200, the status its documented error type stands for (``overloaded_error``
  is 529, ``rate_limit_error`` 429, ...), else a numeric ``code`` such as vLLM sends, or ``None``;
- ``retryable``: computed from the status (408, 409, 425, 429, 5xx), and ``True`` for connection
  errors and timeouts, which have no status; a server's ``x-should-retry: true|false`` header
  (which both SDKs obey) has the last word, and OpenAI's ``insufficient_quota`` (a 429 that no
  wait mends: the account has no credit) is not retried;
- ``retry_after``: the wait the server asked for (``Retry-After``), in seconds, when it did.

The server's own words are kept, bounded: an error body that is plain text (not an error object)
is the message, and a web page (a proxy's or gateway's) is named by its title.
"""

from __future__ import annotations

import email.utils
import html
import json
import math
import re
import sys
import time

from .._util import shown_url
from .base import ModelError

__all__ = [
    "api_error",
    "connection_error",
    "ended_early",
    "missing_sdk",
    "refuse_json_answer",
    "transport_error_types",
    "unreadable_event",
]

#: How many characters of a server's error text a message keeps.
MAX_ERROR_TEXT = 500
#: A web page's title (looked for in the page's first characters only).
_TITLE = re.compile(r"<title[^>]{0,200}>([^<]{1,300})</title>", re.IGNORECASE)

#: The HTTP status each documented error ``type`` stands for (Anthropic's error types, which its
#: streams also send as ``event: error``, and OpenAI's ``server_error``, which OpenRouter's
#: in-stream errors give as their ``code``).
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
    """A connection error or timeout: no HTTP status, but worth retrying. An SDK's words that
    say nothing more ("Connection error.") are followed by the address and the first cause that
    says what happened ("[Errno 111] Connect call failed": a local server not running)."""
    detail = str(exc) or type(exc).__name__
    where = _address(exc)
    cause = _telling_cause(exc)
    if where and where not in detail:
        detail = f"{detail} ({where}{': ' + cause if cause and cause not in detail else ''})"
    elif cause and cause not in detail:
        detail = f"{detail} ({cause})"
    return ModelError(f"{provider} connection error: {detail}", status_code=None, retryable=True)


def _address(exc: BaseException) -> str | None:
    """The address the failed request went to (a password or token in it: ``***``)."""
    try:
        url = exc.request.url  # type: ignore[attr-defined]
    except Exception:
        return None
    return shown_url(str(url)) if url else None


def _telling_cause(exc: BaseException) -> str | None:
    """The deepest cause of ``exc`` (a few links down) whose words are its own, bounded."""
    found, seen, current = None, 0, exc.__cause__ or exc.__context__
    while current is not None and seen < 8:
        words = str(current).strip()
        if words and words != str(exc).strip():
            found = words
        seen += 1
        current = current.__cause__ or current.__context__
    return _bounded(found) if found else None


def api_error(provider: str, exc: BaseException) -> ModelError:
    """An error the API answered with: an HTTP error status, or an error event in a stream."""
    body = getattr(exc, "body", None)
    error = _error_object(body)
    status = getattr(exc, "status_code", None)
    if not isinstance(status, int) or status < 400:
        error_type = error.get("type") if error else None
        code = error.get("code") if error else None
        if not isinstance(error_type, str) and isinstance(code, str):
            error_type = code  # (OpenRouter's in-stream errors: a code such as "server_error")
        status = _STATUS_OF_ERROR_TYPE.get(error_type) if isinstance(error_type, str) else None
        if isinstance(code, str) and code.isascii() and code.isdigit():
            code = int(code)  # (a gateway's status as a text, "502")
        if status is None and type(code) is int and 400 <= code <= 599:
            status = code  # (vLLM's: the status it would have sent)
    message = error.get("message") if error else None
    if isinstance(message, str) and message.strip():
        message = _bounded(message)
    elif isinstance(body, str) and body.strip():
        message = _body_text(body)
    else:
        message = _bounded(str(getattr(exc, "message", None) or exc))
    wait = _retry_after(getattr(exc, "response", None))
    if wait is not None:
        message += f" (the server asks to wait {_seconds(wait)} before trying again)"
    prefix = f"{provider} API error" + (f" {status}" if status is not None else "")
    retryable = _server_says_retry(getattr(exc, "response", None))
    if retryable is None and error is not None and error.get("code") == "insufficient_quota":
        retryable = False
    return ModelError(
        f"{prefix}: {message}", status_code=status, retry_after=wait, retryable=retryable
    )


def _server_says_retry(response: object) -> bool | None:
    """What the response's ``x-should-retry`` header says (True, False), or None: no header."""
    headers = getattr(response, "headers", None)
    get = getattr(headers, "get", None)
    value = get("x-should-retry") if get is not None else None
    if not isinstance(value, str):
        return None
    return {"true": True, "false": False}.get(value.strip().lower())


def unreadable_event(provider: str, exc: ValueError) -> ModelError:
    """A stream event that is not JSON, or not UTF-8 text (a proxy that cut or rewrote the
    stream): worth retrying, as a dropped connection is."""
    what = "UTF-8 text" if isinstance(exc, UnicodeDecodeError) else "JSON"
    return ModelError(
        f"{provider} sent a stream event that is not valid {what} ({_bounded(str(exc))}); "
        "the answer was cut short.",
        status_code=None,
        retryable=True,
    )


async def refuse_json_answer(provider: str, stream: object) -> None:
    """Raise a ``ModelError`` when a streamed request was answered with JSON, with status 200:
    a gateway's error (its message, worth retrying), or a server that does not stream, which
    sent the whole answer (asked again, it would answer, and charge for, the same again); or
    with a web page (a proxy's login page), named by its title."""
    response = getattr(stream, "response", None)
    headers = getattr(response, "headers", None)
    kind = str(getattr(headers, "get", lambda _name: None)("content-type") or "")
    kind = kind.split(";")[0].strip().lower()
    if kind == "text/html":
        # A proxy's or a captive portal's page (asked again, the same), named by its title. An
        # event stream a server labels so, read whole here, is then parsed as it is: it starts
        # with its events' fields (``data:``), a page with its markup.
        page = (await response.aread()).decode("utf-8", "replace")  # type: ignore[union-attr]
        start = page.lstrip()
        if not start or start.startswith("<"):
            raise ModelError(
                f"{provider} stream cut short: "
                f"{_body_text(page) if start else 'the server answered with an empty web page'}.",
                status_code=None,
                retryable=False,
            )
        return
    if kind != "application/json" and not kind.endswith("+json"):
        return
    body = await response.aread()  # type: ignore[union-attr]
    try:
        parsed = json.loads(body)
    except ValueError:
        parsed = None
    error = _error_object(parsed) if isinstance(parsed, dict) and "error" in parsed else None
    message = error.get("message") if error else None
    if isinstance(message, str) and message.strip():
        raise ModelError(
            f"{provider} API error: {_bounded(message)}", status_code=None, retryable=True
        )
    raise ModelError(
        f"{provider} stream cut short: the server answered with {kind}, not a stream of events "
        "(it does not stream its answers, which this model needs).",
        status_code=None,
        retryable=False,
    )


def ended_early(provider: str, last_event: str, any_event: bool) -> ModelError:
    """A stream that ended before the event saying the answer is complete (``last_event``):
    what came is not the whole answer (a tool call in it may be cut too). Worth retrying."""
    if not any_event:
        what = "the server sent no stream events (does it stream its answers?)"
    else:
        what = f"it ended before {last_event} came; the answer so far is incomplete"
    return ModelError(f"{provider} stream cut short: {what}.", status_code=None, retryable=True)


def _error_object(body: object) -> dict[str, object] | None:
    """The ``{"type", "message", ...}`` object of an error body, nested under "error" or not."""
    if not isinstance(body, dict):
        return None
    inner = body.get("error")
    if isinstance(inner, dict):
        return inner
    return body


def _body_text(body: str) -> str:
    """An error body that is not JSON, as a message: a web page by its title, text bounded."""
    head = body[:4000]
    lowered = head.lower()
    if "<html" in lowered or "<!doctype" in lowered or "<body" in lowered:
        match = _TITLE.search(head)
        title = " ".join(html.unescape(match.group(1)).split()) if match else ""
        named = f" ({_bounded(json.dumps(title, ensure_ascii=False))})" if title else ""
        return f"the server answered with a web page{named}, not an API error (from a proxy?)"
    return _bounded(" ".join(body.split()))


def _bounded(text: str) -> str:
    return text if len(text) <= MAX_ERROR_TEXT else f"{text[:MAX_ERROR_TEXT]}..."


def _retry_after(response: object) -> float | None:
    """The wait in seconds a response's ``Retry-After`` header (or ``retry-after-ms``, which
    OpenAI and Anthropic send) asks for: a number of seconds, or an HTTP date."""
    headers = getattr(response, "headers", None)
    get = getattr(headers, "get", None)
    if get is None:
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = get(name)
        if not isinstance(value, str) or not value.strip():
            continue
        try:
            seconds = float(value) * scale
        except ValueError:
            if scale != 1.0:
                continue
            try:
                when = email.utils.parsedate_to_datetime(value)
            except (TypeError, ValueError, IndexError):
                continue
            if when.tzinfo is None:
                continue
            seconds = when.timestamp() - time.time()
        if math.isfinite(seconds):
            return max(0.0, seconds)
    return None


def _seconds(wait: float) -> str:
    return f"{wait:.3g} s" if wait < 10 else f"{round(wait)} s"

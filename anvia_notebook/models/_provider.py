"""What the provider models (OpenAI's, Anthropic's) share: importing the SDK when a model is
built, the SDK's errors as :class:`~anvia_notebook.models.base.ModelError`, and a tool call
whose arguments are still streaming."""

from __future__ import annotations

import asyncio
import difflib
import importlib
import inspect
import json
import threading
from collections.abc import AsyncGenerator, Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

from ._errors import (
    api_error,
    connection_error,
    missing_sdk,
    transport_error_types,
    unreadable_event,
)
from .base import ModelError, ToolCall

__all__ = [
    "LoopClients",
    "PendingCall",
    "check_options",
    "not_json",
    "provider_errors",
    "provider_sdk",
]


def provider_sdk(
    package: str, model_class: str, reserved: frozenset[str], request_options: Mapping[str, Any]
) -> Any:
    """The provider's SDK module, imported now (an ImportError with the install hint when it is
    missing), once ``request_options`` are known to leave alone the arguments ``model_class``
    sets itself (``reserved``: a ``TypeError`` names them)."""
    try:
        sdk = importlib.import_module(package)
    except ImportError as exc:
        raise missing_sdk(package) from exc
    taken = reserved.intersection(request_options)
    if taken:
        raise TypeError(f"{model_class} sets {', '.join(sorted(taken))} itself")
    return sdk


def check_options(
    model_class: str, create: Any, request_options: Mapping[str, Any], *, also: frozenset[str]
) -> None:
    """Refuse, where the model is made, an option the SDK's ``create`` does not take (a typo,
    ``temprature``), which it would refuse only at the first request with a bare
    ``TypeError``. ``also``: options the model takes itself. A ``create`` whose parameters
    cannot be read, or that takes any keyword (a test double), is not checked."""
    try:
        parameters = inspect.signature(create).parameters
    except (TypeError, ValueError):
        return
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return
    unknown = [name for name in request_options if name not in parameters and name not in also]
    if not unknown:
        return
    name = unknown[0]
    known = [known for known in [*parameters, *also] if not known.startswith("_")]
    close = difflib.get_close_matches(name, known, n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    raise TypeError(
        f"{model_class} has no option {name!r}{hint}. An option the API takes that this SDK "
        f"version does not know can be sent in extra_body={{{name!r}: ...}}."
    )


def check_settings(model_class: str, model: Any, api_key: Any, example: str) -> None:
    """Refuse, where the model is made, a name that is not a text (or is blank) and an API key
    that is not a text (the key itself is never shown): the provider would refuse them only at
    the first request."""
    if not isinstance(model, str):
        raise TypeError(
            f"{model_class} takes the model's name as a text, e.g. {model_class}({example!r}), "
            f"not {type(model).__name__}."
        )
    if not model.strip():
        raise ValueError(f"{model_class} needs the model's name, e.g. {model_class}({example!r}).")
    if api_key is not None and not isinstance(api_key, str):
        raise TypeError(f"{model_class}: api_key must be a text, not {type(api_key).__name__}.")


@contextmanager
def provider_errors(provider: str, sdk: Any) -> Iterator[None]:
    """The SDK's errors met in the block (and a transport error that escapes the SDK) raised as
    ``ModelError``, from the original: a connection error or timeout as retryable, an error
    the API answered with carrying its HTTP status, a stream event that is not JSON as
    retryable."""
    try:
        yield
    except sdk.APIConnectionError as exc:
        raise connection_error(provider, exc) from exc
    except sdk.APIError as exc:
        raise api_error(provider, exc) from exc
    except transport_error_types() as exc:
        raise connection_error(provider, exc) from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:  # (each event's data: UTF-8 JSON)
        raise unreadable_event(provider, exc) from exc
    except RuntimeError as exc:
        if str(exc) != "Event loop is closed":
            raise
        # A kept-alive connection of a client given to the model, opened on an event loop
        # that has closed (an earlier asyncio.run() or send_sync()): dropped, so trying again
        # opens a new one.
        raise ModelError(
            f"{provider} connection error: the client's kept-alive connection belongs to an "
            "event loop that has closed (a client given to the model is used as it is: one "
            "made per event loop avoids this).",
            status_code=None,
            retryable=True,
        ) from exc


@contextmanager
def whole_answer_kept(sdk: Any, finished: Callable[[], bool]) -> Iterator[None]:
    """A connection lost after the answer's end came (its finish reason or stop reason; a
    proxy that resets the connection instead of ending the stream) ends the stream there: the
    answer is whole, only what follows it (usage, the end marker) is lost."""
    try:
        yield
    except (sdk.APIConnectionError, *transport_error_types()):
        if not finished():
            raise


def not_json(constant: str) -> Any:
    """Refuse NaN and Infinity, which Python's JSON reads and JSON has not (``parse_constant``
    of a call's arguments sent back)."""
    raise ValueError(f"{constant} is not JSON")


@dataclass
class PendingCall:
    """A tool call being streamed: its id, name and the argument fragments so far."""

    id: str
    name: str
    arguments: list[str] = field(default_factory=list)

    def complete(self) -> ToolCall:
        """The whole call (``{}`` when no argument text came)."""
        return ToolCall(id=self.id, name=self.name, arguments="".join(self.arguments) or "{}")


class LoopClients:
    """The SDK client a model built itself, one for each event loop the model streams on.

    A client's connection pool belongs to the event loop its connections were opened on: on
    another one (each ``send_sync()`` of a script runs its own, and so does each
    ``asyncio.run()``) a kept-alive connection fails ("Event loop is closed"). The first loop
    uses the model's ``client``; each other loop gets a new client from ``build``. Each client is
    closed on its own loop when that loop shuts down (``asyncio.run()`` and ``send_sync()`` do,
    as the loop's async generators are closed), so its connections end there; a loop closed
    without that leaves them open. Those of loops that have closed are let go. Each of them,
    the model's own ``client`` too, has an HTTP client of its own, the SDK's
    ``DefaultAsyncHttpxClient``, which does not close itself when collected: the one the SDK
    makes by default does, on whatever loop runs then, which fails for connections of a closed
    loop ("Task exception was never retrieved: Event loop is closed" in the log). A client
    given to the model, or set on it later, is used as it is (and never closed)."""

    def __init__(self, built: Any, build: Callable[[], Any] | None) -> None:
        #: The client the model built (None: it was given one).
        self.built = built if build is not None else None
        self._build = build
        #: Each loop's client, with what closes it when the loop shuts down.
        self._clients: dict[asyncio.AbstractEventLoop, tuple[Any, AsyncGenerator[None, None]]]
        self._clients = {}
        self._first_taken = False
        self._lock = threading.Lock()  # (loops of several threads may ask at once)

    async def on_this_loop(self, client: Any) -> Any:
        """The client to use on the running loop, ``client`` being the model's ``client``."""
        if client is not self.built or self._build is None:
            return client
        loop = asyncio.get_running_loop()
        found = self._clients.get(loop)
        if found is not None:
            return found[0]
        with self._lock:
            for old in list(self._clients):
                if old.is_closed():
                    del self._clients[old]
            built = client if not self._first_taken else self._build()
            self._first_taken = True
            closer = _closed_with_its_loop(built)
            self._clients[loop] = (built, closer)
        # (it runs to its yield at once: the loop now knows it, and closes it when it shuts down)
        await closer.asend(None)
        return built


async def _closed_with_its_loop(client: Any) -> AsyncGenerator[None, None]:
    """Waits at its ``yield`` until the event loop it began on closes its async generators as
    it shuts down (or until it is collected while that loop runs), then closes ``client`` there,
    while the loop can still end the client's connections."""
    try:
        yield
    finally:
        with suppress(Exception):  # (nothing to do about it as the loop ends)
            await client.close()

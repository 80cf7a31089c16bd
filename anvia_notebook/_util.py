"""Small internal helpers shared by the runtime modules."""

from __future__ import annotations

import contextlib
import inspect
import json
import math
import os
import re
import unicodedata
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import asyncio


async def maybe_await(value: Any) -> Any:
    """Await ``value`` when it is awaitable; return it unchanged otherwise."""
    if inspect.isawaitable(value):
        return await value
    return value


def running_loop() -> asyncio.AbstractEventLoop | None:
    """The event loop running in this thread, or None."""
    import asyncio  # here: the steer command imports this module and not asyncio

    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def cancelled_from_outside() -> bool:
    """Whether the running task was asked to stop (a ``CancelledError`` that code it runs raised
    on its own, such as a tool or a metric, is that code's failure). Before Python 3.11 a task
    cannot tell: it was asked."""
    import asyncio

    cancelling = getattr(asyncio.current_task(), "cancelling", None)
    return cancelling is None or cancelling() > 0


def new_id(prefix: str) -> str:
    """``prefix`` and 20 random hex digits (80 random bits, as ``uuid4().hex[:20]`` had)."""
    return f"{prefix}_{os.urandom(10).hex()}"


def blank(text: str) -> bool:
    """Whether ``text`` shows nothing: only blanks and invisible format characters (a
    zero-width space, a word joiner, a byte order mark), which ``str.strip`` keeps."""
    return all(char.isspace() or unicodedata.category(char) == "Cf" for char in text)


def check_steering_text(text: str) -> None:
    """Refuse a blank steering message, or one that is not valid text (the rules its text
    follows, wherever it is sent)."""
    if blank(text):
        raise ValueError("A steering message needs some text; this one is empty.")
    check_valid_text(text, "The steering message")


def check_valid_text(text: str, what: str) -> None:
    """Refuse ``text`` that is not valid Unicode (a lone surrogate such as ``\\ud800``, from a
    bad paste or JSON's ``"\\ud800"``): no store can keep it, so the run would go on unstored."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        code = f"\\u{ord(text[error.start]):04x}"
        raise ValueError(
            f"{what} is not valid text: it holds {code} at position {error.start}, which is "
            "not a character (half of a surrogate pair, or a byte that was not UTF-8) and "
            "cannot be stored."
        ) from None


_SURROGATE = re.compile("[\ud800-\udfff]")


def valid_text(text: str) -> str:
    """``text`` with each lone surrogate (``\\ud800``: half of a pair, or a byte that was not
    UTF-8 read with ``surrogateescape``) replaced by U+FFFD, one character for one; ``text``
    itself when it has none. No store, file or page can keep such a character."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text


def paired_text(text: str) -> str:
    """``text`` with each pair of UTF-16 halves in it (``"\\ud83d\\ude00"``, as JSON escapes
    an emoji, decoded apart) made the one character they are, and each lone half U+FFFD."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


class StreamedHalves:
    """Joins a character past U+FFFF (an emoji) whose two UTF-16 halves a model's stream sent in
    two deltas (JSON's ``"\\ud83d"``, then ``"\\ude00"``: two lone surrogates once decoded, each
    U+FFFD alone). A delta ending in a first half keeps it back until the next delta of its kind;
    :meth:`rest` gives, per kind, what a stream left unpaired at its end (as U+FFFD)."""

    def __init__(self) -> None:
        self.held: dict[str, str] = {}  # kind -> a first half waiting for its second

    def text(self, kind: str, delta: str) -> str:
        """``delta`` as valid text, joined to the half held back for ``kind``; may be empty."""
        held = self.held.pop(kind, None)
        if held is not None:
            delta = held + delta
        if delta and "\ud800" <= delta[-1] <= "\udbff":
            self.held[kind], delta = delta[-1], delta[:-1]
        return paired_text(delta)

    def rest(self) -> dict[str, str]:
        """The halves still held back (none came to pair them), each as U+FFFD; then none."""
        rest = dict.fromkeys(self.held, "\ufffd")
        self.held.clear()
        return rest


def valid_data(value: Any) -> Any:
    """``value`` (a string, or JSON-like data: dicts, lists, pydantic models) with
    :func:`valid_text` applied to every string in it; ``value`` itself when it has none."""
    if isinstance(value, str):
        return valid_text(value)
    if isinstance(value, dict):
        return {valid_data(key): valid_data(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(valid_data(item) for item in value)
    if hasattr(type(value), "model_fields") and hasattr(value, "model_copy"):  # pydantic
        return value.model_copy(update={k: valid_data(v) for k, v in vars(value).items()})
    return value


def compact_json(value: Any) -> str:
    """JSON text as Anvia writes it (``JSON.stringify``): no spaces, non-ASCII kept."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def compact_arguments(raw: str) -> str:
    """A tool call's argument text in compact form (``{"x":2,"y":5}``), as Anvia hands it to
    hooks and tools; blank text is ``{}``, and text that is not JSON is kept as it is."""
    if not raw.strip():
        return "{}"
    try:
        return compact_json(json.loads(raw))
    except (ValueError, RecursionError):
        return raw


#: How deeply a tool call's arguments may nest (objects and lists in one another): deeper ones
#: are refused (no tool takes them; a run could not store, trace or show them).
MAX_ARGUMENT_DEPTH = 100


def too_deep(value: Any, limit: int = MAX_ARGUMENT_DEPTH) -> bool:
    """Whether ``value`` nests objects and lists more than ``limit`` levels deep."""
    level: list[Any] = [value]
    for _ in range(limit + 1):
        level = [
            item
            for node in level
            if isinstance(node, (dict, list, tuple))
            for item in (node.values() if isinstance(node, dict) else node)
        ]
        if not level:
            return False
    return True


def decode_args(arguments: Any) -> Any:
    """A tool call's arguments as data: JSON text decoded, anything else (invalid JSON, NaN or
    Infinity included, and JSON nested more than :data:`MAX_ARGUMENT_DEPTH` levels deep, as the
    run refuses them) kept."""
    if not isinstance(arguments, str):
        if not too_deep(arguments):
            return arguments
        try:  # (as text, as the model would have sent it)
            return json.dumps(arguments, ensure_ascii=False)
        except (TypeError, ValueError, RecursionError):
            return f"(arguments nested more than {MAX_ARGUMENT_DEPTH} levels deep)"
    if not arguments.strip():
        return {}
    try:
        decoded = json.loads(arguments, parse_constant=not_a_json_number)
    except (ValueError, RecursionError):
        return arguments
    return arguments if too_deep(decoded) else decoded


def not_a_json_number(name: str) -> Any:
    """``NaN``, ``Infinity``: Python reads them, JSON (and Anvia, with ``JSON.parse``) does not;
    a person approving the call would be shown them as ``null``."""
    raise ValueError(f"{name} is not a JSON number")


def normalize_result(value: Any) -> str:
    """A tool's return value as the text the model sees.

    A pydantic model is serialised to JSON, a ``str`` is kept, anything else goes through
    compact JSON as Anvia writes it (numpy and pandas data as plain lists, numbers and records,
    see :func:`_plain_data`; NaN and infinities as ``null``, as ``JSON.stringify`` writes
    them; models, dates or sets inside as pydantic writes them; falling back to ``str``).
    """
    if isinstance(value, str):
        return value
    from pydantic import BaseModel  # (here: the command line imports this module, not pydantic)

    if isinstance(value, BaseModel):
        return value.model_dump_json()
    with contextlib.suppress(TypeError, ValueError, RecursionError):  # (a look-alike's methods)
        value = _plain_data(value)
    try:
        return compact_json(value)
    except (TypeError, ValueError):
        pass
    from pydantic_core import to_jsonable_python

    try:  # models, dates, sets... inside: as pydantic writes them (JSON.stringify's way)
        return compact_json(_plain_data(to_jsonable_python(value)))
    except (TypeError, ValueError, RecursionError):  # (its serialization error is a ValueError)
        return str(value)


def _plain_data(value: Any) -> Any:
    """``value`` with the numpy and pandas data in it (at any depth in dicts, lists, tuples and
    sets) as plain Python data, told apart by their methods so that neither is imported: a
    DataFrame as its list of records, a Series as a dict, an array as a list, a numpy number as
    a Python one; NaN, infinities and pandas' missing values (``NA``, ``NaT``) as ``None``.
    Anything else (dates, models...) is kept for the JSON writers."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if value is None or isinstance(value, (str, int)):
        return value
    if type(value).__name__ in ("NAType", "NaTType"):  # pandas' missing values
        return None
    if isinstance(value, Mapping):
        return {_plain_key(key): _plain_data(item) for key, item in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_plain_data(item) for item in value]
    if hasattr(value, "to_dict") and hasattr(value, "columns"):  # a pandas DataFrame
        return _plain_data(value.to_dict(orient="records"))
    if hasattr(value, "to_dict") and hasattr(value, "dtype"):  # a pandas Series
        return _plain_data(value.to_dict())
    if hasattr(value, "tolist") and hasattr(value, "dtype"):  # a numpy array or number
        return _plain_data(value.tolist())
    return value


def _plain_key(key: Any) -> Any:
    """A dict key as :func:`_plain_data` writes it: a numpy number as a Python one."""
    return key.item() if hasattr(key, "item") and hasattr(key, "dtype") else key


def cli_command(store: str | None = None) -> str:
    """How to run the command line (``python -m anvia_notebook``) as written in a terminal: this
    interpreter's own path (quoted for a shell), and ``--store`` when a store is named."""
    import shlex
    import sys

    command = f"{shlex.quote(sys.executable or 'python')} -m anvia_notebook"
    return f"{command} --store {shlex.quote(store)}" if store else command


#: Parts of a query parameter's name that say its value is a secret (``password``,
#: ``sslpassword``, ``api_key``, ``access_token``, ``sig``...).
_SECRET_NAMES = re.compile(r"pass|token|secret|key|auth|sig|cred|session|code", re.IGNORECASE)


def _url_parts(url: str) -> Any:
    """``urlsplit(url)``, its credentials read up to the address's last ``@``: a password
    written with ``/``, ``?`` or ``#`` in it, not percent-encoded, ended the host part there
    (and was then shown whole, as a path or a query)."""
    from urllib.parse import quote, urlsplit

    parts = urlsplit(url)
    start = f"{parts.scheme}://"  # (urlsplit writes the scheme in lower case: PostgreSQL://)
    if url[: len(start)].lower() == start and "@" in url[len(start) + len(parts.netloc) :]:
        credentials, _, after = url[len(start) :].rpartition("@")
        if ":" in credentials:  # (a password: an @ in a query's value leaves the rest alone)
            parts = urlsplit(f"{start}{quote(credentials, safe=':')}@{after}")
    return parts


def shown_url(url: str) -> str:
    """``url`` as a message may show it: a password before the host and the values of query
    parameters named like secrets (the name may be percent-encoded) become ``***``."""
    from urllib.parse import unquote_plus

    try:
        parts = _url_parts(url)
    except ValueError:  # (an address that cannot be read: its scheme alone)
        return url.split("://", 1)[0] + "://..."
    credentials, at, hosts = parts.netloc.rpartition("@")
    user, colon, _ = credentials.partition(":")
    netloc = f"{user}{':***' if colon else ''}@{hosts}" if at else hosts
    query = "&".join(
        f"{pair.split('=', 1)[0]}=***"
        if _SECRET_NAMES.search(unquote_plus(pair.split("=", 1)[0]))
        else pair
        for pair in parts.query.split("&")
        if pair
    )
    return f"{parts.scheme}://{netloc}{parts.path}" + (f"?{query}" if query else "")


#: The settings of a PostgreSQL address that hold a password (libpq's); the others, paths and
#: modes, are no secret and stay in a command the command line suggests.
_PASSWORD_SETTINGS = frozenset({"password", "sslpassword"})


def url_for_commands(url: str) -> tuple[str, bool]:
    """``url`` as a command the command line suggests may write it: without its password (a
    ``***`` there would be sent as the password, and outweigh ``PGPASSWORD``), and whether it
    held one (then the reader is told to give it as ``PGPASSWORD``)."""
    from urllib.parse import unquote_plus

    try:
        parts = _url_parts(url)
    except ValueError:
        return shown_url(url), False
    credentials, at, hosts = parts.netloc.rpartition("@")
    user, colon, _ = credentials.partition(":")
    pairs = [pair for pair in parts.query.split("&") if pair]
    kept = [p for p in pairs if unquote_plus(p.split("=", 1)[0]).lower() not in _PASSWORD_SETTINGS]
    netloc = f"{user}@{hosts}" if at else hosts
    query = "&".join(kept)
    written = f"{parts.scheme}://{netloc}{parts.path}" + (f"?{query}" if query else "")
    return written, bool(colon) or len(kept) < len(pairs)


#: A request option's name that says its value is a credential (``api_key``, ``password``,
#: ``Ocp-Apim-Subscription-Key``, ``Authorization``, ``access_token``; not ``max_tokens``).
_SECRET_OPTION = re.compile(
    r"pass|secret|api[-_]?key|(^|[-_])key$|auth|cred|(^|[-_])token$|signature|cookie",
    re.IGNORECASE,
)

#: Request options that are HTTP headers: every value is hidden (a gateway's key has any name).
_HEADER_OPTIONS = frozenset({"extra_headers", "default_headers", "headers"})


def shown_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """A model's request ``options`` as a trace may keep them: the values of HTTP headers and
    of options named like credentials, at any depth, become ``***``."""

    def shown(value: Any) -> Any:
        if isinstance(value, Mapping):
            return {
                key: "***" if _SECRET_OPTION.search(str(key)) else shown(item)
                for key, item in value.items()
            }
        if isinstance(value, (list, tuple)):
            return [shown(item) for item in value]
        return value

    return {
        name: dict.fromkeys(value, "***")
        if name in _HEADER_OPTIONS and isinstance(value, Mapping)
        else "***"
        if _SECRET_OPTION.search(name)
        else shown(value)
        for name, value in options.items()
    }


def quoted(value: Any, limit: int = 80) -> str:
    """``repr(value)`` for a message: a text longer than ``limit`` characters is cut, with a
    count of the rest (an id a page, a command or a model sends may be of any length)."""
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:limit]!r}... ({len(value) - limit:,} more characters)"
    text = repr(value)
    return text if len(text) <= 2 * limit else f"{text[: 2 * limit]}..."


def error_text(error: BaseException) -> str:
    """``str(error)``, for an exception raised by code of the user's (a tool, a handler, a hook,
    a model): one whose own ``__str__`` fails is still described, and the run goes on."""
    try:
        return str(error)
    except Exception:
        return f"(the message of this {type(error).__name__} could not be read)"


def add_note(error: BaseException, note: str) -> None:
    """``error.add_note(note)`` (Python 3.11+; on 3.10 the same ``__notes__`` list, which a
    run's error text shows: see :func:`error_with_notes`)."""
    noting = getattr(error, "add_note", None)
    with contextlib.suppress(Exception):
        if noting is not None:
            noting(note)
        else:
            error.__notes__ = [*getattr(error, "__notes__", ()), note]  # type: ignore[attr-defined]


def error_with_notes(error: BaseException) -> str:
    """:func:`error_text` followed by the error's notes (``add_note``), a line each, as a
    traceback shows them: where in the user's code it was raised, when a note says so."""
    try:
        notes = [note for note in getattr(error, "__notes__", None) or () if isinstance(note, str)]
    except Exception:
        notes = []
    return "\n".join(part for part in (error_text(error), *notes) if part)

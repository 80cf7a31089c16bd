"""What a server sent that the SDK could not read as an MCP message, read again where the
intent is plain (over stdio and SSE, the SDK hands the session its error instead of a message,
and skips it; over streamable HTTP it fails the request at once: there a lone half is mended
before the SDK reads the answer, see :mod:`._halves`, and the rest is left as it is):

- JSON that escapes half of a UTF-16 pair (``"\\ud83d"``): a JavaScript server whose text was
  cut in the middle of an emoji writes it, and JavaScript reads it; the SDK's JSON reader
  refuses the whole message. It is read with U+FFFD for the half (no store or page keeps a
  lone half), and the call gets its result instead of waiting out its timeout;
- an answer to a request (its ``id``, no ``method``) that is no valid MCP answer
  (``"result": null``, an error whose code is not a number): the request gets an error
  saying so at once (it waited out its whole timeout, for an answer that had come).
"""

from __future__ import annotations

import json
from typing import Any

from .._util import valid_text

__all__ = ["read_again"]

#: JSON-RPC's code for an error inside the server.
_INTERNAL_ERROR = -32603
#: At most this many characters of the answer are quoted in the error.
_MAX_QUOTED = 300


def read_again(item: Any) -> Any:
    """``item`` as the transport gave it to the session: a message, or the error of a line it
    could not read; such a line is a message when it can be read as one (see above)."""
    if not isinstance(item, ValueError):
        return item
    try:
        return _read_again(item)
    except RecursionError:  # (JSON nested too deep to read: skipped, as the SDK skips it)
        return item


def _read_again(item: ValueError) -> Any:
    data = _data_of(item)
    if not isinstance(data, dict):
        return item
    from mcp import types
    from mcp.shared.message import SessionMessage

    try:
        message = types.jsonrpc_message_adapter.validate_python(_valid(data), by_name=False)
        return SessionMessage(message)
    except ValueError:
        pass
    request_id = data.get("id")
    if "method" in data or isinstance(request_id, bool) or not isinstance(request_id, int | str):
        return item
    quoted = json.dumps(data, ensure_ascii=False, default=str)
    if len(quoted) > _MAX_QUOTED:
        quoted = f"{quoted[:_MAX_QUOTED]}…"
    error = types.ErrorData(
        code=_INTERNAL_ERROR,
        message=f"the server's answer was not a valid MCP message: {valid_text(quoted)}",
    )
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error))


def _data_of(error: ValueError) -> Any:
    """The JSON the unread line held, from the SDK's pydantic error, or None: the line itself
    when the SDK's reader refused only its escapes (``json_invalid``: half of a UTF-16 pair,
    which Python's reader takes), or the message it read when a
    field of the message itself is missing or wrong (not a value deeper in it, which may be
    a text that holds JSON)."""
    errors = getattr(error, "errors", None)
    if not callable(errors):
        return None
    try:
        found = errors()
    except Exception:  # pragma: no cover - not a pydantic error after all
        return None
    for entry in found:
        given = entry.get("input")
        if entry.get("type") == "json_invalid" and isinstance(given, str):
            if "hex escape" not in str((entry.get("ctx") or {}).get("error", "")):
                return None  # (no JSON by any reader, or nested too deep for the SDK's)
            try:
                return json.loads(given)  # (Python's reader takes a lone half of a pair)
            except ValueError:
                return None
        if entry.get("type") == "missing" and len(entry.get("loc", ())) <= 2:
            # (the union's member and the field: the input is the whole message)
            return given if isinstance(given, dict) else None
    return None


def _valid(value: Any) -> Any:
    """``value`` with every lone half of a UTF-16 pair in its texts (keys too) as U+FFFD (a
    loop, not a recursion: how deep it may nest does not depend on the stack)."""
    if isinstance(value, str):
        return valid_text(value)
    root: list[Any] = [value]
    todo: list[tuple[Any, Any, Any]] = [(root, 0, value)]  # (container, key, value)
    while todo:
        parent, key, item = todo.pop()
        if isinstance(item, dict):
            copy: Any = {}
            for name, inner in item.items():
                copy[valid_text(name)] = inner
                todo.append((copy, valid_text(name), inner))
        elif isinstance(item, list):
            copy = list(item)
            todo.extend((copy, index, inner) for index, inner in enumerate(item))
        elif isinstance(item, str):
            copy = valid_text(item)
        else:
            continue
        parent[key] = copy
    return root[0]

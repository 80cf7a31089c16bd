"""Text that is not valid Unicode (a lone surrogate such as ``\\ud800``) on the widget's wire.

Python strings may hold one (JSON's ``"\\ud800"``, half of an emoji cut between two stream
chunks, a file name read with ``surrogateescape``); UTF-8 cannot. The kernel's serialiser
(jupyter_client's, strict UTF-8) refuses a message holding one, and no run store can keep it.
So: what the page sends is refused when it holds one (:func:`invalid_text`), and what the kernel
sends or saves has each one replaced by U+FFFD (:func:`sendable`, :func:`valid_text`): one
character for one, so offsets into a text stay right.
"""

from __future__ import annotations

import re
from typing import Any

from .._util import valid_text

__all__ = ["invalid_text", "sendable", "show_invisibles", "show_overrides", "valid_text"]

#: Bidirectional controls and zero-width characters: invisible, but they change how the text
#: around them reads (U+202E shows what follows backwards), or hide a difference (U+200B). Not
#: the joiners U+200C/U+200D, which emoji and some scripts need. The same list as ``INVISIBLE``
#: in js/src/views/fold.ts.
_INVISIBLE = re.compile("[\u061c\u200b\u200e\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")


def show_invisibles(json_text: str) -> str:
    """JSON text (a tool's arguments) with each invisible control written as its JSON escape
    (``\\u202e``): the same value, but what a person approves reads as it is."""
    return _INVISIBLE.sub(lambda m: f"\\u{ord(m.group()):04x}", json_text)


#: Controls that turn the text after them around or embed it (U+202E shows ``txt.exe`` as
#: ``exe.txt``), not the marks U+200E/U+200F that right-to-left prose uses. The same list as
#: ``OVERRIDES`` in js/src/views/fold.ts.
_OVERRIDES = re.compile("[\u202a-\u202e\u2066-\u2069]")


def show_overrides(text: str) -> str:
    """Model-written prose (an approval's reason and its decision's, a question and its
    answers) with each direction override written as its escape (``\\u202e``): it reads in
    the order it was written, as the live view shows it."""
    return _OVERRIDES.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def sendable(value: Any) -> Any:
    """A copy of the JSON value ``value`` with :func:`valid_text` applied to every string
    (keys too); other values as they are."""
    if isinstance(value, str):
        return valid_text(value)
    if isinstance(value, dict):
        return {sendable(k): sendable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [sendable(item) for item in value]
    return value


def invalid_text(value: Any) -> str | None:
    """Why the JSON value ``value`` (a page's message) is refused, naming the first string
    (value or key) that holds a lone surrogate, or None when every string is valid. Walked
    without recursion: a message may be deeply nested."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError as error:
                code = f"\\u{ord(item[error.start]):04x}"
                field = f"The {where}" if where else "The message"
                return (
                    f"{field} is not valid text: it holds {code} at position {error.start}, "
                    "which is not a character (half of a surrogate pair, or a byte that was "
                    "not UTF-8) and cannot be stored."
                )
        elif isinstance(item, dict):
            for key, inner in reversed(list(item.items())):
                name = f"{where}.{key}" if where else str(key)
                stack.append((inner, valid_text(name)))
                stack.append((key, f"name of the field in {where or 'the message'}"))
        elif isinstance(item, (list, tuple)):
            for index in reversed(range(len(item))):
                stack.append((item[index], f"{where}[{index}]"))
    return None

"""Checks of what ``AgentBuilder`` and ``PromptRequest`` options are given, where they are given.

An option the run cannot use (a handler that is not a function, a hook that is not a Hook, a
turn limit written as text) would otherwise fail later, deep in a run, with words naming
nothing the user wrote (``'str' object is not callable``, a pydantic error about
``CompletionRequest``), or only once an approval is asked, long after the cell that set it.
"""

from __future__ import annotations

import numbers
from typing import Any

from ._util import check_valid_text
from .hooks import HOOK_CALLBACKS, Hook

__all__ = [
    "checked_context",
    "checked_handler",
    "checked_hook",
    "checked_human_input",
    "checked_instructions",
    "checked_max_tokens",
    "checked_session",
    "checked_temperature",
    "checked_text",
    "checked_tool_choice",
    "checked_turns",
]


def _kind(value: Any) -> str:
    """What ``value`` is, in an error: its type's name; for a class given where an object of
    it is wanted (``StoreHumanInput`` for ``StoreHumanInput()``), says so."""
    if isinstance(value, type):
        return f"the class {value.__name__} itself (make one: {value.__name__}())"
    return type(value).__name__


def checked_turns(value: Any) -> int:
    """A turn limit: a whole number, zero or more."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"max turns must be a whole number, zero or more, not {value!r}.")
    if value < 0:
        raise ValueError("max turns must be zero or more")
    return int(value)


def checked_handler(handler: Any) -> Any:
    """An approval handler: a (sync or async) function of the approval request, or None."""
    if handler is not None and not callable(handler):
        raise TypeError(
            "approvals() takes a function of the approval request that returns True, False or "
            f"an ApprovalDecision (sync or async), not {_kind(handler)}."
        )
    return handler


def checked_human_input(human_input: Any) -> Any:
    """A human input: an object with ``approve(request)`` and/or ``ask(request)``, or None."""
    if human_input is None:
        return None
    methods = [getattr(human_input, name, None) for name in ("approve", "ask")]
    if isinstance(human_input, type) or not any(callable(method) for method in methods):
        raise TypeError(
            "human_input() takes a human input such as WidgetHumanInput(), StoreHumanInput() "
            "or CallbackHumanInput(approve=..., ask=...) (an object with approve(request) and "
            f"ask(request) methods), not {_kind(human_input)}."
        )
    return human_input


def checked_hook(hook: Any) -> Hook:
    """A hook: made by ``create_hook(...)``, or an object with every callback a Hook has."""
    if isinstance(hook, Hook):
        return hook
    if not isinstance(hook, type) and all(callable(getattr(hook, n, None)) for n in HOOK_CALLBACKS):
        return hook  # type: ignore[no-any-return]
    raise TypeError(
        "Hooks are made with create_hook(on_tool_call=..., ...) or by subclassing Hook, not "
        f"{_kind(hook)}."
    )


def checked_session(session_id: Any, metadata: Any) -> None:
    """A session id (a text or None) and its metadata (a dict or None)."""
    if session_id is not None and not isinstance(session_id, str):
        raise TypeError(f"A session id must be a text or None, not {_kind(session_id)}.")
    if metadata is not None and not isinstance(metadata, dict):
        raise TypeError(f"Session metadata must be a dict or None, not {_kind(metadata)}.")


def checked_temperature(value: Any) -> float | None:
    """A sampling temperature: a number, zero or more, or None (the provider's default)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"temperature must be a number, not {value!r}.")
    temperature = float(value)
    if not temperature >= 0:  # (NaN too)
        raise ValueError(f"temperature must be zero or more, not {value!r}.")
    return temperature


def checked_max_tokens(value: Any) -> int | None:
    """A limit of tokens per answer: a positive whole number, or None (the provider's)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"max_tokens must be a whole number, not {value!r}.")
    if value < 1:
        raise ValueError(f"max_tokens must be one or more, not {value!r}.")
    return int(value)


def checked_tool_choice(value: Any) -> Any:
    """Which tool the model must call: ``"auto"``, ``"none"``, ``"required"`` (or ``"any"``), a
    tool's name, a provider's own dict, or None (the provider's default)."""
    if value is None or isinstance(value, dict):
        return value
    if not isinstance(value, str):
        raise TypeError(
            'tool_choice takes "auto", "none", "required", a tool\'s name or a provider\'s dict, '
            f"not {_kind(value)}."
        )
    if not value.strip():
        raise ValueError('tool_choice needs a value: "auto", "none", "required" or a tool\'s name.')
    check_valid_text(value, "tool_choice")
    return value


def checked_text(value: Any, what: str) -> str | None:
    """An agent's name or description: a text (valid Unicode) or None."""
    if value is not None and not isinstance(value, str):
        raise TypeError(f"{what} must be a text or None, not {_kind(value)}.")
    if value is not None:
        check_valid_text(value, what)
    return value


def checked_instructions(value: Any) -> list[str]:
    """Instruction blocks: one text or a list of texts; blank blocks are left out."""
    blocks = [value] if isinstance(value, str) else value
    if not isinstance(blocks, (list, tuple)):
        raise TypeError(f"instructions() takes a text or a list of texts, not {_kind(value)}.")
    for number, block in enumerate(blocks, start=1):
        if not isinstance(block, str):
            raise TypeError(
                f"instructions() takes texts; instruction block {number} is {_kind(block)}."
            )
        check_valid_text(block, f"Instruction block {number}")
    return [block for block in blocks if block.strip()]


def checked_context(text: Any, document_id: Any) -> None:
    """A context document: its text, and an id that is a text or None."""
    if not isinstance(text, str):
        shown = "None" if text is None else _kind(text)
        raise TypeError(f"context() takes the document's text, not {shown}.")
    check_valid_text(text, "The context document")
    if document_id is not None and not isinstance(document_id, str):
        raise TypeError(
            f"A context document's id must be a text or None, not {_kind(document_id)}."
        )

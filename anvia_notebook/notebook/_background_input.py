"""What a tool's ``input()`` failure says in a run that ``show()`` started.

``show()`` returns the cell at once and the run goes on in the background (as every run of the
Studio does). Once the cell has
finished, ``input()`` has nothing to read from: it raises ``EOFError`` ("EOF when reading a
line"), or IPython's ``StdinNotImplementedError`` while a front end that allows no input (a
headless runner) executes another cell. Such a failure alone tells a notebook user nothing, so
the run's tool calls (through ``tools.EXPLAIN_TOOL_ERROR``, set in the run's context only) fail
with the same type of error, whose message names the original one and says what to do instead.
``input()`` itself is left alone: where it works (a cell still running that allows input, or
blocking mode), it works as before.
"""

from __future__ import annotations

import sys

from .._util import error_text

__all__ = ["INPUT_ADVICE", "STUDIO_INPUT_ADVICE", "explain_studio_tool_error", "explain_tool_error"]

#: What a tool's failed ``input()`` in a background run adds to the error it raised.
INPUT_ADVICE = (
    "input() cannot read an answer in a run started with show(): the run goes on after its "
    "cell has finished, and nothing in the notebook can answer input() then. To ask the person "
    "something, use the ask_question tool (add it to the agent's tools; its questions appear in "
    "the run's transcript), or run the request in blocking mode with send_sync(), which keeps "
    "the cell running so that input() can read from it."
)

#: The same, for a run of the Studio (always in the background: it has no blocking mode).
STUDIO_INPUT_ADVICE = (
    "input() cannot read an answer in a run of the Studio: the run goes on in the background, "
    "and nothing in the notebook can answer input() then. To ask the person something, use the "
    "ask_question tool (add it to the agent's tools; its questions appear in the Studio's "
    "transcript)."
)

#: The message of the ``EOFError`` Python's ``input()`` raises when there is nothing to read.
_INPUT_EOF = "EOF when reading a line"


def _refused_by_the_kernel(error: Exception) -> bool:
    """Whether ``error`` is the kernel's refusal of ``input()`` (no input allowed now)."""
    if "IPython" not in sys.modules:
        return False
    try:
        from IPython.core.error import StdinNotImplementedError
    except ImportError:  # pragma: no cover
        return False
    return type(error) is StdinNotImplementedError


def explain_tool_error(error: Exception, advice: str = INPUT_ADVICE) -> Exception | None:
    """The error to raise instead of ``error`` when it is ``input()`` failing (None: keep it)."""
    if not (
        (type(error) is EOFError and error.args == (_INPUT_EOF,)) or _refused_by_the_kernel(error)
    ):
        return None
    original = f"{type(error).__name__}: {error_text(error)}".rstrip(". ")
    return type(error)(f"{original}. {advice}")


def explain_studio_tool_error(error: Exception) -> Exception | None:
    """:func:`explain_tool_error` with the advice for a run of the Studio."""
    return explain_tool_error(error, STUDIO_INPUT_ADVICE)

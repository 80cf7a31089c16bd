"""Errors of the run store (defined with the runtime's errors, re-exported here)."""

from __future__ import annotations

from ..errors import (
    DecisionRefusedError,
    DecisionRunNotFoundError,
    RunEndedError,
    RunNotFoundError,
    RunOwnedError,
    RunStoreError,
    RunTakenOverError,
)

__all__ = [
    "DecisionRefusedError",
    "DecisionRunNotFoundError",
    "RunEndedError",
    "RunNotFoundError",
    "RunOwnedError",
    "RunStoreError",
    "RunTakenOverError",
    "StoreFileGoneError",
    "not_text",
]


class StoreFileGoneError(RunStoreError):
    """The store's file was deleted, moved away or replaced while this process used it: it
    writes no more (what it wrote would be lost, or land beside another store's runs)."""


def not_text(location: str, error: UnicodeEncodeError) -> RunStoreError:
    """A text given to the store that cannot be stored: not valid UTF-8 (a lone surrogate, as
    bytes that were not UTF-8 become in ``sys.argv`` or a file name)."""
    shown = error.object.encode("utf-8", "surrogateescape").decode("ascii", "backslashreplace")
    return RunStoreError(
        f"The run store {location} cannot take '{shown[:200]}': it is not valid UTF-8 text."
    )

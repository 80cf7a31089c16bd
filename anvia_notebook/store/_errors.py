"""Errors of the run store (defined with the runtime's errors, re-exported here)."""

from __future__ import annotations

from ..errors import DecisionRefusedError, RunNotFoundError, RunOwnedError, RunStoreError

__all__ = ["DecisionRefusedError", "RunNotFoundError", "RunOwnedError", "RunStoreError"]

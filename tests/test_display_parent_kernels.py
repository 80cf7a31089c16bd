"""A transcript update goes out under the parent header it is given, whatever ipykernel keeps it in.

ipykernel 6 keeps the display publisher's parent in a plain attribute, 7.4 and later add
``set_thread_parent``, and 7.0 to 7.3 (the newest for Python 3.10) keep it in a context variable
behind a read-only ``parent_header`` property: setting that raised AttributeError, and every update
of a run's cell output printed "Could not update the transcript's cell output".
"""

from __future__ import annotations

import contextvars
from typing import Any

from anvia_notebook.notebook._display import _with_parent

HEADER = {"msg_id": "cell-2", "msg_type": "execute_request", "session": "s"}
BEFORE = {"msg_id": "cell-1", "msg_type": "execute_request", "session": "s"}


class Ipykernel73Publisher:
    """ZMQDisplayPublisher as ipykernel 7.0-7.3 define it (parent_header has no setter)."""

    def __init__(self) -> None:
        self._parent_header: contextvars.ContextVar[dict[str, Any]] = contextvars.ContextVar(
            "parent_header"
        )
        self._parent_header.set(BEFORE)
        self._parent_header_global: dict[str, Any] = BEFORE

    @property
    def parent_header(self) -> dict[str, Any]:
        try:
            return self._parent_header.get()
        except LookupError:
            return self._parent_header_global

    def set_parent(self, parent: dict[str, Any]) -> None:
        self._parent_header.set(parent)
        self._parent_header_global = parent


class Ipykernel6Publisher:
    def __init__(self) -> None:
        self.parent_header: dict[str, Any] = BEFORE


def test_ipykernel_7_0_to_7_3_read_only_parent_header():
    publisher = Ipykernel73Publisher()
    with _with_parent(publisher, HEADER):
        assert publisher.parent_header == HEADER
    assert publisher.parent_header == BEFORE
    assert publisher._parent_header_global == BEFORE  # the kernel's own parent is put back


def test_ipykernel_6_plain_attribute():
    publisher = Ipykernel6Publisher()
    with _with_parent(publisher, HEADER):
        assert publisher.parent_header == HEADER
    assert publisher.parent_header == BEFORE

"""Fixtures for the widget tests (no kernel, no browser).

- every ``AnviaWidget.send`` is recorded (and checked against the protocol) instead of sent;
- cell outputs (``_display.publish``) are recorded in ``outputs``; ``cell.msg_id`` plays the
  execute request that is running (each test starts in cell ``cell-1``);
- the scripted-operator variable is unset unless a test sets it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest
from notebook_helpers import record_send

from anvia_notebook.notebook import _display
from anvia_notebook.notebook import _human_input as human_input
from anvia_notebook.notebook._widget import AnviaWidget


@dataclass
class Cell:
    msg_id: str = "cell-1"
    #: The front end's cell id (JupyterLab's ``cellId``); None: the front end sends none.
    cell_id: str | None = None

    def parent(self) -> dict[str, Any]:
        return {"header": {"msg_id": self.msg_id, "msg_type": "execute_request"}}

    def run_again(self, msg_id: str) -> None:
        """The same cell executes again: a new execute request, IPython's ``pre_run_cell``."""
        self.msg_id = msg_id
        _display._cells._pre_run_cell(SimpleNamespace(cell_id=self.cell_id))


@dataclass
class Outputs:
    calls: list[dict[str, Any]] = field(default_factory=list)

    def shown(self) -> list[dict[str, Any]]:
        return [c for c in self.calls if not c["update"]]

    def updates(self) -> list[dict[str, Any]]:
        return [c for c in self.calls if c["update"]]


@pytest.fixture(autouse=True)
def _record_sends(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(AnviaWidget, "send", record_send)


@pytest.fixture(autouse=True)
def _no_auto(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(human_input.AUTO_ENV, raising=False)


@pytest.fixture
def cell() -> Cell:
    return Cell()


@pytest.fixture(autouse=True)
def outputs(monkeypatch: pytest.MonkeyPatch, cell: Cell) -> Outputs:
    recorded = Outputs()

    def publish(
        data: dict[str, Any],
        metadata: dict[str, Any] | None = None,
        *,
        display_id: str,
        update: bool = False,
        parent: dict[str, Any] | None = None,
    ) -> None:
        recorded.calls.append(
            {
                "data": data,
                "display_id": display_id,
                "update": update,
                "parent": parent if update else cell.parent(),
            }
        )

    monkeypatch.setattr(_display, "publish", publish)
    monkeypatch.setattr(_display, "current_parent", cell.parent)
    monkeypatch.setattr(_display, "current_cell_id", lambda: cell.cell_id, raising=False)
    return recorded

"""Which anywidget front ends the widget asks the page for (its module version range)."""

from __future__ import annotations

import sys
import types

import anywidget
import pytest

from anvia_notebook.notebook._widget import AnviaWidget


def test_outside_colab_any_front_end_from_anywidget_0_9_is_accepted() -> None:
    widget = AnviaWidget()
    own = anywidget.AnyWidget._model_module_version.default_value
    state = widget.get_state()
    for key in ("_model_module_version", "_view_module_version"):
        assert state[key] == f"{own} || >=0.9.0 <1.0.0"


def test_in_colab_the_range_is_anywidgets_own(monkeypatch: pytest.MonkeyPatch) -> None:
    # Colab's widget manager puts the range in a CDN address: it must stay anywidget's.
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    widget = AnviaWidget()
    own = anywidget.AnyWidget._model_module_version.default_value
    assert widget.get_state()["_model_module_version"] == own
    assert widget.get_state()["_view_module_version"] == own

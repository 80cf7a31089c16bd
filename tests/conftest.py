"""Every test session stores runs in its own temporary run store (never the working folder).

Kernels and notebooks that the tests start inherit ``ANVIA_NOTEBOOK_STORE`` and write to the
same file, as kernels of one notebook folder do.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

_FOLDER = Path(tempfile.mkdtemp(prefix="anvia-test-store-"))
os.environ["ANVIA_NOTEBOOK_STORE"] = str(_FOLDER / "runs.sqlite")


@pytest.fixture
def store_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh run store file for one test, made the default store while it runs."""
    from anvia_notebook import store as store_module

    path = tmp_path / "store" / "runs.sqlite"
    monkeypatch.setenv("ANVIA_NOTEBOOK_STORE", str(path))
    store_module._reset_for_tests()
    yield path
    store_module._reset_for_tests()

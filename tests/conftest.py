"""Every test session stores runs in its own temporary run store (never the working folder).

Kernels and notebooks that the tests start inherit ``ANVIA_NOTEBOOK_STORE`` and write to the
same file, as kernels of one notebook folder do.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

_FOLDER = Path(tempfile.mkdtemp(prefix="anvia-test-store-"))
os.environ["ANVIA_NOTEBOOK_STORE"] = str(_FOLDER / "runs.sqlite")


def pytest_unconfigure(config: pytest.Config) -> None:
    """The session's store folder goes with the session."""
    shutil.rmtree(_FOLDER, ignore_errors=True)


@pytest.fixture
def store_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh run store file for one test, made the default store while it runs."""
    from anvia_notebook import store as store_module

    path = tmp_path / "store" / "runs.sqlite"
    monkeypatch.setenv("ANVIA_NOTEBOOK_STORE", str(path))
    store_module._reset_for_tests()
    yield path
    store_module._reset_for_tests()


def _exported_spans(capture_content: bool):
    """OpenTelemetry on, into the SDK's in-memory exporter; off again after the test."""
    sdk = pytest.importorskip("opentelemetry.sdk.trace")
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from anvia_notebook import instrument

    exporter = InMemorySpanExporter()
    provider = sdk.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrument(provider, capture_content=capture_content)
    yield exporter
    instrument(False)


@pytest.fixture
def spans():
    """The spans a test's runs export (without message content)."""
    yield from _exported_spans(capture_content=False)


@pytest.fixture
def content_spans():
    """The spans a test's runs export, with messages, arguments and results captured."""
    yield from _exported_spans(capture_content=True)


@pytest.fixture(scope="session")
def postgres_server():
    """A PostgreSQL server for the session (CI installs it; elsewhere, skipped if missing)."""
    from postgres_server import postgres_bin, running_postgres

    if postgres_bin() is None:
        if os.environ.get("CI"):
            pytest.fail("PostgreSQL is not installed; .ci/run installs Debian's postgresql")
        pytest.skip("PostgreSQL is not installed (apt-get install -y postgresql)")
    with running_postgres() as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def store_location(request, tmp_path, monkeypatch) -> str:
    """The default store for one test: a fresh SQLite file, or a fresh PostgreSQL database."""
    from anvia_notebook import store as store_module

    if request.param == "sqlite":
        location = str(tmp_path / "store" / "runs.sqlite")
    else:
        from postgres_server import fresh_database

        location, _ = fresh_database(request.getfixturevalue("postgres_server"))
    monkeypatch.setenv("ANVIA_NOTEBOOK_STORE", location)
    store_module._reset_for_tests()
    yield location
    store_module._reset_for_tests()

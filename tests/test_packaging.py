"""The wheel ships the built front end; the version is the one defined in _version.py."""

from __future__ import annotations

import pathlib
import subprocess
import sys
import zipfile

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_wheel_contains_the_bundle(tmp_path):
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("anvia_notebook-*.whl")
    from anvia_notebook import __version__

    assert f"anvia_notebook-{__version__}-" in wheel.name
    names = zipfile.ZipFile(wheel).namelist()
    assert "anvia_notebook/static/widget.js" in names
    assert "anvia_notebook/static/widget.css" in names
    assert "anvia_notebook/notebook/_widget.py" in names
    assert not [n for n in names if "node_modules" in n or n.startswith("js/")]


def test_every_test_module_has_its_own_name():
    """pytest imports test modules by their base name: two with the same name stop the run."""
    import collections
    import pathlib

    tests = pathlib.Path(__file__).parent
    names = collections.Counter(p.name for p in tests.rglob("test_*.py"))
    assert [name for name, count in names.items() if count > 1] == []

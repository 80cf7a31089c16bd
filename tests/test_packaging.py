"""The wheel ships the built front end; the version is the one defined in _version.py."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
import zipfile

import pytest

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


# What a machine without Node.js has on PATH: every command of this one but node's.
_NODE_TOOLS = {"node", "nodejs", "npm", "npx", "corepack", "yarn", "yarnpkg", "pnpm", "pnpx"}


def _path_without_node(bin_dir: pathlib.Path) -> str:
    bin_dir.mkdir()
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        if not folder or not os.path.isdir(folder):
            continue
        for entry in os.scandir(folder):
            target = bin_dir / entry.name
            if entry.name in _NODE_TOOLS or target.exists() or not os.access(entry.path, os.X_OK):
                continue
            target.symlink_to(entry.path)
    (bin_dir / "python").unlink(missing_ok=True)
    (bin_dir / "python").symlink_to(sys.executable)
    return str(bin_dir)


@pytest.mark.timeout(900)
def test_a_clean_clone_installs_without_node_on_path(tmp_path):
    # The install cell's case: a git install on a machine with no suitable Node.js. The build
    # asks for Node.js from PyPI and builds the bundle with it.
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True, timeout=120)
    path = _path_without_node(tmp_path / "bin")
    assert shutil.which("node", path=path) is None and shutil.which("npm", path=path) is None
    env = {**os.environ, "PATH": path, "npm_config_update_notifier": "false"}
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "-w", str(tmp_path), str(clone)],
        env=env,
        capture_output=True,
        text=True,
        timeout=840,
    )
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    assert "Building the widget bundle with Node.js from PyPI" in build.stdout + build.stderr
    (wheel,) = tmp_path.glob("anvia_notebook-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "anvia_notebook/static/widget.js" in names
    assert "anvia_notebook/static/widget.css" in names

"""What pip and PyPI show of the package: its description, licence, classifiers and type marker.

Read through hatchling, as the build writes them into the wheel's METADATA, without building.
"""

from __future__ import annotations

import pathlib
import re

from hatchling.metadata.core import ProjectMetadata
from hatchling.plugin.manager import PluginManager

ROOT = pathlib.Path(__file__).resolve().parent.parent
REPOSITORY = "https://github.com/anvia-hq/anvia_notebook"


def _core():
    metadata = ProjectMetadata(str(ROOT), PluginManager())
    return metadata.core


def test_the_package_says_it_is_typed():
    # The package is checked with mypy --strict; without the marker, a user's mypy ignores it.
    assert (ROOT / "anvia_notebook" / "py.typed").is_file()
    assert "Typing :: Typed" in _core().classifiers


def test_the_licence_is_shipped_and_declared_once():
    core = _core()
    assert core.license == "MIT"
    assert "MIT License" in (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "License :: OSI Approved :: MIT License" in core.classifiers


def test_classifiers_name_each_supported_python_version():
    core = _core()
    lowest = re.fullmatch(r">=3\.(\d+)", core.requires_python)
    assert lowest, core.requires_python
    named = sorted(
        int(c.rsplit(".", 1)[1])
        for c in core.classifiers
        if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)
    )
    assert named and named[0] == int(lowest.group(1))
    assert named == list(range(named[0], named[-1] + 1))


def test_the_pypi_description_has_no_link_that_points_nowhere():
    # PyPI renders the README without the repository's files: every link and image that is a
    # path in the repository must point at the repository on GitHub.
    core = _core()
    assert core.readme_content_type == "text/markdown"
    text = core.readme
    assert "Tutorials" in text or "tutorial" in text
    targets = re.findall(r"\]\(([^)\s]+)\)", text)
    assert targets
    relative = [t for t in targets if not re.match(r"[a-zA-Z][a-zA-Z0-9+.-]*:|#", t)]
    assert relative == []
    assert f"]({REPOSITORY}/blob/main/notebooks/01_quickstart.ipynb)" in text
    assert (
        "](https://raw.githubusercontent.com/anvia-hq/anvia_notebook/main/docs/screenshot.png)"
        in text
    )
    assert "](https://github.com/anvia-hq/anvia)" in text  # absolute links stay as they are


def test_the_project_links_point_at_the_repository():
    urls = _core().urls
    assert urls["Source"] == REPOSITORY
    assert urls["Issues"] == f"{REPOSITORY}/issues"

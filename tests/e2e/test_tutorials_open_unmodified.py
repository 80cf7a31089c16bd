"""Every tutorial opens in JupyterLab unmodified: nothing to save, no diff, until something runs.

JupyterLab writes the kernel's ``language_info`` into a notebook it opens; the tutorials are
committed as it writes them. It is the committing machine's kernel's (its Python version; an
older ipykernel, such as Colab's, describes itself a little differently), so each copy opened
here carries this kernel's ``language_info`` (the rest is what is committed)."""

from __future__ import annotations

import json
import pathlib

import pytest
from playwright.sync_api import Page

from e2e_helpers import JupyterServer, open_notebook

pytestmark = pytest.mark.e2e

NOTEBOOKS = sorted((pathlib.Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))

#: The open notebook's kernel's language_info, once JupyterLab has applied it to the notebook
#: (awaiting the same promise JupyterLab awaits runs after its handler), and whether the notebook
#: is modified then.
STATE = """async (path) => {
  const w = window.__anviaE2E.panel(path);
  const info = await w.sessionContext.session.kernel.info;
  await new Promise((resolve) => requestAnimationFrame(resolve));
  return { info: info.language_info, dirty: w.context.model.dirty };
}"""


def test_each_tutorial_opens_unmodified(page: Page, jupyter_server: JupyterServer):
    root = pathlib.Path(jupyter_server.root_dir)
    info = None  # this kernel's language_info, once known
    modified = []
    for path in NOTEBOOKS:
        notebook = json.loads(path.read_text(encoding="utf-8"))
        if info is not None:
            notebook["metadata"]["language_info"] = info
        name = f"open-{path.name}"
        (root / name).write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n")
        open_notebook(page, jupyter_server, name)
        state = page.evaluate(STATE, name)
        if info is None and state["info"] != notebook["metadata"]["language_info"]:
            info = state["info"]  # another kernel here: open this one again with its own
            notebook["metadata"]["language_info"] = info
            name = f"open-again-{path.name}"
            (root / name).write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n")
            open_notebook(page, jupyter_server, name)
            state = page.evaluate(STATE, name)
        info = state["info"]
        if state["dirty"]:
            modified.append(path.name)
    assert modified == [], "opened as modified: open each in JupyterLab, clear outputs, save"

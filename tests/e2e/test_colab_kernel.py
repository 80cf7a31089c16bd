"""A kernel on Colab's packages (anywidget 0.9.21, ipywidgets 7.7.1) under a newer JupyterLab.

The page loads the anywidget of the server's environment (newer), the kernel asks for its own
(``~0.9.*`` by default): the transcript used to stay a static copy, with no buttons. The kernel
runs in the virtualenv made by ``tests/colab/make_colab_env.sh`` (``.venvs/colab``); the test
skips when it is absent (CI makes it).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from e2e_helpers import (
    REPO_ROOT,
    JupyterServer,
    cell_output,
    open_notebook,
    run_all_cells,
    start_jupyter_server,
    stop_jupyter_server,
    wait_for_text,
    write_notebook,
)

pytestmark = pytest.mark.e2e

COLAB_PYTHON = REPO_ROOT / ".venvs" / "colab" / "bin" / "python"

CELLS = [
    """
    import anywidget, ipywidgets
    print("kernel packages", anywidget.__version__, ipywidgets.__version__)
    """,
    """
    from anvia_notebook import AgentBuilder, ToolApproval, create_tool
    from anvia_notebook.demos import support_model
    from pydantic import BaseModel

    class Refund(BaseModel):
        order_id: str
        amount: float
        reason: str

    refund = create_tool(
        name="issue_refund", description="Issue a refund.", input=Refund,
        approval=ToolApproval(when=lambda ctx: True, reason=lambda ctx: "Review the refund."),
        execute=lambda args, ctx: {"status": "issued"},
    )
    agent = AgentBuilder("support", support_model()).tools([refund]).build()
    handle = agent.prompt("Please refund order A1001, it arrived damaged.").show()
    """,
]


@pytest.fixture(scope="module")
def colab_kernel_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterServer]:
    if not COLAB_PYTHON.exists():
        pytest.skip("no Colab environment: run `bash tests/colab/make_colab_env.sh`")
    server = start_jupyter_server(
        tmp_path_factory.mktemp("jupyter-colab"), kernel_python=str(COLAB_PYTHON)
    )
    try:
        yield server
    finally:
        stop_jupyter_server(server)


def test_a_kernel_with_an_older_anywidget_than_the_page_draws_the_live_transcript(
    page: Page, colab_kernel_server: JupyterServer, notebook_name: str
) -> None:
    write_notebook(colab_kernel_server.root_dir, notebook_name, CELLS)
    open_notebook(page, colab_kernel_server, notebook_name)
    run_all_cells(page)
    wait_for_text(cell_output(page, 0), "kernel packages 0.9.21 7.7.1")
    widget = cell_output(page, 1)
    # The live view (not the static copy): the approval's buttons, which a click decides.
    wait_for_text(widget, "Approval required")
    widget.get_by_role("button", name="Approve").click()
    expect(widget.locator(".anvia-status-label")).to_have_text("Done", timeout=30_000)

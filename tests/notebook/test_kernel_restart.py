"""A real kernel killed with SIGKILL while an approval waits; another kernel in the same folder
lists the run, resumes it and approves it from the widget: the tool runs exactly once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kernel_client import Kernel, this_python, wait_for
from test_in_kernel import SETUP, approve_when_asked

from anvia_notebook import RunStore

pytestmark = pytest.mark.timeout(240)

EFFECT = r"""
import os
def refund(args, ctx):
    with open(os.environ["ANVIA_TEST_EFFECTS"], "a") as out:
        out.write(f"refund {args.order_id}\n")
    return {"refund_id": "rf_" + args.order_id}
tool = create_tool(name="issue_refund", description="Refund.", input=RefundInput,
                   execute=refund, approval=ToolApproval(reason="Check the refund."))
"""


def printed(kernel: Kernel, code: str) -> str:
    cell = kernel.execute(code)
    kernel.reply(cell)
    kernel.wait(
        lambda m: (
            m["msg_type"] == "stream"
            and m["parent_header"].get("msg_id") == cell
            and "@@" in m["content"]["text"]
        )
    )
    return kernel.stdout(cell).split("@@", 1)[1].strip()


def test_kill_the_kernel_with_an_approval_pending_then_resume_in_a_new_kernel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store_file = tmp_path / ".anvia" / "runs.sqlite"
    effects = tmp_path / "effects.txt"
    monkeypatch.setenv("ANVIA_NOTEBOOK_STORE", str(store_file))
    monkeypatch.setenv("ANVIA_TEST_EFFECTS", str(effects))
    first = Kernel(this_python(), tmp_path / "kernels", "anvia-restart-a")
    try:
        first.run(SETUP + EFFECT, timeout=60)
        first.execute("handle = agent().prompt('refund A-1').show()")
        wait_for(lambda: store_file.exists() and RunStore(store_file).pending(), "the approval")
        first.kill()
    finally:
        first.close()
    store = RunStore(store_file)
    [summary] = store.runs()
    assert summary.status == "interrupted" and summary.pending == 1
    second = Kernel(this_python(), tmp_path / "kernels", "anvia-restart-b")
    try:
        second.run(SETUP + EFFECT, timeout=60)
        listed = json.loads(
            printed(
                second,
                "import json, anvia_notebook as an\n"
                "print('@@', json.dumps([[r.run_id, r.status] for r in an.runs()]))",
            )
        )
        assert listed == [[summary.run_id, "interrupted"]]
        # The new kernel's model continues the conversation: the call it asked for is stored.
        second.run(
            'after = AgentBuilder("shop", QueueModel(["Refund issued."])).tools([tool]).build()'
        )
        cell = second.execute(f"handle = after.resume({summary.run_id!r}).show()")
        model_id = second.widget_id(cell)
        approve_when_asked(second, model_id)
        second.wait(
            lambda m: (
                m["msg_type"] == "update_display_data"
                and "Refund issued." in m["content"]["data"].get("text/html", "")
            )
        )
        assert printed(second, "print('@@', handle.status)") == "success"
    finally:
        second.close()
    assert effects.read_text().splitlines() == ["refund A-1"]
    assert RunStore(store_file).runs()[0].status == "success"

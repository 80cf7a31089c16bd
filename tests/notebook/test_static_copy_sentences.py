"""The static copy a saved notebook keeps reads as sentences: a reason that ends with a full stop
is not followed by a second one."""

from __future__ import annotations

from anvia_notebook.notebook._snapshot import render_html


def transcript(reason: str, decision: str | None) -> dict:
    approval = {
        "id": "approval_1",
        "status": "rejected",
        "decided_by": "human",
        "decided_via": "widget",
        "reason": reason,
        "decision_reason": decision,
    }
    entry = {
        "id": "e1",
        "kind": "tool",
        "tool_name": "issue_refund",
        "arguments": "{}",
        "status": "rejected",
        "approval": approval,
    }
    return {"entries": [entry], "status": {"state": "done", "agent_id": "shop"}}


def test_no_double_full_stop_between_the_reason_and_the_decision():
    html = render_html(transcript("The old state cannot be restored.", "Not today."))
    assert "cannot be restored. Decision: Not today." in html
    assert ".." not in html
    html = render_html(transcript("Refund $25", "ok"))  # no full stop: one is added
    assert "by you. Reason asked: Refund $25. Decision: ok" in html
    html = render_html(transcript("Really?", None))
    assert "Reason asked: Really?</div>" in html

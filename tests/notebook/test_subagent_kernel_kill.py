"""A real kernel killed with SIGKILL while a sub-agent's question waits (API.md section 14):
another kernel in the same folder resumes the top-level run, the question (the same record,
asked once) is answered in the lead's widget, and the sub-agent's tool runs exactly once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kernel_client import Kernel, this_python, wait_for

from anvia_notebook import RunStore

pytestmark = pytest.mark.timeout(240)

TESTS = Path(__file__).resolve().parent.parent
IMPORT = f"import sys\nsys.path.insert(0, {str(TESTS)!r})\nimport subagent_agents\n"


def test_kill_the_kernel_with_a_nested_question_pending_then_answer_it_in_a_new_kernel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store_file = tmp_path / ".anvia" / "runs.sqlite"
    effects = tmp_path / "effects.txt"
    monkeypatch.setenv("ANVIA_NOTEBOOK_STORE", str(store_file))
    monkeypatch.setenv("ANVIA_TEST_EFFECTS", str(effects))
    monkeypatch.delenv("ANVIA_TEST_BLOCK_TOOL", raising=False)

    def pending() -> list[Any]:
        if not store_file.exists():
            return []
        store = RunStore(store_file)
        try:
            tops = [run for run in store.runs() if run.parent_run_id is None]
            return store.pending(tops[0].run_id) if tops else []
        finally:
            store.close()

    first = Kernel(this_python(), tmp_path / "kernels", "anvia-subkill-a")
    try:
        first.run(IMPORT, timeout=60)
        first.execute("handle = subagent_agents.lead().prompt('ask which table').show()")
        [question] = wait_for(pending, "the analyst's question")
        first.kill()
    finally:
        first.close()
    assert question.kind == "question" and question.path == ["lead", "analyst"]
    store = RunStore(store_file)
    try:
        top = next(run for run in store.runs() if run.parent_run_id is None)
        assert top.status == "interrupted"
    finally:
        store.close()

    second = Kernel(this_python(), tmp_path / "kernels", "anvia-subkill-b")
    try:
        second.run(IMPORT, timeout=60)
        cell = second.execute(
            f"handle = subagent_agents.lead().resume({top.run_id!r})"
            ".approvals(lambda request: True).show()"
        )
        model_id = second.widget_id(cell)
        # (the cell's end first: ipykernel < 7.4 reads no widget message while a cell runs)
        assert second.reply(cell, timeout=60)["content"]["status"] == "ok"
        reply = second.page_request(model_id, {"type": "sync", "request_id": "sync-1"})
        assert reply["ok"], reply
        # the same question waits again, in the lead's widget (the resumed sub-run's)
        [again] = wait_for(pending, "the question after the resume")
        assert again.id == question.id and again.run_id == question.run_id
        answer = {
            "type": "question_answers",
            "request_id": "answer-1",
            "question_id": question.id,
            "answers": [{"questionId": "table", "answer": "sales", "choice": "sales"}],
        }
        reply = second.page_request(model_id, answer)
        assert reply["ok"], reply
        second.wait(
            lambda m: (
                m["msg_type"] == "update_display_data"
                and "lead: analyst: west +12% (from sales)"
                in m["content"]["data"].get("text/html", "")
            ),
            timeout=60,
        )
    finally:
        second.close()
    assert effects.read_text().splitlines() == ["started from sales", "done from sales"]
    store = RunStore(store_file)
    try:
        assert store.get(top.run_id).status == "success"
        records = {record.kind: record for record in store.interactions(question.run_id)}
        assert len(store.interactions(question.run_id)) == 2  # the question was asked once
        assert records["question"].status == "answered"
        assert records["question"].decided_via == "widget"
        assert records["approval"].status == "approved"
    finally:
        store.close()

"""A case's output reaches the report's page as the Markdown the model wrote (its line breaks
kept, so that lists and paragraphs render), cut at PREVIEW characters."""

from __future__ import annotations

from anvia_notebook import AgentBuilder, evals
from anvia_notebook.models import FunctionModel
from anvia_notebook.notebook._evals_view import PREVIEW, EvalsSession


def test_a_rows_output_keeps_its_line_breaks_and_is_cut():
    answers = {
        "list": "Two boxes:\r\n\r\n- box **1**\n- box 2\n",
        "long": "word " * 200,
    }
    agent = AgentBuilder("boxes", FunctionModel(lambda r: answers[r.messages[-1].content])).build()
    cases = [{"input": "list"}, {"input": "long"}]
    report = evals.evaluate_sync(agent, cases, [evals.contains("box")])
    rows = EvalsSession(report, loop=None).evals_message()["report"]["rows"]
    assert rows[0]["output"] == "Two boxes:\n\n- box **1**\n- box 2"
    assert len(rows[1]["output"]) == PREVIEW and rows[1]["output"].endswith("\u2026")

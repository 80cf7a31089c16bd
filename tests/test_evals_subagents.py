"""Evals of an agent that delegates to sub-agents (``agent.as_tool``)."""

from __future__ import annotations

from anvia_notebook import AgentBuilder, evals
from anvia_notebook.messages import Usage
from anvia_notebook.models import FunctionModel, ModelResponse, ToolCall


def _lead_and_analyst():
    def analyst(request):
        return ModelResponse(text="7", usage=Usage(input_tokens=100, output_tokens=10))

    def lead(request):
        if request.messages[-1].role == "user":
            call = ToolCall("p1", "ask_analyst", {"prompt": "add 2 and 5"})
            return ModelResponse(tool_calls=[call], usage=Usage(input_tokens=5, output_tokens=1))
        return ModelResponse(text="It is 7.", usage=Usage(input_tokens=5, output_tokens=1))

    sub = AgentBuilder("analyst", FunctionModel(analyst)).build()
    return AgentBuilder("lead", FunctionModel(lead)).tool(sub.as_tool(name="ask_analyst")).build()


async def test_a_case_counts_the_tokens_of_its_sub_agents(store_path):
    """A case's ``tokens`` is what the case cost: the sub-agent's model calls are part of it
    (they were left out: a case that delegated most of its work looked almost free)."""
    report = await evals.evaluate(
        _lead_and_analyst(), [evals.Case("add 2 and 5", expected="7")], [evals.contains()]
    )
    (case,) = report.cases
    assert case.status == "success" and case.passed
    assert case.tokens == 12 + 110
    assert report.to_pandas()["tokens"].tolist() == [122]

"""``evals.llm_judge`` with the real provider models on recorded HTTP (never the network).

A rate-limit (429) response is retried by the judge, so it is not counted as a failure.
"""

from __future__ import annotations

from typing import Any

import anthropic
import httpx
import openai
import pytest
from anthropic import _base_client as anthropic_base_client
from openai import _base_client as openai_base_client

from anvia_notebook import AgentBuilder, evals
from anvia_notebook.models import FunctionModel
from anvia_notebook.models.anthropic import AnthropicModel
from anvia_notebook.models.openai import OpenAIModel

from provider_replay import Recorded, Server

openai_http = Recorded(getattr(openai_base_client, "httpx2", None) or httpx)
anthropic_http = Recorded(getattr(anthropic_base_client, "httpx2", None) or httpx)

CASES = [evals.Case(name="capital", input="capital of France?", expected="Paris")]


def agent() -> Any:
    return AgentBuilder("geo", FunctionModel(lambda request: "Paris")).build()


def judge_for(provider: str, server: Server, monkeypatch: pytest.MonkeyPatch) -> Any:
    if provider == "openai":
        openai_http.route(monkeypatch, openai, "AsyncOpenAI", server)
        return OpenAIModel("gpt-4o-mini", api_key="sk-test")
    anthropic_http.route(monkeypatch, anthropic, "AsyncAnthropic", server)
    return AnthropicModel("claude-sonnet-4-6", api_key="sk-ant-test")


RECORDED = {
    "openai": (
        openai_http,
        "openai_judge_verdict.sse",
        "openai_error_429.json",
        0.8,
        "Names Paris, the capital of France, as asked.",
    ),
    "anthropic": (
        anthropic_http,
        "anthropic_judge_verdict.sse",
        "anthropic_error_429.json",
        0.3,
        "Says 8; the sum of 2 and 5 is 7.",
    ),
}


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_llm_judge_with_a_real_provider_keeps_score_and_reasoning(provider, monkeypatch):
    recorded, verdict, _, score, reasoning = RECORDED[provider]
    server = Server(recorded.sse(verdict))
    judge = evals.llm_judge(judge_for(provider, server, monkeypatch), "Is the answer correct?")
    report = await evals.evaluate(agent(), CASES, [judge], show=False)
    case = report.cases[0]
    assert case.scores == {"llm_judge": score}
    assert case.details["llm_judge"].reason == reasoning
    assert case.passed is (score >= 0.5)
    body = server.body(0)
    sent = str(body["messages"]) + str(body.get("system", ""))
    assert "Is the answer correct?" in sent and "Paris" in sent and "capital of France?" in sent
    assert "grade the answer" in sent  # the judge's instructions


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_a_rate_limit_is_retried_not_counted_as_a_failure(provider, monkeypatch):
    recorded, verdict, rate_limit, score, _ = RECORDED[provider]
    server = Server(recorded.error_response(429, rate_limit), recorded.sse(verdict))
    judge = evals.llm_judge(
        judge_for(provider, server, monkeypatch),
        "Is the answer correct?",
        initial_delay=0,
        max_delay=0,
    )
    report = await evals.evaluate(agent(), CASES, [judge], show=False)
    case = report.cases[0]
    assert len(server.requests) == 2
    assert case.details["llm_judge"].error is None
    assert case.scores == {"llm_judge": score}


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_a_judge_that_keeps_failing_marks_only_its_score(provider, monkeypatch):
    recorded, _, rate_limit, _, _ = RECORDED[provider]
    server = Server(*[recorded.error_response(429, rate_limit) for _ in range(2)])
    judge = evals.llm_judge(
        judge_for(provider, server, monkeypatch),
        "Is the answer correct?",
        max_attempts=2,
        initial_delay=0,
        max_delay=0,
    )
    report = await evals.evaluate(agent(), CASES, [judge, evals.contains()], show=False)
    case = report.cases[0]
    assert case.status == "success" and case.output == "Paris"
    assert case.scores["contains"] is True and case.scores["llm_judge"] is None
    assert (
        "429" in case.details["llm_judge"].error
        or "rate" in case.details["llm_judge"].error.lower()
    )
    assert not case.passed

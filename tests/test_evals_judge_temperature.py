"""``evals.llm_judge`` asks for temperature 0, as Anvia's judge, so a case is graded the same each
time; a model that refuses it (OpenAI's reasoning models, Claude with extended thinking) is
asked at its own temperature instead, from then on; a model that cannot send it (an
``AnthropicModel`` on the 2.x SDK) is not asked, so it warns of nothing. OpenAI's refusal is
its error body as documented, not a recording."""

from __future__ import annotations

import inspect
import warnings
from typing import Any

import anthropic
import httpx
import openai
import pytest
from anthropic import _base_client as anthropic_base_client
from openai import _base_client as openai_base_client

from anvia_notebook import AgentBuilder, evals
from anvia_notebook.models import FunctionModel, ModelError
from anvia_notebook.models.anthropic import AnthropicModel
from anvia_notebook.models.openai import OpenAIModel

from provider_replay import Recorded, Server

openai_http = Recorded(getattr(openai_base_client, "httpx2", None) or httpx)
anthropic_http = Recorded(getattr(anthropic_base_client, "httpx2", None) or httpx)

CASES = [
    evals.Case(name="first", input="capital of France?", expected="Paris"),
    evals.Case(name="second", input="capital of France, again?", expected="Paris"),
]
VERDICT = '{"score": 1, "reasoning": "Right."}'


def agent() -> Any:
    return AgentBuilder("geo", FunctionModel(lambda request: "Paris")).build()


def openai_judge(server: Server, monkeypatch) -> Any:
    openai_http.route(monkeypatch, openai, "AsyncOpenAI", server)
    return OpenAIModel("o4-mini", api_key="sk-test")


async def test_the_judge_asks_for_temperature_zero(monkeypatch):
    server = Server(openai_http.sse("openai_judge_verdict.sse"))
    judge = evals.llm_judge(openai_judge(server, monkeypatch), "Is it right?")
    report = await evals.evaluate(agent(), CASES[:1], [judge], show=False)
    assert report.cases[0].scores == {"llm_judge": 0.8}
    assert server.body(0)["temperature"] == 0


async def test_a_reasoning_model_that_refuses_temperature_zero_is_asked_at_its_own(monkeypatch):
    refusal = openai_http.error_response(400, "openai_error_temperature.json")
    verdict = openai_http.sse("openai_judge_verdict.sse")
    server = Server(refusal, verdict, openai_http.sse("openai_judge_verdict.sse"))
    judge = evals.llm_judge(openai_judge(server, monkeypatch), "Is it right?")
    report = await evals.evaluate(agent(), CASES, [judge], show=False)
    for case in report.cases:
        assert case.details["llm_judge"].error is None
        assert case.scores == {"llm_judge": 0.8}
    # refused once, then every case asked without it (and not refused again)
    assert len(server.requests) == 3
    assert server.body(0)["temperature"] == 0
    assert "temperature" not in server.body(1) and "temperature" not in server.body(2)


REFUSALS = [
    # Claude with extended thinking
    (400, "Anthropic API error 400: `temperature` may only be set to 1 when thinking is enabled."),
    # an OpenAI-compatible server that checks requests with a schema (it was every case's score)
    (422, "OpenAI API error 422: body.temperature: Input should be greater than 0."),
]


@pytest.mark.parametrize(("status", "message"), REFUSALS)
async def test_any_model_refusing_its_temperature_is_asked_at_its_own(status, message):
    asked = []

    def judge_model(request):
        asked.append(request.temperature)
        if request.temperature is not None:
            raise ModelError(message, status_code=status)
        return VERDICT

    judge = evals.llm_judge(FunctionModel(judge_model), "Is it right?")
    report = await evals.evaluate(agent(), CASES, [judge], show=False)
    assert [case.scores for case in report.cases] == [{"llm_judge": 1.0}] * 2
    assert asked == [0, None, None]


async def test_another_bad_request_still_marks_the_score_at_once(monkeypatch):
    server = Server(openai_http.error_response(400, "openai_error_400.json"))
    judge = evals.llm_judge(openai_judge(server, monkeypatch), "Is it right?")
    report = await evals.evaluate(agent(), CASES[:1], [judge], show=False)
    assert len(server.requests) == 1
    assert "400" in report.cases[0].details["llm_judge"].error


async def test_a_model_that_cannot_send_a_temperature_is_not_asked_for_one(monkeypatch):
    server = Server(anthropic_http.sse("anthropic_judge_verdict.sse"))
    anthropic_http.route(monkeypatch, anthropic, "AsyncAnthropic", server)
    model = AnthropicModel("claude-sonnet-4-6", api_key="sk-ant-test")
    judge = evals.llm_judge(model, "Is it right?")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (it warned that the temperature was not sent)
        report = await evals.evaluate(agent(), CASES[:1], [judge], show=False)
    assert report.cases[0].scores == {"llm_judge": 0.3}
    sends = "temperature" in inspect.signature(model.client.messages.create).parameters
    assert server.body(0).get("temperature") == (0 if sends else None)

"""``llm_judge``: a model grades the output against your rubric, with a score and its reasoning."""

from __future__ import annotations

import inspect
import json
import re
import sys
from typing import Any

from ..agent import model_given_as_text
from ..errors import ModelError
from .cases import Case
from .metrics import DEFAULT_THRESHOLD, Metric, Score, checked_threshold, expected_text

__all__ = ["JUDGE_INSTRUCTIONS", "llm_judge", "parse_verdict"]

JUDGE_INSTRUCTIONS = (
    "You grade the answer of an AI agent against a rubric. Read the rubric, the task given to "
    "the agent, the expected answer (when there is one) and the agent's answer. Reply with one "
    'JSON object and nothing else: {"score": <a number from 0 to 1>, "reasoning": "<one or two '
    'sentences>"}. 1 means the answer fully meets the rubric, 0 that it does not at all.'
)


#: Where a JSON object can start: a ``{`` then (after spaces) a key's quote or the closing ``}``
#: (the ``{`` of prose, ``{A1}``, is passed over without reading on from it).
_OBJECT_START = re.compile(r'\{\s*["}]')

#: The most starts tried that are not an object, so a reply made of them is read in time
#: linear in its length (each try can read on to its end).
_MOST_FAILED_STARTS = 64


def _verdict_object(text: str) -> Any:
    """The first JSON object of ``text`` that has a ``score`` (each ``{`` tried in turn, an
    object read whole is passed over with the ``{`` inside it); ``ValueError`` saying why there
    is none. Read in time linear in the reply, whatever a judge writes (a regular expression
    for the object took time quadratic in a reply of many ``{``)."""
    first = text.find("{")
    if first == -1 or text.rfind("}") < first:
        raise ValueError(f"The judge's reply has no JSON object: {text[:200]!r}")
    decoder = json.JSONDecoder()
    error: Exception | None = None
    failed = 0
    objects = 0
    resume = 0
    for start in _OBJECT_START.finditer(text):
        if start.start() < resume:
            continue  # (inside an object already read)
        try:
            data, resume = decoder.raw_decode(text, start.start())
        except (json.JSONDecodeError, RecursionError) as failure:  # (nested beyond reading)
            error = error or failure
            failed += 1
            if failed == _MOST_FAILED_STARTS:
                break
            continue
        if isinstance(data, dict) and "score" in data:
            return data
        objects += 1
    if objects:
        raise ValueError(f"The judge's reply has no score: {text[:200]!r}")
    if error is None:  # (no "{" starts an object: the reason the first one does not)
        try:
            decoder.raw_decode(text, first)
        except (json.JSONDecodeError, RecursionError) as failure:
            error = failure
    raise ValueError(f"The judge's reply is not valid JSON ({error}): {text[:200]!r}")


def parse_verdict(text: str) -> tuple[float, str]:
    """The ``score`` (0..1) and ``reasoning`` of a judge's JSON reply (code fences and text
    around the object are tolerated, a ``{`` or ``}`` of that text too: the first object with
    a ``score`` is the verdict); ``ValueError`` when the reply has no usable verdict."""
    data = _verdict_object(text or "")
    if not isinstance(data, dict) or "score" not in data:
        raise ValueError(f"The judge's reply has no score: {text[:200]!r}")
    score = data["score"]
    if isinstance(score, str):
        try:
            score = float(score)
        except ValueError:
            raise ValueError(f"The judge's score is not a number: {score!r}") from None
    if isinstance(score, bool) or not isinstance(score, (int, float)):
        raise ValueError(f"The judge's score is not a number: {score!r}")
    if not 0.0 <= float(score) <= 1.0:
        raise ValueError(f"The judge's score {score} is outside 0..1.")
    reasoning = data.get("reasoning", "")
    return float(score), reasoning if isinstance(reasoning, str) else json.dumps(reasoning)


def _takes_temperature(model: Any) -> bool:
    """Whether a temperature asked of ``model`` is sent: an ``AnthropicModel`` on an SDK without
    sampling parameters (2.x, whose API version refuses them) leaves it out, with a warning."""
    anthropic = sys.modules.get("anvia_notebook.models.anthropic")
    if anthropic is None or not isinstance(model, anthropic.AnthropicModel):
        return True
    try:
        return "temperature" in inspect.signature(model.client.messages.create).parameters
    except (AttributeError, TypeError, ValueError):
        return True


def _refuses_temperature(error: ModelError) -> bool:
    """Whether the provider refused the request for its temperature (OpenAI's reasoning models:
    "Unsupported value: 'temperature' does not support 0 with this model"; Claude with extended
    thinking: "temperature may only be set to 1 when thinking is enabled"; servers that check
    requests with a schema answer 422, "temperature: Input should be greater than 0")."""
    return error.status_code in (400, 422) and "temperature" in str(error).lower()


def _prompt(rubric: str, case: Case, output: str) -> str:
    parts = [f"## Rubric\n{rubric}", f"## Task given to the agent\n{case.input}"]
    if case.expected is not None:
        parts.append(f"## Expected answer\n{expected_text(case.expected)}")
    parts.append(f"## The agent's answer\n{output}")
    parts.append('Reply with {"score": ..., "reasoning": "..."} only.')
    return "\n\n".join(parts)


def llm_judge(
    model: Any,
    rubric: str,
    *,
    name: str = "llm_judge",
    threshold: float = DEFAULT_THRESHOLD,
    max_attempts: int = 5,
    initial_delay: float = 1.0,
    max_delay: float = 20.0,
) -> Metric:
    """A model (any model of ours: ``OpenAIModel``, ``AnthropicModel``, an offline one) scores
    each output from 0 to 1 against ``rubric``; the score passes at ``>= threshold`` and the
    judge's reasoning is kept (``case.details[name].reason``).

    The judge is asked at temperature 0 (as Anvia's); a model that refuses it (OpenAI's reasoning
    models) is asked at its own temperature from then on.

    Rate limits and other transient provider failures are retried (``max_attempts`` in all,
    backoff from ``initial_delay`` to ``max_delay`` seconds), so they do not count as failures.
    A reply without a usable verdict marks that score as an error.
    """
    if isinstance(model, str):
        raise TypeError(f"llm_judge(model, rubric): {model_given_as_text(model)}")
    if not hasattr(model, "stream"):
        raise TypeError("llm_judge(model, rubric): model must be a model (with a stream method).")
    if not isinstance(rubric, str) or not rubric.strip():
        raise ValueError("llm_judge(model, rubric): the rubric must be a non-empty string.")
    checked = checked_threshold(threshold, name)
    if not 0.0 <= checked <= 1.0:
        raise ValueError(
            f"llm_judge(): the threshold {checked} is outside 0..1, the judge's scale (no score "
            "would pass, or every one would)."
        )
    from ..agent import AgentBuilder

    builder = AgentBuilder(f"{name}-judge", model).instructions(JUDGE_INSTRUCTIONS)
    # Asked at temperature 0, as Anvia's judge, so a case is graded the same each time; a model
    # that refuses it (OpenAI's reasoning models, Claude with extended thinking) is asked at its
    # own from then on, and one that cannot send it is not asked.
    at_its_own = builder.build()
    judges = (
        [builder.temperature(0).build(), at_its_own] if _takes_temperature(model) else [at_its_own]
    )
    # Validated now, not at the first case.
    from ..retry import CompletionRetries

    CompletionRetries(max_attempts, initial_delay, max_delay)

    async def ask(judge: Any, prompt: str) -> Any:
        request = (
            judge.prompt(prompt)
            .store(None)  # the judge's own calls are not runs of the agent under test
            .with_completion_retries(max_attempts, initial_delay, max_delay)
        )
        return await request.send()

    async def fn(case: Case, output: str) -> Score:
        prompt, judge = _prompt(rubric, case, output), judges[0]
        try:
            response = await ask(judge, prompt)
        except ModelError as error:
            if judge is at_its_own or not _refuses_temperature(error):
                raise
            if judges[0] is judge:  # (the other cases too, from now on)
                del judges[0]
            response = await ask(at_its_own, prompt)
        score, reasoning = parse_verdict(response.output)
        return Score(score, score >= checked, reason=reasoning)

    return Metric(name, fn, threshold=checked)

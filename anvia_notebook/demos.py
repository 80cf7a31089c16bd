"""Scripted conversations for the tutorial notebooks: the offline stand-in for a real model.

``support_model()`` returns a real provider when ``OPENAI_API_KEY`` or ``ANTHROPIC_API_KEY`` is
set, and otherwise a :class:`~anvia_notebook.models.DemoModel` that plays the customer-support
scenarios of the tutorials (order status, refunds, cancellations, escalations with questions,
a slow export), so every notebook runs without a key.
"""

from __future__ import annotations

from typing import Any

from .models import DemoContext, DemoModel, ModelResponse, Script, ToolCall, auto_model
from .models.demo import ran_with_edits, tool_output

__all__ = ["greeter_demo", "greeter_model", "support_demo", "support_model"]


def _not_done(result: Any, what: str) -> str:
    """How a model would word a call that did not run: nobody decided in time, or a refusal."""
    text = str(result)
    if "timed out" in text:
        return f"{what} did not happen: nobody decided in time, so the call was not made."
    return f"{what} did not happen. {text}"


def _answers(ctx: DemoContext) -> dict[str, str]:
    result = ctx.result("ask_question") or {}
    return {a["questionId"]: a["answer"] for a in result.get("answers", [])}


def _order_status(ctx: DemoContext) -> str:
    status = ctx.result("get_order_status")
    if not isinstance(status, dict):
        return f"I could not look the order up: {status}"
    return (
        f"Order **{status.get('order_id')}** is *{status.get('status')}*"
        f" and should arrive on {status.get('eta', 'an unknown date')}."
    )


#: A refund result's ``status`` that says it did not go through.
_FAILED = {"failed", "failure", "error", "declined", "denied", "rejected", "cancelled", "canceled"}
#: Words of the texts a call that did not run returns instead (a refusal, a timeout). Used only
#: for a plain-text result the request does not mark as an error: see :func:`_refund_outcome`.
_NOT_RUN = (
    "rejected",
    "refused",
    "declined",
    "denied",
    "not approved",
    "not executed",
    "timed out",
)


def _refund_outcome(ctx: DemoContext) -> str:
    """A refund happened unless its result is an error or says it failed.

    Decided from what the request carries, in this order:

    - the result is marked ``is_error`` (the tool raised, could not run, or the run stopped it):
      not done, whatever its text says;
    - an object result (``{"refund_id": ...}``) is the tool's own answer: done, unless its
      ``status`` is a failure (or ``ok``/``success`` is false); its other fields (a customer's
      note, a message) are not read;
    - a plain text: a rejected, timed-out or hook-skipped call gets a text result that is not
      marked as an error either, and nothing else in the request tells it apart from a tool that
      answered with text. Only here are words read: a text saying the call was refused or timed
      out is reported as not done, and any other text is quoted as not confirmed (never as done).
    """
    part = next((p for p in reversed(ctx.tool_results) if p.tool_name == "issue_refund"), None)
    if part is None:
        return "The refund did not happen: the refund tool was not called."
    result = ctx.result("issue_refund")
    if part.is_error:
        return _not_done(tool_output(part), "The refund")
    edited = " (with the arguments you changed)" if ran_with_edits(part) else ""
    if isinstance(result, dict):
        status = str(result.get("status", "")).lower()
        if status in _FAILED or result.get("ok") is False or result.get("success") is False:
            return _not_done(tool_output(part), "The refund")
        if result.get("refund_id"):
            return f"Done: refund `{result['refund_id']}` was issued for order A1001{edited}."
        return f"Done: the refund for order A1001 was issued{edited}."
    text = " ".join(tool_output(part).split())
    if not text:
        return f"Done: the refund for order A1001 was issued{edited}."
    if any(word in text.lower() for word in _NOT_RUN):
        return _not_done(text, "The refund")
    return f"The refund for order A1001 was not confirmed: {text}"


def _export_outcome(ctx: DemoContext) -> str:
    result = ctx.result("export_orders")
    if result == "all orders exported":
        return "Export finished: all orders exported."
    return _not_done(result, "The export")


def _cancel_outcome(ctx: DemoContext) -> str:
    result = ctx.result("cancel_order")
    if isinstance(result, dict) and result.get("cancelled"):
        return f"Order {result.get('order_id')} is cancelled."
    return _not_done(result, "The cancellation")


def _escalate(ctx: DemoContext) -> ModelResponse:
    answers = _answers(ctx)
    if not answers:
        return ModelResponse(text="Nobody answered my questions, so I did not escalate the ticket.")
    return ModelResponse(
        text="Thanks, preparing the escalation.",
        tool_calls=[
            ToolCall(
                id="call_escalate",
                name="prepare_escalation",
                arguments={
                    "ticket_id": "T-42",
                    "priority": answers.get("priority", "normal"),
                    "channel": answers.get("channel", "email"),
                    "note": answers.get("note", ""),
                },
            )
        ],
    )


def _escalation_done(ctx: DemoContext) -> str:
    result = ctx.result("prepare_escalation")
    if isinstance(result, dict):
        return (
            f"Escalation `{result.get('escalation_id')}` is ready: "
            f"priority **{result.get('priority')}** via {result.get('channel')}."
        )
    return f"The escalation was not prepared: {result}"


ESCALATION_QUESTIONS: dict[str, Any] = {
    "questions": [
        {
            "id": "priority",
            "question": "What priority should this escalation have?",
            "choices": [
                {"label": "High", "value": "high"},
                {"label": "Normal", "value": "normal"},
                {"label": "Low", "value": "low"},
            ],
        },
        {
            "id": "channel",
            "question": "Which channel should the specialist team use?",
            "choices": [
                {"label": "Email", "value": "email"},
                {"label": "Phone", "value": "phone"},
                {"label": "Slack", "value": "slack"},
            ],
        },
        {
            "id": "note",
            "question": "Any note for the specialist?",
            "choices": [{"label": "No note", "value": "none"}],
        },
    ]
}


def _tool_call_then(
    match: str, text: str, call_id: str, tool: str, arguments: dict[str, Any], *then: Any
) -> Script:
    """A scenario: the model says ``text`` and calls ``tool`` once; ``then`` are its next steps
    (what it says once the result is back)."""
    call = ToolCall(id=call_id, name=tool, arguments=arguments)
    return Script(match, [ModelResponse(text=text, tool_calls=[call]), *then])


def support_demo(delay: float = 0.015) -> DemoModel:
    """The offline model that plays every tutorial scenario."""
    return DemoModel(
        [
            _tool_call_then(
                r"where is|status of|track",
                "Let me look that up.",
                "call_status",
                "get_order_status",
                {"order_id": "A1001"},
                _order_status,
            ),
            _tool_call_then(
                r"refund",
                "I'll issue the refund; it needs a reviewer's approval.",
                "call_refund",
                "issue_refund",
                {"order_id": "A1001", "amount": 25.0, "reason": "Item arrived damaged"},
                _refund_outcome,
            ),
            _tool_call_then(
                r"cancel",
                "I'll cancel it.",
                "call_cancel",
                "cancel_order",
                {"order_id": "A1002"},
                _cancel_outcome,
            ),
            _tool_call_then(
                r"escalat",
                "I need a few details before I escalate.",
                "call_questions",
                "ask_question",
                ESCALATION_QUESTIONS,
                _escalate,
                _escalation_done,
            ),
            _tool_call_then(
                r"export",
                "Starting the export; it takes a while.",
                "call_export",
                "export_orders",
                {"seconds": 30},
                _export_outcome,
            ),
            Script(
                r"hello|hi\b|help",
                [
                    "Hello! I'm the support agent. Ask me **where an order is**, to **refund** or "
                    "**cancel** one, or to **escalate** a ticket."
                ],
            ),
        ],
        delay=delay,
    )


def support_model(delay: float = 0.015) -> Any:
    """A real model when a provider key is set, else :func:`support_demo`."""
    return auto_model(support_demo(delay))


def greeter_demo(delay: float = 0.015) -> DemoModel:
    """The offline model of a greeting agent (tutorial 07's second agent)."""
    return DemoModel(
        [
            Script(
                r".",
                [
                    "Hello and welcome! I'm the greeter: I say hello and point you to the "
                    "**Support agent** for orders, refunds and escalations."
                ],
            )
        ],
        delay=delay,
    )


def greeter_model(delay: float = 0.015) -> Any:
    """A real model when a provider key is set, else :func:`greeter_demo`."""
    return auto_model(greeter_demo(delay))

"""A static copy of a transcript, for places where no widget runs (GitHub, nbviewer, text).

:func:`render_html` gives escaped HTML without any script, style sheet or event attribute:
every text (model markdown included) is escaped and shown as preformatted text, and tool calls
are ``<details>`` blocks. :func:`render_text` gives a plain-text version.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any

from .protocol import TOOL_STATUS_LABELS

__all__ = ["render_html", "render_text"]

_STATE_LABELS = {
    "idle": "Idle",
    "running": "Running",
    "waiting": "Waiting for you",
    "success": "Done",
    "error": "Error",
    "cancelled": "Cancelled",
}
_BOX = "border:1px solid #d0d7de;border-radius:6px;padding:8px 12px;margin:6px 0"
_PRE = "white-space:pre-wrap;word-break:break-word;margin:4px 0;font-family:inherit"
_CODE = "white-space:pre-wrap;word-break:break-word;margin:4px 0"
#: The most characters of one field a static copy keeps (the rest is cut, with a note).
MAX_FIELD = 20_000


def _cut(text: str) -> str:
    if len(text) <= MAX_FIELD:
        return text
    return f"{text[:MAX_FIELD]}\n… ({len(text) - MAX_FIELD} more characters)"


def _pretty(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments), indent=2, ensure_ascii=False)
    except (TypeError, ValueError):
        return arguments


def _status_line(status: dict[str, Any]) -> str:
    label = _STATE_LABELS.get(status.get("state", ""), str(status.get("state")))
    parts = [label]
    if status.get("agent_id"):
        parts.append(f"agent {status['agent_id']}")
    if status.get("turn"):
        parts.append(f"turn {status['turn']}")
    tokens = int(status.get("input_tokens") or 0) + int(status.get("output_tokens") or 0)
    if tokens:
        parts.append(
            f"{status.get('input_tokens', 0)} in / {status.get('output_tokens', 0)} out tokens"
        )
    if status.get("error"):
        parts.append(f"error: {status['error']}")
    return " · ".join(parts)


def _pre(text: str, style: str = _PRE) -> str:
    return f'<pre style="{style}">{escape(_cut(text))}</pre>'


def _tool_html(entry: dict[str, Any]) -> str:
    label = TOOL_STATUS_LABELS.get(entry.get("status", ""), str(entry.get("status")))
    parts = [
        f'<details style="{_BOX}"><summary><strong>Tool</strong> <code>'
        f"{escape(entry.get('tool_name') or '')}</code> — {escape(label)}</summary>",
        "<div><em>Arguments</em></div>",
        _pre(_pretty(entry.get("arguments") or ""), _CODE),
    ]
    approval = entry.get("approval")
    if approval:
        line = f"Approval: {approval.get('status')}"
        if approval.get("decided_by"):
            line += f" by {approval['decided_by']}"
        if approval.get("reason"):
            line += f". Reason asked: {approval['reason']}"
        if approval.get("decision_reason"):
            line += f". Decision: {approval['decision_reason']}"
        if approval.get("edited_args"):
            line += f". Edited arguments: {json.dumps(approval['edited_args'])}"
        parts.append(f"<div>{escape(line)}</div>")
    question = entry.get("question")
    if question:
        answers = {a.get("questionId"): a.get("answer") for a in question.get("answers", [])}
        items = []
        for item in question.get("questions", []):
            answer = answers.get(item.get("id"))
            shown = escape(answer) if answer else f"<em>{escape(question.get('status', ''))}</em>"
            items.append(f"<li>{escape(item.get('question', ''))} — {shown}</li>")
        parts.append(f"<div><em>Questions</em></div><ul>{''.join(items)}</ul>")
    if entry.get("output"):
        parts.append("<div><em>Output</em></div>")
        parts.append(_pre(entry["output"], _CODE))
    if entry.get("result") is not None:
        parts.append(f"<div><em>{'Error' if entry.get('is_error') else 'Result'}</em></div>")
        parts.append(_pre(entry["result"], _CODE))
    parts.append("</details>")
    return "".join(parts)


def _entry_html(entry: dict[str, Any]) -> str:
    kind = entry.get("kind")
    text = entry.get("text") or ""
    if kind == "user":
        return f'<div style="{_BOX}"><strong>You</strong>{_pre(text)}</div>'
    if kind == "assistant":
        return f'<div style="{_BOX}"><strong>Assistant</strong>{_pre(text)}</div>'
    if kind == "reasoning":
        return (
            f'<details style="{_BOX}"><summary><em>Reasoning</em></summary>{_pre(text)}</details>'
        )
    if kind == "tool":
        return _tool_html(entry)
    if kind == "error":
        return f'<div style="{_BOX};border-color:#cf222e"><strong>Error</strong>{_pre(text)}</div>'
    return f"<div><em>{escape(text)}</em></div>"


def render_html(transcript: dict[str, Any], title: str = "Anvia transcript") -> str:
    """The transcript (the wire ``Transcript``) as safe static HTML."""
    body = "".join(_entry_html(entry) for entry in transcript.get("entries", []))
    status = escape(_status_line(transcript.get("status", {})))
    return (
        '<div class="anvia-static-transcript">'
        f"<div><strong>{escape(title)}</strong> — {status}</div>{body}</div>"
    )


def render_text(transcript: dict[str, Any], title: str = "Anvia transcript") -> str:
    """The transcript as plain text."""
    lines = [f"{title} — {_status_line(transcript.get('status', {}))}"]
    for entry in transcript.get("entries", []):
        kind = entry.get("kind")
        text = _cut(entry.get("text") or "")
        if kind == "user":
            lines.append(f"You: {text}")
        elif kind == "assistant":
            lines.append(f"Assistant: {text}")
        elif kind == "reasoning":
            lines.append(f"(reasoning) {text}")
        elif kind == "tool":
            label = TOOL_STATUS_LABELS.get(entry.get("status", ""), entry.get("status"))
            lines.append(f"Tool {entry.get('tool_name')} [{label}] {entry.get('arguments')}")
            if entry.get("output"):
                lines.append(f"  output: {_cut(entry['output']).rstrip()}")
            if entry.get("result") is not None:
                lines.append(f"  result: {_cut(entry['result'])}")
        elif kind == "error":
            lines.append(f"Error: {text}")
        else:
            lines.append(f"-- {text}")
    return "\n".join(lines)

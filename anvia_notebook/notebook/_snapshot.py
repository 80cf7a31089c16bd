"""A static copy of a transcript, for places where no widget runs (GitHub, nbviewer, text).

:func:`render_html` gives HTML without any script, style sheet or event attribute: the model's
replies are markdown rendered and sanitised as the live view draws them, every other text is
escaped and shown as preformatted text, and tool calls are ``<details>`` blocks. A copy made
while the run waits for a person says what waits, the run's id, and how to resume or decide
it. :func:`render_text` gives a plain-text version.

A reply is labelled as the live page labels it: in a Studio (``agent_names`` given), with the name
of the agent whose conversation the copy shows (its id when it has no name); "Assistant"
elsewhere.

Both go into the saved notebook, so both are bounded: every field is cut (with a visible
"… (N more characters)" note), a tool's question list too, and once a copy reaches
:data:`MAX_TOTAL` characters the remaining entries are left out (with a note).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from html import escape
from typing import Any

from ..records import path_label
from ._markdown import render_markdown
from ._protocol import TOOL_STATUS_LABELS
from ._wire_text import show_invisibles, show_overrides, valid_text

__all__ = ["render_html", "render_text"]

_STATE_LABELS = {
    "idle": "Idle",
    "running": "Running",
    "waiting": "Waiting for you",
    "success": "Done",
    "error": "Error",
    "cancelled": "Cancelled",
}
_BY_PERSON = {
    "widget": "by you",
    "handle": "from code in the notebook",
    "store": "through the run store",
    "cli": "from the terminal",
    "human_input": "by the human input",
}
_BY = {
    "handler": "by the approval handler",
    "stop": "when the run was stopped",
    "runtime": "by the runtime",
}
#: The frame, font and colours of the widget (JupyterLab's theme variables where they exist), so
#: that the copy replacing a finished run's widget looks like it.
_ROOT = (
    "border:1px solid var(--jp-border-color1,#d1d9e0);border-radius:6px;padding:8px 12px;"
    "font-family:var(--jp-ui-font-family,system-ui,-apple-system,'Segoe UI',sans-serif);"
    "font-size:var(--jp-ui-font-size1,13px);line-height:1.5;color:var(--jp-ui-font-color1,inherit)"
)
_BOX = (
    "border:1px solid var(--jp-border-color2,#d0d7de);border-radius:6px;padding:8px 12px;"
    "margin:6px 0"
)
_PRE = "white-space:pre-wrap;word-break:break-word;margin:4px 0;font-family:inherit"
_CODE = "white-space:pre-wrap;word-break:break-word;margin:4px 0"
#: The most characters of one field a static copy keeps (the rest is cut, with a note).
MAX_FIELD = 20_000
#: The most characters one field's markdown may take as HTML; beyond, it is kept as text.
MAX_RENDERED = 3 * MAX_FIELD
#: The same for short fields: names, reasons, questions, answers, the status line.
MAX_SHORT = 2_000
#: The most characters of a run's error its status line says (``STATUS_ERROR_CHARS`` in
#: js/src/views/status.ts).
STATUS_ERROR_CHARS = 200
#: How a copy says to run the command line when it is not told (``python`` of the kernel).
DEFAULT_CLI = "python -m anvia_notebook"
#: The most questions of one tool entry listed.
MAX_ITEMS = 50
#: About the most characters of a whole copy: entries after it are left out (one entry may end
#: past it by its markup, a few kB at most).
MAX_TOTAL = 200_000
#: The most base64 characters of one tool image a static copy keeps (about 48 KB of image); a
#: larger one is named instead. Images count against :data:`MAX_TOTAL` too.
MAX_IMAGE = 64_000
_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")


class _Budget:
    """The characters a copy may still take."""

    def __init__(self, total: int = MAX_TOTAL) -> None:
        self.left = total

    def take(self, count: int) -> None:
        self.left -= count


def _plural(count: int, noun: str) -> str:
    """``count`` and its noun, in the singular for one ("1 question", "3 questions")."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _more(count: int, sep: str) -> str:
    return f"{sep}… ({_plural(count, 'more character')})"


def _cut(text: str, limit: int = MAX_FIELD, budget: _Budget | None = None, sep: str = "\n") -> str:
    """At most ``limit`` characters of ``text`` (and of what the budget has left), noted if cut."""
    if budget is not None:
        limit = max(0, min(limit, budget.left))
    kept = text if len(text) <= limit else text[:limit]
    if budget is not None:
        budget.take(len(kept))
    return kept if len(kept) == len(text) else kept + _more(len(text) - len(kept), sep)


def _esc(text: Any, limit: int = MAX_SHORT, budget: _Budget | None = None, sep: str = " ") -> str:
    """``text`` escaped for HTML, at most ``limit`` characters once escaped, noted if cut."""
    text = text if isinstance(text, str) else str(text)
    if budget is not None:
        limit = max(0, min(limit, budget.left))
    kept = min(len(text), limit)
    out = escape(text[:kept])
    while len(out) > limit:  # escaping made it longer: keep proportionally less
        kept = kept * limit // len(out)
        out = escape(text[:kept])
    if budget is not None:
        budget.take(len(out))
    return out if kept == len(text) else out + escape(_more(len(text) - kept, sep))


def _pretty(arguments: str) -> str:
    """Arguments' JSON pretty-printed, invisible controls shown as escapes (see
    :func:`show_invisibles`)."""
    try:
        return show_invisibles(json.dumps(json.loads(arguments), indent=2, ensure_ascii=False))
    except (TypeError, ValueError, RecursionError):  # (nested too deeply: shown as sent)
        return show_invisibles(arguments)


def _status_line(status: dict[str, Any]) -> str:
    label = _STATE_LABELS.get(status.get("state", ""), _cut(str(status.get("state")), MAX_SHORT))
    parts = [label]
    if status.get("agent_id"):
        parts.append(f"agent {_cut(str(status['agent_id']), MAX_SHORT, sep=' ')}")
    if status.get("turn"):
        parts.append(f"turn {status['turn']}")
    tokens = int(status.get("input_tokens") or 0) + int(status.get("output_tokens") or 0)
    if tokens:
        parts.append(
            f"{status.get('input_tokens', 0)} in / {status.get('output_tokens', 0)} out tokens"
        )
    if status.get("error"):
        parts.append(f"error: {_error_summary(str(status['error']))}")
    return " · ".join(parts)


def _error_summary(error: str) -> str:
    """A run's error as the status line says it (``errorSummary`` in js/src/views/status.ts):
    its first line, cut to :data:`STATUS_ERROR_CHARS` (noted as any cut in the copy). The whole
    error is the copy's error entry (a provider's error can hold a whole HTML page)."""
    text = error.strip()
    shown = text.split("\n", 1)[0].strip()[:STATUS_ERROR_CHARS]
    return shown if len(shown) == len(text) else shown + _more(len(text) - len(shown), " ")


def _reply_label(transcript: dict[str, Any], agent_names: Mapping[str, str] | None) -> str:
    """Who the replies are from, as the page's ``replyLabel``: in a Studio, the agent whose
    conversation it is (the status line's agent), by name, else by id; "Assistant" elsewhere.
    On one line (the name is user text: its line breaks must not start lines of the copy)."""
    agent_id = transcript.get("status", {}).get("agent_id")
    if not agent_names or not isinstance(agent_id, str) or agent_id not in agent_names:
        return "Assistant"
    return " ".join(str(agent_names[agent_id]).split()) or agent_id


def _pre(text: str, budget: _Budget, style: str = _PRE) -> str:
    return f'<pre style="{style}">{_esc(text, MAX_FIELD, budget, sep=chr(10))}</pre>'


def _markdown(text: str, budget: _Budget) -> str:
    """Model markdown rendered and sanitised as the live view shows it, bounded like a field."""
    limit = max(0, min(MAX_FIELD, budget.left))
    kept = text[:limit]
    html = render_markdown(kept)
    if len(html) > min(MAX_RENDERED, budget.left):
        # Markdown that renders many times its size (a wide table of short rows pads every
        # row to every column): kept as its text, escaped, within the field's bound.
        piece = kept if len(escape(kept)) <= limit else kept[: limit // 6]
        note = f"(shown as text: as HTML it would take {len(html):,} characters)"
        html = f'<p style="{_PRE}">{escape(piece)}</p><p><em>{note}</em></p>'
        kept = piece
    budget.take(len(html))
    if len(kept) < len(text):
        html += f"<p><em>{escape(_more(len(text) - len(kept), ''))}</em></p>"
    return f'<div class="anvia-static-markdown">{html}</div>'


def _waiting_html(transcript: dict[str, Any], cli: str) -> str:
    """For a copy saved while the run waits for a person: what waits, the run's id, and how to
    go on from a kernel or a terminal (``cli``: how to run the command line there)."""
    lines = _waiting_lines(transcript, cli)
    if not lines:
        return ""
    head, *rest = lines
    items = "".join(f"<li><code>{escape(line)}</code></li>" for line in rest)
    return (
        f'<div style="{_BOX};border-color:#bf8700"><strong>{escape(head)}</strong>'
        f"<ul>{items}</ul></div>"
    )


def _waiting_lines(transcript: dict[str, Any], cli: str) -> list[str]:
    run_id = transcript.get("status", {}).get("run_id")
    if not isinstance(run_id, str) or not run_id:
        return []
    waiting = []
    for entry in transcript.get("entries", []):
        for field, command in (("approval", "approve"), ("question", "answer")):
            item = entry.get(field)
            if isinstance(item, dict) and item.get("status") == "pending":
                if item.get("fix_required"):  # approving it needs the fixed arguments
                    command = "fix"
                waiting.append((command, str(item.get("id")), _tool_label(entry), _call_of(entry)))
    run = _cut(run_id, MAX_SHORT, sep=" ")
    if not waiting and transcript.get("status", {}).get("state") == "running":
        # (a copy the kernel never replaced: it stopped before the run ended)
        return [
            f"Run {run} was running when this copy was made. If its kernel stopped before "
            "the run ended, resume it in a notebook with the agent that started it:",
            f'agent.resume("{run}").show()',
        ]
    if not waiting:
        return []
    lines = [
        f"Run {run} was waiting for a decision when this copy was made. In a notebook, "
        "resume it with the agent that started it; from a terminal, decide it:",
        f'agent.resume("{run}").show()',
    ]
    for command, item_id, tool, call in waiting[:MAX_ITEMS]:
        item = _cut(item_id, MAX_SHORT, sep=" ")
        if command == "approve":
            lines.append(f"{cli} approve {run} {item}  (or reject: {tool}){call}")
        elif command == "fix":
            lines.append(
                f"{cli} approve {run} {item} --args '{{...the fixed arguments...}}'  "
                f"(or reject: {tool}){call}"
            )
        else:
            lines.append(
                f'{cli} answer {run} {item} --json \'[{{"questionId": "...", "answer": "..."}}]\''
                f"{call}"
            )
    if len(waiting) > MAX_ITEMS:
        lines.append(f"... and {len(waiting) - MAX_ITEMS} more: {cli} show {run} lists them all.")
    return lines


#: How much of a call's arguments a command line of the saved copy repeats.
CALL_PREVIEW = 80


def _call_of(entry: dict[str, Any]) -> str:
    """What tells a waiting command's call from the others: `` for {arguments}``, cut short."""
    arguments = entry.get("arguments")
    if not isinstance(arguments, str) or not arguments.strip() or arguments.strip() == "{}":
        return ""
    return f"  for {_cut(show_invisibles(' '.join(arguments.split())), CALL_PREVIEW, sep=' ')}"


def _edited_args(entry: dict[str, Any]) -> Any:
    """The arguments a person put in place of the model's before approving (None: none)."""
    approval = entry.get("approval") or {}
    edited = approval.get("edited_args")
    if approval.get("status") != "approved" or not edited or edited == approval.get("args"):
        return None
    return edited


def decider_words(by: Any, via: Any) -> str:
    """Who decided and from where, in the words of the live view ("from the terminal")."""
    if by == "human":
        return _BY_PERSON.get(via, "by a person")
    if by == "policy":
        return "by \u201cAlways allow\u201d" if via == "widget" else "by a rule"
    return _BY.get(by, "")


def _approval_html(approval: dict[str, Any], budget: _Budget) -> str:
    line = f"Approval: {_esc(approval.get('status'))}"
    who = decider_words(approval.get("decided_by"), approval.get("decided_via"))
    if who:
        line += f" {escape(who)}"
    if approval.get("edited_args") and approval.get("status") == "approved":
        line += " with edited arguments"
    if approval.get("reason"):
        reason = show_overrides(str(approval["reason"]))
        line = _then(line, f"Reason asked: {_esc(reason, MAX_SHORT, budget)}")
    if approval.get("decision_reason"):
        decided = show_overrides(str(approval["decision_reason"]))
        line = _then(line, f"Decision: {_esc(decided, MAX_SHORT, budget)}")
    return f"<div>{line}</div>"


def _then(sentence: str, more: str) -> str:
    """``more`` as the next sentence (no second full stop after one the text ends with)."""
    sentence = sentence.rstrip()
    return (
        f"{sentence} {more}" if sentence.endswith((".", "!", "?", "…")) else f"{sentence}. {more}"
    )


def _answers(question: dict[str, Any]) -> dict[Any, Any]:
    """Each answer of ``question`` as the page shows it (its ``label``), by question id."""
    return {a.get("questionId"): a.get("label") for a in question.get("answers", [])}


def _questions_html(question: dict[str, Any], budget: _Budget) -> str:
    answers = _answers(question)
    status = question.get("status", "")
    if status == "cancelled" and question.get("decided_by") == "human":
        status = "declined"  # the person's Decline (a question an MCP server asked)
    items = []
    questions = question.get("questions", [])
    for item in questions[:MAX_ITEMS]:
        answer = answers.get(item.get("id"))
        shown = (
            _esc(show_overrides(str(answer)), MAX_SHORT, budget)
            if answer
            else f"<em>{_esc(status)}</em>"
        )
        asked = show_overrides(str(item.get("question", "")))
        items.append(f"<li>{_esc(asked, MAX_SHORT, budget)} — {shown}</li>")
    if len(questions) > MAX_ITEMS:
        more = _plural(len(questions) - MAX_ITEMS, "more question")
        items.append(f"<li><em>… ({more})</em></li>")
    return f"<div><em>Questions</em></div><ul>{''.join(items)}</ul>"


def _decoded_size(data: str) -> int:
    """Bytes of base64 ``data`` once decoded."""
    return len(data) * 3 // 4 - (len(data) - len(data.rstrip("=")))


def _image_html(image: dict[str, Any], budget: _Budget) -> str:
    """A tool's image, kept when it fits :data:`MAX_IMAGE` and the copy's budget, else named."""
    media_type, data = str(image.get("media_type", "")), str(image.get("data", ""))
    size = _decoded_size(data)
    if len(data) > MAX_IMAGE or len(data) > budget.left or not _BASE64.fullmatch(data):
        kept = f"Image ({_esc(media_type)}, {size:,} bytes): not kept in this copy"
        return f"<div><em>{kept}</em></div>"
    budget.take(len(data))
    return (
        f'<div><img alt="Image from the tool ({_esc(media_type)})" '
        f'style="max-width:100%" src="data:{_esc(media_type)};base64,{data}"></div>'
    )


def _tool_html(entry: dict[str, Any], budget: _Budget) -> str:
    label = TOOL_STATUS_LABELS.get(entry.get("status", ""), str(entry.get("status")))
    parts = [
        f'<details style="{_BOX}"><summary><strong>Tool</strong> <code>'
        f"{_esc(_tool_label(entry))}</code> — {_esc(label)}</summary>",
    ]
    arguments = _pretty(entry.get("arguments") or "")
    edited = _edited_args(entry)
    if edited is None:
        parts += ["<div><em>Arguments</em></div>", _pre(arguments, budget, _CODE)]
    else:  # the tool ran with the edited arguments; the model's are shown struck through
        parts += [
            "<div><em>Arguments (edited before approval)</em></div>",
            _pre(
                show_invisibles(json.dumps(edited, indent=2, ensure_ascii=False, default=str)),
                budget,
                _CODE,
            ),
            "<div><em>Original arguments (replaced before approval)</em></div>",
            f"<del>{_pre(arguments, budget, _CODE)}</del>",
        ]
    approval = entry.get("approval")
    if approval:
        parts.append(_approval_html(approval, budget))
    question = entry.get("question")
    if question:
        parts.append(_questions_html(question, budget))
    if entry.get("output"):
        parts.append("<div><em>Output</em></div>")
        parts.append(_pre(entry["output"], budget, _CODE))
    if entry.get("result") is not None:
        parts.append(f"<div><em>{'Error' if entry.get('is_error') else 'Result'}</em></div>")
        parts.append(_pre(entry["result"], budget, _CODE))
    for image in entry.get("images") or []:
        parts.append(_image_html(image, budget))
    parts.append("</details>")
    return "".join(parts)


#: The label of a message sent into a run while it went (``steer``); the page shows the same.
USER_LABEL_STEERED = "You (during the run)"


def _entry_html(entry: dict[str, Any], budget: _Budget, reply: str) -> str:
    """One entry as HTML; ``reply`` is the replies' label, escaped."""
    kind = entry.get("kind")
    text = entry.get("text") or ""
    if kind == "user":
        who = USER_LABEL_STEERED if entry.get("steered") else "You"
        return f'<div style="{_BOX}"><strong>{who}</strong>{_pre(text, budget)}</div>'
    if kind == "assistant":
        return f'<div style="{_BOX}"><strong>{reply}</strong>{_markdown(text, budget)}</div>'
    if kind == "reasoning":
        return (
            f'<details style="{_BOX}"><summary><em>Reasoning</em></summary>'
            f"{_pre(text, budget)}</details>"
        )
    if kind == "tool":
        return _tool_html(entry, budget)
    if kind == "error":
        return (
            f'<div style="{_BOX};border-color:#cf222e"><strong>Error</strong>'
            f"{_folded_pre(text, budget)}</div>"
        )
    cut = _fold_point(text)
    if cut is None:
        return f"<div><em>{_esc(text, MAX_FIELD, budget)}</em></div>"
    return (
        f"<div><em>{_esc(text[:cut], MAX_FIELD, budget)}</em>{_SHOW_MORE}"
        f"<em>{_esc(text[cut:], MAX_FIELD, budget)}</em></details></div>"
    )


#: Where the live view folds a long error or notice (``FOLD_CHARS``, ``FOLD_LINES`` in
#: js/src/views/fold.ts): a provider's error can hold a whole HTML page.
FOLD_CHARS = 1_500
FOLD_LINES = 20
_SHOW_MORE = "<details><summary>Show more</summary>"


def _fold_point(text: str) -> int | None:
    """Where the page folds ``text`` (``foldPoint`` in js/src/views/fold.ts), or None."""
    cut = FOLD_CHARS if len(text) > FOLD_CHARS else None
    newline = -1
    for _ in range(FOLD_LINES):
        newline = text.find("\n", newline + 1, cut)
        if newline == -1:
            return cut
    return newline


def _folded_pre(text: str, budget: _Budget) -> str:
    """``text`` preformatted, what the page folds away behind "Show more" (``<details>``)."""
    cut = _fold_point(text)
    if cut is None:
        return _pre(text, budget)
    return f"{_pre(text[:cut], budget)}{_SHOW_MORE}{_pre(text[cut:], budget)}</details>"


def _nesting(entries: list[dict[str, Any]]) -> dict[str, tuple[int, str]]:
    """For a sub-agent's entries (they name their tool entry as ``parent``): how deep each is
    and the sub-agent's name (its replies are labelled with it)."""
    by_id = {entry.get("id"): entry for entry in entries}
    found: dict[str, tuple[int, str]] = {}
    for entry in entries:
        parent = by_id.get(entry.get("parent"))
        if parent is None:
            continue
        depth = found.get(str(parent.get("id")), (0, ""))[0] + 1
        agent = parent.get("sub_agent") or {}
        name = agent.get("agent_name") or agent.get("agent_id") or str(parent.get("tool_name"))
        found[str(entry.get("id"))] = (depth, str(name))
    return found


def _tool_label(entry: dict[str, Any]) -> str:
    """The tool as its approval or question names it (with the path for a sub-agent's)."""
    name = str(entry.get("tool_name") or "")
    for field in ("approval", "question"):
        item = entry.get(field)
        path = item.get("path") if isinstance(item, dict) else None
        if isinstance(path, list) and len(path) > 1:
            return path_label([str(p) for p in path], name)
    return name


def _left_out(count: int) -> str:
    more = f"{count} more entry" if count == 1 else f"{count} more entries"
    return f"… ({more} not shown: the copy is limited to {MAX_TOTAL} characters)"


def render_html(
    transcript: dict[str, Any],
    title: str = "Anvia transcript",
    *,
    agent_names: Mapping[str, str] | None = None,
    cli: str = DEFAULT_CLI,
) -> str:
    """The transcript (the wire ``Transcript``) as safe static HTML, bounded in size.

    ``agent_names`` (a Studio's: each agent's id to its display name) labels the replies with
    the name of the agent whose conversation it is, as the page does; ``cli`` is how the
    command line runs in a terminal, for a run that waits.
    """
    budget = _Budget()
    reply = _esc(_reply_label(transcript, agent_names))
    head = (
        f"<div><strong>{_esc(title)}</strong> — "
        f"{_esc(_status_line(transcript.get('status', {})), 3 * MAX_SHORT)}</div>"
    )
    budget.take(len(head))
    body = []
    entries = transcript.get("entries", [])
    nested = _nesting(entries)
    for index, entry in enumerate(entries):
        if budget.left <= 0:
            body.append(f"<div><em>{escape(_left_out(len(entries) - index))}</em></div>")
            break
        left = budget.left
        inside = nested.get(str(entry.get("id")))
        if inside is None:
            html = _entry_html(entry, budget, reply)
        else:  # a sub-agent's entry: indented under its tool call, its replies named
            depth, name = inside
            html = (
                f'<div style="margin-left:{16 * depth}px">'
                f"{_entry_html(entry, budget, _esc(name))}</div>"
            )
        budget.take(len(html) - (left - budget.left))  # the markup counts too
        body.append(html)
    waiting = _waiting_html(transcript, cli)
    return valid_text(  # a lone surrogate could not be saved (nor sent): U+FFFD instead
        f'<div class="anvia-static-transcript" style="{_ROOT}">{head}{"".join(body)}{waiting}</div>'
    )


def render_text(
    transcript: dict[str, Any],
    title: str = "Anvia transcript",
    *,
    agent_names: Mapping[str, str] | None = None,
    cli: str = DEFAULT_CLI,
) -> str:
    """The transcript as plain text, bounded in size and labelled like :func:`render_html`."""
    budget = _Budget()
    reply = _cut(_reply_label(transcript, agent_names), MAX_SHORT, sep=" ")
    status = _status_line(transcript.get("status", {}))
    lines = [f"{_cut(title, MAX_SHORT, sep=' ')} — {status}"]
    budget.take(len(lines[0]))
    entries = transcript.get("entries", [])
    nested = _nesting(entries)
    for index, entry in enumerate(entries):
        if budget.left <= 0:
            lines.append(_left_out(len(entries) - index))
            break
        left = budget.left
        inside = nested.get(str(entry.get("id")))
        if inside is None:
            block = _entry_text(entry, budget, reply)
        else:  # a sub-agent's entry: indented under its tool call, its replies named
            depth, name = inside
            block = _entry_text(entry, budget, _cut(name, MAX_SHORT, sep=" "))
            block = "\n".join("  " * depth + line for line in block.split("\n"))
        budget.take(len(block) - (left - budget.left))
        lines.append(block)
    lines.extend(_waiting_lines(transcript, cli))
    return valid_text("\n".join(lines))


def _entry_text(entry: dict[str, Any], budget: _Budget, reply: str) -> str:
    kind = entry.get("kind")
    text = _cut(entry.get("text") or "", MAX_FIELD, budget)
    if kind == "user":
        return f"{USER_LABEL_STEERED if entry.get('steered') else 'You'}: {text}"
    if kind == "assistant":
        return f"{reply}: {text}"
    if kind == "reasoning":
        return f"(reasoning) {text}"
    if kind == "error":
        return f"Error: {text}"
    if kind != "tool":
        return f"-- {text}"
    label = TOOL_STATUS_LABELS.get(entry.get("status", ""), str(entry.get("status")))
    name = _cut(_tool_label(entry), MAX_SHORT, sep=" ")
    edited = _edited_args(entry)
    arguments = show_invisibles(entry.get("arguments") or "")
    if edited is not None:
        arguments = show_invisibles(json.dumps(edited, ensure_ascii=False, default=str))
    lines = [f"Tool {name} [{label}] {_cut(arguments, MAX_FIELD, budget)}"]
    if edited is not None:
        original = _cut(show_invisibles(entry.get("arguments") or ""), MAX_FIELD, budget)
        lines.append(f"  (arguments edited before approval; the model's were: {original})")
    approval = entry.get("approval")
    if approval:
        line = f"  approval: {approval.get('status')}"
        who = decider_words(approval.get("decided_by"), approval.get("decided_via"))
        if who:
            line += f" {who}"
        if approval.get("reason"):
            reason = show_overrides(str(approval["reason"]))
            line += f"; reason asked: {_cut(reason, MAX_SHORT, budget, ' ')}"
        if approval.get("decision_reason"):
            decided = show_overrides(str(approval["decision_reason"]))
            line += f"; decision: {_cut(decided, MAX_SHORT, budget, ' ')}"
        lines.append(line)
    question = entry.get("question")
    if question:
        answers = _answers(question)
        questions = question.get("questions", [])
        for item in questions[:MAX_ITEMS]:
            asked = _cut(show_overrides(str(item.get("question", ""))), MAX_SHORT, budget, " ")
            answer = answers.get(item.get("id"))
            shown = (
                _cut(show_overrides(str(answer)), MAX_SHORT, budget, " ")
                if answer
                else question.get("status")
            )
            lines.append(f"  question: {asked} — {shown}")
        if len(questions) > MAX_ITEMS:
            lines.append(f"  … ({_plural(len(questions) - MAX_ITEMS, 'more question')})")
    if entry.get("output"):
        lines.append(f"  output: {_cut(entry['output'], MAX_FIELD, budget).rstrip()}")
    if entry.get("result") is not None:
        lines.append(f"  result: {_cut(entry['result'], MAX_FIELD, budget)}")
    for image in entry.get("images") or []:
        size = _decoded_size(str(image.get("data", "")))
        lines.append(f"  image: {image.get('media_type')}, {size:,} bytes")
    return "\n".join(lines)

"""The static copy written into the saved notebook is bounded in every field, and escaped."""

from __future__ import annotations

import copy
import json
from html.parser import HTMLParser
from typing import Any

import pytest

from anvia_notebook.notebook._snapshot import render_html, render_text

MB = 1_000_000
#: Hostile text: 1 MB of markup that must stay text.
EVIL = ("<script>alert(1)</script><img src=x onerror=alert(2)>&amp;" * (MB // 56 + 1))[:MB]
#: What one field may take in the copy at most, markup included.
ONE_FIELD = 30_000
#: What a whole copy may take at most (a saved notebook stays small).
WHOLE = 250_000


def base() -> dict[str, Any]:
    return {
        "entries": [
            {"kind": "user", "id": "e1", "text": "Refund A1"},
            {"kind": "reasoning", "id": "e2", "turn": 1, "text": "thinking"},
            {"kind": "assistant", "id": "e3", "turn": 1, "text": "Sure."},
            {
                "kind": "tool",
                "id": "e4",
                "turn": 1,
                "tool_name": "issue_refund",
                "tool_call_id": "c1",
                "arguments": json.dumps({"order_id": "A1", "amount": 5}),
                "status": "done",
                "result": "ok",
                "is_error": False,
                "output": "refunding",
                "approval": {
                    "id": "a1",
                    "status": "approved",
                    "reason": "Review the refund.",
                    "args": {"order_id": "A1", "amount": 5},
                    "decided_by": "human",
                    "decided_at": "2026-05-01T10:00:00+00:00",
                    "decision_reason": "fine",
                    "edited_args": {"order_id": "A1", "amount": 4},
                },
                "question": None,
            },
            {
                "kind": "tool",
                "id": "e5",
                "turn": 2,
                "tool_name": "ask_question",
                "tool_call_id": "c2",
                "arguments": "{}",
                "status": "done",
                "result": "{}",
                "is_error": False,
                "output": "",
                "approval": None,
                "question": {
                    "id": "q1",
                    "status": "answered",
                    "questions": [
                        {
                            "id": "p",
                            "question": "Priority?",
                            "choices": [{"label": "Hi", "value": "hi"}],
                        }
                    ],
                    "answers": [{"questionId": "p", "answer": "hi", "choice": "hi", "label": "Hi"}],
                },
            },
            {"kind": "error", "id": "e6", "text": "boom"},
            {"kind": "notice", "id": "e7", "text": "Run cancelled: stop"},
        ],
        "status": {
            "state": "error",
            "turn": 2,
            "input_tokens": 1,
            "output_tokens": 2,
            "error": "boom",
            "agent_id": "support",
        },
        "seq": 9,
    }


def _tool(t: dict[str, Any]) -> dict[str, Any]:
    return t["entries"][3]


def _question(t: dict[str, Any]) -> dict[str, Any]:
    return t["entries"][4]["question"]


def _choice_label(t: dict[str, Any], label: str) -> None:
    """The question's choice labelled ``label``, and the answer that picked it (its view's
    label is the choice's)."""
    _question(t)["questions"][0]["choices"][0]["label"] = label
    _question(t)["answers"][0]["label"] = label


#: Where a 1 MB text can be put, by name.
FIELDS = {
    "user message": lambda t: t["entries"][0].__setitem__("text", EVIL),
    "reasoning": lambda t: t["entries"][1].__setitem__("text", EVIL),
    "assistant message": lambda t: t["entries"][2].__setitem__("text", EVIL),
    "tool name": lambda t: _tool(t).__setitem__("tool_name", EVIL),
    "arguments": lambda t: _tool(t).__setitem__("arguments", json.dumps({"note": EVIL})),
    "output": lambda t: _tool(t).__setitem__("output", EVIL),
    "result": lambda t: _tool(t).__setitem__("result", EVIL),
    "approval reason": lambda t: _tool(t)["approval"].__setitem__("reason", EVIL),
    "decision reason": lambda t: _tool(t)["approval"].__setitem__("decision_reason", EVIL),
    "edited args": lambda t: _tool(t)["approval"].__setitem__("edited_args", {"note": EVIL}),
    "question text": lambda t: _question(t)["questions"][0].__setitem__("question", EVIL),
    "answer": lambda t: _question(t)["answers"].__setitem__(
        0, {"questionId": "p", "answer": EVIL, "custom": True, "label": EVIL}
    ),
    "choice label": lambda t: _choice_label(t, EVIL),
    "error": lambda t: t["entries"][5].__setitem__("text", EVIL),
    "notice": lambda t: t["entries"][6].__setitem__("text", EVIL),
    "status error": lambda t: t["status"].__setitem__("error", EVIL),
    "agent id": lambda t: t["status"].__setitem__("agent_id", EVIL),
}


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.attrs: set[str] = set()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.attrs.update(name for name, _ in attrs)
        self.hrefs += [value.strip() for name, value in attrs if name == "href" and value]


def assert_inert(html: str) -> None:
    parser = _Tags()
    parser.feed(html)
    parser.close()
    assert parser.tags <= {
        "div",
        "strong",
        "em",
        "pre",
        "details",
        "summary",
        "code",
        "ul",
        "li",
        "del",
        # the model's markdown, sanitised as in the live view
        *("p", "a", "br", "hr", "blockquote", "ol", "s", "h1", "h2", "h3", "h4", "h5", "h6"),
        *("table", "thead", "tbody", "tr", "th", "td"),
    }
    assert parser.attrs <= {"class", "style", "href", "target", "rel", "title", "start", "align"}
    assert not any(
        href.lower().startswith(("javascript:", "data:", "vbscript:")) for href in parser.hrefs
    )


@pytest.mark.parametrize("field", FIELDS)
def test_a_megabyte_in_any_one_field_is_cut_with_a_note(field: str):
    transcript = base()
    FIELDS[field](transcript)
    html = render_html(transcript, "Run")
    assert len(html) < ONE_FIELD, len(html)
    assert "more characters)" in html
    assert_inert(html)
    text = render_text(transcript, "Run")
    assert len(text) < ONE_FIELD, len(text)
    assert "more characters)" in text


def test_a_megabyte_in_every_field_at_once_stays_under_the_total_cap():
    transcript = base()
    for put in FIELDS.values():
        put(transcript)
    # Many such entries: the copy stops adding them at the cap and says so.
    transcript["entries"] += [
        {**copy.deepcopy(entry), "id": f"{entry['id']}-{n}"}
        for n in range(20)
        for entry in transcript["entries"]
    ]
    html = render_html(transcript, EVIL)
    assert len(html) < WHOLE, len(html)
    assert "more entries not shown" in html
    assert_inert(html)
    text = render_text(transcript, EVIL)
    assert len(text) < WHOLE, len(text)
    assert "more entries not shown" in text


def test_many_questions_are_listed_up_to_a_limit():
    transcript = base()
    question = _question(transcript)
    question["questions"] = [
        {"id": f"q{n}", "question": "?" * 1_000, "choices": [{"label": "a", "value": "a"}]}
        for n in range(5_000)
    ]
    question["answers"] = [{"questionId": f"q{n}", "answer": "!" * 1_000} for n in range(5_000)]
    html = render_html(transcript)
    assert len(html) < WHOLE, len(html)
    assert "more questions" in html
    assert len(render_text(transcript)) < WHOLE


def test_the_arguments_that_ran_are_shown_with_the_original_struck_through():
    transcript = base()
    html = render_html(transcript)
    ran = html.index("Arguments (edited before approval)")
    original = html.index("<del>", ran)
    assert "&quot;amount&quot;: 4" in html[ran:original]
    assert "&quot;amount&quot;: 5" in html[original : html.index("</del>", original)]
    text = render_text(transcript)
    assert 'Tool issue_refund [Done] {"order_id": "A1", "amount": 4}' in text
    # Approved unchanged (edited back to the same arguments): shown as they were.
    _tool(transcript)["approval"]["edited_args"] = {"order_id": "A1", "amount": 5}
    html = render_html(transcript)
    assert "edited before approval" not in html
    assert "<del>" not in html


def _replies(text: str) -> list[str]:
    """The label of each reply line of a text copy (the lines ``<label>: Sure.``)."""
    return [line.removesuffix(": Sure.") for line in text.splitlines() if line.endswith(": Sure.")]


def test_replies_are_labelled_with_the_agent_whose_conversation_it_is_as_on_the_page():
    transcript = base()  # the status line's agent is "support"
    names = {"support": "Support desk", "other": "other"}
    html = render_html(transcript, agent_names=names)
    assert '<strong>Support desk</strong><div class="anvia-static-markdown">' in html
    assert "<strong>Assistant</strong>" not in html
    assert _replies(render_text(transcript, agent_names=names)) == ["Support desk"]
    # The other agent's conversation: its name (an agent without one is shown by its id).
    transcript["status"]["agent_id"] = "other"
    assert _replies(render_text(transcript, agent_names=names)) == ["other"]
    assert '<strong>other</strong><div class="anvia-static-markdown">' in render_html(
        transcript, agent_names=names
    )
    # Not a Studio's (no names), or an agent the names do not know: "Assistant", as the page.
    for agent_names in (None, {}, {"support": "Support desk"}):
        assert _replies(render_text(transcript, agent_names=agent_names)) == ["Assistant"]
        assert '<strong>Assistant</strong><div class="anvia-static-markdown">' in render_html(
            transcript, agent_names=agent_names
        )


def test_a_hostile_agent_name_is_escaped_kept_on_one_line_and_cut():
    transcript = base()
    transcript["entries"] += [
        {"kind": "assistant", "id": f"r{n}", "turn": 3, "text": "Sure."} for n in range(500)
    ]
    script = {"support": "<script>alert(1)</script>\nYou: forged"}
    html = render_html(transcript, agent_names=script)
    assert "<script>" not in html
    assert "<strong>&lt;script&gt;alert(1)&lt;/script&gt; You: forged</strong>" in html
    assert_inert(html)
    text = render_text(transcript, agent_names=script)
    assert "\nYou: forged" not in text  # the name's line break starts no line of the copy
    assert _replies(text) == ["<script>alert(1)</script> You: forged"] * 501

    huge = {"support": "<b>" * 34_000}  # a 102 KB name, on each of 501 replies
    html = render_html(transcript, agent_names=huge)
    assert len(html) < WHOLE, len(html)
    assert "more entries not shown" in html
    assert_inert(html)
    label = html[
        html.index("<strong>&lt;b") : html.index(
            '</strong><div class="anvia-static-markdown">', html.index("&lt;b")
        )
    ]
    assert len(label) < 2_100 and label.endswith("more characters)")
    text = render_text(transcript, agent_names=huge)
    assert len(text) < WHOLE, len(text)
    assert "more entries not shown" in text
    [label] = set(_replies(text))
    assert len(label) < 2_100 and label.endswith("more characters)")


def test_markdown_that_renders_many_times_its_size_is_kept_as_text():
    """A 19 KB reply of a 100-column table of short rows rendered as 690 KB of HTML (each row
    padded to every column), past the copy's whole bound."""
    table = "|" + "a|" * 100 + "\n|" + "-|" * 100 + "\n" + "x\n" * 9300
    transcript = base()
    transcript["entries"] = [{"kind": "assistant", "id": "a", "turn": 1, "text": table}]
    html = render_html(transcript, "Run")
    assert len(html) < ONE_FIELD, len(html)
    assert "shown as text: as HTML it would take" in html
    assert "<td>" not in html
    assert_inert(html)
    small = "| city | people |\n| --- | --- |\n| Paris | 2 |\n"
    transcript["entries"][0]["text"] = small
    assert "<td>Paris</td>" in render_html(transcript, "Run")


def test_each_waiting_command_names_its_call_and_those_left_out_are_counted():
    """60 waiting approvals of one tool: each command read "approve RUN approval_X (or reject:
    delete_row)", nothing told which row each would delete; only 50 were listed, with no word
    of the other 10."""
    t = base()
    t["status"] = {**t["status"], "state": "waiting", "run_id": "run_1"}
    row = _tool(t)
    t["entries"] = [
        {
            **row,
            "id": f"t{n}",
            "tool_name": "delete_row",
            "arguments": json.dumps({"row": n, "note": "x" * 200}),
            "status": "approval_required",
            "approval": {**row["approval"], "id": f"ap_{n}", "status": "pending"},
        }
        for n in range(60)
    ]
    for copy_text in (render_text(t, "Rows", cli="anvia"), render_html(t, "Rows", cli="anvia")):
        assert 'approve run_1 ap_7  (or reject: delete_row)  for {"row": 7, "note": "xxx' in (
            copy_text.replace("&quot;", '"')
        )
        assert "ap_49 " in copy_text and "ap_50 " not in copy_text
        assert "... and 10 more: anvia show run_1 lists them all." in copy_text
        assert "x" * 100 not in copy_text.split("for {")[-1]  # (each call's arguments: cut)


def test_an_approval_ended_by_an_interrupt_does_not_say_stop_was_pressed():
    """Kernel > Interrupt (or the cell run again) read "cancelled by Stop ... Interrupted
    (Kernel > Interrupt)": nobody had pressed Stop."""
    t = base()
    row = _tool(t)
    row["status"] = "cancelled"
    row["approval"] = {
        **row["approval"],
        "status": "cancelled",
        "decided_by": "stop",
        "decided_via": None,
        "decision_reason": "Interrupted (Kernel > Interrupt)",
    }
    for copy_text in (render_text(t, "Run"), render_html(t, "Run")):
        assert "when the run was stopped" in copy_text
        assert "by Stop" not in copy_text


def test_a_copy_of_a_running_run_says_how_to_resume_it():
    """A notebook saved while a tool ran, whose kernel then died, reopened as "Running" for ever,
    with no run id and no way to go on."""
    t = base()
    t["status"] = {**t["status"], "state": "running", "run_id": "run_9"}
    for entry in t["entries"]:
        for field in ("approval", "question"):
            if isinstance(entry.get(field), dict):
                entry[field] = {**entry[field], "status": "approved"}
    for copy_text in (render_text(t, "Run"), render_html(t, "Run")):
        assert "Run run_9 was running when this copy was made" in copy_text
        assert "agent.resume(&quot;run_9&quot;).show()" in copy_text or (
            'agent.resume("run_9").show()' in copy_text
        )
    done = {**t, "status": {**t["status"], "state": "done"}}
    assert "was running" not in render_text(done, "Run")

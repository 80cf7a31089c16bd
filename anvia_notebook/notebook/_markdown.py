"""Model markdown as safe HTML for the static copy of a transcript, as the live view draws it.

Rendered with markdown-it-py (raw HTML in the text is shown as text, not markup) and sanitised
with nh3 (a fixed list of tags and attributes; links only to http, https and mailto, opened
in a new tab without the page's referrer). Images become links to their address, as in the
live view: a saved notebook never loads anything from an address a model chose. As in the live
view, a link to any other address (a relative one: a file of the server, another notebook) keeps
its words but loses its address, and an image that is not on the web is its alt text.
"""

from __future__ import annotations

import re
from typing import Any

from ._wire_text import valid_text

__all__ = ["render_markdown"]

_TAGS = {
    "a", "blockquote", "br", "code", "del", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr",
    "li", "ol", "p", "pre", "s", "strong", "table", "tbody", "td", "th", "thead", "tr", "ul",
}  # fmt: skip
_ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}, "td": {"align"}, "th": {"align"}}
_SCHEMES = {"http", "https", "mailto"}
#: Where a link in model text may point, and an image's link (as ``LINK_URL``, ``IMAGE_URL`` in
#: js/src/views/markdown.ts).
_LINK_URL = re.compile(r"^(?:https?:|mailto:)", re.IGNORECASE)
_IMAGE_URL = re.compile(r"^https?:", re.IGNORECASE)

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
            raw = str(token.attrGet("src") or "").strip()
            src = escape_html(raw)
            if not _IMAGE_URL.match(raw):
                return escape_html(token.content)
            alt = token.content.strip()  # (as the live view labels it)
            label = escape_html(f"Image: {alt}" if alt else "Image")
            title = escape_html(f"Image not loaded: {raw}")
            return f'<a href="{src}" title="{title}">{label}</a>'

        def web_links_only(renderer: Any, tokens: Any, index: int, options: Any, env: Any) -> str:
            token = tokens[index]
            if not _LINK_URL.match(str(token.attrGet("href") or "").strip()):
                token.attrs.pop("href", None)
            return str(renderer.renderToken(tokens, index, options, env))

        md.add_render_rule("image", image_as_link)
        md.add_render_rule("link_open", web_links_only)
        _renderer = md
    return _renderer


def render_markdown(text: str) -> str:
    """``text`` (markdown) as sanitised HTML."""
    import nh3

    html = _markdown().render(valid_text(text))
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

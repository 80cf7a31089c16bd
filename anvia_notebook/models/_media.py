"""Which of a tool result's images a provider is sent (the others stay a text placeholder).

Both providers take PNG, JPEG, GIF and WebP; Anthropic refuses an image over 5 MB, measured on
its base64 text (an image file of 3.75 MB and more), so larger ones (and other types, and audio)
reach the model only as the placeholder in the result's text.
"""

from __future__ import annotations

from ..messages import ToolResultMedia, ToolResultPart

__all__ = ["MAX_IMAGE_BYTES", "SENT_IMAGE_TYPES", "images_to_send"]

SENT_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
#: The largest image sent, in characters of its base64 text (as Anthropic measures it).
MAX_IMAGE_BYTES = 5 * 1024 * 1024


def images_to_send(part: ToolResultPart) -> list[ToolResultMedia]:
    """The images of a (successful) tool result a provider that takes images is sent."""
    if part.is_error:
        return []
    return [
        media
        for media in part.media
        if media.type == "image"
        and media.media_type in SENT_IMAGE_TYPES
        and len(media.data) <= MAX_IMAGE_BYTES
    ]

"""What an MCP tool result becomes: the text the model reads, and images kept apart.

As in Anvia: text content is the result; structured content is the result as JSON only when
there is no content; embedded resources become their URI, media type and text; ``isError`` is
an error result whose text the model reads. Beyond Anvia (which refuses them): resource links
become their URI, and images (and audio) never reach the model as base64 text: the text holds a
short placeholder, and the image itself is kept apart, for the transcript and for the providers
that take images with a tool result (see ``ToolResultMedia``), under the type its bytes say
when that is another of the types providers take than the server declared.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field
from typing import Any

from ..errors import McpMalformedResultError
from ..models._media import SENT_IMAGE_TYPES

__all__ = ["McpResult", "MediaPart", "map_result"]


@dataclass(frozen=True)
class MediaPart:
    """An image (or audio clip) from a tool result: base64 data and its media type."""

    type: str
    media_type: str
    data: str

    @property
    def size(self) -> int:
        """Its size in bytes (decoded)."""
        return _decoded_size(self.data)

    def placeholder(self) -> str:
        """What the model reads of it: whether the person sees it (the transcript shows only
        the image types every provider takes), so the model does not refer to what nobody saw."""
        if self.type == "image" and self.media_type in SENT_IMAGE_TYPES:
            seen = "shown to the user"
        else:
            seen = "not shown: only PNG, JPEG, GIF and WebP images are shown to the user"
        return f"[{self.type} {self.media_type}, {_size_text(self.size)}, {seen}]"


@dataclass(frozen=True)
class McpResult:
    text: str
    is_error: bool = False
    media: tuple[MediaPart, ...] = field(default=())


def _decoded_size(data: str) -> int:
    """The size in bytes of base64 ``data`` once decoded (its ``=`` padding is no data)."""
    return len(data) * 3 // 4 - (len(data) - len(data.rstrip("=")))


#: How each image type providers take begins (its signature), to tell one from another.
_SIGNATURES = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def _image_type(declared: str, data: str) -> str:
    """The media type of an image providers take, from its bytes when they say another one of
    those types than the server declared: servers go by a file's extension (the filesystem
    server's ``read_media_file`` calls a JPEG saved as ``photo.png`` image/png), and Anthropic
    refuses an image whose bytes do not match its media type, failing the run's every later
    request. Data that is none of them keeps the declared type."""
    if declared not in SENT_IMAGE_TYPES:
        return declared
    head = base64.b64decode(data[:16])  # (12 bytes: every signature, and WebP's RIFF....WEBP)
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    for signature, media_type in _SIGNATURES:
        if head.startswith(signature):
            return media_type
    return declared


def _size_text(size: int) -> str:
    if size >= 1024 * 1024:
        return f"{size / (1024 * 1024):.1f} MB"
    if size >= 1024:
        return f"{size / 1024:.0f} KB"
    return f"{size} bytes"


def _json(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _media_type(declared: str) -> str:
    """A media type as providers and browsers match it: lower case, without parameters
    (``IMAGE/PNG; q=1`` is ``image/png``), and the common misspelling ``image/jpg`` read as
    ``image/jpeg`` (providers refuse it)."""
    plain = declared.split(";", 1)[0].strip().lower()
    return "image/jpeg" if plain == "image/jpg" else plain


def _base64(data: str, kind: str) -> str:
    """Base64 ``data`` without the line breaks and spaces MIME-style encoders put in it (every
    provider refuses them), checked to be base64."""
    joined = "".join(data.split())
    try:
        base64.b64decode(joined, validate=True)
    except (binascii.Error, ValueError):
        raise McpMalformedResultError(
            f"the server's {kind} content is not valid base64 data"
        ) from None
    return joined


def map_result(result: Any) -> McpResult:
    """Map a ``CallToolResult`` (or a dict of its JSON form) to what the run reports."""
    import mcp.types as types

    if not isinstance(result, types.CallToolResult):
        try:
            result = types.CallToolResult.model_validate(result)
        except Exception as error:  # pydantic's ValidationError, or not a mapping at all
            raise McpMalformedResultError(
                f"the server's result is not a valid MCP tool result: {error}"
            ) from None
    texts: list[str] = []
    media: list[MediaPart] = []
    placeholders: set[int] = set()  # where in ``texts`` an image's placeholder is
    for block in result.content:
        if isinstance(block, types.TextContent):
            texts.append(block.text)
        elif isinstance(block, (types.ImageContent, types.AudioContent)):
            data = _base64(block.data, block.type)
            media_type = _media_type(block.mime_type)
            if block.type == "image":
                media_type = _image_type(media_type, data)
            part = MediaPart(type=block.type, media_type=media_type, data=data)
            media.append(part)
            placeholders.add(len(texts))
            texts.append(part.placeholder())
        elif isinstance(block, types.EmbeddedResource):
            texts.append(_resource_text(block.resource))
        elif isinstance(block, types.ResourceLink):
            kind = f"; {block.mime_type}" if block.mime_type else ""
            texts.append(f"MCP resource link ({block.uri}{kind}): {block.name}")
    if result.is_error:
        told = [t for i, t in enumerate(texts) if i not in placeholders]  # the server's words
        text = "\n".join(told) or "MCP tool returned an error"
        return McpResult(text=text, is_error=True, media=tuple(media))
    if not result.content and result.structured_content is not None:
        texts.append(_json(result.structured_content))
    return McpResult(text="\n".join(texts), media=tuple(media))


def _resource_text(resource: Any) -> str:
    import mcp.types as types

    if isinstance(resource, types.TextResourceContents):
        media_type = resource.mime_type or "text/plain"
        return f"MCP resource ({resource.uri}; {media_type}; text)\n{resource.text}"
    media_type = resource.mime_type or "application/octet-stream"
    size = _decoded_size(getattr(resource, "blob", ""))
    # Binary data is not sent to the model as base64 text.
    return f"MCP resource ({resource.uri}; {media_type}; binary, {_size_text(size)})"

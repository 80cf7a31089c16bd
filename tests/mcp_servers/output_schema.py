"""A stdio "MCP server" written by hand whose tool declares an ``outputSchema`` but answers with
text only (or with structured content that does not fit), as servers in the wild do."""

from __future__ import annotations

from hand_written import reply, serve

SCHEMA = {"type": "object", "properties": {"temp": {"type": "number"}}, "required": ["temp"]}


def call(message: dict) -> None:
    if message["params"]["name"] == "weather":
        reply(message["id"], {"content": [{"type": "text", "text": "Sunny, 21 C"}]})
    else:
        reply(
            message["id"],
            {
                "content": [{"type": "text", "text": "Warm"}],
                "structuredContent": {"temp": "warm"},
            },
        )


serve(
    "schemas",
    [
        {"name": "weather", "inputSchema": {"type": "object"}, "outputSchema": SCHEMA},
        {"name": "forecast", "inputSchema": {"type": "object"}, "outputSchema": SCHEMA},
    ],
    call,
)

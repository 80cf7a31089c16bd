"""``instrument()``: export every run as OpenTelemetry spans (GenAI semantic conventions).

Off by default. OpenTelemetry is imported only when ``instrument()`` turns it on; install it with
``pip install "anvia_notebook[otel]"`` (the API; add ``opentelemetry-sdk`` and an exporter to send
the spans somewhere).
"""

from __future__ import annotations

from typing import Any

from . import _tracing

__all__ = ["instrument", "instrumented"]


def instrument(tracer_provider: Any = None, capture_content: bool = False) -> None:
    """Export the runs started from now on as OpenTelemetry spans.

    ``tracer_provider``: where the spans go (default: the global provider that
    ``opentelemetry.trace.set_tracer_provider`` set). ``capture_content=True`` also attaches
    the messages, tool arguments and results, and free-text reasons (leave it off when they may
    hold personal data). ``instrument(False)`` turns the export off again.

    Each run is an ``invoke_agent {agent}`` span with one ``chat {model}`` span per model call
    and one ``execute_tool {tool}`` span per tool call; approvals and questions are events on
    their tool call's span, and errors are recorded on the span where they happened.
    """
    if tracer_provider is False:
        _tracing.exporter = None
        return
    if tracer_provider is True:
        tracer_provider = None
    if not isinstance(capture_content, bool):
        raise TypeError(f"capture_content must be True or False, not {capture_content!r}.")
    if tracer_provider is not None and not callable(getattr(tracer_provider, "get_tracer", None)):
        raise TypeError(
            "instrument() takes an OpenTelemetry TracerProvider (or None for the global one, "
            f"or False to turn it off), not {tracer_provider!r}."
        )
    try:
        from ._otel import OTelExporter
    except ImportError:
        raise ImportError(
            "instrument() needs OpenTelemetry, which is not installed: "
            'pip install "anvia_notebook[otel]"'
        ) from None
    _tracing.exporter = OTelExporter(tracer_provider, capture_content)


def instrumented() -> bool:
    """Whether new runs are exported as OpenTelemetry spans."""
    return _tracing.exporter is not None

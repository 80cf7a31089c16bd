"""Routing a tool's ``print`` and ``display`` output into its transcript entry.

While at least one shown run is live, ``sys.stdout`` and ``sys.stderr`` are wrapped by a proxy:
a write made inside a tool call (``CURRENT_TOOL_CALL`` is set, also in the worker thread of a
sync tool) of a registered run goes to that run's sink; every other write goes to the original
stream untouched. IPython's ``display`` inside a tool call is captured the same way, through the
shell's display publisher (its ``text/plain`` form). Everything is undone when the last run ends
(a stream that someone else replaced meanwhile is left alone).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any, TextIO

from .._tool_exec import CURRENT_TOOL_CALL, CurrentToolCall

__all__ = ["OutputSink", "register", "unregister"]

#: ``sink(call, text)``, called in the writer's thread.
OutputSink = Callable[[CurrentToolCall, str], None]

_lock = threading.RLock()
_sinks: dict[str, OutputSink] = {}
_installed: dict[str, Any] = {}


def _route(text: str) -> bool:
    """Send ``text`` to the current tool call's run, if any; True when it was taken."""
    call = CURRENT_TOOL_CALL.get()
    if call is None:
        return False
    sink = _sinks.get(call.run_id)
    if sink is None:
        return False
    try:
        sink(call, text)
    except Exception:  # never let a transcript problem break the tool's print
        return False
    return True


class _StreamProxy:
    """Wraps a text stream; writes inside a tool call of a live run go to the transcript."""

    def __init__(self, original: TextIO) -> None:
        self._anvia_original = original

    def write(self, text: str) -> int:
        if isinstance(text, str) and _route(text):
            return len(text)
        return self._anvia_original.write(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        self._anvia_original.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._anvia_original, name)


def _display_publisher() -> Any:
    """The IPython shell's display publisher, when there is a shell."""
    if "IPython" not in sys.modules:
        return None
    try:
        from IPython.core.interactiveshell import InteractiveShell
    except ImportError:  # pragma: no cover
        return None
    if not InteractiveShell.initialized():
        return None
    return getattr(InteractiveShell.instance(), "display_pub", None)


def _wrap_publish(original: Callable[..., Any]) -> Callable[..., Any]:
    def publish(data: Any = None, *args: Any, **kwargs: Any) -> Any:
        if isinstance(data, dict) and not kwargs.get("update"):
            text = data.get("text/plain")
            if text is None:
                kinds = ", ".join(sorted(data)) or "nothing"
                text = f"<display: {kinds}>"
            if _route(f"{text}\n"):
                return None
        return original(data, *args, **kwargs)

    publish.__anvia_wrapper__ = True  # type: ignore[attr-defined]
    return publish


def _install() -> None:
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, _StreamProxy):
            proxy = _StreamProxy(stream)
            setattr(sys, name, proxy)
            _installed[name] = proxy
    publisher = _display_publisher()
    if publisher is not None and not getattr(publisher.publish, "__anvia_wrapper__", False):
        original = publisher.publish
        wrapper = _wrap_publish(original)
        publisher.publish = wrapper
        _installed["display_pub"] = (publisher, wrapper)


def _uninstall() -> None:
    for name in ("stdout", "stderr"):
        proxy = _installed.pop(name, None)
        if proxy is not None and getattr(sys, name) is proxy:
            setattr(sys, name, proxy._anvia_original)
    entry = _installed.pop("display_pub", None)
    if entry is not None:
        publisher, wrapper = entry
        if publisher.__dict__.get("publish") is wrapper:
            del publisher.publish


def register(run_id: str, sink: OutputSink) -> None:
    """Route the output of ``run_id``'s tool calls to ``sink`` (installs the proxies)."""
    with _lock:
        if not _sinks:
            _install()
        _sinks[run_id] = sink


def unregister(run_id: str) -> None:
    """Stop routing ``run_id``'s output; the last one out restores the streams."""
    with _lock:
        if _sinks.pop(run_id, None) is not None and not _sinks:
            _uninstall()

"""Publishing outputs to the cell: display a bundle under a display id, update it later.

The update at the end of a run comes from a background task or another thread. JupyterLab and
Notebook 7 route an ``update_display_data`` by its display id (to every cell that showed that
id, whatever the message's parent), but a headless runner such as nbclient only reads the
messages of the cell it is executing. So an update goes out with the parent header of the cell
executing at that moment (tracked with IPython's ``pre_run_cell`` / ``post_run_cell`` events);
when no cell is executing it goes out with the parent of the cell that showed the run, and is
sent once more when the next cell starts, so that a headless run records the final state too.
Tests replace :func:`publish`.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

__all__ = [
    "add_cell_start_listener",
    "current_cell_id",
    "current_message_id",
    "current_parent",
    "message_id",
    "publish",
]

logger = logging.getLogger("anvia_notebook")


def _shell() -> Any:
    if "IPython" not in sys.modules:
        return None
    from IPython.core.interactiveshell import InteractiveShell

    if not InteractiveShell.initialized():
        return None
    return InteractiveShell.instance()


def current_parent() -> dict[str, Any] | None:
    """The parent header of the message being executed (a cell), if inside a kernel."""
    shell = _shell()
    publisher = getattr(shell, "display_pub", None)
    header = getattr(publisher, "parent_header", None)
    return dict(header) if isinstance(header, dict) and header else None


def message_id(parent: dict[str, Any] | None) -> str | None:
    """The msg_id of a parent (a whole message, or just its header as ipykernel keeps it)."""
    if not parent:
        return None
    header = parent.get("header", parent)
    msg_id = header.get("msg_id") if isinstance(header, dict) else None
    return msg_id if isinstance(msg_id, str) else None


def current_message_id() -> str | None:
    """The msg_id of the execute request running now (tells one cell from another)."""
    return message_id(current_parent())


def current_cell_id() -> str | None:
    """The front end's id of the cell executing now, if it sent one.

    JupyterLab and Notebook 7 put it in the execute request's metadata (``cellId``); unlike the
    msg_id it stays the same when the cell is run again. ``None`` outside a kernel or when the
    front end sends none (e.g. nbclient).
    """
    shell = _shell()
    get_parent = getattr(getattr(shell, "kernel", None), "get_parent", None)
    if not callable(get_parent):
        return None
    try:
        parent = get_parent()
    except Exception:
        return None
    metadata = parent.get("metadata") if isinstance(parent, dict) else None
    cell_id = metadata.get("cellId") if isinstance(metadata, dict) else None
    return cell_id if isinstance(cell_id, str) and cell_id else None


_cell_start_listeners: list[Callable[[str], None]] = []


def add_cell_start_listener(listener: Callable[[str], None]) -> None:
    """Call ``listener(cell_id)`` when a cell with a known id starts executing (once a display
    was published, see :func:`publish`)."""
    if listener not in _cell_start_listeners:
        _cell_start_listeners.append(listener)


class _Cells:
    """Which cell is executing, and the updates to send again when the next one starts."""

    def __init__(self) -> None:
        self.executing: dict[str, Any] | None = None
        self.deferred: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
        self.shells: set[int] = set()
        self.lock = threading.Lock()

    def track(self, shell: Any) -> None:
        """Listen to the shell's cell events (once; called from inside a cell)."""
        if id(shell) in self.shells or not hasattr(shell, "events"):
            return
        try:
            shell.events.register("pre_run_cell", self._pre_run_cell)
            shell.events.register("post_run_cell", self._post_run_cell)
        except Exception:  # an unusual shell: updates keep the parent they were given
            return
        self.shells.add(id(shell))
        self.executing = current_parent()  # the cell running now started before we listened

    def _pre_run_cell(self, info: Any = None, *_args: Any) -> None:
        self.executing = current_parent()
        with self.lock:
            deferred, self.deferred = self.deferred, {}
        for display_id, (data, metadata) in deferred.items():
            with contextlib.suppress(Exception):
                _send(data, metadata, display_id, True, self.executing)
        cell_id = getattr(info, "cell_id", None) or current_cell_id()
        if isinstance(cell_id, str) and cell_id:
            for listener in list(_cell_start_listeners):
                try:
                    listener(cell_id)
                except Exception:
                    logger.exception("A cell start listener failed")

    def _post_run_cell(self, *_args: Any) -> None:
        self.executing = None


_cells = _Cells()


def _read_only_property(obj: Any, name: str) -> bool:
    """Whether ``name`` is a property of ``obj``'s class that cannot be set."""
    attribute = getattr(type(obj), name, None)
    return isinstance(attribute, property) and attribute.fset is None


@contextlib.contextmanager
def _with_parent(publisher: Any, parent: dict[str, Any] | None) -> Iterator[None]:
    if parent is None or publisher is None:
        yield
        return
    set_thread = getattr(publisher, "set_thread_parent", None)
    if callable(set_thread):  # ipykernel 7: a per-context parent
        token = set_thread(parent)
        try:
            yield
        finally:
            publisher.reset_thread_parent(token)
        return
    if _read_only_property(publisher, "parent_header") and callable(
        getattr(publisher, "set_parent", None)
    ):
        # ipykernel 7.0-7.3 (the newest for Python 3.10): a read-only `parent_header` property,
        # set through set_parent, and no set_thread_parent yet. One parent, as with ipykernel 6.
        previous = publisher.parent_header
        publisher.set_parent(parent)
        try:
            yield
        finally:
            publisher.set_parent(previous)
        return
    if hasattr(publisher, "parent_header"):  # ipykernel 6: one parent, on the main thread
        previous = publisher.parent_header
        publisher.parent_header = parent
        try:
            yield
        finally:
            publisher.parent_header = previous
        return
    yield


def _send(
    data: dict[str, Any],
    metadata: dict[str, Any],
    display_id: str,
    update: bool,
    parent: dict[str, Any] | None,
) -> None:
    shell = _shell()
    if shell is None:
        return
    from IPython.display import publish_display_data

    with _with_parent(getattr(shell, "display_pub", None), parent):
        publish_display_data(  # type: ignore[no-untyped-call]
            data=data, metadata=metadata, transient={"display_id": display_id}, update=update
        )


def publish(
    data: dict[str, Any],
    metadata: dict[str, Any] | None = None,
    *,
    display_id: str,
    update: bool = False,
    parent: dict[str, Any] | None = None,
) -> None:
    """Display ``data`` (a mime bundle) under ``display_id``, or update that display.

    ``parent`` is the cell that showed it (used for an update when no cell is executing).
    """
    shell = _shell()
    if shell is None:
        return
    if not update:
        _cells.track(shell)
        _send(data, metadata or {}, display_id, False, None)
        return
    executing = _cells.executing
    if executing is None:
        with _cells.lock:
            _cells.deferred[display_id] = (data, metadata or {})
    _send(data, metadata or {}, display_id, True, executing or parent)

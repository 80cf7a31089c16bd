"""Private: serve a blocked thread's queue of shell messages, comm messages first.

A synchronous cell runs inside the handler of one shell message (its ``execute_request``), on the
thread whose event loop reads that shell's messages. While the cell blocks, that loop reads
nothing, so a widget's click (a ``comm_msg``) waits behind the cell: the deadlock of ipykernel
issue 646. This module reads that thread's incoming messages itself, runs the comm ones at once
with the kernel's own handlers, and hands every other message back to the kernel, in arrival
order, when the wait ends, as if it had just arrived.

Where the messages are (found by feature detection, see ``find_target``):

- ipykernel 6 (checked: 6.17.1, Colab's pin, and 6.29.5): the shell ROUTER socket is read on
  the main thread by ``kernel.shell_stream`` (a ``ZMQStream``), whose callback puts each message
  on ``kernel.msg_queue``; one coroutine takes them off one at a time, and it is busy with our
  cell.
- ipykernel 7 (checked: 7.0.1, 7.3.0, 7.4.0): a "shell channel" thread reads the socket and
  forwards each message by its ``subshell_id`` (7.4: a comm's, to the thread that last sent on
  that comm) over an inproc PAIR socket to the main thread or to a subshell's thread; the
  receiving end is a ``ZMQStream`` on that thread's loop. Messages routed to another thread are
  handled there without us.

The pump swaps the stream's receive callback for one that only collects, and calls the stream's
public ``flush()`` to read what is waiting; ``flush()`` also re-arms the stream's edge-triggered
poll state, so the stream cannot miss messages later. Only ``ZMQStream._recv_callback`` and
``_recv_copy`` (to restore the original callback) and the ipykernel attributes named in
``find_target`` are private; each is checked before use.

Two traps this avoids:
- a message is deserialised (which records its HMAC digest against replays) only when it is
  handled here; a message handed back is only peeked at (its header frame is unpacked without
  the signature check), or the kernel would refuse it later as a duplicate;
- no ``busy``/``idle`` status is published for a comm handled here (as ipykernel 7.4 does for
  comms it runs during an awaiting cell): an ``idle`` would make the front end show the kernel
  idle while the cell still runs.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import logging
import sys
import threading
from collections import deque
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Literal

import zmq

__all__ = ["COMM_MSG_TYPES", "PumpTarget", "ShellPump", "find_target"]

COMM_MSG_TYPES = frozenset({"comm_open", "comm_msg", "comm_close"})
"""The shell messages handled while a cell blocks; all others wait until it ends."""

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PumpTarget:
    """Where the blocked thread's shell messages arrive, and how the kernel handles them."""

    layout: Literal["ipykernel6", "ipykernel7"]
    kernel: Any
    stream: Any
    """The ``ZMQStream`` whose callback feeds this thread's shell messages to the kernel."""
    reply_stream: Any
    """What the kernel passes to a shell handler as its reply stream on this thread."""
    msg_queue: Any | None
    """ipykernel 6: ``kernel.msg_queue``, messages read before the wait and not yet handled."""
    subshell_id: str | None
    """ipykernel 7: the subshell this thread serves (``None``: the main shell)."""


def _stream_ok(stream: Any) -> bool:
    return all(hasattr(stream, a) for a in ("flush", "on_recv", "socket", "io_loop")) and callable(
        getattr(stream, "_recv_callback", None)
    )


def find_target(kernel: Any) -> PumpTarget | str | None:
    """The pump target for the calling thread, a sentence saying why there is none, or ``None``
    when the calling thread serves no shell (a worker thread: blocking it blocks no message).
    """
    on_main = threading.current_thread() is threading.main_thread()
    channel_thread = getattr(kernel, "shell_channel_thread", None)
    manager = getattr(channel_thread, "_manager", None)
    subshell_id: str | None = None
    if channel_thread is not None:
        # ipykernel 7 layout. `manager` is a lazy property that asserts it runs on the main
        # thread; the kernel creates it at start, so read the attribute behind it.
        try:
            subshell_id = manager.subshell_id_from_thread_id(threading.get_ident())  # type: ignore[union-attr]
        except RuntimeError:
            return None  # neither the main shell's thread nor a subshell's
        except AttributeError:
            return "the ipykernel 7 subshell manager is missing" if on_main else None
    elif not on_main:
        return None

    session = getattr(kernel, "session", None)
    handlers = getattr(kernel, "shell_handlers", None)
    if not all(hasattr(session, a) for a in ("feed_identities", "deserialize", "unpack")):
        return "the kernel has no jupyter_client Session"
    if not isinstance(handlers, dict) or "comm_msg" not in handlers:
        return "the kernel has no comm_msg shell handler"
    if not (hasattr(kernel, "set_parent") and hasattr(kernel, "get_parent")):
        return "the kernel has no set_parent/get_parent"
    if "shell" not in getattr(kernel, "_parent_ident", {}):
        return "the kernel has no _parent_ident['shell']"

    if channel_thread is not None:
        try:
            pair = manager.get_shell_channel_to_subshell_pair(subshell_id)  # type: ignore[union-attr]
            reply = manager.get_subshell_to_shell_channel_socket(subshell_id)  # type: ignore[union-attr]
        except (AttributeError, KeyError):
            return "the ipykernel 7 subshell manager has no inproc socket pair for this thread"
        stream = getattr(pair, "to_stream", None)
        if not _stream_ok(stream):
            return "the ipykernel 7 inproc shell stream is not a ZMQStream as expected"
        return PumpTarget("ipykernel7", kernel, stream, reply, None, subshell_id)

    stream = getattr(kernel, "shell_stream", None)
    if not _stream_ok(stream):
        return "the kernel's shell_stream is not a ZMQStream as expected"
    queue = getattr(kernel, "msg_queue", None)
    if queue is not None:
        # ipykernel 6: the stream's callback is partial(schedule_dispatch, dispatch_shell).
        if not all(hasattr(queue, a) for a in ("qsize", "get_nowait", "put_nowait")):
            return "kernel.msg_queue is not a queue as expected"
        return PumpTarget("ipykernel6", kernel, stream, stream, queue, None)
    if not hasattr(kernel, "shell_main"):
        return "the kernel has neither ipykernel 6's msg_queue nor ipykernel 7's shell_main"
    # ipykernel 7 without a shell channel thread (a kernel app that does not make one): the
    # main loop reads the shell socket directly, with shell_main as callback.
    return PumpTarget("ipykernel7", kernel, stream, stream, None, None)


class ShellPump:
    """Reads one thread's shell messages while it blocks; see the module docstring.

    Use ``start()`` once, ``pump()`` as often as wanted, and ``close()`` once (in a ``finally``).
    ``allow_interrupt`` wraps each comm handler: the waiter lets Ctrl-C interrupt a handler (as in
    an idle kernel) but defers it everywhere else, so that no message is dropped half-way.
    """

    def __init__(
        self,
        target: PumpTarget,
        allow_interrupt: Callable[[], AbstractContextManager[object]],
    ) -> None:
        self._t = target
        self._allow_interrupt = allow_interrupt
        self._inbox: deque[list[Any]] = deque()  # read, not yet looked at
        self._deferred: list[list[Any]] = []  # not comms: handed back to the kernel at the end
        self._original: Callable[[list[Any]], Any] | None = None
        self._copy = False

    @property
    def socket(self) -> Any:
        """The zmq socket to poll for this thread's next shell message."""
        return self._t.stream.socket

    def start(self) -> None:
        stream = self._t.stream
        self._original = stream._recv_callback
        self._copy = bool(getattr(stream, "_recv_copy", False))
        # Same copy flag, so the frames we hand back are what the original callback expects.
        stream.on_recv(self._inbox.append, copy=self._copy)
        if self._t.msg_queue is not None:
            self._take_queued_comms()

    def pump(self) -> int:
        """Read what is waiting; run the comms now, keep the rest. Returns how many ran."""
        self._t.stream.flush(zmq.POLLIN)  # receive only: never send from here
        ran = 0
        while self._inbox:
            raw = self._inbox.popleft()
            if self._is_comm(raw):
                self._dispatch(raw)
                ran += 1
            else:
                self._deferred.append(raw)
        return ran

    def close(self) -> None:
        """Hand the kept messages back in arrival order, then restore the stream's callback.

        The original callback schedules each one (ipykernel 6: on ``msg_queue``; 7: a task that
        waits for the shell's lock, FIFO), so they run after the cell, before anything newer.
        """
        stream, original = self._t.stream, self._original
        if original is None:
            return
        pending = [*self._deferred, *self._inbox]
        self._deferred.clear()
        self._inbox.clear()
        try:
            loop = stream.io_loop.asyncio_loop
            for raw in pending:
                try:
                    result = original(raw)
                    if inspect.isawaitable(result):
                        _keep(asyncio.ensure_future(result, loop=loop))  # as ZMQStream does
                except Exception:
                    _log.exception("anvia_notebook: could not hand a shell message back")
        finally:
            # Whatever happened above (an interrupt, a loop gone), the kernel gets its shell
            # back: on_recv re-arms the poll state, so waiting messages are read soon.
            stream.on_recv(original, copy=self._copy)
            self._original = None

    # -- internals -----------------------------------------------------------------------------

    def _take_queued_comms(self) -> None:
        """ipykernel 6: take the comms already on ``msg_queue``, put the rest back in order."""
        queue: Any = self._t.msg_queue
        dispatch_shell = getattr(self._t.kernel, "dispatch_shell", None)
        items = [queue.get_nowait() for _ in range(queue.qsize())]
        for item in items:
            # Entries are (index, dispatch, args), from kernel.schedule_dispatch.
            is_shell = isinstance(item, tuple) and len(item) == 3 and item[1] == dispatch_shell
            if is_shell and len(item[2]) == 1 and self._is_comm(item[2][0]):
                self._inbox.append(item[2][0])
            else:
                queue.put_nowait(item)

    def _is_comm(self, raw: list[Any]) -> bool:
        return self._msg_type(raw) in COMM_MSG_TYPES

    def _msg_type(self, raw: list[Any]) -> str | None:
        """The message type from the header frame, without verifying (recording) the digest."""
        session = self._t.kernel.session
        try:
            _idents, frames = session.feed_identities(raw, copy=self._copy)
            header = frames[1] if self._copy else frames[1].bytes
            msg_type = session.unpack(header).get("msg_type")
        except Exception:
            return None  # e.g. ipykernel 7's internal b"stop aborting" marker: hand it back
        return msg_type if isinstance(msg_type, str) else None

    def _dispatch(self, raw: list[Any]) -> None:
        """Run one comm message with the kernel's handler, as ``dispatch_shell`` would."""
        kernel = self._t.kernel
        try:
            idents, frames = kernel.session.feed_identities(raw, copy=self._copy)
            msg = kernel.session.deserialize(frames, content=True, copy=self._copy)
        except Exception:
            kernel.log.error("Invalid Message", exc_info=True)
            return
        handler = kernel.shell_handlers.get(msg["header"]["msg_type"])
        if handler is None:
            return
        # The handler runs with the comm message as parent (side effects and replies are tied
        # to it, and ipykernel 7 routes the comm's next messages by it), in a copy of the
        # context as ipykernel 7.4 does; the cell's parent is put back afterwards because
        # set_parent also sets kernel- and shell-wide defaults.
        saved = (kernel._parent_ident["shell"], kernel.get_parent("shell"))
        try:
            with self._allow_interrupt():
                contextvars.copy_context().run(self._call, handler, idents, msg)
        finally:
            kernel.set_parent(*saved, channel="shell")

    def _call(self, handler: Callable[..., Any], idents: list[bytes], msg: dict[str, Any]) -> None:
        kernel = self._t.kernel
        kernel.set_parent(idents, msg, channel="shell")
        try:
            result = handler(self._t.reply_stream, idents, msg)
            if inspect.isawaitable(result):
                # Comm handlers are synchronous in ipykernel 6 and 7; an async one can only
                # run once the loop runs again, after the cell.
                _keep(asyncio.ensure_future(result, loop=self._t.stream.io_loop.asyncio_loop))
        except Exception:
            kernel.log.error("Exception in message handler:", exc_info=True)
        finally:
            # Flush while the comm is still the parent, like dispatch_shell.
            for out in (sys.stdout, sys.stderr):
                if out is not None:
                    out.flush()


_tasks: set[asyncio.Future[Any]] = set()  # the loop holds tasks weakly: keep them until done


def _keep(task: asyncio.Future[Any]) -> None:
    _tasks.add(task)
    task.add_done_callback(_task_done)


def _task_done(task: asyncio.Future[Any]) -> None:
    _tasks.discard(task)
    if not task.cancelled() and task.exception() is not None:
        _log.error("anvia_notebook: a deferred shell message failed", exc_info=task.exception())

"""Block a synchronous cell until a future completes, while the cell's widget keeps working.

``request.send_sync()`` runs the agent on a worker thread and calls ``wait_for_future`` on the
cell's thread. Blocking that thread naively (``Event.wait``, ``future.result()``) deadlocks the
widget: a button click arrives as a ``comm_msg`` shell message, which the kernel reads on the very
thread that blocks (ipykernel issue 646). ``nest_asyncio`` does not help (ipykernel 7 loses the
click, 6 defers it), nor does ``jupyter-ui-poll`` on 7. So the wait serves that thread's shell
messages itself: comm messages now, every other message (cells queued behind, completion
requests, ...) handed back to the kernel in order when the wait ends (``_pump_shell``).

Strategies, chosen by feature detection (``describe_kernel``):

``ipykernel6-pump``
    ipykernel 6 (Colab pins 6.17.1): read ``kernel.shell_stream`` on the main thread, take the
    comms already on ``kernel.msg_queue``, hand the rest back through ``schedule_dispatch``.
``ipykernel7-pump``
    ipykernel 7: the shell channel thread forwards each message to the main thread, or to a
    subshell's thread, over an inproc socket; read the calling thread's one. A comm message
    for a subshell (7.0-7.3: by its ``subshell_id`` header, which JupyterLab 4.6 sets for widget
    messages; 7.4: the subshell whose thread last sent on that comm) is handled on that thread,
    which is not blocked: widget handlers must be thread-agnostic.
``other-thread``
    the caller is not a thread that reads shell messages (a worker thread): plain wait.
``no-kernel``
    not in an ipykernel kernel (a script, a test): plain wait.
``fallback``
    a kernel whose internals are not recognised: plain wait, with a ``KernelWaitWarning`` that
    recommends ``request.show()`` (or ``await request.send()`` where the kernel supports it).

``await_serving_widgets`` does the same for a cell's top-level ``await`` (``await handle``) on a
kernel that runs no comm message while a cell awaits (ipykernel < 7.4, so Colab's 6.17.1): it
pumps between its awaits, and only in the cell's own task (a task the cell started is left alone,
or it would hold back the next cells while it waits).

In every strategy Kernel > Interrupt (SIGINT, a ``KeyboardInterrupt`` in the main thread) ends the
wait with ``KeyboardInterrupt``: at once when the signal wakes the main thread, else within
``poll_interval``. While the pump runs, the interrupt is held back from the pump's bookkeeping (so
no queued message is lost) and raised at the next check. Interrupt reaches only the main thread:
a wait on a subshell's thread ends when its future does. Cancelling the run is the caller's job.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import signal
import socket
import sys
import threading
import warnings
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from types import FrameType
from typing import TYPE_CHECKING, Any, Literal, TypeVar

if TYPE_CHECKING:
    from ._pump_shell import PumpTarget, ShellPump

__all__ = [
    "KernelInfo",
    "KernelWaitWarning",
    "Strategy",
    "await_serving_widgets",
    "describe_kernel",
    "wait_for_future",
]

T = TypeVar("T")

Strategy = Literal["ipykernel6-pump", "ipykernel7-pump", "other-thread", "no-kernel", "fallback"]

_log = logging.getLogger(__name__)


class KernelWaitWarning(UserWarning):
    """``send_sync()`` cannot keep the widget working while it blocks in this kernel."""


@dataclass(frozen=True)
class KernelInfo:
    """How ``wait_for_future`` waits when called from this thread, and what the kernel is."""

    strategy: Strategy
    ipykernel_version: tuple[int, ...] | None
    """``ipykernel.version_info``, or ``None`` outside a kernel."""
    kernel_class: str | None
    """The kernel's class, ``module.Name`` (a subclass such as Colab's shows here)."""
    subshells: bool
    """ipykernel 7 layout: comm handlers may run on a subshell thread, not the main thread."""
    native_await: bool
    """A cell's top-level ``await`` receives comm messages (ipykernel >= 7.4)."""
    colab: bool
    """Running in Google Colab (``google.colab`` imported); its front end was not tested here."""
    detail: str
    """One sentence on why this strategy."""
    warning: str | None = None
    """Set for ``fallback``: what the user sees and should do instead."""


def describe_kernel() -> KernelInfo:
    """Which strategy ``wait_for_future`` would use if called now from this thread."""
    return _inspect()[0]


def wait_for_future(
    future: concurrent.futures.Future[T],
    *,
    poll_interval: float = 0.05,
    warn_stacklevel: int = 3,
) -> T:
    """Block until ``future`` completes and return its result (or raise its exception).

    Meanwhile comm messages to this thread (widget clicks) are handled and other shell
    messages wait their turn, see the module docstring. Raises ``KeyboardInterrupt`` on
    Kernel > Interrupt within about ``poll_interval`` seconds; ``future`` is left as it is.
    ``warn_stacklevel`` is passed to ``warnings.warn`` for the fallback warning (3: the caller
    of the function that calls this one, e.g. the cell that calls ``send_sync()``).
    """
    if poll_interval <= 0:
        raise ValueError("poll_interval must be positive")
    nested: _PumpedWait | None = getattr(_local, "wait", None)
    if nested is not None:
        # A comm handler run by our pump waits again: share the pump (one owner of the stream).
        with nested.deferring_sigint():
            return nested.wait(future)

    info, target = _inspect()
    if target is None:
        if info.warning:
            warnings.warn(info.warning, KernelWaitWarning, stacklevel=warn_stacklevel)
        return _plain_wait(future, poll_interval)

    with _pumping(target, poll_interval) as waiter:
        return waiter.wait(future)


async def await_serving_widgets(awaitable: Awaitable[T], *, poll_interval: float = 0.05) -> T:
    """Await ``awaitable``; in a cell on a kernel without native ``await`` support for comm
    messages, serve the widget's messages meanwhile (see the module docstring).

    Kernel > Interrupt ends the wait with ``KeyboardInterrupt`` (``awaitable`` is cancelled).
    """
    future = asyncio.ensure_future(awaitable)
    target = _cell_pump_target()
    if target is None:
        if _native_awaiting_cell():
            return await _awaited_with_heartbeat(future)
        return await future
    try:
        with _pumping(target, poll_interval) as waiter:
            return await waiter.wait_async(future)
    finally:
        if not future.done():
            future.cancel()


@contextmanager
def _pumping(target: PumpTarget, poll_interval: float) -> Iterator[_PumpedWait]:
    """A started :class:`_PumpedWait`, this thread's wait (so a nested wait shares it) with
    SIGINT deferred, until the block ends; then closed."""
    waiter = _PumpedWait(target, poll_interval)
    _local.wait = waiter
    try:
        with waiter.deferring_sigint():
            try:
                waiter.start()
                yield waiter
            finally:
                waiter.close()
    finally:
        _local.wait = None


def _cell_pump_target() -> PumpTarget | None:
    """The pump target when the caller is a cell's top-level await the kernel does not serve."""
    if getattr(_local, "wait", None) is not None:
        return None  # already served by a wait further up
    info, target = _inspect()
    if target is None or info.native_await or not _in_cell_task():
        return None
    return target


#: Seconds between the wake-ups of a cell's loop while the cell awaits on ipykernel 7.4+.
HEARTBEAT = 0.2


def _native_awaiting_cell() -> bool:
    """Whether the caller awaits on a kernel that serves widgets meanwhile (ipykernel 7.4+),
    outside any wait that already wakes the loop: in the cell's own task, or in a task the cell
    awaits through another (``asyncio.gather``, ``asyncio.wait_for``), whose wake-ups let
    Kernel > Interrupt reach the cell just as well (and cost a task the cell does not await
    nothing but the wake-ups)."""
    if getattr(_local, "wait", None) is not None:
        return False
    info, _ = _inspect()
    return info.native_await


async def _awaited_with_heartbeat(future: asyncio.Future[T]) -> T:
    """Await ``future``, waking the loop every :data:`HEARTBEAT` seconds. ipykernel cancels a
    cell's top-level await on Kernel > Interrupt only once something wakes its loop: with
    nothing else to do, the interrupt took effect when the next message came (never, for a
    person waiting); with the tick, within a few tenths of a second (``kernel.md``)."""
    try:
        while not future.done():
            await asyncio.wait((future,), timeout=HEARTBEAT)
        return future.result()
    finally:
        if not future.done():
            future.cancel()


def _in_cell_task() -> bool:
    """Whether IPython's ``run_cell_async`` awaits the caller (it is on the task's stack)."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if code.co_name == "run_cell_async" and "IPython" in code.co_filename:
            return True
        frame = frame.f_back
    return False


# -- detection ---------------------------------------------------------------------------------

_local = threading.local()  # .wait: the _PumpedWait running on this thread, if any


def _current_kernel() -> Any | None:
    # Never import ipykernel here: if it is not imported, this is not a kernel.
    kernelbase = sys.modules.get("ipykernel.kernelbase")
    if kernelbase is None:
        return None
    try:
        kernel_cls = kernelbase.Kernel
        return kernel_cls.instance() if kernel_cls.initialized() else None
    except Exception:
        return None


def _inspect() -> tuple[KernelInfo, PumpTarget | None]:
    colab = "google.colab" in sys.modules
    kernel = _current_kernel()
    if kernel is None:
        detail = "not in an ipykernel kernel: nothing to serve while waiting"
        return KernelInfo("no-kernel", None, None, False, False, colab, detail), None

    version = tuple(getattr(sys.modules.get("ipykernel"), "version_info", ()) or ())
    kernel_class = f"{type(kernel).__module__}.{type(kernel).__qualname__}"
    subshells = getattr(kernel, "shell_channel_thread", None) is not None
    native_await = subshells and version >= (7, 4)

    from ._pump_shell import find_target

    try:
        target = find_target(kernel)
    except Exception as exc:  # unexpected internals: never let detection break the caller
        target = f"inspecting the kernel failed ({exc!r})"

    def info(strategy: Strategy, detail: str, warning: str | None = None) -> KernelInfo:
        return KernelInfo(
            strategy, version, kernel_class, subshells, native_await, colab, detail, warning
        )

    if target is None:
        detail = "this thread reads no shell messages, so blocking it blocks no widget"
        return info("other-thread", detail), None
    if isinstance(target, str):
        instead = "`await request.send()` or `request.show()`"
        if not native_await:
            instead = "`request.show()` (the cell returns at once and the widget stays live)"
        warning = (
            f"anvia_notebook: send_sync() cannot serve the widget while it blocks in this kernel"
            f" ({kernel_class}, ipykernel {'.'.join(map(str, version)) or '?'}: {target}); the"
            f" widget's buttons will not respond until the cell ends, so a run waiting for an"
            f" approval or an answer would hang (Kernel > Interrupt stops it). Use {instead}."
        )
        return info("fallback", target, warning), None

    where = "the main shell" if target.subshell_id is None else f"subshell {target.subshell_id}"
    detail = f"{target.layout} layout: serve the comm messages of {where} while waiting"
    if colab:
        detail += " (Colab: the pump is ipykernel's; Colab's front end was not tested)"
    strategy: Strategy = "ipykernel6-pump" if target.layout == "ipykernel6" else "ipykernel7-pump"
    return info(strategy, detail), target


# -- waiting -----------------------------------------------------------------------------------


def _plain_wait(future: concurrent.futures.Future[T], poll_interval: float) -> T:
    # Waking every poll_interval lets a KeyboardInterrupt through even when the signal went to
    # another thread (then the main thread only notices it when its lock wait times out).
    while not future.done():
        concurrent.futures.wait([future], timeout=poll_interval)
    return future.result()


class _PumpedWait:
    """One blocking wait on a shell thread: the pump, a wake-up socket and a SIGINT guard."""

    def __init__(self, target: PumpTarget, poll_interval: float) -> None:
        import zmq

        from ._pump_shell import ShellPump

        self._poll_ms = max(1, round(poll_interval * 1000))
        self._interrupted = False
        self._pump_failed = False
        # A local socket pair wakes the poll below at once when the future completes (from
        # any thread) or Ctrl-C is pressed, instead of at the next poll_interval.
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._sigint_handler = self._on_sigint  # one bound method, compared by identity
        self._pump: ShellPump = ShellPump(target, self._allow_interrupt)
        self._poller = zmq.Poller()
        self._poller.register(self._pump.socket, zmq.POLLIN)
        self._poller.register(self._wake_r, zmq.POLLIN)

    def start(self) -> None:
        try:
            self._pump.start()
        except Exception:
            self._pump_broke("starting")

    def close(self) -> None:
        try:
            self._pump.close()
        finally:
            self._wake_r.close()
            self._wake_w.close()

    def wait(self, future: concurrent.futures.Future[T]) -> T:
        future.add_done_callback(self._wake)
        while True:
            self._serve()
            if future.done():
                return future.result()
            self._raise_if_interrupted()
            self._poller.poll(self._poll_ms)
            self._drain_wake()

    async def wait_async(self, future: asyncio.Future[T]) -> T:
        """``wait`` for a cell that awaits: the loop runs between pumps (and reads the stream)."""
        poll = self._poll_ms / 1000
        while True:
            self._serve()
            if future.done():
                return future.result()
            self._raise_if_interrupted()
            await asyncio.wait([future], timeout=poll)
            self._drain_wake()

    def _serve(self) -> None:
        """Handle the widget messages waiting, unless the pump broke."""
        if not self._pump_failed:
            try:
                self._pump.pump()
            except Exception:  # e.g. the stream was closed by a kernel shutdown
                self._pump_broke("serving")

    def _raise_if_interrupted(self) -> None:
        if self._interrupted:
            self._interrupted = False
            raise KeyboardInterrupt

    def _pump_broke(self, doing: str) -> None:
        # Unexpected internals or a closing kernel: keep waiting without the pump (close()
        # still hands back what it holds), and stop polling its socket, or poll() would spin.
        _log.exception("anvia_notebook: %s widget messages failed; waiting without them", doing)
        warnings.warn(
            f"anvia_notebook: {doing} the widget's messages failed (see the kernel log); the"
            " widget's buttons will not respond until the cell ends",
            KernelWaitWarning,
            stacklevel=2,
        )
        self._pump_failed = True
        with suppress(Exception):
            self._poller.unregister(self._pump.socket)

    # Ctrl-C: the kernel runs a cell with signal.default_int_handler, which raises
    # KeyboardInterrupt wherever the main thread is. Raised between reading a message and
    # keeping it, it would lose that message; so while we wait, SIGINT only records itself and
    # wakes the poll, and wait() raises KeyboardInterrupt at a safe point. A comm handler still
    # runs under the default handler, so Ctrl-C can stop a handler that hangs (as when idle).

    @contextmanager
    def deferring_sigint(self) -> Iterator[None]:
        previous = self._set_sigint(signal.default_int_handler, self._sigint_handler)
        try:
            yield
        finally:
            if previous is not None:
                signal.signal(signal.SIGINT, previous)

    @contextmanager
    def _allow_interrupt(self) -> Iterator[None]:
        previous = self._set_sigint(self._sigint_handler, signal.default_int_handler)
        try:
            yield
        except KeyboardInterrupt:
            self._interrupted = True  # raised by wait() once this message is fully handled
        finally:
            if previous is not None:
                signal.signal(signal.SIGINT, previous)

    @staticmethod
    def _set_sigint(expected: object, new: Callable[[int, FrameType | None], Any]) -> Any:
        """Install ``new`` if ``expected`` is the SIGINT handler; return what to restore."""
        if threading.current_thread() is not threading.main_thread():
            return None  # Python runs signal handlers on the main thread only
        current = signal.getsignal(signal.SIGINT)
        if current is not expected:
            return None  # someone else's handler: leave it alone
        signal.signal(signal.SIGINT, new)
        return current

    def _on_sigint(self, signum: int, frame: FrameType | None) -> None:
        self._interrupted = True
        self._wake()

    def _wake(self, *_: object) -> None:
        with suppress(OSError):  # already awake (buffer full), or closed after the wait
            self._wake_w.send(b"\0")

    def _drain_wake(self) -> None:
        try:
            while self._wake_r.recv(4096):
                pass
        except OSError:
            pass  # nothing left (BlockingIOError)

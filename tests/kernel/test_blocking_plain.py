"""``wait_for_future`` outside a kernel (this test process) and in an unrecognised kernel."""

from __future__ import annotations

import _thread
import concurrent.futures
import signal
import threading
from typing import Any

import pytest

from anvia_notebook.notebook import _blocking
from anvia_notebook.notebook._blocking import (
    KernelWaitWarning,
    describe_kernel,
    wait_for_future,
)


def _later(seconds: float, fn: Any) -> threading.Timer:
    timer = threading.Timer(seconds, fn)
    timer.start()
    return timer


def test_no_kernel_returns_the_result() -> None:
    assert describe_kernel().strategy == "no-kernel"
    future: concurrent.futures.Future[int] = concurrent.futures.Future()
    _later(0.05, lambda: future.set_result(3))
    assert wait_for_future(future, poll_interval=0.01) == 3


def test_no_kernel_raises_the_futures_exception() -> None:
    future: concurrent.futures.Future[int] = concurrent.futures.Future()
    _later(0.05, lambda: future.set_exception(TimeoutError("from the run")))
    with pytest.raises(TimeoutError, match="from the run"):
        wait_for_future(future)


def test_keyboard_interrupt_ends_the_wait() -> None:
    # A test run started with Ctrl-C ignored (a background job of a shell, some CI runners)
    # would never see the simulated Ctrl-C: handle it the way an interactive Python does.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        _wait_is_interrupted()
    finally:
        signal.signal(signal.SIGINT, previous)


def _wait_is_interrupted() -> None:
    """Ctrl-C once the wait polls: the wait ends with KeyboardInterrupt at the end of the poll
    under way (each as long as ``poll_interval``). If it polls on regardless, the future is
    resolved after a few polls: the wait returns instead of raising, and the test fails rather
    than hangs."""
    future: concurrent.futures.Future[int] = concurrent.futures.Future()
    polling = threading.Event()
    interrupted = threading.Event()
    polls_after = [0]
    timeouts: set[float | None] = set()
    real_wait = concurrent.futures.wait

    def counting_wait(fs: Any, timeout: float | None = None) -> Any:
        timeouts.add(timeout)
        if interrupted.is_set():
            polls_after[0] += 1
            if polls_after[0] == 5 and not future.done():
                future.set_result(0)
        polling.set()
        return real_wait(fs, timeout=timeout)

    def interrupt_once_polling() -> None:
        if polling.wait(timeout=30):
            _thread.interrupt_main()
            interrupted.set()
        elif not future.done():  # the wait never polled: end it (the test then fails)
            future.set_result(0)

    concurrent.futures.wait = counting_wait  # type: ignore[assignment]  # what the wait calls
    try:
        threading.Thread(target=interrupt_once_polling, daemon=True).start()
        with pytest.raises(KeyboardInterrupt):
            wait_for_future(future, poll_interval=0.01)
    finally:
        concurrent.futures.wait = real_wait
    assert timeouts == {0.01}  # each poll is that short: Ctrl-C is seen that soon
    assert polls_after[0] <= 1  # the poll under way when Ctrl-C came, at most
    assert not future.done()  # cancelling the run is the caller's job


def test_poll_interval_must_be_positive() -> None:
    with pytest.raises(ValueError, match="poll_interval"):
        wait_for_future(concurrent.futures.Future(), poll_interval=0)


def test_unrecognised_kernel_warns_and_still_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    class OddKernel:  # a kernel with none of the internals the pumps need
        pass

    monkeypatch.setattr(_blocking, "_current_kernel", OddKernel)
    info = describe_kernel()
    assert info.strategy == "fallback"
    assert info.kernel_class is not None and info.kernel_class.endswith("OddKernel")
    assert info.warning is not None and "request.show()" in info.warning
    future: concurrent.futures.Future[str] = concurrent.futures.Future()
    _later(0.05, lambda: future.set_result("ok"))
    with pytest.warns(KernelWaitWarning, match=r"request\.show\(\)"):
        assert wait_for_future(future) == "ok"

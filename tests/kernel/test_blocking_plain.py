"""``wait_for_future`` outside a kernel (this test process) and in an unrecognised kernel."""

from __future__ import annotations

import _thread
import concurrent.futures
import signal
import threading
import time
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
    future: concurrent.futures.Future[int] = concurrent.futures.Future()
    _later(0.1, _thread.interrupt_main)
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        wait_for_future(future)
    assert time.monotonic() - started < 0.5
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

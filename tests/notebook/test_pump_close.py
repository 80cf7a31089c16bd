"""The shell pump gives the kernel its shell back when it closes, whatever happens meanwhile."""

from __future__ import annotations

from typing import Any

import pytest

from anvia_notebook.notebook._pump_shell import PumpTarget, ShellPump


class _Loop:
    asyncio_loop = None


class _Stream:
    """The part of a ZMQStream the pump uses."""

    def __init__(self, original: Any) -> None:
        self._recv_callback = original
        self._recv_copy = False
        self.io_loop = _Loop()

    def on_recv(self, callback: Any, copy: bool = True) -> None:
        self._recv_callback = callback


def _pump(original: Any) -> tuple[ShellPump, _Stream]:
    stream = _Stream(original)
    target = PumpTarget("ipykernel7", object(), stream, stream, None, None)
    pump = ShellPump(target, allow_interrupt=lambda: pytest.fail("no comm in these tests"))
    pump.start()
    return pump, stream


def test_close_hands_messages_back_in_order_and_restores_the_callback():
    handed: list[Any] = []
    pump, stream = _pump(handed.append)
    assert stream._recv_callback != handed.append  # the pump reads meanwhile
    stream._recv_callback([b"first"])
    stream._recv_callback([b"second"])
    pump.close()
    assert handed == [[b"first"], [b"second"]]
    assert stream._recv_callback == handed.append


def test_an_interrupt_while_handing_messages_back_still_restores_the_kernels_callback():
    def original(raw: Any) -> None:
        raise KeyboardInterrupt  # Ctrl-C lands while the kernel takes a message back

    pump, stream = _pump(original)
    stream._recv_callback([b"execute_request"])
    with pytest.raises(KeyboardInterrupt):
        pump.close()
    assert stream._recv_callback is original
    pump.close()  # closing again does nothing


def test_a_missing_loop_still_restores_the_kernels_callback():
    handed: list[Any] = []
    pump, stream = _pump(handed.append)
    stream._recv_callback([b"execute_request"])
    del stream.io_loop  # the kernel is going away
    with pytest.raises(AttributeError):
        pump.close()
    assert stream._recv_callback == handed.append

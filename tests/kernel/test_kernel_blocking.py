"""``wait_for_future`` in real kernels: clicks reach the widget while a cell blocks.

Each test drives a kernel the way JupyterLab does: cells as ``execute_request``, clicks as
``comm_msg`` shell messages (with the ``subshell_id`` header JupyterLab 4.6 adds when the kernel
supports subshells), Kernel > Interrupt as SIGINT. See conftest.py for the kernels.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from conftest import KernelHandle

# Kernel-side helpers: a log of events with the thread and time each happened, a future that a
# comm handler resolves, and a comm target "anvia_test" the client opens comms to.
SETUP = r"""
import concurrent.futures, json, threading, time
from anvia_notebook.notebook._blocking import describe_kernel, wait_for_future

EVENTS = []
FUT = concurrent.futures.Future()
FUT2 = concurrent.futures.Future()

def record(tag, **kw):
    EVENTS.append(dict(tag=tag, t=time.time(), thread=threading.current_thread().name, **kw))

def strategy_in_a_thread():
    box = []
    worker = threading.Thread(target=lambda: box.append(describe_kernel().strategy))
    worker.start()
    worker.join()
    return box[0]

def _anvia_test_target(comm, open_msg):
    @comm.on_msg
    def _on_msg(msg):
        data = msg["content"]["data"]
        record("comm", data=data)
        if "ack" in data:
            comm.send({"acked": data["ack"]})
        if "resolve" in data and not FUT.done():
            FUT.set_result(data["resolve"])
        if "sleep" in data:  # a slow handler
            time.sleep(data["sleep"])
            record("slept")
        if "wait_nested" in data:  # a handler that itself blocks on a future
            record("nested", value=wait_for_future(FUT2))
        if "resolve2" in data:
            FUT2.set_result(data["resolve2"])
        if "resolve_from_thread" in data:  # as the agent's run thread would
            def work(value=data["resolve_from_thread"]):
                time.sleep(0.1)
                print("worker says", value, flush=True)
                FUT.set_result(value)
            threading.Thread(target=work, name="run-thread").start()

get_ipython().kernel.comm_manager.register_target("anvia_test", _anvia_test_target)
"""

WAIT_CELL = r"""
print("waiting", flush=True)
r = wait_for_future(FUT)
print("resolved", r, describe_kernel().strategy)
"""


def _setup(kernel: KernelHandle, comm_id: str = "c1") -> None:
    kernel.run(SETUP)
    kernel.send_comm("comm_open", {"comm_id": comm_id, "target_name": "anvia_test", "data": {}})
    # Shell messages to the main shell are handled in order: once this cell ran, the comm is open.
    assert kernel.run_json(f"'{comm_id}' in get_ipython().kernel.comm_manager.comms") is True


def _strategy(kernel: KernelHandle) -> str:
    return "ipykernel7-pump" if kernel.major >= 7 else "ipykernel6-pump"


def test_describe_kernel(kernel: KernelHandle) -> None:
    kernel.run(SETUP)
    info = kernel.run_json("describe_kernel().__dict__")
    assert info["strategy"] == _strategy(kernel)
    assert info["warning"] is None
    assert info["subshells"] is (kernel.major >= 7)
    assert info["ipykernel_version"][0] == kernel.major
    # From a thread the kernel does not read shell messages on: a plain wait.
    assert kernel.run_json("strategy_in_a_thread()") == "other-thread"


def test_comm_resolves_blocked_cell_and_queued_cell_runs_after(kernel: KernelHandle) -> None:
    _setup(kernel)
    a = kernel.execute(WAIT_CELL)
    kernel.wait_output(a, "waiting")
    # Queued behind the blocked cell, before the click: must wait, then run, in order.
    b = kernel.execute("print('after', r)")
    c = kernel.execute("print('third', r + 1)")
    time.sleep(0.2)
    assert a not in kernel.replies
    kernel.send_comm("comm_msg", {"comm_id": "c1", "data": {"resolve_from_thread": 42}})

    reply_a = kernel.wait_reply(a, timeout=10)
    assert reply_a["content"]["status"] == "ok"
    kernel.wait_output(a, f"resolved 42 {_strategy(kernel)}")
    # The run thread's print went to the blocked cell: the comm's parent did not stick.
    assert kernel.stdout(a) == f"waiting\nworker says 42\nresolved 42 {_strategy(kernel)}\n"
    assert kernel.wait_reply(b)["content"]["status"] == "ok"
    assert kernel.wait_reply(c)["content"]["status"] == "ok"
    kernel.wait_idle(c)
    assert kernel.stdout(b) == "after 42\n"
    assert kernel.stdout(c) == "third 43\n"
    counts = [kernel.replies[m]["content"]["execution_count"] for m in (a, b, c)]
    assert counts == sorted(counts) and len(set(counts)) == 3

    events = kernel.run_json("EVENTS")
    assert [e["data"] for e in events] == [{"resolve_from_thread": 42}]
    assert events[0]["thread"] == "MainThread"  # the pump ran it on the blocked thread

    # The kernel is not wedged: an idle kernel still handles clicks and cells.
    kernel.send_comm("comm_msg", {"comm_id": "c1", "data": {"ack": "idle"}})
    kernel.wait_iopub(
        lambda m: m["msg_type"] == "comm_msg" and m["content"]["data"] == {"acked": "idle"}
    )
    assert kernel.run("print(len(EVENTS))") == "2\n"


def test_comm_already_queued_before_the_wait(kernel: KernelHandle) -> None:
    """A click read by the kernel before the wait starts (here during a top-level await).

    ipykernel 7.0-7.3 (the newest for Python 3.10) park a comm message read during a top-level
    await in a task that waits for the cell to end, out of the pump's reach; 7.4 runs it during
    the await. There the wait is not stuck and nothing is lost: the next click ends it, and the
    parked one is handled when the cell ends."""
    _setup(kernel)
    a = kernel.execute(
        "import asyncio\nprint('sleeping', flush=True)\nawait asyncio.sleep(1.0)\n" + WAIT_CELL
    )
    kernel.wait_output(a, "sleeping")
    kernel.send_comm("comm_msg", {"comm_id": "c1", "data": {"resolve": 7}})
    kernel.wait_output(a, "waiting")
    parks = (7, 0) <= kernel.version_info < (7, 4)
    if parks:
        kernel.send_comm("comm_msg", {"comm_id": "c1", "data": {"resolve": 8}})
    assert kernel.wait_reply(a, timeout=10)["content"]["status"] == "ok"
    result = kernel.run_json("r")
    # 7.0-7.3: 8, or 7 when the early click came after the await (a slow machine).
    assert result in ((7, 8) if parks else (7,))
    kernel.wait_output(a, f"resolved {result}")
    expected = [7, 8] if parks else [7]
    deadline = time.monotonic() + 10  # the parked click is handled once the cell has ended
    while (handled := sorted(e["data"]["resolve"] for e in kernel.run_json("EVENTS"))) != expected:
        assert time.monotonic() < deadline, handled


def test_spaced_clicks_are_handled_while_blocked(kernel: KernelHandle) -> None:
    """Twenty clicks while the cell blocks, each sent after the last one's ack: each handled on
    the blocked thread (how soon is measured by benchmarks/kernel_wait_bench.py)."""
    _setup(kernel)
    a = kernel.execute(WAIT_CELL)
    kernel.wait_output(a, "waiting")
    for n in range(20):
        kernel.send_comm("comm_msg", {"comm_id": "c1", "data": {"ack": n}})
        kernel.wait_iopub(
            lambda m, n=n: m["msg_type"] == "comm_msg" and m["content"]["data"] == {"acked": n},
            timeout=10,
        )
    assert a not in kernel.replies  # still blocked: acks came from the pump
    kernel.send_comm("comm_msg", {"comm_id": "c1", "data": {"resolve": "done"}})
    assert kernel.wait_reply(a, timeout=10)["content"]["status"] == "ok"
    events = [e for e in kernel.run_json("EVENTS") if "ack" in e["data"]]
    assert [e["data"]["ack"] for e in events] == list(range(20))
    assert {e["thread"] for e in events} == {"MainThread"}


def test_interrupt_reaches_the_caller(kernel: KernelHandle) -> None:
    """Kernel > Interrupt while a cell blocks: the cell gets the KeyboardInterrupt (how soon is
    measured by benchmarks/kernel_wait_bench.py), and the cell queued behind it runs."""
    _setup(kernel)
    a = kernel.execute(
        "print('waiting', flush=True)\n"
        "try:\n    wait_for_future(concurrent.futures.Future())\n"
        "except KeyboardInterrupt:\n    record('interrupted')\n    print('interrupted')\n"
    )
    kernel.wait_output(a, "waiting")
    b = kernel.execute("print('after interrupt')")
    time.sleep(0.3)  # b reaches the kernel before the interrupt (nothing to observe it by)
    kernel.km.interrupt_kernel()
    assert kernel.wait_reply(a, timeout=10)["content"]["status"] == "ok"
    kernel.wait_output(a, "interrupted")
    assert kernel.wait_reply(b)["content"]["status"] == "ok"
    kernel.wait_output(b, "after interrupt")
    assert [e["tag"] for e in kernel.run_json("EVENTS")] == ["interrupted"]


def test_interrupt_stops_a_slow_comm_handler(kernel: KernelHandle) -> None:
    """Ctrl-C during a comm handler run by the wait interrupts the handler, then the wait."""
    _setup(kernel)
    a = kernel.execute(
        "print('waiting', flush=True)\n"
        "try:\n    wait_for_future(FUT)\n"
        "except KeyboardInterrupt:\n    record('interrupted')\n    print('interrupted')\n"
    )
    kernel.wait_output(a, "waiting")
    # Acked by the handler the wait runs, which then sleeps 5 s.
    kernel.send_comm("comm_msg", {"comm_id": "c1", "data": {"ack": "slow", "sleep": 5}})
    kernel.send_comm("comm_msg", {"comm_id": "c1", "data": {"ack": "behind"}})
    kernel.wait_iopub(
        lambda m: m["msg_type"] == "comm_msg" and m["content"]["data"] == {"acked": "slow"},
        timeout=10,
    )
    kernel.km.interrupt_kernel()
    assert kernel.wait_reply(a, timeout=10)["content"]["status"] == "ok"
    kernel.wait_output(a, "interrupted")
    events = kernel.run_json("EVENTS")
    # The sleep was cut short (how soon is measured by benchmarks/kernel_wait_bench.py).
    assert "slept" not in [e["tag"] for e in events]
    assert [e["tag"] for e in events if e["tag"] == "interrupted"] == ["interrupted"]
    # The click behind it was not lost: handled by the wait, or by the kernel after the cell.
    assert [e["data"] for e in events if e["tag"] == "comm"] == [
        {"ack": "slow", "sleep": 5},
        {"ack": "behind"},
    ]


def test_nested_wait_in_a_comm_handler(kernel: KernelHandle) -> None:
    _setup(kernel)
    a = kernel.execute(WAIT_CELL)
    kernel.wait_output(a, "waiting")
    kernel.send_comm("comm_msg", {"comm_id": "c1", "data": {"wait_nested": True}})
    b = kernel.execute("print('queued', r)")
    time.sleep(0.3)
    kernel.send_comm("comm_msg", {"comm_id": "c1", "data": {"resolve2": "inner"}})
    kernel.send_comm("comm_msg", {"comm_id": "c1", "data": {"resolve": "outer"}})
    assert kernel.wait_reply(a, timeout=10)["content"]["status"] == "ok"
    kernel.wait_output(a, "resolved outer")
    assert kernel.wait_reply(b)["content"]["status"] == "ok"
    kernel.wait_output(b, "queued outer")
    nested = [e for e in kernel.run_json("EVENTS") if e["tag"] == "nested"]
    assert [e["value"] for e in nested] == ["inner"]


def test_uncaught_interrupt_aborts_queue_like_any_cell_and_kernel_recovers(
    kernel: KernelHandle,
) -> None:
    _setup(kernel)
    a = kernel.execute(WAIT_CELL)
    kernel.wait_output(a, "waiting")
    b = kernel.execute("print('queued')")
    time.sleep(0.3)
    kernel.km.interrupt_kernel()
    reply = kernel.wait_reply(a, timeout=10)["content"]
    assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt"
    # Cells queued behind a failed cell are aborted, as without the pump.
    assert kernel.wait_reply(b)["content"]["status"] == "aborted"
    time.sleep(0.2)
    # Not wedged: clicks and cells work again, and a new wait works.
    kernel.run("FUT = concurrent.futures.Future()")
    a2 = kernel.execute(WAIT_CELL)
    kernel.wait_output(a2, "waiting")
    kernel.send_comm("comm_msg", {"comm_id": "c1", "data": {"resolve": 5}})
    assert kernel.wait_reply(a2, timeout=10)["content"]["status"] == "ok"
    kernel.wait_output(a2, "resolved 5")


# A real anywidget, clicked as its front end does: model.send(content) becomes a comm_msg with
# data {"method": "custom", "content": ...}. The handler sets a synced trait, which sends the
# state to the page while the cell still blocks.
WIDGET = r"""
import anywidget, traitlets

class Clicker(anywidget.AnyWidget):
    _esm = "export default { render({ model, el }) {} }"
    clicks = traitlets.Int(0).tag(sync=True)

w = Clicker()
WFUT = concurrent.futures.Future()

def _on_custom(widget, content, buffers):
    record("click", content=content)
    widget.clicks += 1
    if content.get("last") and not WFUT.done():
        WFUT.set_result(widget.clicks)

w.on_msg(_on_custom)
print("@@" + json.dumps(w.comm.comm_id))
"""


def _click(kernel: KernelHandle, comm_id: str, n: int, subshell: str | None, **extra: Any) -> float:
    data = {"method": "custom", "content": {"n": n, **extra}}
    _, sent = kernel.send_comm("comm_msg", {"comm_id": comm_id, "data": data}, subshell)
    kernel.wait_iopub(
        lambda m: (
            m["msg_type"] == "comm_msg"
            and m["content"]["comm_id"] == comm_id
            and m["content"]["data"].get("state", {}).get("clicks") == n + 1
        ),
        timeout=10,
    )
    return sent


def test_anywidget_clicks_like_jupyterlab(kernel: KernelHandle) -> None:
    kernel.run(SETUP)
    comm_id = kernel.run(WIDGET).rsplit("@@", 1)[1].strip().strip('"')
    # JupyterLab 4.6 (commsOverSubshells: perCommTarget) sends a widget's comm messages on a
    # subshell of their own when the kernel supports subshells.
    subshell = kernel.create_subshell() if "kernel subshells" in kernel.features else None
    a = kernel.execute("print('waiting', flush=True)\nprint('clicks', wait_for_future(WFUT))")
    kernel.wait_output(a, "waiting")
    b = kernel.execute("print('after', w.clicks)")
    sent = [_click(kernel, comm_id, n, subshell, last=n == 2) for n in range(3)]
    assert kernel.wait_reply(a, timeout=10)["content"]["status"] == "ok"
    kernel.wait_output(a, "clicks 3")
    assert kernel.wait_reply(b)["content"]["status"] == "ok"
    kernel.wait_output(b, "after 3")

    clicks = [e for e in kernel.run_json("EVENTS") if e["tag"] == "click"]
    assert [e["content"]["n"] for e in clicks] == [0, 1, 2]
    threads = [e["thread"] for e in clicks]
    if subshell is None:
        assert threads == ["MainThread"] * 3
    elif kernel.version_info >= (7, 4):
        # ipykernel 7.4 routes a comm's messages to where it last sent from: the widget was
        # made on the main thread, so the first click goes there (our pump); the handler's
        # update was sent with the click (on the subshell) as parent, so later clicks go to
        # the subshell's own thread, which is not blocked.
        assert threads == ["MainThread", f"subshell-{subshell}", f"subshell-{subshell}"]
    else:  # ipykernel 7.0-7.3 route by the message's subshell_id alone
        assert threads == [f"subshell-{subshell}"] * 3
    latencies = ", ".join(f"{(e['t'] - s) * 1000:.1f}" for e, s in zip(clicks, sent, strict=True))
    print(f"\nipykernel {kernel.version}: widget clicks -> handler ms ({threads}): {latencies}")


@pytest.mark.parametrize("kernel", ["ipykernel7"], indirect=True)  # 6.x has no subshells
def test_blocking_cell_on_a_subshell_serves_that_subshells_comms(kernel: KernelHandle) -> None:
    assert "kernel subshells" in kernel.features
    _setup(kernel)
    subshell = kernel.create_subshell()
    # The kernel routes a comm's messages to the subshell that last sent on it.
    kernel.send_comm("comm_msg", {"comm_id": "c1", "data": {"ack": "s"}}, subshell)
    kernel.wait_iopub(
        lambda m: m["msg_type"] == "comm_msg" and m["content"]["data"] == {"acked": "s"}
    )
    a = kernel.execute(WAIT_CELL, subshell_id=subshell)
    kernel.wait_output(a, "waiting")
    kernel.send_comm("comm_msg", {"comm_id": "c1", "data": {"resolve": 9}}, subshell)
    assert kernel.wait_reply(a, timeout=10)["content"]["status"] == "ok"
    kernel.wait_output(a, "resolved 9 ipykernel7-pump")
    events = kernel.run_json("EVENTS")
    assert [e["thread"] for e in events] == [f"subshell-{subshell}"] * 2

"""A cell blocked in ``wait_for_future`` in real kernels: clicks and Kernel > Interrupt timed.

The kernels and the kernel-side helpers are those of the blocking-wait tests
(``tests/kernel``): ipykernel 7 (this interpreter) and ipykernel 6 (the virtualenv made by
``tests/kernel/make_ipykernel6_env.sh``, skipped when absent), started by jupyter_client, driven
as JupyterLab does (cells as ``execute_request``, clicks as ``comm_msg``, Kernel > Interrupt as
SIGINT). Times are ``time.time()`` stamps: the client's send and the kernel's record of the
event, on the same machine clock.

- click -> handler: spaced clicks while a cell blocks, from the click's send to its handler
  running on the blocked thread. Target: median under 100 ms.
- interrupt -> KeyboardInterrupt: Kernel > Interrupt while a cell blocks, to the cell catching
  the KeyboardInterrupt. Target: under 500 ms.
- interrupt during a slow click handler (a 5 s sleep): to the cell catching the
  KeyboardInterrupt (the handler's sleep cut short). Target: under 500 ms.

    python benchmarks/kernel_wait_bench.py [--clicks 20] [--interrupts 5] [--json out.json]

Exits non-zero only when the benchmark itself breaks, never because a target is missed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "tests" / "kernel"))

from conftest import KernelHandle, _start, ipykernel6_python  # noqa: E402
from test_kernel_blocking import WAIT_CELL, _setup  # noqa: E402

CLICK_TARGET_MS = 100.0
INTERRUPT_TARGET_MS = 500.0

CATCH_CELL = (
    "print('waiting', flush=True)\n"
    "try:\n    wait_for_future({future})\n"
    "except KeyboardInterrupt:\n    record('interrupted')\n    print('interrupted')\n"
)


def _figures(times: list[float]) -> dict[str, Any]:
    ordered = sorted(times)
    return {
        "n": len(ordered),
        "median_ms": statistics.median(ordered),
        "min_ms": ordered[0],
        "max_ms": ordered[-1],
        "samples_ms": times,
    }


def clicks(kernel: KernelHandle, count: int) -> dict[str, Any]:
    """``count`` clicks, each after the last one's ack, 30 ms apart, while a cell blocks."""
    _setup(kernel)
    cell = kernel.execute(WAIT_CELL)
    kernel.wait_output(cell, "waiting")
    sent: dict[int, float] = {}
    for n in range(count):
        _, sent[n] = kernel.send_comm("comm_msg", {"comm_id": "c1", "data": {"ack": n}})
        kernel.wait_iopub(
            lambda m, n=n: m["msg_type"] == "comm_msg" and m["content"]["data"] == {"acked": n},
            timeout=10,
        )
        time.sleep(0.03)  # spaced clicks, as a person makes them
    if cell in kernel.replies:
        raise RuntimeError("the cell stopped blocking before the clicks were done")
    kernel.send_comm("comm_msg", {"comm_id": "c1", "data": {"resolve": "done"}})
    kernel.wait_reply(cell, timeout=10)
    events = [e for e in kernel.run_json("EVENTS") if "ack" in e.get("data", {})]
    return _figures([(e["t"] - sent[e["data"]["ack"]]) * 1000 for e in events])


def interrupt(kernel: KernelHandle, slow_handler: bool) -> float:
    """Kernel > Interrupt while a cell blocks (in a slow click handler with ``slow_handler``):
    milliseconds from the interrupt to the cell's ``except KeyboardInterrupt``."""
    kernel.run("EVENTS.clear()\nFUT = concurrent.futures.Future()")
    cell = kernel.execute(CATCH_CELL.format(future="FUT"))
    kernel.wait_output(cell, "waiting")
    if slow_handler:  # acked, then asleep for 5 s in the handler the wait runs
        kernel.send_comm("comm_msg", {"comm_id": "c1", "data": {"ack": "slow", "sleep": 5}})
        kernel.wait_iopub(
            lambda m: m["msg_type"] == "comm_msg" and m["content"]["data"] == {"acked": "slow"},
            timeout=10,
        )
    time.sleep(0.2)  # the wait (or the handler) settled in
    before = time.time()
    kernel.km.interrupt_kernel()
    if kernel.wait_reply(cell, timeout=10)["content"]["status"] != "ok":
        raise RuntimeError("the interrupt did not reach the cell as a KeyboardInterrupt")
    kernel.wait_output(cell, "interrupted")
    events = kernel.run_json("EVENTS")
    if slow_handler and "slept" in [e["tag"] for e in events]:
        raise RuntimeError("the slow handler's sleep was not cut short")
    (caught,) = [e for e in events if e["tag"] == "interrupted"]
    return float(caught["t"] - before) * 1000


def bench_kernel(kernel: KernelHandle, args: argparse.Namespace) -> dict[str, Any]:
    result: dict[str, Any] = {"ipykernel": kernel.version}
    result["click_ms"] = clicks(kernel, args.clicks)
    result["interrupt_ms"] = _figures(
        [interrupt(kernel, slow_handler=False) for _ in range(args.interrupts)]
    )
    result["interrupt_slow_handler_ms"] = _figures(
        [interrupt(kernel, slow_handler=True) for _ in range(args.interrupts)]
    )
    return result


def _line(name: str, figures: dict[str, Any], target: float, unit: str = "ms") -> str:
    return (
        f"  {name:<49} median {figures['median_ms']:7.1f} {unit}, "
        f"{figures['min_ms']:.1f}-{figures['max_ms']:.1f} (n={figures['n']}, "
        f"target under {target:.0f} {unit})"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clicks", type=int, default=20, help="clicks per kernel (default 20)")
    parser.add_argument(
        "--interrupts", type=int, default=5, help="interrupts of each kind (default 5)"
    )
    parser.add_argument("--json", type=Path, help="write the figures to this JSON file")
    args = parser.parse_args(argv)
    kernels = {"ipykernel7": Path(sys.executable), "ipykernel6": ipykernel6_python()}
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="anvia-kernel-wait-bench-") as tmp:
        for name, python in kernels.items():
            if python is None:
                print(f"{name}: skipped (run tests/kernel/make_ipykernel6_env.sh to add it)")
                continue
            kernel = _start(python, Path(tmp) / "kernels", f"anvia-bench-{name}")
            try:
                figures = results[name] = bench_kernel(kernel, args)
            finally:
                kernel.shutdown()
            print(f"ipykernel {figures['ipykernel']}, a cell blocked in wait_for_future:")
            print(_line("click -> handler", figures["click_ms"], CLICK_TARGET_MS))
            print(
                _line(
                    "interrupt -> KeyboardInterrupt", figures["interrupt_ms"], INTERRUPT_TARGET_MS
                )
            )
            print(
                _line(
                    "interrupt in a slow handler -> KeyboardInterrupt",
                    figures["interrupt_slow_handler_ms"],
                    INTERRUPT_TARGET_MS,
                )
            )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

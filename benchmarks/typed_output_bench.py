"""What validating a typed output costs, next to pydantic's own ``TypeAdapter.validate_json``.

A model's output of 10,000 rows (``list[Row]``, each row six fields) is validated the ways a run
does it: ``mode="tool"`` (``final_result``'s arguments, the list wrapped as ``{"result": ...}``,
as the run loop validates them) and ``mode="native"`` (the model's text); the baseline is
``TypeAdapter(list[Row]).validate_json`` on the same list's JSON. Figures: the best of
``--repeat`` timings of each (CPU time of this thread), and each one's ratio to the baseline
(the target is at most 2).

    python benchmarks/typed_output_bench.py [--rows 10000] [--repeat 7] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent.parent))  # anvia_notebook, when not installed

from pydantic import BaseModel, TypeAdapter

from anvia_notebook.output_types import output_spec

#: The most a typed output's validation may cost, as a multiple of ``validate_json``.
TARGET_RATIO = 2.0


class Row(BaseModel):
    region: str
    product: str
    units: int
    price: float
    on_sale: bool
    note: str | None = None


def rows(count: int) -> list[dict[str, Any]]:
    return [
        {
            "region": ["north", "south", "east", "west"][i % 4],
            "product": f"product-{i}",
            "units": i,
            "price": i * 1.25,
            "on_sale": i % 3 == 0,
            "note": None if i % 2 else "restocked",
        }
        for i in range(count)
    ]


def best(function: Any, repeat: int) -> float:
    """The best CPU time of ``repeat`` calls of ``function`` (seconds)."""
    times = []
    for _ in range(repeat):
        start = time.thread_time()
        function()
        times.append(time.thread_time() - start)
    return min(times)


def measure(count: int = 10_000, repeat: int = 7) -> dict[str, Any]:
    data = rows(count)
    listed = json.dumps(data)
    wrapped = json.dumps({"result": data})
    adapter: TypeAdapter[list[Row]] = TypeAdapter(list[Row])
    tool = output_spec(list[Row], "tool")
    native = output_spec(list[Row], "native")
    assert tool.validate_arguments(wrapped) == adapter.validate_json(listed)
    assert native.validate_text(listed) == adapter.validate_json(listed)
    baseline = best(lambda: adapter.validate_json(listed), repeat)
    tool_time = best(lambda: tool.validate_arguments(wrapped), repeat)
    native_time = best(lambda: native.validate_text(listed), repeat)
    return {
        "rows": count,
        "validate_json_ms": baseline * 1000,
        "tool_ms": tool_time * 1000,
        "native_ms": native_time * 1000,
        "tool_ratio": tool_time / baseline,
        "native_ratio": native_time / baseline,
        "target_ratio": TARGET_RATIO,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--json", type=Path)
    options = parser.parse_args()
    result = measure(options.rows, options.repeat)
    print(f"{result['rows']:,} rows: validate_json {result['validate_json_ms']:.1f} ms")
    for mode in ("tool", "native"):
        print(
            f"  mode={mode!r}: {result[f'{mode}_ms']:.1f} ms, "
            f"{result[f'{mode}_ratio']:.2f}x (target <= {TARGET_RATIO:g}x)"
        )
    if options.json:
        options.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

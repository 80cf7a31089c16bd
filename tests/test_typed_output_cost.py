"""Validating a typed output of 10,000 rows costs at most twice pydantic's own
``TypeAdapter.validate_json`` on the same JSON (``benchmarks/typed_output_bench.py``)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent.parent / "benchmarks"))

from typed_output_bench import TARGET_RATIO, measure


def test_validating_10000_rows_costs_at_most_twice_validate_json() -> None:
    result = measure(10_000, repeat=5)
    assert result["tool_ratio"] <= TARGET_RATIO, result
    assert result["native_ratio"] <= TARGET_RATIO, result

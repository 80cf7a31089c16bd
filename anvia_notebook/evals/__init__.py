"""Evals: run an agent over many cases, score the outputs, compare two versions.

```python
from anvia_notebook import evals

cases = [evals.Case(name="sum", input="add 2 and 5", expected="7"), ...]  # or a DataFrame
report = await evals.evaluate(agent, cases, metrics=[evals.contains()], concurrency=4)
report.to_pandas()
evals.compare(report_a, report_b)
```

The runtime part never imports Jupyter nor the notebook layer: a report is shown in a kernel
through the notebook runner (``request.notebook_runner()``), which loads the live widget then.
"""

from __future__ import annotations

from ..errors import EvaluationStoppedError
from .cases import Case
from .compare import CaseChange, Comparison, MetricChange, compare
from .judge import llm_judge
from .metrics import Metric, Score, contains, exact_match, json_valid, matches
from .report import CaseResult, EvalReport
from .runner import NO_REVIEWER_MESSAGE, evaluate, evaluate_sync

__all__ = [
    "Case",
    "CaseChange",
    "CaseResult",
    "Comparison",
    "EvalReport",
    "EvaluationStoppedError",
    "Metric",
    "MetricChange",
    "NO_REVIEWER_MESSAGE",
    "Score",
    "compare",
    "contains",
    "evaluate",
    "evaluate_sync",
    "exact_match",
    "json_valid",
    "llm_judge",
    "matches",
]

"""``evals.compare(a, b)``: what changed between two reports, case by case and per metric."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Literal

from ._table import (
    HTML_CASES,
    cell,
    esc,
    format_score,
    more_cases,
    needs_pandas,
    nullable_frame,
)
from .report import MEAN_DECIMALS, EvalReport

__all__ = ["CaseChange", "Comparison", "MetricChange", "compare"]

Change = Literal[
    "newly failing",
    "newly passing",
    "score changed",
    "still failing",
    "not run",
    "removed",
    "added",
    "unchanged",
]
#: Order of the rows: what needs attention first.
_ORDER: dict[str, int] = {
    "newly failing": 0,
    "newly passing": 1,
    "score changed": 2,
    "still failing": 3,
    "not run": 4,
    "removed": 5,
    "added": 6,
    "unchanged": 7,
}


@dataclass(frozen=True)
class MetricChange:
    """A metric's mean in ``a`` and in ``b`` and the change (None where a mean is missing)."""

    name: str
    mean_a: float | None
    mean_b: float | None

    @property
    def delta(self) -> float | None:
        """``mean_b - mean_a``, rounded as the means are (to what floating point adds past
        them: 0.166666666667 - 0.2 is -0.033333333333, not -0.03333333333300001)."""
        if self.mean_a is None or self.mean_b is None:
            return None
        return round(self.mean_b - self.mean_a, MEAN_DECIMALS) + 0.0  # (never -0.0)


@dataclass(frozen=True)
class CaseChange:
    """One case (matched by name) in both reports: ``change`` says what happened to it
    (``"not run"``: Stop ended one of the evaluations before the case finished)."""

    name: str
    change: Change
    passed_a: bool | None
    passed_b: bool | None
    status_a: str | None
    status_b: str | None
    output_a: str | None
    output_b: str | None
    scores_a: dict[str, Any]
    scores_b: dict[str, Any]
    #: Why the case failed in each report (its ``error``; None when it had none).
    error_a: str | None = None
    error_b: str | None = None

    def delta(self, metric: str) -> float | None:
        a, b = self.scores_a.get(metric), self.scores_b.get(metric)
        if a is None or b is None:
            return None
        return float(_rounded(float(b) - float(a)))  # (0.3 - 0.1 is 0.2 here; never -0.0)


def _change(a: Any, b: Any) -> Change:
    if a is None:
        return "added"
    if b is None:
        return "removed"
    if a.passed and not b.passed:
        return "newly failing"
    if not a.passed and b.passed:
        return "newly passing"
    if not b.passed:
        return "still failing"
    shared = a.scores.keys() & b.scores.keys()  # (a metric only one report has changed none)
    if any(_rounded(a.scores[name]) != _rounded(b.scores[name]) for name in shared):
        return "score changed"
    return "unchanged"


def _rounded(score: Any) -> Any:
    """A number score as the changes compare it (0.7 + 0.2 is 0.9 here); others as they are."""
    if isinstance(score, (int, float)) and not isinstance(score, bool):
        return round(float(score), MEAN_DECIMALS) + 0.0
    return score


class Comparison:
    """Per-case changes from report ``a`` to report ``b`` (newly failing first) and the change
    in the pass rate and in each metric's mean. Displays as a table; ``to_pandas()``."""

    def __init__(self, a: EvalReport, b: EvalReport) -> None:
        self.a, self.b = a, b
        self.metrics: dict[str, MetricChange] = {}
        means_a, means_b = a.mean_scores, b.mean_scores
        for name in [*a.metric_names, *(n for n in b.metric_names if n not in a.metric_names)]:
            self.metrics[name] = MetricChange(name, means_a.get(name), means_b.get(name))
        by_name_a = {c.name: c for c in a.cases}
        by_name_b = {c.name: c for c in b.cases}
        # A case Stop cut off is in its report, but not run: neither removed nor added.
        cut_off = {*a.not_run, *b.not_run}
        given_a = {c.name for c in a.case_list}
        given_b = {c.name for c in b.case_list}
        names = [*by_name_a, *(n for n in by_name_b if n not in by_name_a)]
        names += [n for n in (*a.not_run, *b.not_run) if n not in names]
        names = list(dict.fromkeys(names))
        changes = []
        for name in names:
            ca, cb = by_name_a.get(name), by_name_b.get(name)
            change: Change
            if name not in given_b:
                change = "removed"
            elif name not in given_a:
                change = "added"
            else:
                change = "not run" if name in cut_off else _change(ca, cb)
            changes.append(
                CaseChange(
                    name=name,
                    change=change,
                    passed_a=ca.passed if ca else None,
                    passed_b=cb.passed if cb else None,
                    status_a=ca.status if ca else None,
                    status_b=cb.status if cb else None,
                    output_a=ca.output if ca else None,
                    output_b=cb.output if cb else None,
                    scores_a=dict(ca.scores) if ca else {},
                    scores_b=dict(cb.scores) if cb else {},
                    error_a=ca.error if ca else None,
                    error_b=cb.error if cb else None,
                )
            )
        changes.sort(key=lambda c: _ORDER[c.change])  # stable: case order within a group
        self.cases: list[CaseChange] = changes

    @property
    def pass_rate_a(self) -> float:
        return self.a.pass_rate

    @property
    def pass_rate_b(self) -> float:
        return self.b.pass_rate

    @property
    def newly_failing(self) -> list[str]:
        return [c.name for c in self.cases if c.change == "newly failing"]

    @property
    def newly_passing(self) -> list[str]:
        return [c.name for c in self.cases if c.change == "newly passing"]

    def to_pandas(self) -> Any:
        """One row per case: name, change, passed_a, passed_b, status_a, status_b, output_a,
        output_b, error_a, error_b, then ``<metric>_a``, ``<metric>_b``, ``<metric>_delta`` for
        each metric."""
        pandas = needs_pandas()
        rows = []
        for c in self.cases:
            row: dict[str, Any] = {
                "name": c.name,
                "change": c.change,
                "passed_a": c.passed_a,
                "passed_b": c.passed_b,
                "status_a": c.status_a,
                "status_b": c.status_b,
                "output_a": c.output_a,
                "output_b": c.output_b,
                "error_a": c.error_a,
                "error_b": c.error_b,
            }
            for metric in self.metrics:
                row[f"{metric}_a"] = c.scores_a.get(metric)
                row[f"{metric}_b"] = c.scores_b.get(metric)
                row[f"{metric}_delta"] = c.delta(metric)
            rows.append(row)
        columns = [
            "name",
            "change",
            "passed_a",
            "passed_b",
            "status_a",
            "status_b",
            "output_a",
            "output_b",
            "error_a",
            "error_b",
            *(f"{m}_{s}" for m in self.metrics for s in ("a", "b", "delta")),
        ]
        return nullable_frame(
            pandas,
            rows,
            columns,
            floats=tuple(f"{m}_delta" for m in self.metrics),
            texts=(
                "name",
                "change",
                *(f"{c}_{s}" for c in ("status", "output", "error") for s in "ab"),
            ),
            scores=("passed_a", "passed_b", *(f"{m}_{s}" for m in self.metrics for s in "ab")),
            paired=(("passed_a", "passed_b"), *((f"{m}_a", f"{m}_b") for m in self.metrics)),
        )

    def summary(self) -> str:
        parts = [f"pass rate {_rate(self.a)} -> {_rate(self.b)}"]
        for change in self.metrics.values():
            delta = change.delta
            parts.append(
                f"{change.name} {format_score(change.mean_a)} -> {format_score(change.mean_b)}"
                + (f" ({delta:+.2f})" if delta is not None else "")
            )
        counts = f"{len(self.newly_failing)} newly failing, {len(self.newly_passing)} newly passing"
        return f"{counts}; " + ", ".join(parts)

    def __repr__(self) -> str:
        return f"Comparison({self.summary()})"

    def __str__(self) -> str:
        """The summary, then the cases that changed verdict, by name (``print(comparison)``)."""
        lines = [self.summary()]
        for label, names in (
            ("Newly failing", self.newly_failing),
            ("Newly passing", self.newly_passing),
        ):
            if names:
                lines.append(f"{label}: {', '.join(names)}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        metric_rows = "".join(
            "<tr>"
            + cell(m.name)
            + cell(format_score(m.mean_a))
            + cell(format_score(m.mean_b))
            + cell("—" if m.delta is None else f"{m.delta:+.2f}")
            + "</tr>"
            for m in self.metrics.values()
        )
        pass_row = (
            "<tr>"
            + cell("pass rate")
            + cell(_rate(self.a))
            + cell(_rate(self.b))
            + cell(
                f"{(self.pass_rate_b - self.pass_rate_a) * 100:+.0f} pts"
                if self.a.finished and self.b.finished
                else "—"
            )
            + "</tr>"
        )
        head = "".join(
            f"<th>{esc(h)}</th>"
            for h in ("case", "change", "a", "b", *(f"{m} Δ" for m in self.metrics), "output b")
        )
        case_rows = []
        for c in self.cases[:HTML_CASES]:
            cells = [
                c.name,
                c.change,
                _verdict(c.passed_a),
                _verdict(c.passed_b),
                *("—" if (d := c.delta(m)) is None else f"{d:+.2f}" for m in self.metrics),
                c.output_b if c.status_b != "error" else f"error: {c.error_b}",
            ]
            case_rows.append("<tr>" + "".join(cell(v) for v in cells) + "</tr>")
        return (
            '<div class="anvia-eval-compare"><p><strong>Comparison</strong>: '
            f"{esc(self.summary(), 400)}</p>"
            "<table><thead><tr><th>metric</th><th>a</th><th>b</th><th>change</th></tr></thead>"
            f"<tbody>{pass_row}{metric_rows}</tbody></table>"
            f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(case_rows)}</tbody></table>"
            f"{more_cases(len(self.cases), 'comparison')}</div>"
        )


def _verdict(passed: bool | None) -> str:
    return "" if passed is None else ("pass" if passed else "fail")


def compare(a: EvalReport, b: EvalReport) -> Comparison:
    """Compare report ``a`` (before) with report ``b`` (after), matching cases by name."""
    for which, report in (("a", a), ("b", b)):
        if not isinstance(report, EvalReport):
            raise TypeError(
                f"compare(a, b): {which} must be a report from evals.evaluate, not "
                f"{type(report).__name__}."
            )
    inputs_a = {case.name: case.input for case in a.case_list}
    other = [
        case.name
        for case in b.case_list
        if case.name in inputs_a and inputs_a[case.name] != case.input
    ]
    if other:
        shown = ", ".join(repr(name) for name in other[:5]) + (" ..." if len(other) > 5 else "")
        warnings.warn(
            f"{len(other)} case(s) have the same name in both reports but another input "
            f"({shown}): they are compared as one case. Cases without a name are named by "
            "their place (case-1, case-2, ...); name them (evals.Case(..., name=...)) to "
            "match them across reports.",
            stacklevel=2,
        )
    return Comparison(a, b)


def _rate(report: EvalReport) -> str:
    """A report's pass rate as its summary says it: ``—`` until a case has finished."""
    return f"{report.pass_rate:.0%}" if report.finished else "—"

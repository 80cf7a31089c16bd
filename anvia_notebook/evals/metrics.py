"""Metrics: score one case's output. Built-ins, and any plain ``(case, output)`` callable.

A metric returns a bool (passed or not) or a number (passes at ``>= threshold``, 0.5 unless
the metric says otherwise); numpy's booleans and numbers (``np.isclose(...)``, ``np.int64(1)``)
count as Python's. A metric that raises, or returns something that is not a score (text, NaN, an
infinite number), gives that one score an error; the report goes on, and the metric's mean
leaves that case out.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import decimal
import inspect
import itertools
import json
import math
import numbers
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticSerializationError, to_json

from .._schema_check import shortened
from .._util import cancelled_from_outside, error_text
from .cases import Case

__all__ = [
    "DEFAULT_THRESHOLD",
    "Metric",
    "Score",
    "as_metric",
    "contains",
    "exact_match",
    "expected_text",
    "json_valid",
    "matches",
    "normalize_metrics",
]

DEFAULT_THRESHOLD = 0.5

ScoreFn = Callable[[Case, str], Any]


@dataclass(frozen=True)
class Score:
    """One metric's verdict on one case: ``value`` (a bool or a number; None on error),
    ``passed``, an optional ``reason`` (an LLM judge's reasoning), and ``error`` when the metric
    raised or returned something that is not a score."""

    value: bool | float | None
    passed: bool
    reason: str | None = None
    error: str | None = None


class Metric:
    """A named scoring function ``fn(case, output)`` (sync or async) returning a bool, a number
    or a :class:`Score`; numbers pass at ``>= threshold``. A sync ``fn`` runs on a worker
    thread (a grader that calls a service or a model keeps the evaluation's other cases, and
    the notebook, going), unless ``runs_inline`` says it is quick (the built-in metrics)."""

    def __init__(self, name: str, fn: ScoreFn, *, threshold: float = DEFAULT_THRESHOLD) -> None:
        if not isinstance(name, str) or not name.strip():
            raise ValueError("A metric needs a non-empty name.")
        if not callable(fn):
            raise TypeError(f"Metric {name!r}: fn must be callable.")
        self.name = name.strip()
        self.fn = fn
        self.threshold = checked_threshold(threshold, self.name)
        #: A sync ``fn`` is called on the event loop, not on a worker thread.
        self.runs_inline = False

    def __repr__(self) -> str:
        return f"Metric({self.name!r})"

    async def score(self, case: Case, output: str) -> Score:
        """Score ``output``; never raises (an error becomes the score's ``error``)."""
        try:
            if self.runs_inline or inspect.iscoroutinefunction(self.fn):
                value = self.fn(case, output)
            else:
                value = await _on_a_thread(self.fn, case, output)
            if inspect.isawaitable(value):
                value = await value
        except (Exception, SystemExit, KeyboardInterrupt, asyncio.CancelledError) as error:
            # (an exit or an interrupt out of this task would end the event loop; a
            # CancelledError the metric raised on its own would end the evaluation)
            if isinstance(error, asyncio.CancelledError) and cancelled_from_outside():
                raise
            text = error_text(error)
            name = type(error).__name__
            return Score(None, False, error=f"{name}: {text}" if text else name)
        try:
            return self.judge(value)
        except Exception as error:  # (a number whose conversion fails)
            return Score(
                None,
                False,
                error=(
                    f"The metric returned {type(value).__name__}, which could not be read as a "
                    f"score ({type(error).__name__}: {error_text(error)})."
                ),
            )

    def judge(self, value: Any) -> Score:
        """Turn what the function returned into a :class:`Score`."""
        if isinstance(value, Score):
            if value.error is not None:  # (an error's score: no value, and not a pass)
                return Score(None, False, value.reason, value.error)
            if value.value is None:
                return Score(
                    None, False, value.reason, "The metric returned a Score without a value."
                )
            number, error = _score_value(value.value)
            passed = _plain(value.passed)  # (numpy's bool, from a comparison of numpy values)
            if error is None and not isinstance(passed, bool):
                error = (
                    f"The metric returned a Score whose passed is {type(passed).__name__} "
                    f"{passed!r}; passed is True or False."
                )
            if error is not None:
                return Score(None, False, value.reason, error)
            return replace(value, value=number, passed=passed)
        number, error = _score_value(value)
        if error is not None:
            return Score(None, False, error=error)
        if isinstance(number, bool):
            return Score(number, number)
        assert number is not None
        return Score(number, number >= self.threshold)


def checked_threshold(value: Any, name: str) -> float:
    """A metric's threshold, checked: a finite number (else no score, or every one, passes)."""
    value = _plain(value)
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, decimal.Decimal)):
        raise TypeError(
            f"Metric {name!r}: the threshold must be a number (a score passes at >= it), not "
            f"{type(value).__name__} {value!r}."
        )
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(
            f"Metric {name!r}: the threshold must be a finite number, not {number} (no score "
            "would pass, or every one would)."
        )
    return number


async def _on_a_thread(fn: ScoreFn, case: Case, output: str) -> Any:
    """``fn(case, output)`` on a thread of its own (with this context), which ends when ``fn``
    returns: as many sync metrics run at once as the evaluation's ``concurrency`` lets cases
    score at once (a shared pool of a few threads per CPU made them wait their turn), and no
    thread is left waiting once the evaluation ends. Stopped while it runs, the thread finishes
    on its own and its score is dropped."""
    context = contextvars.copy_context()
    job: concurrent.futures.Future[Any] = concurrent.futures.Future()
    job.set_running_or_notify_cancel()

    def work() -> None:
        try:
            result = context.run(fn, case, output)
        except BaseException as error:  # (handed to the metric, which makes it the error)
            job.set_exception(error)
        else:
            job.set_result(result)

    waiter = asyncio.wrap_future(job)
    waiter.add_done_callback(lambda f: f.cancelled() or f.exception())  # never "unretrieved"
    threading.Thread(target=work, name=f"anvia-metric-{next(_thread_names)}", daemon=True).start()
    return await asyncio.shield(waiter)


#: Numbers for the metric threads' names.
_thread_names = itertools.count(1)


def _score_value(value: Any) -> tuple[bool | float | None, str | None]:
    """A score's value as a bool or a finite float, or the error saying why it is not one."""
    value = _plain(value)
    if isinstance(value, bool):
        return value, None
    if isinstance(value, (numbers.Real, decimal.Decimal)):
        try:
            number = float(value)
        except OverflowError:
            return None, (
                "The metric returned a number too large for a score (beyond a float's range); "
                "a score is a finite number."
            )
        except ValueError:  # (a signaling NaN)
            number = math.nan
        if not math.isfinite(number):
            return None, _not_finite(number)
        return number, None
    shown = repr(value)
    shown = shown if len(shown) <= 80 else shown[:79] + "\u2026"
    return None, (
        f"The metric returned {type(value).__name__} {shown}; a metric returns a bool or a number."
    )


def _plain(value: Any) -> Any:
    """A numpy boolean or number (or a 0-d array of one) as Python's bool, int or float."""
    kind = getattr(getattr(value, "dtype", None), "kind", None)
    if kind is not None and kind in "biuf" and getattr(value, "shape", None) == ():
        return value.item()
    return value


def _not_finite(number: float) -> str:
    what = "NaN" if math.isnan(number) else f"{number} (an infinite number)"
    return f"The metric returned {what}; a score is a finite number."


def _expected_text(case: Case, metric: str) -> str:
    if case.expected is None:
        raise ValueError(
            f"{metric} needs the case's expected value, and case {case.name!r} has none."
        )
    return expected_text(case.expected)


def _quick(metric: Metric) -> Metric:
    """A built-in metric: quick, called on the event loop."""
    metric.runs_inline = True
    return metric


def expected_text(value: Any) -> str:
    """A case's expected value as the text an output is compared with: a string as it is,
    anything else as the compact JSON an agent's typed output is scored as (``{"value":7}``,
    non-ASCII kept: a dict, a list, a pydantic model or a dataclass as pydantic writes it; a
    date, a Decimal, a set too; a numpy number or array as numpy's values; a value JSON cannot
    hold as its ``str``)."""
    if isinstance(value, str):
        return value
    try:
        return to_json(value, fallback=_json_fallback).decode()
    except (PydanticSerializationError, TypeError, ValueError, RecursionError):  # (a loop)
        return str(value)


def _json_fallback(value: Any) -> Any:
    """What ``to_json`` writes for a value it has no JSON form of."""
    plain = _plain(value)
    if plain is not value:
        return plain
    if type(value).__module__ == "numpy" and callable(getattr(value, "tolist", None)):
        return value.tolist()  # (an array)
    return str(value)


def exact_match(
    *, strip: bool = False, case_sensitive: bool = True, name: str = "exact_match"
) -> Metric:
    """The output equals the case's ``expected`` exactly, as Anvia's ``exactMatch`` compares.

    ``strip=True`` ignores surrounding whitespace, ``case_sensitive=False`` ignores case.
    """

    def fn(case: Case, output: str) -> bool:
        expected, got = _expected_text(case, name), output
        if not isinstance(case.expected, str):  # data (a typed output's): by value
            same = _same_json(expected, got, casefold=not case_sensitive)
            if same is not None:
                return same
        if strip:
            expected, got = expected.strip(), got.strip()
        if not case_sensitive:
            expected, got = expected.casefold(), got.casefold()
        return got == expected

    return _quick(Metric(name, fn))


def _same_json(expected: str, output: str, *, casefold: bool = False) -> bool | None:
    """Whether two JSON texts hold the same data whatever the order of their keys and their
    spacing; numbers by value, as JavaScript has them in Anvia (``7`` and ``7.0`` are one
    number: a typed output's ``float`` field holds 7.0 where a case expects 7), ``true`` and
    ``1`` apart; ``casefold``: case aside. None when either is no JSON."""
    try:
        a, b = (
            json.dumps(_numbers_by_value(json.loads(text)), sort_keys=True, ensure_ascii=False)
            for text in (expected, output)
        )
    except (ValueError, RecursionError):
        return None
    return a.casefold() == b.casefold() if casefold else a == b


def _numbers_by_value(value: Any) -> Any:
    """``value`` (JSON data) with each whole float as an int."""
    if isinstance(value, float):
        return int(value) if value.is_integer() else value
    if isinstance(value, list):
        return [_numbers_by_value(item) for item in value]
    if isinstance(value, dict):
        return {key: _numbers_by_value(item) for key, item in value.items()}
    return value


def contains(
    text: str | None = None, *, case_sensitive: bool = True, name: str = "contains"
) -> Metric:
    """The output contains ``text`` (default: the case's ``expected``), as Anvia's ``contains``.

    Case matters, as in Anvia; ``case_sensitive=False`` ignores it.
    """
    if text is not None and not isinstance(text, str):
        raise TypeError(
            f"contains(): the text to look for must be a string (or None for each case's "
            f"expected value), not {type(text).__name__} {text!r}."
        )

    def fn(case: Case, output: str) -> bool:
        needle = text if text is not None else _expected_text(case, name)
        if case_sensitive:
            return needle in output
        return needle.casefold() in output.casefold()

    return _quick(Metric(name, fn))


def matches(regex: str | re.Pattern[str], *, flags: int = 0, name: str = "matches") -> Metric:
    """The output matches ``regex`` somewhere (``re.search``)."""
    try:
        pattern = regex if isinstance(regex, re.Pattern) else re.compile(regex, flags)
    except re.error as error:
        raise ValueError(
            f"matches(): {regex!r} is not a valid regular expression: {error}"
        ) from None

    def fn(case: Case, output: str) -> bool:
        return pattern.search(output) is not None

    return _quick(Metric(name, fn))


def _schema_validator(schema: Any) -> Callable[[Any, str], None] | None:
    """A function raising ``ValueError`` when the parsed output does not fit ``schema``."""
    if schema is None:
        return None
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        model = schema

        def check_model(_data: Any, text: str) -> None:
            try:
                model.model_validate_json(text)
            except ValidationError as error:
                problems = "; ".join(
                    f"{'.'.join(str(p) for p in item['loc']) or 'value'}: {item['msg']}"
                    for item in error.errors(include_url=False)[:3]
                )
                raise ValueError(f"does not fit {model.__name__}: {problems}") from None

        return check_model
    if isinstance(schema, dict):
        import importlib

        try:
            jsonschema: Any = importlib.import_module("jsonschema")
        except ImportError:
            raise ImportError(
                "json_valid(schema=<dict>) validates with the jsonschema package, which is not "
                "installed: pip install jsonschema, or pass a pydantic model as the schema."
            ) from None
        validator_class = jsonschema.validators.validator_for(schema)
        try:
            validator_class.check_schema(schema)
        except jsonschema.SchemaError as error:
            raise ValueError(
                f"json_valid(): the schema is not a valid JSON schema: {error.message}"
            ) from None
        validator = validator_class(schema)

        def check_dict(data: Any, _text: str) -> None:
            errors = sorted(validator.iter_errors(data), key=lambda e: list(e.path))
            if errors:
                first = errors[0]
                where = "/".join(str(p) for p in first.path) or "the value"
                raise ValueError(f"does not fit the schema at {where}: {shortened(first.message)}")

        return check_dict
    raise TypeError(
        "json_valid(schema=...) takes a pydantic model class or a JSON schema dict, not "
        f"{type(schema).__name__}."
    )


class _NotJson(ValueError):
    pass


def _not_json(constant: str) -> Any:
    """``NaN``, ``Infinity`` and ``-Infinity``, which Python's reader takes and JSON has not
    (RFC 8259): what reads the agent's output (``JSON.parse``, most services) refuses them."""
    raise _NotJson(f"{constant} is not a JSON value (JSON has no NaN or infinity)")


def json_valid(schema: Any = None, *, name: str = "json_valid") -> Metric:
    """The output is JSON (surrounding whitespace allowed) and, with ``schema`` (a pydantic
    model or a JSON schema dict), fits it. A failing case's score is False, not an error."""
    check = _schema_validator(schema)

    def fn(case: Case, output: str) -> Score:
        text = output.strip()
        try:
            data = json.loads(text, parse_constant=_not_json)
        except json.JSONDecodeError as error:
            return Score(False, False, reason=f"not JSON: {error}")
        except _NotJson as error:
            return Score(False, False, reason=f"not JSON: {error}")
        except RecursionError:
            return Score(False, False, reason="not JSON this package can read: nested too deeply")
        if check is not None:
            try:
                check(data, text)
            except ValueError as error:
                return Score(False, False, reason=str(error))
        return Score(True, True)

    return _quick(Metric(name, fn))


#: The name Python gives every lambda.
_LAMBDA = (lambda: None).__name__


def as_metric(value: Any) -> Metric:
    """A :class:`Metric`, or a plain callable ``(case, output) -> bool | float`` named after it."""
    if isinstance(value, Metric):
        return value
    if not callable(value):
        raise TypeError(
            f"{value!r} is not a metric: give evals.exact_match(), evals.contains(), ... or a "
            "function (case, output) -> bool | float."
        )
    name = getattr(value, "__name__", None) or type(value).__name__
    if str(getattr(value, "__module__", "")).startswith(__package__ or "anvia_notebook.evals"):
        raise TypeError(
            f"evals.{name} makes a metric: call it, metrics=[evals.{name}(...)] (given as it "
            "is, every case would run and each score fail)."
        )
    try:
        inspect.signature(value).bind(None, None)
    except TypeError as error:
        raise TypeError(
            f"The metric {name} cannot be called as {name}(case, output): {error}."
        ) from None
    except ValueError:  # (no signature to read: a builtin; it is called as it is)
        pass
    return Metric(name, value)


def normalize_metrics(metrics: Any) -> list[Metric]:
    """Check ``metrics`` (a metric or a list of them) before any case runs."""
    if metrics is None:
        raise ValueError("Give at least one metric, e.g. metrics=[evals.contains()].")
    items: Sequence[Any] = (
        [metrics] if isinstance(metrics, Metric) or callable(metrics) else list(metrics)
    )
    if not items:
        raise ValueError("Give at least one metric, e.g. metrics=[evals.contains()].")
    checked = [as_metric(item) for item in items]
    # Lambdas are named by their place among the lambdas, as pandas names several in an
    # aggregation: ``<lambda_0>``, ``<lambda_1>``, ... (one alone too, so that a report with
    # one and a report with two compare their first one as one metric).
    lambdas = [
        metric
        for item, metric in zip(items, checked, strict=True)
        if metric.name == _LAMBDA and metric is not item  # (made here of a plain callable)
    ]
    for number, metric in enumerate(lambdas):
        metric.name = f"<lambda_{number}>"
    seen: set[str] = set()
    for metric in checked:
        if metric.name in seen:
            raise ValueError(
                f"Two metrics are named {metric.name!r}; give one another name (name=...) so "
                "each has its own column."
            )
        seen.add(metric.name)
    return checked

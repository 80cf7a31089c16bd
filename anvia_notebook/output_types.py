"""Typed output: what ``output_type(Model, mode=..., retries=...)`` asks of a run.

An :class:`OutputSpec` holds the type a run must produce, the way the model is asked for it and
how often a value that fails validation goes back to the model:

- ``mode="tool"`` (default): the model gets a ``final_result`` tool whose input is the type's JSON
  Schema (a type that is not an object, such as ``list[Model]``, is wrapped as
  ``{"result": ...}``); its other tools stay usable, and the run ends when ``final_result`` is
  called with a valid value.
- ``mode="native"``: the schema goes in the completion request's ``response_format`` (the
  provider's JSON-schema response format) and the model's text is validated. Providers take only
  an object there, so a type that is not one is asked for as ``{"result": ...}`` too; the text
  may also be the bare value, or the JSON in one Markdown code block.

A validator of the type that raises something other than pydantic's errors (a ``KeyError`` of a
``model_validator``) fails the value like any validation error: the model is told the exception.

The run loop's part (the retries and the repair a person makes) is in ``_typed_output.py``.
"""

from __future__ import annotations

import functools
import inspect
import json
import logging
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

import pydantic
from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError, create_model
from pydantic.errors import PydanticSchemaGenerationError, PydanticUserError
from pydantic_core import (
    InitErrorDetails,
    PydanticCustomError,
    PydanticSerializationError,
    SchemaError,
)

from ._util import quoted
from .errors import McpToolNameClashError, OutputValidationError
from .models.base import ResponseFormat, ToolDefinition

__all__ = [
    "FINAL_RESULT",
    "OutputMode",
    "OutputSpec",
    "check_output_tools",
    "format_errors",
    "output_spec",
    "type_name",
]

logger = logging.getLogger("anvia_notebook")

#: The name of the tool the model calls to give its typed result (``mode="tool"``).
FINAL_RESULT = "final_result"
#: The key a type that is not a JSON object is wrapped in: ``{"result": ...}``.
WRAPPED_KEY = "result"

OutputMode = Literal["tool", "native"]

#: At most this many validation errors are listed for the model and the person.
MAX_LISTED_ERRORS = 10
#: A value shown in an error is cut to this many characters.
MAX_ERROR_INPUT = 120


def type_name(output_type: Any) -> str:
    """A readable name of a type: ``Report``, ``list[Report]``, ``dict[str, int]``."""
    if isinstance(output_type, type) and not getattr(output_type, "__args__", None):
        return output_type.__name__
    text = repr(output_type)
    return re.sub(r"(?:[\w<>]+\.)+(?=\w)", "", text)


@dataclass(frozen=True)
class OutputSpec:
    """A run's output type, how it is asked for, and how many retries a failing value gets."""

    output_type: Any
    mode: OutputMode
    retries: int
    #: Validates the value itself (the model's text in ``native`` mode).
    adapter: TypeAdapter[Any]
    #: Validates ``final_result``'s arguments (also a person's fix of them).
    input_model: type[BaseModel]
    #: The type is not a JSON object: its value travels as ``{"result": ...}``.
    wrapped: bool
    #: The type's own JSON Schema.
    schema: dict[str, Any]

    @property
    def name(self) -> str:
        return type_name(self.output_type)

    def tool_definition(self) -> ToolDefinition:
        """The ``final_result`` tool the model is given (``mode="tool"``)."""
        what = f'a {{"result": ...}} object holding a {self.name}' if self.wrapped else self.name
        return ToolDefinition(
            name=FINAL_RESULT,
            description=(
                f"Give the final result of this task as {what}. Call it once you are done "
                "(other tools can be called before); the run ends when it is called with a "
                "valid value."
            ),
            parameters=self.input_model.model_json_schema() if self.wrapped else self.schema,
        )

    def response_format(self) -> ResponseFormat:
        """The provider's JSON-schema response format (``mode="native"``): an object, so a type
        that is not one is asked for wrapped, as ``{"result": ...}``."""
        schema = self.input_model.model_json_schema() if self.wrapped else self.schema
        return ResponseFormat(name=_schema_name(self.schema, self.name), json_schema=schema)

    # -- validating ------------------------------------------------------------------------------

    def validate_arguments(self, arguments: str | dict[str, Any]) -> Any:
        """The value ``final_result``'s arguments (JSON text or data) hold; raises pydantic's
        ``ValidationError``."""
        with _validator_errors(self.name, arguments):
            if isinstance(arguments, str):
                parsed = self.input_model.model_validate_json(arguments or "{}")
            else:
                parsed = self.input_model.model_validate(arguments)
            return self.unwrap(parsed)

    def validate_text(self, text: str) -> Any:
        """The value the model's text holds (``mode="native"``): its JSON (a type that is not an
        object also as ``{"result": ...}``, as it was asked for, and a text type also as the bare
        text), alone or in one Markdown code block; raises ``ValidationError``."""
        body = _unfenced(text)
        with _validator_errors(self.name, text):
            if self.wrapped and _is_wrapper(body):
                return self.unwrap(self.input_model.model_validate_json(body))
            try:
                return self.adapter.validate_json(body)
            except ValidationError:
                if self.schema.get("type") != "string":
                    raise
                return self.adapter.validate_python(text)  # the bare text of a text type

    def unwrap(self, parsed: BaseModel) -> Any:
        """The value ``input_model`` validated: the ``result`` of a wrapped type, the root of
        the root model made for an object type that is not a model (``dict[str, Model]``, a
        dataclass), else the instance itself (a ``RootModel`` subclass of the output type's
        own stays one: ``data`` is an instance of the output type)."""
        if self.wrapped:
            return getattr(parsed, WRAPPED_KEY)
        if self.input_model is not self.output_type and isinstance(parsed, pydantic.RootModel):
            return parsed.root
        return parsed

    def as_arguments(self, text: str) -> dict[str, Any]:
        """``final_result`` arguments holding the value the model wrote as ``text`` (for a repair
        of a ``native`` answer): the JSON it holds (wrapped when the type is), else the text."""
        try:
            value: Any = json.loads(_unfenced(text))
        except ValueError:
            value = text
        if self.wrapped and _is_wrapper(_unfenced(text)):
            return dict(value)
        if self.wrapped:
            return {WRAPPED_KEY: value}
        return value if isinstance(value, dict) else {}

    def dump(self, value: Any) -> Any:
        """The validated value as JSON data (for events, the store and the transcript), by alias:
        its keys are those of the schema the model was given, so the data validates as the type
        again. A type whose own serializer fails raises :class:`OutputValidationError` saying so
        (the model cannot fix that)."""
        try:
            return self.adapter.dump_python(value, mode="json", by_alias=True)
        except PydanticSerializationError as error:
            raise OutputValidationError(
                f"The {self.name} is valid, but it could not be turned into JSON: {error}. "
                f"Check the serializers of {type_name(self.output_type)}.",
                output_type=self.output_type,
            ) from error


@contextmanager
def _validator_errors(name: str, value: Any) -> Iterator[None]:
    """A validator's own exception (not pydantic's errors) as a validation error of the value:
    the model is told it, as for any invalid value."""
    try:
        yield
    except ValidationError:
        raise
    except Exception as error:
        text = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
        logger.warning("A validator of %s raised %s; the model is told it.", name, text)
        logger.debug("The validator's traceback", exc_info=True)
        detail = InitErrorDetails(
            type=PydanticCustomError(
                "validator_raised", "A validator raised {error}", {"error": text}
            ),
            loc=(),
            input=value,
        )
        raise ValidationError.from_exception_data(name, [detail]) from error


_FENCE = re.compile(r"\A\s*```[\w-]*[ \t]*\n(.*?)\n?```\s*\Z", re.DOTALL)


def _unfenced(text: str) -> str:
    """The text inside one Markdown code block that is the whole answer, else the text."""
    match = _FENCE.match(text)
    return match.group(1) if match else text


def _is_wrapper(text: str) -> bool:
    """The text is a JSON object whose only key is ``result``."""
    try:
        value = json.loads(text)
    except ValueError:
        return False
    return isinstance(value, dict) and list(value) == [WRAPPED_KEY]


def _is_function(value: Any) -> bool:
    """A function, method or partial: pydantic would call it with the model's arguments at each
    validation (its side effects included) instead of validating a value."""
    return inspect.isroutine(value) or isinstance(value, functools.partial)


def output_spec(output_type: Any, mode: str = "tool", retries: int = 2) -> OutputSpec:
    """Check ``output_type`` and the options, at build time: a type pydantic cannot validate, an
    unknown mode or a negative retry count is a clear error here, not during a run."""
    if mode not in ("tool", "native"):
        raise ValueError(f'output_type mode must be "tool" or "native", not {mode!r}.')
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise ValueError(
            f"output_type retries must be a whole number, zero or more, not {retries!r}."
        )
    if output_type is None:
        raise TypeError("output_type needs a type, such as a pydantic model or list[Model].")
    if isinstance(output_type, (dict, list, tuple, str, int, float)) or _is_function(output_type):
        if callable(output_type):
            named = getattr(output_type, "func", output_type)  # (a partial's function)
            what = f"the function {getattr(named, '__name__', '')}"
        else:
            what = f"a {type(output_type).__name__} value ({quoted(output_type)})"
        raise TypeError(
            f"output_type takes a type, not {what}: use a pydantic model, a dataclass, a "
            "TypedDict, or a type built from them, such as list[Model]."
        )
    try:
        adapter: TypeAdapter[Any] = TypeAdapter(output_type)
        schema = adapter.json_schema()
    except (
        PydanticSchemaGenerationError,
        PydanticUserError,
        SchemaError,
        TypeError,
        ValueError,
        KeyError,
    ) as error:
        text = str(error).strip()
        first = text.splitlines()[0].split(". ")[0] if text else type(error).__name__
        first = first.replace("__main__.", "").rstrip(".")  # (a notebook's own types: as written)
        raise TypeError(
            f"output_type({type_name(output_type)}): pydantic cannot validate this type "
            f"({first}). Use a pydantic model, a dataclass, a TypedDict, or a type built from "
            "them, such as list[Model]."
        ) from None
    schema = _object_at_top(schema)
    wrapped = schema.get("type") != "object"
    input_model = _input_model(output_type, wrapped)
    return OutputSpec(
        output_type=output_type,
        mode=mode,  # type: ignore[arg-type]
        retries=retries,
        adapter=adapter,
        input_model=input_model,
        wrapped=wrapped,
        schema=schema,
    )


def check_output_tools(output: OutputSpec | None, tools: Mapping[str, Any]) -> None:
    """A ``final_result`` tool of the agent's own would clash with the output type's."""
    if output is None or output.mode != "tool" or FINAL_RESULT not in tools:
        return
    server = getattr(tools[FINAL_RESULT], "server_name", None)
    if server is not None:  # an MCP server's tool, known once the server is connected
        raise McpToolNameClashError(
            f"The MCP server {server!r} offers a tool named {FINAL_RESULT!r}, which "
            'output_type(mode="tool") gives the model to return its result: leave this server '
            'out of the agent, or use mode="native".'
        )
    raise ValueError(
        f'The agent has a tool named {FINAL_RESULT!r}, which output_type(mode="tool") '
        'gives the model to return its result: rename that tool, or use mode="native".'
    )


def _object_at_top(schema: dict[str, Any]) -> dict[str, Any]:
    """A schema that is only a ``$ref`` to an object (a model that refers to itself, say) as
    that object, its ``$defs`` kept beside it: a tool's input and a response format must be an
    object at the top. Any other schema as it is."""
    ref, defs = schema.get("$ref"), schema.get("$defs")
    if not isinstance(ref, str) or not isinstance(defs, dict) or not ref.startswith("#/$defs/"):
        return schema
    target = defs.get(ref.removeprefix("#/$defs/"))
    if not isinstance(target, dict) or target.get("type") != "object":
        return schema
    rest = {key: value for key, value in schema.items() if key not in ("$ref", "$defs")}
    return {**target, **rest, "$defs": defs}


def _input_model(output_type: Any, wrapped: bool) -> type[BaseModel]:
    """What validates ``final_result``'s arguments: the model itself (a ``RootModel`` subclass
    of an object type too), a root model of any other object type (unwrapped to its root by
    :meth:`OutputSpec.unwrap`), or ``{"result": ...}`` around any other type."""
    if wrapped:
        fields: dict[str, Any] = {WRAPPED_KEY: (output_type, ...)}
        model: type[BaseModel] = create_model(
            "FinalResult", __config__=ConfigDict(defer_build=True), **fields
        )
        return model
    if isinstance(output_type, type) and issubclass(output_type, BaseModel):
        return output_type
    root: type[BaseModel] = pydantic.RootModel[output_type]
    return root


def format_errors(error: ValidationError | list[dict[str, Any]]) -> str:
    """Pydantic's errors as lines a model and a person can act on, at most
    :data:`MAX_LISTED_ERRORS` of them, each value cut short (a huge output stays readable)."""
    items = error.errors(include_url=False) if isinstance(error, ValidationError) else error
    lines = []
    for item in items[:MAX_LISTED_ERRORS]:
        location = ".".join(str(part) for part in item.get("loc", ())) or "value"
        line = f"- {location}: {item.get('msg', '')}"
        if "input" in item and item.get("type") != "missing":
            shown = _short(item["input"])
            line += f" (got {shown})"
        lines.append(line)
    if len(items) > MAX_LISTED_ERRORS:
        more = len(items) - MAX_LISTED_ERRORS
        lines.append(f"- … and {more} more error{'s' if more != 1 else ''}")
    return "\n".join(lines)


def error_list(error: ValidationError) -> list[dict[str, Any]]:
    """Pydantic's list of errors, without the documentation links."""
    return list(error.errors(include_url=False))  # type: ignore[arg-type]


def _short(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    if len(text) > MAX_ERROR_INPUT:
        return f"{text[:MAX_ERROR_INPUT]}… ({len(text)} characters)"
    return text


def _schema_name(schema: dict[str, Any], fallback: str) -> str:
    """A response format's name (letters, digits, ``_`` and ``-``, at most 64 characters)."""
    title = schema.get("title")
    name = title if isinstance(title, str) and title else fallback
    name = re.sub(r"[^A-Za-z0-9_-]+", "_", name).strip("_") or "response_schema"
    return name[:64]

"""Anthropic's Messages API, streamed.

The ``anthropic`` SDK is imported when a model is built, never when this module is imported;
install it with ``pip install "anvia_notebook[anthropic]"``.

Stop reasons are reported in the vocabulary the OpenAI model uses too: ``end_turn`` and
``stop_sequence`` are ``"stop"``, ``max_tokens`` is ``"length"``, ``tool_use`` is
``"tool_calls"``, ``refusal`` is ``"content_filter"``; any other reason passes through.

An answer the API paused (``pause_turn``: a long turn of server tools, such as web search) is
continued as Anthropic documents it: the request is sent again with the answer so far as the
last assistant message, up to :data:`PAUSED_TURN_CONTINUATIONS` times, and the parts stream as
one answer (their usage added up). One still paused after that ends with ``"pause_turn"``.
A continuation that fails before it streams anything (429, 529, a lost connection) is tried
again in a run as the run tries the first request: under the run's completion retries.
"""

from __future__ import annotations

import inspect
import json
import uuid
import warnings
from collections.abc import AsyncIterator, Iterator
from functools import partial
from typing import TYPE_CHECKING, Any, Literal

from ..messages import Message, Usage
from ..retry import retry_within_call
from ._errors import ended_early, refuse_json_answer
from ._json_schema import closed_objects, finite_numbers_only, open_objects
from ._media import images_to_send
from ._provider import (
    LoopClients,
    PendingCall,
    check_options,
    check_settings,
    not_json,
    provider_errors,
    provider_sdk,
    whole_answer_kept,
)
from .base import (
    CompletionEvent,
    CompletionModel,
    CompletionRequest,
    Finish,
    ModelError,
    ProviderData,
    ReasoningDelta,
    ResponseFormat,
    ToolCall,
    ToolCallDelta,
    ToolDefinition,
    UsageUpdate,
)

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic
    from anthropic.types import (
        ContentBlockParam,
        ImageBlockParam,
        MessageParam,
        RawMessageStreamEvent,
        RedactedThinkingBlockParam,
        TextBlockParam,
        ThinkingBlockParam,
        ToolParam,
        ToolResultBlockParam,
    )

    ThinkingParam = ThinkingBlockParam | RedactedThinkingBlockParam

__all__ = ["AnthropicModel"]

#: The default cap on a completion's length (the Messages API requires one).
DEFAULT_MAX_TOKENS = 4096
#: Arguments of ``messages.create`` this model sets itself.
RESERVED_OPTIONS = frozenset({"model", "messages", "stream", "max_tokens"})
#: Anthropic stop reasons, in the vocabulary the other models use.
STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}
#: Stop reasons after which the answer's tool calls must not run (cut by the length limit, or
#: the model refused): the run fails saying so, as for an OpenAI answer that ended the same way.
_CUT_TOOL_CALLS = {
    "max_tokens": "provider output may be incomplete",
    "model_context_window_exceeded": "provider output may be incomplete",
    "refusal": "tool calls will not be executed",
}
#: How many times an answer the API paused (``pause_turn``) is continued within one completion.
PAUSED_TURN_CONTINUATIONS = 5
#: The usage fields that add up to the input tokens of a request.
INPUT_TOKEN_FIELDS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
#: The ``Message.provider_data`` key under which a turn's signed thinking blocks travel.
THINKING_KEY = "anthropic_thinking"
#: The ``Message.provider_data`` key of the turn's block kinds in the order they came
#: (``"thinking"``, ``"text"``, ``"tool_use"``): interleaved thinking goes back in place.
ORDER_KEY = "anthropic_block_order"


class AnthropicModel(CompletionModel):
    """A Claude model served through Anthropic's Messages API, streamed.

    ``model`` is the model id (also the :attr:`name`). The key comes from ``api_key`` or the
    ``ANTHROPIC_API_KEY`` environment variable. ``client`` replaces the ``AsyncAnthropic`` client
    this model would build (its options, such as ``max_retries``, are then left as they are; its
    connections stay with the first event loop it is used on, whereas the model's own client is
    built again for each event loop, and closed on it as that loop ends).
    ``max_tokens`` caps each completion unless the request sets its own cap. Images a tool
    returned (an MCP tool's) go in its ``tool_result`` as image blocks, which every Claude model
    reads; ``tool_result_images=False`` sends only the text placeholder naming them. Other keyword
    arguments are sent with every request (``thinking={"type": "adaptive"}``,
    ``stop_sequences=[...]``, ...; a ``tool_choice`` given so is made Anthropic's, as the
    request's own is, and OpenAI's ``parallel_tool_calls=False`` is sent as the
    ``tool_choice``'s ``disable_parallel_tool_use``); the request's own ``tool_choice`` wins
    over them, and ``tools``
    given so (a server tool, such as ``{"type": "web_search_20250305", "name": "web_search"}``)
    are sent before the agent's; so is a ``system`` given so, before the agent's instructions
    (``system=[{"type": "text", "text": doc, "cache_control": {"type": "ephemeral"}}]`` caches
    a long document: its blocks are sent, then the instructions as another text block; a text
    is sent joined to them by a blank line). The request's ``temperature`` is sent only through
    an SDK that still has the parameter: the 2.x SDK dropped it, and the API version it speaks
    refuses every sampling parameter, so it is left out, with a warning.

    The SDK's own retries are off (``max_retries=0``): the run loop retries. Failures are raised as
    :class:`~anvia_notebook.models.base.ModelError` with the HTTP status.

    :meth:`stream` yields the text as plain ``str`` pieces, each one a piece of text as a
    ``TextDelta`` would be. Thinking streams as ``ReasoningDelta``. With thinking on, the API
    wants the signed thinking blocks of a tool-use turn back, unchanged, when the tool results
    are sent: they travel in the assistant message's ``provider_data`` (a ``ProviderData`` event
    at the end of the turn) and are put back in front of that turn's tool calls, so a saved
    history stays complete.
    """

    provider = "anthropic"

    def __init__(
        self,
        model: str,
        api_key: str | None = None,
        client: AsyncAnthropic | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        *,
        tool_result_images: bool = True,
        **request_options: Any,
    ) -> None:
        check_settings("AnthropicModel", model, api_key, "claude-sonnet-4-6")
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise ValueError(f"AnthropicModel: max_tokens must be one or more, not {max_tokens!r}.")
        anthropic = provider_sdk("anthropic", "AnthropicModel", RESERVED_OPTIONS, request_options)
        self.name = model
        self.model = model
        build = None
        if client is None:
            # (with an HTTP client that does not close itself when collected: see LoopClients;
            # its connections may be of an event loop that has closed by then)
            client = anthropic.AsyncAnthropic(
                api_key=api_key, max_retries=0, http_client=anthropic.DefaultAsyncHttpxClient()
            )
            key, token, url = client.api_key, client.auth_token, client.base_url

            def build() -> AsyncAnthropic:  # (the same client again, for another event loop)
                return anthropic.AsyncAnthropic(  # type: ignore[no-any-return]
                    api_key=key,
                    auth_token=token,
                    base_url=url,
                    max_retries=0,
                    http_client=anthropic.DefaultAsyncHttpxClient(),
                )

        self.client = client
        self._loop_clients = LoopClients(client, build)
        check_options(
            "AnthropicModel",
            self.client.messages.create,
            request_options,
            # (output_config: sent in the body by an SDK without it; parallel_tool_calls:
            # OpenAI's, made Anthropic's)
            also=frozenset({"output_config", "parallel_tool_calls"}),
        )
        parallel = request_options.get("parallel_tool_calls")
        if parallel is not None and not isinstance(parallel, bool):
            raise TypeError(
                "AnthropicModel: parallel_tool_calls must be True or False, not "
                f"{type(parallel).__name__}."
            )
        if "tool_choice" in request_options:  # (an OpenAI-style one: made Anthropic's)
            request_options["tool_choice"] = to_anthropic_tool_choice(
                request_options["tool_choice"]
            )
        self.max_tokens = max_tokens
        self.tool_result_images = tool_result_images
        self.request_options = request_options
        self._sends_temperature = _has_parameter(self.client.messages.create, "temperature")
        # Older SDKs (before structured outputs) have no ``output_config`` argument: it goes in
        # the request body as it is, which the API reads the same way.
        self._takes_output_config = _has_parameter(self.client.messages.create, "output_config")

    def __repr__(self) -> str:
        return f"AnthropicModel({self.model!r})"

    async def stream(self, request: CompletionRequest) -> AsyncIterator[CompletionEvent | str]:
        import anthropic

        last = request.messages[-1] if request.messages else None
        if last is None or (
            last.role == "user" and not last.tool_results and not last.content.strip()
        ):
            # (left out as blank, the request would end on the model's own answer, which it
            # would continue, or hold no message, which the API refuses)
            raise ModelError(_BLANK_PROMPT, status_code=None, retryable=False)
        messages = to_anthropic_messages(request.messages, images=self.tool_result_images)
        options = self._options(request)
        max_tokens = request.max_tokens if request.max_tokens is not None else self.max_tokens
        parts: list[_EventAssembler] = []
        paused: list[Any] = []  # (the answer's content so far, when the API paused it)
        while True:
            sent = [*messages, {"role": "assistant", "content": paused}] if paused else messages
            attempt = 0
            while True:
                attempt += 1
                assembler = _EventAssembler()
                told = False  # (an event of this request was passed on)
                try:
                    with provider_errors("Anthropic", anthropic):
                        try:
                            client = await self._loop_clients.on_this_loop(self.client)
                            stream = await client.messages.create(
                                model=self.model,
                                max_tokens=max_tokens,
                                messages=sent,
                                stream=True,
                                **options,
                            )
                        except TypeError as exc:
                            # The SDK found no key, token or credentials anywhere before
                            # sending anything.
                            if "authentication method" not in str(exc):
                                raise
                            raise ModelError(
                                _NO_CREDENTIALS, status_code=None, retryable=False
                            ) from exc
                        await refuse_json_answer("Anthropic", stream)
                        event = None
                        with whole_answer_kept(anthropic, partial(getattr, assembler, "whole")):
                            async with stream:
                                async for event in stream:
                                    for completion_event in assembler.feed(event):
                                        told = True
                                        yield completion_event
                    if not assembler.finished:  # (cut short: a tool call in it may be too)
                        raise ended_early("Anthropic", "message_stop", event is not None)
                except Exception as error:
                    # A continuation that failed before it streamed anything is tried again
                    # under the run's retries, as the run tries a first request that failed so
                    # (which this model leaves to the run); the parts before it are whole and
                    # kept. One that had begun streaming is not, nor is a first request.
                    if not paused or told or not await retry_within_call(error, attempt):
                        raise
                    continue
                break
            parts.append(assembler)
            if not assembler.paused or len(parts) > PAUSED_TURN_CONTINUATIONS:
                break
            # Paused (a long turn of server tools): sent back as the last assistant message,
            # the model goes on with its answer, as Anthropic documents.
            paused = _paused_content([*paused, *assembler.content()])
            if not paused:  # (nothing to go on from: the request would be the same again)
                break
        finish = assembler.finish()
        calls = [call for part in parts for call in part.done_calls]
        thinking = [block for part in parts for block in part.thinking]
        order = [kind for part in parts for kind in part.order]
        for call in calls:
            yield call
        if thinking and any(part.first_call_id is not None for part in parts):
            yield ProviderData(data={THINKING_KEY: thinking, ORDER_KEY: order})
        yield finish

    def _options(self, request: CompletionRequest) -> dict[str, Any]:
        options = dict(self.request_options)
        parallel = options.pop("parallel_tool_calls", None)  # (OpenAI's: not the API's)
        if request.instructions:
            options["system"] = _with_instructions(options.get("system"), request.instructions)
        if request.tools:
            given = options.get("tools")  # (a server tool, such as web search: sent too)
            own = [to_anthropic_tool(tool) for tool in request.tools]
            options["tools"] = [*given, *own] if isinstance(given, (list, tuple)) else own
            if request.tool_choice is not None:
                options["tool_choice"] = to_anthropic_tool_choice(request.tool_choice)
        elif not options.get("tools"):  # (an agent without tools: the API refuses it alone)
            options.pop("tool_choice", None)
        if parallel is False and options.get("tools"):
            options["tool_choice"] = _parallel_calls_off(options.get("tool_choice"))
        if request.response_format is not None:
            config = dict(options.get("output_config") or {})
            config["format"] = to_anthropic_output_format(request.response_format)
            options["output_config"] = config
        if "output_config" in options and not self._takes_output_config:
            extra = dict(options.get("extra_body") or {})
            extra["output_config"] = options.pop("output_config")
            options["extra_body"] = extra
        if request.temperature is not None:
            if self._sends_temperature:
                options["temperature"] = request.temperature
            else:
                warnings.warn(
                    f"{self.model}: temperature is not sent; the Anthropic SDK and API version "
                    "in use have no sampling parameters",
                    UserWarning,
                    stacklevel=2,
                )
        return options


_NO_CREDENTIALS = (
    "Anthropic needs an API key: set the ANTHROPIC_API_KEY environment variable (for a notebook, "
    "before starting Jupyter, or in os.environ before creating the model), or pass "
    'AnthropicModel(..., api_key="...").'
)


def _with_instructions(given: Any, instructions: str) -> Any:
    """The ``system`` sent: the one given as an option (its blocks, with their
    ``cache_control``), then the request's instructions (another text block, or after a blank
    line when the option is a text)."""
    if isinstance(given, str) and given:
        return f"{given}\n\n{instructions}"
    if isinstance(given, (list, tuple)) and given:
        return [*given, {"type": "text", "text": instructions}]
    return instructions


_BLANK_PROMPT = (
    "Anthropic needs a prompt with some text: the conversation's last message is a blank user "
    "message (or there is none), which the Messages API refuses."
)


def _has_parameter(function: Any, name: str) -> bool:
    try:
        return name in inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False


def to_anthropic_messages(messages: list[Message], images: bool = True) -> list[MessageParam]:
    """The conversation as Messages API messages.

    Tool results go back as a user message of ``tool_result`` blocks (with ``images``, a
    result's images as image blocks after its text); consecutive messages of one
    role are merged (so a user message after tool results joins them, after the results); blank
    text is left out, as the API refuses it. Reasoning text is never sent back; the signed thinking
    blocks in an assistant message's ``provider_data`` are, where they came in their turn.
    """
    turns: list[tuple[Literal["user", "assistant"], list[ContentBlockParam]]] = []
    for message in messages:
        role: Literal["user", "assistant"] = "assistant" if message.role == "assistant" else "user"
        blocks = _text_and_calls(message)
        for part in message.tool_results:
            result: ToolResultBlockParam = {
                "type": "tool_result",
                "tool_use_id": part.tool_call_id,
                "is_error": part.is_error,
            }
            sent = images_to_send(part) if images else []
            if sent:
                content: list[TextBlockParam | ImageBlockParam] = []
                if part.content:
                    content.append({"type": "text", "text": part.content})
                content.extend(
                    {
                        "type": "image",
                        "source": {
                            "type": "base64",
                            "media_type": media.media_type,  # type: ignore[typeddict-item]
                            "data": media.data,
                        },
                    }
                    for media in sent
                )
                result["content"] = content
            elif part.content:
                result["content"] = part.content
            blocks.append(result)
        if not blocks:
            continue
        if turns and turns[-1][0] == role:
            turns[-1][1].extend(blocks)
        else:
            turns.append((role, blocks))
    return [
        {"role": "user", "content": blocks}
        if role == "user"
        else {"role": "assistant", "content": blocks}
        for role, blocks in turns
    ]


def _text_and_calls(message: Message) -> list[ContentBlockParam]:
    """A message's blocks but its tool results: an assistant's signed thinking blocks where
    they came (before the text, or between the tool calls: the API refuses thinking moved in a
    tool-use turn), its text, its tool calls."""
    thinking: list[Any] = []
    order: Any = None
    if message.tool_calls and message.provider_data:
        thinking = list(message.provider_data.get(THINKING_KEY, ()))
        order = message.provider_data.get(ORDER_KEY)
    text: list[ContentBlockParam] = (
        [{"type": "text", "text": message.content}] if message.content.strip() else []
    )
    calls: list[ContentBlockParam] = [
        {"type": "tool_use", "id": call.id, "name": call.name, "input": _tool_input(call.arguments)}
        for call in message.tool_calls
    ]
    if not (
        isinstance(order, list)
        and order.count("thinking") == len(thinking)
        and order.count("tool_use") == len(calls)
    ):  # (a message stored before the order was kept: thinking first)
        return [*thinking, *text, *calls]
    blocks: list[ContentBlockParam] = []
    next_thinking, next_call = iter(thinking), iter(calls)
    for kind in order:
        if kind == "thinking":
            blocks.append(next(next_thinking))
        elif kind == "tool_use":
            blocks.append(next(next_call))
        elif kind == "text" and text:
            blocks.append(text.pop())  # (the turn's text is one: where its first block was)
    return [*blocks, *text]


def _tool_input(arguments: str) -> dict[str, Any]:
    """A call's arguments as the object ``tool_use`` wants (``{}`` when they were not one, or
    held NaN or Infinity, which the SDK cannot send: the call's result told the model they were
    invalid)."""
    try:
        value = json.loads(arguments, parse_constant=not_json) if arguments.strip() else {}
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def to_anthropic_tool(tool: ToolDefinition) -> ToolParam:
    return {
        "name": tool.name,
        "description": tool.description,
        "input_schema": finite_numbers_only(tool.parameters),
    }


def to_anthropic_output_format(response_format: ResponseFormat) -> dict[str, Any]:
    """The schema as the Messages API's structured output format (``output_config.format``),
    made as the API wants it by the SDK's own ``transform_schema`` (every object closed,
    ``oneOf`` as ``anyOf``, limits it does not take, such as a length, told in the description);
    with an SDK without it (older versions), its objects closed. A schema with an object open
    to any key (a ``dict`` field) is sent closed only where it was not open: the SDK's would
    close it, and the model, held to the schema, could then only answer ``{}`` there."""
    schema = finite_numbers_only(response_format.json_schema)
    try:
        import anthropic
    except ImportError:  # (the SDK is needed to send it anyway)
        anthropic = None  # type: ignore[assignment]
    transform = getattr(anthropic, "transform_schema", None)
    if transform is not None and not open_objects(schema):
        try:
            return {"type": "json_schema", "schema": transform(schema)}
        except (ValueError, TypeError, KeyError):  # (a schema it cannot make: sent closed)
            pass
    return {"type": "json_schema", "schema": closed_objects(schema)}


def _parallel_calls_off(choice: Any) -> Any:
    """``choice`` (none: ``auto``, the API's default) with ``disable_parallel_tool_use``, as
    OpenAI's ``parallel_tool_calls=False`` says it; one that sets it already, and ``none``
    (which calls no tool), are left as they are."""
    if choice is None:
        choice = {"type": "auto"}
    if isinstance(choice, dict) and choice.get("type") in ("auto", "any", "tool"):
        return {"disable_parallel_tool_use": True, **choice}
    return choice


def to_anthropic_tool_choice(choice: Any) -> Any:
    """``"auto"``, ``"none"``, ``"required"`` (or ``"any"``), a tool name, or an OpenAI-style
    ``{"type": "function", ...}`` choice, as Anthropic's ``tool_choice``; other dicts pass."""
    if choice in ("auto", "none"):
        return {"type": choice}
    if choice in ("required", "any"):
        return {"type": "any"}
    if isinstance(choice, str):
        return {"type": "tool", "name": choice}
    if isinstance(choice, dict) and choice.get("type") == "function":
        function = choice.get("function")
        name = function.get("name") if isinstance(function, dict) else None
        if not isinstance(name, str) or not name.strip():
            raise ValueError(
                'AnthropicModel: tool_choice {"type": "function", ...} needs the name of the tool '
                "to call, as {'type': 'function', 'function': {'name': 'get_weather'}}; got "
                f"{choice!r}."
            )
        return {"type": "tool", "name": name}
    return choice


def _paused_content(blocks: list[Any]) -> list[Any]:
    """A paused answer's content blocks as they go back: blank text left out (the API refuses
    it), and the last block's text without trailing white space (the API refuses an assistant
    message that ends with it)."""
    kept = [
        block
        for block in blocks
        if not (block.get("type") == "text" and not str(block.get("text") or "").strip())
    ]
    if kept and kept[-1].get("type") == "text":
        kept[-1] = {**kept[-1], "text": str(kept[-1]["text"]).rstrip()}
    return kept


def _block_param(block: Any) -> dict[str, Any]:
    """A streamed content block as it is sent back: the fields the server gave (an older SDK
    leaves a part it does not know, a citation of web search, as the server's dict)."""
    if isinstance(block, dict):
        return dict(block)
    dump = getattr(block, "model_dump", None)
    if dump is not None:
        dumped = dump(mode="json", exclude_unset=True)
        if isinstance(dumped, dict):
            return dumped
    return {"type": block.type}


class _Fields:
    """A dict's keys read as attributes (a usage object a gateway sent as plain JSON)."""

    def __init__(self, values: dict[str, Any]) -> None:
        self._values = values

    def __getattr__(self, name: str) -> Any:
        return self._values.get(name)


def _new_call_id() -> str:
    """An id for a tool call a server sent without one (the API refuses an empty id back)."""
    return f"toolu_{uuid.uuid4().hex[:24]}"


class _EventAssembler:
    """Turns the raw Messages API stream events into completion events.

    Usage arrives as running totals (``message_start``, then ``message_delta``); the usage
    updates carry what each one adds, so that summing them gives the totals. The thinking blocks
    are kept whole (with their signatures) in :attr:`thinking`, to be sent back.
    """

    def __init__(self) -> None:
        self._calls: dict[int, PendingCall] = {}
        self._thinking_blocks: dict[int, ThinkingBlockParam] = {}
        self._token_counts: dict[str, int] = {}
        self._reported = Usage()
        self._reported_cached = 0
        self._stop_reason: str | None = None
        self.thinking: list[ThinkingParam] = []
        #: The kinds of the content blocks, in the order they came (see ``ORDER_KEY``).
        self.order: list[str] = []
        self.first_call_id: str | None = None
        #: Tool-use blocks whose input came whole in their start event (a gateway's way): the
        #: start wins over any ``input_json_delta`` that follows, as in Anvia.
        self._whole_at_start: set[int] = set()
        #: Whether the answer is complete: a stop reason or ``message_stop`` came.
        self.finished = False
        #: Content blocks streamed (none: a gateway may give the whole answer at the end).
        self._blocks = 0
        #: The tool calls whose blocks ended, held until the answer's stop reason: one that
        #: says they were cut (``max_tokens``) fails the call, and no ``tool_call`` is told.
        self.done_calls: list[ToolCall] = []
        #: Each content block as it goes back should the API pause the answer (``pause_turn``),
        #: by index: its start, with the text and input JSON streamed into it.
        self._content: dict[int, dict[str, Any]] = {}
        #: The usage message_start reported, told once the answer begins (see ``feed``).
        self._held: list[UsageUpdate] = []
        self._texts: dict[int, list[str]] = {}
        self._inputs: dict[int, list[str]] = {}

    @property
    def paused(self) -> bool:
        """Whether the API paused the answer, to be continued (``pause_turn``)."""
        return self._stop_reason == "pause_turn"

    def content(self) -> list[dict[str, Any]]:
        """The answer's content blocks, in order, as the Messages API takes them back."""
        blocks = []
        for index in sorted(self._content):
            block = self._content[index]
            if index in self._texts:
                block = {**block, "text": "".join(self._texts[index])}
            pieces = self._inputs.get(index)
            if pieces and index not in self._whole_at_start:
                try:
                    given = json.loads("".join(pieces), parse_constant=not_json)
                except (ValueError, RecursionError):
                    given = {}
                block = {**block, "input": given if isinstance(given, dict) else {}}
            blocks.append(block)
        return blocks

    @property
    def whole(self) -> bool:
        """Whether the answer is complete and no tool call of it is still open (one whose
        ``content_block_stop`` did not come: its arguments may be cut)."""
        return self.finished and not self._calls

    def feed(self, event: RawMessageStreamEvent) -> Iterator[CompletionEvent | str]:
        if event.type == "content_block_delta":  # the most frequent first
            delta = event.delta
            if delta.type == "text_delta":
                if delta.text:
                    pieces = self._texts.get(event.index)
                    if pieces is not None:
                        pieces.append(delta.text)
                    yield delta.text  # a plain string: a piece of text, no object built for it
            else:
                yield from self._delta(event.index, delta)
        elif event.type == "message_start":
            # Held until the answer begins: an error the API sends before that (an
            # ``overloaded_error`` just after message_start is common) then comes before any
            # event, so the run tries the request again, as it does an error status.
            self._held = list(self._usage(event.message.usage))
        elif event.type == "content_block_start":
            if self._held:
                yield from self._release()
            self._blocks += 1
            block = event.content_block
            kind = "thinking" if block.type == "redacted_thinking" else block.type
            self.order.append(kind)
            self._content[event.index] = _block_param(block)
            if block.type == "text":
                self._texts[event.index] = [getattr(block, "text", None) or ""]
            elif isinstance(getattr(block, "input", None), dict):  # (a tool's, a server tool's)
                self._inputs[event.index] = []
            if block.type == "tool_use":
                call_id = block.id or _new_call_id()  # (a server that sent "")
                call = self._calls[event.index] = PendingCall(id=call_id, name=block.name)
                if self.first_call_id is None:
                    self.first_call_id = call_id
                given = block.input  # (the Messages API sends {} here and streams the input)
                if isinstance(given, dict) and given:
                    self._whole_at_start.add(event.index)
                    call.arguments.append(json.dumps(given))
                yield ToolCallDelta(
                    id=call.id, name=call.name, arguments_delta="".join(call.arguments)
                )
            elif block.type == "text" and block.text:
                yield block.text
            elif block.type == "thinking":
                thinking = self._thinking_blocks[event.index] = {
                    "type": "thinking",
                    "thinking": getattr(block, "thinking", None) or "",
                    # (a gateway may leave it out: older SDKs then have no such field)
                    "signature": getattr(block, "signature", None) or "",
                }
                self.thinking.append(thinking)
                self._content[event.index] = thinking  # type: ignore[assignment]
                if thinking["thinking"]:
                    yield ReasoningDelta(delta=thinking["thinking"])
            elif block.type == "redacted_thinking":
                self.thinking.append({"type": "redacted_thinking", "data": block.data})
        elif event.type == "content_block_stop":
            done = self._calls.pop(event.index, None)
            if done is not None:  # (told once the stop reason says it was not cut: see finish)
                self.done_calls.append(done.complete())
        elif event.type == "message_delta":
            if self._held:
                yield from self._release()
            if event.delta.stop_reason:
                self._stop_reason = event.delta.stop_reason
                self.finished = True  # (the answer is whole, should message_stop not come)
            yield from self._usage(event.usage)
        elif event.type == "message_stop":
            if self._held:
                yield from self._release()
            self.finished = True
            whole = getattr(event, "message", None)  # (some gateways send the answer here)
            if isinstance(whole, dict) and not self._blocks:
                yield from self._whole_message(whole)

    def _release(self) -> Iterator[UsageUpdate]:
        """The usage message_start reported, held until the answer began."""
        held, self._held = self._held, []
        yield from held

    def _whole_message(self, message: dict[str, Any]) -> Iterator[CompletionEvent | str]:
        """The answer a gateway sent whole in ``message_stop`` (``message``) instead of as
        content blocks, as Anvia reads it: its text, tool calls, usage and stop reason."""
        for block in message.get("content") or ():
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                if block["text"]:
                    yield block["text"]
            elif block.get("type") == "tool_use" and isinstance(block.get("id"), str):
                given = block.get("input")
                arguments = json.dumps(given) if isinstance(given, dict) and given else "{}"
                call_id = block["id"] or _new_call_id()
                if self.first_call_id is None:
                    self.first_call_id = call_id
                name = str(block.get("name") or "")
                # (held, as a streamed block's: told once the stop reason says it was not cut)
                self.done_calls.append(ToolCall(id=call_id, name=name, arguments=arguments))
        usage = message.get("usage")
        if isinstance(usage, dict):
            yield from self._usage(_Fields(usage))
        reason = message.get("stop_reason")
        if isinstance(reason, str) and reason:
            self._stop_reason = reason

    def _delta(self, index: int, delta: Any) -> Iterator[CompletionEvent]:
        """A content block's delta other than text."""
        if delta.type == "input_json_delta" and delta.partial_json:
            pieces = self._inputs.get(index)
            if pieces is not None:
                pieces.append(delta.partial_json)
            call = None if index in self._whole_at_start else self._calls.get(index)
            if call is not None:
                call.arguments.append(delta.partial_json)
                yield ToolCallDelta(id=call.id, arguments_delta=delta.partial_json)
        elif delta.type == "citations_delta":
            block = self._content.get(index)
            if block is not None and delta.citation is not None:
                cited = [*(block.get("citations") or ()), _block_param(delta.citation)]
                block["citations"] = cited
        elif delta.type in ("thinking_delta", "signature_delta"):
            thinking = self._thinking_blocks.get(index)
            if delta.type == "signature_delta":
                if thinking is not None:  # (replaces the start's, as the SDK's accumulator)
                    thinking["signature"] = delta.signature or ""
            elif delta.thinking:
                if thinking is not None:
                    thinking["thinking"] += delta.thinking
                yield ReasoningDelta(delta=delta.thinking)

    def _usage(self, usage: Any) -> Iterator[UsageUpdate]:
        """Report what a running usage total adds to the totals reported so far."""
        for name in (*INPUT_TOKEN_FIELDS, "output_tokens"):
            value = getattr(usage, name, None)
            if isinstance(value, int):
                self._token_counts[name] = value
        totals = Usage(
            input_tokens=sum(self._token_counts.get(name, 0) for name in INPUT_TOKEN_FIELDS),
            output_tokens=self._token_counts.get("output_tokens", 0),
        )
        added = Usage(
            input_tokens=totals.input_tokens - self._reported.input_tokens,
            output_tokens=totals.output_tokens - self._reported.output_tokens,
        )
        self._reported = totals
        # Tokens read from the prompt cache (part of the input tokens), when reported.
        cached = self._token_counts.get("cache_read_input_tokens")
        added_cached = None if cached is None else cached - self._reported_cached
        self._reported_cached = cached or 0
        if added.input_tokens or added.output_tokens or added_cached:
            yield UsageUpdate(usage=added, cached_tokens=added_cached)

    def finish(self) -> Finish:
        reason = self._stop_reason or "end_turn"
        cut = _CUT_TOOL_CALLS.get(reason)
        if cut is not None and self.first_call_id is not None:
            raise ModelError(
                f'Anthropic tool-call stream ended with stop_reason "{reason}"; {cut}.',
                status_code=None,
                retryable=False,
            )
        return Finish(reason=STOP_REASONS.get(reason, reason))

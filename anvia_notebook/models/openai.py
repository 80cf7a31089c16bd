"""OpenAI Chat Completions, and any OpenAI-compatible server (Ollama, vLLM, LM Studio, ...).

The ``openai`` SDK is imported when a model is built, never when this module is imported; install
it with ``pip install "anvia_notebook[openai]"``.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any

from .._util import compact_json, shown_url
from ..messages import Message, Usage
from ._errors import ended_early, refuse_json_answer
from ._json_schema import (
    closed_objects,
    every_property_required,
    finite_numbers_only,
    refs_alone,
    strict_keywords_only,
)
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
    ToolCallDelta,
    ToolDefinition,
    UsageUpdate,
    unique_call_id,
)

if TYPE_CHECKING:
    from openai import AsyncOpenAI
    from openai.types.chat import (
        ChatCompletionAssistantMessageParam,
        ChatCompletionChunk,
        ChatCompletionContentPartParam,
        ChatCompletionMessageParam,
        ChatCompletionMessageToolCallParam,
        ChatCompletionToolParam,
        ChatCompletionUserMessageParam,
    )

__all__ = ["OpenAIModel"]

#: The API key sent to OpenAI-compatible servers that need none (they still want the header).
NO_API_KEY = "not-needed"
#: The host of OpenAI's own API, which wants ``max_completion_tokens`` instead of ``max_tokens``.
OPENAI_API_HOST = "api.openai.com"
#: The hosts of Azure OpenAI's deployments, which want ``max_completion_tokens`` too.
AZURE_OPENAI_HOSTS = (".openai.azure.com", ".cognitiveservices.azure.com", ".services.ai.azure.com")
#: The fields of a completion's token limit: OpenAI's (and Azure's), then the older one.
_LIMIT_FIELDS = ("max_completion_tokens", "max_tokens")
#: Delta fields OpenAI-compatible servers stream reasoning in (DeepSeek and vLLM use the first,
#: Ollama, OpenRouter and newer vLLM the second; `_reasoning_text` reads them in this order).
REASONING_FIELDS = ("reasoning_content", "reasoning")
#: What a server that wants reasoning sent back says when it is missing: DeepSeek's thinking
#: mode ("Missing `reasoning_content` field in the assistant message at message index 1", "The
#: `reasoning_content` in the thinking mode must be passed back to the API"), Moonshot's Kimi
#: ("thinking is enabled but reasoning_content is missing in assistant tool call message at
#: index 2"), LiteLLM ("assistant message with tool_calls must include reasoning_content").
#: Not the name alone: an error that repeats the request (vLLM's validation errors) has it
#: wherever the conversation does (the words are told apart by spaces and quotes only, not by
#: the colon or comma of a repeated key).
_REASONING_WANTED = re.compile(
    "|".join(
        words.replace(" ", r"[\s`'\"]+")
        for words in (
            "missing (?:field )?reasoning_content",
            "reasoning_content (?:field )?(?:is )?(?:missing|required)",
            "reasoning_content in the thinking mode must",
            "must (?:include|contain) (?:the )?reasoning_content",
        )
    ),
    re.IGNORECASE,
)
#: ``stream_options`` named in an error as the field refused ("Unrecognized request argument
#: supplied: stream_options", "loc: ('body', 'stream_options')", "{'stream_options': ['Unknown
#: field.']}"), not as a key of the request the error repeats, with the object sent (vLLM's
#: validation errors echo the whole body: "'stream_options': {'include_usage': True}").
_STREAM_OPTIONS_REFUSED = re.compile(r"""stream_options(?!['"]?\s*:\s*\{)""")
#: The ``Message.provider_data`` key of the ``extra_content`` a server sent with a turn's tool
#: calls, by call id: Gemini's OpenAI-compatible API sends a call's thought signature there and
#: refuses the next request when the call comes back without it.
EXTRA_CONTENT_KEY = "openai_tool_call_extra_content"
#: Options that go only with tools (sent without, the API refuses the request).
TOOL_OPTIONS = ("tool_choice", "parallel_tool_calls")
#: Arguments of ``chat.completions.create`` this model sets itself.
RESERVED_OPTIONS = frozenset({"model", "messages", "stream"})


_NO_CREDENTIALS = (
    "OpenAI needs an API key: set the OPENAI_API_KEY environment variable (for a notebook, "
    "before starting Jupyter, or in os.environ before creating the model), or pass "
    'OpenAIModel(..., api_key="..."). (A local OpenAI-compatible server that needs no key: '
    'pass its base_url="...".)'
)


class OpenAIModel(CompletionModel):
    """A chat model served through the OpenAI Chat Completions API, streamed.

    ``model`` is the model id (also the :attr:`name`). The key comes from ``api_key`` or the
    ``OPENAI_API_KEY`` environment variable; ``base_url`` points at any OpenAI-compatible server
    (``http://localhost:11434/v1`` for Ollama), and a server that needs no key gets a placeholder
    one. ``client`` replaces the ``AsyncOpenAI`` client this model would build (its options, such as
    ``max_retries``, are then left as they are; its connections stay with the first event loop
    it is used on, whereas the model's own client is built again for each event loop, and
    closed on it as that loop ends). Other
    keyword arguments are sent with every request (``top_p=0.9``, ``reasoning_effort="low"``,
    ``extra_body={...}``); the request's own
    ``temperature``, ``max_tokens`` and ``tool_choice`` win over them (an Anthropic-style
    ``tool_choice``, given either way, is made OpenAI's, and its ``disable_parallel_tool_use``
    sent as ``parallel_tool_calls=False``). A request's token limit
    goes as ``max_completion_tokens`` to OpenAI and Azure, as ``max_tokens`` elsewhere, or under
    the name of a limit given as an option. Usage is asked for (``stream_options``) unless
    ``stream_options=None`` is passed, or until the server refuses it (the request is then sent
    again without). Values of headers and of options named like credentials are hidden in the
    run's trace.

    Tool messages take only text, so the model reads a short placeholder naming an image a tool
    returned (an MCP tool's). With ``tool_result_images=True`` the images also follow the turn's
    tool messages in a user message, as pydantic-ai does (for a model that reads images; off by
    default, on OpenAI's API as on any compatible server).

    The SDK's own retries are off (``max_retries=0``): the run loop retries. Failures are raised as
    :class:`~anvia_notebook.models.base.ModelError` with the HTTP status.

    :meth:`stream` yields the text (and a refusal's text) as plain ``str`` pieces, each one a piece
    of text as a ``TextDelta`` would be; everything else as completion events.
    """

    provider = "openai"
    #: The SDK's error when no key was given nor set (raised as a ``ModelError`` when asked).
    _no_key: Exception | None = None

    def __init__(
        self,
        model: str,
        api_key: str | None = None,
        base_url: str | None = None,
        client: AsyncOpenAI | None = None,
        *,
        tool_result_images: bool = False,
        **request_options: Any,
    ) -> None:
        check_settings("OpenAIModel", model, api_key, "gpt-4o")
        if base_url is not None and not isinstance(base_url, str):
            raise TypeError(f"OpenAIModel: base_url must be a text, not {type(base_url).__name__}.")
        openai = provider_sdk("openai", "OpenAIModel", RESERVED_OPTIONS, request_options)
        build = None
        if client is None:
            local = base_url is not None or bool(os.environ.get("OPENAI_BASE_URL"))
            if local and api_key is None and not os.environ.get("OPENAI_API_KEY"):
                api_key = NO_API_KEY  # (a local server, such as Ollama's, wants no key)
            # (each of its clients with an HTTP client that does not close itself when collected:
            # see LoopClients; the first one's connections may be of a loop that has closed)
            http = openai.DefaultAsyncHttpxClient
            try:
                client = openai.AsyncOpenAI(
                    api_key=api_key, base_url=base_url, max_retries=0, http_client=http()
                )
            except openai.OpenAIError as error:  # no key given nor set: said at the first request
                self._no_key = error
                client = openai.AsyncOpenAI(
                    api_key=NO_API_KEY, base_url=base_url, max_retries=0, http_client=http()
                )
            key, url = client.api_key, client.base_url

            def build() -> AsyncOpenAI:  # (the same client again, for another event loop)
                return openai.AsyncOpenAI(  # type: ignore[no-any-return]
                    api_key=key,
                    base_url=url,
                    max_retries=0,
                    http_client=openai.DefaultAsyncHttpxClient(),
                )

        check_options(
            "OpenAIModel", client.chat.completions.create, request_options, also=frozenset()
        )
        if "tool_choice" in request_options:  # (an Anthropic-style one: made OpenAI's)
            given_choice = request_options["tool_choice"]
            request_options["tool_choice"] = to_openai_tool_choice(given_choice)
            if _parallel_calls_off(given_choice):  # (a parallel_tool_calls given wins)
                request_options.setdefault("parallel_tool_calls", False)
        self.name = model
        self.model = model
        self.client = client
        self._loop_clients = LoopClients(client, build)
        self.request_options = request_options
        #: Whether each assistant message goes with its reasoning, as ``reasoning_content``:
        #: set once the server refused a request for want of it (DeepSeek's thinking mode);
        #: other servers refuse the field, so it is not sent until then.
        self.sends_reasoning = False
        #: Whether usage is asked for (``stream_options``): set to False once the server
        #: refused a request for it (then no usage is reported).
        self.asks_usage = True
        # OpenAI's reasoning models (on Azure too) refuse the older `max_tokens`, the one
        # compatible servers know; a limit given as an option names the field to use.
        host = client.base_url.host
        is_openai = host == OPENAI_API_HOST or host.endswith(AZURE_OPENAI_HOSTS)
        is_openai = is_openai or isinstance(client, getattr(openai, "AsyncAzureOpenAI", ()))
        #: Whether a tool call's ``extra_content`` (Gemini's thought signature) is sent back:
        #: not to OpenAI nor Azure, which refuse a message field they do not know ("Additional
        #: properties are not allowed"), as a conversation begun with Gemini would bring.
        self.sends_extra_content = not is_openai
        named = [field for field in _LIMIT_FIELDS if field in request_options]
        self.max_tokens_field = named[0] if named else _LIMIT_FIELDS[not is_openai]
        self.tool_result_images = bool(tool_result_images)

    def __repr__(self) -> str:
        shown = shown_url(str(self.client.base_url))  # (a password or token in it: ***)
        return f"OpenAIModel({self.model!r}, base_url={shown!r})"

    async def stream(self, request: CompletionRequest) -> AsyncIterator[CompletionEvent | str]:
        import openai

        if self._no_key is not None:  # (nothing is sent: the placeholder key is never used)
            raise ModelError(_NO_CREDENTIALS, status_code=None, retryable=False) from self._no_key

        options = self._options(request)
        assembler = _ChunkAssembler()
        with provider_errors("OpenAI", openai):
            stream = await self._create(request, options, openai)
            await refuse_json_answer("OpenAI", stream)
            chunk = None
            with whole_answer_kept(openai, lambda: assembler.finished):
                async with stream:
                    text_only, feed = assembler.text_only, assembler.feed
                    async for chunk in stream:
                        text = text_only(chunk)
                        if text is not None:
                            yield text  # the per-delta path: a plain string, no generator
                            continue
                        for event in feed(chunk):
                            yield event
        if not assembler.finished:  # (cut short: a tool call in it may be too)
            raise ended_early("OpenAI", "a finish_reason", chunk is not None)
        for event in assembler.finish():
            yield event

    async def _create(
        self, request: CompletionRequest, options: dict[str, Any], openai: Any
    ) -> Any:
        """Send the request; when the server refuses it for want of the reasoning sent back
        (DeepSeek's thinking mode, once a turn called a tool), send it again with it: this
        model sends it from then on (:attr:`sends_reasoning`). When it refuses
        ``stream_options`` (Azure's API versions before 2024-09, some compatible servers), send
        it again without: this model asks for no usage from then on (:attr:`asks_usage`)."""
        while True:
            messages = to_openai_messages(
                request.instructions,
                request.messages,
                images=self.tool_result_images,
                reasoning=self.sends_reasoning,
                extra_content=self.sends_extra_content,
            )
            try:
                client = await self._loop_clients.on_this_loop(self.client)
                return await client.chat.completions.create(
                    model=self.model, messages=messages, stream=True, **options
                )
            except openai.BadRequestError as error:
                said = str(error)
                if not self.sends_reasoning and _REASONING_WANTED.search(said):
                    self.sends_reasoning = True
                elif "stream_options" in options and _STREAM_OPTIONS_REFUSED.search(said):
                    self.asks_usage = False  # (its usage is then unknown: shown as 0)
                    del options["stream_options"]
                else:
                    raise

    def _options(self, request: CompletionRequest) -> dict[str, Any]:
        options = dict(self.request_options)
        given = options.get("stream_options", {})
        if given is None or not self.asks_usage:  # (a server that refuses stream_options)
            options.pop("stream_options", None)
        else:
            options["stream_options"] = {"include_usage": True, **given}
        if request.tools:
            options["tools"] = [to_openai_tool(tool) for tool in request.tools]
            if request.tool_choice is not None:
                options["tool_choice"] = to_openai_tool_choice(request.tool_choice)
                if _parallel_calls_off(request.tool_choice):
                    options["parallel_tool_calls"] = False
        elif not options.get("tools"):
            # An agent without tools (a judge) on a model given these: the API refuses them
            # ("'parallel_tool_calls' is only allowed when 'tools' are specified").
            for name in TOOL_OPTIONS:
                options.pop(name, None)
        if request.response_format is not None:
            options["response_format"] = to_openai_response_format(request.response_format)
        if request.temperature is not None:
            options["temperature"] = request.temperature
        if request.max_tokens is not None:
            options.pop("max_tokens", None)
            options.pop("max_completion_tokens", None)
            options[self.max_tokens_field] = request.max_tokens
        return options


def to_openai_messages(
    instructions: str | None,
    messages: list[Message],
    images: bool = False,
    reasoning: bool = False,
    extra_content: bool = True,
) -> list[ChatCompletionMessageParam]:
    """The conversation as Chat Completions messages: the instructions first, as a system message,
    and one ``tool`` message per tool result (with ``images``, then a user message with the
    images those results returned). A tool call's ``extra_content`` goes back as the server sent
    it (see ``EXTRA_CONTENT_KEY``), unless ``extra_content`` is false. Reasoning is not sent
    back, unless ``reasoning`` is true: then each assistant message carries its reasoning as
    ``reasoning_content`` (DeepSeek's thinking mode wants it; most servers refuse the field)."""
    result: list[ChatCompletionMessageParam] = []
    if instructions:
        result.append({"role": "system", "content": instructions})
    for message in messages:
        if message.role == "user":
            result.append({"role": "user", "content": message.content})
        elif message.role == "assistant":
            assistant: ChatCompletionAssistantMessageParam = {
                "role": "assistant",
                "content": message.content or (None if message.tool_calls else ""),
            }
            if message.tool_calls:
                extras = (message.provider_data or {}).get(EXTRA_CONTENT_KEY)
                extras = extras if isinstance(extras, dict) and extra_content else {}
                calls: list[ChatCompletionMessageToolCallParam] = []
                for call in message.tool_calls:
                    sent: ChatCompletionMessageToolCallParam = {
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": _sent_arguments(call)},
                    }
                    if call.id in extras:  # (as the server sent it: see EXTRA_CONTENT_KEY)
                        sent["extra_content"] = extras[call.id]  # type: ignore[typeddict-unknown-key]
                    calls.append(sent)
                assistant["tool_calls"] = calls
            if reasoning:
                assistant["reasoning_content"] = message.reasoning or ""  # type: ignore[typeddict-unknown-key]
            result.append(assistant)
        else:
            result.extend(
                {"role": "tool", "tool_call_id": part.tool_call_id, "content": part.content}
                for part in message.tool_results
            )
            if images:
                shown = _tool_images_message(message)
                if shown is not None:
                    result.append(shown)
    return result


def _sent_arguments(call: Any) -> str:
    """A call's arguments as sent back: the model's text when it is a JSON object (NaN and
    Infinity are not JSON), else ``{}`` (the call's result told the model they were invalid;
    servers that read the history, such as vLLM, refuse arguments that are not JSON), as the
    Anthropic model sends them."""
    try:
        value = json.loads(call.arguments, parse_constant=not_json)
    except (ValueError, RecursionError):
        return "{}"
    return call.arguments if isinstance(value, dict) else "{}"


def _tool_images_message(message: Message) -> ChatCompletionUserMessageParam | None:
    """The images a turn's tool results returned, as one user message (tool messages take only
    text), each result's introduced by a line naming its tool and call."""
    content: list[ChatCompletionContentPartParam] = []
    for part in message.tool_results:
        sent = images_to_send(part)
        if not sent:
            continue
        what = "image" if len(sent) == 1 else f"{len(sent)} images"
        content.append(
            {
                "type": "text",
                "text": f"The {what} returned by the tool {part.tool_name} "
                f"(call {part.tool_call_id}):",
            }
        )
        content.extend(
            {
                "type": "image_url",
                "image_url": {"url": f"data:{media.media_type};base64,{media.data}"},
            }
            for media in sent
        )
    return {"role": "user", "content": content} if content else None


def to_openai_tool(tool: ToolDefinition) -> ChatCompletionToolParam:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": finite_numbers_only(tool.parameters),
        },
    }


def to_openai_response_format(response_format: ResponseFormat) -> dict[str, Any]:
    """The schema as Chat Completions' ``json_schema`` response format, its objects closed:
    strict (the answer is guaranteed to follow it) when strict mode takes the schema, i.e.
    every property is required and it uses only the keywords strict mode knows (a length
    limit or a ``oneOf`` would make OpenAI refuse the request). A ``$ref`` with a keyword beside
    it (a described field of a model type), which strict mode refuses too, is sent as the
    definition it names, with that keyword (see ``refs_alone``), when that makes it strict."""
    schema = closed_objects(finite_numbers_only(response_format.json_schema))
    strict = every_property_required(schema) and strict_keywords_only(schema)
    if not strict:
        alone = refs_alone(schema)
        if alone is not schema and every_property_required(alone) and strict_keywords_only(alone):
            schema, strict = alone, True
    return {
        "type": "json_schema",
        "json_schema": {"name": response_format.name, "schema": schema, "strict": strict},
    }


#: Anthropic's ``tool_choice`` types, as Chat Completions' (``"tool"`` names the tool to call).
_ANTHROPIC_CHOICES = {"auto": "auto", "none": "none", "any": "required", "tool": None}


def to_openai_tool_choice(choice: Any) -> Any:
    """``"auto"``, ``"none"``, ``"required"`` and OpenAI's dicts pass through; ``"any"`` is
    ``"required"`` and any other string names the one tool to call. An Anthropic-style dict
    (``{"type": "tool", "name": ...}``, ``{"type": "any"}``, ...) is made OpenAI's, as the
    Anthropic model makes an OpenAI-style one its own (its ``disable_parallel_tool_use`` goes
    as ``parallel_tool_calls=False``, beside it)."""
    if choice == "any":
        return "required"
    if isinstance(choice, str) and choice not in ("auto", "none", "required"):
        return {"type": "function", "function": {"name": choice}}
    if isinstance(choice, dict) and choice.get("type") in _ANTHROPIC_CHOICES:
        if choice["type"] != "tool":
            return _ANTHROPIC_CHOICES[choice["type"]]
        name = choice.get("name")
        if not isinstance(name, str) or not name.strip():
            raise ValueError(
                'OpenAIModel: tool_choice {"type": "tool", ...} needs the name of the tool to '
                f"call, as {{'type': 'tool', 'name': 'get_weather'}}; got {choice!r}."
            )
        return {"type": "function", "function": {"name": name}}
    return choice


def _parallel_calls_off(choice: Any) -> bool:
    """Whether ``choice`` is an Anthropic-style ``tool_choice`` that turns parallel tool calls
    off (``"disable_parallel_tool_use": True``), which OpenAI is told as
    ``parallel_tool_calls=False``."""
    return (
        isinstance(choice, dict)
        and choice.get("type") in _ANTHROPIC_CHOICES
        and choice.get("disable_parallel_tool_use") is True
    )


#: The finish reasons a streamed answer with tool calls may end with (its calls are then
#: complete and may run); as Anvia's Chat Completions model, any other is refused.
TOOL_CALL_FINISHES = frozenset({"tool_calls", "stop", "function_call"})
_TOOL_FINISH_ERRORS = {
    "length": 'OpenAI Chat Completions tool-call stream ended with finish_reason "length"; '
    "provider output may be incomplete.",
    "content_filter": "OpenAI Chat Completions tool-call stream ended with finish_reason "
    '"content_filter"; tool calls will not be executed.',
}
_UNSUPPORTED_TOOL_FINISH = (
    "OpenAI Chat Completions tool-call stream ended with an unsupported finish reason "
    "({reason!r}); provider output cannot be assembled safely."
)
_CONFLICTING_FINISH = (
    "OpenAI Chat Completions stream returned conflicting terminal finish reasons ({first!r}, then "
    "{then!r}); provider output cannot be assembled safely."
)
_AMBIGUOUS_CHOICES = (
    "OpenAI Chat Completions stream returned ambiguous completion choices without valid indices; "
    "provider output cannot be assembled safely."
)


def _refused(message: str) -> ModelError:
    """The server's stream cannot be taken as an answer (trying again would not help)."""
    return ModelError(message, status_code=None, retryable=False)


def _primary_choice(choices: Any) -> Any:
    """The chunk's choice of the answer (index 0; a lone choice without an index is it too), or
    None; choices that leave it unclear (a bad index, two of index 0, a choice without an index
    beside others) are refused, as Anvia does, rather than merged."""
    unindexed = []
    primary = []
    for choice in choices:
        index = getattr(choice, "index", None)
        if index is None:
            unindexed.append(choice)
        elif type(index) is not int or index < 0:
            raise _refused(_AMBIGUOUS_CHOICES)
        elif index == 0:
            primary.append(choice)
    if unindexed:
        if len(unindexed) > 1 or len(unindexed) != len(choices):
            raise _refused(_AMBIGUOUS_CHOICES)
        return unindexed[0]
    if len(primary) > 1:
        raise _refused(_AMBIGUOUS_CHOICES)
    return primary[0] if primary else None


class _ChunkAssembler:
    """Turns streamed ``chat.completion.chunk`` objects into completion events.

    Tool-call fragments are tied together by their ``index`` (the first id seen for an index is
    the call's id); the complete calls, the usage and the finish reason come when the stream ends.
    Servers that number every call ``0`` (some OpenAI-compatible ones do) are followed too: a
    named fragment with another id, or after a call whose arguments are whole, starts a new
    call; a fragment with neither index nor id continues the last call.
    """

    def __init__(self) -> None:
        self._calls: dict[int, PendingCall] = {}
        #: The call each index (or, without one, each id) currently feeds, and its given id.
        self._slots: dict[int | str, int] = {}
        self._given: dict[int, str | None] = {}
        #: The ``extra_content`` each call came with (see ``EXTRA_CONTENT_KEY``).
        self._extra: dict[int, Any] = {}
        self._last_slot: int | str | None = None
        self._usage: Usage | None = None
        self._cached: int | None = None
        self._finish_reason: str | None = None
        #: The answer is a refusal (its words came as ``refusal`` deltas).
        self._refused = False

    def text_only(self, chunk: ChatCompletionChunk) -> str | None:
        """The chunk's text when it is a piece of text and nothing else (most chunks are), as
        :meth:`feed` would give it; otherwise None, and the chunk goes to :meth:`feed`."""
        if getattr(chunk, "usage", None) is not None:
            return None
        choices = getattr(chunk, "choices", None)
        if not choices or len(choices) != 1:
            return None
        choice = choices[0]
        delta = choice.delta
        content = getattr(delta, "content", None)
        if type(content) is not str:
            return None
        if (
            not content
            or choice.index != 0
            or choice.finish_reason
            or delta.tool_calls
            or getattr(delta, "refusal", None)
            or _reasoning_text(delta)
        ):
            return None
        return content

    def feed(self, chunk: ChatCompletionChunk) -> Iterator[CompletionEvent | str]:
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            # The last usage seen wins: some servers repeat a running total in every chunk.
            self._usage = Usage(
                input_tokens=usage.prompt_tokens or 0, output_tokens=usage.completion_tokens or 0
            )
            self._cached = _cached_tokens(usage)
        choice = _primary_choice(getattr(chunk, "choices", None) or ())
        if choice is not None:
            delta = choice.delta  # (None in some servers' last chunk)
            reasoning = _reasoning_text(delta) if delta is not None else None
            if reasoning:
                yield ReasoningDelta(delta=reasoning)
            # Text goes out as plain strings (a piece of text each, as a ``TextDelta`` would
            # be): no object built per delta.
            content = getattr(delta, "content", None)
            if isinstance(content, str):
                if content:
                    yield content
            elif content:  # a list of parts (Mistral's): text, and thinking as reasoning
                yield from _content_parts(content)
            refusal = getattr(delta, "refusal", None)
            if refusal:
                self._refused = True
                yield refusal
            tool_calls = getattr(delta, "tool_calls", None)
            if tool_calls:  # (most deltas have none: no enumerate built for them)
                for position, fragment in enumerate(tool_calls):
                    event = self._tool_fragment(position, fragment)
                    if event is not None:
                        yield event
            reason = choice.finish_reason
            if reason:
                if self._finish_reason is not None and reason != self._finish_reason:
                    raise _refused(
                        _CONFLICTING_FINISH.format(first=self._finish_reason, then=reason)
                    )
                self._finish_reason = reason

    def _tool_fragment(self, position: int, fragment: Any) -> ToolCallDelta | None:
        index = getattr(fragment, "index", None)
        call_id = getattr(fragment, "id", None) or None
        function = getattr(fragment, "function", None)
        name: str | None = getattr(function, "name", None) or None
        arguments = _argument_text(getattr(function, "arguments", None))
        # Servers that leave out the index send each call whole, with its own id; a fragment
        # with neither continues the call before it.
        slot: int | str
        if isinstance(index, int):
            slot = index
        elif call_id is not None:
            slot = call_id
        else:
            slot = self._last_slot if self._last_slot is not None else position
        self._last_slot = slot
        key = self._slots.get(slot)
        call = self._calls.get(key) if key is not None else None
        if (
            call is not None
            and key is not None
            and self._another_call(key, call, call_id, name, arguments)
        ):
            call = None
        elif call is not None and key is not None:
            self._keep_extra(key, fragment)
        if call is None:
            new_id = call_id or f"call_{uuid.uuid4().hex[:24]}"
            taken = {pending.id for pending in self._calls.values()}
            if new_id in taken:  # another index's call has this id already
                new_id = unique_call_id(new_id, taken)
            key = self._slots[slot] = len(self._calls)
            self._given[key] = call_id
            call = self._calls[key] = PendingCall(id=new_id, name=name or "")
            self._keep_extra(key, fragment)
        elif name and not call.name:
            call.name = name
        elif name and name != call.name and not call.arguments:
            # A name in pieces, before any arguments (some servers split it): joined, as the
            # SDK's own accumulator does; a name told again whole is the same call's.
            call.name += name
            name = call.name
        elif arguments:
            name = None  # the name is told once
        else:
            return None
        if arguments:
            call.arguments.append(arguments)
        return ToolCallDelta(id=call.id, name=name, arguments_delta=arguments)

    def _keep_extra(self, key: int, fragment: Any) -> None:
        """Keep the ``extra_content`` the fragment came with, if any (see
        ``EXTRA_CONTENT_KEY``); the SDK's fragment type declares no such field."""
        extra = getattr(fragment, "__pydantic_extra__", None)
        value = extra.get("extra_content") if type(extra) is dict else None
        if value is not None:
            self._extra[key] = value

    def _another_call(
        self, key: int, call: PendingCall, call_id: str | None, name: str | None, arguments: str
    ) -> bool:
        """Whether a named fragment for the call at ``key`` starts another call: it has
        another id, or the call has its name and whole JSON arguments already. (A fragment
        without a name continues the call, whatever id it has: some servers send a new id
        with each piece.)"""
        if name is None or not call.name:
            return False
        given = self._given.get(key)
        if call_id is not None and given is not None and call_id != given:
            return True
        if not arguments.strip() or not call.arguments:  # (a name told again: the same call)
            return False
        try:
            json.loads("".join(call.arguments))
        except (ValueError, RecursionError):
            return False
        return True

    @property
    def finished(self) -> bool:
        """Whether the answer is complete: a choice's ``finish_reason`` came."""
        return self._finish_reason is not None

    def finish(self) -> Iterator[CompletionEvent]:
        reason = self._finish_reason
        if self._calls and reason not in TOOL_CALL_FINISHES:
            known = _TOOL_FINISH_ERRORS.get(str(reason))
            raise _refused(known or _UNSUPPORTED_TOOL_FINISH.format(reason=reason))
        for call in self._calls.values():
            yield call.complete()
        if self._extra:
            extras = {self._calls[key].id: value for key, value in self._extra.items()}
            yield ProviderData(data={EXTRA_CONTENT_KEY: extras})
        if self._usage is not None:
            yield UsageUpdate(usage=self._usage, cached_tokens=self._cached)
        default = "tool_calls" if self._calls else "stop"
        reason = self._finish_reason or default
        if self._refused and reason == "stop":  # (as the Anthropic model says of a refusal)
            reason = "content_filter"
        yield Finish(reason=reason)


def _argument_text(value: Any) -> str:
    """A fragment's argument text; arguments sent as a JSON object (some servers do) as its
    text."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return compact_json(value)


def _content_parts(parts: Any) -> Iterator[CompletionEvent | str]:
    """A delta's content given as a list of parts: text parts as text, thinking parts (their
    own text, or a list of text parts) as reasoning; other kinds are skipped."""
    for part in parts if isinstance(parts, list) else ():
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("text"), str) and part["text"]:
            yield part["text"]
        elif kind == "thinking":
            thinking = part.get("thinking")
            if isinstance(thinking, list):
                thinking = "".join(
                    item.get("text", "") for item in thinking if isinstance(item, dict)
                )
            if isinstance(thinking, str) and thinking:
                yield ReasoningDelta(delta=thinking)


def _cached_tokens(usage: Any) -> int | None:
    """The prompt tokens served from OpenAI's prompt cache, when the server reports them
    (``prompt_tokens_details.cached_tokens``; ``input_tokens_details`` in the Responses API)."""
    for name in ("prompt_tokens_details", "input_tokens_details"):
        cached = getattr(getattr(usage, name, None), "cached_tokens", None)
        if isinstance(cached, int):
            return cached
    return None


def _reasoning_text(delta: Any) -> str | None:
    """The delta's reasoning text, if any. The SDK's delta types declare none of the reasoning
    fields, so a server's come as extra fields: they are looked up in the model's fields, then
    its extras, directly, as a missing attribute of a pydantic model costs an exception (ten
    times the rest of a text delta's handling), and most deltas have no reasoning."""
    extra = getattr(delta, "__pydantic_extra__", None)
    if type(extra) is dict:
        fields = delta.__dict__
        value = fields.get("reasoning_content") or fields.get("reasoning")
        if not value and extra:
            value = extra.get("reasoning_content") or extra.get("reasoning")
        return value if isinstance(value, str) and value else None
    for name in REASONING_FIELDS:  # not a pydantic model with extras: ask for the attribute
        value = getattr(delta, name, None)
        if isinstance(value, str) and value:
            return value
    return None

"""Kernel-side CPU per text delta of a real provider's stream: text as ``TextDelta`` objects (the
old way) against plain strings (the new way), over the SDK's own parsing cost.

No network: a stream of 20,000 text chunks (by default) is built with the SDK's own chunk types
(``ChatCompletionChunk`` for OpenAI, the ``Raw...Event`` types for Anthropic), written out as the
server's SSE body, and served through the SDK's own HTTP library and a mock transport, the way
the provider tests replay recorded HTTP. The SDKs' parsing costs far more per chunk than
everything of ours, so each provider is measured twice:

- from memory: the SDK's chunk objects, parsed once by the SDK from that body, replayed by a
  stand-in for the SDK's stream (``replay alone`` is that stand-in read by a bare ``async for``);
- through the SDK: the body parsed by the SDK on every run (``sdk``, the SDK's stream read by a
  bare ``async for``, is the floor any code reading this provider pays).

The variants: ``model`` (our model's ``stream()`` read by a bare ``async for``), ``run`` (a whole
run of an agent on that model, no subscriber), ``run + subscriber`` (the same with a view-free
subscriber: ``run.subscribe(callback)`` with a plain callback that keeps each event, as user code
would; no notebook view) and ``run + stream()`` (the same through ``agent.prompt(...).stream()``,
the public events). The ways, taking turns in every round: ``str``, the model as it is (text as
plain strings); ``TextDelta``, the same with a ``TextDelta`` built per text piece (the old way);
``before``, the model as it was before these changes (``TextDelta`` objects, each chunk through
a generator or two, and for OpenAI reasoning fields looked up with ``getattr``, an exception
each when absent). Differences between ways are paired within a round. The run store is off
(``store(None)``).

    python benchmarks/provider_stream.py [--chunks 20000] [--rounds 7] [--http-rounds 3]
                                         [--provider openai|anthropic|both] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_kernel import deltas as word_deltas

from anvia_notebook import AgentBuilder
from anvia_notebook.messages import Message
from anvia_notebook.models import openai as openai_module
from anvia_notebook.models.anthropic import _EventAssembler
from anvia_notebook.models.base import CompletionEvent, CompletionRequest, TextDelta
from anvia_notebook.models.openai import _ChunkAssembler

PROMPT = "Stream, please."
REQUEST = CompletionRequest(messages=[Message.user(PROMPT)])


# -- the old ways: the assemblers as they were ---------------------------------------------------


def getattr_reasoning(delta: Any) -> str | None:
    """The OpenAI model's reasoning lookup as it was: ``getattr`` of fields the SDK's delta type
    does not declare (an exception each, as most deltas have no reasoning)."""
    for name in openai_module.REASONING_FIELDS:
        value = getattr(delta, name, None)
        if isinstance(value, str) and value:
            return value
    return None


class BeforeChunkAssembler(_ChunkAssembler):
    """``_ChunkAssembler`` as it was before these changes: every chunk through the ``feed``
    generator, a ``TextDelta`` per text piece, the ``getattr`` reasoning lookup."""

    def text_only(self, chunk: Any) -> str | None:
        return None  # (there was no such path)

    def feed(self, chunk: Any) -> Iterator[CompletionEvent | str]:
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            self._usage = openai_module.Usage(
                input_tokens=usage.prompt_tokens or 0, output_tokens=usage.completion_tokens or 0
            )
            self._cached = openai_module._cached_tokens(usage)
        for choice in getattr(chunk, "choices", None) or ():
            if choice.index != 0:
                continue
            delta = choice.delta
            reasoning = getattr_reasoning(delta)
            if reasoning:
                yield openai_module.ReasoningDelta(delta=reasoning)
            if delta.content:
                yield TextDelta(delta=delta.content)
            if getattr(delta, "refusal", None):
                yield TextDelta(delta=delta.refusal)
            for position, fragment in enumerate(delta.tool_calls or ()):
                event = self._tool_fragment(position, fragment)
                if event is not None:
                    yield event
            if choice.finish_reason:
                self._finish_reason = choice.finish_reason


class TextDeltaChunkAssembler(_ChunkAssembler):
    """``_ChunkAssembler`` as it is, but a ``TextDelta`` built per text piece."""

    def text_only(self, chunk: Any) -> Any:
        text = super().text_only(chunk)
        return None if text is None else TextDelta(delta=text)


class BeforeEventAssembler(_EventAssembler):
    """``_EventAssembler`` as it was for text: the third kind of event looked at, through the
    ``_delta`` generator, a ``TextDelta`` per text piece."""

    def feed(self, event: Any) -> Iterator[CompletionEvent | str]:
        if event.type == "message_start" or event.type == "content_block_start":
            yield from _EventAssembler.feed(self, event)
        elif event.type == "content_block_delta":
            yield from self._before_delta(event.index, event.delta)
        else:
            yield from _EventAssembler.feed(self, event)

    def _before_delta(self, index: int, delta: Any) -> Iterator[CompletionEvent | str]:
        if delta.type == "text_delta" and delta.text:
            yield TextDelta(delta=delta.text)
        else:
            yield from self._delta(index, delta)


class TextDeltaEventAssembler(_EventAssembler):
    """``_EventAssembler`` as it is, but a ``TextDelta`` built per text piece."""

    def feed(self, event: Any) -> Iterator[CompletionEvent | str]:
        if event.type == "content_block_delta" and event.delta.type == "text_delta":
            if event.delta.text:
                yield TextDelta(delta=event.delta.text)
        else:
            yield from _EventAssembler.feed(self, event)


#: Per provider, the ways its model may stream text, the new one (``str``) last.
WAYS: dict[str, dict[str, type]] = {
    "openai": {
        "before": BeforeChunkAssembler,
        "TextDelta": TextDeltaChunkAssembler,
        "str": _ChunkAssembler,
    },
    "anthropic": {
        "before": BeforeEventAssembler,
        "TextDelta": TextDeltaEventAssembler,
        "str": _EventAssembler,
    },
}


# -- the recorded streams, built with the SDKs' own types ----------------------------------------


def openai_body(pieces: list[str]) -> bytes:
    from openai.types import CompletionUsage
    from openai.types.chat import ChatCompletionChunk
    from openai.types.chat.chat_completion_chunk import Choice, ChoiceDelta

    common: dict[str, Any] = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 1753954231,
        "model": "gpt-4o-mini-2024-07-18",
        "service_tier": "default",
        "system_fingerprint": "fp_34a54ae93c",
    }

    def chunk(delta: ChoiceDelta, finish: Any = None) -> ChatCompletionChunk:
        choice = Choice(index=0, delta=delta, logprobs=None, finish_reason=finish)
        return ChatCompletionChunk(**common, choices=[choice], usage=None)

    chunks = [chunk(ChoiceDelta(role="assistant", content="", refusal=None))]
    chunks += [chunk(ChoiceDelta(content=piece)) for piece in pieces]
    chunks.append(chunk(ChoiceDelta(), "stop"))
    usage = CompletionUsage(prompt_tokens=12, completion_tokens=len(pieces), total_tokens=0)
    chunks.append(ChatCompletionChunk(**common, choices=[], usage=usage))
    lines = [f"data: {c.model_dump_json()}\n\n" for c in chunks] + ["data: [DONE]\n\n"]
    return "".join(lines).encode()


def anthropic_body(pieces: list[str]) -> bytes:
    from anthropic.types import (
        Message as AnthropicMessage,
    )
    from anthropic.types import (
        MessageDeltaUsage,
        RawContentBlockDeltaEvent,
        RawContentBlockStartEvent,
        RawContentBlockStopEvent,
        RawMessageDeltaEvent,
        RawMessageStartEvent,
        RawMessageStopEvent,
        TextBlock,
        Usage,
    )
    from anthropic.types import (
        TextDelta as AnthropicTextDelta,
    )
    from anthropic.types.raw_message_delta_event import Delta

    message = AnthropicMessage(
        id="msg_bench",
        type="message",
        role="assistant",
        model="claude-sonnet-4-6",
        content=[],
        stop_reason=None,
        stop_sequence=None,
        usage=Usage(input_tokens=25, output_tokens=1),
    )
    events: list[Any] = [
        RawMessageStartEvent(type="message_start", message=message),
        RawContentBlockStartEvent(
            type="content_block_start", index=0, content_block=TextBlock(type="text", text="")
        ),
    ]
    events += [
        RawContentBlockDeltaEvent(
            type="content_block_delta",
            index=0,
            delta=AnthropicTextDelta(type="text_delta", text=piece),
        )
        for piece in pieces
    ]
    events += [
        RawContentBlockStopEvent(type="content_block_stop", index=0),
        RawMessageDeltaEvent(
            type="message_delta",
            delta=Delta(stop_reason="end_turn", stop_sequence=None),
            usage=MessageDeltaUsage(output_tokens=len(pieces)),
        ),
        RawMessageStopEvent(type="message_stop"),
    ]
    return "".join(
        f"event: {event.type}\ndata: {event.model_dump_json(exclude_unset=True)}\n\n"
        for event in events
    ).encode()


# -- the providers -------------------------------------------------------------------------------


class Provider:
    """One SDK: its client on a mock transport that answers every request with ``body``."""

    def __init__(self, name: str, pieces: list[str]) -> None:
        self.name = name
        if name == "openai":
            import openai
            from openai import _base_client

            http: Any = getattr(_base_client, "httpx2", None)
            if http is None:
                import httpx as http
            body = openai_body(pieces)
        else:
            import anthropic
            from anthropic import _base_client

            http = getattr(_base_client, "httpx2", None)
            if http is None:
                import httpx as http
            body = anthropic_body(pieces)

        def answer(_request: Any) -> Any:
            headers = {"content-type": "text/event-stream"}
            return http.Response(200, headers=headers, content=body)

        http_client = http.AsyncClient(transport=http.MockTransport(answer))
        if name == "openai":
            self.client: Any = openai.AsyncOpenAI(
                api_key="sk-bench", http_client=http_client, max_retries=0
            )
        else:
            self.client = anthropic.AsyncAnthropic(
                api_key="sk-ant-bench", http_client=http_client, max_retries=0
            )

    def model(self, client: Any) -> Any:
        if self.name == "openai":
            from anvia_notebook.models.openai import OpenAIModel

            return OpenAIModel("gpt-4o-mini", client=client)
        from anvia_notebook.models.anthropic import AnthropicModel

        return AnthropicModel("claude-sonnet-4-6", client=client)

    def use(self, way: str) -> None:
        """Make the model stream its text the way ``way`` (a key of :data:`WAYS`)."""
        assembler = WAYS[self.name][way]
        if self.name == "openai":
            openai_module._ChunkAssembler = assembler
        else:
            from anvia_notebook.models import anthropic as anthropic_module

            anthropic_module._EventAssembler = assembler

    async def sdk_items(self) -> AsyncIterator[Any]:
        """The SDK's own stream of chunk objects, as the model asks for it."""
        messages = [{"role": "user", "content": PROMPT}]
        if self.name == "openai":
            stream = await self.client.chat.completions.create(
                model="gpt-4o-mini",
                messages=messages,
                stream=True,
                stream_options={"include_usage": True},
            )
        else:
            stream = await self.client.messages.create(
                model="claude-sonnet-4-6", max_tokens=4096, messages=messages, stream=True
            )
        async with stream:
            async for chunk in stream:
                yield chunk

    async def sdk_stream(self) -> None:
        """The SDK's own stream, read and dropped: the floor."""
        async for _chunk in self.sdk_items():
            pass


# -- the variants --------------------------------------------------------------------------------


class Replay:
    """The SDK's own chunk objects, parsed once (by the SDK, from the same body), streamed again
    from memory by a stand-in for the SDK's ``AsyncStream`` (``async with``, ``async for``)."""

    def __init__(self, items: list[Any]) -> None:
        self.items = items

    async def __aenter__(self) -> Replay:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        return None

    async def __aiter__(self) -> Any:
        for item in self.items:
            yield item


def replay_client(name: str, items: list[Any]) -> Any:
    """A client stand-in whose ``create`` answers every request with ``Replay(items)``."""

    async def create(**_options: Any) -> Replay:
        return Replay(items)

    if name == "openai":
        import httpx

        completions = SimpleNamespace(create=create)
        return SimpleNamespace(
            base_url=httpx.URL("https://api.openai.com/v1"),
            chat=SimpleNamespace(completions=completions),
        )
    return SimpleNamespace(messages=SimpleNamespace(create=create))


async def parsed_once(provider: Provider) -> list[Any]:
    return [chunk async for chunk in provider.sdk_items()]


def variants(provider: Provider, client: Any) -> dict[str, Callable[[], Awaitable[Any]]]:
    agent = AgentBuilder("bench", provider.model(client)).build()
    model = agent.model

    async def model_stream() -> None:
        async for _event in model.stream(REQUEST):
            pass

    async def run(subscriber: bool) -> None:
        run = agent.prompt(PROMPT).store(None).create_run()
        if subscriber:
            seen: list[Any] = []
            run.subscribe(seen.append)
        run.start()
        await run.wait()

    async def public_stream() -> None:
        async for _event in agent.prompt(PROMPT).store(None).stream():
            pass

    return {
        "model": model_stream,
        "run": lambda: run(False),
        "run + subscriber": lambda: run(True),
        "run + stream()": public_stream,
    }


def timed(loop: asyncio.AbstractEventLoop, fn: Callable[[], Awaitable[Any]], count: int) -> float:
    """µs per text chunk of one call of ``fn``."""
    gc.collect()
    started = time.perf_counter()
    loop.run_until_complete(fn())
    return (time.perf_counter() - started) / count * 1e6


def compare(
    loop: asyncio.AbstractEventLoop,
    provider: Provider,
    floor: Callable[[], Awaitable[Any]],
    runs: dict[str, Callable[[], Awaitable[Any]]],
    count: int,
    rounds: int,
) -> dict[str, Any]:
    """The floor, then each variant each way, in ``rounds`` rounds after a warm-up; the ways
    take turns (their order turns round every round), so that a noisy moment hits all alike."""
    ways = list(WAYS[provider.name])
    samples: dict[str, list[float]] = {"floor": []}
    samples.update({f"{variant} {way}": [] for variant in runs for way in ways})
    timed(loop, floor, count)
    for way in ways:
        provider.use(way)
        for fn in runs.values():
            timed(loop, fn, count)
    for index in range(rounds):
        samples["floor"].append(timed(loop, floor, count))
        order = ways[index % len(ways) :] + ways[: index % len(ways)]
        for variant, fn in runs.items():
            for way in order:
                provider.use(way)
                samples[f"{variant} {way}"].append(timed(loop, fn, count))
    provider.use("str")
    results: dict[str, Any] = {"rounds": rounds, "ways": ways, "variants": list(runs)}
    for key, values in samples.items():
        results[key] = _spread(values)
    for variant in runs:
        new = samples[f"{variant} str"]
        for way in ways[:-1]:
            old = samples[f"{variant} {way}"]
            results[f"{variant} {way} - str"] = _spread(
                [a - b for a, b in zip(old, new, strict=True)]
            )
        results[f"{variant} str - floor"] = _spread(
            [b - f for b, f in zip(new, samples["floor"], strict=True)]
        )
    return results


def _spread(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def measure(name: str, count: int, http_rounds: int, rounds: int) -> dict[str, Any]:
    provider = Provider(name, word_deltas(count, "The end."))
    loop = asyncio.new_event_loop()
    try:
        items = loop.run_until_complete(parsed_once(provider))
        memory = replay_client(name, items)

        async def replay_alone() -> None:
            create = (
                memory.messages.create if name == "anthropic" else memory.chat.completions.create
            )
            async with await create() as stream:
                async for _chunk in stream:
                    pass

        above = compare(loop, provider, replay_alone, variants(provider, memory), count, rounds)
        over_http: dict[str, Any] | None = None
        if http_rounds:
            runs = variants(provider, provider.client)
            http_runs = {key: runs[key] for key in ("model", "run + subscriber")}
            over_http = compare(loop, provider, provider.sdk_stream, http_runs, count, http_rounds)
        # The SDK leaves its SSE iterator unfinished after ``[DONE]``: let the loop close the
        # ones collected, before it closes.
        gc.collect()
        loop.run_until_complete(asyncio.sleep(0))
        loop.run_until_complete(loop.shutdown_asyncgens())
    finally:
        loop.close()
    return {"provider": name, "chunks": count, "above_sdk": above, "over_http": over_http}


def report(results: dict[str, Any]) -> None:
    def table(title: str, part: dict[str, Any], floor: str) -> None:
        def cell(key: str) -> str:
            value = part[key]
            return f"{value['median']:.2f} ({value['min']:.2f}/{value['max']:.2f})"

        ways = part["ways"]
        columns = [*ways, *(f"{way} - str" for way in ways[:-1]), "str - floor"]
        print(f"\n{results['provider']}, {title}: {results['chunks']:,} text chunks,")
        print(f"{part['rounds']} rounds; µs per chunk, median (min/max); differences paired")
        print(f"{'':17}" + "".join(f" {column:>24}" for column in columns))
        for variant in part["variants"]:
            cells = [cell(f"{variant} {column}") for column in columns]
            print(f"{variant:17}" + "".join(f" {text:>24}" for text in cells))
        print(f"{floor:17} {cell('floor'):>24}")

    table("the SDK's chunks replayed from memory", results["above_sdk"], "replay alone")
    if results["over_http"] is not None:
        table("through the SDK (mock HTTP)", results["over_http"], "sdk (the floor)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=7, help="rounds from memory")
    parser.add_argument(
        "--http-rounds", type=int, default=3, help="rounds through the SDK (0: none)"
    )
    parser.add_argument(
        "--provider", choices=("openai", "anthropic", "both"), default="both", help="which SDK"
    )
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args(argv)
    names = ("openai", "anthropic") if args.provider == "both" else (args.provider,)
    all_results = [measure(name, args.chunks, args.http_rounds, args.rounds) for name in names]
    for results in all_results:
        report(results)
    if args.json:
        args.json.write_text(json.dumps(all_results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

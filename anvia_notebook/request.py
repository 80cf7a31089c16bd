"""``PromptRequest``: the options of one run, and the ways to run it."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import warnings
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from ._option_checks import (
    checked_handler,
    checked_hook,
    checked_human_input,
    checked_session,
    checked_turns,
)
from ._script_loop import run_in_script
from ._steering import new_items, steering_messages, storable
from ._util import new_id, running_loop
from .approvals import ApprovalHandler
from .errors import RequestAlreadyUsedError, RunOwnedError
from .events import RunEvent
from .hooks import Hook, dropped_tool_call_hooks
from .messages import Message
from .output_types import OutputSpec, check_output_tools, output_spec
from .retry import CompletionRetries, RetryContext
from .run import AgentRun
from .run_state import OutputTypeInfo, PromptResponse, RunState

if TYPE_CHECKING:
    from collections.abc import Callable

    from .agent import Agent
    from .human import HumanInput
    from .store import RunStore
    from .trace import Trace

__all__ = ["PromptRequest"]

#: Why a run that ``send_sync()`` waits for in a script stopped, when Ctrl-C stopped it.
CTRL_C_REASON = "Interrupted (Ctrl-C)."


class PromptRequest:
    """One run of an agent, configured by chainable options and run exactly once."""

    def __init__(self, agent: Agent, prompt: str | Message | Sequence[Message]) -> None:
        self.agent = agent
        if isinstance(prompt, str):
            self.prompt_message, self.history = Message.user(prompt), list[Message]()
        elif isinstance(prompt, Message):
            self.prompt_message, self.history = prompt, []
        elif isinstance(prompt, (bytes, Mapping)) or not isinstance(prompt, Iterable):
            raise TypeError(
                "agent.prompt() takes a str, a Message or a list of Messages, not "
                f"{type(prompt).__name__}."
            )
        else:
            messages = list(prompt)
            if not messages:
                raise ValueError("agent.prompt() needs a prompt; got an empty list of messages.")
            if not all(isinstance(m, Message) for m in messages):
                raise TypeError("agent.prompt() takes a str, a Message or a list of Messages.")
            self.prompt_message, self.history = messages[-1], messages[:-1]
        for message in (*self.history, self.prompt_message):
            storable(message, "The prompt")  # (text no store can keep: refused now, not later)
        self.max_turn_count = agent.default_max_turns
        self._hooks: tuple[Hook, ...] | None = None
        self._extra_hooks: tuple[Hook, ...] = ()
        self._approvals: ApprovalHandler | None = None
        self._human_input: HumanInput | None = None
        self.tool_concurrency = 1
        self.retries = CompletionRetries()
        self.session_id: str | None = None
        self.meta: dict[str, Any] | None = None
        self._run: AgentRun | None = None
        #: False: the default store (``get_store()``); None: memory only.
        self._store: RunStore | Literal[False] | None = False
        self._resumed_state: RunState | None = None
        #: A sub-agent's run: its ``RunState`` lineage fields (parent ids and path).
        self._lineage: dict[str, Any] = {}
        #: Steering messages sent before the run was made (see :meth:`steer`).
        self._steering: list[Message] = []
        #: Guards ``_steering`` against its hand-over to the run (``steer`` is any thread's);
        #: None once handed over: messages go to the run.
        self._steering_lock: threading.Lock | None = threading.Lock()
        self._output: OutputSpec | None = None
        #: A resume's: called when it makes its run (the claim is then the run's to give back).
        self._made_run: Callable[[], None] = _nothing

    @classmethod
    def resume(
        cls, agent: Agent, run_id: str, store: RunStore | str | os.PathLike[str] | None = None
    ) -> PromptRequest:
        """A request that continues the stored run ``run_id`` (see :meth:`Agent.resume`)."""
        from .store import as_store, required_store
        from .store._owner import give_back_dropped, resume_claimed

        give_back_dropped()

        chosen = as_store(store) or required_store()
        state = chosen.claim_run(run_id)  # raises if a live process owns it
        if state.agent_id != agent.id:
            chosen.release_run(run_id)
            raise ValueError(
                f"Run {run_id!r} belongs to agent {state.agent_id!r}; resume it with that agent "
                f"(this one is {agent.id!r})."
            )
        request = cls(agent, state.messages[state.prompt_index])
        request.history = state.messages[: state.prompt_index]
        request.session_id = state.session_id
        request._store = chosen
        request._resumed_state = state
        request.tool_concurrency = state.tool_concurrency  # (with_tool_concurrency may change it)
        request._made_run = resume_claimed(request, chosen, run_id)
        return request

    @property
    def resumed_state(self) -> RunState | None:
        """The stored state this request continues (None for a new run). Package-internal: a
        sub-agent's resumed run is tied to its parent's call through it."""
        return self._resumed_state

    def sub_run_of(self, lineage: dict[str, Any]) -> PromptRequest:
        """Package-internal (:mod:`~anvia_notebook.subagents`): the run this request makes is a
        sub-agent's, with these ``RunState`` lineage fields (``parent_run_id``,
        ``parent_call_id``, ``parent_tool_call_id``, ``parent_turn``, ``path``)."""
        self._lineage = lineage
        return self

    # -- options -------------------------------------------------------------------------------

    def max_turns(self, value: int) -> PromptRequest:
        self.max_turn_count = checked_turns(value)
        return self

    def with_hook(self, hook: Hook) -> PromptRequest:
        """Use ``hook`` instead of the agent's hooks for this run (call again to add more).

        As in Anvia this replaces the agent's hooks, approval hooks included: a ``UserWarning``
        names an agent hook with an ``on_tool_call`` that is dropped this way. To keep it, use
        :meth:`add_hook` or ``with_hook(compose_hooks(agent_hook, hook))``.
        """
        if self._hooks is None:
            dropped = dropped_tool_call_hooks(self.agent.hooks, (hook, *self._extra_hooks))
            if dropped:
                names = ", ".join(repr(h) for h in dropped)
                warnings.warn(
                    f"with_hook() replaces the agent's hooks for this run, so {names} (an "
                    "on_tool_call hook that can skip calls or request approvals) will not run. "
                    "Use add_hook() to add a hook on top of the agent's, or "
                    "with_hook(compose_hooks(...)) to choose every hook explicitly.",
                    UserWarning,
                    stacklevel=2,
                )
        self._hooks = (*(self._hooks or ()), checked_hook(hook))
        return self

    def add_hook(self, hook: Hook) -> PromptRequest:
        """Add ``hook`` for this run after the agent's hooks (or after those ``with_hook`` set);
        the agent's hooks, approval hooks included, still run first."""
        self._extra_hooks = (*self._extra_hooks, checked_hook(hook))
        return self

    def output_type(self, output_type: Any, mode: str = "tool", retries: int = 2) -> PromptRequest:
        """This run produces a validated ``output_type`` (``PromptResponse.data``), instead of
        the agent's (see :meth:`AgentBuilder.output_type`); a type pydantic cannot validate is
        a ``TypeError`` here."""
        spec = output_spec(output_type, mode, retries)
        check_output_tools(spec, self.agent.tools)
        self._output = spec
        return self

    @property
    def active_output_type(self) -> OutputSpec | None:
        """The output type of this run: the request's, else the agent's (None: text)."""
        return self._output or self.agent.output

    def approvals(self, handler: ApprovalHandler) -> PromptRequest:
        self._approvals = checked_handler(handler)
        return self

    def human_input(self, human_input: HumanInput) -> PromptRequest:
        self._human_input = checked_human_input(human_input)
        return self

    def with_tool_concurrency(self, value: int) -> PromptRequest:
        if not isinstance(value, int) or value < 1:
            raise ValueError("tool concurrency must be a positive integer")
        self.tool_concurrency = value
        return self

    def with_completion_retries(
        self,
        max_attempts: int = 3,
        initial_delay: float = 0.1,
        max_delay: float = 1.0,
        should_retry: Callable[[RetryContext], bool] | None = None,
        max_retry_after: float = 60.0,
    ) -> PromptRequest:
        """Retry transient completion failures (429, 5xx, connection) before the first event,
        waiting as long as the server asks (``Retry-After``), up to ``max_retry_after`` s."""
        self.retries = CompletionRetries(
            max_attempts, initial_delay, max_delay, should_retry, max_retry_after
        )
        return self

    def store(self, store: RunStore | str | os.PathLike[str] | None) -> PromptRequest:
        """Write this run to ``store`` (a :class:`RunStore` or a path), or keep it in memory
        only with ``None`` (default: the store chosen by ``set_store`` / the environment)."""
        from .store import as_store

        self._store = as_store(store)
        return self

    def session(
        self, session_id: str | None, metadata: dict[str, Any] | None = None
    ) -> PromptRequest:
        """Tag the run (shown to tools and approval policies as ``ctx.run``)."""
        checked_session(session_id, metadata)
        self.session_id, self.meta = session_id, metadata
        return self

    @property
    def active_hooks(self) -> tuple[Hook, ...]:
        base = self._hooks if self._hooks is not None else self.agent.hooks
        return (*base, *self._extra_hooks)

    @property
    def active_approval_handler(self) -> ApprovalHandler | None:
        return self._approvals or self.agent.approval_handler

    @property
    def active_human_input(self) -> HumanInput | None:
        return self._human_input or self.agent.human_input

    # -- steering ------------------------------------------------------------------------------

    def steer(self, message: str | Message | Sequence[Message]) -> bool:
        """Send ``message`` into the run while it goes (any thread), as Anvia's ``steer``.

        Messages are queued in order (also before the run starts) and delivered as given (a
        string as a user message) after the current turn's tool results, or, when the model
        answered without tool calls, before the run would end, which then goes on with another
        turn. Returns True when queued, False once the run has completed, failed or been
        cancelled. A blank string is refused (``ValueError``).
        """
        messages = steering_messages(message)
        lock = self._steering_lock
        if lock is not None:
            with lock:
                if self._steering_lock is not None:  # (not handed over meanwhile)
                    self._steering.extend(messages)
                    return True
        assert self._run is not None
        return self._run.steer(messages)

    # -- running -------------------------------------------------------------------------------

    def create_run(self) -> AgentRun:
        """The run object, not started yet (a request makes exactly one)."""
        if self._run is not None:
            raise RequestAlreadyUsedError()
        if self._resumed_state is not None:
            state = self._resumed_state
            store = self._store or None
            from .store._owner import made_here, running_here

            if running_here(state.run_id):  # (resumed again here, and that one was made first)
                raise RunOwnedError(
                    f"Run {state.run_id!r} is already running in this kernel (another "
                    "agent.resume of it was started); this request cannot run it too."
                )
            self._check_resumed_output_type(state)
            state.tool_concurrency = self.tool_concurrency
            events: list[Any] = []
            trace = None
            if store is not None:
                try:
                    events = store.events(state.run_id)
                    trace = store.trace(state.run_id, messages=state.messages)
                except Exception as error:  # the log is for display only: go on without it
                    from .store import store_failed

                    store_failed(store, error)
            self._run = AgentRun(self, state, store=store, events=events, resumed=True, trace=trace)
            made_here(state.run_id, self._run)
            self._made_run()
            self._hand_over_steering()
            return self._run
        output = self.active_output_type
        state = RunState(
            run_id=new_id("run"),
            agent_id=self.agent.id,
            session_id=self.session_id,
            messages=[*self.history, self.prompt_message],
            prompt_index=len(self.history),
            output_type=None
            if output is None
            else OutputTypeInfo(name=output.name, mode=output.mode),
            tool_concurrency=self.tool_concurrency,
            **self._lineage,
        )
        store = self._run_store()
        if store is not None:
            try:
                store.create_run(state, self.prompt_message.content)
            except Exception as error:
                from .store import store_failed

                store_failed(store, error, nothing_stored=not _listed(store, state.run_id))
                store = None
        self._run = AgentRun(self, state, store=store)
        if store is not None:
            from .store._owner import made_here

            made_here(state.run_id, self._run)
        self._hand_over_steering()
        return self._run

    def _check_resumed_output_type(self, state: RunState) -> None:
        """A run started with an ``output_type`` is resumed with one in the same mode (else its
        ``final_result`` calls, and a person's fix of one, would find no such tool); the run stays
        this process's, so the same request may be given the type and sent again."""
        stored, output = state.output_type, self.active_output_type
        if stored is None or (output is not None and output.mode == stored.mode):
            return
        given = "none" if output is None else f'{output.name}, mode="{output.mode}"'
        wanted = f'output_type({stored.name}, mode="{stored.mode}")'
        raise ValueError(
            f"Run {state.run_id!r} was started with {wanted} and this resume has {given}: give "
            f"it the same output type, agent.resume({state.run_id!r}).{wanted}."
        )

    def _hand_over_steering(self) -> None:
        """Messages steered before the run was made are the run's first queued ones."""
        lock = self._steering_lock
        if self._run is None or lock is None:
            return
        with lock:  # (a message steered meanwhile, from another thread, is kept in order)
            if self._steering:
                self._run.steering.queue(new_items(self._steering))
                self._steering = []
            self._steering_lock = None

    def _run_store(self) -> RunStore | None:
        if self._store is False:
            from .store import get_store

            return get_store()
        return self._store

    def start(self, loop: asyncio.AbstractEventLoop | None = None) -> AgentRun:
        """Start the run as a task on ``loop`` (default: the running loop)."""
        return self.create_run().start(loop)

    @property
    def trace(self) -> Trace | None:
        """The run's trace (as far as it got, for a run that failed or was stopped too); None
        before the request has run."""
        return self._run.trace if self._run is not None else None

    async def send(self) -> PromptResponse:
        """Run to the end and return the response (raises the run's error)."""
        return await self._send("The caller was cancelled.")

    async def _send(self, reason_if_cancelled: str) -> PromptResponse:
        run = self.start()
        try:
            return await run.wait()
        except asyncio.CancelledError:
            run.cancel(reason_if_cancelled)
            # The run records its end before the cancellation goes on: else a script's
            # asyncio.run() finds it still ending, cancels it again and prints it as unhandled.
            # (A second cancellation goes on at once, should the run's end hang in user code.)
            await asyncio.shield(run.ended())
            raise

    async def stream(self) -> AsyncIterator[RunEvent]:
        """Run and yield its events; the run's error is raised after the ``error`` event."""
        run = self.start()
        try:
            async for event in run.stream():
                yield event
        finally:
            if not run.done:
                run.cancel("The event stream was closed.")
        run.result()

    def send_sync(self, *, timeout: float | None = None) -> PromptResponse:
        """Run to the end, blocking; works in a script, a thread, or a notebook cell.

        In a notebook the live transcript is shown too; ``timeout`` (seconds) limits how long
        its approval and question prompts wait for a click.
        """
        runner = _notebook_runner()
        if timeout is not None and runner is None:
            warnings.warn(
                "send_sync(timeout=...) limits how long a notebook's approval and question "
                "prompts wait; outside a notebook it does nothing: give the human input its "
                "time limit instead, e.g. .human_input(StoreHumanInput(timeout=60)).",
                UserWarning,
                stacklevel=2,
            )
        if running_loop() is None:
            # (asyncio.run() cancels the task it runs only on Ctrl-C)
            return run_in_script(self._send(CTRL_C_REASON))
        if runner is None:
            raise RuntimeError(
                "send_sync() cannot block the event loop that is running in this thread; "
                "use `await request.send()` instead."
            )
        return runner.send_sync(self, timeout=timeout)  # type: ignore[no-any-return]

    def show(self, *, timeout: float | None = None) -> Any:
        """Display the live transcript widget and start the run; returns a ``RunHandle``.

        ``timeout`` (seconds) limits how long the widget's approval and question prompts wait.
        """
        runner = _notebook_runner()
        if runner is None:
            raise RuntimeError("show() needs a Jupyter kernel; use send() or stream() elsewhere.")
        return runner.show(self, timeout=timeout)

    def _ipython_display_(self) -> None:
        self.show()

    def __repr__(self) -> str:
        return (
            f"PromptRequest(agent={self.agent.id!r}, prompt={self.prompt_message.content[:40]!r})"
        )


def _nothing() -> None:
    """(A new run's request: no claim to hand over.)"""


def notebook_runner() -> Any:
    """The notebook runner inside a Jupyter kernel, else None: the runtime's one seam into the
    notebook layer (package-internal: evaluations show their report through it too)."""
    return _notebook_runner()


def _notebook_runner() -> Any:
    """The notebook runner, when running inside a Jupyter kernel (imported only then)."""
    if "ipykernel" not in sys.modules:
        return None
    import importlib

    shell = importlib.import_module("IPython").get_ipython()
    if shell is None or getattr(shell, "kernel", None) is None:
        return None
    return importlib.import_module(".notebook._runner", __package__)


def _listed(store: Any, run_id: str) -> bool:
    """Whether ``store`` lists run ``run_id`` (False when it cannot even be read)."""
    try:
        store.status(run_id)
    except Exception:
        return False
    return True

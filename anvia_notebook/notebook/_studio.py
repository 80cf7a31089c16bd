"""``Studio``: the notebook Playground: agent picker, prompt box, quick prompts, multi-turn.

One widget (``mode="studio"``); each agent has its own conversation, with its own transcript:
picking an agent (``studio_select``) shows that agent's conversation (a ``snapshot``), and
picking the first one again shows the earlier one as it was. Each prompt runs the selected agent
as a background task on the kernel's loop with its conversation so far
(``agent.prompt([*history, Message.user(text)])``); Stop cancels the current run; New session
clears every conversation, the "always allow" rules and the transcript (op ``reset``). While a
run is in progress, ``studio_send``, ``studio_select``, ``studio_new_session`` and
``studio_open_session`` are refused with "A run is in progress".

Sessions are stored: the conversation with each agent is its own session (its runs carry its
id), written to the run store after each run with its first user message as the title.
:meth:`Studio.sessions` lists the earlier ones, ``Studio(..., session="latest" | id)``,
:meth:`Studio.open_session` and the page's "Earlier sessions" picker continue one: its history
comes back and its transcript is rebuilt from the stored event logs of its runs (or from its
messages when the logs are gone). A store that fails gives one warning; the Studio goes on in
memory.
"""

from __future__ import annotations

import asyncio
import uuid
import warnings
import weakref
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._util import blank, check_valid_text, quoted
from ..agent import Agent
from ..events import CancelledEvent, FinalEvent, TextDeltaEvent, ToolCallEvent, ToolResultEvent
from ..messages import Message, Usage
from ..models import ToolCall
from ..tools import EXPLAIN_TOOL_ERROR
from ._background_input import explain_studio_tool_error
from ._human_input import WidgetHumanInput
from ._inspect import SubRun, stored_run
from ._runner import stop_when_this_cell_reruns
from ._session import TranscriptSession
from ._transcript import Transcript

if TYPE_CHECKING:
    from ..request import PromptRequest
    from ..run import AgentRun
    from ..store import RunStore, StudioSession
    from ._protocol import StudioOpenSessionMsg, StudioSelectMsg, StudioSendMsg

__all__ = ["BUSY", "SESSIONS_SHOWN", "Studio"]

#: The refusal while a run is in progress (part of the contract).
BUSY = "A run is in progress"


def _in_progress(session_id: str) -> str:
    return (
        f"Session {quoted(session_id)} has a run in progress in another Studio: let it end (or "
        "stop it there), then open the session."
    )


#: How many earlier sessions the page's picker offers (newest first).
SESSIONS_SHOWN = 20
#: A session title is the first line of its first user message, up to this many characters.
TITLE_LENGTH = 80
_ENDS = frozenset(("final", "cancelled", "error"))


def session_title(messages: Sequence[Message]) -> str:
    """A readable title for a conversation: its first user message, on one line."""
    for message in messages:
        if message.role == "user" and message.content.strip():
            text = " ".join(message.content.split())
            return text if len(text) <= TITLE_LENGTH else text[: TITLE_LENGTH - 1] + "\u2026"
    return "Untitled session"


#: The Studio of this kernel that holds each session open (a session continued in two Studios
#: at once lost the exchanges of whichever saved first).
_OPEN: weakref.WeakValueDictionary[str, Studio] = weakref.WeakValueDictionary()
#: Every Studio of this kernel (to find one whose run of a session is in progress: a Studio
#: whose cell was run again let go of its sessions, and its stopped run goes on to its end).
_STUDIOS: weakref.WeakSet[Studio] = weakref.WeakSet()


def _quick_prompts(agent_id: str, given: Any) -> list[str]:
    """The quick prompts given for ``agent_id``, checked: each one a button that sends it."""
    if isinstance(given, str) or not isinstance(given, Sequence):
        raise TypeError(
            f"quick_prompts[{agent_id!r}] is a list of prompts, e.g. [{given!r}], not a "
            f"{type(given).__name__}."
        )
    for prompt in given:
        if not isinstance(prompt, str):
            raise TypeError(
                f"A quick prompt of {agent_id!r} is a text, not {type(prompt).__name__}."
            )
        if not prompt.strip():
            raise ValueError(f"A quick prompt of {agent_id!r} is blank; give it some text.")
        check_valid_text(prompt, f"A quick prompt of {agent_id!r}")
    return list(given)


def _refusing_bad_text(steer: Any) -> Any:
    """The message box's handler, with a text ``steer`` refuses (not valid Unicode) told as
    the reply, not as an internal error."""

    def checked(message: Any) -> str | None:
        try:
            return steer(message)  # type: ignore[no-any-return]
        except ValueError as error:
            return str(error)

    return checked


class _CurrentRun:
    """A Studio's run of the moment, for :func:`stop_when_this_cell_reruns` (kept until the
    cell runs again: the Studio may start runs until then)."""

    done = False

    def __init__(self, studio: Studio) -> None:
        self.studio = studio

    def cancel(self, reason: str | None = None) -> bool:
        """The cell runs again: stop the run, and let go of the sessions (the new Studio the
        cell makes may continue them)."""
        self.studio._release_sessions()
        self.studio._waiting_for = None  # (a session it waited to open is the new Studio's)
        run = self.studio.run
        return run is not None and not run.done and run.cancel(reason)


class Studio:
    """The notebook Playground for ``agents``; display it (or call :meth:`start`) in a cell.

    ``quick_prompts`` maps an agent id to prompts offered while the transcript is empty;
    ``timeout`` (seconds) applies to each approval and question; ``session`` continues an
    earlier stored session: ``"latest"`` (the newest of these agents', if any) or an id from
    :meth:`sessions`.
    """

    def __init__(
        self,
        agents: Sequence[Agent],
        quick_prompts: Mapping[str, Sequence[str]] | None = None,
        *,
        timeout: float | None = None,
        session: str | None = None,
    ) -> None:
        if isinstance(agents, Agent):  # Studio(agent): one agent is a list of one
            agents = [agents]
        if isinstance(agents, (str, bytes)) or not isinstance(agents, Iterable):
            raise TypeError(
                f"Studio takes a list of built agents, Studio([agent, ...]), not a "
                f"{type(agents).__name__}."
            )
        agents = list(agents)
        if not agents:
            raise ValueError("Studio needs at least one agent.")
        for agent in agents:
            if not isinstance(agent, Agent):
                raise TypeError(f"Studio takes built agents, not {type(agent).__name__}.")
        self.agents: dict[str, Agent] = {}
        for agent in agents:
            if agent.id in self.agents:
                raise ValueError(f"Two agents have the id {agent.id!r}.")
            self.agents[agent.id] = agent
        if quick_prompts is not None and not isinstance(quick_prompts, Mapping):
            raise TypeError(
                "quick_prompts maps an agent id to its prompts, e.g. "
                f'{{"{agents[0].id}": ["..."]}}, not a {type(quick_prompts).__name__}.'
            )
        prompts = dict(quick_prompts or {})
        unknown = sorted(set(prompts) - set(self.agents))
        if unknown:
            raise ValueError(f"quick_prompts names unknown agents: {', '.join(unknown)}.")
        self.quick_prompts: dict[str, list[str]] = {
            k: _quick_prompts(k, v) for k, v in prompts.items()
        }
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, (int, float))
        ):
            raise TypeError(
                f"timeout is a number of seconds (or None), not {type(timeout).__name__}."
            )
        self.timeout = timeout
        self.selected: str = agents[0].id
        self.human_input = WidgetHumanInput(timeout=timeout)
        self._history: dict[str, list[Message]] = {}
        #: The session id of the conversation with each agent (made at its first prompt).
        self._session_ids: dict[str, str] = {}
        self.run: AgentRun | None = None
        #: The last run whose end ``_on_run_done`` took in.
        self._taken_in: AgentRun | None = None
        self._session: TranscriptSession | None = None
        #: The transcript of each agent's conversation (the selected one's is the widget's), and
        #: the last run of each (the one its Inspect view reads).
        self._conversations: dict[str, Transcript] = {}
        self._last_runs: dict[str, AgentRun] = {}
        #: The stored session opened (Inspect reads its last run until a prompt makes another).
        self._opened: StudioSession | None = None
        #: This session's copy of each agent's own ``WidgetHumanInput`` (by agent id).
        self._own_inputs: dict[str, WidgetHumanInput] = {}
        #: False once the store failed: the Studio goes on in memory.
        self._storing = True
        #: The earlier sessions the page is offered (read from the store when None).
        self._earlier: list[StudioSession] | None = None
        #: A session opened before the widget existed: its transcript is rebuilt with it.
        self._replay: tuple[StudioSession, list[Message]] | None = None
        #: The run of the session asked for (``session=``) that another Studio was stopping
        #: then (its cell was run again): the session is opened once that run has ended.
        self._waiting_for: AgentRun | None = None
        #: Sessions this Studio gave way to another of the kernel that took up their run.
        self._gave_way: set[str] = set()
        _STUDIOS.add(self)
        if session is not None:
            if session == "latest":
                latest = self.sessions(limit=1)
                found = self._read(latest[0].session_id) if latest else None
            elif self._store() is None:
                raise ValueError(
                    f"Cannot open session {quoted(session)}: runs are not stored "
                    "(set_store(None)), so there are no earlier sessions."
                )
            else:
                found = self._read(session)
                if found is None:
                    raise ValueError(
                        f"Unknown session {quoted(session)}: Studio.sessions() lists the earlier "
                        "sessions of these agents."
                    )
            if found is not None:
                other = self._running_elsewhere(found[0].session_id)
                if other is not None:
                    self._after_its_stop(other, found[0].session_id)
                else:
                    self._load(*found)
                    self._replay = found

    # -- state ---------------------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        # Until the run's end is taken in (its conversation kept, the page told): a message
        # sent as the run's task ends would otherwise start from the history before it.
        running = self.run is not None and self.run is not self._taken_in
        return running or self._waiting_for is not None

    def history(self, agent_id: str | None = None) -> list[Message]:
        """The conversation so far with ``agent_id`` (default: the selected agent)."""
        return [m.model_copy(deep=True) for m in self._history.get(agent_id or self.selected, [])]

    @property
    def session_id(self) -> str:
        """The id of the session with the selected agent (each agent's conversation is its own
        session: its runs carry this id, and it is stored and listed under it)."""
        return self._own_session(self.selected)

    def _own_session(self, agent_id: str) -> str:
        """The session of ``agent_id``'s conversation here (a new one made and held)."""
        session_id = self._session_ids.setdefault(agent_id, uuid.uuid4().hex)
        _OPEN.setdefault(session_id, self)
        return session_id

    def _running_elsewhere(self, session_id: str) -> Studio | None:
        """Another Studio of this kernel with a run of ``session_id`` in progress, or None.
        Opened here meanwhile, that run's end would be missing (the model would not hear of
        what its tools did) and the next save here would overwrite it in the store."""
        for other in list(_STUDIOS):
            run = other.run
            if other is self or run is None or run is other._taken_in:
                continue
            if run.state.session_id == session_id:
                return other
        return None

    def _after_its_stop(self, other: Studio, session_id: str) -> None:
        """Open ``session_id`` once the run ``other`` is stopping has ended (and been saved):
        a cell run again (``Studio(..., session="latest")``) stops the run its Studio showed,
        which ends on the kernel's loop after the cell. A run not being stopped is refused
        (``RuntimeError``)."""
        run = other.run
        assert run is not None
        if run.state.cancel_reason is None and not run.done:  # (done: its end is taken in next)
            raise RuntimeError(_in_progress(session_id))
        self._waiting_for = run

        def take_up(ended: AgentRun) -> None:
            if ended is not run or self._waiting_for is not run:
                return
            self._waiting_for = None
            found = self._read(session_id)
            if found is None:
                return
            if self._session is None:  # (its transcript is rebuilt with its widget)
                self._load(*found)
                self._replay = found
            else:
                self._show_opened(found)

        other.session.add_done_listener(take_up)

    def _release_sessions(self) -> None:
        for session_id in self._session_ids.values():
            if _OPEN.get(session_id) is self:
                del _OPEN[session_id]

    def _taken_over(self, session_id: str) -> str | None:
        """Why this Studio no longer continues ``session_id`` (another Studio of this kernel
        opened it since, and continues it: two writing one session would each lose the other's
        messages), or None."""
        other = _OPEN.get(session_id)
        if session_id not in self._gave_way and (other is None or other is self):
            return None
        return (
            f"This conversation (session {quoted(session_id)}) was continued in another Studio "
            "since: go on there, or start a new session here."
        )

    @property
    def transcript(self) -> list[dict[str, Any]]:
        """The transcript entries now, as plain data."""
        return self.session.transcript.entries

    @property
    def session(self) -> TranscriptSession:
        """The widget session (made on first use, bound to the running loop)."""
        if self._session is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                raise RuntimeError(
                    "Studio needs a running event loop: display it in a Jupyter cell."
                ) from None
            session = TranscriptSession(
                agent_id=self.selected,
                loop=loop,
                human_input=self.human_input,
                mode="studio",
                title="Studio",
            )
            session.handlers["sync"] = self._on_sync
            session.handlers["studio_send"] = self._on_send
            session.handlers["studio_select"] = self._on_select
            session.handlers["studio_new_session"] = self._on_new_session
            session.handlers["studio_open_session"] = self._on_open_session
            session.handlers["steer"] = _refusing_bad_text(session.handlers["steer"])
            session.add_done_listener(self._on_run_done)
            session.stored_run = self._opened_run
            session.agent_names = {a.id: a.display_name for a in self.agents.values()}
            self._session = session
            self._conversations = {self.selected: session.transcript}
            replay, self._replay = self._replay, None
            if replay is not None:
                # As it is now: another Studio may have gone on with it since this one was made.
                fresh = self._read(replay[0].session_id)
                if fresh is not None and fresh[0].updated_at != replay[0].updated_at:
                    self._load(*fresh)
                    session.human_input = self.human_input  # (the one _load made)
                    replay = fresh
                self._rebuild(session.transcript, *replay)
        return self._session

    @property
    def widget(self) -> Any:
        return self.session.widget

    # -- display -------------------------------------------------------------------------------

    def _ipython_display_(self) -> None:
        self.session.display()
        # Running this cell again clears the Studio's output: its run then stops, rather than
        # wait unseen for an approval or an answer (as show()'s runs do).
        stop_when_this_cell_reruns(_CurrentRun(self))

    def start(self) -> None:
        """Display the Studio in the current cell."""
        self._ipython_display_()

    def __repr__(self) -> str:
        return f"Studio(agents={list(self.agents)!r}, busy={self.busy})"

    # -- messages to the page ------------------------------------------------------------------

    def studio_message(self) -> dict[str, Any]:
        return {
            "type": "studio",
            "agents": [
                {"id": a.id, "name": a.display_name, "description": a.description}
                for a in self.agents.values()
            ],
            "selected": self.selected,
            "quick_prompts": {k: list(v) for k, v in self.quick_prompts.items()},
            "busy": self.busy,
            "sessions": [
                {
                    "id": s.session_id,
                    "title": s.title,
                    "agent_id": s.agent_id,
                    "updated_at": s.updated_at.isoformat(),
                }
                for s in self._earlier_sessions()
            ],
        }

    def _send_studio(self) -> None:
        self.session.send(self.studio_message())

    # -- requests from the page (on the loop) --------------------------------------------------

    def _on_sync(self, _message: Any) -> str | None:
        self._earlier = None  # another kernel may have stored sessions meanwhile
        self.session.send_snapshot()
        self._send_studio()
        return None

    def _on_send(self, message: StudioSendMsg) -> str | None:
        return self._start(message.text, message.agent_id)

    def _on_select(self, message: StudioSelectMsg) -> str | None:
        return self._select(message.agent_id)

    def _on_new_session(self, _message: Any) -> str | None:
        if self.busy:
            return BUSY
        self._history.clear()
        self._session_ids.clear()
        self._earlier = None
        self.human_input = WidgetHumanInput(timeout=self.timeout)
        self._own_inputs.clear()
        session = self.session
        session.human_input = self.human_input
        self._conversations = {self.selected: session.transcript}
        self._last_runs.clear()
        self._opened = None
        session.run = None  # Inspect reads no run of the conversation cleared
        session.transcript.reset(self.selected)
        session.batcher.flush()
        self._send_studio()
        session.refresh_displays()  # the saved notebook shows what the page shows
        return None

    def _on_open_session(self, message: StudioOpenSessionMsg) -> str | None:
        return self._open(message.session_id)

    # -- conversations -------------------------------------------------------------------------

    def _show(self, agent_id: str) -> None:
        """Show ``agent_id``'s conversation in the widget (a snapshot of it goes to the page)."""
        session = self.session
        transcript = self._conversations.get(agent_id)
        if transcript is session.transcript:
            return
        if transcript is None:
            transcript = Transcript(
                agent_id, emit=session.batcher.push, append=session.batcher.append
            )
            self._conversations[agent_id] = transcript
        session.batcher.flush()  # what the page has not got yet of the conversation it leaves
        session.transcript = transcript
        session.run = self._last_runs.get(agent_id)
        session.send_snapshot()

    def _select(self, agent_id: str) -> str | None:
        """Show ``agent_id``'s conversation; the refusal (None: done), changing nothing."""
        if self.busy:
            return BUSY
        if agent_id not in self.agents:
            return f"Unknown agent {quoted(agent_id)}."
        self._show(agent_id)
        self.selected = agent_id
        self._send_studio()
        self.session.refresh_displays()  # the saved notebook shows what the page shows
        return None

    def select(self, agent_id: str) -> None:
        """Pick ``agent_id`` as in the page's agent picker: its conversation is shown (call it in
        a cell, not while busy: ``RuntimeError``; an unknown agent: ``ValueError``)."""
        _ = self.session  # (an opened session's run its kernel left goes on first)
        error = self._select(agent_id)
        if error is not None:
            raise RuntimeError(error) if error == BUSY else ValueError(error)

    # -- runs ----------------------------------------------------------------------------------

    def _start(self, text: str, agent_id: str | None) -> str | None:
        if self.busy:
            return BUSY
        agent = self.agents.get(agent_id or self.selected)
        if agent is None:
            return f"Unknown agent {quoted(agent_id)}."
        text = text.strip()
        if blank(text):
            return "Type a message first."
        try:  # (a store cannot keep it: the run and the session would go unstored)
            check_valid_text(text, "The message")
        except ValueError as error:
            return str(error)
        taken = self._taken_over(self._own_session(agent.id))
        if taken is not None:
            return taken
        asked = [*self._history.get(agent.id, []), Message.user(text)]
        request = agent.prompt(asked)
        request.session(self._own_session(agent.id))
        self._launch(agent, request, asked)
        return None

    def _launch(self, agent: Agent, request: PromptRequest, asked: list[Message] | None) -> None:
        """Run ``request`` (a prompt, or the resume of a run its kernel left) in the widget;
        ``asked``: the conversation it starts with, stored with its session at once."""
        session = self.session
        self._show(agent.id)
        self.selected = agent.id
        current = request.active_human_input
        if current is None:
            request.human_input(self.human_input)
        elif isinstance(current, WidgetHumanInput):  # the agent's own: this session's copy
            request.human_input(self._own_inputs.setdefault(agent.id, current.for_session()))
        current = request.active_human_input
        session.human_input = current if isinstance(current, WidgetHumanInput) else None
        run = request.create_run()
        self.run = run
        self._last_runs[agent.id] = run
        session.attach(run)
        # The run's task copies this context: its tool calls say what to do when input() fails.
        explaining = EXPLAIN_TOOL_ERROR.set(explain_studio_tool_error)
        try:
            run.start(session.loop)
        finally:
            EXPLAIN_TOOL_ERROR.reset(explaining)
        # Stored now with the message sent, not only when the run ends: a kernel that dies
        # during the run leaves a session that lists and continues with what was asked.
        if asked is not None:
            self._save(run, asked)
        self._send_studio()

    def send(self, text: str, agent_id: str | None = None) -> AgentRun:
        """Send a prompt as if typed in the prompt box (call it in a cell); returns the run."""
        if not isinstance(text, str):
            raise TypeError(
                f"Studio.send() takes the message as a text, not {type(text).__name__}."
            )
        _ = self.session  # (an opened session's run its kernel left goes on first)
        error = self._start(text, agent_id)
        if error is not None:
            raise RuntimeError(error)
        assert self.run is not None
        return self.run

    def stop(self, reason: str | None = None) -> bool:
        """Cancel the current run (from any thread); False when none is in progress."""
        run = self.run
        return run.cancel(reason) if run is not None else False

    def new_session(self) -> None:
        """Clear the history and the transcript (call it in a cell, not while busy)."""
        _ = self.session  # (an opened session's run its kernel left goes on first)
        error = self._on_new_session(None)
        if error is not None:
            raise RuntimeError(error)

    def open_session(self, session_id: str) -> None:
        """Continue the earlier session ``session_id`` (one of :meth:`sessions`): its history
        comes back and its transcript is shown again (call it in a cell, not while busy:
        ``RuntimeError``; a session it cannot open: ``ValueError``)."""
        _ = self.session  # (an opened session's run its kernel left goes on first)
        error = self._open(session_id)
        if error is not None:
            stateful = error == BUSY or self._running_elsewhere(session_id) is not None
            raise RuntimeError(error) if stateful else ValueError(error)

    def _on_run_done(self, run: AgentRun) -> None:
        self._history[run.request.agent.id] = list(run.state.messages)
        if self.run is run:
            self._taken_in = run
        self._save(run)
        if self.run is run:
            self.session.transcript.set_agent(self.selected)
        # The cell output keeps the widget (a Studio stays live) with a static copy of the
        # transcript so far: what a saved notebook shows where no widget runs (GitHub, nbviewer).
        # It goes out before the page hears the Studio is free again, so a notebook saved once
        # Send is back holds the reply.
        self.session.refresh_displays()
        if self.run is run:
            self._send_studio()

    # -- stored sessions -----------------------------------------------------------------------

    def _store(self) -> RunStore | None:
        if not self._storing:
            return None
        from ..store import get_store

        return get_store()

    def _store_failed(self, store: RunStore, error: BaseException) -> None:
        from ..store import warn_once

        self._storing = False
        self._earlier = []
        warn_once(
            f"studio:{store.location}",
            f"Could not use the run store {store.location} for Studio sessions: "
            f"{str(error).rstrip('.')}. "
            "This Studio goes on in memory: its sessions are not stored.",
        )

    def _save(self, run: AgentRun, messages: list[Message] | None = None) -> None:
        """Store the conversation of ``run``'s session (where the run itself was stored): its
        messages, or ``messages`` (those it starts with)."""
        store, session_id = run.store, run.state.session_id
        if store is None or session_id is None or not self._storing:
            return
        if messages is None:
            messages = run.state.messages
        try:
            store.save_session(session_id, run.request.agent.id, session_title(messages), messages)
        except Exception as error:
            self._store_failed(store, error)
        else:
            self._earlier = None

    def sessions(self, limit: int = SESSIONS_SHOWN) -> list[StudioSession]:
        """The stored sessions of this Studio's agents, newest first (the open ones too); an
        empty list when runs are not stored."""
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise ValueError(f"limit is the number of sessions to list: 0 or more, not {limit!r}.")
        store = self._store()
        if store is None:
            return []
        try:
            found = [s for a in self.agents for s in store.sessions(agent_id=a, limit=limit)]
        except Exception as error:
            self._store_failed(store, error)
            return []
        found.sort(key=lambda s: s.updated_at, reverse=True)
        return found[:limit]

    def _earlier_sessions(self) -> list[StudioSession]:
        """What the page's picker offers: the stored sessions not open here."""
        if self._earlier is None:
            self._earlier = self.sessions(limit=SESSIONS_SHOWN + len(self._session_ids))
        open_ids = set(self._session_ids.values())
        offered = [s for s in self._earlier if s.session_id not in open_ids]
        offered = [s for s in offered if self._running_elsewhere(s.session_id) is None]
        return offered[:SESSIONS_SHOWN]

    def _read(self, session_id: str) -> tuple[StudioSession, list[Message]] | None:
        """The stored session ``session_id`` of one of these agents, with its messages."""
        store = self._store()
        if store is None:
            return None
        try:
            stored = store.session(session_id)
            if stored is None or stored.agent_id not in self.agents:
                return None
            return stored, [Message.model_validate(m) for m in stored.messages]
        except Exception as error:
            self._store_failed(store, error)
            return None

    def _load(self, stored: StudioSession, messages: list[Message]) -> None:
        """Make ``stored`` the Studio's only conversation (like New session, then its history)."""
        self._replay = None  # (one asked for when it was made is replaced)
        self._gave_way.discard(stored.session_id)  # (opened again: see _rebuild)
        self._history = {stored.agent_id: list(messages)}
        self._session_ids = {stored.agent_id: stored.session_id}
        _OPEN[stored.session_id] = self
        self._earlier = None
        self.selected = stored.agent_id
        self._last_runs.clear()
        self._opened = stored
        if self._session is not None:  # its transcript is rebuilt as this conversation's
            self._conversations = {stored.agent_id: self._session.transcript}
            self._session.run = None  # (not the run of the conversation it replaces)
        self.human_input = WidgetHumanInput(timeout=self.timeout)
        self._own_inputs.clear()

    def _open(self, session_id: str) -> str | None:
        if self.busy:
            return BUSY
        if self._store() is None:
            return "Earlier sessions are not available: runs are not stored."
        if self._running_elsewhere(session_id) is not None:
            return _in_progress(session_id)
        found = self._read(session_id)
        if found is None:
            return f"Unknown session {quoted(session_id)}."
        self._show_opened(found)
        return None

    def _show_opened(self, found: tuple[StudioSession, list[Message]]) -> None:
        """Make the stored session ``found`` this Studio's conversation, shown in its widget."""
        self._load(*found)
        session = self.session
        session.human_input = self.human_input
        self._rebuild(session.transcript, *found)
        session.batcher.flush()
        self._send_studio()
        session.refresh_displays()

    def _opened_run(self) -> SubRun | None:
        """What Inspect reads of the stored session opened, while its conversation is shown and
        no prompt made a run of it here: its last stored run (None: it has none). A store that
        cannot be read raises (the Inspect view says so)."""
        opened, store = self._opened, self._store()
        if opened is None or store is None or opened.agent_id != self.selected:
            return None
        if self._last_runs.get(opened.agent_id) is not None:
            return None
        runs = store.runs(agent_id=opened.agent_id, session_id=opened.session_id, limit=100)
        last = next((run for run in runs if run.parent_run_id is None), None)
        return None if last is None else stored_run(store, last.run_id)

    def _rebuild(
        self, transcript: Transcript, stored: StudioSession, messages: list[Message]
    ) -> None:
        """Show ``stored``'s conversation again: from its runs' event logs, else its messages.
        Its last run, when the kernel that ran it stopped before it ended (an approval or a
        question waiting, say), goes on here: resumed, its buttons live again."""
        transcript.reset(stored.agent_id)
        # Another Studio of this kernel took up the session's run since this one was made (it
        # was shown first): the run goes on there, and so does the session.
        other = self._running_elsewhere(stored.session_id)
        going = other.run.run_id if other is not None and other.run is not None else None
        left = None if other is not None else self._left_by_its_kernel(stored)
        if not self._replay_runs(transcript, stored, skip=going or left):
            _replay_messages(transcript, stored, messages)
        transcript.set_agent(stored.agent_id)
        if other is not None:
            _OPEN[stored.session_id] = other
            self._gave_way.add(stored.session_id)  # (a message sent here is refused, saying so)
            transcript.notice(
                "This session's run goes on in another Studio: continue it there, or start a "
                "new session here."
            )
        elif left is not None and not self._take_up(stored.agent_id, left):
            self._replay_runs(transcript, stored, only=left)

    def _left_by_its_kernel(self, stored: StudioSession) -> str | None:
        """The id of ``stored``'s last run when its process ended while the run waited for a
        person (the store lists it as interrupted, an approval or a question pending, or
        decided since from the command line or another process), else None. (One left in a
        model call or a tool is not taken up by opening its session: that would call the
        model, or run the tool, again.)"""
        store = self._store()
        if store is None:
            return None
        try:
            runs = store.runs(session_id=stored.session_id, limit=10)
            last = next((r for r in runs if r.parent_run_id is None), None)
            if last is None or last.agent_id != stored.agent_id or last.status != "interrupted":
                return None
            # An approval, or a question the model asked (its sub-agents' too); not an MCP
            # server's form, asked from inside a tool call that the resume ends.
            pending = store.pending(last.run_id)
            waiting = [r for r in pending if not getattr(r, "declinable", False)]
            if not waiting and not _left_for_a_person(store, last.run_id):
                return None
        except Exception as error:
            self._store_failed(store, error)
            return None
        return last.run_id

    def _take_up(self, agent_id: str, run_id: str) -> bool:
        """Resume the run ``run_id`` its kernel left, shown in the widget; False when it
        cannot be (a warning says why: its log is shown as it was left instead)."""
        agent = self.agents[agent_id]
        try:
            request = agent.resume(run_id, self._store())
            self._launch(agent, request, None)
            if self.run is not None and self.run.state.session_id is not None:
                _OPEN[self.run.state.session_id] = self  # (it goes on here)
        except Exception as error:  # (run elsewhere meanwhile, its state unreadable, ...)
            warnings.warn(
                f"The last run of this session ({run_id}) stopped with its kernel and could "
                f"not be continued here: {error}",
                RuntimeWarning,
                stacklevel=2,
            )
            return False
        return True

    def _replay_runs(
        self,
        transcript: Transcript,
        stored: StudioSession,
        *,
        skip: str | None = None,
        only: str | None = None,
    ) -> bool:
        """Replay the event logs of ``stored``'s runs (but ``skip``; or ``only`` that one);
        False when it has none (a run skipped counts)."""
        store = self._store()
        if store is None:
            return False
        logs: list[tuple[str, str, list[Any], list[Any], list[Message]]] = []
        try:
            runs = store.runs(session_id=stored.session_id, limit=10_000)
            if skip is not None and any(r.run_id == skip for r in runs):
                logs.append(("", "", [], [], []))  # (a run the caller shows: it has runs)
            for summary in reversed(runs):  # oldest first
                if summary.agent_id != stored.agent_id or summary.run_id == skip:
                    continue
                if only is not None and summary.run_id != only:
                    continue
                state = store.get(summary.run_id)
                index = state.prompt_index
                prompt = (
                    state.messages[index].content
                    if 0 <= index < len(state.messages)
                    else summary.prompt
                )
                calls = store.trace(summary.run_id, messages=state.messages).tool_calls
                # Messages steered in that the run ended before reading: said after its end,
                # as the live view said them.
                unread = [item.message for item in state.steering]
                logs.append((summary.run_id, prompt, store.events(summary.run_id), calls, unread))
        except Exception as error:
            self._store_failed(store, error)
            return False
        for run_id, prompt, events, calls, unread in logs:
            if not run_id:
                continue
            transcript.begin_run(run_id, stored.agent_id, prompt)
            for event in events:
                transcript.apply(event)
            for call in calls:  # what its tools printed
                if call.output:
                    transcript.tool_output(run_id, call.id, f"trace:{call.id}", call.output)
            if not events or events[-1].type not in _ENDS:
                transcript.apply(CancelledEvent(run_id=run_id, reason="it did not finish"))
            elif unread:
                transcript.undelivered(unread)
        return bool(logs)


def _replay_messages(
    transcript: Transcript, stored: StudioSession, messages: list[Message]
) -> None:
    """The conversation as a transcript when its runs' logs are gone: one exchange per prompt."""
    run_id = ""
    turn = 0

    def end() -> None:
        if run_id:
            transcript.apply(FinalEvent(run_id=run_id, output="", usage=Usage(), messages=[]))

    for index, message in enumerate(messages):
        if message.role == "user":
            end()
            run_id, turn = f"{stored.session_id}-{index}", 0
            transcript.begin_run(run_id, stored.agent_id, message.content)
        elif message.role == "assistant":
            turn += 1
            if message.content:
                transcript.apply(TextDeltaEvent(turn=turn, delta=message.content))
            for call in message.tool_calls:
                tool_call = ToolCall(id=call.id, name=call.name, arguments=call.arguments)
                transcript.apply(ToolCallEvent(turn=turn, tool_call=tool_call))
        else:
            for part in message.tool_results:
                transcript.apply(
                    ToolResultEvent(
                        turn=turn,
                        tool_name=part.tool_name,
                        tool_call_id=part.tool_call_id,
                        internal_call_id=part.tool_call_id,
                        args="",
                        result=part.content,
                        is_error=part.is_error,
                    )
                )
    end()


def _left_for_a_person(store: RunStore, run_id: str) -> bool:
    """Whether resuming the interrupted run ``run_id`` goes on only from where it waited for a
    person whose decision has come since: a call of its turn without a result was put to a
    person (an approval, or a question the model asked), or is a sub-agent's whose run was
    left so, and none of its tools had begun."""
    state = store.get(run_id)
    last = state.messages[-1] if state.messages else None
    if last is None or last.role != "assistant" or not last.tool_calls:
        return False  # (left in a model call)
    records = [*state.approvals.values(), *state.questions.values()]
    # (not a call that ended: some servers give a later turn's call the same id)
    ended = {e.internal_call_id for e in store.events(run_id) if isinstance(e, ToolResultEvent)}
    asked = {
        r.tool_call_id
        for r in records
        if not getattr(r, "declinable", False) and r.internal_call_id not in ended
    }
    subs = {s.parent_tool_call_id: s for s in store.sub_runs(run_id) if s.parent_turn == state.turn}
    waited = False
    for call in last.tool_calls:
        progress = state.calls.get(call.id)
        if progress is not None and progress.status == "done":
            continue
        sub = subs.get(call.id)
        if sub is not None:
            if sub.status != "interrupted" or not _left_for_a_person(store, sub.run_id):
                return False
            waited = True
        elif progress is not None:
            return False  # (its tool had begun)
        elif call.id in asked:
            waited = True
    return waited

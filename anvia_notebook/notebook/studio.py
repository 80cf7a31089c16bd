"""``Studio``: the notebook Playground: agent picker, prompt box, quick prompts, multi-turn.

One widget (``mode="studio"``) and one transcript for the whole session: each prompt runs the
selected agent as a background task on the kernel's loop with the conversation so far
(``agent.prompt([*history, Message.user(text)])``); Stop cancels the current run; New session
clears the history, the "always allow" rules and the transcript (op ``reset``). While a run is
in progress, ``studio_send`` and ``studio_new_session`` are refused with "A run is in progress".
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..agent import Agent
from ..messages import Message
from .human_input import WidgetHumanInput
from .session import TranscriptSession

if TYPE_CHECKING:
    from ..run import AgentRun
    from .protocol import StudioSendMsg

__all__ = ["BUSY", "Studio"]

#: The refusal while a run is in progress (part of the contract).
BUSY = "A run is in progress"


class Studio:
    """The notebook Playground for ``agents``; display it (or call :meth:`start`) in a cell.

    ``quick_prompts`` maps an agent id to prompts offered while the transcript is empty;
    ``timeout`` (seconds) applies to each approval and question.
    """

    def __init__(
        self,
        agents: Sequence[Agent],
        quick_prompts: Mapping[str, Sequence[str]] | None = None,
        *,
        timeout: float | None = None,
    ) -> None:
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
        prompts = dict(quick_prompts or {})
        unknown = sorted(set(prompts) - set(self.agents))
        if unknown:
            raise ValueError(f"quick_prompts names unknown agents: {', '.join(unknown)}.")
        self.quick_prompts: dict[str, list[str]] = {
            k: [str(p) for p in v] for k, v in prompts.items()
        }
        self.timeout = timeout
        self.selected: str = agents[0].id
        self.session_id = uuid.uuid4().hex
        self.human_input = WidgetHumanInput(timeout=timeout)
        self._history: dict[str, list[Message]] = {}
        self.run: AgentRun | None = None
        self._session: TranscriptSession | None = None

    # -- state ---------------------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        return self.run is not None and not self.run.done

    def history(self, agent_id: str | None = None) -> list[Message]:
        """The conversation so far with ``agent_id`` (default: the selected agent)."""
        return list(self._history.get(agent_id or self.selected, []))

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
                title="Anvia Studio",
            )
            session.handlers["sync"] = self._on_sync
            session.handlers["studio_send"] = self._on_send
            session.handlers["studio_new_session"] = self._on_new_session
            session.add_done_listener(self._on_run_done)
            self._session = session
        return self._session

    @property
    def widget(self) -> Any:
        return self.session.widget

    # -- display -------------------------------------------------------------------------------

    def _ipython_display_(self) -> None:
        self.session.display()

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
        }

    def _send_studio(self) -> None:
        self.session._send(self.studio_message())

    # -- requests from the page (on the loop) --------------------------------------------------

    def _on_sync(self, _message: Any) -> str | None:
        self.session.send_snapshot()
        self._send_studio()
        return None

    def _on_send(self, message: StudioSendMsg) -> str | None:
        return self._start(message.text, message.agent_id)

    def _on_new_session(self, _message: Any) -> str | None:
        if self.busy:
            return BUSY
        self._history.clear()
        self.session_id = uuid.uuid4().hex
        self.human_input = WidgetHumanInput(timeout=self.timeout)
        session = self.session
        session.human_input = self.human_input
        session.transcript.reset(self.selected)
        session.batcher.flush()
        self._send_studio()
        return None

    # -- runs ----------------------------------------------------------------------------------

    def _start(self, text: str, agent_id: str | None) -> str | None:
        if self.busy:
            return BUSY
        agent = self.agents.get(agent_id or self.selected)
        if agent is None:
            return f"Unknown agent {agent_id!r}."
        text = text.strip()
        if not text:
            return "Type a message first."
        session = self.session
        self.selected = agent.id
        request = agent.prompt([*self._history.get(agent.id, []), Message.user(text)])
        request.session(self.session_id)
        if request.active_human_input is None:
            request.human_input(self.human_input)
        current = request.active_human_input
        session.human_input = current if isinstance(current, WidgetHumanInput) else None
        run = request.create_run()
        self.run = run
        session.attach(run)
        run.start(session.loop)
        self._send_studio()
        return None

    def send(self, text: str, agent_id: str | None = None) -> AgentRun:
        """Send a prompt as if typed in the prompt box (call it in a cell); returns the run."""
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
        error = self._on_new_session(None)
        if error is not None:
            raise RuntimeError(error)

    def _on_run_done(self, run: AgentRun) -> None:
        self._history[run.request.agent.id] = list(run.state.messages)
        if self.run is run:
            self.session.transcript.set_agent(self.selected)
            self._send_studio()

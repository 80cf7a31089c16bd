"""An agent killed (SIGKILL) while its run ends: its ``on_run_end`` hook hangs when
``ANVIA_TEST_BLOCK_END=1``, after the run has closed itself to steering and before it is stored
as ended. Used by a child process and by the test that resumes it."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from anvia_notebook import AgentBuilder, create_hook
from anvia_notebook.models import ModelResponse, QueueModel, ToolCall


def _ending(event: Any) -> None:
    Path(os.environ["ANVIA_TEST_EFFECTS"]).write_text("ending\n")
    if os.environ.get("ANVIA_TEST_BLOCK_END") == "1":
        time.sleep(3600)


def closer(*answers: str) -> Any:
    model = QueueModel(list(answers))
    return AgentBuilder("closer", model).hook(create_hook(on_run_end=_ending)).build(), model


def run(prompt: str) -> None:
    agent, _ = closer("first answer")
    agent.prompt(prompt).send_sync()


class City(BaseModel):
    name: str
    population: int


def typed_closer(mode: str, *responses: Any) -> Any:
    """The closer with a typed result (``City``) in ``mode``, answering ``responses``."""
    model = QueueModel(list(responses))
    agent = (
        AgentBuilder("closer", model)
        .output_type(City, mode=mode)
        .hook(create_hook(on_run_end=_ending))
        .build()
    )
    return agent, model


def run_typed(mode: str) -> None:
    paris = {"name": "Paris", "population": 1}
    answer = (
        ModelResponse(tool_calls=[ToolCall(id="c1", name="final_result", arguments=paris)])
        if mode == "tool"
        else json.dumps(paris)
    )
    agent, _ = typed_closer(mode, answer)
    agent.prompt("a city").send_sync()

"""Resuming a run that has ended is refused with code that goes on from its history, which
runs as written (before, it named a ``state`` the user does not have)."""

from __future__ import annotations

import pytest

from anvia_notebook import AgentBuilder, RunStore, RunStoreError
from anvia_notebook.models import QueueModel


def _run_the_hint(error: RunStoreError, agent: object) -> object:
    """Run the code the message gives, as a notebook cell would; the request it makes."""
    message = str(error)
    assert "state.messages" not in message
    code = message.split("start a new run with its history: ", 1)[1].removesuffix(".")
    *imports, call = code.split("; ")
    namespace = {"agent": agent}
    exec("\n".join(imports), namespace)
    return eval(call, namespace)


def test_the_hint_runs_as_written_on_the_default_store(store_location):
    model = QueueModel(["first answer", "second answer"])
    agent = AgentBuilder("a", model).build()
    response = agent.prompt("hello").send_sync()
    with pytest.raises(RunStoreError, match="already ended") as caught:
        agent.resume(response.run_id).send_sync()
    assert "RunStore(" in str(caught.value)
    again = _run_the_hint(caught.value, agent).send_sync()
    assert again.output == "second answer"
    sent = [(m.role, m.content) for m in model.requests[1].messages if m.role != "system"]
    assert sent == [
        ("user", "hello"),
        ("assistant", "first answer"),
        ("user", "your next message"),
    ]


def test_the_hint_names_another_store_by_its_address(store_location, tmp_path):
    other = RunStore(tmp_path / "other.sqlite")
    model = QueueModel(["first answer", "second answer"])
    agent = AgentBuilder("a", model).build()
    response = agent.prompt("hello").store(other).send_sync()
    with pytest.raises(RunStoreError, match="already ended") as caught:
        agent.resume(response.run_id, store=other).send_sync()
    assert f"{other!r}.get(" in str(caught.value)
    assert _run_the_hint(caught.value, agent).send_sync().output == "second answer"
    assert [m.content for m in model.requests[1].messages][-3:] == [
        "hello",
        "first answer",
        "your next message",
    ]

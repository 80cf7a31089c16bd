"""A message steered through the run store into a sub-agent's run that has ended while its
top-level run goes on (API.md section 16: "for a run that has ended both refuse with
``RunEndedError`` saying so"; section 14: the top-level run is where a person talks to the
agents). The refusal told the person to "Start a new run with its history", as for a run that
is over, though the run they are working with still runs and takes messages: it now names the
top-level run to steer instead."""

from __future__ import annotations

import asyncio

import pytest

from anvia_notebook import AgentBuilder, RunEndedError, RunStore
from anvia_notebook.__main__ import main as cli
from anvia_notebook.models import QueueModel

from helpers import call, make_gated_tool

pytestmark = pytest.mark.timeout(120)


async def test_a_finished_sub_run_s_refusal_names_the_running_top_level_run(
    store_location: str, capsys: pytest.CaptureFixture[str]
) -> None:
    hold = make_gated_tool("hold", "Hold the run.")
    child = AgentBuilder("analyst", QueueModel(["analyst done"])).build()
    lead = (
        AgentBuilder(
            "lead",
            QueueModel(
                [call("ask", {"prompt": "go"}), call("hold", {"x": 1, "y": 2}), "lead done"]
            ),
        )
        .tools([child.as_tool(name="ask"), hold])
        .build()
    )
    run = lead.prompt("go").start()
    await asyncio.wait_for(hold.started.wait(), 10)  # the analyst has answered; the lead goes on
    [sub] = run.children
    assert sub.done and sub.state.status == "success"
    store = RunStore(store_location)
    try:
        with pytest.raises(RunEndedError) as refused:
            store.steer(sub.run_id, "one more thing")
        said = str(refused.value)
        assert "has already ended (success)" in said
        assert run.run_id in said and "Start a new run" not in said
        assert f"store.steer({run.run_id!r}, text)" in said
        assert cli(["--store", store_location, "steer", sub.run_id, "one more thing"]) == 1
        err = capsys.readouterr().err
        assert run.run_id in err and "Start a new run" not in err
        # the top-level run takes the message, as the refusal says
        store.steer(run.run_id, "one more thing")
    finally:
        store.close()
    for _ in range(500):
        if run.state.steered_ids:
            break
        await asyncio.sleep(0.01)
    hold.release.set()
    response = await asyncio.wait_for(run.wait(), 10)
    assert response.output == "lead done"
    assert response.messages[-2].content == "one more thing"

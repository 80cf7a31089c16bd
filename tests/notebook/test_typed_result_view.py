"""A run's typed result in the cell: a table under the answer (live view and static copy), the
repair of an invalid output in the approval's form, bounded however large the output is."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from notebook_helpers import PageState
from pydantic import BaseModel, Field

from anvia_notebook import AgentBuilder, ApprovalDecision
from anvia_notebook.models import ModelResponse, QueueModel, ToolCall
from anvia_notebook.notebook._protocol import parse_outbound
from anvia_notebook.notebook._snapshot import render_html, render_text
from anvia_notebook.notebook._transcript import Transcript

from helpers import fix_asking_agent


class City(BaseModel):
    name: str
    population: int = Field(gt=0)


def final(arguments: Any, id: str = "out_1") -> ModelResponse:
    return ModelResponse(tool_calls=[ToolCall(id=id, name="final_result", arguments=arguments)])


def page_of(events: list[Any], prompt: str = "cities") -> tuple[Transcript, PageState]:
    """The transcript and the page the run's events make (checked against the wire)."""
    ops: list[dict[str, Any]] = []
    transcript = Transcript("typed", emit=ops.append)
    page = PageState()
    page.apply({"type": "snapshot", "seq": 0, "transcript": transcript.state(0)})
    transcript.begin_run("r1", "typed", prompt)
    for event in events:
        transcript.apply(event)
    batch = {"type": "batch", "seq": 1, "ops": list(ops)}
    parse_outbound(batch)
    page.apply(batch)
    assert page.transcript() == transcript.state(1)
    return transcript, page


async def test_a_list_of_models_is_a_table_in_the_cell_and_the_static_copy() -> None:
    rows = [{"name": "Paris", "population": 2_100_000}, {"name": "Ly|on", "population": 500}]
    agent = AgentBuilder("typed", QueueModel([final({"result": rows})])).build()
    request = agent.prompt("cities").output_type(list[City]).store(None)
    response = await request.send()

    transcript, page = page_of(list(request._run.events))  # type: ignore[union-attr]
    shown = page.entries[-1]
    assert shown["kind"] == "assistant"
    assert shown["text"].startswith("**Result** (2 rows)")
    assert "| name | population |" in shown["text"]
    assert "| Ly\\|on | 500 |" in shown["text"]  # a cell cannot break the table

    html = render_html(transcript.state(1))
    assert "<table>" in html and "<td>Paris</td>" in html and "<td>2100000</td>" in html
    assert "Paris | 2100000" in render_text(transcript.state(1))
    frame = response.to_pandas()
    assert list(frame.columns) == ["name", "population"]
    assert frame["population"].dtype == "Int64" and list(frame["name"]) == ["Paris", "Ly|on"]


async def test_a_large_result_table_is_bounded() -> None:
    rows = [{"name": "x" * 500, "population": i + 1} for i in range(5_000)]
    agent = AgentBuilder("typed", QueueModel([final({"result": rows})])).build()
    request = agent.prompt("cities").output_type(list[City]).store(None)
    response = await request.send()
    _, page = page_of(list(request._run.events))  # type: ignore[union-attr]
    text = page.entries[-1]["text"]
    assert len(text) < 10_000 and "4950 more rows not shown" in text
    assert len(response.to_pandas()) == 5_000  # the data itself is whole


async def test_a_value_that_is_not_a_table_is_shown_as_json() -> None:
    agent = AgentBuilder("typed", QueueModel([final({"result": [1, 2, 3]})])).build()
    request = agent.prompt("numbers").output_type(list[int]).store(None)
    response = await request.send()
    _, page = page_of(list(request._run.events))  # type: ignore[union-attr]
    assert page.entries[-1]["text"].startswith("**Result**\n\n```json")
    assert response.data == [1, 2, 3]


async def test_the_repair_form_of_a_huge_invalid_output_is_bounded() -> None:
    rows = [{"name": f"c{i}", "population": "many"} for i in range(20_000)]
    model = QueueModel([final({"result": rows}, "a")])
    agent = fix_asking_agent(model, list[City])
    request = agent.prompt("cities").store(None)
    run = request.start()
    asked = asyncio.Event()
    run.subscribe(lambda event: event.type == "tool_approval_request" and asked.set())
    await asyncio.wait_for(asked.wait(), 30)
    [pending] = run.interactions.pending

    transcript, page = page_of(list(run.events))
    tool = next(entry for entry in page.entries if entry["kind"] == "tool")
    form = tool["approval"]
    assert tool["status"] == "approval_required"
    assert form["args"] == {"result": None} and len(json.dumps(form)) < 5_000
    assert form["fix_required"] is True  # the page opens its editor
    assert "and 19990 more errors" in form["reason"] and "too long to edit" in form["reason"]
    assert len(render_html(transcript.state(1))) < 250_000
    copy = render_text(transcript.state(1))  # saved while it waits: how to fix it elsewhere
    assert f"approve r1 {pending.id} --args '{{...the fixed arguments...}}'" in copy

    fixed = {"result": [{"name": "Paris", "population": 2}]}
    run.interactions.decide(pending.id, approved=True, args=fixed, via="widget")
    response = await asyncio.wait_for(run.wait(), 30)
    assert response.data == [City(name="Paris", population=2)]
    _, page = page_of(list(run.events))
    tool = next(entry for entry in page.entries if entry["kind"] == "tool")
    assert tool["approval"]["status"] == "approved"
    assert tool["approval"]["edited_args"] == fixed
    assert page.entries[-1]["text"].startswith("**Result** (1 row)")


async def test_a_native_repair_shows_in_the_form_too() -> None:
    model = QueueModel([json.dumps({"name": "Paris", "population": 0})])
    decisions: list[Any] = []

    def handler(request: Any) -> ApprovalDecision:
        decisions.append(request)
        return ApprovalDecision(approved=True, args={"name": "Paris", "population": 1})

    agent = (
        AgentBuilder("typed", model)
        .output_type(City, mode="native", retries=0)
        .approvals(handler)
        .build()
    )
    request = agent.prompt("Paris?").store(None)
    response = await request.send()
    assert response.data == City(name="Paris", population=1)
    _, page = page_of(list(request._run.events))  # type: ignore[union-attr]
    tool = next(entry for entry in page.entries if entry["kind"] == "tool")
    assert tool["tool_name"] == "final_result" and tool["approval"]["status"] == "approved"
    assert page.entries[-1]["text"].startswith("**Result** (1 row)")


async def test_the_widgets_fix_goes_through_the_session_and_is_never_always_allowed() -> None:
    from notebook_helpers import Page, finished, pending_approval

    from anvia_notebook.notebook import _runner as runner

    bad = {"result": [{"name": "Paris", "population": "many"}]}
    model = QueueModel([final(bad, "a"), final(bad, "b")])
    agent = AgentBuilder("typed", model).output_type(list[City], retries=0).build()
    handle = runner.show(agent.prompt("cities").store(None))
    page = Page(handle.widget)
    await page.sync()
    entry = await pending_approval(page)
    approval_id = entry["approval"]["id"]
    assert entry["approval"]["fix_required"] is True

    refused = await page.approve(approval_id, always_allow=True)  # no fix
    assert not refused["ok"] and "edited arguments that fix the errors" in refused["error"]
    invalid = {"result": [{"name": "Paris", "population": 0}]}
    refused = await page.approve(approval_id, edited_args=invalid, always_allow=True)
    assert not refused["ok"]
    assert "result.0.population: 0 is less than or equal to the minimum of 0" in refused["error"]

    fixed = {"result": [{"name": "Paris", "population": 5}]}
    reply = await page.approve(approval_id, edited_args=fixed, always_allow=True)
    assert reply["ok"], reply
    response = await handle
    await finished(handle)
    assert response.data == [City(name="Paris", population=5)]
    assert "final_result" not in handle.session.human_input.always_allowed
    page.pump()
    assert page.state.entries[-1]["text"].startswith("**Result** (1 row)")


async def test_always_allow_of_final_result_still_asks_the_person_for_a_fix() -> None:
    """Always allow of ``final_result`` (given to a hook's approval of a valid result)
    approved the next repair without a fix: the run ended with OutputValidationError."""
    from anvia_notebook.notebook._human_input import WidgetHumanInput

    bad = {"result": [{"name": "Paris", "population": "many"}]}
    human = WidgetHumanInput(auto=False)
    human.always_allowed.add("typed \u203a final_result")
    agent = AgentBuilder("typed", QueueModel([final(bad)])).output_type(list[City], retries=0)
    run = agent.human_input(human).build().prompt("cities").store(None).start()
    asked = asyncio.Event()
    run.subscribe(lambda event: event.type == "tool_approval_request" and asked.set())
    await asyncio.wait_for(asked.wait(), 10)
    for _ in range(10):  # (the human input's turn: it decided at once before)
        await asyncio.sleep(0)
    [pending] = run.interactions.pending
    assert pending.fix_required
    fixed = {"result": [{"name": "Paris", "population": 5}]}
    run.interactions.decide(pending.id, approved=True, args=fixed, via="widget")
    assert (await asyncio.wait_for(run.wait(), 10)).data == [City(name="Paris", population=5)]


async def test_a_scripted_operator_cannot_write_a_fix_and_says_so() -> None:
    from anvia_notebook import OutputValidationError
    from anvia_notebook.notebook._human_input import WidgetHumanInput

    bad = {"result": [{"name": "Paris", "population": "many"}]}
    agent = AgentBuilder("typed", QueueModel([final(bad)])).output_type(list[City], retries=0)
    human = WidgetHumanInput(auto="approve")
    request = agent.human_input(human).build().prompt("cities").store(None)
    try:
        await request.send()
    except OutputValidationError as error:
        assert "there is no approval handler or person to fix it" in str(error)
    else:
        raise AssertionError("a scripted approval without a fix was taken")

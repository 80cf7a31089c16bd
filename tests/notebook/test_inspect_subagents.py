"""The Inspect view of a run whose tool call ran a sub-agent (API.md section 14): the tool call
carries the sub-agent's model calls (and, a level down, its own sub-agent's), from the runs in
memory and, for a stored run, from the run store (no kernel, no browser)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from notebook_helpers import Page, finished

from anvia_notebook import AgentBuilder
from anvia_notebook.messages import Usage
from anvia_notebook.models import ModelResponse, QueueModel, ToolCall
from anvia_notebook.notebook import _inspect as inspect
from anvia_notebook.notebook import _runner as runner
from anvia_notebook.notebook._protocol import parse_outbound
from anvia_notebook.store import get_store


def three_levels() -> Any:
    deep = AgentBuilder(
        "deep",
        QueueModel([ModelResponse(text="deepest", usage=Usage(input_tokens=5, output_tokens=1))]),
    ).build()
    mid_model = QueueModel(
        [
            ModelResponse(
                text="asking deep",
                tool_calls=[ToolCall(id="d1", name="ask_deep", arguments={"prompt": "go"})],
                usage=Usage(input_tokens=20, output_tokens=4),
            ),
            ModelResponse(text="mid done", usage=Usage(input_tokens=30, output_tokens=2)),
        ]
    )
    mid = AgentBuilder("mid", mid_model).name("Middle").tool(deep.as_tool(name="ask_deep")).build()
    top_model = QueueModel(
        [
            ModelResponse(
                tool_calls=[ToolCall(id="m1", name="ask_mid", arguments={"prompt": "go"})]
            ),
            "top done",
        ]
    )
    return AgentBuilder("top", top_model).tool(mid.as_tool(name="ask_mid")).build()


def check_nested(turn: dict[str, Any]) -> None:
    [call] = turn["tool_calls"]
    assert call["name"] == "ask_mid" and call["result"] is not None
    sub = call["sub_agent"]
    assert (sub["agent_id"], sub["model_call_count"]) == ("mid", 2)
    first, second = sub["model_calls"]
    assert (first["index"], first["response_text"]) == (0, "asking deep")
    assert (first["input_tokens"], first["output_tokens"]) == (20, 4)
    [deep_call] = first["tool_calls"]
    assert (deep_call["name"], deep_call["status"]) == ("ask_deep", "success")
    deep = deep_call["sub_agent"]
    assert deep["agent_id"] == "deep"
    assert [c["response_text"] for c in deep["model_calls"]] == ["deepest"]
    assert deep["model_calls"][0]["tool_calls"] == []
    assert (second["response_text"], second["tool_calls"]) == ("mid done", [])


async def test_the_inspect_view_shows_the_sub_agents_model_calls_under_the_tool_call(store_path):
    handle = runner.show(three_levels().prompt("start"))
    page = Page(handle.widget)
    await page.sync()
    await finished(handle)
    reply = await page.request("inspect", index=0)
    parse_outbound(reply)  # the wire protocol validates the nested views
    assert reply["ok"] and reply["count"] == 2
    check_nested(reply["turn"])
    sub = reply["turn"]["tool_calls"][0]["sub_agent"]
    assert sub["agent_name"] == "Middle"
    assert sub["run_id"] == handle.run.children[0].run_id
    # the model's answer (call 2) asked for no tool: nothing nested
    latest = await page.request("inspect", index=None)
    assert latest["turn"]["tool_calls"] == []

    # A stored run (its sub-runs not in memory): from the run store.
    store = get_store()
    assert store is not None
    run = handle.run
    stored = store.trace(run.run_id, messages=run.state.messages)

    shown = SimpleNamespace(run_id=run.run_id, children=[], store=store)
    _, turn = inspect.inspect_turn(stored, 0, inspect.sub_runs_of(shown))  # type: ignore[arg-type]
    check_nested(turn)
    assert turn["tool_calls"][0]["sub_agent"]["agent_name"] is None  # not stored


async def test_calls_of_two_turns_with_one_id_each_show_their_own_sub_agent_run(store_path):
    """Some models give calls of two turns one id: each call shows the sub-run it made."""
    helper = AgentBuilder("helper", QueueModel(["first answer", "second answer"])).build()
    same_id = ToolCall(id="c1", name="ask_helper", arguments={"prompt": "go"})
    top_model = QueueModel(
        [ModelResponse(tool_calls=[same_id]), ModelResponse(tool_calls=[same_id]), "top done"]
    )
    agent = AgentBuilder("top", top_model).tool(helper.as_tool(name="ask_helper")).build()
    handle = runner.show(agent.prompt("start"))
    page = Page(handle.widget)
    await page.sync()
    await finished(handle)
    first, second = handle.run.children
    for index, sub_run in ((0, first), (1, second)):
        reply = await page.request("inspect", index=index)
        [call] = reply["turn"]["tool_calls"]
        assert call["sub_agent"]["run_id"] == sub_run.run_id
    store = get_store()
    assert store is not None
    run = handle.run
    stored = store.trace(run.run_id, messages=run.state.messages)
    shown = SimpleNamespace(run_id=run.run_id, children=[], store=store)
    for index, sub_run in ((0, first), (1, second)):
        _, turn = inspect.inspect_turn(stored, index, inspect.sub_runs_of(shown))  # type: ignore[arg-type]
        [call] = turn["tool_calls"]
        assert call["sub_agent"]["run_id"] == sub_run.run_id
        [answer] = call["sub_agent"]["model_calls"]
        assert answer["response_text"] == ("first answer", "second answer")[index]


async def test_a_model_call_that_ran_many_sub_agents_is_inspected_within_bounds(monkeypatch):
    """Twenty sub-agents of fifty model calls each made a 20 MB reply for one model call: the
    sub-agents' calls shown in all are bounded (their counts stay), and so is each answer."""
    import json

    from pydantic import BaseModel

    from anvia_notebook import create_tool
    from anvia_notebook.models import FunctionModel

    monkeypatch.setattr(inspect, "MAX_SUB_CALLS_IN_ALL", 30)

    class Prompt(BaseModel):
        prompt: str

    def leaf_model(request):
        done = sum(1 for m in request.messages if m.role == "assistant")
        if done < 9:
            step = ToolCall(id=f"l{done}", name="noop", arguments={"prompt": "x"})
            return ModelResponse(text="z" * 10_000, tool_calls=[step])
        return ModelResponse(text="leaf done")

    noop = create_tool(name="noop", description="n", input=Prompt, execute=lambda a, c: "ok")
    leaf = AgentBuilder("leaf", FunctionModel(leaf_model)).tools([noop]).build()
    calls = [ToolCall(id=f"s{i}", name="sub", arguments={"prompt": f"p{i}"}) for i in range(5)]
    top_model = QueueModel([ModelResponse(tool_calls=calls), "done"])
    top = AgentBuilder("top", top_model).tools([leaf.as_tool(name="sub")]).build()
    run = top.prompt("go").store(None).create_run()
    run.start()
    await run.wait()
    _, turn = inspect.inspect_turn(run.trace, 0, inspect.sub_runs_of(run))
    subs = [call["sub_agent"] for call in turn["tool_calls"]]
    assert [sub["model_call_count"] for sub in subs] == [10] * 5
    assert sum(len(sub["model_calls"]) for sub in subs) == 30
    texts = [c["response_text"] for sub in subs for c in sub["model_calls"]]
    assert max(len(text) for text in texts) <= inspect.MAX_SUB_TEXT + 200  # (with its note)
    assert len(json.dumps(turn)) < 300_000


def test_a_tool_result_nested_too_deeply_to_lay_out_is_shown_as_it_is():
    """JSON nested 5,000 levels deep in a tool's result made the whole call uninspectable."""
    from anvia_notebook.trace import ToolCallTrace, Trace

    deep = "[" * 5000 + "]" * 5000
    trace = Trace(run_id="r", agent_id="a")
    trace.tool_calls.append(ToolCallTrace(id="c1", name="tree", turn=1, args={}, result=deep))
    view = inspect._tool_call(trace.tool_calls[0], inspect._none, inspect._Budget())
    assert view["result"].startswith("[[[[")

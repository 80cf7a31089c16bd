"""The Studio against forged or odd messages from the page."""

from __future__ import annotations

import asyncio

import pytest
from notebook_helpers import Page, gated_model, until

from anvia_notebook import AgentBuilder, RunStore, Studio
from anvia_notebook.models import QueueModel

pytestmark = pytest.mark.timeout(60)


async def idle(page: Page) -> None:
    await until(lambda: (page.pump(), page.studio and not page.studio["busy"])[1], what="idle")


async def test_a_prompt_that_is_not_valid_unicode_is_refused_and_the_session_stays_stored(
    store_path, recwarn
):
    model = QueueModel(["Hello."])
    studio = Studio([AgentBuilder("support", model).build()])
    page = Page(studio.widget)
    await page.sync()
    refused = await page.request("studio_send", agent_id="support", text="where \ud800 is it")
    assert refused["ok"] is False
    assert "not valid text" in refused["error"] and "\\ud800" in refused["error"]
    assert studio.run is None and studio.history() == []  # no run started
    assert studio.send("where is it").done is False  # the next, valid prompt runs and is stored
    await idle(page)
    assert [m.content for m in studio.history()] == ["where is it", "Hello."]
    assert not [w for w in recwarn if "run store" in str(w.message)]
    store = RunStore(store_path)
    try:
        [run] = store.runs()
        assert run.status == "success"
        [session] = store.sessions(agent_id="support")
        assert session.title == "where is it"
    finally:
        store.close()
    with pytest.raises(RuntimeError, match="not valid text"):
        studio.send("\udfff")


async def test_a_message_box_text_that_is_not_valid_unicode_is_refused_and_the_run_goes_on(
    store_path, recwarn
):
    gate = asyncio.Event()
    model = gated_model(gate)
    studio = Studio([AgentBuilder("slow", model).build()])
    page = Page(studio.widget)
    await page.sync()
    assert (await page.request("studio_send", agent_id="slow", text="go"))["ok"]
    refused = await page.request("steer", text="by region \ud800")
    assert refused["ok"] is False and "not valid text" in refused["error"]
    assert not refused["error"].startswith("Internal error")
    assert (await page.request("steer", text="by region"))["ok"]
    gate.set()
    await idle(page)
    assert studio.run is not None and studio.run.state.status == "success"
    assert "by region" in [m.content for m in studio.history()]
    assert not [w for w in recwarn if "run store" in str(w.message)]
    store = RunStore(store_path)
    try:
        assert store.status(studio.run.run_id) == "success"
    finally:
        store.close()


@pytest.mark.parametrize(
    ("arguments", "error", "words"),
    [
        ({"quick_prompts": {"support": "Where is my order?"}}, TypeError, "a list of prompts"),
        ({"quick_prompts": ["Where is my order?"]}, TypeError, "maps an agent id"),
        ({"quick_prompts": {"support": ["Hi", None]}}, TypeError, "not NoneType"),
        ({"quick_prompts": {"support": ["Hi", "  "]}}, ValueError, "blank"),
        ({"timeout": "30"}, TypeError, "number of seconds"),
        ({"quick_prompts": {"support": ["Where is \ud800 my order?"]}}, ValueError, "not valid"),
    ],
    ids=["a-text-not-a-list", "a-list-not-a-dict", "none", "blank", "timeout-text", "surrogate"],
)
def test_studio_refuses_quick_prompts_and_timeouts_it_would_show_wrong(arguments, error, words):
    # (a text given as the list became one quick prompt per letter; None a prompt "None")
    agent = AgentBuilder("support", QueueModel(["Hello."])).build()
    with pytest.raises(error, match=words):
        Studio([agent], **arguments)


def test_studio_keeps_good_quick_prompts_as_given():
    agent = AgentBuilder("support", QueueModel(["Hello."])).build()
    studio = Studio([agent], quick_prompts={"support": ("Where is my order?", "Refund A1")})
    assert studio.quick_prompts == {"support": ["Where is my order?", "Refund A1"]}
    assert Studio([agent], timeout=2.5).timeout == 2.5


async def test_a_message_right_after_stop_is_refused_not_reported_sent_and_dropped():
    """Stop, then a message from the box before the run has wound down (both reach the kernel
    in one go): the message was answered "ok" and never read (the run ended cancelled). It is
    refused: the run is stopping."""
    gate = asyncio.Event()
    studio = Studio([AgentBuilder("slow", gated_model(gate)).build()])
    page = Page(studio.widget)
    await page.sync()
    assert (await page.request("studio_send", agent_id="slow", text="go"))["ok"]
    stop = page.post({"type": "stop", "reason": None})
    steer = page.post({"type": "steer", "text": "and also this"})
    assert (await page.reply_to(stop))["ok"]
    refused = await page.reply_to(steer)
    assert refused["ok"] is False and "No run in progress" in refused["error"]
    await idle(page)
    assert studio.run is not None and studio.run.state.status == "cancelled"
    assert studio.run.steer("later") is False  # and in Python, as for any run stopped


async def test_a_send_as_the_last_run_ends_waits_for_its_end_to_be_taken_in():
    """A page (or a cell) sending again as the previous run's task ends, before its end was
    taken in: refused as busy until then, so the next run sees the whole conversation and
    shows on the page (before: it started from the history before the last exchange, and its
    approval waited unseen while the page said Running)."""
    from notebook_helpers import pending_approval, refund_tool

    from anvia_notebook.models import ModelResponse, ToolCall

    gate = asyncio.Event()
    refund = ToolCall("c2", "issue_refund", {"order_id": "B", "amount": 1})
    model = QueueModel(["Hello.", ModelResponse(tool_calls=[refund]), "Refunded."])
    replay = model.stream

    async def stream(request):
        if not model.requests:
            await gate.wait()  # the first reply waits: the page sends on every loop turn
        async for event in replay(request):
            yield event

    model.stream = stream  # type: ignore[method-assign]
    studio = Studio([AgentBuilder("shop", model).tools([refund_tool()]).build()])
    page = Page(studio.widget)
    await page.sync()
    assert (await page.request("studio_send", agent_id="shop", text="hi"))["ok"]
    loop = asyncio.get_running_loop()
    posted: list[str] = []

    def accepted() -> bool:
        page.pump()
        return any(page.replies.get(request, {}).get("ok") for request in posted)

    def send_again() -> None:
        message = {"type": "studio_send", "agent_id": "shop", "text": "now refund B"}
        posted.append(page.post(message))
        if len(posted) < 20_000 and not accepted():
            loop.call_soon(send_again)

    loop.call_soon(send_again)
    gate.set()
    await until(accepted, what="a send accepted")
    waiting = await pending_approval(page)  # the second run's approval is on the page
    assert waiting["tool_name"] == "issue_refund"
    seen = [(m.role, m.content) for m in model.requests[1].messages]
    assert seen == [("user", "hi"), ("assistant", "Hello."), ("user", "now refund B")]
    studio.stop()
    await idle(page)


async def test_new_session_forgets_always_allow_with_the_agents_own_widget_human_input():
    """An agent built with its own ``WidgetHumanInput`` (a time limit): "Always allow" ticked
    in one session is not carried into the next (before: the agent's object kept the rule, so
    New session, or another ``show()``, ran the tool without asking)."""
    from notebook_helpers import pending_approval, refund_tool

    from anvia_notebook.models import ModelResponse, ToolCall
    from anvia_notebook.notebook import WidgetHumanInput

    def refund(call_id: str, order: str) -> ModelResponse:
        arguments = {"order_id": order, "amount": 1}
        return ModelResponse(tool_calls=[ToolCall(call_id, "issue_refund", arguments)])

    tool = refund_tool()
    own = WidgetHumanInput(timeout=600)
    model = QueueModel([refund("c1", "A"), "Done A.", refund("c2", "B"), "Done B."])
    agent = AgentBuilder("shop", model).tools([tool]).human_input(own).build()
    studio = Studio([agent])
    page = Page(studio.widget)
    await page.sync()
    assert (await page.request("studio_send", agent_id="shop", text="refund A"))["ok"]
    first = await pending_approval(page)
    assert (await page.approve(first["approval"]["id"], always_allow=True))["ok"]
    await idle(page)
    assert own.always_allowed == set()  # the session's copy kept the rule
    assert (await page.request("studio_new_session"))["ok"]
    assert (await page.request("studio_send", agent_id="shop", text="refund B"))["ok"]
    second = await pending_approval(page)  # asked again
    assert second["tool_call_id"] == "c2" and [c.order_id for c in tool.calls] == ["A"]
    assert studio.run is not None and studio.run.request.active_human_input.timeout == 600
    studio.stop()
    await idle(page)


def test_opening_a_session_with_runs_not_stored_says_why(monkeypatch):
    """It said "Unknown session", as if the id were wrong."""
    from anvia_notebook import set_store
    from anvia_notebook import store as store_module

    monkeypatch.setenv("ANVIA_NOTEBOOK_STORE", "")
    store_module._reset_for_tests()
    set_store(None)
    try:
        agent = AgentBuilder("support", QueueModel(["Hello."])).build()
        with pytest.raises(ValueError, match=r"runs are not stored \(set_store\(None\)\)"):
            Studio([agent], session="studio_0123456789abcdef0123")
    finally:
        store_module._reset_for_tests()

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
    ],
    ids=["a-text-not-a-list", "a-list-not-a-dict", "none", "blank", "timeout-text"],
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

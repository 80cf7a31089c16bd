"""What a saved notebook keeps of a run: once it has ended, every cell output of it is the bounded
static copy alone (no widget mimetype, so JupyterLab, Notebook 7 and VS Code show the copy rather
than "Error displaying widget: model not found" when the notebook is reopened without its
kernel); a Studio stays live, with a static copy refreshed after each run. The run id is in the
wire status, for a view whose kernel stopped to name it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from notebook_helpers import Page, finished, pending_approval, record_send, refund_tool, until

from anvia_notebook import AgentBuilder, Studio, create_hook
from anvia_notebook._util import cli_command
from anvia_notebook.models import ModelResponse, QueueModel, ToolCall
from anvia_notebook.notebook import _display
from anvia_notebook.notebook import _runner as runner
from anvia_notebook.notebook._snapshot import MAX_TOTAL
from anvia_notebook.notebook._widget import AnviaWidget

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
#: A whole copy may end past MAX_TOTAL by one entry's markup (see _snapshot.py).
SLACK = 10_000


def agent(*answers: str):
    return AgentBuilder("shop", QueueModel(list(answers))).name("Shop").build()


async def test_a_finished_runs_outputs_lose_the_widget_and_keep_the_static_copy(outputs, cell):
    handle = runner.show(agent("All done.").prompt("hello"))
    [shown] = outputs.shown()
    assert WIDGET_MIME in shown["data"]  # live while it runs
    assert handle.session.live
    data, _ = handle._repr_mimebundle_()
    assert WIDGET_MIME in data
    await finished(handle)
    [update] = outputs.updates()
    assert update["display_id"] == shown["display_id"]
    assert set(update["data"]) == {"text/plain", "text/html"}
    assert "All done." in update["data"]["text/html"]
    assert "All done." in update["data"]["text/plain"]
    assert not handle.session.live
    # the copy sits in a slot naming the widget: a page where its model lives shows a live view
    slot = f'<div class="anvia-live-slot anvia-key-{handle.widget._anvia_key} tex2jax_ignore'
    assert update["data"]["text/html"].startswith(slot)
    assert shown["data"]["text/html"].startswith(slot)


async def test_displaying_a_finished_handle_shows_only_the_static_copy(outputs, cell):
    handle = runner.show(agent("Finished answer.").prompt("hello"))
    await finished(handle)
    cell.msg_id = "cell-2"
    handle._ipython_display_()
    second = outputs.shown()[-1]
    assert second["parent"]["header"]["msg_id"] == "cell-2"
    assert set(second["data"]) == {"text/plain", "text/html"}
    assert "Finished answer." in second["data"]["text/html"]
    data, metadata = handle._repr_mimebundle_()
    assert set(data) == {"text/plain", "text/html"} and metadata == {}


async def test_the_static_copy_of_a_long_run_is_bounded(outputs):
    long_answer = "word " * 100_000  # 500 000 characters
    handle = runner.show(agent(long_answer).prompt("write a lot"))
    await finished(handle)
    data = outputs.updates()[-1]["data"]
    assert WIDGET_MIME not in data
    assert len(data["text/html"]) < MAX_TOTAL + SLACK
    assert len(data["text/plain"]) < MAX_TOTAL + SLACK
    assert "more characters" in data["text/html"]


def test_send_sync_ends_with_the_static_copy(outputs):
    response = runner.send_sync(agent("Blocking answer.").prompt("hi"))
    assert response.output == "Blocking answer."
    [shown] = outputs.shown()
    assert WIDGET_MIME in shown["data"]
    [update] = outputs.updates()
    assert update["display_id"] == shown["display_id"]
    assert set(update["data"]) == {"text/plain", "text/html"}
    assert "Blocking answer." in update["data"]["text/html"]


async def test_a_pending_run_stays_live_and_its_status_names_the_run(outputs, store_path):
    tool = refund_tool()
    model = QueueModel(
        [
            ModelResponse(
                tool_calls=[
                    ToolCall(
                        id="c1", name="issue_refund", arguments={"order_id": "A-1", "amount": 5}
                    )
                ]
            ),
            "Refunded.",
        ]
    )
    handle = runner.show(AgentBuilder("shop", model).tools([tool]).build().prompt("refund"))
    page = Page(handle.widget)
    await page.sync()
    entry = await pending_approval(page)
    assert page.state.status["run_id"] == handle.run_id
    # The copy a notebook saved now keeps says what waits and how to go on; the view stays live.
    [update] = outputs.updates()
    assert WIDGET_MIME in update["data"]
    text = update["data"]["text/plain"]
    approval_id = entry["approval"]["id"]
    assert f"Run {handle.run_id} was waiting for a decision" in text
    assert f'agent.resume("{handle.run_id}").show()' in text
    command = f"{cli_command(str(store_path))} approve {handle.run_id} {approval_id}"
    assert command in text  # as written in a terminal, wherever it is opened
    assert approval_id in update["data"]["text/html"]
    assert WIDGET_MIME in handle._repr_mimebundle_()[0]
    assert (await page.approve(entry["approval"]["id"]))["ok"]
    await finished(handle)
    assert WIDGET_MIME not in outputs.updates()[-1]["data"]


async def test_a_studio_stays_live_with_a_static_copy_refreshed_after_each_run(outputs):
    studio = Studio([agent("First answer.", "Second answer.")])
    studio.start()
    [shown] = outputs.shown()
    assert WIDGET_MIME in shown["data"]
    page = Page(studio.widget)
    await page.sync()
    assert "run_id" not in page.state.status  # no run yet
    first = studio.send("first question")
    await first.wait()
    await until(lambda: outputs.updates(), what="the refreshed copy")
    update = outputs.updates()[-1]
    assert update["display_id"] == shown["display_id"]
    assert WIDGET_MIME in update["data"]  # the Studio stays live
    assert update["data"][WIDGET_MIME]["model_id"] == studio.widget.model_id
    assert "First answer." in update["data"]["text/html"]
    page.pump()
    assert page.state.status["run_id"] == first.run_id
    second = studio.send("second question")
    await second.wait()
    await until(lambda: len(outputs.updates()) >= 2, what="a second refresh")
    assert "Second answer." in outputs.updates()[-1]["data"]["text/html"]
    page.pump()
    assert page.state.status["run_id"] == second.run_id
    studio.new_session()
    await asyncio.sleep(0)
    page.pump()
    assert "run_id" not in page.state.status  # a new session has no run yet


async def test_a_studios_copy_holds_the_reply_before_the_page_hears_the_run_ended(
    outputs, monkeypatch
):
    """The page applies a cell's display update when it gets it, in the order the kernel sent
    its messages, and each update redraws the Studio's live view (a key typed meanwhile can be
    lost): a reply makes one update, with the reply and the run's end, sent before the batch that
    says the run is done and before the Studio says it is free. A notebook saved as soon as the
    page shows the reply as done keeps it."""
    timeline: list[tuple[str, Any]] = []
    publish = _display.publish

    def publish_in_order(data: dict[str, Any], metadata: Any = None, **kwargs: Any) -> None:
        publish(data, metadata, **kwargs)
        if kwargs.get("update"):
            timeline.append(("copy", data["text/html"]))

    def send_in_order(widget: AnviaWidget, content: Any, buffers: Any = None) -> None:
        record_send(widget, content, buffers)
        timeline.append(("page", content))

    monkeypatch.setattr(_display, "publish", publish_in_order)
    monkeypatch.setattr(AnviaWidget, "send", send_in_order)
    studio = Studio([agent("Hello from the Studio.")])
    studio.start()
    await Page(studio.widget).sync()
    sent_before = len(timeline)
    run = studio.send("Hi there")
    await run.wait()
    after = timeline[sent_before:]

    def free() -> bool:
        return any(k == "page" and m["type"] == "studio" and not m["busy"] for k, m in after)

    await until(free, what="the Studio free again")
    ended, free_at, copies = None, None, []
    for i, (kind, message) in enumerate(after):
        if kind == "copy":
            copies.append(i)
            continue
        for op in message.get("ops", []) if message["type"] == "batch" else []:
            if op["op"] == "status" and op["status"]["state"] == "success" and ended is None:
                ended = i
        if message["type"] == "studio" and not message["busy"] and free_at is None:
            free_at = i
    assert ended is not None and free_at is not None, after
    assert len(copies) == 1, [after[i][1] for i in copies]  # one redraw for the reply
    [copy] = copies
    assert "Hello from the Studio." in after[copy][1] and "Done" in after[copy][1]
    assert copy < ended < free_at  # the copy first, then the page hears, then it is free


async def test_a_studios_copy_holds_a_turns_text_while_the_run_is_still_ending(outputs):
    """A run whose end comes long after its reply (an ``on_run_end`` hook that waits): the saved
    copy holds the reply within a moment, the run still running, and then its end."""
    ending = asyncio.Event()

    async def slow_end(_event: Any) -> None:
        await ending.wait()

    slow = (
        AgentBuilder("shop", QueueModel(["Hello while ending."]))
        .name("Shop")
        .hook(create_hook(on_run_end=slow_end))
        .build()
    )
    studio = Studio([slow])
    studio.start()
    await Page(studio.widget).sync()
    run = studio.send("Hi there")

    def copy_with_reply() -> str | None:
        for update in outputs.updates():
            if "Hello while ending." in update["data"]["text/html"]:
                return update["data"]["text/html"]
        return None

    copy = await until(copy_with_reply, what="the copy with the reply")
    assert "Running" in copy and not run.done
    ending.set()
    await run.wait()
    await until(lambda: "Done" in outputs.updates()[-1]["data"]["text/html"], what="the end")
    assert "Hello while ending." in outputs.updates()[-1]["data"]["text/html"]


@pytest.mark.timeout(180)
def test_a_notebook_run_headless_saves_the_bounded_static_copy_alone(monkeypatch, tmp_path):
    """nbclient (as tests/test_notebooks.py runs the tutorials): the saved output of a finished
    run is the static copy, bounded, with no widget to look for."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    from kernel_client import ROOT

    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.setenv("ANVIA_NOTEBOOK_STORE", str(tmp_path / "runs.sqlite"))
    cells = [
        "from anvia_notebook import AgentBuilder\n"
        "from anvia_notebook.models import QueueModel\n"
        "agent = AgentBuilder('shop', QueueModel(['short answer', 'long ' * 100_000])).build()",
        "handle = agent.prompt('first').show()",
        "await handle\nlong = agent.prompt('second').show()",
        "r = await long\nlen(r.output)",
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nbclient.NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    path = tmp_path / "saved.ipynb"
    nbformat.write(nb, path)
    saved = nbformat.read(path, as_version=4)
    [short] = saved.cells[1].outputs
    [long] = saved.cells[2].outputs
    for output in (short, long):
        assert output.output_type == "display_data"
        assert WIDGET_MIME not in output.data
        assert 'class="anvia-static-transcript"' in output.data["text/html"]
        assert len(output.data["text/html"]) < MAX_TOTAL + SLACK
    assert "short answer" in short.data["text/html"] and "Done" in short.data["text/plain"]
    assert "more characters" in long.data["text/html"]
    assert saved.cells[3].outputs[0].data["text/plain"] == "500000"


async def test_the_static_copy_follows_the_last_batch_after_a_pause_unless_awaited(outputs):
    """A page draws the run's last text before the cell's output is updated to the static copy
    (its update makes the page draw the output again); awaiting the handle updates it at once."""
    handle = runner.show(agent("All done.").prompt("hello"))
    page = Page(handle.widget)
    await page.sync()
    await handle.run.wait()
    for _ in range(3):
        await asyncio.sleep(0)  # the run's end callbacks
    page.pump()
    assert page.state.status is not None and page.state.status["state"] == "success"
    assert page.state.entries[-1]["text"] == "All done."  # the page has the end ...
    assert outputs.updates() == []  # ... and its cell's output is not redrawn yet
    await until(lambda: outputs.updates(), timeout=5, what="the static copy")
    [update] = outputs.updates()
    assert "All done." in update["data"]["text/html"]

    awaited = runner.show(agent("Awaited.").prompt("hello"))
    await awaited
    assert [u for u in outputs.updates() if "Awaited." in u["data"]["text/html"]]


async def test_a_run_awaited_before_its_end_is_handled_gets_its_static_copy_at_once(
    outputs, cell, monkeypatch
):
    """``await handle`` can resume before the run's done listeners schedule the copy: the copy is
    then written as soon as it is scheduled, not a timer later."""
    handle = runner.show(agent("Done.").prompt("hello"))
    await finished(handle)
    before = len(outputs.updates())
    # (a copy that has changed since the last one: an unchanged copy is not sent again)
    copy = {"text/html": "<p>Done, later.</p>", "text/plain": "Done, later."}
    monkeypatch.setattr(handle.session, "bundle", lambda: (copy, {}))
    handle.session.refresh_pending()  # as when the wait resumed first
    handle.session.refresh_displays_later(asyncio.get_running_loop(), 60.0)
    assert len(outputs.updates()) == before + 1
    assert outputs.updates()[-1]["data"] == copy

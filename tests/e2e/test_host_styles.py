"""The host page's styles do not reach the widget, in a real Chromium.

Notebook pages style bare elements (the classic notebook's Bootstrap, a notebook's own
``<style>``, extensions): ``button { float: right }``, ``pre { border: ... }``, ``div {
line-height: 3 }``. The widget is drawn on a page with such rules and on a page without, and
every computed style of every element of the widget must be the same. (The page holds only the
built widget on a stand-in model: no JupyterLab is needed for this.)
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
STATIC = REPO / "anvia_notebook" / "static"
FIXTURES = REPO / "tests" / "fixtures" / "protocol"

MARKDOWN = (
    "# Title\n\nSome *text* with `code` and a [link](https://example.com).\n\n- one\n- two\n\n"
    "1. first\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```\npre block\n```\n\n> quote\n\n---\n"
)

#: Rules a host page may have, on bare elements and "class + element".
HOST = """
body { font-family: serif; }
p { margin: 0 0 40px; text-indent: 3em; }
h1, h2, h3 { color: rgb(0, 0, 128); margin: 50px 0; font-family: fantasy; }
ul, ol { padding-left: 100px; list-style: square; }
li { float: left; margin-right: 20px; }
table { width: 100%; border: 5px solid red; border-collapse: separate; }
th, td { padding: 20px; background: yellow; text-align: right; }
pre { padding: 30px; background: rgb(0, 255, 0); border: 4px dashed blue; white-space: pre-wrap; }
code { color: rgb(199, 37, 78); background: pink; padding: 10px; }
button { float: right; width: 300px; text-transform: uppercase; border-radius: 20px; }
input, textarea, select { width: 50%; border: 6px solid purple; font-family: monospace; }
label { display: block; font-weight: 900; margin-bottom: 30px; }
blockquote { margin: 60px; border-left: 20px solid black; }
summary { display: block; color: red; }
details { border: 3px solid green; }
span { letter-spacing: 5px; }
div { line-height: 3; }
a { text-decoration: none; color: red; }
hr { height: 30px; }
dl { display: grid; } dt { float: left; width: 30%; } dd { margin-left: 40%; }
.jp-OutputArea-output pre { margin: 40px; }
.jp-OutputArea-output button { padding: 25px; }
"""

DRAW = """
async ([bundle, snapshot]) => {
  const url = URL.createObjectURL(new Blob([bundle], { type: "text/javascript" }));
  const widget = (await import(url)).default;
  class Model {
    constructor(attrs) { this.attrs = attrs; this.handlers = new Map(); }
    get(name) { return this.attrs[name]; }
    send() {}
    on(event, cb) {
      if (!this.handlers.has(event)) this.handlers.set(event, new Set());
      this.handlers.get(event).add(cb);
    }
    off(event, cb) { if (cb) this.handlers.get(event)?.delete(cb); else this.handlers.delete(event); }
    deliver(msg) { for (const cb of this.handlers.get("msg:custom") ?? []) cb(msg, []); }
  }
  const model = new Model({ mode: "transcript", title: "Host styles", _anvia_key: "k" });
  widget.initialize({ model });
  model.deliver(snapshot);
  const output = document.createElement("div");
  output.className = "jp-OutputArea-output";
  document.body.appendChild(output);
  const el = document.createElement("div");
  output.appendChild(el);
  widget.render({ model, el });
  await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
  for (const d of el.querySelectorAll("details")) d.open = true;
  await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
  const names = Array.from(getComputedStyle(document.body)).filter((p) => !p.startsWith("--"));
  return Array.from(el.querySelectorAll("*"), (n) => {
    const style = getComputedStyle(n);
    return [`${n.tagName.toLowerCase()}.${n.getAttribute("class") ?? ""}`,
            Object.fromEntries(names.map((p) => [p, style.getPropertyValue(p)]))];
  });
}
"""


def snapshot() -> dict[str, Any]:
    """Every kind of entry (tools with an approval and a question among them), markdown too."""
    message = copy.deepcopy(json.loads((FIXTURES / "snapshot_all_entry_kinds.json").read_text()))
    if isinstance(message, list):
        message = message[0]
    entries = message["transcript"]["entries"]
    for entry in entries:
        if entry["kind"] == "assistant":
            entry["text"] = MARKDOWN
    [asked] = [e for e in entries if e["kind"] == "tool" and e["question"]]
    answered = copy.deepcopy(asked)  # the same questions, answered: their summary is a term list
    answered["id"], answered["tool_call_id"], answered["status"] = "t9", "call_t9", "done"
    answered["result"] = '{"answers": []}'
    answered["question"]["id"], answered["question"]["status"] = "q_9", "answered"
    answered["question"]["answers"] = [
        {
            "questionId": q["id"],
            "answer": q["choices"][0]["value"],
            "choice": q["choices"][0]["value"],
            "label": q["choices"][0]["label"],
        }
        for q in answered["question"]["questions"]
    ]
    entries.append(answered)
    return message


def draw(browser: Browser, host_css: str) -> list[tuple[str, dict[str, str]]]:
    bundle = (STATIC / "widget.js").read_text(encoding="utf-8")
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    try:
        page.set_content("<!doctype html><html><head></head><body></body></html>")
        if host_css:
            page.add_style_tag(content=host_css)
        page.add_style_tag(content=(STATIC / "widget.css").read_text(encoding="utf-8"))
        return [tuple(item) for item in page.evaluate(DRAW, [bundle, snapshot()])]
    finally:
        page.close()


def test_host_page_styles_change_nothing_in_the_widget(browser: Browser) -> None:
    plain = draw(browser, "")
    hosted = draw(browser, HOST)
    tags = {name.split(".")[0] for name, _ in plain}
    # The drawing has what the host rules aim at: controls, markdown, term lists.
    assert {
        "button",
        "textarea",
        "input",
        "pre",
        "code",
        "table",
        "li",
        "p",
        "h1",
        "summary",
        "details",
        "span",
        "blockquote",
        "a",
        "dl",
        "dt",
        "dd",
    } <= tags, sorted(tags)
    assert [name for name, _ in hosted] == [name for name, _ in plain]
    changed = [
        (name, prop, before[prop], after[prop])
        for (name, before), (_, after) in zip(plain, hosted, strict=True)
        for prop in before
        if before[prop] != after[prop]
    ]
    assert changed == [], changed[:20]

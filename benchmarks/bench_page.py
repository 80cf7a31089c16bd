"""Page side of the browser benchmarks: what runs in Chromium, and the websocket frame log.

- :data:`INIT_SCRIPT` runs in the page before JupyterLab: it records long tasks
  (``PerformanceObserver`` ``longtask``), tagged clicks, and offers watchers that stamp the
  moment a text appears in a cell's output (``MutationObserver``, then the next animation frame).
  Page times are epoch milliseconds: ``performance.timeOrigin + performance.now()``.
- :class:`FrameLog` counts the frames of the kernel websockets from Playwright's
  ``page.on("websocket")`` / ``ws.on("framereceived")`` events, decoding the Jupyter
  ``v1.kernel.websocket.jupyter.org`` framing enough to tell channels and message types apart.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from playwright.sync_api import CDPSession, Page, WebSocket

INIT_SCRIPT = """
(() => {
  if (window.__bench) return;
  const now = () => performance.timeOrigin + performance.now();
  const bench = { longtasks: [], clicks: {}, tag: null, watches: {}, now };
  window.__bench = bench;
  try {
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) {
        bench.longtasks.push([performance.timeOrigin + e.startTime, e.duration]);
      }
    }).observe({ type: "longtask", buffered: true });
  } catch (err) {
    bench.longtaskError = String(err);
  }
  window.addEventListener("click", () => {
    if (bench.tag === null) return;
    (bench.clicks[bench.tag] = bench.clicks[bench.tag] || []).push(now());
    bench.tag = null;
  }, true);
  // The output area of cell `index` of the open notebook.
  bench.outputArea = (index) => {
    const e2e = window.__anviaE2E;
    const panel = e2e && e2e.panel(e2e.current);
    if (!panel) throw new Error("no notebook open");
    const cell = panel.content.widgets[index];
    if (!cell) throw new Error(`no cell ${index}`);
    return cell.node.querySelector(".jp-OutputArea");
  };
  // Stamp when `marker` appears in the output of cell `index` (tDom), then the next frame (tFrame).
  bench.watchText = (key, index, marker) => {
    const area = bench.outputArea(index);
    const rec = { found: false, tDom: null, tFrame: null, tStart: now() };
    bench.watches[key] = rec;
    let obs = null;
    const check = () => {
      if (rec.found || !area.textContent.includes(marker)) return;
      rec.found = true;
      rec.tDom = now();
      if (obs) obs.disconnect();
      requestAnimationFrame(() => { rec.tFrame = now(); });
    };
    obs = new MutationObserver(check);
    obs.observe(area, { subtree: true, childList: true, characterData: true });
    check();
  };
  // Stamp when the output of cell `index` holds at least `count` elements matching `selector`
  // (and, with `none`, no element matching `none`).
  bench.watchCount = (key, index, selector, count, none) => {
    const area = bench.outputArea(index);
    const rec = { found: false, tDom: null, tFrame: null, tStart: now(), seen: 0 };
    bench.watches[key] = rec;
    let obs = null;
    const check = () => {
      if (rec.found) return;
      rec.seen = area.querySelectorAll(selector).length;
      if (rec.seen < count) return;
      if (none && area.querySelector(none)) return;
      rec.found = true;
      rec.tDom = now();
      if (obs) obs.disconnect();
      requestAnimationFrame(() => { rec.tFrame = now(); });
    };
    obs = new MutationObserver(check);
    obs.observe(area, { subtree: true, childList: true, attributes: !!none });
    check();
  };
})();
"""


def page_now(page: Page) -> float:
    """The page's clock, epoch milliseconds."""
    return float(page.evaluate("() => window.__bench.now()"))


def longest_task(page: Page, start_ms: float, end_ms: float) -> float:
    """The longest long task (>= 50 ms) that started in [start_ms, end_ms]; 0.0 when none."""
    return float(
        page.evaluate(
            """([a, b]) => window.__bench.longtasks
                 .filter(([t]) => t >= a && t <= b)
                 .reduce((m, [, d]) => Math.max(m, d), 0)""",
            [start_ms, end_ms],
        )
    )


def heap_used(cdp: CDPSession, *, collect: bool = True) -> int:
    """The page's JS heap in use (CDP ``Performance.getMetrics`` ``JSHeapUsedSize``), bytes."""
    if collect:
        cdp.send("HeapProfiler.collectGarbage")
    metrics = cdp.send("Performance.getMetrics")["metrics"]
    return int(next(m["value"] for m in metrics if m["name"] == "JSHeapUsedSize"))


# --------------------------------------------------------------------------------------------
# Websocket frames
# --------------------------------------------------------------------------------------------


@dataclass
class Frame:
    """One websocket frame of a kernel connection."""

    received: bool
    size: int
    channel: str
    msg_type: str
    #: For comm messages: the anywidget custom message's ``type``, or the comm method.
    detail: str = ""
    rate_exceeded: bool = False
    at: float = 0.0


def _v1_parts(payload: bytes) -> tuple[str, list[bytes]]:
    count = int.from_bytes(payload[:8], "little")
    offsets = [int.from_bytes(payload[8 * (i + 1) : 8 * (i + 2)], "little") for i in range(count)]
    channel = payload[offsets[0] : offsets[1]].decode()
    return channel, [payload[offsets[i] : offsets[i + 1]] for i in range(1, count - 1)]


def parse_frame(payload: str | bytes, received: bool) -> Frame:
    """Channel, message type and a little content of one kernel websocket frame."""
    size = len(payload.encode() if isinstance(payload, str) else payload)
    try:
        if isinstance(payload, bytes):
            channel, parts = _v1_parts(payload)
            header = json.loads(parts[0])
            msg_type = header.get("msg_type", "")

            def content() -> Any:
                return json.loads(parts[3])
        else:
            message = json.loads(payload)
            channel = message.get("channel", "")
            msg_type = message.get("header", {}).get("msg_type", "")

            def content() -> Any:
                return message.get("content", {})
    except (ValueError, IndexError, KeyError, UnicodeDecodeError):
        return Frame(received, size, "?", "?")
    frame = Frame(received, size, channel, msg_type)
    if msg_type == "stream":
        frame.rate_exceeded = "rate exceeded" in str(content().get("text", ""))
    elif msg_type == "comm_msg" and size < 4096:
        data = content().get("data", {})
        if data.get("method") == "custom" and isinstance(data.get("content"), dict):
            frame.detail = str(data["content"].get("type", "custom"))
        else:
            frame.detail = str(data.get("method", ""))
    return frame


@dataclass
class FrameLog:
    """Every frame of the page's kernel websockets, in the order Chromium saw them."""

    frames: list[Frame] = field(default_factory=list)

    def attach(self, page: Page) -> None:
        page.on("websocket", self._on_websocket)

    def _on_websocket(self, ws: WebSocket) -> None:
        if "/api/kernels/" not in ws.url or "/channels" not in ws.url:
            return
        ws.on("framereceived", lambda payload: self._add(payload, True))
        ws.on("framesent", lambda payload: self._add(payload, False))

    def _add(self, payload: str | bytes, received: bool) -> None:
        frame = parse_frame(payload, received)
        frame.at = time.monotonic()
        self.frames.append(frame)

    def mark(self) -> int:
        return len(self.frames)

    def first_sent(self, start: int, details: tuple[str, ...]) -> int | None:
        """Index of the first frame sent by the page from ``start`` on with one of ``details``."""
        for index in range(start, len(self.frames)):
            frame = self.frames[index]
            if not frame.received and frame.detail in details:
                return index
        return None

    def last_received_at(self) -> float:
        for frame in reversed(self.frames):
            if frame.received:
                return frame.at
        return 0.0


@dataclass
class FrameStats:
    frames: int = 0
    bytes: int = 0
    iopub: int = 0
    rate_exceeded: bool = False
    by_type: dict[str, list[int]] = field(default_factory=dict)
    syncs: int = 0

    @classmethod
    def of(cls, frames: list[Frame]) -> FrameStats:
        stats = cls()
        for frame in frames:
            if not frame.received:
                if frame.detail == "sync":
                    stats.syncs += 1
                continue
            stats.frames += 1
            stats.bytes += frame.size
            stats.iopub += frame.channel == "iopub"
            stats.rate_exceeded |= frame.rate_exceeded
            entry = stats.by_type.setdefault(frame.msg_type, [0, 0])
            entry[0] += 1
            entry[1] += frame.size
        return stats

import { afterEach, describe, expect, it } from "vitest";
import { mount, toolEntry } from "./helpers";

const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNg+M8AAAMBAQB+H/XWAAAAAElFTkSuQmCC";

let cleanup: (() => void) | null = null;
afterEach(() => {
  cleanup?.();
  cleanup = null;
});

describe("a tool's images (an MCP tool's)", () => {
  it("are shown under the result, as images of their data", () => {
    const m = mount([
      toolEntry("t1", { tool_name: "picture", status: "done", result: "a red dot", images: [{ media_type: "image/png", data: PNG }] }),
    ]);
    cleanup = m.cleanup;
    const imgs = [...m.root.querySelectorAll<HTMLImageElement>("img.anvia-tool-image")];
    expect(imgs.map((i) => i.getAttribute("src"))).toEqual([`data:image/png;base64,${PNG}`]);
    expect(imgs[0]!.alt).toBe("Image from picture (image/png)");
    expect((m.root.querySelector(".anvia-section-images") as HTMLElement).hidden).toBe(false);
  });

  it("leave out SVG and data that is not base64, and hide the section without images", () => {
    const m = mount([
      toolEntry("t1", {
        status: "done",
        result: "x",
        images: [
          { media_type: "image/svg+xml", data: PNG },
          { media_type: "image/png", data: 'x" onerror="alert(1)' },
        ],
      }),
      toolEntry("t2", { status: "done", result: "y" }),
    ]);
    cleanup = m.cleanup;
    expect(m.root.querySelectorAll("img").length).toBe(0);
    const sections = [...m.root.querySelectorAll<HTMLElement>(".anvia-section-images")];
    expect(sections.map((s) => s.hidden)).toEqual([true, true]);
  });
});

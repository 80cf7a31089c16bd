import { describe, expect, it } from "vitest";
import { prettyJson, showOverrides } from "../src/views/fold";

describe("prettyJson", () => {
  it("lays JSON out as JSON.stringify(value, null, 2) does", () => {
    const values: unknown[] = [
      {},
      [],
      { a: 1, b: [1, 2.5, -3e-7, true, false, null], c: { d: {}, e: [] } },
      [{ "k\"ey": "va\\lue\n\u00e9 東京 🎉" }, [[[]]], -0, 1e21, 0.1],
      { nested: [{ x: [{ y: "}]{[,:" }] }] },
    ];
    for (const value of values) {
      const compact = JSON.stringify(value);
      expect(prettyJson(compact)).toBe(JSON.stringify(value, null, 2));
      expect(prettyJson(JSON.stringify(value, null, 7))).toBe(JSON.stringify(value, null, 2));
    }
    expect(prettyJson('{"name": "caf\\u00e9", "n": 1.0, "m": 1E2}')).toBe('{\n  "name": "café",\n  "n": 1,\n  "m": 100\n}');
  });

  it("keeps a whole number past 2**53 as written (JavaScript's numbers round it)", () => {
    expect(prettyJson('{"order_id": 9007199254740993, "ids": [-12345678901234567890, 2]}')).toBe(
      '{\n  "order_id": 9007199254740993,\n  "ids": [\n    -12345678901234567890,\n    2\n  ]\n}',
    );
  });

  it("leaves text that is not a JSON object or list as it is", () => {
    for (const text of ["plain words", '{"unclosed": 1', "42", '"a string"', "{not json}"]) expect(prettyJson(text)).toBe(text);
  });
});

describe("showOverrides", () => {
  it("writes direction overrides as escapes, and leaves right-to-left prose and its marks alone", () => {
    expect(showOverrides("Delete \u202etxt.exe\u202c now")).toBe("Delete \\u202etxt.exe\\u202c now");
    expect(showOverrides("\u2067abc\u2069")).toBe("\\u2067abc\\u2069");
    const hebrew = "\u05e9\u05dc\u05d5\u05dd\u200f world";
    expect(showOverrides(hebrew)).toBe(hebrew);
  });
});

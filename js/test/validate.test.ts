// The schema reader of validate.ts on small schemas of the shapes pydantic writes.
import { describe, expect, it } from "vitest";
import { type Schema, schemaCheck } from "../src/validate";

const DEFS: Record<string, Schema> = {
  Value: {
    anyOf: [
      { type: "null" },
      { type: "number" },
      { type: "array", items: { $ref: "#/$defs/Value" } },
      { type: "object", additionalProperties: { $ref: "#/$defs/Value" } },
    ],
  },
  Ping: {
    type: "object",
    properties: { type: { const: "ping", type: "string" }, id: { minLength: 1, type: "string" }, n: { minimum: 0, type: "integer" } },
    required: ["type", "id"],
  },
  Fixed: { type: "object", properties: { a: { type: "boolean" } }, additionalProperties: false },
  Msg: { oneOf: [{ $ref: "#/$defs/Ping" }], discriminator: { propertyName: "type", mapping: { ping: "#/$defs/Ping" } } },
};
const check = (name: string) => schemaCheck(DEFS, { $ref: `#/$defs/${name}` });

describe("schemaCheck", () => {
  it("follows references, also into themselves", () => {
    expect(check("Value")({ a: [1, null, { b: [2] }] })).toBeNull();
    expect(check("Value")({ a: [1, { b: ["x"] }] })).not.toBeNull();
    expect(check("Value")(Number.NaN)).not.toBeNull();
  });
  it("names the path of the first problem, in the branch that got furthest", () => {
    expect(check("Value")({ a: [1, { b: [true] }] })).toBe("$.a[1].b[0]: expected null");
    expect(check("Msg")({ type: "ping", id: "" })).toBe("$.id: expected at least 1 character(s)");
    expect(check("Msg")({ type: "ping", id: "x", n: -1 })).toBe("$.n: expected a number >= 0");
    expect(check("Msg")({ type: "ping", id: "x", n: 1.5 })).toBe("$.n: expected an integer");
  });
  it("picks a union's member by its tag", () => {
    expect(check("Msg")({ type: "pong" })).toBe('$.type: unknown type "pong"');
    expect(check("Msg")([])).toBe("$: expected an object");
    expect(check("Msg")({ type: "ping" })).toBe("$.id: missing");
  });
  it("ignores unknown keys unless the schema forbids them; an undefined listed key is absent", () => {
    expect(check("Msg")({ type: "ping", id: "x", extra: 1, n: undefined })).toBeNull();
    expect(check("Fixed")({ a: true })).toBeNull();
    expect(check("Fixed")({ a: true, b: 1 })).toBe("$.b: not a field here");
    expect(check("Fixed")({ a: "yes" })).toBe("$.a: expected a boolean");
  });
});

describe("the protocol's schema", () => {
  // The reader ignores keywords it does not know, so a model that starts writing one (say
  // `maxLength` or a `oneOf` without a tag) would be accepted unchecked: fail here instead.
  const READ = new Set(["$ref", "anyOf", "oneOf", "discriminator", "type", "const", "enum", "minLength", "minimum", "properties", "required", "items", "additionalProperties"]);
  const SAY_NOTHING = new Set(["$schema", "$defs", "title", "description", "default"]);

  function keywords(node: unknown, found: Set<string>, untagged: string[], at: string): void {
    if (Array.isArray(node)) return node.forEach((n, i) => keywords(n, found, untagged, `${at}[${i}]`));
    if (typeof node !== "object" || node === null) return;
    const schema = node as Record<string, unknown>;
    if (schema.oneOf && !schema.discriminator) untagged.push(at);
    for (const [key, value] of Object.entries(schema)) {
      found.add(key);
      if (key === "properties" || key === "$defs") {
        for (const [name, sub] of Object.entries(value as object)) keywords(sub, found, untagged, `${at}.${name}`);
      } else if (key !== "discriminator" && key !== "const" && key !== "enum" && key !== "default") {
        keywords(value, found, untagged, `${at}.${key}`);
      }
    }
  }

  it("uses only keywords the reader reads or that say nothing about validity", async () => {
    const schema = (await import("../src/generated/wire-schema.json")).default;
    const found = new Set<string>();
    const untagged: string[] = [];
    keywords(schema, found, untagged, "$");
    expect([...found].filter((k) => !READ.has(k) && !SAY_NOTHING.has(k))).toEqual([]);
    expect(untagged).toEqual([]);
  });
});

// The generated wire types are current: json-schema-to-typescript, run on the committed
// wire-schema.json, gives the committed src/generated/wire.ts (else: `npm run gen:wire`).
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { OUTPUT, SCHEMA, wireTypes } from "../gen-wire.mjs";

describe("generated wire types", () => {
  it("src/generated/wire.ts is what `npm run gen:wire` makes of wire-schema.json", async () => {
    const generated = await wireTypes(readFileSync(SCHEMA, "utf8"));
    const committed = readFileSync(OUTPUT, "utf8");
    expect(committed, "src/generated/wire.ts is out of date: run `npm run gen:wire` in js/").toBe(generated);
  }, 30_000);

  it("names every model and union of the schema", () => {
    const schema = JSON.parse(readFileSync(SCHEMA, "utf8")) as { $defs: Record<string, unknown> };
    const committed = readFileSync(OUTPUT, "utf8");
    const names = Object.keys(schema.$defs);
    expect(names).toEqual(expect.arrayContaining(["KernelMessage", "InboundMessage", "Entry", "Op", "JsonValue"]));
    for (const name of names) expect(committed).toMatch(new RegExp(`^export (type|interface) ${name}\\b`, "m"));
  });
});

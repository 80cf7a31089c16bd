// Generate the page's wire-protocol types (src/generated/wire.ts) from the JSON Schema of the
// kernel's pydantic models (src/generated/wire-schema.json, written by scripts/wire_schema.py).
//   node gen-wire.mjs          write src/generated/wire.ts (`npm run gen:wire`; build.mjs runs it first)
//   node gen-wire.mjs --check  exit 1 if src/generated/wire.ts is not what the schema gives
import { readFile, writeFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { dirname, resolve } from "node:path";
import { compile } from "json-schema-to-typescript";

const here = dirname(fileURLToPath(import.meta.url));
export const SCHEMA = resolve(here, "src/generated/wire-schema.json");
export const OUTPUT = resolve(here, "src/generated/wire.ts");

const BANNER = `// The widget wire protocol's types, generated from the kernel's pydantic models
// (anvia_notebook/notebook/_protocol.py) by way of src/generated/wire-schema.json: do not edit.
// Regenerate: \`python scripts/wire_schema.py\` at the repository root, then \`npm run gen:wire\` in js/.`;

/** The TypeScript text for a schema document (the text of wire-schema.json). */
export async function wireTypes(schemaText) {
  const schema = JSON.parse(schemaText);
  return compile(schema, schema.title, {
    bannerComment: BANNER,
    // Keys a model does not list are ignored on the wire, not typed: no `[k: string]: unknown`.
    additionalProperties: false,
    // Every model and union under $defs gets its own exported type, by its name.
    unreachableDefinitions: true,
    unknownAny: true,
    enableConstEnums: false,
    format: true,
  });
}

/** Write OUTPUT from SCHEMA; returns whether it changed. */
export async function writeWireTypes() {
  const text = await wireTypes(await readFile(SCHEMA, "utf8"));
  const old = await readFile(OUTPUT, "utf8").catch(() => null);
  if (old === text) return false;
  await writeFile(OUTPUT, text);
  return true;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  if (process.argv.includes("--check")) {
    const want = await wireTypes(await readFile(SCHEMA, "utf8"));
    const have = await readFile(OUTPUT, "utf8").catch(() => null);
    if (want !== have) {
      console.error("src/generated/wire.ts is out of date with wire-schema.json: run `npm run gen:wire`.");
      process.exit(1);
    }
  } else {
    const changed = await writeWireTypes();
    console.log(`src/generated/wire.ts ${changed ? "written" : "up to date"}`);
  }
}

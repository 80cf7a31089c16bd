// Bundle the widget for anywidget: one ESM file with every dependency inlined, plus its CSS.
// Output: ../anvia_notebook/static/widget.js and ../anvia_notebook/static/widget.css
// First regenerates src/generated/wire.ts from the wire schema (`npm run gen:wire`), so the
// bundle is always built on the protocol's current types.
import { build } from "esbuild";
import { fileURLToPath } from "node:url";
import { dirname, resolve } from "node:path";
import { writeWireTypes } from "./gen-wire.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const outdir = resolve(here, "../anvia_notebook/static");
const minify = !process.argv.includes("--dev");

if (await writeWireTypes()) console.log("src/generated/wire.ts regenerated from wire-schema.json");

await build({
  entryPoints: [resolve(here, "src/widget.ts")],
  outfile: resolve(outdir, "widget.js"),
  bundle: true,
  format: "esm",
  platform: "browser",
  target: ["es2020"],
  minify,
  sourcemap: false,
  legalComments: "eof",
  logLevel: "info",
});

await build({
  entryPoints: [resolve(here, "src/views/styles.css")],
  outfile: resolve(outdir, "widget.css"),
  bundle: true,
  minify,
  logLevel: "info",
});

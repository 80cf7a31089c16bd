// Bundle the widget for anywidget: one ESM file with every dependency inlined, plus its CSS.
// Output: ../anvia_notebook/static/widget.js and ../anvia_notebook/static/widget.css
import { build } from "esbuild";
import { fileURLToPath } from "node:url";
import { dirname, resolve } from "node:path";

const here = dirname(fileURLToPath(import.meta.url));
const outdir = resolve(here, "../anvia_notebook/static");
const minify = !process.argv.includes("--dev");

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

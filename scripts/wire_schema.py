"""Write the JSON Schema of the widget wire protocol to js/src/generated/wire-schema.json.

Run at the repository root after changing a model in anvia_notebook/notebook/_protocol.py,
then ``npm run gen:wire`` in js/ (``npm run build`` runs it too) to regenerate the page's
TypeScript types from it:

    python scripts/wire_schema.py && (cd js && npm run gen:wire)

``--check`` writes nothing and exits 1 when the committed file is out of date.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from anvia_notebook.notebook._wire_schema import wire_schema_text

OUTPUT = Path(__file__).resolve().parents[1] / "js" / "src" / "generated" / "wire-schema.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the file is out of date")
    args = parser.parse_args(argv)
    text = wire_schema_text()
    current = OUTPUT.read_text(encoding="utf-8") if OUTPUT.exists() else None
    if args.check:
        if current != text:
            print(
                f"{OUTPUT.name} is out of date: run python scripts/wire_schema.py",
                file=sys.stderr,
            )
            return 1
        return 0
    if current != text:
        OUTPUT.write_text(text, encoding="utf-8")
        print(f"wrote {OUTPUT.relative_to(OUTPUT.parents[3])}")
    else:
        print(f"{OUTPUT.relative_to(OUTPUT.parents[3])} is up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())

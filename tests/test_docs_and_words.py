"""What a notebook user reads: no internal words, and every relative link in the docs resolves.

The words are checked where a user meets them: the package's string literals (messages,
docstrings shown by ``help()``), the widget's TypeScript sources, the README, docs/ and the
tutorial notebooks (cell sources and the outputs saved with them).
"""

from __future__ import annotations

import ast
import json
import pathlib
import re
from collections.abc import Iterator
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent
MARKDOWN = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

#: Words of the project's own history or of another app, which mean nothing to a notebook user:
#: "seed" (the contract the package was first built from) and Anvia's separate Studio app named
#: as if the user were in it ("rejected in Anvia Studio").
FORBIDDEN = {
    "seed": re.compile(r"\bseed\b", re.IGNORECASE),
    "Anvia Studio": re.compile(r"\bAnvia(?:'s)?\s+Studio\b"),
}

#: Occurrences that are meant, by file and a piece of the line (or string) they stand in.
#: Each must still occur, so an allowance is dropped when its text goes.
ALLOWED = {
    # the "Compared with" table puts the package beside Anvia's web app
    ("README.md", "| | anvia_notebook | Anvia Studio | pydantic-ai deferred tools |"),
    # the question tool reads a model's arguments the way Anvia's app does (parity notes)
    ("docs/api.md", "as Anvia's Studio reads them"),
    ("docs/api.md", "as in Anvia's Studio"),
    ("anvia_notebook/question_types.py", "as Anvia's Studio reads it"),
}


def _python_strings(path: pathlib.Path) -> Iterator[tuple[str, str]]:
    """Each string literal of a module (docstrings and f-string parts included), with the
    source line it starts on, as the context an allowance names."""
    source = path.read_text()
    lines = source.splitlines()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.value, lines[node.lineno - 1]


def _json_strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list) and all(isinstance(item, str) for item in value):
        yield "".join(value)  # a notebook keeps a multi-line text as a list of its lines
    elif isinstance(value, list):
        for item in value:
            yield from _json_strings(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _json_strings(item)


def _notebook_texts(path: pathlib.Path) -> Iterator[tuple[str, str]]:
    """A tutorial's cell sources and saved outputs, one text per cell part."""
    notebook = json.loads(path.read_text())
    for cell in notebook["cells"]:
        for source in _json_strings(cell["source"]):
            yield source, ""
        for output in cell.get("outputs", []):
            for text in _json_strings(output):
                yield text, ""


def user_texts() -> Iterator[tuple[str, str, str]]:
    """(file relative to the repository, text, context) for every text a user may read."""
    package = ROOT / "anvia_notebook"
    for path in sorted(package.rglob("*.py")):
        for text, line in _python_strings(path):
            yield path.relative_to(ROOT).as_posix(), text, line
    for path in sorted((ROOT / "js" / "src").rglob("*.ts")):
        for line in path.read_text().splitlines():
            yield path.relative_to(ROOT).as_posix(), line, line
    for path in MARKDOWN:
        for line in path.read_text().splitlines():
            yield path.relative_to(ROOT).as_posix(), line, line
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for text, context in _notebook_texts(path):
            yield path.relative_to(ROOT).as_posix(), text, context


def _allowance(name: str, text: str, context: str, match: re.Match[str]) -> tuple[str, str] | None:
    """The allowance that covers this occurrence: its piece of text spans the match, or (for a
    short string such as a title) the piece is on the string's line and holds all of it."""
    for allowance in ALLOWED:
        file, piece = allowance
        if file != name:
            continue
        for found in re.finditer(re.escape(piece), text):
            if found.start() <= match.start() and match.end() <= found.end():
                return allowance
        if piece in context and text in piece:
            return allowance
    return None


def find_words(texts: Iterator[tuple[str, str, str]]) -> tuple[list[str], set[tuple[str, str]]]:
    """The forbidden words found (as readable lines) and the allowances that were used."""
    found: list[str] = []
    used: set[tuple[str, str]] = set()
    for name, raw, context in texts:
        text = " ".join(raw.split())  # a docstring's line breaks and indents as single spaces
        for word, pattern in FORBIDDEN.items():
            for match in pattern.finditer(text):
                allowance = _allowance(name, text, context, match)
                if allowance:
                    used.add(allowance)
                else:
                    start = max(0, match.start() - 40)
                    found.append(f"{name}: {word!r} in {text[start : match.end() + 40]!r}")
    return found, used


def test_user_facing_text_has_no_internal_words():
    texts = list(user_texts())
    names = {name for name, _, _ in texts}
    # every kind of source was read
    assert {"README.md", "docs/api.md", "js/src/widget.ts"} <= names
    assert "anvia_notebook/notebook/_studio.py" in names
    assert any(name.startswith("notebooks/") for name in names)
    assert any(name.endswith(".ipynb") and "rejected" in text for name, text, _ in texts)
    found, used = find_words(iter(texts))
    assert found == []
    assert used == ALLOWED, f"allowances no longer needed: {sorted(ALLOWED - used)}"


def test_the_word_check_reads_a_notebooks_sources_and_saved_outputs(tmp_path):
    cell = {
        "cell_type": "code",
        "metadata": {},
        "source": ["print('the seed')\n", "x = 1"],
        "outputs": [
            {
                "output_type": "display_data",
                "metadata": {},
                "data": {"text/html": ["<p>Order cancellation rejected in\n", "Anvia Studio.</p>"]},
            }
        ],
    }
    path = tmp_path / "tutorial.ipynb"
    path.write_text(json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4}))
    texts = [("notebooks/tutorial.ipynb", *item) for item in _notebook_texts(path)]
    found, _ = find_words(iter(texts))
    assert [f.split(" in ")[0] for f in found] == [
        "notebooks/tutorial.ipynb: 'seed'",
        "notebooks/tutorial.ipynb: 'Anvia Studio'",
    ]


def test_the_word_check_finds_what_it_forbids():
    samples = [
        ("anvia_notebook/x.py", "Refund request rejected in Anvia Studio.", ""),
        ("js/src/x.ts", "  // as in the seed's contract", "  // as in the seed's contract"),
        ("notebooks/x.ipynb", "The Seed says so", ""),
        # an allowance holds only in its own file, and only for the words it spans
        ("docs/wire-protocol.md", "as in Anvia's Studio", "as in Anvia's Studio"),
        ("docs/api.md", "as in Anvia's Studio, rejected in Anvia Studio", ""),
    ]
    found, used = find_words(iter(samples))
    assert len(found) == 5 and used == {("docs/api.md", "as in Anvia's Studio")}
    found, _ = find_words(iter([("docs/api.md", "seeded, seeds and a seedling", "")]))
    assert found == []  # the word alone, not words that start with it


# -- links ---------------------------------------------------------------------------------------

#: ``[text](target)`` and ``![alt](target)``, the text possibly across lines; a title after the
#: target is dropped.
LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", re.M)
HTML_LINK = re.compile(r"<(?:a|img)\b[^>]*\b(?:href|src)=\"([^\"]+)\"", re.I)
FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)


def _prose(text: str) -> str:
    """The markdown without its code blocks and code spans (a link there is not a link)."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def markdown_links(text: str) -> list[str]:
    prose = _prose(text)
    return [m.group(1) for pattern in (LINK, REFERENCE, HTML_LINK) for m in pattern.finditer(prose)]


def heading_anchors(text: str) -> set[str]:
    """The anchors GitHub gives a file's headings (lower case, punctuation dropped, spaces as
    dashes, a repeated heading numbered)."""
    anchors: set[str] = set()
    for line in FENCE.sub("", text).splitlines():
        heading = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not heading:
            continue
        title = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.group(1)).replace("`", "")
        slug = re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")
        anchor, n = slug, 0
        while anchor in anchors:
            n += 1
            anchor = f"{slug}-{n}"
        anchors.add(anchor)
    return anchors


def broken_links(path: pathlib.Path, text: str | None = None) -> list[str]:
    """The links of a markdown file (or of ``text`` as if it were that file) that lead nowhere."""
    broken = []
    text = path.read_text() if text is None else text
    for target in markdown_links(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith("//"):
            continue  # a web address (https:, mailto:, ...), not a file of the repository
        file_part, _, anchor = target.partition("#")
        resolved = (path.parent / file_part).resolve() if file_part else path
        if file_part and (not resolved.is_relative_to(ROOT) or not resolved.exists()):
            broken.append(f"{path.name}: {target} (no such file in the repository)")
        elif anchor and resolved.suffix == ".md":
            page = text if resolved == path else resolved.read_text()
            if anchor not in heading_anchors(page):
                broken.append(f"{path.name}: {target} (no such heading)")
    return broken


def test_every_relative_link_in_the_readme_and_docs_resolves():
    links = {path.name: markdown_links(path.read_text()) for path in MARKDOWN}
    # the check sees the links there are: files, folders and headings
    assert "docs/screenshot.png" in links["README.md"]
    assert "#approvals" in links["api.md"] and "../notebooks" in links["api.md"]
    assert [b for path in MARKDOWN for b in broken_links(path)] == []


def test_the_link_check_finds_a_broken_link_or_anchor():
    text = "\n".join(
        [
            "# Title",
            "## Questions (`ask_question`)",
            "## Title",
            "[ok](#questions-ask_question) [ok too](#title-1) [web](https://example.com)",
            "[gone](missing.md) [no heading](api.md#nowhere) [out](../../outside.md)",
            "[across",
            "lines](#nothing) `[in code](nowhere.md)` ![img](images/gone.png)",
            '[ref]: notes.md <img src="nothing.png">',
            "```",
            "[in a block](nowhere.md)",
            "```",
        ]
    )
    # read as if it were a page of docs/, beside the real ones its relative links name
    broken = broken_links(ROOT / "docs" / "draft.md", text)
    targets = [b.split(": ", 1)[1].split(" (")[0] for b in broken]
    assert targets == [
        "missing.md",
        "api.md#nowhere",
        "../../outside.md",
        "#nothing",
        "images/gone.png",
        "notes.md",
        "nothing.png",
    ]

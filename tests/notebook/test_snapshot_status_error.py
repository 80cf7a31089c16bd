"""A run's error in the saved copy's title line: its first line, cut short, as the live status
line says it (``errorSummary`` in js/src/views/status.ts), noted as any cut in the copy. The
whole error is the copy's error entry. A provider's error can hold a whole HTML page: the
copy's title line carried 2,000 characters of it, and the plain-text copy every line of it
before the transcript began. And a long error or notice is folded in the copy where the page
folds it."""

from __future__ import annotations

from anvia_notebook.notebook._snapshot import STATUS_ERROR_CHARS, render_html, render_text

PAGE = "Bad gateway: upstream said\n" + "<html><body>Bad gateway</body></html> " * 1500


def transcript(error: str) -> dict:
    return {
        "entries": [
            {"kind": "user", "id": "u", "text": "go"},
            {"kind": "error", "id": "e", "text": error},
        ],
        "status": {"state": "error", "error": error, "turn": 1},
    }


def test_the_title_line_says_the_error_s_first_line_and_the_entry_keeps_more():
    html = render_html(transcript(PAGE))
    title = html[: html.index("</div>")]
    assert (
        f"error: Bad gateway: upstream said … ({len(PAGE.strip()) - 26} more characters)" in title
    )
    assert "&lt;html&gt;" not in title
    assert html.count("&lt;html&gt;") > 100  # (the error entry)
    text = render_text(transcript(PAGE))
    first, second = text.splitlines()[:2]
    assert first.endswith(
        f"Error · turn 1 · error: Bad gateway: upstream said … ({len(PAGE.strip()) - 26} more characters)"
    )
    assert "<html>" not in second


def test_a_long_first_line_is_cut_and_a_short_error_is_whole():
    long = "x" * (STATUS_ERROR_CHARS * 3)
    first = render_text(transcript(long)).splitlines()[0]
    assert first.endswith(f"error: {'x' * STATUS_ERROR_CHARS} … (400 more characters)")
    assert render_text(transcript(" boom ")).splitlines()[0].endswith("error: boom")


def _shown_before_the_fold(html: str, marker: str) -> str:
    """The copy's text from ``marker`` up to its first ``<details>`` (all of it if none)."""
    start = html.index(marker)
    end = html.find("<details", start)
    return html[start : end if end != -1 else len(html)]


def test_a_long_error_or_notice_is_folded_in_the_copy_as_on_the_page():
    """The live view folds an error or a notice past 1,500 characters or 20 lines (a provider's
    error can hold a whole HTML page); the saved copy showed 20,000 characters of it, open."""
    notice = "Hook said no: " + "because " * 2000
    html = render_html(
        {
            "entries": [
                {"kind": "user", "id": "u", "text": "go"},
                {"kind": "error", "id": "e", "text": PAGE},
                {"kind": "notice", "id": "n", "text": notice},
            ],
            "status": {"state": "error", "error": "boom", "turn": 1},
        }
    )
    before = _shown_before_the_fold(html, "<strong>Error</strong>")
    assert "Bad gateway: upstream said" in before and len(before) < 4_000
    assert html.count("<summary>Show more</summary>") == 2
    assert html.count("&lt;html&gt;") > 100  # (the rest, in the fold)
    before = _shown_before_the_fold(html, "Hook said no: ")
    assert len(before) < 2_000
    lines = "\n".join(f"line {i}" for i in range(40))  # (20 lines, as the page)
    html = render_html(transcript(lines))
    assert "line 19" in _shown_before_the_fold(html, "<strong>Error</strong>")
    assert "line 20" not in _shown_before_the_fold(html, "<strong>Error</strong>")
    short = render_html(transcript("boom\nat line 2"))
    assert "<details" not in short.split("<strong>Error</strong>", 1)[1]

"""A run's error in the saved copy's title line: its first line, cut short, as the live status
line says it (``errorSummary`` in js/src/views/status.ts), noted as any cut in the copy. The
whole error is the copy's error entry. A provider's error can hold a whole HTML page: the
copy's title line carried 2,000 characters of it, and the plain-text copy every line of it
before the transcript began."""

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

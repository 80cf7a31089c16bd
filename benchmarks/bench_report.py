"""The browser benchmarks' figures as tables: medians, ratios, targets; plain text and Markdown."""

from __future__ import annotations

import json
import statistics
from typing import Any

#: "Ours within 1.5 times of the floor on frames, bytes and time to last token."
STREAM_RATIO = 1.5
#: "Median at most 15 ms above the click-to-handler time."
CLICK_ABOVE_MS = 15.0
#: "First render of a fresh view of 1,000 entries under 300 ms."
LONG_RENDER_MS = 300.0
#: The figures of a part measured with the run store off are under ``<part>`` + this (the plain
#: key holds the default, store on); the tables show both side by side.
OFF_SUFFIX = "_store_off"

STREAM_FIELDS = (
    "frames",
    "bytes",
    "time_to_last_token_ms",
    "lag_after_last_delta_ms",
    "generate_ms",
    "longest_task_ms",
    "setup_frames",
    "setup_bytes",
    "kernel_messages",
    "resyncs",
)


def stream_line(run: dict[str, Any]) -> str:
    """One streaming run, for the progress log."""
    keys = (
        "variant",
        "pace",
        "deltas",
        "frames",
        "bytes",
        "time_to_last_token_ms",
        "lag_after_last_delta_ms",
        "longest_task_ms",
        "rate_exceeded",
        "complete",
        "capped",
    )
    parts = []
    for key in keys:
        value = run.get(key)
        parts.append(f"{key}={round(value, 1) if isinstance(value, float) else value}")
    return "stream " + " ".join(parts)


def _median(values: list[Any]) -> Any:
    numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return statistics.median(numbers) if numbers else None


def summarize_streaming(streaming: dict[str, Any]) -> dict[str, Any]:
    """Medians per (pace, variant) and the ours/floor ratios."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for run in streaming["runs"]:
        groups.setdefault((run["pace"], run["variant"]), []).append(run)
    out: dict[str, Any] = {}
    for (pace, variant), runs in groups.items():
        cell: dict[str, Any] = {f: _median([r.get(f) for r in runs]) for f in STREAM_FIELDS}
        cell.update(
            runs=len(runs),
            deltas=runs[0]["deltas"],
            rate=runs[0]["rate"],
            capped=any(r["capped"] for r in runs),
            cap_s=runs[0]["cap_s"],
            complete=all(r["complete"] for r in runs),
            rate_exceeded=any(r["rate_exceeded"] for r in runs),
        )
        out.setdefault(pace, {})[variant] = cell
    for variants in out.values():
        ours, floor = variants.get("ours"), variants.get("floor")
        if ours and floor:
            variants["ratio"] = {
                field: (ours[field] / floor[field]) if ours[field] and floor[field] else None
                for field in ("frames", "bytes", "time_to_last_token_ms")
            }
    return out


def targets(results: dict[str, Any], stream: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for pace, variants in stream.items():
        ours, floor = variants.get("ours"), variants.get("floor")
        if not (ours and floor):
            continue
        found.append(
            {
                "target": f"streaming {pace}: all text arrives, no dropped output (ours)",
                "met": ours["complete"] and not ours["rate_exceeded"] and not ours["resyncs"],
            }
        )
        for field, label in (
            ("frames", "frames"),
            ("bytes", "bytes"),
            ("time_to_last_token_ms", "time to last token"),
        ):
            ratio = variants["ratio"][field]
            found.append(
                {
                    "target": f"streaming {pace}: ours / floor {label} <= {STREAM_RATIO}",
                    "value": ratio,
                    "met": ratio is not None and ratio <= STREAM_RATIO,
                }
            )
    clicks = results.get("clicks")
    if clicks:
        for kind in ("bg-approve", "bg-answer", "sync-approve", "sync-answer"):
            above = clicks[kind]["above_baseline_ms"]
            found.append(
                {
                    "target": f"click {kind}: median <= click-to-handler + {CLICK_ABOVE_MS:g} ms",
                    "value": above,
                    "met": above <= CLICK_ABOVE_MS,
                }
            )
    long = results.get("long")
    if long:
        found.append(
            {
                "target": f"long transcript: first render of a fresh view < {LONG_RENDER_MS:g} ms",
                "value": long["first_render_ms"],
                "met": long["first_render_ms"] < LONG_RENDER_MS,
            }
        )
    nested = results.get("nested")
    if nested:
        found.append(
            {
                "target": "long transcript, three levels of sub-agents: first render of a fresh "
                f"view < {LONG_RENDER_MS:g} ms",
                "value": nested["first_render_ms"],
                "met": nested["first_render_ms"] < LONG_RENDER_MS,
            }
        )
    return found


def summarize(results: dict[str, Any]) -> dict[str, Any]:
    stream = summarize_streaming(results["streaming"]) if "streaming" in results else {}
    off_key = f"streaming{OFF_SUFFIX}"
    off = summarize_streaming(results[off_key]) if off_key in results else {}
    return {"streaming": stream, f"streaming{OFF_SUFFIX}": off, "targets": targets(results, stream)}


def _store_label(part: dict[str, Any] | None) -> str:
    return "store off" if (part or {}).get("store") == "off" else "store on"


def _side_by_side(
    rows: list[list[str]], off_rows: list[list[str]] | None, first: int = 1
) -> list[list[str]]:
    """``rows`` with the value columns of ``off_rows`` (the same rows, store off) appended."""
    if off_rows is None:
        return rows
    return [row + off[first:] for row, off in zip(rows, off_rows, strict=True)]


# --------------------------------------------------------------------------------------------
# Formatting
# --------------------------------------------------------------------------------------------


def _ms(value: Any) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f} ms" if value >= 10 else f"{value:.1f} ms"


def _kb(value: Any) -> str:
    if value is None:
        return "-"
    if value >= 10_000_000:
        return f"{value / 1e6:,.0f} MB"
    if value >= 1_000_000:
        return f"{value / 1e6:.1f} MB"
    return f"{value / 1000:,.0f} KB" if value >= 10_000 else f"{value / 1000:.1f} KB"


def _ratio(value: Any) -> str:
    return "-" if value is None else f"{value:.2f}x"


def _task(value: Any) -> str:
    if value is None:
        return "-"
    return "< 50 ms" if value < 50 else f"{value:.0f} ms"


def _yes(value: bool) -> str:
    return "yes" if value else "no"


def _naive_time(cell: dict[str, Any], field: str) -> str:
    if cell["capped"]:
        return f"not in {cell['cap_s']:.0f} s (cut off)"
    return _ms(cell[field])


def stream_rows(pace: str, variants: dict[str, Any]) -> list[list[str]]:
    ours, naive, floor = variants.get("ours"), variants.get("naive"), variants.get("floor")
    ratio = variants.get("ratio", {})
    blank: dict[str, Any] = {}

    def get(cell: dict[str, Any] | None, field: str) -> Any:
        return (cell or blank).get(field)

    def naive_cell(fmt: Any, field: str) -> str:
        if naive is None:
            return "-"
        return (
            _naive_time(naive, field)
            if field.endswith("_ms") and "task" not in field
            else fmt(naive[field])
        )

    return [
        [
            "frames to the page",
            f"{get(ours, 'frames') or '-'}",
            naive_cell(lambda v: f"{v:,}", "frames"),
            f"{get(floor, 'frames') or '-'}",
            _ratio(ratio.get("frames")),
        ],
        [
            "bytes to the page",
            _kb(get(ours, "bytes")),
            naive_cell(_kb, "bytes"),
            _kb(get(floor, "bytes")),
            _ratio(ratio.get("bytes")),
        ],
        [
            "time to last token",
            _ms(get(ours, "time_to_last_token_ms")),
            naive_cell(_ms, "time_to_last_token_ms"),
            _ms(get(floor, "time_to_last_token_ms")),
            _ratio(ratio.get("time_to_last_token_ms")),
        ],
        [
            "of which after the last delta",
            _ms(get(ours, "lag_after_last_delta_ms")),
            naive_cell(_ms, "lag_after_last_delta_ms"),
            _ms(get(floor, "lag_after_last_delta_ms")),
            "",
        ],
        [
            "messages the kernel sent",
            f"{get(ours, 'kernel_messages') or '-'}",
            "-" if naive is None else f"{naive['kernel_messages'] or 0:,}",
            f"{get(floor, 'kernel_messages') or '-'}",
            "",
        ],
        [
            'server said "IOPub message rate exceeded"',
            _yes(bool(get(ours, "rate_exceeded"))),
            "-" if naive is None else _yes(naive["rate_exceeded"]),
            _yes(bool(get(floor, "rate_exceeded"))),
            "",
        ],
        [
            "all text arrived",
            _yes(bool(get(ours, "complete"))),
            "-" if naive is None else (_yes(naive["complete"]) if not naive["capped"] else "no"),
            _yes(bool(get(floor, "complete"))),
            "",
        ],
        [
            "longest main-thread task",
            _task(get(ours, "longest_task_ms")),
            "-" if naive is None else _task(naive["longest_task_ms"]),
            _task(get(floor, "longest_task_ms")),
            "",
        ],
    ]


def _stream_title(pace: str, variants: dict[str, Any]) -> str:
    ours = variants.get("ours") or {}
    naive = variants.get("naive") or {}
    deltas = ours.get("deltas")
    how = "flat out" if pace == "flat" else f"paced at {ours.get('rate', 0):,.0f} tokens/s"
    title = f"Streaming {deltas:,} text deltas, {how}" if deltas else f"Streaming, {how}"
    runs = ours.get("runs")
    if runs and runs > 1:
        title += f" (medians of {runs} runs)"
    if naive and naive.get("deltas") != deltas:
        title += f"; (b) with {naive['deltas']:,} deltas"
    return title


def click_rows(clicks: dict[str, Any]) -> list[list[str]]:
    labels = {
        "baseline": "click to handler (a trivial anywidget button)",
        "bg-approve": "background (`show()`): Approve click to the tool's first line",
        "bg-answer": "background (`show()`): answer Submit to the tool result",
        "sync-approve": "`send_sync`: Approve click to the tool's first line",
        "sync-answer": "`send_sync`: answer Submit to the tool result",
    }
    rows = []
    for kind, label in labels.items():
        cell = clicks[kind]
        above = cell.get("above_baseline_ms")
        rows.append(
            [
                label,
                _ms(cell["median_ms"]),
                _ms(cell["p90_ms"]),
                "-" if above is None else f"{above:+.1f} ms",
            ]
        )
    return rows


def long_rows(long: dict[str, Any]) -> list[list[str]]:
    first = long["views"][0]
    return [
        [
            "first render of a fresh view (run the cell, entries drawn), median",
            _ms(long["first_render_ms"]),
        ],
        [
            "the same, first cell run after the run (redraws the first view too)",
            _ms(first["first_render_ms"]),
        ],
        ["every older entry built too (in idle time)", _ms(long["all_built_ms"])],
        ["longest main-thread task while drawing", _task(long["longest_task_ms"])],
        [
            "page JS heap before the run / with two views of it",
            f"{_kb(long['heap_before_bytes'])} / {_kb(long['heap_after_bytes'])}",
        ],
        ["snapshot the kernel sends a new view", _kb(long["snapshot_bytes"])],
    ]


def kernel_rows(kernel: dict[str, Any], saved: dict[str, Any] | None) -> list[list[str]]:
    rows = [
        [
            "ours: Transcript + Batcher, batches JSON-encoded",
            f"{kernel['ours']['median_us']:.2f} µs",
        ],
        ["floor: list append, join and encode per batch", f"{kernel['floor']['median_us']:.2f} µs"],
        [
            f"usual way: the whole Markdown encoded per delta ({kernel['naive']['deltas']:,})",
            f"{kernel['naive']['median_us']:.1f} µs",
        ],
        [
            "a whole run (run loop, model events), no view",
            f"{kernel['run_loop']['median_us']:.2f} µs",
        ],
        [
            "the same run with our transcript session attached",
            f"{kernel['run_loop_with_transcript']['median_us']:.2f} µs",
        ],
    ]
    if saved:
        ours, floor = saved["ours"], saved["floor"]
        rows += [
            [
                f"saved notebook after a {saved['deltas']:,}-token run, widget state on: ours",
                f"{_kb(ours['file_bytes'])}: widget state {_kb(ours['widget_state_bytes'])} "
                f"(the widget's code), outputs {_kb(ours['outputs_bytes'])} (the static copy, "
                f"each field cut at 20,000 characters); the text was {_kb(ours['text_chars'])}",
            ],
            [
                "the same with the floor widget",
                f"{_kb(floor['file_bytes'])} (the text is "
                f"{'' if floor['text_in_file'] else 'not '}in the file)",
            ],
        ]
    return rows


def _table(header: list[str], rows: list[list[str]], markdown: bool) -> list[str]:
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
        lines += ["| " + " | ".join(row) + " |" for row in rows]
        return lines
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return [fmt.format(*header), fmt.format(*("-" * w for w in widths))] + [
        fmt.format(*row) for row in rows
    ]


def render(results: dict[str, Any], summary: dict[str, Any], *, markdown: bool) -> str:
    out: list[str] = []

    def section(title: str) -> None:
        out.append("")
        out.append(f"**{title}**" if markdown else f"== {title}")
        out.append("")

    off_stream = summary.get(f"streaming{OFF_SUFFIX}") or {}
    on_label = _store_label(results.get("streaming"))
    for pace, variants in summary["streaming"].items():
        section(_stream_title(pace, variants))
        header = ["", "(a) ours", "(b) usual way", "(c) floor", "(a)/(c)"]
        off_variants = off_stream.get(pace)
        if off_variants:
            header = [header[0], *(f"{h}, {on_label}" for h in header[1:])]
            header += [
                f"{h}, store off" for h in ("(a) ours", "(b) usual way", "(c) floor", "(a)/(c)")
            ]
        rows = stream_rows(pace, variants)
        out += _table(
            header,
            _side_by_side(rows, stream_rows(pace, off_variants) if off_variants else None),
            markdown,
        )
    if "clicks" in results:
        clicks, off = results["clicks"], results.get(f"clicks{OFF_SUFFIX}")
        section(f"Click latency, {clicks['rounds']} runs each")
        header = ["", "median", "p90", "median above click-to-handler"]
        if off:
            header = [header[0], *(f"{h}, {_store_label(clicks)}" for h in header[1:])]
            header += [f"{h}, store off" for h in ("median", "p90", "above click-to-handler")]
        out += _table(
            header,
            _side_by_side(click_rows(clicks), click_rows(off) if off else None),
            markdown,
        )
    if "long" in results:
        long, off = results["long"], results.get(f"long{OFF_SUFFIX}")
        section(f"A transcript of {long['entries']:,} entries")
        header = ["", _store_label(long), "store off"] if off else ["", ""]
        out += _table(
            header, _side_by_side(long_rows(long), long_rows(off) if off else None), markdown
        )
    if "nested" in results:
        nested, off = results["nested"], results.get(f"nested{OFF_SUFFIX}")
        long = results.get("long")
        section(
            f"A transcript of {nested['entries']:,} entries with three levels of sub-agents "
            f"({nested['nested_entries']:,} of them inside sub-agents' blocks), "
            f"{_store_label(nested)}, beside the flat one of {long['entries'] if long else 0:,}"
        )
        header = ["", "three levels", "flat"] if long else ["", "three levels"]
        rows = long_rows(nested)
        if long:
            rows = [[*row, other[1]] for row, other in zip(rows, long_rows(long), strict=True)]
        target = f"< {LONG_RENDER_MS:g} ms"
        rows.append(["target: first render of a fresh view", *([target] * (len(header) - 1))])
        out += _table(header, rows, markdown)
        if off:
            section("The same, store off")
            out += _table(["", "three levels"], long_rows(off), markdown)
    if "kernel" in results:
        section(f"Kernel side, per text delta ({results['kernel']['deltas']:,} deltas)")
        out += _table(["", ""], kernel_rows(results["kernel"], results.get("saved")), markdown)
    if summary["targets"]:
        section("Targets")
        rows = []
        for t in summary["targets"]:
            value = t.get("value")
            shown = "" if value is None else (f"{value:.2f}" if value < 10 else f"{value:.0f}")
            rows.append([t["target"], shown, "met" if t["met"] else "MISSED"])
        out += _table(["target", "value", ""], rows, markdown)
    return "\n".join(out).strip("\n")


def table(results: dict[str, Any]) -> str:
    return render(results, summarize(results), markdown=False)


if __name__ == "__main__":  # re-print the tables of a JSON file: bench_report.py figures.json
    import sys
    from pathlib import Path

    loaded = json.loads(Path(sys.argv[1]).read_text())
    print(render(loaded, summarize(loaded), markdown="--markdown" in sys.argv))

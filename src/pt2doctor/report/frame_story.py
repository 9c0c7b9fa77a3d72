"""The story of each recompiling frame, as plain data every renderer shows the same way: the
variants and the state each serves, what changed at each recompile, the outlook and the fixes.

Built from report.json's ``frames[]`` only (``variants_table``, ``recompiles[].changes``,
``refused``, ``outlook``, ``fixes``), so reports of this schema render alike in the terminal,
report.md and report.html.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rich.markup import escape

from pt2doctor.analysis.paths import display_path
from pt2doctor.analysis.recompiles.changes import kind_words
from pt2doctor.analysis.recompiles.frame_names import compiled_at_label
from pt2doctor.analysis.text import counted
from pt2doctor.report.format import md_code, md_table, md_text

if TYPE_CHECKING:
    from rich.console import Console

Report = Mapping[str, Any]


def _label(change: dict[str, Any]) -> str:
    unit = change.get("unit")
    count = change.get("count") or 1
    return f"{change['source']} ({count} {unit})" if count > 1 and unit else change["source"]


def change_text(change: dict[str, Any]) -> str:
    """``kwargs['input_ids'].shape[1]: size 8 → 1 (now dynamic)``."""
    old, new = change.get("old"), change.get("new")
    values = f"{old or 'a value'} → {new or 'a new value'}" if old or new else "changed"
    dynamic = " (now dynamic)" if change.get("dynamic") else ""
    return f"{_label(change)}: {kind_words(change['kind'], change['source'])}{values}{dynamic}"


def _shown(dynamic: str, serves: dict[str, str]) -> bool:
    """A dynamic source (``layers[*].keys.shape[2]``) the serves column already shows."""
    pattern = re.escape(dynamic).replace(r"\[\*\]", r"\[\d+\]")
    return any(re.fullmatch(pattern, s) or s == dynamic for s in serves)


def _serves(row: dict[str, Any]) -> str:
    return ", ".join(f"{source} = {value}" for source, value in row["serves"].items()) or "-"


def _outlook_word(bounded: bool | None) -> str:
    if bounded is None:
        return "bound unknown"
    return "bounded" if bounded else "unbounded"


def _recompile(entry: dict[str, Any]) -> dict[str, Any]:
    changes = entry.get("changes") or []
    return {
        "compile_id": entry["compile_id"],
        "compared_with": entry.get("compared_with"),
        "changes": [change_text(c) for c in changes],
        "hints": sorted({c["hint"] for c in changes if c.get("hint")}),
    }


def frame_story(frame: Mapping[str, Any]) -> dict[str, Any] | None:
    """One frame's story, or None when it never recompiled (or the report predates schema 2,
    which has no outlook to tell)."""
    if not frame.get("recompiles") and not frame.get("refused"):
        return None
    outlook = frame.get("outlook")
    if outlook is None:
        return None
    refused = frame.get("refused")
    return {
        # display_name (issue 13 item 6) where the report has it; the function name before.
        "frame": _story_frame(frame),
        "function": frame["function"],
        "name": frame.get("display_name") or frame["function"],
        "through": frame.get("through"),
        "file": frame["file"],
        "line": frame["line"],
        "variants": frame["variants"],
        "recompiles": len(frame["recompiles"]),
        "refused": None if refused is None else _recompile(refused),
        "bounded": outlook["bounded"],
        "outlook": f"{_outlook_word(outlook['bounded'])}: {outlook['reason']}",
        "table": [
            {
                "compile_id": row["compile_id"],
                "serves": _serves(row),
                "dynamic": ", ".join(d for d in row["dynamic"] if not _shown(d, row["serves"]))
                or "-",
                "calls": "-" if row["calls"] is None else str(row["calls"]),
                "compile_s": "-"
                if row["compile_time_s"] is None
                else f"{row['compile_time_s']:.2f}",
            }
            for row in frame.get("variants_table") or []
        ],
        "changed": [_recompile(entry) for entry in frame["recompiles"]],
        "fixes": frame.get("fixes") or [],
    }


def _story_frame(frame: Report) -> str:
    """``name (file:line)``; a library frame the user compiled by a call the run recorded is
    named by that call (``LlamaDecoderLayer.forward (compiled at train.py:21)``)."""
    name = str(frame.get("display_name") or frame["function"])
    base = str(frame.get("name") or name)
    compiled = compiled_at_label(base, frame["file"], frame.get("compiled_at"))
    return compiled or f"{name} ({frame['file']}:{frame['line']})"


def frame_stories(report: Report) -> list[dict[str, Any]]:
    """The story of every frame that recompiled, in report order."""
    stories = (frame_story(frame) for frame in report["frames"])
    return [story for story in stories if story is not None]


def headline_counts(summary: Mapping[str, Any]) -> str:
    """``7 recompiles + 1 refused`` (the refusal at the recompile limit is not a recompile)."""
    refused = summary.get("refused") or 0
    text = counted(summary["recompiles"], "recompile")
    return text + (f" + {refused} refused" if refused else "")


def _terminal_header(story: dict[str, Any], cwd: str | None) -> str:
    """The frame as a user knows it, its place relative to the working directory or to
    site-packages (a wrapper's display name already says where the wrapper is)."""
    name = str(story["name"])
    if story.get("through"):
        return name
    return f"{name} ({display_path(story['file'], cwd)}:{story['line']})"


def story_terminal(console: Console, story: dict[str, Any], cwd: str | None = None) -> None:
    """One frame's story for an 80-column log: header, variant table, changes, outlook (the
    fixes are the recompiles finding's, printed just above)."""
    console.print(f"[bold]Recompiles of {escape(_terminal_header(story, cwd))}[/]")
    counts = (
        f"{counted(story['variants'], 'variant')} from {counted(story['recompiles'], 'recompile')}"
    )
    if story["refused"] is not None:
        counts += f" + 1 refused ({story['refused']['compile_id']}, then eager)"
    console.print(f"  {escape(counts)}")
    console.print("  variants (the state each serves):")
    for row in story["table"]:
        extra = [f"also dynamic: {row['dynamic']}"] if row["dynamic"] != "-" else []
        calls = [] if row["calls"] == "-" else [f"{counted(int(row['calls']), 'call')}"]
        facts = ", ".join([f"{row['compile_s']} s to compile", *calls, *extra])
        console.print(
            f"    {escape(row['compile_id'])}: {escape(row['serves'])} [dim]({escape(facts)})[/]"
        )
    for item in [*story["changed"], *([story["refused"]] if story["refused"] else [])]:
        against = f" vs {item['compared_with']}" if item["compared_with"] else ""
        console.print(f"  {escape(item['compile_id'] + against)} changed:")
        for line in item["changes"] or ["(the trace does not say)"]:
            console.print(f"    {escape(line)}")
    console.print(f"  outlook: {escape(story['outlook'])}")
    console.print()


def story_markdown(story: dict[str, Any]) -> list[str]:
    """One frame's story as Markdown: heading, variant table, changes, outlook, fixes."""
    lines = [f"#### Recompiles of {md_code(story['frame'])}", ""]
    counts = (
        f"{counted(story['variants'], 'variant')} from {counted(story['recompiles'], 'recompile')}"
    )
    if story["refused"] is not None:
        counts += f" + 1 refused ({story['refused']['compile_id']}, then eager)"
    lines += [md_text(counts), ""]
    rows = [
        [md_text(r["compile_id"]), md_code(r["serves"]), md_code(r["dynamic"]),
         md_text(r["calls"]), md_text(r["compile_s"])]
        for r in story["table"]
    ]  # fmt: skip
    lines += md_table(["variant", "serves", "also dynamic", "calls", "compile s"], rows)
    for item in [*story["changed"], *([story["refused"]] if story["refused"] else [])]:
        against = f" vs {item['compared_with']}" if item["compared_with"] else ""
        lines.append(f"- {md_text(item['compile_id'] + against)} changed:")
        lines += [f"  - {md_code(line)}" for line in item["changes"]]
    lines += ["", f"**Outlook**: {md_text(story['outlook'])}", ""]
    if story["fixes"]:  # the recompiles finding's, printed in the findings above
        lines.append("- its fixes are in the findings above")
    return [*lines, ""]

"""Formatting helpers shared by every report kind's renderers (terminal, Markdown, HTML view
models): cutting long text, milliseconds from seconds, and where a source location is.

One home, so the run, check and ablate renderers cannot drift apart (they once had three
``_ms`` and three ``_where``)."""

from __future__ import annotations

import html
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pt2doctor.analysis.paths import library_path, shorten_paths
from pt2doctor.report.types import Finding

# Longest text shown in a table cell before it is cut (the full text stays in report.json).
MAX_CELL = 400


def cut(text: str | None, limit: int = MAX_CELL) -> str:
    """``text`` (None: '') cut to ``limit`` characters, an ellipsis marking the cut."""
    text = text or ""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def seconds_text(value: float | None, scale: float = 1.0, unit: str = "s") -> str:
    """``1.23 s`` (three significant digits), or ``-`` when not measured."""
    return "-" if value is None else f"{value * scale:.3g} {unit}"


def ms_text(seconds: float | None) -> str:
    """Milliseconds, three significant digits, no unit (tables carry it), ``-`` when absent."""
    return "-" if seconds is None else f"{seconds * 1e3:.3g}"


def ms_value(seconds: float | None) -> float | None:
    """Milliseconds as a number for charts and view-models (rounded to 1 ns), None when absent."""
    return None if seconds is None else round(seconds * 1e3, 6)


def hot_break(row: Mapping[str, Any]) -> bool:
    """A graph-break site to flag as hot: it ran more than once and splits a graph. A hot
    break that splits nothing (``splits_nothing``, absent before 2026-11-30) costs no fusion
    and is not flagged; nor is PyTorch's own break by design (``by_design``, absent before
    2026-12-01), which is not the user's to fix."""
    return bool(row.get("hot")) and not row.get("splits_nothing") and not row.get("by_design")


def warm_start_estimate(cold_start: Mapping[str, Any]) -> float | None:
    """The warm-start estimate worth stating: after a cold or partly cold start. A warm start
    is what was measured, and without a compile cache there is nothing to warm."""
    if cold_start.get("state") in ("cold", "partial"):
        return float(cold_start["warm_estimate_s"])
    return None


def file_name(path: str) -> str:
    """The last part of a path (``run_built.py``), as the built tables show a user line."""
    return path.rsplit("/", 1)[-1]


def source_where(item: Mapping[str, Any] | None) -> str:
    """``file:line function`` of a source location (a site, a frame, a guard's source), or ''.
    An installed package's file reads from the package (``torch/nn/modules/module.py``)."""
    if not item:
        return ""
    file = _file(item.get("file"))
    return f"{file}:{item.get('line')} {item.get('function') or ''}".strip()


def _file(path: Any) -> Any:
    return (library_path(path) or path) if isinstance(path, str) else path


def frame_name(frame: Mapping[str, Any]) -> str:
    """The name a user knows a frame (or a compile of it) by: its ``display_name``
    (``Cls.method``, a wrapped method with its wrapper) where the report has one, else the
    function name."""
    return str(frame.get("display_name") or frame.get("function"))


def function_where(frame: Mapping[str, Any] | None) -> str:
    """``function (file:line)`` of a frame, function first (the cross-rank tables), or ''."""
    return "" if not frame else f"{frame['function']} ({_file(frame['file'])}:{frame['line']})"


def compile_names(report: Mapping[str, Any]) -> dict[tuple[str, str], str]:
    """(stream, compile id) -> the name the user knows its frame by (``frame_name``)."""
    return {
        (frame.get("stream", ""), compile_id): frame_name(frame)
        for frame in report.get("frames", [])
        for compile_id in frame.get("compile_ids", [])
    }


def built_line(entry: Mapping[str, Any], names: Mapping[tuple[str, str], str]) -> str | None:
    """One compile's build in a line: ``0/0 Block.forward: 5 kernels (3 generated, 1 library,
    1 fallback); 1 fusion refused`` (None: no kernel map); ``names`` from compile_names."""
    kernels = entry.get("kernels") or []
    if not kernels:
        return None
    kinds: dict[str, int] = {}
    for kernel in kernels:
        kinds[kernel["kind"]] = kinds.get(kernel["kind"], 0) + 1
    counts = ", ".join(f"{n} {kind}" for kind, n in kinds.items())
    name = names.get((entry.get("stream", ""), entry["compile_id"])) or entry.get("function") or ""
    line = f"{entry['compile_id']} {name}: {len(kernels)} kernels ({counts})"
    fusion = entry.get("fusion") or {}
    if fusion.get("available"):
        refused = len(fusion.get("rejected") or []) + int(fusion.get("more") or 0)
        line += f"; {refused} fusion{'s' if refused != 1 else ''} refused"
    return line


@dataclass(frozen=True)
class RunLine:
    """How the program ran, one line in every rendering: ``Ran`` + the command (shown as
    code) + ``rest`` (``: exited 0 after 4.2 s, 0.31 s inside compiled graphs ...``)."""

    command: str
    rest: str


def run_line(run: Mapping[str, Any] | None) -> RunLine | None:
    """The run line of a report's ``run`` part (None: the report is of a log, not a run)."""
    if run is None:
        return None
    ending = run.get("ending") or f"exited {run.get('exit_code')}"
    rest = f": {ending}"
    if run.get("wall_s") is not None:
        rest += f" after {run['wall_s']:.1f} s"
    if run.get("in_compiled_s") is not None:
        rest += f", {run['in_compiled_s']:.2f} s inside compiled graphs (backward not counted)"
    if run.get("triage"):
        rest += f" (triage run: --backend {run.get('backend_override')})"
    return RunLine(" ".join(run.get("command") or []), rest + ".")


def plan_saving(item: Mapping[str, Any]) -> str:
    """`` (costs 0.126 ms per call)``: what acting on a plan line saves, as the profile
    measured it (why not, when a performance line's saving is unmeasured; '' when the line
    is the cost itself), and what ``--try-fixes`` measured for its fix (`` (tried
    recompile_limit = 12: helped, …)``)."""
    saves = item.get("saves_ms")
    tried = f" ({item['tried']})" if item.get("tried") else ""
    unmeasured = item.get("saves_unmeasured")
    if unmeasured and str(unmeasured).startswith("tried "):  # a try measured no saving
        return f" ({unmeasured})"
    if unmeasured:
        return f" (saving not measured: {unmeasured}){tried}"
    if not saves or item.get("code") == "graph_break_cost":
        return tried
    return f" (costs {saves:.3f} ms per call){tried}"


_SENTENCE_END = re.compile(r"(?<!\be\.g\.)(?<!\bi\.e\.)(?<=[.!?])\s+(?=[A-Z`(])")


def _open(text: str) -> bool:
    """Whether ``text`` ends inside parentheses or a `code` span."""
    return text.count("(") > text.count(")") or text.count("`") % 2 == 1


ADVICE_SENTENCES = 3
"""The sentences of advice shown at a glance; the rest is folded."""


def advice_parts(text: str, sentences: int = ADVICE_SENTENCES) -> tuple[str, str]:
    """(the first ``sentences`` sentences, the rest) of an advice paragraph; the rest is ''
    when there is no more."""
    parts: list[str] = []
    for piece in _SENTENCE_END.split(text.strip()):
        if parts and _open(parts[-1]):  # inside parentheses or code: one sentence still
            parts[-1] += " " + piece
        else:
            parts.append(piece)
    if len(parts) <= sentences:
        return text.strip(), ""
    return " ".join(parts[:sentences]), " ".join(parts[sentences:])


_SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}
_ADVICE_FROM = {"recompile_limit_hit": "recompiles"}
"""A block led by this code shows that member's advice: a limit hit's fixes are its
recompiles'."""


def grouped_findings(findings: list[Finding]) -> list[Finding]:
    """The findings as the reports show them: those of one cause (``cause``) as one, at the
    place of the first, led by the most severe (a break before the frames it made), with the
    others' ``code: title`` in ``also``, their evidence after its own, and the advice of the
    one whose fixes were tried, else the lead's (a limit hit's: its recompiles')."""
    groups: dict[str, list[Finding]] = {}
    for finding in findings:
        if finding.get("cause"):
            groups.setdefault(str(finding["cause"]), []).append(finding)
    shown: list[Finding] = []
    for finding in findings:
        members = groups.get(str(finding.get("cause") or ""), [finding])
        if len(members) < 2:
            shown.append(finding)
            continue
        if finding is not members[0]:
            continue
        # The block opens with its most severe member, a break before the frames it made;
        # a break's block (the frames after it recompile on what it hands over, up to the
        # limit) opens with the break, whose fix removes them all, at the worst severity.
        worst = min(members, key=lambda m: _SEVERITY_ORDER.get(m["severity"], 3))
        breaks = [m for m in members if m["code"] == "graph_break"]
        by_break = str(finding.get("cause") or "").startswith("break ") and breaks
        lead = breaks[0] if by_break else min(members, key=lambda m: (
            _SEVERITY_ORDER.get(m["severity"], 3), m["code"] != "graph_break"))  # fmt: skip
        members = [lead, *(m for m in members if m is not lead)]
        tried = [m for m in members if m.get("tried")]
        deferred = [m for m in members if m["code"] == _ADVICE_FROM.get(lead["code"])]
        advice = (tried or deferred or [lead])[-1]["advice"]
        merged: Finding = {
            **lead,
            "severity": worst["severity"],
            "advice": advice,
            "evidence": list(dict.fromkeys(e for m in members for e in m["evidence"])),
            "also": _also(lead, members[1:]),
        }
        shown.append(merged)
    return shown


@dataclass(frozen=True)
class FindingBlock:
    """One block of the findings list, the same in every rendering: a root cause's lead
    finding (report/format.py :func:`grouped_findings`), its cause's other findings
    (``also``), its evidence, and its fix (the first sentences; ``more``: the rest). Paths
    read as :func:`~pt2doctor.analysis.paths.shorten_paths` writes them."""

    severity: str
    code: str
    title: str
    also: list[str]
    evidence: list[str]
    advice: str
    more: str


def finding_blocks(
    findings: list[Finding], limit: int, cwd: str | None = None
) -> tuple[list[FindingBlock], int]:
    """The first ``limit`` blocks of ``findings`` (one per root cause, errors first), and how
    many more there are."""
    shown = grouped_findings(findings)
    blocks = [
        FindingBlock(
            f["severity"],
            f["code"],
            shorten_paths(f["title"], cwd),
            [shorten_paths(also, cwd) for also in f.get("also", [])],
            [shorten_paths(str(line), cwd) for line in f["evidence"]],
            *advice_parts(shorten_paths(f["advice"], cwd)),
        )
        for f in shown[:limit]
    ]
    return blocks, max(0, len(shown) - limit)


def _after_shared(first: str, title: str) -> str:
    """``title`` without the words it opens with in common with ``first`` (the frame both
    findings name): ``recompiled 7 times: 8 variants``."""
    shared = 0
    for a, b in zip(first.split(" "), title.split(" "), strict=False):
        if a != b:
            break
        shared += 1
    return " ".join(title.split(" ")[shared:]) if shared >= 2 else title


def report_inputs(report: Mapping[str, Any]) -> list[str]:
    """What the report was built from, as a reader knows it: a run's directory (its logs lie
    in ``trace/``), else the log paths."""
    paths = [str(path) for path in report["inputs"]["paths"]]
    folders = {os.path.dirname(path) for path in paths}
    if "run" in report and len(folders) == 1 and os.path.basename(next(iter(folders))) == "trace":
        return [os.path.dirname(next(iter(folders))) or "."]  # `report .` inside the run dir
    return paths


_MANY = 3
"""From this many, the recompiles of the frames of one cause read as one line."""


def _also(lead: Finding, others: list[Finding]) -> list[str]:
    """``code: title`` of each other finding of a block; the recompiles of many frames (those
    a break split off) as one line, each frame by its subject's name: ``recompiles of 6
    frames it split off (train_step, wrapper, GPT2LMHeadModel.forward ×2, …): 2 variants by
    design``. A report written before findings had subjects lists them one by one."""
    frames = [m for m in others if m["code"] == "recompiles"]
    named = [(m.get("subject", {}).get("name"), m.get("facts", {}).get("state")) for m in frames]
    if len(frames) < _MANY or any(name is None or state is None for name, state in named):
        return [f"{m['code']}: {_after_shared(lead['title'], m['title'])}" for m in others]
    names: dict[str, int] = {}
    for name, _ in named:
        names[str(name)] = names.get(str(name), 0) + 1
    states = {str(state) for _, state in named}
    listed = ", ".join(name + (f" ×{n}" if n > 1 else "") for name, n in names.items())
    state = f": {states.pop()}" if len(states) == 1 else ""
    split = "it split off" if lead["code"] == "graph_break" else "of this cause"
    rest = [m for m in others if m["code"] != "recompiles"]
    return [
        f"recompiles of {len(frames)} frames {split} ({listed}){state}",
        *(f"{m['code']}: {_after_shared(lead['title'], m['title'])}" for m in rest),
    ]


# Markdown's pieces, shared by the run, check, ablate and diff documents.
_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~])")


def md_text(value: object) -> str:
    """Plain text safe in a Markdown paragraph or table cell (one line)."""
    text = " ".join(str(value).split())
    return _MD_SPECIAL.sub(r"\\\1", html.escape(text, quote=False))


def md_code(value: object) -> str:
    """Monospace text (one line). An HTML ``<code>`` element rather than a backtick span, so a
    backtick in the text cannot end it; its content is escaped like any text (GitHub parses
    Markdown inside inline HTML)."""
    text = md_text(value)
    return f"<code>{text}</code>" if text else ""


def md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    """Table lines; cells must already be escaped (md_text / md_code)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return [*lines, ""]


NOTHING_TO_FIX = "Nothing needs fixing: the findings below are for reference."


NO_FINDINGS = "No findings: every compile is explained and nothing needs action."


def export_line(export: Mapping[str, Any]) -> str:
    """An export's events in one line: how many guards it added, and where the first was."""
    parts = []
    for key, word in (("guards_added", "guard added"), ("data_dependent", "data-dependent "
                      "expression"), ("unbacked_symbols", "unbacked symbol"),
                      ("missing_fake_kernels", "missing fake kernel"),
                      ("mismatched_fake_kernels", "mismatched fake kernel")):  # fmt: skip
        rows = export.get(key) or []
        if not rows:
            continue
        first = rows[0]
        where = first.get("user_line") or {}
        at = f" at {where.get('file')}:{where.get('line')}" if where.get("line") else ""
        if word == "guard added":
            word = "guards added" if len(rows) > 1 else word
        elif len(rows) > 1:
            word += "s"
        parts.append(f"{len(rows)} {word}, first {first['expr']}{at}")
    return "; ".join(parts) or "no guard added"


def no_findings_text(report: Mapping[str, Any]) -> str:
    """What a report without findings says: a log with no Dynamo compile says what it holds
    (an AOTInductor build, an export), never that every compile is explained."""
    if (report.get("summary") or {}).get("compiles", 1):
        return NO_FINDINGS
    held = []
    aot = report.get("aot_inductor")
    if aot:
        held.append(f"an AOTInductor build of {len(aot['kernels'])} kernels (aot_inductor)")
    export = report.get("export")
    if export:
        held.append(f"an export ({export_line(export)}; export in report.json)")
    records = (report.get("parse_stats") or {}).get("records")
    if records:
        held.append(f"{records} records in all")
    holds = f": it holds {', '.join(held)}" if held else ""
    return f"No Dynamo compile in this log, so nothing to explain about compiles{holds}."


def only_info(report: Mapping[str, Any]) -> bool:
    """Findings, every one of them ``info``, in a report that has a plan (before 2026-12-01 a
    report had none, so its empty plan says nothing)."""
    findings = report.get("findings") or []
    return "plan" in report and bool(findings) and all(f["severity"] == "info" for f in findings)

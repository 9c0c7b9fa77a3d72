"""Parse the free-text messages Dynamo logs: graph-break reasons and user tracebacks."""

from __future__ import annotations

import os

from pt2doctor.trace.patterns import lazy_compile
from pt2doctor.trace.types import GraphBreakEvent, SourceLine

_USER_CODE_AT = lazy_compile(r"Graph break in user code at (.+):(\d+)")
_TRACEBACK_FRAME = lazy_compile(r'^\s*File "(.+)", line (\d+), in (.+)$')
_GB_ID = lazy_compile(r"/gb/(gb\d+)\.html")
_REASON_HEAD = lazy_compile(r"^(?:Graph Break Reason|Reason):\s*(.*)$")


def parse_user_stack(lines: list[str]) -> list[SourceLine]:
    """Frames of a Python traceback (``File "f", line N, in fn`` plus the code line after it)."""
    frames: list[SourceLine] = []
    for index, line in enumerate(lines):
        match = _TRACEBACK_FRAME.match(line)
        if match is None:
            continue
        code = None
        if index + 1 < len(lines) and not _TRACEBACK_FRAME.match(lines[index + 1]):
            candidate = lines[index + 1].strip()
            if candidate and not set(candidate) <= set("^~ "):
                code = candidate
        frames.append(SourceLine(match.group(1), int(match.group(2)), match.group(3), code))
    return frames


# What Dynamo appends to every error alike (generic hints, its debug context, a link, how to get
# more logs): left out of the one-line summary, where it crowded out the message itself.
_BOILERPLATE = (
    "Hint:",
    "Developer debug context:",
    "For more details about this graph break",
    "Set TORCHDYNAMO_VERBOSE=1",
)


def error_summary(text: str) -> str:
    """A torch error message on one line: Dynamo's boilerplate left out, and its ``from user
    code:`` traceback (outermost frame first) reduced to the innermost frame, the line that
    raised."""
    lines = text.splitlines()
    cut = _user_code_line(lines)
    head = lines if cut is None else lines[:cut]
    kept = [line for line in head if not line.strip().startswith(_BOILERPLATE)]
    summary = " ".join(" ".join(kept).split())
    last = stopped_at(text)
    if last is not None:
        code = f": {last.code}" if last.code else ""
        summary += f" (at {last.file}:{last.line} in {last.function}{code})"
    return summary


def _user_code_line(lines: list[str]) -> int | None:
    return next((i for i, line in enumerate(lines) if line.strip() == "from user code:"), None)


def stopped_at(text: str) -> SourceLine | None:
    """The innermost frame of a torch error's ``from user code:`` traceback: the line where
    Dynamo stopped (None when the message has no such traceback)."""
    lines = text.splitlines()
    cut = _user_code_line(lines)
    frames = [] if cut is None else parse_user_stack(lines[cut + 1 :])
    return frames[-1] if frames else None


def error_line(kind: str, message: str) -> str:
    """``Type: message`` on one line (:func:`error_summary`), at most 500 characters."""
    return f"{kind}: {error_summary(message)}"[:500]


# pt2doctor's own package folder (a source checkout's src/pt2doctor, or site-packages').
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))).replace("\\", "/") + "/"


def is_user_file(path: str) -> bool:
    """Not torch, an installed package, the standard library or pt2doctor itself (its package
    folder: a user's project that happens to be named pt2doctor is still the user's)."""
    normalized = path.replace("\\", "/")
    foreign = ("site-packages/", "dist-packages/", "/lib/python3", "/torch/")
    return not normalized.startswith(("<", _PACKAGE_DIR)) and not any(
        part in normalized for part in foreign
    )


def innermost_user_frame(lines: list[str]) -> SourceLine | None:
    """The last frame of the user's own code in a traceback (torch, installed packages, the
    standard library and pt2doctor are not the user's): where a user pass or kernel raised."""
    return innermost_user(parse_user_stack(lines))


def innermost_user(frames: list[SourceLine]) -> SourceLine | None:
    """The last of ``frames`` (outermost first) in the user's own code (:func:`is_user_file`)."""
    mine = [frame for frame in frames if frame.file and is_user_file(frame.file)]
    return mine[-1] if mine else None


def _section(lines: list[str], start: str, stop: tuple[str, ...]) -> list[str]:
    """The lines after the first line starting with ``start`` up to one starting with ``stop``."""
    out: list[str] = []
    inside = False
    for line in lines:
        if not inside:
            inside = line.startswith(start)
            continue
        if line.startswith(stop):
            break
        out.append(line)
    return out


def _reason_block(lines: list[str]) -> list[str]:
    """The reason text: from ``Graph Break Reason:`` to the user traceback."""
    block: list[str] = []
    for line in lines:
        if line.startswith(
            ("User code traceback:", "Traceback (most recent call last)", "Stack variable source")
        ):
            break
        if block or _REASON_HEAD.match(line):
            block.append(line)
    return block


def explanation_and_hints(lines: list[str]) -> tuple[str, list[str]]:
    """The ``Explanation:`` and ``Hint:`` lines of a Dynamo Unsupported message."""
    explanation = " ".join(
        line.strip().removeprefix("Explanation:").strip()
        for line in lines
        if line.strip().startswith("Explanation:")
    )
    hints = [
        line.strip().removeprefix("Hint:").strip()
        for line in lines
        if line.strip().startswith("Hint:")
    ]
    return explanation, hints


def parse_graph_break(text: str, compile_id: str) -> GraphBreakEvent:
    """Parse a ``dynamo_graph_break_reason`` artifact (torch 2.6 to 2.13 spellings)."""
    lines = text.splitlines()
    block = _reason_block(lines)
    head = _REASON_HEAD.match(block[0]) if block else None
    body = [line for line in block[1:] if line.strip()]
    # torch >= 2.7: "Encountered graph break when attempting to trace X:" then the gb_type line.
    gb_type = body[0].strip() if body and head and head.group(1).rstrip().endswith(":") else ""
    if not gb_type:
        gb_type = (head.group(1) if head else (lines[0] if lines else "")).strip()
    explanation, hints = explanation_and_hints(body)
    stack = parse_user_stack(_section(lines, "User code traceback:", ("Traceback (most recent",)))
    site = stack[-1] if stack else None
    at = _USER_CODE_AT.search(text)
    if site is None and at is not None:
        site = SourceLine(at.group(1), int(at.group(2)), None)
    gb_id = _GB_ID.search(text)
    reason_lines = [line.rstrip() for line in block if not line.strip().startswith("For more")]
    return GraphBreakEvent(
        compile_id=compile_id,
        site=site,
        gb_type=gb_type,
        reason="\n".join(reason_lines).strip() or gb_type,
        explanation=explanation,
        hints=hints,
        user_stack=stack,
        gb_id=gb_id.group(1) if gb_id else None,
    )

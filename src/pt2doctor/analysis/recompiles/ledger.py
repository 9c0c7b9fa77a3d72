"""The compile ledger: for every frame its compiles, and for every compile why it happened."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from pt2doctor.analysis.recompiles.guards import (
    FailedGuard,
    diff_guard_sets,
    fold_inference_mode,
    merge_failed_guards,
    parse_recompile_reason,
)
from pt2doctor.trace.patterns import lazy_compile
from pt2doctor.trace.records import CompileId
from pt2doctor.trace.types import CompileRecord, Run, SourceLine

RESUME_PREFIX = "torch_dynamo_resume_in_"
RESUME_NAME = lazy_compile(r"^torch_dynamo_resume_in_(.+)_at_(\d+)$")
# Why a compile happened, and how a compile failed (report.json compiles[].cause, failures[].kind).
Cause = Literal["first_compile", "recompile", "resume_after_graph_break"]
FailureKind = Literal["recompile_limit", "skipped_frame", "compile_error"]
_LIMIT_HIT = lazy_compile(r"recompile.limit|cache_size_limit|recompile_limit", re.I)


@dataclass(slots=True)
class CompileEntry:
    """One compile with its cause: ``first_compile``, ``recompile`` or
    ``resume_after_graph_break``; restarts and failure are reported beside the cause."""

    record: CompileRecord
    cause: Cause
    failed_guards: list[FailedGuard] = field(default_factory=list)
    resumes_after: tuple[str, int] | None = None
    """For a resume function: (function, line) of the graph break it continues after."""
    function: str | None = None
    """The frame's function (a compile that failed early may not log its own)."""

    @property
    def compile_id(self) -> str:
        return str(self.record.compile_id)

    @property
    def phases(self) -> dict[str, float]:
        return compile_phases(self.record.timings)


def compile_phases(timings: dict[str, float]) -> dict[str, float]:
    """Split a compile's nested timers into disjoint phases (seconds).

    total > backend > inductor > codegen are nested; the C++/Triton kernel build happens inside
    codegen. ``cpp_build`` (compile_file events) and ``triton_build`` (waiting for async kernel
    compiles, C++ kernels included on CPU) overlap, so the build phase is the larger of the two.
    With a non-Inductor backend, ``backend`` is the backend's own time.
    """
    total, backend = timings.get("total"), timings.get("backend")
    inductor, codegen = timings.get("inductor"), timings.get("codegen")
    build = max(timings.get("cpp_build", 0.0), timings.get("triton_build", 0.0))
    if codegen is not None:
        build = min(build, codegen)
    phases: dict[str, float] = {}
    if total is not None:
        phases["dynamo_tracing"] = max(total - (backend or 0.0), 0.0)
    if backend is not None:
        phases["aot_autograd" if inductor is not None else "backend"] = max(
            backend - (inductor or 0.0), 0.0
        )
    if inductor is not None:
        phases["inductor_lowering"] = max(inductor - (codegen or 0.0), 0.0)
    if codegen is not None:
        phases["inductor_codegen"] = max(codegen - build, 0.0)
    if build:
        phases["cpp_triton_build"] = build
    return phases


@dataclass(slots=True)
class FailureEntry:
    """A compile that did not produce code: a compiler error, a skipped frame, a limit hit."""

    compile_id: str
    stream: str
    kind: FailureKind
    """``compile_error``, ``skipped_frame`` or ``recompile_limit``."""
    fail_type: str
    fail_reason: str
    function: str | None
    user_frame: SourceLine | None
    raised_in: SourceLine | None = None
    """The innermost user frame of the error's traceback (a user pass, a custom kernel)."""


@dataclass(slots=True)
class FrameEntry:
    """A code object Dynamo saw, with its compiles in order."""

    stream: str
    frame_id: int
    function: str | None
    file: str | None
    line: int | None
    compiles: list[CompileEntry] = field(default_factory=list)
    limit_hit: bool = False
    refused: CompileEntry | None = None
    """The compile Dynamo refused because the frame reached its recompile limit: not a
    variant, not a failure; from then on new inputs run the frame eagerly."""
    skipped: bool = False
    """No compile of this frame produced a graph: it runs eagerly."""
    skip_reason: str | None = None

    @property
    def variants(self) -> int:
        """Compiled variants kept in Dynamo's cache (compiles that produced guarded code)."""
        return sum(1 for entry in self.compiles if produced_code(entry.record))

    @property
    def recompiles(self) -> list[CompileEntry]:
        """Recompiles that happened (the refused attempt at the limit is not one)."""
        return [
            entry
            for entry in self.compiles
            if entry.cause == "recompile" and entry is not self.refused
        ]

    @property
    def is_resume(self) -> bool:
        return bool(self.function and self.function.startswith(RESUME_PREFIX))


@dataclass(slots=True)
class Ledger:
    frames: list[FrameEntry]
    compiles: list[CompileEntry]
    failures: list[FailureEntry]


def produced_code(record: CompileRecord) -> bool:
    """The compile left guarded code in Dynamo's cache (a variant)."""
    if record.has_guarded_code is not None:
        return bool(record.has_guarded_code)
    return record.graph_count > 0 and record.fail_type is None


def _failure_kind(record: CompileRecord) -> FailureKind:
    if _LIMIT_HIT.search(record.fail_reason or ""):
        return "recompile_limit"
    if record.fail_type == "Unsupported" or (
        not produced_code(record) and "skip" in (record.fail_reason or "").lower()
    ):
        return "skipped_frame"
    return "compile_error"


def _expand_path(source: SourceLine | None, frame_file: str | None) -> SourceLine | None:
    """Dynamo shortens file names in guard comments; restore the frame's full path."""
    if source is None or not source.file or not frame_file or source.file == frame_file:
        return source
    if frame_file.endswith(source.file):
        return SourceLine(frame_file, source.line, source.function, source.code)
    return source


def _failed_guards(
    record: CompileRecord, earlier: list[CompileRecord], frame_file: str | None
) -> list[FailedGuard]:
    failures = [fg for reason in record.recompile_reasons for fg in parse_recompile_reason(reason)]
    named = {variant for failure in failures for variant in failure.against}
    by_id = {str(old.compile_id): old for old in earlier}
    variants = [by_id[v] for v in sorted(named) if v in by_id] or [e for e in earlier if e.guards]
    if record.guards:
        for old in variants:
            if old.guards:
                failures += diff_guard_sets(
                    old.guards, record.guards, record.symbols, str(old.compile_id)
                )
                failures = fold_inference_mode(
                    failures, old.guards, record.guards, str(old.compile_id)
                )
    merged = merge_failed_guards(failures)
    specialized = {text.split(" = ", 1)[0].strip() for text in record.specializations}
    dynamic_sources = {
        source for symbol, (source, _) in record.symbols.items() if symbol not in specialized
    }
    for failure in merged:
        failure.source = _expand_path(failure.source, frame_file)
        failure.now_dynamic = failure.guarded_source in dynamic_sources
    return merged


def _cause(record: CompileRecord) -> Cause:
    if record.compile_id.frame_compile_id:
        return "recompile"
    if record.function and record.function.startswith(RESUME_PREFIX):
        return "resume_after_graph_break"
    return "first_compile"


def _frame(stream: str, records: list[CompileRecord]) -> FrameEntry:
    first = next((r for r in records if r.function), records[0])
    frame = FrameEntry(
        stream, records[0].compile_id.frame_id or 0, first.function, first.file, first.line
    )
    for index, record in enumerate(records):
        entry = CompileEntry(record, _cause(record), function=record.function or frame.function)
        if entry.cause == "recompile":
            entry.failed_guards = _failed_guards(record, records[:index], frame.file)
        resume = RESUME_NAME.match(record.function or "")
        if resume is not None:
            entry.resumes_after = (resume.group(1), int(resume.group(2)))
        frame.compiles.append(entry)
        if record.fail_type and _failure_kind(record) == "recompile_limit":
            frame.limit_hit = True
            frame.refused = entry
    # Dynamo gave up and runs the frame eagerly; a compiler error is raised to the user instead.
    gave_up = [r for r in records if r.fail_type and _failure_kind(r) == "skipped_frame"]
    if gave_up and not any(produced_code(r) for r in records):
        frame.skipped = True
        frame.skip_reason = next((r.fail_reason for r in records if r.fail_reason), None)
    return frame


def _failure(entry: CompileEntry) -> FailureEntry:
    record = entry.record
    return FailureEntry(
        compile_id=str(record.compile_id),
        stream=record.stream,
        kind=_failure_kind(record),
        fail_type=record.fail_type or "",
        fail_reason=record.fail_reason or record.dynamo_error or "",
        function=entry.function,
        user_frame=record.fail_user_frame,
        raised_in=record.raised_in,
    )


def _chronological(entry: CompileEntry) -> tuple[float, str, int, int, int, int]:
    cid = entry.record.compile_id
    return (
        entry.record.start_time or 0.0,
        entry.record.stream,
        -1 if cid.compiled_autograd_id is None else cid.compiled_autograd_id,
        -1 if cid.frame_id is None else cid.frame_id,
        -1 if cid.frame_compile_id is None else cid.frame_compile_id,
        cid.attempt,
    )


def compile_ledger(run: Run) -> Ledger:
    """Group compiles by frame and explain each one (pure: reads only the Run)."""
    by_frame: dict[tuple[str, int | None, int | None], list[CompileRecord]] = {}
    for record in run.compiles:
        cid: CompileId = record.compile_id
        key = (record.stream, cid.compiled_autograd_id, cid.frame_id)
        by_frame.setdefault(key, []).append(record)
    frames = []
    for (stream, _, _), records in by_frame.items():
        records.sort(key=lambda r: r.compile_id.frame_compile_id or 0)
        frames.append(_frame(stream, records))
    compiles = [entry for frame in frames for entry in frame.compiles]
    compiles.sort(key=_chronological)
    refused = {id(frame.refused) for frame in frames if frame.refused is not None}
    failures = [_failure(e) for e in compiles if e.record.fail_type and id(e) not in refused]
    return Ledger(frames=frames, compiles=compiles, failures=failures)

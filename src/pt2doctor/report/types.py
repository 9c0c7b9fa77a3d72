"""The run report's types (report.json of ``pt2doctor report`` and ``pt2doctor run``,
docs/report-schema.md): one ``TypedDict`` per part and ``Literal`` types for the vocabularies
(severity, finding code, compile cause, guard and graph-break category). ``mypy --strict``
checks the keys of the parts typed here; parts still typed ``dict[str, Any]`` (``run``,
``profile``, ``cold_start``, a frame's ``outlook`` and ``variants_table``) are not checked.

Parts that are optional or still growing (``frames[]``, ``compiles[]``: new fields land there
often) are ``total=False``. The
vocabularies are defined once, in the analysis modules that produce them, and imported here for
type checking only: importing this module at run time imports nothing from pt2doctor.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, TypedDict

if TYPE_CHECKING:  # typing only: importing this module stays free
    from pt2doctor.analysis.breaks.sites import BreakCategory
    from pt2doctor.analysis.findings.codes import Code, Severity
    from pt2doctor.analysis.findings.model import Fact, SubjectKind
    from pt2doctor.analysis.recompiles.guards import GuardCategory
    from pt2doctor.analysis.recompiles.ledger import Cause, FailureKind

# What each report is (``kind``); a report without one predates the field and is a run report.
Kind = Literal["run", "check", "ablate", "profile"]
KINDS: tuple[Kind, ...] = ("run", "check", "ablate", "profile")
# Re-exported for the renderers; defined where the analyses produce them.
__all__ = [
    "BreakCategory",
    "Cause",
    "FailureKind",
    "GuardCategory",
    "Severity",
]


def report_kind(report: Mapping[str, Any]) -> Kind:
    """The report's ``kind``; reports written before the field existed are run reports."""
    kind = report.get("kind", "run")
    if kind not in KINDS:
        raise ValueError(f"unknown report kind {kind!r} (known: {', '.join(KINDS)})")
    return kind  # type: ignore[no-any-return]


class Tool(TypedDict):
    name: str
    version: str


class Inputs(TypedDict):
    paths: list[str]
    streams: list[str]


class Source(TypedDict):
    """A source location (``SourceLine.as_dict``)."""

    file: str | None
    line: int | None
    function: str | None
    code: str | None


class Summary(TypedDict):
    frames: int
    compiles: int
    compile_ids: int
    graphs: int
    break_sites: int
    graph_breaks: int
    recompiles: int
    restarts: int
    failures: int
    skipped_frames: int
    limit_hits: int
    refused: int
    total_compile_time_s: float
    cache: dict[str, dict[str, int]]


class Subject(TypedDict, total=False):
    """``findings[].subject``: what the finding is about (analysis/findings/model.py
    ``Subject``); only the fields that are set. Absent in reports before 2026-12-02."""

    kind: SubjectKind
    name: str
    file: str
    line: int
    function: str
    stream: str
    frame_id: int
    compile_id: str


class _FindingBase(TypedDict):
    severity: Severity
    code: Code
    title: str
    advice: str
    evidence: list[Any]


class Finding(_FindingBase, total=False):
    subject: Subject
    facts: dict[str, Fact]
    """Typed evidence the renderers read (a recompiles finding's ``recompiles``, ``refused``,
    ``state``). Absent in reports before 2026-12-02, and when a finding has none."""
    saves_ms: float
    """What the fix saves per call of the hot loop, as the profile measured it."""
    saves_unmeasured: str
    """Why there is no ``saves_ms``, where the finding knows (a fix only the user can apply,
    a trial that could not run). Absent in reports before 2026-12-03."""
    tryable: list[dict[str, Any]]
    """The fixes pt2doctor can apply itself (``run --try-fixes``), in the advice's order:
    ``{label, config, marks, compile}``."""
    tried: dict[str, Any]
    """``run --try-fixes``: the last try of its fixes, ``{fix, applied_as, before, after,
    verdict: helped|no_effect|worse|unsafe, run_dir, trial, summary, results_changed?}``."""
    tries: list[dict[str, Any]]
    """Every try of its fixes, in order (``tried`` is the last)."""
    not_tried: list[dict[str, str]]
    """``run --try-fixes``: each of its fixes not re-run, ``{fix, why}``. Added 2026-12-07."""
    cause: str
    """Shared by the findings of one root cause (a frame's ``recompile_limit_hit`` and its
    ``recompiles``: ``frame STREAM/ID``); the reports show them as one."""
    also: list[str]
    """Display only (report/format.py grouped_findings): ``code: title`` of the findings of
    the same cause shown under this one. Never in report.json."""


class _PlanItemBase(TypedDict):
    step: str
    """correctness, recompiles, graph breaks or performance: the practice's order."""
    code: str
    title: str
    saves_ms: float | None


class PlanItem(_PlanItemBase, total=False):
    """One line of "What to do first" (``plan[]``)."""

    saves_unmeasured: str
    """A performance line with no ``saves_ms``: why its saving is not measured. Absent in
    reports before 2026-12-03."""

    tried: str
    """``tried recompile_limit = 12: helped, limit hits 1 → 0, compiles 9 → 12``: what
    ``run --try-fixes`` measured for its frame's fix."""


class _GraphBreakTime(TypedDict, total=False):
    ms_per_call: float
    """The break's measured cost per call of the hot loop (``run --profile`` only)."""


class GraphBreak(_GraphBreakTime):
    """One row of ``graph_breaks[]``: a user site, deduplicated across compiles."""

    site: Source
    category: BreakCategory
    reason: str
    gb_type: str | None
    gb_id: str | None
    hints: list[str]
    user_stack: list[Source]
    compile_ids: list[str]
    streams: list[str]
    occurrences: int
    hits: int | None
    hot: bool | None
    frame_skipped: bool
    splits_nothing: bool  # absent in reports before 2026-11-30: renderers do not read it
    by_design: bool  # absent in reports before 2026-12-01: renderers do not read it
    also_in_library: list[Source]  # absent in reports before 2026-12-04
    advice: str


class _FailedGuardBase(TypedDict):
    text: str
    category: GuardCategory
    source: Source | None
    against: list[str]
    origin: str | None
    now_dynamic: bool


class FailedGuard(_FailedGuardBase, total=False):
    tensor: str | None
    """A tensor guard's tensor, as the user names it (``kwargs['input_ids']``), else null;
    absent before 2026-12-02."""
    field: str | None
    """What of that tensor failed: ``size``, ``stride``, ``dtype``, ``device``, ...; else
    null; absent before 2026-12-02."""


class _ChangeBase(TypedDict):
    source: str
    kind: str
    old: str | None
    new: str | None


class Change(_ChangeBase, total=False):
    """What one recompile changed, in the user's names (analysis/recompiles/changes.py
    ``SourceChange.as_dict``)."""

    count: int
    unit: str | None
    folded: list[str]
    dynamic: bool
    hint: str | None
    installed_at: Source | None
    specialized_at: Source | None


class Recompile(TypedDict, total=False):
    compile_id: str
    failed_guards: list[FailedGuard]
    compared_with: str | None
    changes: list[Change]


class Frame(TypedDict, total=False):
    """One row of ``frames[]``; the fields every report has today (more are being added)."""

    stream: str
    frame_id: int
    function: str | None
    file: str | None
    line: int | None
    compiles: int
    compile_ids: list[str]
    variants: int
    limit_hit: bool
    skipped: bool
    skip_reason: str | None
    is_resume: bool
    recompiles: list[Recompile]
    display_name: str
    name: str
    """How the user knows the frame without its wrapper (``GPT2LMHeadModel.forward``);
    absent before 2026-12-02."""
    through: str | None
    """The generic wrapper the frame goes through and where (``transformers' wrapper at
    utils/generic.py:1030``), else null; absent before 2026-12-02."""
    refused: Recompile | None
    variants_table: list[dict[str, Any]]
    outlook: dict[str, Any]
    fixes: list[Any]
    compiled_at: dict[str, Any] | None
    """The user's ``torch.compile`` call this frame came from: ``{file, line, name}`` (a run's
    probes; null without, or when the run made several calls none of which names it)."""


class ResumesAfter(TypedDict):
    function: str | None
    line: int | None


class DynamicSymbol(TypedDict):
    symbol: str
    source: str | None
    value: Any


class UserLine(TypedDict):
    file: str
    line: int
    code: str


class Kernel(TypedDict):
    """One kernel of a compile (``compiles[].kernels[]``): what Inductor launched."""

    name: str
    kind: Literal["generated", "library", "fallback", "sync"]
    ops: list[str]
    user_lines: list[UserLine]


class KernelMapInfo(TypedDict, total=False):
    source: Literal["provenance", "output_code"]
    partial: str | None
    cached_lines: str
    """Only when the graph came from Inductor's cache: its lines may be stale, and why."""


class GraphLineOps(TypedDict):
    file: str
    line: int
    code: str
    ops: int


class GraphSize(TypedDict):
    """``compiles[].graph``: the Dynamo graph's ops, by user line (most first)."""

    ops: int
    by_line: list[GraphLineOps]


class FusionSide(TypedDict):
    name: str
    """The scheduler's node name (``op3``; ``op0_op1`` once fused)."""
    kernel: str | None
    line: UserLine | None


class FusionRefusal(TypedDict):
    a: str
    b: str
    reason: str
    count: int
    a_side: FusionSide
    b_side: FusionSide


class FusionInfo(TypedDict):
    """``compiles[].fusion``: the fusions Inductor's scheduler refused, from its fusion log."""

    available: bool
    fused: int
    rejected: list[FusionRefusal]
    more: int
    note: str | None


class Compile(TypedDict, total=False):
    """One row of ``compiles[]``, in the order they happened. The heat fields (``calls`` to
    ``after_warmup``) are null unless the report comes from a run."""

    compile_id: str
    stream: str
    rank: int | None
    cudagraph_skip_reason: str
    """Why Inductor skipped CUDA graphs for it (present only when it did)."""
    frame_id: int | None
    function: str | None
    file: str | None
    line: int | None
    cause: Cause
    resumes_after: ResumesAfter | None
    attempts: int
    restarts: list[str]
    start_time: float | None
    compile_time_s: float | None
    phases: dict[str, float]
    cache: dict[str, str]
    graph_count: int
    graph_op_count: int | None
    failed: bool
    fail_type: str | None
    refused: bool
    caches: dict[str, dict[str, Any]]
    dynamic_symbols: list[DynamicSymbol]
    specializations: list[Any]
    calls: int | None
    seconds_in_graph: float | None
    seconds_per_call_median: float | None
    seconds_per_call_mad: float | None
    t_s: float | None
    frame_calls: int | None
    after_warmup: bool | None
    kernels: list[Kernel]
    kernel_map: KernelMapInfo | None
    graph: GraphSize | None
    fusion: FusionInfo


class Failure(TypedDict):
    compile_id: str
    stream: str
    kind: FailureKind
    fail_type: str | None
    fail_reason: str | None
    function: str | None
    user_frame: Source | None
    raised_in: Source | None


class FrameRef(TypedDict):
    """A frame matched across ranks by function, file and line (frame ids differ by rank)."""

    function: str | None
    file: str | None
    line: int | None


class RankGuard(TypedDict):
    text: str
    category: GuardCategory


class RankRecompile(TypedDict, total=False):
    """A recompile on one rank; ``rank`` and ``label`` when listed under a divergence."""

    rank: int | None
    label: str
    compile_id: str
    frame: FrameRef | None
    failed_guards: list[RankGuard]


class RankRow(TypedDict):
    """One row of ``ranks.per_rank[]``: one log."""

    rank: int | None
    label: str
    stream: str
    path: str | None
    name_rank: int | None
    envelope_ranks: list[int]
    compiles: int
    recompiles: list[RankRecompile]
    compile_time_s: float
    graphs: int
    break_sites: int
    failures: int
    cache: dict[str, int]
    graph_calls: int | None


class Divergence(TypedDict):
    """How the ranks differ (each also a finding, ``code``)."""

    kind: str
    code: str
    severity: Severity
    ranks: list[int | None]
    labels: list[str]
    title: str
    evidence: list[str]
    frame: FrameRef | None
    recompiles: list[RankRecompile]
    skew_s: float | None


class Ranks(TypedDict):
    """``ranks``: only when the logs name more than one rank."""

    count: int
    collective_timeout_s: float
    compile_skew_s: float
    timeout_share: float
    slowest: str
    fastest: str
    per_rank: list[RankRow]
    divergences: list[Divergence]


class _RunReportParts(TypedDict):
    schema_version: int
    tool: Tool
    inputs: Inputs
    environment: dict[str, Any]
    summary: Summary
    findings: list[Finding]
    graph_breaks: list[GraphBreak]
    frames: list[Frame]
    compiles: list[Compile]
    failures: list[Failure]
    parse_stats: dict[str, Any]


class RunReport(_RunReportParts, total=False):
    """report.json of ``pt2doctor report`` / ``run``. ``kind`` is absent from reports written
    before it was added; ``run`` only after ``pt2doctor run``; ``ranks`` only with more than one
    rank; ``redacted`` only with ``--redact``."""

    kind: Literal["run"]
    plan: list[PlanItem]
    """What to do first: at most five actions (absent before 2026-12-01)."""
    run: dict[str, Any]
    profile: dict[str, Any]
    """Where the profiled window's time went (``run --profile``)."""
    ranks: Ranks
    redacted: bool
    cold_start: dict[str, Any]
    aot_inductor: dict[str, Any]
    export: dict[str, Any]
    """What an export logged (``torch.export``): guards added, data-dependent expressions,
    unbacked symbols, fake-kernel problems, the exported program."""
    """What AOTInductor built (a log of ``aoti_compile_and_package``): its kernels, each with
    its ops and user lines from the provenance artifacts, which carry no compile id."""


class ProfileReport(TypedDict):
    """report.json of ``pt2doctor report TRACE.json[.gz]`` (report/device_report.py): the
    device side of profiler traces the user recorded."""

    schema_version: int
    kind: Literal["profile"]
    tool: Tool
    inputs: dict[str, list[str]]
    summary: dict[str, Any]
    plan: list[PlanItem]
    findings: list[Finding]
    device: list[dict[str, Any]]
    notes: list[str]
    parse_stats: dict[str, Any]

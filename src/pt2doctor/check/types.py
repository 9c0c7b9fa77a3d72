"""The check report's types (report.json with ``"kind": "check"``, docs/report-schema.md) and
the check worker's events: one ``TypedDict`` per part, ``Literal`` types for verdicts, so
``mypy --strict`` checks every key the check renderers (check/terminal.py, check/markdown.py,
check/views.py, check/perf_views.py) read. The verdict order is defined here, once."""

from __future__ import annotations

from typing import Any, Literal, TypedDict

# A cell's verdict per compile variant; a cell's own verdict is the worst of its variants'.
Verdict = Literal[
    "pass", "nondeterministic", "fail", "error", "crash", "timeout", "fatal", "not run"
]
# Worst first. A verdict not listed (``not run``, or one a newer pt2doctor wrote) ranks as
# ``error``: :func:`verdict_rank`.
VERDICT_RANK: dict[str, int] = {
    "crash": 6,
    "timeout": 6,
    "fatal": 6,
    "error": 5,
    "fail": 4,
    "nondeterministic": 1,
    "pass": 0,
}
UNKNOWN_VERDICT_RANK = VERDICT_RANK["error"]
# Verdicts that count as aligned: the compiled result matches eager (or eager itself varies).
ALIGNED: tuple[Verdict, ...] = ("pass", "nondeterministic")


def verdict_rank(verdict: str | None) -> int:
    """How bad ``verdict`` is (higher: worse); absent or unknown verdicts rank as ``error``."""
    return VERDICT_RANK.get(verdict or "not run", UNKNOWN_VERDICT_RANK)


class Tool(TypedDict):
    name: str
    version: str


class TensorCheck(TypedDict, total=False):
    """One compared tensor of an alignment (``tensors[]``)."""

    name: str
    shape: list[int]
    dtype: str
    max_abs_error: float | None
    max_rel_error: float | None
    rmse_ratio: float | None
    cosine: float | None
    passed: bool
    rule: str
    stride_mismatch: bool
    nonfinite: int
    """Elements inf or NaN in eager's output (absent when none; added 2026-12-07)."""
    nonfinite_fp64_finite: bool | None


class Alignment(TypedDict, total=False):
    """A cell under one compile variant (``cells[].variants[name]``); ``error`` and ``phase``
    on failure, ``warmup_error`` when the compiled warmup call failed."""

    verdict: Verdict
    tolerance: float | None
    tensors: list[TensorCheck]
    stride_mismatches: list[str]
    eager_nondeterministic: list[str]
    fp64_reference: bool
    random_ops: bool
    module_training: bool | None
    mutated_inputs: list[str]
    """Inputs the model changed in place in eager (``input.0``, ``input.mask``); their values
    after the call are compared as ``mutated input.0`` in ``tensors``."""
    error: str | None
    phase: str
    warmup_error: str | None
    loss_curve: dict[str, Any]
    """A training cell: the loss at every step of eager, fp64 and compiled (``steps``,
    ``eager``, ``fp64``, ``compiled``), eager's ``band`` per step, and ``left_at``, the first
    step (0-based) where compiled leaves it (null: never; cases/align.py ``loss_curve``)."""
    where: dict[str, Any]
    """A failing inference cell: the module where compiled numbers leave eager's (cases/
    numerics.py): ``culprit``, ``kind``, ``source``, ``fused``, ``own_code``, ``path``,
    ``summary``; or ``error``."""


class _CellParts(TypedDict):
    id: str
    case: str
    group: str
    axes: dict[str, Any]
    verdict: Verdict
    variants: dict[str, Alignment]


class CellRow(_CellParts, total=False):
    """One row of ``cells[]``; ``notes`` is absent from reports written before it was added."""

    notes: list[str]  # what the cell's verdict is due to: a failing custom op, RNG, precision


class Distribution(TypedDict, total=False):
    count: int
    p50_s: float | None
    p95_s: float | None
    p99_s: float | None
    iqr_s: float | None
    mean_s: float | None
    throughput_per_s: float | None


class Steady(TypedDict, total=False):
    iterations: int
    eager: Distribution
    compiled: Distribution
    parts: dict[str, Distribution]
    speedup: float | None
    speedup_ci95: list[float] | None
    noise_warnings: list[str]
    preempted: list[int]
    """0-based steady iterations whose eager or compiled time was over 3x its side's median:
    left out of the speedup. Added 2026-12-07."""


class Warmup(TypedDict, total=False):
    seconds: float
    per_cell: dict[str, float]


class GroupCompileFacts(TypedDict, total=False):
    """A group's compile facts: measured by the worker (``steady_done``), kept in its row."""

    cells: list[str]
    frames: list[dict[str, Any]]
    graph_breaks: list[dict[str, Any]]
    late_compiles: list[dict[str, Any]]
    compiles: int
    compile_time_s: float
    cache: dict[str, dict[str, int]]
    failures: int


class GroupRow(GroupCompileFacts, total=False):
    """One row of ``variants[].groups[]``: a group of cells benchmarked in one worker.
    ``status`` and ``error`` when the steady state crashed."""

    group: str
    warmup: Warmup
    max_variants_per_frame: int
    steady: Steady | None
    samples: str
    memory: dict[str, float | None] | None
    profile: dict[str, Any]
    """``check --profile``: eager and compiled calls split side by side, the speedup's bound."""
    regional: dict[str, Any]
    status: str
    error: str | None
    top_fix: dict[str, Any] | None
    """The group report's first fix pt2doctor can apply itself: ``{trial, finding, title}``
    (null when none; absent before 2026-12)."""
    outcome: dict[str, Any]
    """The group's numbers a try is judged by: compiles, recompiles, limit hits, breaks."""
    tried: dict[str, Any]
    """With the budget's ``top_fix_tried``: the group re-run with ``top_fix`` applied,
    ``{fix, finding, title, before, after, verdict, summary, applied}`` (``error`` and a null
    verdict when the re-run failed)."""


class ColdStart(TypedDict, total=False):
    """One cache state of ``variants[].cold_start``; or ``error``."""

    cell: str
    first_result_s: float | None
    interpreter_start_s: float
    import_s: float
    build_s: float
    first_call_s: float
    compile_time_s: float
    compiles: int
    cache: dict[str, dict[str, int]]
    memory: dict[str, float | None] | None
    error: str | None


class VariantRow(TypedDict, total=False):
    """One row of ``variants[]``: a case under one compile variant."""

    case: str
    name: str
    mode: str | None
    backend: str
    regional: bool
    applicable: bool
    reason: str | None
    cold_start: dict[str, ColdStart]
    groups: list[GroupRow]


class Clause(TypedDict):
    name: str
    measured: Any
    budget: Any
    ok: bool | None
    detail: str | None


class Contract(TypedDict):
    ok: bool
    budget: str | None
    clauses: list[Clause]


class CheckSummary(TypedDict):
    cells: int
    verdicts: dict[str, int]


class CheckReport(TypedDict):
    """report.json of ``pt2doctor check``."""

    schema_version: int
    kind: Literal["check"]
    tool: Tool
    environment: dict[str, Any]
    environment_changes: list[str]
    interrupted: bool
    summary: CheckSummary
    cells: list[CellRow]
    variants: list[VariantRow]
    contract: Contract
    cost: dict[str, Any] | None  # where check's own wall time went (check/cost.py)


# The check worker's events (one JSON line each in its events.jsonl, check/worker.py), read
# back by check/orchestrate.py and check/driver.py; their names are declared once, in
# pt2doctor.workers (EventName). Every event has ``event`` and ``t``.
Phase = Literal["align", "warmup", "steady"]


class EnvironmentEvent(TypedDict):
    event: Literal["environment"]
    t: float
    environment: dict[str, Any]


class CellStartEvent(TypedDict):
    """A cell (``None``: the whole group, in steady state) starts a phase: the one a crash or
    a hang is attributed to until its result arrives."""

    event: Literal["cell_start"]
    t: float
    cell: str | None
    phase: Phase


class AlignmentEvent(Alignment):
    event: Literal["alignment"]
    t: float
    cell: str


class WarmupEvent(TypedDict, total=False):
    """A cell's compiled warmup call: ``seconds``, or the ``error`` it raised."""

    event: Literal["warmup"]
    t: float
    cell: str
    seconds: float
    error: str


class WarmupDoneEvent(TypedDict):
    event: Literal["warmup_done"]
    t: float
    seconds: float


class ModelEvent(TypedDict):
    event: Literal["model"]
    t: float
    repeated_blocks: int


class SteadyDoneEvent(GroupCompileFacts, total=False):
    """Steady state measured; the group's compile facts (frames, graph breaks, late
    compiles ...) ride along and become the group record."""

    event: Literal["steady_done"]
    t: float
    regional: dict[str, Any]


class DoneEvent(TypedDict):
    event: Literal["done"]
    t: float
    memory: dict[str, float | None]


class ColdEvent(TypedDict):
    """A cold start: process spawn to first result, split into its parts."""

    event: Literal["cold"]
    t: float
    first_result_s: float
    interpreter_start_s: float
    import_s: float
    build_s: float
    first_call_s: float
    compile_time_s: float
    compiles: int
    cache: dict[str, dict[str, int]]
    memory: dict[str, float | None]


class FatalEvent(TypedDict):
    """An error outside any cell (the worker exits 1)."""

    event: Literal["fatal"]
    t: float
    error: str
    traceback: str


CheckEvent = (
    EnvironmentEvent
    | CellStartEvent
    | AlignmentEvent
    | WarmupEvent
    | WarmupDoneEvent
    | ModelEvent
    | SteadyDoneEvent
    | DoneEvent
    | ColdEvent
    | FatalEvent
)

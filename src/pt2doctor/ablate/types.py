"""The ablate report's types (report.json with ``"kind": "ablate"``, docs/report-schema.md):
one ``TypedDict`` per part and ``Literal`` types for statuses and categories, so
``mypy --strict`` checks every key the ablate renderers (ablate/render.py, ablate/views.py)
read. The status lists every part of ablate decides on are defined here, once."""

from __future__ import annotations

from typing import Any, Literal, TypedDict

# How a rung, a toggle or a module trial ended (docs/report-schema.md, "ablate").
Status = Literal[
    "ok",
    "crash",
    "diverged",
    "nondeterministic",
    "eager_error",
    "error",
    "not run",
    "not applicable",
]
Failure = Literal["crash", "diverged", "eager_error"]
Category = Literal["incompleteness", "user_side", "compiler_bug"]
Layer = Literal["dynamo", "aot", "decomp_partition", "inductor", "backend"]

# The compiled result crashed or disagreed with eager: what ablate localizes and reproduces.
COMPILED_FAILURES: tuple[Status, ...] = ("crash", "diverged")
# A rung that stops the ladder (later rungs are ``not run``): a compiled failure, or eager
# itself fails (nothing above it can pass).
LADDER_STOPS: tuple[Status, ...] = (*COMPILED_FAILURES, "eager_error")
# What the renderings mark as failed (red): the above, and a worker that itself failed.
FAILURE_STATUSES: tuple[Status, ...] = (*LADDER_STOPS, "error")


class Tool(TypedDict):
    name: str
    version: str


class Target(TypedDict, total=False):
    """What was ablated: a case cell (``case_file``, ``case``, ``cell``) or a command
    (``command``, ``accuracy_check``)."""

    mode: Literal["case", "script"]
    case_file: str
    case: str
    cell: str
    command: list[str]
    accuracy_check: str | None


class Settings(TypedDict, total=False):
    backend: str | None
    """None in script mode when the program's own backend is unknown (its rung did not run)."""
    dynamic: bool | None
    mode: str | None
    fullgraph: bool


class Rung(TypedDict):
    """One row of ``ladder[]``."""

    backend: str
    layer: Layer | None
    status: Status
    error: str | None
    error_types: list[str] | None
    root_type: str | None
    worst: dict[str, Any] | None
    tolerance: float | None
    failed_tensors: list[str] | None
    exit_code: int | None
    seconds: float | None
    category: Category | None
    numbers: str | None
    own_exit: bool
    """Script mode: the program ended with ``sys.exit(N)``, N > 0, and no exception, read as
    its own check of its results failing (``status`` diverged)."""


class Toggle(TypedDict):
    """The failing rung again with one setting off."""

    name: str
    backend: str | None
    status: Status
    error: str | None
    numbers: str | None


class Conclusion(TypedDict, total=False):
    layer: Layer | None
    failure: Failure | None
    category: Category | None
    backend: str
    sentence: str
    user_side: dict[str, Any] | None  # {kind, detail, evidence}: the user's code, proven


class ModuleTrial(TypedDict, total=False):
    module: str
    reproduced: bool
    status: Status
    error: str | None


class ModuleSearch(TypedDict, total=False):
    """``module``: the smallest submodule whose compilation alone reproduces the failure."""

    completed: bool
    detail: str | None
    module: str | None
    trials: list[ModuleTrial]
    repro: Repro | None


class Bisect(TypedDict, total=False):
    available: bool | None
    reason: str
    detail: str
    backend: str
    subsystem: str | None
    bisect_number: int | None
    debug_info: str | None
    seconds: float


class Verified(TypedDict, total=False):
    reproduces: bool
    """The repro failed with the program's failure signature (ablate/signature.py)."""
    exit_code: int | None
    output: str
    signature: str | None
    """What the repro failed with, as a signature (None: it did not fail)."""
    expected: str
    """The program's failure signature (absent in reports before 2026-12)."""
    same_failure: bool


class Repro(TypedDict, total=False):
    written: bool
    reason: str
    path: str
    module: str | None
    module_class: str | None
    lines: int
    command: str
    verified: Verified
    # Script mode (ablate/script_repro.py): the failing compile, the user modules copied
    # beside the repro, and why it cannot stand alone (if it cannot).
    compile_id: str
    copied_sources: list[str]
    standalone: bool
    not_standalone_because: list[str]
    source: Literal["fx_graph_runnable", "minifier", "program"]
    """How a script-mode repro was made: torch's runnable graph of the failing compile, the
    graph torch's minifier dumped (a backend other than Inductor), or the program itself (the
    dynamo layer: no graph holds the failure). Absent in case mode and older reports."""
    minifier: dict[str, Any]
    """torch's minifier: ``{after, launcher, minified, seconds, exit_code, output}`` for a
    repro it made; a whole Repro (the minifier's own, with this record inside) when it ran as
    the last rung after a repro that cannot stand alone or did not reproduce."""


class _AblateReportParts(TypedDict):
    schema_version: int
    kind: Literal["ablate"]
    tool: Tool
    target: Target
    settings: Settings
    ladder: list[Rung]
    toggles: list[Toggle]
    conclusion: Conclusion
    module: ModuleSearch | None
    bisect: Bisect | None
    repro: Repro | None
    workarounds: list[str]
    out: str


class AblateReport(_AblateReportParts, total=False):
    """report.json of ``pt2doctor ablate``; ``environment`` is absent from reports written
    before it was added."""

    environment: dict[str, Any]
    custom_ops: list[dict[str, Any]]  # each custom op the model called, with its opcheck
    compiler_hooks: list[dict[str, Any]]  # the Inductor pass hooks the program set
    numerics: dict[str, Any] | None
    """Where the numbers diverge (case mode, a diverged inference cell): compare_modules'
    result (cases/numerics.py ``Comparison.as_dict`` and ``summary``), ``skipped`` (why it
    did not apply), or ``completed`` false with ``detail``; None when it did not run."""


# The ablate worker's events (ablate/trial.py, one JSON line each in a trial's events.jsonl),
# read back by ablate/driver.py; their names are declared once, in pt2doctor.workers
# (EventName). Every event has ``event`` and ``t``; ``fatal`` is the check worker's
# (check/types.py FatalEvent: both workers share pt2doctor.workers ``serve``).


class EnvironmentEvent(TypedDict):
    event: Literal["environment"]
    t: float
    torch_version: list[int]


class TrialStartEvent(TypedDict):
    """What the worker tries next (a rung's target, a submodule, ``repro``, ``bisect``): the
    trial a crash or a hang belongs to."""

    event: Literal["trial_start"]
    t: float
    target: str


class _Outcome(TypedDict, total=False):
    status: Status
    error: str
    error_types: list[str]
    root_type: str
    worst: dict[str, Any] | None
    tolerance: float | None
    failed_tensors: list[str]
    traceback: str


class TrialEvent(_Outcome, total=False):
    """A rung's or a toggle's outcome."""

    event: Literal["trial"]
    t: float


class ModuleTrialEvent(_Outcome, total=False):
    """One submodule compiled alone: does it fail the same way (``reproduced``)?"""

    event: Literal["module_trial"]
    t: float
    target: str
    reproduced: bool


class ModulesDoneEvent(TypedDict):
    event: Literal["modules_done"]
    t: float
    module: str | None


class ReproEvent(Repro, total=False):
    event: Literal["repro"]
    t: float


class BisectEvent(Bisect, total=False):
    event: Literal["bisect"]
    t: float

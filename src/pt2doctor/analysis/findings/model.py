"""The finding model: what a finding is about (:class:`Subject`, a typed reference with file
and line), and the finding itself, with its code from the registry (analysis/findings/
codes.py).

Everything that matches findings (the plan, the reports' grouping, HTML anchors, ``diff``)
matches on the subject, never on a title: a title is presentation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pt2doctor.analysis.findings.codes import SPECS, Code, Severity

if TYPE_CHECKING:
    from pt2doctor.analysis.recompiles.fix_model import Fix
    from pt2doctor.trace.types import SourceLine

SubjectKind = Literal["frame", "compile", "site", "lines", "op", "region", "rank", "program", "log"]
"""What a finding is about: a compiled frame, one compile of it, a graph-break site, the user
lines of a loop or block, an ATen op, a profiled region, ranks, the program as a whole (how
it ran, its profile), the log itself."""

Fact = str | int | float | bool | None


@dataclass(frozen=True, slots=True)
class Subject:
    """A typed reference to what a finding is about. ``name`` is how the user knows it
    (``TinyLM.forward``, ``aten.sort``, ``rank 1``); ``file``/``line``/``function`` where it is
    in the user's code; ``stream``/``frame_id``/``compile_id`` which frame or compile of the
    log."""

    kind: SubjectKind
    name: str | None = None
    file: str | None = None
    line: int | None = None
    function: str | None = None
    stream: str | None = None
    frame_id: int | None = None
    compile_id: str | None = None

    @property
    def key(self) -> str | None:
        """The subject's identity, for matching findings about the same thing (None: a
        subject with no identity of its own, the program or the log)."""
        # A frame is its code (the same on every rank), a compile its id in that frame's log;
        # resume functions carry their line in their name.
        if self.kind == "frame":
            return f"frame {self.file}:{self.line} {self.function}"
        if self.kind == "compile" and self.compile_id is not None:
            return f"compile {self.compile_id} {self.function or self.name}"
        if self.kind in ("site", "lines") and self.file is not None:
            return f"{self.kind} {self.file}:{self.line}"
        if self.kind in ("op", "region") and self.name is not None:
            return f"{self.kind} {self.name} {self.compile_id or ''}".rstrip()
        return None  # the program, the log, ranks (several findings concern the same ranks)

    def as_json(self) -> dict[str, Any]:
        """``findings[].subject``: the fields that are set."""
        return {
            name: value for name in self.__slots__ if (value := getattr(self, name)) is not None
        }

    @classmethod
    def of_line(cls, kind: SubjectKind, line: SourceLine, name: str | None = None) -> Subject:
        return cls(kind, name, line.file, line.line, line.function)


PROGRAM = Subject("program")
LOG = Subject("log")


@dataclass(slots=True)
class Finding:
    """One finding. ``code`` is registered (analysis/findings/codes.py) and ``severity`` one
    its entry allows: a finding that is not cannot be made."""

    severity: Severity
    code: Code
    title: str
    advice: str
    evidence: list[str] = field(default_factory=list)
    subject: Subject = PROGRAM
    """What it is about: what the plan and the reports' grouping match findings by."""
    saves_ms: float | None = None
    """What the fix saves per call of the hot loop, measured by the profile (None: unknown)."""
    saves_unmeasured: str | None = None
    """Why ``saves_ms`` is not measured, where the finding knows (a fix only the user can
    apply, a trial that could not run)."""
    facts: Mapping[str, Fact] = field(default_factory=dict)
    """Typed evidence the renderers read instead of the title (a recompiles finding's
    ``state``: ``8 variants by design``)."""
    fixes: list[Fix] = field(default_factory=list)
    """The fixes its advice is made of, in order, with how pt2doctor can apply each
    (``run --try-fixes``)."""
    tries: list[dict[str, Any]] = field(default_factory=list)
    """What ``run --try-fixes`` measured for its fixes, in the order they were tried
    (analysis/findings/verdicts.py)."""
    not_tried: list[dict[str, str]] = field(default_factory=list)
    """After ``run --try-fixes``: each of its fixes that was not re-run, ``{fix, why}``
    (a change to the code, the budget spent, an earlier fix that helped)."""
    cause: str | None = None
    """Findings of one root cause share it (a frame's limit hit and its recompiles): the
    reports show them as one (report/format.py grouped_findings)."""

    def __post_init__(self) -> None:
        entry = SPECS.get(self.code)
        if entry is None:
            raise ValueError(f"finding code {self.code!r} is not registered (findings/codes.py)")
        if self.severity not in entry.severities:
            raise ValueError(f"{self.code} cannot be {self.severity!r} (codes.py: {entry})")

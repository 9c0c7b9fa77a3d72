"""report.json, written and read back: the one serializer of every report kind (``run``,
``check``, ``ablate``, ``profile``).

``dumps_report`` writes it (sorted keys, indented: a public contract CI jobs read);
``loads_report`` reads one back for ``pt2doctor report REPORT.json`` (a stored report rendered
again, in any format, without the trace) and ``pt2doctor diff``. Reading checks what makes a
report one of ours (a JSON object, a known ``kind``, a ``schema_version`` this version can
read, the keys its kind always has) and says in one line what is wrong, never with a
traceback; it then brings an older report up to the current shape (:func:`upgrade`): fields
added since it was written get their empty value, so the renderers read every report alike.

Nothing here imports an analysis or a command package: ``REQUIRED`` is this module's own
table, and tests/unit/test_report_document.py holds it equal to the report TypedDicts'
required keys (report/types.py RunReport and ProfileReport, check/types.py CheckReport,
ablate/types.py AblateReport).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from pt2doctor.errors import UsageError
from pt2doctor.report.types import Kind, report_kind

SCHEMA_VERSION = 2
"""The major version of every report kind's report.json. Fields are only ever added within a
major version; a report of a higher one was written by a newer pt2doctor."""

REQUIRED: dict[Kind, tuple[str, ...]] = {
    "run": ("compiles", "environment", "failures", "findings", "frames", "graph_breaks",
            "inputs", "parse_stats", "schema_version", "summary", "tool"),
    "check": ("cells", "contract", "cost", "environment", "environment_changes", "interrupted",
              "kind", "schema_version", "summary", "tool", "variants"),
    "ablate": ("bisect", "conclusion", "kind", "ladder", "module", "out", "repro", "schema_version",
               "settings", "target", "tool", "toggles", "workarounds"),
    "profile": ("device", "findings", "inputs", "kind", "notes", "parse_stats", "plan",
                "schema_version", "summary", "tool"),
}  # fmt: skip
"""The keys each kind's report always has (a report without one is not a pt2doctor report of
that kind, or is damaged)."""

# Fields added to a kind after its first reports, each with the value that means "nothing":
# what :func:`upgrade` gives a report written before the field existed.
_ADDED: dict[Kind, dict[str, Any]] = {
    "run": {"plan": [], "cold_start": None},
    "check": {},
    "ablate": {"environment": {}, "custom_ops": [], "compiler_hooks": [], "numerics": None},
    "profile": {},
}


def dumps_report(report: Mapping[str, Any]) -> bytes:
    """report.json bytes: sorted keys, indented, newline-terminated."""
    return orjson.dumps(report, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"


def loads_report(data: bytes, origin: str) -> dict[str, Any]:
    """The report in ``data`` (report.json's bytes), checked and brought to the current shape.
    ``origin`` names it in errors (a path). Raises :class:`UsageError` (exit 2) with one line
    saying why it is not a report this version reads."""
    try:
        report = orjson.loads(data)
    except orjson.JSONDecodeError as error:
        raise UsageError(f"{origin} is not valid JSON: {error}") from error
    if not isinstance(report, dict) or "schema_version" not in report:
        raise UsageError(
            f"{origin} is not a pt2doctor report.json (no schema_version) nor a profiler "
            "trace (no traceEvents)"
        )
    try:
        kind = report_kind(report)
    except ValueError as error:
        raise UsageError(f"{origin}: {error}") from error
    version = report["schema_version"]
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise UsageError(f"{origin}: schema_version {version!r} is not a version number")
    if version > SCHEMA_VERSION:
        raise UsageError(
            f"{origin} was written by a newer pt2doctor (schema_version {version}; this one "
            f"reads up to {SCHEMA_VERSION}): upgrade pt2doctor to read it"
        )
    missing = [key for key in REQUIRED[kind] if key not in report]
    if missing:
        raise UsageError(
            f"{origin} is not a pt2doctor {kind} report.json (no {', '.join(missing)})"
        )
    return upgrade(report, kind)


def upgrade(report: dict[str, Any], kind: Kind) -> dict[str, Any]:
    """``report`` with the fields added to its kind since it was written, each empty (the
    report itself is changed and returned). A current report comes back as it was."""
    for key, empty in _ADDED[kind].items():
        if key not in report:
            report[key] = orjson.loads(orjson.dumps(empty))  # a fresh copy of the empty value
    return report


def read_report(path: Path) -> dict[str, Any]:
    """The report.json at ``path``, read through :func:`loads_report`."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise UsageError(f"cannot read {path}: {error.strerror}") from error
    return loads_report(data, str(path))


def is_report_json(path: Path) -> bool:
    """``path`` is a ``.json`` file holding a JSON object that is not a profiler trace: what
    ``report`` and ``diff`` read as a stored report (:func:`read_report` says so when it is
    not one). An empty or non-JSON file is left to the profiler-trace reader's own errors."""
    if not path.is_file() or path.suffix != ".json":
        return False
    with path.open("rb") as stream:
        head = stream.read(1 << 20)
    # A profiler trace's ``traceEvents`` array starts within its first megabyte, after the
    # devices' properties.
    return head.lstrip()[:1] == b"{" and b'"traceEvents"' not in head

"""Ops that ran inside a compiled graph without an Inductor lowering (ATen fallbacks), and
``.item()`` syncs in the generated code, with the user lines they come from."""

from __future__ import annotations

from pt2doctor.analysis.built.kernels import Kernel, kernel_map
from pt2doctor.analysis.findings.compiles import Finding
from pt2doctor.analysis.recompiles.ledger import Ledger


def _where(kernel: Kernel) -> str:
    if not kernel.user_lines:
        return "its user line is not in the trace"
    line = kernel.user_lines[-1]
    return f"{line.file}:{line.line}: {line.code}"


def fallback_findings(ledger: Ledger) -> list[Finding]:
    """One info finding per fallback op (by name), listing the compiles and lines it ran in:
    it runs as its eager ATen kernel, and the ops around it cannot fuse across it."""
    seen: dict[str, tuple[list[str], list[str]]] = {}
    for entry in ledger.compiles:
        found = kernel_map(entry.record.built)
        for kernel in [] if found is None else found.kernels:
            if kernel.kind != "fallback":
                continue
            ids, lines = seen.setdefault(kernel.name, ([], []))
            if entry.compile_id not in ids:
                ids.append(entry.compile_id)
            if _where(kernel) not in lines:
                lines.append(_where(kernel))
    return [
        Finding(
            "info",
            "fallback_op",
            f"{name.removeprefix('torch.ops.')} has no Inductor lowering here: it runs as its "
            f"ATen kernel inside {len(ids)} compiled graph{'s' if len(ids) > 1 else ''}",
            "It costs what it costs in eager, and the ops before and after it cannot fuse "
            "across it. Worth a rewrite only when it is a visible share of the step's time.",
            [*lines, f"compiles {', '.join(ids)}"],
        )
        for name, (ids, lines) in seen.items()
    ]

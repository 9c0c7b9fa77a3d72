"""Ops that ran inside a compiled graph without an Inductor lowering (ATen fallbacks), and
``.item()`` syncs in the generated code, with the user lines they come from."""

from __future__ import annotations

from collections.abc import Sequence

from pt2doctor.analysis.built.kernels import KernelMap, first_line_where
from pt2doctor.analysis.findings.model import Finding, Subject
from pt2doctor.analysis.recompiles.ledger import CompileEntry


def fallback_findings(
    compiles: Sequence[CompileEntry], kernel_maps: Sequence[KernelMap | None]
) -> list[Finding]:
    """One info finding per fallback op (by name), listing the compiles and lines it ran in:
    it runs as its eager ATen kernel, and the ops around it cannot fuse across it.
    ``kernel_maps`` holds each compile's map, in the same order."""
    seen: dict[str, tuple[list[str], list[str]]] = {}
    for entry, found in zip(compiles, kernel_maps, strict=True):
        for kernel in [] if found is None else found.kernels:
            if kernel.kind != "fallback":
                continue
            ids, lines = seen.setdefault(kernel.name, ([], []))
            if entry.compile_id not in ids:
                ids.append(entry.compile_id)
            where = first_line_where(kernel.user_lines)
            if where not in lines:
                lines.append(where)
    return [
        Finding(
            "info",
            "fallback_op",
            f"{name.removeprefix('torch.ops.')} has no Inductor lowering here: it runs as its "
            f"ATen kernel inside {len(ids)} compiled graph{'s' if len(ids) > 1 else ''}",
            "It costs what it costs in eager, and the ops before and after it cannot fuse "
            "across it. Worth a rewrite only when it is a visible share of the step's time.",
            [*lines, f"{'compiles' if len(ids) > 1 else 'compile'} {', '.join(ids)}"],
            Subject("op", name.removeprefix("torch.ops.")),
        )
        for name, (ids, lines) in seen.items()
    ]

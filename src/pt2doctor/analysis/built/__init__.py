"""What the compiler built: each graph's kernels mapped to the user's lines, why a graph is as
big as it is (ops by line, unrolled loops, many small inputs), and the ops that fell back to
ATen.

``kernel_map`` (a compile's kernels: kind, ATen ops, user lines; says when it is partial),
``graph_size`` (ops by user line), ``unrolled_loop_findings``, ``many_small_inputs_findings``,
``fallback_findings``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pt2doctor._lazy import lazy_names

if TYPE_CHECKING:
    from pt2doctor.analysis.built.fallbacks import fallback_findings
    from pt2doctor.analysis.built.graph_size import (
        graph_size,
        many_small_inputs_findings,
        unrolled_loop_findings,
    )
    from pt2doctor.analysis.built.kernels import Kernel, KernelMap, kernel_map

_HOMES = {
    "Kernel": "kernels",
    "KernelMap": "kernels",
    "fallback_findings": "fallbacks",
    "graph_size": "graph_size",
    "kernel_map": "kernels",
    "many_small_inputs_findings": "graph_size",
    "unrolled_loop_findings": "graph_size",
}
__all__ = [
    "Kernel",
    "KernelMap",
    "fallback_findings",
    "graph_size",
    "kernel_map",
    "many_small_inputs_findings",
    "unrolled_loop_findings",
]
__getattr__ = lazy_names(__name__, _HOMES)

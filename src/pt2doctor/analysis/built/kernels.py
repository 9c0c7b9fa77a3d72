"""Each compile's kernels mapped to the user's lines: what Inductor launched, of which kind,
the ATen ops each covers, and the lines of the user's code they come from.

With provenance (``INDUCTOR_PROVENANCE=1``, ``pt2doctor run --kernels``) every kernel is in
``cppCodeToPost`` and its lines come from the stack-trace artifact, or else through the
post-grad -> Dynamo-graph node mapping. Without it, the output code's launches are the kernels
and only those with a ``Source Nodes`` comment (library calls and fallbacks; Triton kernels)
get lines: the map says it is partial and why.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal, NamedTuple

from pt2doctor.trace.built import GraphLine, KernelKind, Launch, kernel_kind
from pt2doctor.trace.types import Built, InductorGraph

_HANDLE = re.compile(r"^(?P<name>.+):(?P<handle>\d+)$")
_NODE_SUFFIX = re.compile(r"_\d+$")
PROVENANCE_HINT = "run with `pt2doctor run --kernels` (INDUCTOR_PROVENANCE=1) for a full map"


class UserLine(NamedTuple):
    file: str
    line: int
    code: str


class Kernel(NamedTuple):
    name: str
    kind: KernelKind
    """``generated`` (cpp_fused_*, triton_*), ``library`` (extern_kernels.*, aoti_torch_*),
    ``fallback`` (an ATen op with no Inductor lowering), ``sync`` (``.item()``)."""
    ops: tuple[str, ...]
    user_lines: tuple[UserLine, ...]
    key: str
    """The provenance key (``cpp_fused_gelu_1:3``), else the name."""


class KernelMap(NamedTuple):
    kernels: list[Kernel]
    source: Literal["provenance", "output_code"]
    partial: str | None
    """Why some kernels have no user lines (None: every kernel has them)."""


def _op_names(nodes: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """Post-grad node names as ops: ``mul_4`` -> ``mul``, in first-seen order."""
    return tuple(dict.fromkeys(_NODE_SUFFIX.sub("", node) for node in nodes))


def _graph_lines(built: Built, nodes: list[str] | tuple[str, ...]) -> tuple[UserLine, ...]:
    """The Dynamo graph's lines of ``nodes`` (Dynamo-graph node names)."""
    graph = built.graph
    if graph is None:
        return ()
    found = [graph.lines[graph.node_lines[n]] for n in nodes if n in graph.node_lines]
    return _unique(found)


def _unique(lines: list[GraphLine] | list[tuple[str, int, str, str]]) -> tuple[UserLine, ...]:
    seen: dict[tuple[str, int], UserLine] = {}
    for line in lines:
        seen.setdefault((line[0], line[1]), UserLine(line[0], line[1], line[3]))
    return tuple(seen.values())


def first_line_where(user_lines: Sequence[UserLine]) -> str:
    """``file:line: code`` of a kernel's first user line (a fallback's: its own op's), as the
    findings cite it."""
    if not user_lines:
        return "its user line is not in the trace"
    line = user_lines[0]
    return f"{line.file}:{line.line}: {line.code}"


def kernel_name(key: str) -> str:
    """A provenance key's kernel name: ``cpp_fused_gelu_1:3`` -> ``cpp_fused_gelu_1``."""
    match = _HANDLE.match(key)
    return match["name"] if match else key


def _provenance_kernel(built: Built, graph: InductorGraph, key: str, nodes: list[str]) -> Kernel:
    name = kernel_name(key)
    lines = _unique(graph.kernel_frames.get(key) or graph.kernel_frames.get(name) or [])
    if not lines:
        pre = [n for node in nodes for n in graph.post_to_pre.get(node, ())]
        lines = _graph_lines(built, pre)
    return Kernel(name, kernel_kind(name), _op_names(nodes), lines, key)


def _code_kernel(built: Built, graph: InductorGraph, launch: Launch) -> Kernel:
    """A launch as a kernel, its lines from the stack traces of its debug handle (a backward
    graph has them but no node mappings), else from its Source Nodes comment; a C++ kernel's
    ops are not in its code without provenance."""
    frames = graph.kernel_frames.get(launch.handle) if launch.handle else None
    lines = _unique(frames) if frames else _graph_lines(built, launch.source_nodes)
    return Kernel(launch.name, launch.kind, launch.aten, lines, launch.handle or launch.name)


def _graph_kernels(built: Built, graph: InductorGraph) -> list[Kernel]:
    if graph.kernel_nodes:
        return [_provenance_kernel(built, graph, k, v) for k, v in graph.kernel_nodes.items()]
    launches = [] if graph.code is None else graph.code.launches
    return [_code_kernel(built, graph, launch) for launch in launches]


def graph_kernel_lists(built: Built | None) -> list[list[Kernel]]:
    """Each Inductor graph's kernels (forward, then backward), in launch order."""
    if built is None:
        return []
    return [_graph_kernels(built, graph) for graph in built.inductor_graphs]


def kernel_map(built: Built | None) -> KernelMap | None:
    """The kernel map of one compile, its Inductor graphs (forward, backward) in order; None
    when the trace has no output code or provenance for it."""
    if built is None or not built.inductor_graphs:
        return None
    kernels = [k for graph in built.inductor_graphs for k in _graph_kernels(built, graph)]
    tracked = all(graph.kernel_nodes or graph.kernel_frames for graph in built.inductor_graphs)
    source: Literal["provenance", "output_code"] = "provenance" if tracked else "output_code"
    return KernelMap(kernels, source, _partial(kernels, source))


def _partial(kernels: list[Kernel], source: str) -> str | None:
    missing = [k for k in kernels if not k.user_lines]
    if not missing:
        return None
    what = f"{len(missing)} of {len(kernels)} kernels have no user line"
    if source == "provenance":
        return f"{what}: the provenance artifacts name no stack trace or graph node for them"
    generated = sum(k.kind == "generated" for k in missing)
    why = (
        "generated C++ kernels carry no Source Nodes comment without provenance"
        if generated
        else "their output code names no source node"
    )
    return f"{what} ({why}); {PROVENANCE_HINT}"

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
from typing import Literal, NamedTuple

from pt2doctor.trace.built import GraphLine, KernelKind, Launch
from pt2doctor.trace.types import Built

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


def kernel_kind(name: str) -> KernelKind:
    if name.startswith(("extern_kernels.", "aoti_torch_")):
        return "library"
    if name.startswith("torch.ops."):
        return "fallback"
    if name.endswith(".item()"):
        return "sync"
    return "generated"


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


def _provenance_kernel(built: Built, key: str, post_nodes: list[str]) -> Kernel:
    match = _HANDLE.match(key)
    name = match["name"] if match else key
    frames = built.kernel_frames.get(key) or built.kernel_frames.get(name) or []
    lines = _unique(frames)
    if not lines:
        pre = [n for node in post_nodes for n in built.post_to_pre.get(node, ())]
        lines = _graph_lines(built, pre)
    return Kernel(name, kernel_kind(name), _op_names(post_nodes), lines, key)


def _launches(built: Built) -> list[Launch]:
    return [launch for code in built.codes for launch in code.launches]


def _code_kernel(built: Built, launch: Launch) -> Kernel:
    """A launch as a kernel; a C++ kernel's ops are not in its code without provenance."""
    lines = _graph_lines(built, launch.source_nodes)
    return Kernel(launch.name, launch.kind, launch.aten, lines, launch.handle or launch.name)


def kernel_map(built: Built | None) -> KernelMap | None:
    """The kernel map of one compile (None when the trace has no output code or provenance)."""
    if built is None or not (built.kernel_nodes or built.codes):
        return None
    if built.kernel_nodes:
        kernels = [_provenance_kernel(built, k, v) for k, v in built.kernel_nodes.items()]
        return KernelMap(kernels, "provenance", _partial(kernels, "provenance"))
    kernels = [_code_kernel(built, launch) for launch in _launches(built)]
    return KernelMap(kernels, "output_code", _partial(kernels, "output_code"))


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

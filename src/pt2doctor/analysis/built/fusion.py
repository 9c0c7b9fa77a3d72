"""Why kernels stayed apart: the fusions Inductor's scheduler refused, as the fusion log says.

The scheduler tries fusion in rounds and logs a refusal each time it tries a pair, so one pair
is refused many times and a pair refused in round 1 may be fused in round 2. What counts is the
end: two nodes that never ended in one group. Each such pair of final groups is listed once,
with the reason of its last refusal, the kernels the two groups became (through provenance:
each group's post-grad nodes are in one kernel's ``cppCodeToPost``) and the user line of each.

The C++ backend has no fusion logger: the loop-level fusions it refuses leave no line, so a
C++ graph's table is the scheduler's refusals only, and the report says so. A C++ kernel is a
run of consecutive scheduler nodes, one loop nest each (it ends at a library call): two nodes
kept apart can be two loops of one kernel, and are listed as such. In Triton a kernel is one
fused node, so two groups in one kernel were fused after all (a combo kernel) and are not.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from pt2doctor.analysis.built.kernels import UserLine, kernel_name
from pt2doctor.trace.fusion_log import FusionNode, Scheduling
from pt2doctor.trace.types import Built, InductorGraph

_MEMBER = re.compile(r"(?:op|buf)\d+")
MAX_REFUSALS = 200
"""Per compile, the refused pairs listed (the rest are counted)."""
CPP_SILENT = (
    "the C++ backend refuses loop-level fusions without logging them, so the ones it refused "
    "are not listed; and one C++ kernel runs several loop nests in turn, so two nodes the "
    "scheduler kept apart may be two loops of one kernel"
)
UNINFORMATIVE = frozenset({"no shared data"})
"""Reasons left out: two nodes that read and write nothing in common gain nothing from fusing
(the scheduler tries them only as horizontal candidates)."""
NOT_CAPTURED = "no fusion log: run with `pt2doctor run --kernels` to capture it"
CACHE_HIT = (
    "Inductor took this graph from its cache, so the scheduler did not run: clear the cache "
    "(or set TORCHINDUCTOR_FORCE_DISABLE_CACHES=1) for a fusion log"
)
NOT_LOGGED = "the fusion log has no scheduling for this compile"


class Refusal(NamedTuple):
    a: str
    b: str
    reason: str
    times: int
    """How many times the scheduler refused this pair of groups."""
    a_kernel: str | None
    b_kernel: str | None
    a_line: UserLine | None
    b_line: UserLine | None


class Fusion(NamedTuple):
    available: bool
    fused: int
    """Fusions the scheduler made."""
    rejected: list[Refusal]
    more: int
    """Refused pairs past MAX_REFUSALS."""
    note: str | None


def _members(name: str) -> list[str]:
    return _MEMBER.findall(name) or [name]


class _Groups:
    """Union-find over node names: which nodes ended in one fused node."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, name: str) -> str:
        parent = self.parent.setdefault(name, name)
        if parent != name:
            parent = self.parent[name] = self.find(parent)
        return parent

    def union(self, a: str, b: str) -> None:
        members = _members(a) + _members(b)
        root = self.find(members[0])
        for member in members[1:]:
            self.parent[self.find(member)] = root

    def of(self, name: str) -> frozenset[str]:
        return frozenset(self.find(m) for m in _members(name))


def _side(
    name: str, nodes: dict[str, FusionNode], graph: InductorGraph | None
) -> tuple[str | None, UserLine | None]:
    """The kernel a logged group became (through provenance) and its first user line."""
    described = [nodes[m] for m in _members(name) if m in nodes]
    line = next((UserLine(*n.line) for n in described if n.line), None)
    if graph is None or not graph.kernel_nodes:
        return None, line
    origins = {o for n in described for o in n.origins}
    # A node inlined into several kernels (an embedding recomputed in each residual add) is
    # in each one's nodes: the group's kernel is the one holding most of its origins.
    overlap = {key: len(origins.intersection(nodes)) for key, nodes in graph.kernel_nodes.items()}
    best = max(overlap, key=lambda key: overlap[key], default=None)
    if best is None or not overlap[best]:
        return None, line
    return kernel_name(best), line


def _scheduling_refusals(scheduling: Scheduling, graph: InductorGraph | None) -> list[Refusal]:
    groups = _Groups()
    for a, b in scheduling.fused:
        groups.union(a, b)
    last: dict[frozenset[frozenset[str]], tuple[str, str, str]] = {}
    counts: dict[frozenset[frozenset[str]], int] = {}
    for a, b, reason in scheduling.refused:
        if reason in UNINFORMATIVE:
            continue
        ga, gb = groups.of(a), groups.of(b)
        if not ga.isdisjoint(gb):
            continue  # fused in a later round
        pair = frozenset((ga, gb))
        last.pop(pair, None)  # re-insert: the pair's place is its last refusal
        last[pair] = (a, b, reason)
        counts[pair] = counts.get(pair, 0) + 1
    # Pairs that read the same kernels, lines and reason are one row (their counts summed).
    rows: dict[tuple[object, ...], Refusal] = {}
    for pair, (a, b, reason) in last.items():
        a_kernel, a_line = _side(a, scheduling.nodes, graph)
        b_kernel, b_line = _side(b, scheduling.nodes, graph)
        if a_kernel is not None and a_kernel == b_kernel and not a_kernel.startswith("cpp_"):
            continue  # one kernel after all (fused by a later pass, e.g. a combo kernel)
        key = (a_kernel, a_line, b_kernel, b_line, reason)
        row = rows.get(key)
        times = counts[pair] + (0 if row is None else row.times)
        rows[key] = Refusal(a, b, reason, times, a_kernel, b_kernel, a_line, b_line)
    return list(rows.values())


def fusion_view(
    schedulings: list[Scheduling] | None, built: Built | None, *, kept: bool, cache_hit: bool
) -> Fusion:
    """The refused fusions of one compile that left two kernels apart: ``schedulings`` from
    the fusion log (None when it has none for this compile), ``kept`` whether the run kept a
    log at all, ``cache_hit`` whether Inductor took this compile from its cache."""
    if schedulings is None:
        if not kept:
            return Fusion(False, 0, [], 0, NOT_CAPTURED)
        why = CACHE_HIT if cache_hit else NOT_LOGGED
        return Fusion(False, 0, [], 0, why)
    graphs = [] if built is None else built.inductor_graphs
    # The log's schedulings and the trace's Inductor graphs are the same graphs in the same
    # order, unless one side lost some (a cache hit compiles without scheduling).
    paired = len(graphs) == len(schedulings)
    refusals = [
        refusal
        for index, scheduling in enumerate(schedulings)
        for refusal in _scheduling_refusals(scheduling, graphs[index] if paired else None)
    ]
    cpp = any(
        launch.name.startswith("cpp_")
        for graph in graphs
        if graph.code is not None
        for launch in graph.code.launches
    ) or any(key.startswith("cpp_") for graph in graphs for key in graph.kernel_nodes)
    fused = sum(len(s.fused) for s in schedulings)
    return Fusion(
        True,
        fused,
        refusals[:MAX_REFUSALS],
        max(0, len(refusals) - MAX_REFUSALS),
        CPP_SILENT if cpp else None,
    )

"""Inductor's fusion log (``TORCH_LOGS=fusion``, or ``fusion.log`` of ``run --kernels``) as
facts: per compile id, each scheduling of a graph with its nodes, the fusions it made and the
pairs it refused, with the scheduler's reason.

A scheduling starts at ``===== attempting fusion (1/10): N nodes =====`` (a compile's forward
and backward are two). Its candidate lines describe each node (``SchedulerNode(name='op5'),
Pointwise(['[8, 64]', 'origins=OrderedSet([mul_4, erf])', 'stack_traces = {', '  File "m.py",
line 9, in forward', '    y = gelu(x)', ...])``); ``fusing A with B`` and ``cannot fuse A with
B: reason`` follow, A and B being node names joined by ``_`` once fused (``op0_op1``). Lines in
TORCH_LOGS format (``V1201 ... scheduler.py:2059] [0/0] [__fusion] cannot fuse ...``) or in the
older logger-name format (``torch._inductor.scheduler.__fusion: ...``, no compile id); anything
else is skipped.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

_LINE = re.compile(
    r"^(?:.*?\] )?(?:\[(?P<cid>[^\]]*)\] )?\[__fusion\] (?P<msg>.*)$"
    r"|^.*?torch\._inductor\.[\w.]+\.__fusion: (?P<old>.*)$"
)
_SCHEDULING = re.compile(r"^===== attempting fusion \(1/\d+\)")
_NODE = re.compile(r"^\s+(?P<kind>\w*)SchedulerNode\(name='(?P<name>[^']+)'\)(?:, (?P<rest>.*))?$")
_ORIGINS = re.compile(r"origins=(?:OrderedSet\(\[|\{)(?P<origins>[^\]}]*)")
_FRAME = re.compile(
    r"File \"(?P<file>[^\"]+)\", line (?P<line>\d+), in [^']*', '\s*(?P<code>[^']*)'"
)
_FUSING = re.compile(r"^fusing (?P<a>\S+) with (?P<b>\S+)$")
_REFUSED = re.compile(r"^cannot fuse (?P<a>\S+) with (?P<b>\S+): (?P<reason>.*)$")
_ATTEMPT = re.compile(r"_\d+$")


class FusionNode(NamedTuple):
    """One scheduler node as the log first describes it."""

    kind: str
    """``Scheduler`` (Inductor's own loop), ``ExternKernel`` (a library call or fallback),
    ``Nop``, ..."""
    origins: tuple[str, ...]
    """The post-grad nodes it computes."""
    line: tuple[str, int, str] | None
    """(file, line, code) of the innermost frame of its first stack trace."""


@dataclass(slots=True)
class Scheduling:
    """One run of the scheduler's fusion over one graph."""

    nodes: dict[str, FusionNode] = field(default_factory=dict)
    fused: list[tuple[str, str]] = field(default_factory=list)
    refused: list[tuple[str, str, str]] = field(default_factory=list)
    """(a, b, reason), in log order, repeats included."""


def _node(match: re.Match[str]) -> FusionNode:
    rest = match["rest"] or ""
    origins = _ORIGINS.search(rest)
    names = () if origins is None else tuple(o.strip() for o in origins["origins"].split(","))
    first_trace = rest.split("'}'", 1)[0]
    frames = list(_FRAME.finditer(first_trace))
    line = None
    if frames:
        last = frames[-1]
        line = (last["file"], int(last["line"]), last["code"].strip())
    return FusionNode(match["kind"] or "Scheduler", tuple(n for n in names if n), line)


def parse_fusion_log(lines: Iterable[str]) -> dict[str, list[Scheduling]]:
    """Each compile id's schedulings (``""`` for lines that carry none), in log order."""
    found: dict[str, list[Scheduling]] = {}
    for raw in lines:
        match = _LINE.match(raw.rstrip("\n"))
        if match is None:
            continue
        message = match["msg"] if match["msg"] is not None else match["old"]
        compile_id = _ATTEMPT.sub("", match["cid"] or "")
        schedulings = found.setdefault(compile_id, [])
        if _SCHEDULING.match(message) or not schedulings:
            schedulings.append(Scheduling())
            if _SCHEDULING.match(message):
                continue
        current = schedulings[-1]
        if node := _NODE.match(message):
            current.nodes.setdefault(node["name"], _node(node))
        elif fusing := _FUSING.match(message):
            current.fused.append((fusing["a"], fusing["b"]))
        elif refused := _REFUSED.match(message):
            current.refused.append((refused["a"], refused["b"], refused["reason"]))
    kept = {
        cid: [s for s in scheds if s.nodes or s.fused or s.refused] for cid, scheds in found.items()
    }
    return {cid: scheds for cid, scheds in kept.items() if scheds}

"""Where a compiled step's time goes: the profiled window (``run --profile``) split per call of
the program's hot loop into compiled regions and what lies outside them.

Each thread's events are nested by time. A ``Torch-Compiled Region: <compile id>`` event is one
call of a compiled frame; the ``TorchDynamo Cache Lookup`` right before it is that call's guard
check. The region's own time excludes the regions nested in it (a graph break's resume frame
runs inside its parent's region) and, when its graph ends at a graph break, everything after
its graph returned: the break's eager code, charged to the break's site. A
``CompiledFunctionBackward`` is the backward of the region whose ``CompiledFunction`` has its
autograd sequence number.

A region's time splits into kernels (the children of ``## Call CompiledFxGraph``): generated
(``graph_<n>_cpp_fused_*``, ``triton_*``), library (mm, addmm, convolution, SDPA, ... as
Inductor calls them) and fallback (an ATen op with no lowering), and overhead (the rest:
guards, wrappers, the autograd function, Python). The parts add up to the region's time by
construction; ``outside`` is the window's wall time minus every region's.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from pt2doctor.analysis.built.kernels import Kernel, UserLine, graph_kernel_lists
from pt2doctor.analysis.text import counted
from pt2doctor.rundir import PROFILE_END_MARK, PROFILE_PERIOD_MARK, PROFILE_START_MARK
from pt2doctor.trace.built import kernel_kind
from pt2doctor.trace.chrome import ChromeTrace
from pt2doctor.trace.types import Built, SourceLine

MIN_SHARE = 0.05
"""A part of the step under this share gets no finding (a warning from it on: time/findings.py,
and a break's cost a try measured, findings/verdicts.py)."""

_REGION_PREFIX = "Torch-Compiled Region: "
_LOOKUP = "TorchDynamo Cache Lookup"
_FORWARD = "CompiledFunction"
_BACKWARD = "CompiledFunctionBackward"
_CALL_PREFIX = "## Call CompiledFxGraph"
_GENERATED = re.compile(r"^(?:graph_\d+_)?(?P<name>(?:cpp_fused|cpp_|triton_)\w*)$")
# Inductor's own bookkeeping inside a graph call: allocation and views, not kernels.
_BOOKKEEPING = re.compile(r"^aten::(?:empty\w*|as_strided\w*|view\w*|_reshape_alias|alias)$")


def per_call_ms(us: float, calls: int) -> float:
    """``us`` of a window that holds ``calls`` calls, in milliseconds per call."""
    return us / max(calls, 1) / 1000.0


@dataclass(slots=True)
class KernelTime:
    compile_id: str
    part: str
    """``forward`` or ``backward``."""
    name: str
    kind: str
    """``generated``, ``library`` or ``fallback``."""
    us: float = 0.0
    launches: int = 0
    ops: tuple[str, ...] = ()
    user_lines: tuple[UserLine, ...] = ()


@dataclass(slots=True)
class RegionTime:
    compile_id: str
    part: str
    calls: int = 0
    us: float = 0.0
    kernels_us: float = 0.0
    library_us: float = 0.0
    fallback_us: float = 0.0
    guards_us: float = 0.0
    """Part of the overhead: the guard checks (cache lookups) before each call."""
    graph_calls: int = 0
    """Calls of an Inductor graph (``## Call CompiledFxGraph``) in it: 0 for another backend,
    whose ops are not split from the overhead."""

    @property
    def overhead_us(self) -> float:
        return self.us - self.kernels_us - self.library_us - self.fallback_us


@dataclass(slots=True)
class OutsideTime:
    """Time outside every region at one place: a graph break's site, or the program's own code
    between regions (``site`` None)."""

    site: SourceLine | None
    us: float
    compile_id: str | None = None
    """The region whose graph ended at this break."""
    resumed_guards_us: float = 0.0
    """The guard checks of the frame Dynamo resumed after the break (a region's own time, not
    in ``us``): what a call pays again because the break splits it, gone with the break."""


@dataclass(slots=True)
class ProfileView:
    calls: int
    """Calls of the hot graph the window holds: the time below is per one of them."""
    wall_us: float
    hot_compile_id: str | None
    regions: list[RegionTime] = field(default_factory=list)
    kernels: list[KernelTime] = field(default_factory=list)
    outside: list[OutsideTime] = field(default_factory=list)
    eager_ops: list[tuple[str, float]] = field(default_factory=list)
    """ATen ops that ran eagerly, outside every compiled graph (between regions, or in a
    region after its graph returned: a graph break's code), by total time (us), the largest
    first."""
    eager_at: dict[str, list[tuple[str, float]]] = field(default_factory=dict)
    eager_spans: list[tuple[float, float]] = field(default_factory=list)
    """Where each eager op of ``eager_ops`` ran: (start, end), trace microseconds."""
    """Of them, those that ran in each region's break tail: compile id -> (op, us)."""
    forward_autograd_calls: int = 0
    """Region calls that went through the autograd function (``CompiledFunction``)."""
    autograd_us: float = 0.0
    """The autograd function's own time around its graph calls (forward)."""
    backward_calls: int = 0
    notes: list[str] = field(default_factory=list)
    window: tuple[float, float] = (0.0, 0.0)
    """Its start and end in the trace's clock (us)."""
    ranges: list[tuple[float, float]] = field(default_factory=list)
    """The parts of the window counted: all of it, or its periods less the preempted ones."""

    @property
    def compiled_us(self) -> float:
        return sum(region.us for region in self.regions)

    def per_call(self, us: float) -> float:
        """Milliseconds per call of the hot loop."""
        return per_call_ms(us, self.calls)


class _Region:
    __slots__ = (
        "cid",
        "cut",
        "end",
        "graph_end",
        "guards",
        "nested",
        "start",
        "tail_guards",
        "tail_nested",
    )

    def __init__(self, cid: str, start: float, end: float, guards: float) -> None:
        self.cid = cid
        self.start = start
        self.end = end
        self.guards = guards
        self.nested = 0.0
        """Time of the regions (and their lookups) nested in this one."""
        self.tail_nested = 0.0
        """Of it, what started after this region's graph returned."""
        self.tail_guards = 0.0
        """Of that, the guard checks (cache lookups) of the regions nested there: the frame
        Dynamo resumes after a graph break in this one."""
        self.graph_end: float | None = None
        self.cut = False
        """Still open when the window closed: its tail after the graph is not in it."""


def _stem(name: str) -> str:
    """``aten::addmm`` / ``extern_kernels.addmm`` / ``torch.ops.aten.addmm.default`` -> addmm."""
    name = name.removeprefix("aten::").removeprefix("extern_kernels.")
    if name.startswith("torch.ops."):
        parts = name.split(".")
        return parts[3] if len(parts) > 3 else parts[-1]
    return name


class _Kernels:
    """A compile's kernel map, per part, for naming a profiled kernel: generated ones by name,
    library and fallback ones by op, in launch order (the k-th addmm of a call is the k-th
    addmm kernel)."""

    def __init__(self, built: Built | None) -> None:
        lists = graph_kernel_lists(built)
        self.parts: dict[str, list[Kernel]] = {}
        if lists:
            self.parts["forward"] = lists[0]
        if len(lists) > 1:
            self.parts["backward"] = lists[1]

    def find(self, part: str, name: str, nth: int) -> Kernel | None:
        kernels = self.parts.get(part, [])
        generated = _GENERATED.match(name)
        if generated:
            return next((k for k in kernels if k.name == generated["name"]), None)
        stem = _stem(name)
        same = [k for k in kernels if k.kind != "generated" and _stem(k.name) == stem]
        return same[nth] if nth < len(same) else (same[-1] if same else None)


def _kind(name: str, known: Kernel | None) -> str:
    if known is not None and known.kind in ("generated", "library", "fallback"):
        return known.kind
    if _GENERATED.match(name):
        return "generated"
    found = kernel_kind(f"torch.ops.aten.{_stem(name)}.default")
    return found if found in ("library", "fallback") else "fallback"


_STEP = re.compile(r"^ProfilerStep#\d+$")


def profiler_steps(trace: ChromeTrace) -> list[tuple[float, float]]:
    """The ``ProfilerStep#N`` events of a user's ``torch.profiler`` loop (``prof.step()``,
    with or without a ``schedule``): (start, end) of each, in order."""
    names, ts, dur = trace.names, trace.ts, trace.dur
    steps = [(ts[i], ts[i] + dur[i]) for i, code in enumerate(trace.name)
             if _STEP.match(names[code])]  # fmt: skip
    return sorted(steps)


def period_marks(trace: ChromeTrace, start: float, end: float) -> list[float]:
    """Where each period of the window ends (the ``pt2doctor: call`` marks), in order."""
    names, ts = trace.names, trace.ts
    return sorted(ts[i] for i, code in enumerate(trace.name)
                  if names[code] == PROFILE_PERIOD_MARK and start <= ts[i] <= end)  # fmt: skip


def kept_ranges(
    bounds: Sequence[tuple[float, float]], left_out: Collection[int]
) -> list[tuple[float, float]]:
    """The periods ``bounds`` less those ``left_out`` (their indices), neighbours merged."""
    ranges: list[tuple[float, float]] = []
    for i, (begin, stop) in enumerate(bounds):
        if i in left_out:
            continue
        if ranges and ranges[-1][1] == begin:
            ranges[-1] = (ranges[-1][0], stop)
        else:
            ranges.append((begin, stop))
    return ranges


def trace_window(trace: ChromeTrace) -> tuple[float, float]:
    """The profiled window's start and end in the trace's clock (us): between its marks, else
    from the first ``ProfilerStep#N`` to the end of the last (a user's own profiler loop),
    else the whole trace."""
    start = end = None
    for i, name_id in enumerate(trace.name):
        name = trace.names[name_id]
        if name == PROFILE_START_MARK:
            start = trace.ts[i] + trace.dur[i]
        elif name == PROFILE_END_MARK:
            end = trace.ts[i]
    if start is None and end is None and (steps := profiler_steps(trace)):
        return steps[0][0], steps[-1][1]
    if start is None or end is None:
        first = min(trace.ts, default=0.0)
        last = max((t + d for t, d in zip(trace.ts, trace.dur, strict=True)), default=0.0)
        return (first if start is None else start, last if end is None else end)
    return start, end


_OTHER, _REGION, _LOOKUP_CODE, _FWD, _BACK, _CALL, _ATEN, _KERNEL, _MARK = range(9)
_BUSY = frozenset((_FWD, _BACK, _CALL, _ATEN, _KERNEL))
"""Open events under which an ATen op is not eager: graph calls, kernels, other ATen ops."""


def _code(name: str) -> int:
    if name == PROFILE_PERIOD_MARK:
        return _MARK
    if name.startswith(_REGION_PREFIX):
        return _REGION
    if name == _LOOKUP:
        return _LOOKUP_CODE
    if name == _FORWARD:
        return _FWD
    if name == _BACKWARD:
        return _BACK
    if name.startswith(_CALL_PREFIX):
        return _CALL
    if name.startswith("aten::"):
        return _ATEN
    return _OTHER


class _Open:
    """An event open on a thread's stack while later ones start inside it."""

    __slots__ = ("backward", "children", "code", "end", "inner", "region", "us")

    def __init__(self, end: float, code: int) -> None:
        self.end = end
        self.code = code
        """``_REGION``, ``_FWD``, ``_BACK`` or ``_CALL``: the events the walk keeps open."""
        self.region: _Region | None = None
        """The region this event is (region) or runs in (forward, call)."""
        self.backward: _Backward | None = None
        self.children: list[tuple[str, float]] = []
        """A graph call's kernels: (name, us) in launch order."""
        self.us = 0.0
        self.inner = 0.0
        """An autograd function's graph calls: its own time is ``us - inner``."""


class _Backward:
    __slots__ = ("calls", "seq", "us")

    def __init__(self, seq: int, us: float) -> None:
        self.seq = seq
        self.us = us
        self.calls: list[tuple[list[tuple[str, float]], float]] = []
        """Each graph call: its kernels (name, us) and its own duration."""


def event_order(trace: ChromeTrace, start: float, end: float) -> list[int]:
    """The events that start in [start, end), by thread, then start, the longer of two equal
    starts first (the parent before its children): the order to nest them in."""
    order = [i for i in range(len(trace)) if start <= trace.ts[i] < end]
    if not _in_order(trace, order):
        # Stable sorts, last key first. Kineto writes them in this order already.
        longest_first = array("d", (-d for d in trace.dur))
        order.sort(key=longest_first.__getitem__)
        order.sort(key=trace.ts.__getitem__)
        order.sort(key=trace.thread.__getitem__)
    return order


def _in_order(trace: ChromeTrace, order: list[int]) -> bool:
    """Whether ``order`` is by thread, start, and the longer of two equal starts first."""
    ts, dur, thread = trace.ts, trace.dur, trace.thread
    last = (-1, float("-inf"), float("inf"))
    for i in order:
        key = (thread[i], ts[i], -dur[i])
        if key < last:
            return False
        last = key
    return True


class _Walk:
    """One pass over the window's events, thread by thread, nesting them by time."""

    def __init__(self, trace: ChromeTrace) -> None:
        self.trace = trace
        self.regions: list[_Region] = []
        self.forward_calls: list[tuple[_Region, list[tuple[str, float]], float]] = []
        """Each graph call inside a region, with its kernels."""
        self.forward_seq: dict[int, str] = {}
        """Autograd sequence number of each CompiledFunction -> its region's compile id."""
        self.backwards: list[_Backward] = []
        self.eager: dict[tuple[str | None, str], float] = {}
        """(the region it ran in, else None; op) -> time of eager ATen ops outside graphs."""
        self.eager_spans: list[tuple[float, float, str | None]] = []
        """Each of those ops: (start, end, the region it ran in)."""
        self.forward_autograd = 0
        self.autograd_us = 0.0
        self.own_us = 0.0
        """pt2doctor's own time inside regions (its period marks' probe), left out."""
        self.end = 0.0

    def run(self, start: float, end: float) -> None:
        """Nest the events of each thread by time (a stack of open ones) and account each."""
        trace = self.trace
        ts_col, dur_col, thread_col = trace.ts, trace.dur, trace.thread
        order = event_order(trace, start, end)
        self.end = end
        codes = [_code(name) for name in trace.names]
        name_col = trace.name
        thread = -1
        ends: list[float] = []
        kinds: list[int] = []
        items: list[_Open | None] = []
        last_at: list[int] = []  # per depth: the last event that started there
        busy = 0  # open events whose aten children are not eager: graphs, kernels, aten ops
        for i in order:
            ts = ts_col[i]
            if thread_col[i] != thread:
                while ends:
                    busy -= self._pop(ends, kinds, items)
                thread, last_at = thread_col[i], []
            while ends and ends[-1] <= ts:
                ends.pop()
                busy -= kinds.pop() in _BUSY
                closed = items.pop()
                if closed is not None:
                    self._close(closed)
            depth = len(ends)
            before = last_at[depth] if depth < len(last_at) else None
            del last_at[depth:]
            last_at.append(i)
            code = codes[name_col[i]]
            dur = dur_col[i]
            if ts + dur > end:  # open when the window closed: cut at its end
                dur = end - ts
            top = kinds[-1] if kinds else _OTHER
            if code == _MARK:
                self._own_mark(ts, dur, items)
                code = _OTHER
            if code == _OTHER or (code == _ATEN and (busy or top == _CALL)):
                if top == _CALL:  # a kernel of the graph call on top
                    owner = items[-1]
                    assert owner is not None
                    owner.children.append((trace.names[name_col[i]], dur))
                    code = _KERNEL
                ends.append(ts + dur)
                kinds.append(code)
                items.append(None)
                busy += code in _BUSY
                continue
            item = self._open(i, code, ts, dur, before, items)
            ends.append(ts + dur)
            kinds.append(code)
            items.append(item)
            busy += code in _BUSY
        while ends:
            busy -= self._pop(ends, kinds, items)

    def _pop(self, ends: list[float], kinds: list[int], items: list[_Open | None]) -> int:
        """Close the event on top; 1 when it was busy."""
        ends.pop()
        code = kinds.pop()
        item = items.pop()
        if item is not None:
            self._close(item)
        return 1 if code in _BUSY else 0

    def _own_mark(self, ts: float, dur: float, items: list[_Open | None]) -> None:
        """pt2doctor's own period mark, made right after the hot graph returned: the time from
        the graph's end to the mark's is the probe's (its call count, its clock and the mark),
        not the program's. It is left out of the region and of the window, so it is never
        charged to a graph break's eager code (where it was half of a small break's time) or
        to a region's overhead."""
        region = self._region_of(items)
        if region is None or region.graph_end is None or ts < region.graph_end:
            return
        hook = ts + dur - region.graph_end
        region.nested += hook
        region.tail_nested += hook
        self.own_us += hook

    def _region_of(self, items: list[_Open | None]) -> _Region | None:
        for item in reversed(items):
            if item is not None and item.region is not None:
                return item.region
        return None

    def _open(
        self,
        i: int,
        code: int,
        ts: float,
        dur: float,
        before: int | None,
        items: list[_Open | None],
    ) -> _Open | None:
        trace = self.trace
        region = self._region_of(items)
        top = next((item for item in reversed(items) if item is not None), None)
        if code == _REGION:
            guards = 0.0
            if before is not None and trace.names[trace.name[before]] == _LOOKUP:
                guards = trace.dur[before]
            if region is not None:  # a region nested in another: its time is its own
                region.nested += dur + guards
                if region.graph_end is not None and ts >= region.graph_end:
                    region.tail_nested += dur + guards
                    region.tail_guards += guards
            item = _Open(ts + dur, _REGION)
            name = trace.names[trace.name[i]]
            item.region = _Region(name[len(_REGION_PREFIX) :], ts, ts + dur, guards)
            item.region.cut = trace.ts[i] + trace.dur[i] > self.end
            self.regions.append(item.region)
            return item
        if code == _CALL:
            if top is not None and top.code == _FWD and items[-1] is top:
                top.inner += dur
            item = _Open(ts + dur, _CALL)
            item.us = dur
            item.backward = next((o.backward for o in reversed(items) if o and o.backward), None)
            item.region = None if item.backward is not None else region
            return item
        if code == _BACK:
            item = _Open(ts + dur, _BACK)
            item.backward = _Backward(trace.seq[i], dur)
            self.backwards.append(item.backward)
            return item
        if code == _FWD:
            if region is None:
                return None
            self.forward_seq[trace.seq[i]] = region.cid
            self.forward_autograd += 1
            item = _Open(ts + dur, _FWD)
            item.region = region
            item.us = dur
            return item
        if code == _ATEN:  # nothing busy open: an eager op, outside any graph
            name = trace.names[trace.name[i]]
            key = (None if region is None else region.cid, name)
            self.eager[key] = self.eager.get(key, 0.0) + dur
            self.eager_spans.append((ts, ts + dur, key[0]))
        return None

    def _close(self, item: _Open) -> None:
        if item.code not in (_CALL, _FWD):
            return
        if item.code == _FWD:
            self.autograd_us += item.us - item.inner
        region = item.region
        if region is not None and (region.graph_end is None or item.end > region.graph_end):
            region.graph_end = item.end
        if item.code != _CALL:
            return
        if item.backward is not None:
            item.backward.calls.append((item.children, item.us))
        elif region is not None:
            self.forward_calls.append((region, item.children, item.us))


class _Charges:
    """Region rows and kernel rows, filled from the walk."""

    def __init__(self, builts: Mapping[str, Built | None]) -> None:
        self.builts = builts
        self.maps: dict[str, _Kernels] = {}
        self.regions: dict[tuple[str, str], RegionTime] = {}
        self.kernels: dict[tuple[str, str, str], KernelTime] = {}
        self.kernels_by_call: dict[tuple[str, str, str, int], KernelTime] = {}
        """(compile id, part, profiled name, its n-th launch in a call) -> its row."""
        self.stems: dict[str, str] = {}
        self.unnamed: dict[tuple[str, str], float] = {}
        """Per region and part: its graph calls' time outside the kernels they name."""
        self.generated_events = 0

    def region(self, cid: str, part: str) -> RegionTime:
        found = self.regions.get((cid, part))
        if found is None:
            found = self.regions[(cid, part)] = RegionTime(cid, part)
        return found

    def _row(self, cid: str, part: str, name: str, known: Kernel | None) -> KernelTime:
        """The kernel row a profiled kernel adds to (one per kernel of the map)."""
        generated = _GENERATED.match(name)
        label = known.name if known else (generated["name"] if generated else name)
        key = (cid, part, known.key if known is not None else label)
        row = self.kernels.get(key)
        if row is None:
            row = self.kernels[key] = KernelTime(
                cid,
                part,
                label,
                _kind(name, known),
                ops=known.ops if known is not None else (),
                user_lines=known.user_lines if known is not None else (),
            )
        return row

    def graph_call(
        self, cid: str, part: str, children: list[tuple[str, float]], us_in_call: float
    ) -> None:
        """The kernels of one graph call: (name, us) in launch order, and the call's time."""
        region = self.region(cid, part)
        region.graph_calls += 1
        key = (cid, part)
        self.unnamed[key] = self.unnamed.get(key, 0.0) + us_in_call - sum(us for _, us in children)
        maps = self.maps.get(cid)
        if maps is None:
            maps = self.maps[cid] = _Kernels(self.builts.get(cid))
        nth: dict[str, int] = {}
        for name, us in children:
            stem = self.stems.get(name)
            if stem is None:
                stem = self.stems[name] = "" if _BOOKKEEPING.match(name) else _stem(name)
            if not stem:
                continue
            count = nth.get(stem, 0)
            nth[stem] = count + 1
            row = self.kernels_by_call.get((cid, part, name, count))
            if row is None:
                row = self._row(cid, part, name, maps.find(part, name, count))
                self.kernels_by_call[(cid, part, name, count)] = row
            kind = row.kind
            self.generated_events += kind == "generated"
            row.us += us
            row.launches += 1
            if kind == "generated":
                region.kernels_us += us
            elif kind == "library":
                region.library_us += us
            else:
                region.fallback_us += us


_PREFIX = re.compile(r"^graph_(\d+)_")


def _graph_prefixes(walk: _Walk) -> dict[str, str]:
    """``graph_<n>_`` of the generated kernels' profiler names -> the compile they ran in."""
    found: dict[str, str] = {}
    for region, children, _ in walk.forward_calls:
        for name, _ in children:
            match = _PREFIX.match(name)
            if match:
                found.setdefault(match[1], region.cid)
    return found


def _orphan_cid(backward: _Backward, prefixes: dict[str, str], cids: set[str]) -> str | None:
    """The compile of a backward whose forward ran before the window: by its kernels' graph
    prefix, else the only compile with a backward in the window."""
    for children, _ in backward.calls:
        for name, _ in children:
            match = _PREFIX.match(name)
            if match and match[1] in prefixes:
                return prefixes[match[1]]
    return next(iter(cids)) if len(cids) == 1 else None


def profile_view(
    trace: ChromeTrace,
    calls: int,
    hot_compile_id: str | None,
    builts: Mapping[str, Built | None],
    break_sites: Mapping[str, SourceLine],
    graphless: set[str] | frozenset[str] = frozenset(),
    kernel_events: bool | None = None,
    ranges: Sequence[tuple[float, float]] = (),
) -> ProfileView:
    """The window's time per call of the hot loop. ``builts``: each compile id's build (for
    its kernel map); ``break_sites``: the compile ids whose graph ends at a graph break, with
    the break's user line; ``graphless``: compiles that produced no graph (only the code
    around a break), whose whole region is that break's eager code; ``kernel_events``:
    whether generated kernels record profiler events (None: when the trace has some);
    ``ranges``: the parts of the window to count (its periods less the preempted ones,
    :func:`kept_ranges`; ``calls`` is then the periods they hold), else the whole window."""
    start, end = trace_window(trace)
    ranges = ranges or [(start, end)]
    walk = _Walk(trace)
    for begin, stop in ranges:
        walk.run(begin, stop)
    charges = _Charges(builts)
    tails: dict[str, list[float]] = {}
    resumed: dict[str, list[float]] = {}
    cut: dict[str, int] = {}
    for region in walk.regions:
        row = charges.region(region.cid, "forward")
        row.calls += 1
        row.guards_us += region.guards
        own = region.end - region.start - region.nested + region.guards
        if region.cid in graphless:  # all of it after a graph that is not there
            region.graph_end, region.tail_nested = region.start, region.nested
        if region.cid in break_sites and region.graph_end is not None:
            tail = max(region.end - region.graph_end - region.tail_nested, 0.0)
            own -= tail
            if region.cut:
                cut[region.cid] = cut.get(region.cid, 0) + 1
            else:
                tails.setdefault(region.cid, []).append(tail)
                resumed.setdefault(region.cid, []).append(region.tail_guards)
        row.us += own

    # The window opens and closes in the hot region's call, after its graph: the last call's
    # break tail is past the window's end, and the first call's (before any complete region)
    # is in it; each call's is charged at the mean of the complete ones.
    def with_cut(per_region: dict[str, list[float]]) -> dict[str, float]:
        return {cid: sum(found) / len(found) * (len(found) + cut.get(cid, 0))
                for cid, found in per_region.items()}  # fmt: skip

    breaks, resumed_guards = with_cut(tails), with_cut(resumed)
    for region, children, us in walk.forward_calls:
        charges.graph_call(region.cid, "forward", children, us)
    orphans = 0
    prefixes = _graph_prefixes(walk)
    with_backward = {walk.forward_seq[b.seq] for b in walk.backwards if b.seq in walk.forward_seq}
    for backward in walk.backwards:
        cid = walk.forward_seq.get(backward.seq) or _orphan_cid(backward, prefixes, with_backward)
        if cid is None:
            orphans += 1
            continue
        row = charges.region(cid, "backward")
        row.calls += 1
        row.us += backward.us
        for children, us in backward.calls:
            charges.graph_call(cid, "backward", children, us)
    estimated = not kernel_events if kernel_events is not None else not charges.generated_events
    estimated = estimated and bool(charges.unnamed)
    if estimated:
        # No kernel events (traced without TORCHINDUCTOR_CPP_ENABLE_KERNEL_PROFILE=1): the
        # generated kernels are what the graph calls spent outside the ops they name.
        for key, us in charges.unnamed.items():
            charges.regions[key].kernels_us += max(us, 0.0)
    wall = sum(max(stop - begin, 0.0) for begin, stop in ranges) - walk.own_us
    view = ProfileView(calls, wall, hot_compile_id)
    view.window = (start, end)
    view.ranges = list(ranges)
    if estimated:
        view.notes.append(
            "the trace has no kernel events (TORCHINDUCTOR_CPP_ENABLE_KERNEL_PROFILE=1 gives "
            "C++ kernels theirs): generated-kernel time is each graph call's time outside its "
            "library and fallback ops"
        )
    view.regions = sorted(charges.regions.values(), key=lambda r: -r.us)
    view.kernels = sorted(charges.kernels.values(), key=lambda k: -k.us)
    outside = [OutsideTime(break_sites[cid], us, cid, resumed_guards.get(cid, 0.0))
               for cid, us in breaks.items()]  # fmt: skip
    rest = wall - view.compiled_us - sum(item.us for item in outside)
    view.outside = [*sorted(outside, key=lambda o: -o.us), OutsideTime(None, max(rest, 0.0))]
    inductor = {r.compile_id for r in view.regions if r.graph_calls} | set(graphless)
    totals: dict[str, float] = {}
    for (cid, op), us in walk.eager.items():
        if cid is not None and cid not in inductor:
            continue  # another backend's graph: its ops are the region's own
        totals[op] = totals.get(op, 0.0) + us
        if cid is not None:
            view.eager_at.setdefault(cid, []).append((op, us))
    view.eager_ops = sorted(totals.items(), key=lambda item: -item[1])
    view.eager_spans = [(begin, stop) for begin, stop, cid in walk.eager_spans
                        if cid is None or cid in inductor]  # fmt: skip
    for found in view.eager_at.values():
        found.sort(key=lambda item: -item[1])
    view.forward_autograd_calls = walk.forward_autograd
    view.autograd_us = walk.autograd_us
    view.backward_calls = len(walk.backwards) - orphans
    other = [
        r.compile_id
        for r in view.regions
        if r.part == "forward" and not r.graph_calls and r.compile_id not in graphless
    ]
    if other:
        view.notes.append(
            f"{', '.join(other)} ran no Inductor graph (another backend): their ops are counted "
            "as the regions' overhead"
        )
    if orphans:
        view.notes.append(
            f"{counted(orphans, 'backward call')} whose forward ran before the window could "
            "not be joined to a compile: counted outside the regions"
        )
    return view

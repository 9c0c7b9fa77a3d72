"""The device side of a Kineto trace: what the GPU ran, when it sat idle, and why.

A trace the user already has (``torch.profiler`` with ``export_chrome_trace`` or
``tensorboard_trace_handler``, one per rank) holds, besides the host's ops, the device's
kernels, copies and memsets, one ``pid`` per device and one ``tid`` per stream. Each is joined
to its host launch by ``args.correlation`` (Kineto's ``ac2g`` flows say the same): a
``cudaLaunchKernel``, a ``cudaMemcpyAsync``, or a ``cudaGraphLaunch`` whose correlation every
kernel the graph replays carries.

From that, per trace:

- **kernels by kind**: Inductor-generated (Triton), library (cuBLAS, cuDNN, CUTLASS, flash /
  SDPA attention), communication (NCCL), eager ATen, memcpy and memset;
- **per step** (``ProfilerStep#N``, else pt2doctor's window markers, else the whole trace):
  device busy against idle, and the idle split by what it waited on: the host launching (the
  next kernel was launched after the device had gone idle) or a synchronize (the host was
  blocked in one when the device went idle, so the queue drained);
- **syncs**: every host call that waits for the device (``cudaStreamSynchronize``,
  ``cudaDeviceSynchronize``, ``cudaEventSynchronize``), with the host ops around it
  (``aten::item`` > ``aten::_local_scalar_dense``) and the user's line where the trace has
  Python stacks;
- **compiled regions**: device time launched from ``Torch-Compiled Region``,
  ``CompiledFunction`` and ``CompiledFunctionBackward`` and outside them; CUDA-graph replays
  attributed to the region that launched them;
- **streams**: time two or more streams overlap, and communication not overlapped with
  compute (exposed).

It reads only the trace (no torch): ``pt2doctor report TRACE.json.gz``.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from statistics import median
from typing import Any

from pt2doctor.rundir import PROFILE_END_MARK, PROFILE_START_MARK
from pt2doctor.trace.chrome import ChromeTrace

DEVICE_CATEGORIES = frozenset({"kernel", "gpu_memcpy", "gpu_memset"})
HOST_RUNTIME = frozenset({"cuda_runtime", "cuda_driver"})
_SYNC = re.compile(r"^cu(?:da)?(?:Stream|Device|Ctx|Event)Synchronize$")
_GRAPH_LAUNCH = re.compile(r"^cu(?:da)?GraphLaunch")
_STEP = re.compile(r"^ProfilerStep#(\d+)$")
_REGION = "Torch-Compiled Region"
_FORWARD = "CompiledFunction"
_BACKWARD = "CompiledFunctionBackward"
# Kernel names by kind, first match wins (names as CUDA libraries and Inductor emit them).
_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("communication", re.compile(r"nccl", re.I)),
    ("generated", re.compile(r"^triton_|^triton__|^Triton|^cutlass_.*inductor", re.I)),
    ("attention", re.compile(r"flash|fmha|efficient_attention|attention|sdpa|cudnn_mha", re.I)),
    (
        "library",
        re.compile(
            r"(?<!fb)gemm|gemv|cublas|cutlass|xmma|cudnn|conv|winograd|implicit_convolve|"
            r"splitKreduce|cusparse|cufft|magma|nchwToNhwc|nhwcToNchw",
            re.I,
        ),
    ),
    ("aten", re.compile(r"at::native|at::|c10::")),
)
# FP32 matmuls on CUDA cores (SIMT sgemm: no tensor cores) on a GPU that has TF32 (compute
# capability 8 and up), and the TF32 tensor-core GEMMs (cuBLAS/CUTLASS "s1688gemm", "tf32").
_SIMT_SGEMM = re.compile(r"(?:ampere|sm8\d|sm9\d|hopper)_sgemm|cutlass_\d+_simt_sgemm", re.I)
_TF32_GEMM = re.compile(r"tf32|tensorop_s\d+gemm|s1688gemm|s16816gemm", re.I)
# A python_function event of the user's own code (with_stack=True): "train.py(42): step".
_PYTHON_FRAME = re.compile(r"^(?P<file>.+?\.py)\((?P<line>\d+)\): (?P<function>.+)$")
_LIBRARY_FILE = re.compile(r"site-packages/|dist-packages/|/torch/|^<|/lib/python\d")


def kernel_kind(name: str, category: str) -> str:
    """``generated``, ``library``, ``attention``, ``communication``, ``aten``, ``memcpy``,
    ``memset`` or ``other``."""
    if category == "gpu_memcpy":
        return "memcpy"
    if category == "gpu_memset":
        return "memset"
    for kind, pattern in _KINDS:
        if pattern.search(name):
            return kind
    return "other"


def short_kernel_name(name: str) -> str:
    """A kernel's name without its template arguments and parameter list
    (``void at::native::vectorized_elementwise_kernel<4, ...>(...)`` ->
    ``at::native::vectorized_elementwise_kernel``)."""
    text = name.removeprefix("void ")
    depth, out = 0, []
    for char in text:
        if char in "<(":
            depth += 1
        elif char in ">)":
            depth = max(depth - 1, 0)
        elif depth == 0:
            out.append(char)
    short = "".join(out).strip()
    return short or name


@dataclass(slots=True)
class KernelGroup:
    kind: str
    name: str
    count: int = 0
    us: float = 0.0


@dataclass(slots=True)
class SyncSite:
    """Host calls that waited for the device at one place: the host ops around them, the
    compiled region they ran in, the user's line when the trace has Python stacks."""

    call: str
    op: str | None
    """The outermost host op around the call (``aten::item``), None at the top level."""
    inner: str | None
    """The innermost one (``aten::_local_scalar_dense``)."""
    region: str | None
    user_line: str | None
    where: str = "in steps"
    """``in steps``, or ``before the first step``, ``between steps``, ``after the last step``
    (``the whole trace`` when it has no steps)."""
    count: int = 0
    us: float = 0.0
    dtoh_copies: int = 0
    """Device-to-host copies launched under the same op right before (what it waited for)."""


@dataclass(slots=True)
class StepDevice:
    """One step: the host's ``ProfilerStep#N`` (or the window) and the device work it
    launched."""

    name: str
    wall_us: float
    device_us: float = 0.0
    """From the first device event it launched to the last one's end."""
    busy_us: float = 0.0
    idle_us: float = 0.0
    """Gaps in the device's timeline that ended with work this step launched."""
    idle_host_us: float = 0.0
    """Idle until a kernel the host launched only after the device had gone idle."""
    idle_sync_us: float = 0.0
    """Of ``idle_host_us``, gaps that began as a synchronize returned (the queue had drained
    while the host waited) and lasted until the host's next launch."""
    kernels: int = 0
    sync_us: float = 0.0
    """Host time in synchronize calls during the step."""


@dataclass(slots=True)
class RegionDevice:
    """Device work launched from one compiled region (or from outside every region)."""

    label: str
    calls: int = 0
    kernels: int = 0
    device_us: float = 0.0
    graph_launches: int = 0
    graph_kernels: int = 0
    """Kernels CUDA graphs replayed for it (each carries its cudaGraphLaunch's correlation)."""
    idle_us: float = 0.0
    """Gaps between its kernels within each call, where the next was launched late."""
    span_us: float = 0.0
    """Each call's device span (first kernel's start to last one's end), summed."""
    median_kernel_us: float = 0.0
    """Of the kernels it launched itself (CUDA-graph replays not counted)."""
    by_kind: dict[str, float] = field(default_factory=dict)
    """Device time per kernel kind."""


@dataclass(slots=True)
class DeviceProfile:
    path: str
    events: int
    bad_events: int
    gpus: list[str] = field(default_factory=list)
    rank: int | None = None
    span_us: float = 0.0
    steps_from: str = "the whole trace"
    steps: list[StepDevice] = field(default_factory=list)
    kernels: int = 0
    kernel_us: float = 0.0
    by_kind: dict[str, KernelGroup] = field(default_factory=dict)
    top_kernels: list[KernelGroup] = field(default_factory=list)
    copies: dict[str, KernelGroup] = field(default_factory=dict)
    """``DtoH``, ``HtoD``, ``DtoD``, ... -> count and device time."""
    syncs: int = 0
    sync_us: float = 0.0
    sync_sites: list[SyncSite] = field(default_factory=list)
    graph_launches: int = 0
    graph_kernels: int = 0
    regions: list[RegionDevice] = field(default_factory=list)
    streams: int = 0
    overlap_us: float = 0.0
    """Device time during which two or more streams ran."""
    communication_us: float = 0.0
    exposed_communication_us: float = 0.0
    """Communication kernels' time with no compute kernel running on another stream."""
    compiled_regions: int = 0
    """Host events of compiled regions (``CompiledFunction``, ``Torch-Compiled Region``...)."""
    compute_major: int | None = None
    """The GPUs' compute capability (deviceProperties ``computeMajor``), the highest."""
    fp32_simt_us: float = 0.0
    """FP32 matmuls on CUDA cores (``ampere_sgemm_*``): TF32 off, on a GPU that has it."""
    fp32_simt_kernels: list[KernelGroup] = field(default_factory=list)
    tf32_us: float = 0.0
    """TF32 tensor-core GEMMs and convolutions (``s1688gemm``, ``*tf32*``)."""

    @property
    def device_events(self) -> int:
        """Kernels, copies and memsets."""
        return sum(group.count for group in self.by_kind.values())

    def per_step(self, us: float) -> float:
        """``us`` over the whole trace, in ms per step."""
        return us / max(len(self.steps), 1) / 1000.0

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["by_kind"] = {kind: asdict(group) for kind, group in sorted(self.by_kind.items())}
        return data


class _Host:
    """Per host thread, each runtime call's context: the ops open around it, the compiled
    region, the step; built in one pass of each thread's events nested by time."""

    __slots__ = ("graph", "inner", "op", "region", "ts", "user")

    def __init__(self) -> None:
        self.ts: dict[int, float] = {}
        self.op: dict[int, str | None] = {}
        self.inner: dict[int, str | None] = {}
        self.region: dict[int, tuple[str, float] | None] = {}
        self.user: dict[int, str | None] = {}
        self.graph: set[int] = set()


def _region_label(name: str) -> str | None:
    if name.startswith(_REGION):
        return name
    if name in (_FORWARD, _BACKWARD):
        return name
    return None


def _user_line(name: str) -> str | None:
    match = _PYTHON_FRAME.match(name)
    if match is None or _LIBRARY_FILE.search(match["file"]):
        return None
    return f"{match['file']}:{match['line']} in {match['function']}"


def _host_context(trace: ChromeTrace) -> tuple[_Host, list[tuple[str, float, float, int]]]:
    """Every runtime call's context, and the compiled-region calls (label, start, end,
    thread) in start order."""
    host = _Host()
    categories = trace.categories
    device = {i for i, c in enumerate(categories) if c in DEVICE_CATEGORIES}
    runtime = {i for i, c in enumerate(categories) if c in HOST_RUNTIME}
    cpu_op = {i for i, c in enumerate(categories) if c == "cpu_op"}
    python = {i for i, c in enumerate(categories) if c == "python_function"}
    names, name_col, cat_col = trace.names, trace.name, trace.category
    ts_col, dur_col, thread_col = trace.ts, trace.dur, trace.thread
    order = [i for i in range(len(trace)) if cat_col[i] not in device]
    order.sort(key=lambda i: (thread_col[i], ts_col[i], -dur_col[i]))
    regions: list[tuple[str, float, float, int]] = []
    labels = [_region_label(name) for name in names]
    users = [_user_line(name) for name in names] if python else []
    # A stack per thread: (end, outer op, inner op, (region, start), user line).
    stack: list[tuple[float, str | None, str | None, tuple[str, float] | None, str | None]] = []
    current = -1
    for i in order:
        thread, ts = thread_col[i], ts_col[i]
        if thread != current:
            stack, current = [], thread
        while stack and stack[-1][0] <= ts:
            stack.pop()
        top = stack[-1] if stack else (0.0, None, None, None, None)
        category, name = cat_col[i], name_col[i]
        if category in runtime:
            host.ts[i] = ts
            host.op[i], host.inner[i], host.region[i], host.user[i] = top[1], top[2], top[3], top[4]
            if _GRAPH_LAUNCH.match(names[name]):
                host.graph.add(i)
            continue
        end = ts + dur_col[i]
        outer, inner, region, user = top[1], top[2], top[3], top[4]
        label = labels[name]
        if label is not None:
            regions.append((label, ts, end, thread))
            if region is None or not region[0].startswith(_REGION) or label == _BACKWARD:
                region = (label, ts)
        elif category in cpu_op:
            outer = outer or names[name]
            inner = names[name]
        elif category in python:
            user = users[name] or user
        stack.append((end, outer, inner, region, user))
    regions.sort(key=lambda r: r[1])
    return host, regions


def _steps(trace: ChromeTrace) -> tuple[str, list[tuple[str, float, float]]]:
    names, ts, dur = trace.names, trace.ts, trace.dur
    found = []
    for i, code in enumerate(trace.name):
        if _STEP.match(names[code]):
            found.append((names[code], ts[i], ts[i] + dur[i]))
    if found:
        found.sort(key=lambda step: step[1])
        return "ProfilerStep#N", found
    marks = {names[code]: ts[i] for i, code in enumerate(trace.name)
             if names[code] in (PROFILE_START_MARK, PROFILE_END_MARK)}  # fmt: skip
    if PROFILE_START_MARK in marks and PROFILE_END_MARK in marks:
        return "pt2doctor's window", [
            ("window", marks[PROFILE_START_MARK], marks[PROFILE_END_MARK])
        ]
    if not len(trace):
        return "the whole trace", []
    start = min(ts)
    end = max(t + d for t, d in zip(ts, dur, strict=True))
    return "the whole trace", [("trace", start, end)]


def _union(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    merged: list[tuple[float, float]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def _overlaps(
    events: Iterable[tuple[float, float, int, bool]],
) -> tuple[float, float]:
    """(time two or more streams run, communication time with no compute running), from
    (start, end, stream, is communication) by a sweep."""
    points: list[tuple[float, int, int, bool]] = []
    for start, end, stream, comm in events:
        if end > start:
            points.append((start, 1, stream, comm))
            points.append((end, -1, stream, comm))
    points.sort(key=lambda p: (p[0], p[1]))
    running: Counter[int] = Counter()
    compute = comm_running = 0
    overlap = exposed = 0.0
    last = None
    for time, step, stream, comm in points:
        if last is not None and time > last:
            if sum(1 for n in running.values() if n > 0) >= 2:
                overlap += time - last
            if comm_running and not compute:
                exposed += time - last
        running[stream] += step
        if comm:
            comm_running += step
        else:
            compute += step
        last = time
    return overlap, exposed


def _copy_kind(name: str) -> str:
    match = re.search(r"\b([DHP]to[DHP])\b", name)
    return match.group(1) if match else name.split(" ")[0]


def device_profile(trace: ChromeTrace, path: Path | str) -> DeviceProfile:
    """The device side of ``trace`` (see the module's doc)."""
    profile = DeviceProfile(str(path), len(trace), trace.bad_events)
    header = trace.header
    profile.gpus = [str(d.get("name")) for d in header.get("deviceProperties") or []
                    if isinstance(d, dict) and d.get("name")]  # fmt: skip
    majors: list[int] = [d["computeMajor"] for d in header.get("deviceProperties") or []
                         if isinstance(d, dict) and isinstance(d.get("computeMajor"), int)]  # fmt: skip
    profile.compute_major = max(majors) if majors else None
    info = header.get("distributedInfo")
    if isinstance(info, dict) and isinstance(info.get("rank"), int):
        profile.rank = info["rank"]
    if len(trace):
        profile.span_us = max(t + d for t, d in zip(trace.ts, trace.dur, strict=True)) - min(
            trace.ts
        )
    host, regions = _host_context(trace)
    profile.compiled_regions = len(regions)
    names, categories = trace.names, trace.categories
    name_col, cat_col, thread_col = trace.name, trace.category, trace.thread
    ts_col, dur_col, corr_col = trace.ts, trace.dur, trace.correlation
    launch_of: dict[int, int] = {}
    for i in host.ts:
        if corr_col[i] >= 0:
            launch_of.setdefault(corr_col[i], i)
    device_events = [i for i in range(len(trace)) if categories[cat_col[i]] in DEVICE_CATEGORIES]
    profile.streams = len({thread_col[i] for i in device_events})
    kinds: dict[str, KernelGroup] = {}
    top: dict[str, KernelGroup] = {}
    region_rows: dict[str, RegionDevice] = {}
    per_call: dict[tuple[str, float], list[tuple[float, float, float]]] = {}
    sweep: list[tuple[float, float, int, bool]] = []
    kernel_us: dict[str, list[float]] = {}
    kinds_of: dict[tuple[int, int], str] = {}
    shorts: dict[int, str] = {}
    for label, _, _, _ in regions:
        region_rows.setdefault(label, RegionDevice(label)).calls += 1
    for i in device_events:
        category, name = categories[cat_col[i]], names[name_col[i]]
        key = (name_col[i], cat_col[i])  # names are interned: each kind found once
        kind = kinds_of.get(key)
        if kind is None:
            kind = kinds_of[key] = kernel_kind(name, category)
        us = dur_col[i]
        group = kinds.setdefault(kind, KernelGroup(kind, kind))
        group.count += 1
        group.us += us
        if category == "gpu_memcpy":
            copy = profile.copies.setdefault(_copy_kind(name), KernelGroup("memcpy", name))
            copy.count += 1
            copy.us += us
        elif category == "kernel":
            profile.kernels += 1
            profile.kernel_us += us
            short = shorts.get(name_col[i])
            if short is None:
                short = shorts[name_col[i]] = short_kernel_name(name)
            row = top.setdefault(short, KernelGroup(kind, short))
            row.count += 1
            row.us += us
        sweep.append((ts_col[i], ts_col[i] + us, thread_col[i], kind == "communication"))
        launch = launch_of.get(corr_col[i])
        region = host.region.get(launch) if launch is not None else None
        label = region[0] if region else "outside compiled regions"
        row_region = region_rows.setdefault(label, RegionDevice(label))
        row_region.kernels += 1
        row_region.device_us += us
        row_region.by_kind[kind] = row_region.by_kind.get(kind, 0.0) + us
        graphed = launch is not None and launch in host.graph
        if graphed:
            profile.graph_kernels += 1
            row_region.graph_kernels += 1
        if region is not None and launch is not None and not graphed:
            per_call.setdefault(region, []).append((ts_col[i], ts_col[i] + us, host.ts[launch]))
            if category == "kernel":
                kernel_us.setdefault(region[0], []).append(us)
    for i in host.graph:
        profile.graph_launches += 1
        region = host.region.get(i)
        label = region[0] if region else "outside compiled regions"
        region_rows.setdefault(label, RegionDevice(label)).graph_launches += 1
    _region_idle(per_call, region_rows)
    for label, values in kernel_us.items():
        region_rows[label].median_kernel_us = median(values)
    profile.by_kind = kinds
    profile.top_kernels = sorted(top.values(), key=lambda g: -g.us)[:10]
    _gemm_precision(
        profile, trace, [i for i in device_events if categories[cat_col[i]] == "kernel"]
    )
    profile.regions = sorted(region_rows.values(), key=lambda r: -r.device_us)
    profile.overlap_us, profile.exposed_communication_us = _overlaps(sweep)
    profile.communication_us = kinds["communication"].us if "communication" in kinds else 0.0
    syncs = [i for i in host.ts if _SYNC.match(names[name_col[i]])]
    profile.steps_from, steps = _steps(trace)
    dtoh: Counter[tuple[str | None, str | None]] = Counter()
    for i in device_events:
        launch = launch_of.get(corr_col[i])
        if launch is not None and "DtoH" in names[name_col[i]]:
            dtoh[(host.op[launch], host.inner[launch])] += 1
    _sync_sites(profile, trace, host, syncs, steps, dtoh)
    profile.steps = _step_rows(trace, steps, device_events, launch_of, syncs)
    return profile


def _gemm_precision(profile: DeviceProfile, trace: ChromeTrace, kernels: list[int]) -> None:
    """FP32 SIMT matmul time and TF32 tensor-core time, by the kernels' full names (a CUTLASS
    kernel's precision is in its template arguments: ``cutlass::Kernel<..._s1688gemm_...>``)."""
    names, name_col, dur_col = trace.names, trace.name, trace.dur
    simt: dict[str, KernelGroup] = {}
    precision: dict[int, str] = {}
    for i in kernels:
        code = name_col[i]
        kind = precision.get(code)
        if kind is None:
            name = names[code]
            kind = precision[code] = (
                "tf32" if _TF32_GEMM.search(name) else "simt" if _SIMT_SGEMM.search(name) else ""
            )
        if kind == "tf32":
            profile.tf32_us += dur_col[i]
        elif kind == "simt":
            short = short_kernel_name(names[code])
            group = simt.setdefault(short, KernelGroup("library", short))
            group.count += 1
            group.us += dur_col[i]
            profile.fp32_simt_us += dur_col[i]
    profile.fp32_simt_kernels = sorted(simt.values(), key=lambda g: -g.us)[:5]


def _region_idle(
    per_call: dict[tuple[str, float], list[tuple[float, float, float]]],
    rows: dict[str, RegionDevice],
) -> None:
    """Per region call: its device span, and the gaps between its kernels where the next was
    launched only after the device had gone idle (the host could not keep up)."""
    for (label, _), events in per_call.items():
        row = rows[label]
        events.sort()
        row.span_us += events[-1][1] - events[0][0]
        busy_end = events[0][1]
        for start, end, launched in events[1:]:
            if start > busy_end and launched >= busy_end:
                row.idle_us += start - busy_end
            busy_end = max(busy_end, end)


def _where(at: float, steps: list[tuple[str, float, float]], source: str) -> str:
    if source == "the whole trace":
        return source
    starts = [start for _, start, _ in steps]
    index = bisect_right(starts, at) - 1
    if index >= 0 and at <= steps[index][2]:
        return "in steps"
    if index < 0:
        return "before the first step"
    return "after the last step" if index == len(steps) - 1 else "between steps"


def _sync_sites(
    profile: DeviceProfile,
    trace: ChromeTrace,
    host: _Host,
    syncs: list[int],
    steps: list[tuple[str, float, float]],
    dtoh: Counter[tuple[str | None, str | None]],
) -> None:
    names, name_col, dur_col = trace.names, trace.name, trace.dur
    sites: dict[tuple[str, str | None, str | None, str | None, str | None, str], SyncSite] = {}
    for i in syncs:
        region = host.region.get(i)
        key = (names[name_col[i]], host.op[i], host.inner[i], region[0] if region else None,
               host.user[i], _where(host.ts[i], steps, profile.steps_from))  # fmt: skip
        site = sites.get(key)
        if site is None:
            site = sites[key] = SyncSite(*key)
        site.count += 1
        site.us += dur_col[i]
        profile.syncs += 1
        profile.sync_us += dur_col[i]
    for site in sites.values():
        site.dtoh_copies = dtoh.get((site.op, site.inner), 0)
    profile.sync_sites = sorted(sites.values(), key=lambda s: -s.us)


def _step_rows(
    trace: ChromeTrace,
    steps: list[tuple[str, float, float]],
    device_events: list[int],
    launch_of: dict[int, int],
    syncs: list[int],
) -> list[StepDevice]:
    """Per step, the device work it launched (busy: the union of its events), and the idle
    gaps of each device's timeline charged to the step whose launch ended them: the host
    launched it only after the device had gone idle (``idle_host_us``), and of that, right
    after a synchronize returned (``idle_sync_us``)."""
    ts_col, dur_col, corr_col, thread_col = trace.ts, trace.dur, trace.correlation, trace.thread
    threads = trace.threads
    starts = [start for _, start, _ in steps]
    rows = [StepDevice(name, end - start) for name, start, end in steps]

    def step_of(at: float) -> int:
        index = bisect_right(starts, at) - 1
        return index if index >= 0 and at <= steps[index][2] else -1

    own: list[list[tuple[float, float]]] = [[] for _ in steps]
    by_device: dict[str, list[tuple[float, float, float | None, int]]] = {}
    for i in device_events:
        launch = launch_of.get(corr_col[i])
        launched = ts_col[launch] if launch is not None else None
        index = step_of(launched if launched is not None else ts_col[i])
        if index >= 0:
            own[index].append((ts_col[i], ts_col[i] + dur_col[i]))
            rows[index].kernels += 1
        device = threads[thread_col[i]].partition("/")[0]
        by_device.setdefault(device, []).append(
            (ts_col[i], ts_col[i] + dur_col[i], launched, index)
        )
    sync_ends = sorted(ts_col[i] + dur_col[i] for i in syncs)
    for i in syncs:
        index = step_of(ts_col[i])
        if index >= 0:
            rows[index].sync_us += dur_col[i]
    for row, found in zip(rows, own, strict=True):
        if found:
            row.device_us = max(end for _, end in found) - min(start for start, _ in found)
            row.busy_us = sum(end - start for start, end in _union(found))
    for timeline in by_device.values():
        timeline.sort(key=lambda event: event[0])
        busy_end = timeline[0][1]
        for start, end, launched, index in timeline[1:]:
            if start > busy_end and index >= 0:
                row, gap = rows[index], start - busy_end
                row.idle_us += gap
                if launched is not None and launched >= busy_end:
                    row.idle_host_us += gap
                    if _after_sync(sync_ends, busy_end, start):
                        row.idle_sync_us += gap
            busy_end = max(busy_end, end)
    return rows


def _after_sync(ends: list[float], gap_start: float, gap_end: float) -> bool:
    """Whether a synchronize returned as the device went idle (within 5 us of it, or during
    the gap): the device ran out of work because the host had waited for it, and idled until
    the host launched again. A sync still running when the device idles is not the cause
    (the device is waiting on something else, another stream or rank)."""
    index = bisect_left(ends, gap_start - 5.0)
    return index < len(ends) and ends[index] <= gap_end

"""Findings from the device side of a profiler trace (analysis/time/device.py), each with its
measured cost per step and the fix the practice gives for it.

Thresholds are shares of what the trace measured: a sync that costs under 2% of the trace is
not worth a line, a region is launch-bound from 30% idle between kernels under 50 us.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import PurePath

from pt2doctor.analysis.findings.codes import Severity
from pt2doctor.analysis.findings.model import PROGRAM, Finding, Subject
from pt2doctor.analysis.findings.trace_findings import sort_findings
from pt2doctor.analysis.time.device import DeviceProfile, RegionDevice, SyncSite

SYNC_SHARE = 0.02
"""Host waits under this share of the trace (and of its steps) are not reported."""
SYNC_WARNING = 0.05
LAUNCH_IDLE = 0.3
SMALL_KERNEL_US = 50.0
MANY_KERNELS = 100
COMM_SHARE = 0.05
COMM_WARNING = 0.1
LIBRARY_SHARE = 0.6
_OUTSIDE = "outside compiled regions"
_LIBRARY_KINDS = ("library", "attention")


def _ms(us: float) -> str:
    return f"{us / 1000:.1f} ms" if us >= 100 else f"{us / 1000:.2f} ms"


def _pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:.0f}%" if whole > 0 else "-"


def _where_said(site: SyncSite) -> str:
    ops = " > ".join(dict.fromkeys(op for op in (site.op, site.inner) if op))
    parts = [f"{site.count} × {site.call}"]
    parts.append(f"under {ops}" if ops else "at the top level (no op around it)")
    if site.region:
        parts.append(f"in {site.region}")
    if site.user_line:
        parts.append(f"at {site.user_line}")
    if site.dtoh_copies:
        parts.append(f"after {site.dtoh_copies} device-to-host copies")
    return f"{' '.join(parts)}, {site.where}: {_ms(site.us)}"


def device_findings(profile: DeviceProfile, skipped: dict[str, str] | None = None) -> list[Finding]:
    """Every device finding of one trace; ``skipped``: compile id -> why Inductor skipped CUDA
    graphs for it, from a TORCH_TRACE beside the trace (a run directory's)."""
    if not profile.device_events:
        return []
    return [
        *_dtoh_sync(profile),
        *_launch_bound(profile),
        *_cudagraphs(profile, skipped or {}),
        *_exposed_communication(profile),
        *_library_bound(profile),
        *_tf32_off(profile),
    ]


def traces_findings(traces: list[tuple[DeviceProfile, list[Finding]]]) -> list[Finding]:
    """The findings of a report on profiler traces, in the report's order: for each trace
    (its device side, and its host side's findings as ``run --profile`` makes them), the
    device findings, then the host's that the device side does not say better (on a GPU,
    library kernels' share is the device's time). Each names its trace in its subject (and,
    of several traces, in its title)."""
    found: list[Finding] = []
    for profile, host_findings in traces:
        own = device_findings(profile)
        codes = {finding.code for finding in own}
        own += [f for f in host_findings if f.code not in codes
                and not (profile.device_events and f.code == "library_bound")]  # fmt: skip
        name = PurePath(profile.path).name
        for finding in sort_findings(own):
            subject = Subject(finding.subject.kind, finding.subject.name, stream=name)
            title = f"{name}: {finding.title}" if len(traces) > 1 else finding.title
            found.append(replace(finding, subject=subject, title=title))
    return sort_findings(found)


def _dtoh_sync(profile: DeviceProfile) -> list[Finding]:
    if not profile.syncs:
        return []
    steps = profile.steps
    step_us = sum(step.wall_us for step in steps)
    in_steps = sum(step.sync_us for step in steps)
    outside = [s for s in profile.sync_sites if s.where not in ("in steps", "the whole trace")]
    if profile.sync_us < SYNC_SHARE * profile.span_us and in_steps < SYNC_SHARE * step_us:
        return []
    idle_sync = sum(step.idle_sync_us for step in steps)
    per_step = len(steps) > 1 or profile.steps_from != "the whole trace"
    title = (
        f"The host waited {_ms(profile.sync_us)} in {profile.syncs} synchronize calls "
        f"({_pct(profile.sync_us, profile.span_us)} of the trace)"
    )
    if outside:
        away = sum(s.us for s in outside)
        title += f": {_ms(in_steps)} inside steps, {_ms(away)} outside every step"
    if per_step and steps:
        title += f"; {_ms(in_steps / len(steps))} per step"
    evidence = [_where_said(site) for site in profile.sync_sites[:6]]
    evidence.append(
        f"the device idled {_ms(idle_sync)} ({_ms(idle_sync / max(len(steps), 1))} per "
        "step) from a synchronize's return to the host's next launch: it had run out of "
        "work while the host waited"
    )
    top = next((s for s in profile.sync_sites if s.where in ("in steps", "the whole trace")), None)
    advice = (
        "A synchronize makes the host wait until the device has run everything queued; the "
        "device then idles while the host catches up. The usual causes are `.item()`, "
        "`.cpu()`, `.tolist()`, printing a tensor and a Python `if` on one (each a "
        "device-to-host copy and its sync, under `aten::item` / `aten::_local_scalar_dense` "
        "or `aten::to` / `aten::copy_`). Keep the value on the device (accumulate a loss as a "
        "tensor, read it every N steps), copy to pinned memory with `non_blocking=True` when "
        "the host needs it later, and take branches on tensors out of the step (or "
        "`torch.where`)."
    )
    if outside:
        advice += (
            " A synchronize outside every step (the profiler's stop, or a "
            "`torch.cuda.synchronize()` after the loop) waits for the work the host queued "
            "ahead: a long one says the device, not the host, bounds these steps."
        )
    severity: Severity = "warning" if step_us and in_steps >= SYNC_WARNING * step_us else "info"
    return [
        Finding(
            severity,
            "dtoh_sync",
            title,
            advice,
            evidence,
            Subject("op", top.op or top.call) if top is not None else PROGRAM,
            saves_ms=idle_sync / max(len(steps), 1) / 1000 if idle_sync and steps else None,
            facts={
                "host_wait_ms": round(profile.sync_us / 1000, 3),
                "in_steps_ms": round(in_steps / 1000, 3),
                "syncs": profile.syncs,
            },
        )
    ]


def _compiled(profile: DeviceProfile) -> list[RegionDevice]:
    return [r for r in profile.regions if r.label != _OUTSIDE and r.calls]


def _steps(profile: DeviceProfile) -> int:
    return max(len(profile.steps), 1)


def _launch_bound(profile: DeviceProfile) -> list[Finding]:
    found = []
    for region in _compiled(profile):
        if (
            region.span_us <= 0
            or region.graph_kernels >= region.kernels
            or region.idle_us < LAUNCH_IDLE * region.span_us
            or region.median_kernel_us >= SMALL_KERNEL_US
        ):
            continue
        per_call = region.kernels / region.calls
        found.append(
            Finding(
                "warning",
                "launch_bound",
                f"{region.label}: the device is idle {_pct(region.idle_us, region.span_us)} of "
                f"its span between small kernels (median {region.median_kernel_us:.0f} us), "
                "waiting for the host to launch the next one",
                "Each kernel costs the host a launch (microseconds of Python, the autograd "
                "function and the CUDA driver); when the kernels are shorter than that, the "
                "device waits. CUDA graphs replay the whole region in one launch: "
                '`torch.compile(mode="reduce-overhead")` (static input shapes and no graph '
                "breaks inside). Larger batches make each kernel longer; fewer graph breaks "
                "make fewer regions.",
                [
                    f"{region.calls} calls, {per_call:.0f} kernels per call, "
                    f"{_ms(region.device_us / region.calls)} of kernels per call",
                    f"idle between its kernels: {_ms(region.idle_us / region.calls)} per call, "
                    f"{_ms(region.idle_us / _steps(profile))} per step (what CUDA graphs can "
                    "save at most)",
                ],
                Subject("region", region.label),
            )
        )
    return found


def _cudagraphs(profile: DeviceProfile, skipped: dict[str, str]) -> list[Finding]:
    many = [
        r
        for r in _compiled(profile)
        if not r.graph_launches and r.kernels / r.calls >= MANY_KERNELS
    ]
    if not profile.graph_launches and not many and not skipped:
        return []
    evidence = [
        f"{r.label}: {r.graph_launches} replays, {r.graph_kernels} kernels replayed "
        f"({_ms(r.device_us)} of device time)"
        for r in profile.regions
        if r.graph_launches
    ]
    evidence += [
        f"{r.label}: {r.kernels / r.calls:.0f} kernels per call launched one by one (no CUDA graph)"
        for r in many
    ]
    evidence += [
        f"compile {cid}: CUDA graphs skipped: {why}" for cid, why in sorted(skipped.items())
    ]
    if profile.graph_launches:
        title = (
            f"CUDA graphs replayed {profile.graph_launches} times ({profile.graph_kernels} kernels)"
        )
        advice = (
            "Each replay runs a captured region in one launch. Kernels a region still "
            "launches one by one are outside its graph (a graph break, a dynamic shape, an "
            "op CUDA graphs skip: the TORCH_TRACE names the skip reason)."
        )
    elif skipped and not many:
        title = f"CUDA graphs skipped for {len(skipped)} compile(s): {next(iter(skipped.values()))}"
        advice = (
            'mode="reduce-overhead" asked for CUDA graphs and Inductor did not use them, for '
            "the reason it logged: remove what it names (a CPU op or input, an input mutated "
            "in place, dynamic shapes: pad to a few sizes or mark them static) and the region "
            "is replayed in one launch."
        )
    else:
        title = (
            f"No CUDA graphs: {len(many)} compiled region(s) launch at least "
            f"{MANY_KERNELS} kernels per call one by one"
        )
        advice = (
            '`torch.compile(mode="reduce-overhead")` captures each compiled region as a CUDA '
            "graph and replays it in one launch (static shapes; inputs are copied into its "
            "buffers). Worth it where the host's launches are what the device waits for."
        )
    return [Finding("info", "cudagraphs", title, advice, evidence)]


def _exposed_communication(profile: DeviceProfile) -> list[Finding]:
    exposed = profile.exposed_communication_us
    if not profile.communication_us or exposed < COMM_SHARE * profile.span_us:
        return []
    severity: Severity = "warning" if exposed >= COMM_WARNING * profile.span_us else "info"
    return [
        Finding(
            severity,
            "exposed_communication",
            f"Communication runs with no compute beside it for {_ms(exposed)} "
            f"({_pct(exposed, profile.span_us)} of the trace, "
            f"{_ms(exposed / _steps(profile))} per step)",
            "NCCL kernels that no compute overlaps hold the step up. Overlap them: DDP's "
            "buckets (`bucket_cap_mb`) start all-reduces during backward, FSDP's "
            "`forward_prefetch` / `backward_prefetch` fetch the next shards early, and in "
            "compiled code `torch._inductor.config.reorder_for_compute_comm_overlap = True` "
            "moves collectives next to independent compute. A NCCL kernel also runs while it "
            "waits for the slowest rank: compare the ranks' traces before tuning overlap.",
            [
                f"communication kernels: {_ms(profile.communication_us)}, of which "
                f"{_ms(exposed)} with no compute kernel running",
                f"streams: {profile.streams}, time two or more overlap: {_ms(profile.overlap_us)}",
            ],
            saves_ms=None,
        )
    ]


def _library_bound(profile: DeviceProfile) -> list[Finding]:
    regions = _compiled(profile)
    compiled = sum(r.device_us for r in regions)
    library = sum(r.by_kind.get(kind, 0.0) for r in regions for kind in _LIBRARY_KINDS)
    if not compiled or library <= LIBRARY_SHARE * compiled:
        return []
    top = [k for k in profile.top_kernels if k.kind in _LIBRARY_KINDS][:3]
    return [
        Finding(
            "info",
            "library_bound",
            f"Library kernels take {_pct(library, compiled)} of the compiled regions' device "
            "time: fusion shrinks only the rest",
            "Inductor calls matmuls, convolutions and attention as library kernels (cuBLAS, "
            "cuDNN, flash attention), and its fusion shrinks the code around them, not the "
            "calls; the calls can still change (a layout, max-autotune's templates), so this "
            'share says where the time is, not a ceiling. `mode="max-autotune"` tries Triton '
            "and CUTLASS templates against the library's matmuls; TF32 "
            "(`torch.backends.cuda.matmul.allow_tf32`) or bf16 make fp32 matmuls faster where "
            "the accuracy allows.",
            [f"{k.name}: {k.count} launches, {_ms(k.us)}" for k in top],
        )
    ]


TF32_SHARE = 0.1
TF32_MIN_MS = 1.0


def _tf32_off(profile: DeviceProfile) -> list[Finding]:
    """FP32 matmuls on CUDA cores on a GPU whose tensor cores run TF32: the kernels' names
    say it (``ampere_sgemm_128x128_tn``), not a setting the trace does not record."""
    simt = profile.fp32_simt_us
    per_step = simt / _steps(profile) / 1000
    if (
        profile.compute_major is None
        or profile.compute_major < 8
        or simt < TF32_SHARE * profile.kernel_us
        or per_step < TF32_MIN_MS
    ):
        return []
    also = (
        f" TF32 tensor-core kernels ran too ({_ms(profile.tf32_us)}): cuDNN's convolutions use "
        "TF32 by default, matmuls do not."
        if profile.tf32_us
        else ""
    )
    return [
        Finding(
            "info",
            "tf32_off",
            f"FP32 matmuls ran on CUDA cores for {_ms(simt)} ({_pct(simt, profile.kernel_us)} "
            f"of the kernel time, {per_step:.1f} ms per step): TF32 is off for matmuls on a GPU "
            "whose tensor cores run it",
            "PyTorch leaves TF32 off for matmuls by default; "
            '`torch.set_float32_matmul_precision("high")` (or '
            "`torch.backends.cuda.matmul.allow_tf32 = True`) lets cuBLAS and Inductor's "
            "templates use the tensor cores, several times faster for large fp32 GEMMs, with a "
            "10-bit mantissa on the inputs: check the model's numbers with `pt2doctor check` "
            f"before keeping it.{also}",
            [f"{k.name}: {k.count} launches, {_ms(k.us)}" for k in profile.fp32_simt_kernels[:3]],
        )
    ]

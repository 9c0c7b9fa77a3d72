"""The profiled window of a run, analysed before the report is assembled: where its time
went (:func:`~pt2doctor.analysis.time.profile.profile_view`), the notes a reader needs, and
the findings it supports (analysis/time/findings.py). report/profile_schema.py only writes
``report["profile"]`` from the result."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pt2doctor.analysis.breaks.sites import GraphBreakSite, user_caller
from pt2doctor.analysis.findings.model import Finding
from pt2doctor.analysis.findings.trace_findings import frame_where, resume_label
from pt2doctor.analysis.recompiles.frame_names import compiled_at_label, display_name, frame_name
from pt2doctor.analysis.recompiles.ledger import Ledger
from pt2doctor.analysis.text import counted
from pt2doctor.analysis.time.device import DEVICE_CATEGORIES, DeviceProfile, device_profile
from pt2doctor.analysis.time.device_findings import device_findings
from pt2doctor.analysis.time.findings import (
    EAGER_SHARE,
    BreakContext,
    eager_op_us,
    eager_share,
    profile_findings,
)
from pt2doctor.analysis.time.lines import (
    MIN_SAMPLES,
    EagerLine,
    SkippedFrame,
    eager_lines,
    skipped_frame_shares,
)
from pt2doctor.analysis.time.owners import EagerOwner, eager_owners
from pt2doctor.analysis.time.profile import (
    ProfileView,
    kept_ranges,
    period_marks,
    profile_view,
    profiler_steps,
    trace_window,
)
from pt2doctor.trace.chrome import ChromeTrace
from pt2doctor.trace.spread import CallsNoise, calls_noise
from pt2doctor.trace.types import ProfileCapture, SourceLine

LARGE_TRACE_BYTES = 20_000_000
"""A window's trace above this gets a note (about 2.4 KB per kernel launch per call)."""
NOT_COMPARABLE = (
    "a profiled run compiles with provenance and kernel profiling on, which are part of "
    "Inductor's cache key: its cold start is comparable with another profiled run's (the "
    "compile caches stay on), not with an unprofiled run's"
)
CACHED_KERNELS = (
    "{graphs} came from the FX graph cache: their kernels' lines are those of the compile "
    "that filled it (the key holds the graph, not its line numbers); `pt2doctor run "
    "--kernels` compiles afresh"
)


@dataclass(frozen=True, slots=True)
class ProfileResult:
    """The window's analysis; ``view`` is None when the trace gave none (``error`` says why)."""

    trace_file: str | None
    window: dict[str, Any]
    view: ProfileView | None = None
    error: str | None = None
    names: dict[str, str] = field(default_factory=dict)
    """Compile id -> the name of its frame, as the user knows it."""
    notes: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    device: DeviceProfile | None = None
    """The window's device side, when the trace has device events (a GPU run)."""
    eager_lines: list[tuple[EagerLine, float]] = field(default_factory=list)
    """The user's lines that ran the window's eager ATen ops, each with its time (us in the
    window: its share of the eager op time), the most first (analysis/time/lines.py)."""
    skipped_frames: list[tuple[SkippedFrame, float]] = field(default_factory=list)
    """The frames Dynamo skipped whose own lines ran a sampled share of the eager ops, each
    with its time (us in the window), the most first."""

    def break_cost_ms(self, site: GraphBreakSite) -> float | None:
        """A break site's measured time per call of the hot loop (None: not in the window)."""
        if self.view is None:
            return None
        costs = [
            round(self.view.per_call(item.us), 6)
            for item in self.view.outside
            if item.compile_id in site.compile_ids
        ]
        return round(sum(costs), 6) if costs else None


def _unavailable_why(window: dict[str, Any]) -> str:
    why = "the window holds no complete call of the hot graph"
    if window.get("closed_by") == "exit":
        why += (
            f": the program ended right after warmup (--warmup-calls "
            f"{window.get('warmup_calls')}); run more steps, or lower --warmup-calls"
        )
    return why


def _breaks(sites: list[GraphBreakSite]) -> tuple[dict[str, SourceLine], dict[str, BreakContext]]:
    """A break in library code is shown at the user's line that led there (the LR scheduler's
    wrapper of optimizer.step: at the user's opt.step()), and one by design says so."""
    break_sites: dict[str, SourceLine] = {}
    context: dict[str, BreakContext] = {}
    for site in sites:
        caller = user_caller(site)
        for cid in site.compile_ids:
            break_sites[cid] = caller or site.site
            context[cid] = BreakContext(site.by_design, None if caller is None else site.site)
    return break_sites, context


def _notes(view: ProfileView, window: dict[str, Any], device: str, cached: int) -> list[str]:
    notes = [*view.notes, NOT_COMPARABLE]
    if cached:
        notes.append(CACHED_KERNELS.format(graphs=counted(cached, "graph")))
    compiles = window.get("compiles_in_window") or 0
    placed = window.get("compile_periods")
    periods = len(window.get("periods_ms") or [])
    if compiles and placed is None:  # before 2026-12-07: where they ran is not known
        notes.insert(0, f"{counted(compiles, 'compile')} ran inside the window: their time is "
                        "counted outside the regions")  # fmt: skip
    elif tail := sum(1 for period in placed or () if int(period) >= periods):
        notes.insert(0, f"{counted(tail, 'compile')} ran after the hot graph's last call in "
                        "the window: not in the times")  # fmt: skip
    size = window.get("trace_bytes")
    if isinstance(size, int) and size > LARGE_TRACE_BYTES:
        notes.append(f"the Chrome trace is {size / 1e6:.0f} MB: Perfetto opens it slowly; "
                     "--profile-calls fewer keeps it smaller")  # fmt: skip
    if device == "cuda":
        notes.append("on CUDA the split is of host-side time (launches); device kernel time is "
                     "in the Chrome trace")  # fmt: skip
    return notes


STACKS_HINT = (
    "`run --profile --profile-stacks` names the lines of your code that ran them (it samples "
    "the stack in the window, which slows its calls)"
)


def profile_analysis(
    capture: ProfileCapture,
    ledger: Ledger,
    sites: list[GraphBreakSite],
    trials: Sequence[Mapping[str, Any]] = (),
    compile_calls: Sequence[Mapping[str, Any] | None] = (),
    plain_ms: float | None = None,
    call_sites: Mapping[str, SourceLine] | None = None,
) -> ProfileResult:
    """The run's profiled window: where its time went, and its findings (``trials``: the
    run's optimizer trials, which measure an eager optimizer's fix; ``compile_calls``: each
    ledger frame's ``torch.compile`` call, in order, which names a frame whose code is
    torch's or a library's by the user's call; ``plain_ms``: the one compiled callable's
    median call without the profiler, from its paired calls, which tells the profiler's own
    cost; ``call_sites``: compile id -> the user's line that called the frame, where the probes
    or the trace saw it, over the ledger's)."""
    window = capture.window
    if not isinstance(capture.trace, ChromeTrace):
        return ProfileResult(capture.path, window, error=capture.error or "no trace")
    calls = window.get("calls")
    if not isinstance(calls, int) or calls <= 0:
        return ProfileResult(capture.path, window, error=_unavailable_why(window))
    calls_of = dict(zip(map(id, ledger.frames), compile_calls, strict=False))
    names = {
        entry.compile_id: resume_label(frame.function)
        or compiled_at_label(frame_name(frame).name, frame.file, calls_of.get(id(frame)))
        or display_name(frame)
        for frame in ledger.frames
        for entry in frame.compiles
    }
    builts = {entry.compile_id: entry.record.built for entry in ledger.compiles}
    break_sites, context = _breaks(sites)
    graphless = {
        e.compile_id
        for e in ledger.compiles
        if e.record.built is None or e.record.built.graph is None or not e.record.built.graph.lines
    }
    kernel_events = True if window.get("kernel_profile", True) else None
    quiet = _quiet_periods(capture.trace, window)
    view = profile_view(capture.trace, quiet.calls or calls, window.get("hot_compile_id"),
                        builts, break_sites, graphless, kernel_events, quiet.ranges)  # fmt: skip
    device = "cuda" if "kernel" in capture.trace.categories else "cpu"
    owners = _owners(capture.trace, view)
    lines, sampled = eager_lines(capture.trace, window, view)
    skipped = skipped_frame_shares(lines, [
        SkippedFrame(frame_where(frame), frame.file or "", frame.function or "", frame.line or 0)
        for frame in ledger.frames if frame.skipped
    ])  # fmt: skip
    called = {e.compile_id: e.record.call_site for e in ledger.compiles
              if e.record.call_site is not None}  # fmt: skip
    called.update(call_sites or {})
    found = profile_findings(view, names, skipped, device, context, owners, trials, lines,
                             plain_ms, called)  # fmt: skip
    findings = _noise_findings(found, quiet, window, eager_share(view, owners))
    cached = sum(1 for e in ledger.compiles if e.record.cache.get("fx_graph") == "hit")
    notes = [*quiet.notes, *_notes(view, window, device, cached)]
    if (window.get("samples") or {}).get("at_ns") and view.eager_spans and not lines:
        notes.append(f"{counted(sampled, 'stack sample')} fell inside the window's eager ops: "
                     f"too few (under {MIN_SAMPLES}) to name the lines that ran them; a loaded "
                     "machine starves the sampler, a longer window keeps more")  # fmt: skip
    no_graphs = {e.compile_id: e.record.cudagraph_skip_reason for e in ledger.compiles
                 if e.record.cudagraph_skip_reason}  # fmt: skip
    gpu = _device_side(capture.trace, capture.path, findings, no_graphs)
    if window.get("samples") is None:  # not sampled: say how to get the lines
        for finding in findings:
            if finding.code in ("eager_only_time", "eager_outside_compiled"):
                finding.evidence.append(STACKS_HINT)
    eager = eager_op_us(view, owners)
    return ProfileResult(capture.path, window, view, None, names, notes, findings, gpu,
                         [(line, line.share * eager) for line in lines],
                         [(frame, frame.share * eager) for frame in skipped if frame.share])  # fmt: skip


def _device_side(
    trace: ChromeTrace, path: str | None, findings: list[Finding], skipped: dict[str, str]
) -> DeviceProfile | None:
    """The device side of a GPU run's window (analysis/time/device.py), its findings added
    to ``findings`` (the device's library_bound replaces the host's: on a GPU the library
    kernels' share is device time)."""
    if not any(c in DEVICE_CATEGORIES for c in trace.categories):
        return None
    gpu = device_profile(trace, path or "profile/trace.json")
    found = device_findings(gpu, skipped)
    if any(f.code == "library_bound" for f in found):
        findings[:] = [f for f in findings if f.code != "library_bound"]
    findings += found
    return gpu


def trace_analysis(trace: ChromeTrace, path: str) -> ProfileResult:
    """The host side of a trace the user recorded (no run, no TORCH_TRACE): the window is its
    ``ProfilerStep#N`` events (else pt2doctor's marks, else the whole trace), a step is a
    call, and compiled regions are named by their compile ids. The same split and findings
    as ``run --profile``, less what only the TORCH_TRACE gives (frame names, break sites,
    kernel lines)."""
    steps = profiler_steps(trace)
    calls = max(len(steps), 1)
    window: dict[str, Any] = {"calls": calls, "from": "ProfilerStep#N" if steps else "trace"}
    quiet = _quiet(steps, [(b - a) / 1000 for a, b in steps], (), "step")
    window["noise"] = quiet.noise.as_json() if quiet.noise is not None else None
    view = profile_view(trace, quiet.calls or calls, None, {}, {}, ranges=quiet.ranges)
    if not view.regions:
        return ProfileResult(path, window, error="no compiled region in the trace")
    device = "cuda" if "kernel" in trace.categories else "cpu"
    owners = _owners(trace, view)
    names: dict[str, str] = {}  # only the TORCH_TRACE names a compile id's frame
    findings = _noise_findings(profile_findings(view, names, [], device, {}, owners), quiet,
                               eager=eager_share(view, owners))  # fmt: skip
    notes = [*quiet.notes,
             *(n for n in _notes(view, window, device, 0) if n != NOT_COMPARABLE)]  # fmt: skip
    return ProfileResult(path, window, view, None, names, notes, findings)


@dataclass(frozen=True, slots=True)
class _Quiet:
    """The window's periods that count: all, or all but the preempted ones."""

    noise: CallsNoise | None = None
    ranges: list[tuple[float, float]] = field(default_factory=list)
    """The parts of the window to count; empty: all of it."""
    calls: int = 0
    """The periods they hold; 0: the window's own count."""
    notes: list[str] = field(default_factory=list)


def _quiet_periods(trace: ChromeTrace, window: Mapping[str, Any]) -> _Quiet:
    """``run --profile``'s window, its periods read from window.json (wall and CPU time, the
    child's clocks) and bounded in the trace by the period marks."""
    walls = [float(v) for v in window.get("periods_ms") or []]
    if not walls:
        return _Quiet()  # a window written before periods were kept
    start, end = trace_window(trace)
    marks = period_marks(trace, start, end)
    bounds = list(zip([start, *marks], marks, strict=False))
    if len(bounds) != len(walls):
        return _Quiet(notes=[f"the trace has {len(bounds)} call marks for {len(walls)} timed "
                             "calls: no call is left out"])  # fmt: skip
    cpus = [float(v) for v in window.get("periods_cpu_ms") or []]
    compiled = {int(v) for v in window.get("compile_periods") or []}
    unplaced = "compile_periods" not in window and bool(window.get("compiles_in_window"))
    whole = window.get("closed_by") in ("exit", "seconds")  # a tail after the last call
    quiet = _quiet(bounds, walls, cpus, "call", compiled, unplaced, whole)
    for other in window.get("other_windows") or []:
        why = other.get("not_kept")
        preempted = len(other.get("preempted") or [])
        if why == "noisier":
            quiet.notes.append(
                f"a first window of {other.get('calls')} calls was too noisy ({preempted} "
                "preempted): measured again over the program's next calls, and this quieter "
                "one is kept"
            )
        else:
            quiet.notes.append(
                f"measured again over the program's next calls ({preempted} of "
                f"{other.get('calls')} preempted): not kept, {why}"
            )
    return quiet


def _quiet(
    bounds: Sequence[tuple[float, float]],
    walls: Sequence[float],
    cpus: Sequence[float],
    what: str,
    compiled: set[int] | frozenset[int] = frozenset(),
    unplaced: bool = False,
    whole: bool = False,
) -> _Quiet:
    """Leave out the preempted ``what``\\s (calls of the hot loop, or ``ProfilerStep``\\s) of
    ``bounds``, each timed ``walls`` (ms) and ``cpus`` (the thread's CPU time, ms, if known),
    and those that held a compile (``compiled``: not steady state, and a compile's tracing
    runs ATen ops that would read as the program's eager ops), and say which, and why: the
    program's own work (its CPU time grew as much as its wall time), the machine, or
    (``unplaced``: the window held compiles whose periods were not recorded, before
    2026-12-07) either. ``whole``: count only the whole periods even when none is left out
    (a window closed at exit or on time has a tail after its last call)."""
    noise = calls_noise(walls, cpus)
    compiled = {i for i in compiled if i < len(walls)}
    if noise is None or (not noise.preempted and not compiled):
        if whole and bounds:
            return _Quiet(noise, kept_ranges(bounds, ()), len(bounds))
        return _Quiet(noise)
    left_out = set(noise.preempted) | compiled
    ranges = kept_ranges(bounds, left_out)
    kept = noise.calls - len(left_out)
    if not ranges or kept <= 0:
        return _Quiet(noise, notes=[f"every {what} was preempted or compiled: none is left out"])
    notes = []
    offs = noise.off_cpu_ms or (None,) * len(noise.preempted)  # no CPU times: none
    why: dict[str, list[str]] = {}
    slow = [(i, ms, off) for i, ms, off in zip(noise.preempted, noise.slowest, offs, strict=True)
            if i not in compiled]  # fmt: skip
    for i, ms, off in slow:
        shown = f"{i + 1} ({ms:.3g} ms" + (
            f", {off:.3g} ms off the CPU)" if off is not None else ")"
        )
        if unplaced:
            cause = "a compile inside the window, or the machine running something else"
        elif off is not None and off < 0.5 * (ms - noise.median_ms):
            cause = "the program itself was busy (its CPU time grew with it)"
        else:
            cause = "the machine ran something else meanwhile"
        why.setdefault(cause, []).append(shown)
    if slow:
        causes = "; ".join(f"{cause}: {what} {', '.join(items)}" for cause, items in why.items())
        notes.append(
            f"{counted(len(slow), what)} of {noise.calls} took far longer than the median "
            f"{what} ({noise.median_ms:.3g} ms), left out. Why: {causes}"
        )
    if compiled:
        shown = ", ".join(str(i + 1) for i in sorted(compiled))
        notes.append(
            f"{counted(len(compiled), what)} of {noise.calls} held a compile ({what} {shown}): "
            "left out, as not steady state (a compile's tracing also runs ATen ops that would "
            "read as the program's eager ops)"
        )
    notes.append(f"the times are over the other {counted(kept, what)}")
    return _Quiet(noise, ranges, kept, notes)


WITHHELD = ("overhead_bound", "library_bound")
"""Verdicts that rest on shares of the window's time, which a noisy window can flip."""

EAGER_VERDICTS = ("eager_only_time", "eager_outside_compiled")
"""Verdicts on the eager share of the time in torch ops (``EAGER_SHARE``): withheld too from a
noisy window where that share is under :data:`CLEAR_EAGER_SHARE`, close enough to the line
for a loaded machine to have carried it across (a share of op time against op time moves less
than a share of the wall time: both sides slow down together)."""

CLEAR_EAGER_SHARE = 2 * EAGER_SHARE


def _noise_findings(
    findings: list[Finding],
    quiet: _Quiet,
    window: Mapping[str, Any] | None = None,
    eager: float = 0.0,
) -> list[Finding]:
    """A window too noisy even with its preempted calls left out gives no verdict that rests
    on shares of its time: it says it cannot tell instead (``noisy_profile``). ``eager``: the
    eager share of the time in torch ops (:func:`eager_share`), whose verdicts are withheld
    only when it is close to their line."""
    noise = quiet.noise
    if noise is None or not noise.noisy:
        return findings
    codes = WITHHELD + (EAGER_VERDICTS if eager < CLEAR_EAGER_SHARE else ())
    withheld = [f for f in findings if f.code in codes]
    others = (window or {}).get("other_windows") or []
    if others:
        again = "It was measured twice, over the program's next calls too, and both were noisy"
    elif window is not None:
        again = "The program ended before it could be measured again"
    else:
        again = "The trace is the one the program recorded"
    spread = 100 * noise.mad_ms / noise.median_ms if noise.median_ms else 0.0
    title = (
        f"The profile window was too noisy to tell what bounds the loop: "
        f"{len(noise.preempted)} of {noise.calls} calls preempted, the others spread "
        f"{spread:.0f}% around their median"
    )
    said = ", ".join(f.code for f in withheld)
    advice = (
        f"{again}. A verdict on what bounds the loop (overhead, library kernels, eager ops) "
        "rests on shares of its time, and a loaded machine moves them: "
        + (f"{said} {'is' if len(withheld) == 1 else 'are'} withheld. " if withheld else "")
        + "Run `--profile` again on a quiet machine (or with fewer other processes), or with "
        "more calls (`--profile-calls`)."
    )
    evidence = [
        f"median call {noise.median_ms:.3g} ms, median absolute deviation "
        f"{noise.mad_ms:.3g} ms over the {noise.calls - len(noise.preempted)} calls kept",
        *(f"withheld: {f.title}" for f in withheld),
    ]
    kept = [f for f in findings if f.code not in codes]
    return [*kept, Finding("info", "noisy_profile", title, advice, evidence)]


def _owners(trace: ChromeTrace, view: ProfileView) -> list[EagerOwner]:
    """The labelled eager time of the parts of the window counted."""
    merged: dict[str, EagerOwner] = {}
    for begin, stop in view.ranges or [view.window]:
        for owner in eager_owners(trace, begin, stop):
            had = merged.get(owner.label)
            merged[owner.label] = owner if had is None else EagerOwner(
                owner.label, had.us + owner.us, had.calls + owner.calls,
                had.aten_us + owner.aten_us,
            )  # fmt: skip
    return sorted(merged.values(), key=lambda owner: -owner.us)

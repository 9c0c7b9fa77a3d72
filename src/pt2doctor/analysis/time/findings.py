"""What the profile says to do: findings from the time split of ``profile_view``.

Each finding states its measured share of the step and, where it can, what a fix saves
(``Finding.saves_ms``, per call of the hot loop), which orders the findings of one severity.
Thresholds are shares of the window's wall time: a part under MIN_SHARE is not worth a line.
"""

from __future__ import annotations

import linecache
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from pt2doctor.analysis.built.kernels import first_line_where
from pt2doctor.analysis.findings.codes import Severity
from pt2doctor.analysis.findings.model import PROGRAM, Finding, Subject
from pt2doctor.analysis.findings.verdicts import RANDOM_CODE
from pt2doctor.analysis.paths import library_path
from pt2doctor.analysis.recompiles.fix_model import Fix, FixApplication
from pt2doctor.analysis.source_lines import assigned_before, called_on, top_level_function
from pt2doctor.analysis.text import counted
from pt2doctor.analysis.time.lines import EagerLine, SkippedFrame, owning_frame
from pt2doctor.analysis.time.owners import EagerOwner
from pt2doctor.analysis.time.profile import MIN_SHARE, OutsideTime, ProfileView, RegionTime
from pt2doctor.trace.types import SourceLine

OVERHEAD_SHARE = 0.5
"""A region is overhead-bound when more than this share of its time is outside kernels."""
LIBRARY_SHARE = 0.6
"""Compiled time is library-bound when library kernels take more than this share of it."""
FREEZING = "torch._inductor.config.freezing"
FREEZING_FIX = FixApplication(f"{FREEZING} = True", config=((FREEZING, True),), timed=True)
"""Freezing, as ``run --try-fixes`` applies it: a fix of time, judged on the profiled re-run."""
NO_GRAD_FIX = FixApplication(
    "torch.no_grad() around each call of the compiled code", no_grad=True, timed=True
)
"""``autograd_in_inference``'s fix as ``run --try-fixes`` applies it, judged by the loop's time."""
WORKERS_FIX = FixApplication(
    "num_workers=2 in each DataLoader made without workers", loader_workers=2, timed=True
)
"""``data_loading``'s fix as ``run --try-fixes`` applies it, judged by the loop's time."""
MAX_LINES = 3
"""The user's lines an eager-time finding names at most."""
EAGER_SHARE = 0.25
"""Eager ATen ops outside every region above this share of the time spent in torch (the
regions and the eager ops): the model runs eagerly."""


def _ms(value_us: float, view: ProfileView) -> str:
    ms = view.per_call(value_us)
    return f"{ms:.3f} ms" if ms < 1 else f"{ms:.1f} ms"


def _pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:.0f}%" if whole > 0 else "?"


def _region_name(region: RegionTime, names: Mapping[str, str]) -> str:
    name = names.get(region.compile_id)
    label = f"{region.compile_id} {name}" if name else region.compile_id
    return f"{label} backward" if region.part == "backward" else label


class BreakContext(NamedTuple):
    """What the graph-break analysis knows of the break ending a region."""

    by_design: bool
    """A library break that is meant to be there (the LR scheduler's wrapper of step)."""
    library_site: SourceLine | None
    """Where the break is when it is in library code (the profile shows the user's line)."""


def profile_findings(
    view: ProfileView,
    names: Mapping[str, str],
    skipped_frames: Sequence[SkippedFrame],
    device: str,
    breaks: Mapping[str, BreakContext] | None = None,
    owners: Sequence[EagerOwner] = (),
    trials: Sequence[Mapping[str, Any]] = (),
    lines: Sequence[EagerLine] = (),
    plain_ms: float | None = None,
    call_sites: Mapping[str, SourceLine] | None = None,
) -> list[Finding]:
    """``names``: compile id -> the frame's name; ``skipped_frames``: frames Dynamo ran
    eagerly, with the share of the eager op samples their own lines hold; ``device``: ``cuda``
    or ``cpu`` (the fixes differ); ``breaks``: compile id -> its break's context; ``trials``:
    the run's optimizer trials (``optimizer_trial`` events: an eager optimizer's step timed
    against its fused variant); ``lines``: the user's lines that ran the eager ops
    (analysis/time/lines.py); ``plain_ms``: the one compiled
    callable's median call without the profiler (its paired calls), which tells the
    profiler's own cost."""
    if view.wall_us <= 0 or view.calls <= 0:
        return []
    return [
        *_autograd_in_inference(view, names),
        *_overhead_bound(view, names, device, plain_ms, call_sites or {}, skipped_frames),
        *_library_bound(view, device),
        *_fallback_ops(view),
        *_graph_break_cost(view, breaks or {}, plain_ms),
        *_eager_only(view, skipped_frames, owners, lines, call_sites),
        *_eager_optimizer(view, owners, device, trials),
        *_data_loading(view, owners),
    ]


def _autograd_in_inference(view: ProfileView, names: Mapping[str, str]) -> list[Finding]:
    if view.forward_autograd_calls == 0 or view.backward_calls > 0:
        return []
    calls = view.forward_autograd_calls
    regions = [r for r in view.regions if r.part == "forward" and r.graph_calls][:3]
    which = ", ".join(_region_name(r, names) for r in regions)
    return [
        Finding(
            "warning",
            "autograd_in_inference",
            f"The compiled graphs{f' ({which})' if which else ''} ran {calls} times through "
            "the autograd function (CompiledFunction) and no backward ran: the loop runs "
            "inference with grad enabled",
            "Run the loop that calls them under `with torch.inference_mode():` (or "
            "`torch.no_grad()`), or decorate the function that runs it with "
            "`@torch.inference_mode()`. Then "
            "Inductor compiles an inference graph: no autograd wrapper per call, and no "
            "buffers saved for a backward that never runs. The kernels themselves get "
            "faster too (they write fewer outputs); `--profile` again shows the gain.",
            [
                f"{calls} forward calls, 0 backward calls in the window",
                f"the autograd function's own time: {_ms(view.autograd_us, view)} per call "
                "(saved at least; the kernels' saved buffers come on top)",
                f"compiled regions: {_ms(view.compiled_us, view)} of "
                f"{_ms(view.wall_us, view)} per call",
            ],
            # The wrapper's time is a floor, not the saving: the inference graph's kernels
            # save more (a BERT encoder: 0.21 ms of wrapper, 4.1 ms saved, outside review).
            saves_unmeasured=f"at least the autograd function's {_ms(view.autograd_us, view)} "
            "per call; the inference graph's kernels save more, which a try of no_grad "
            "(`run --try-fixes`) measures",
            fixes=[Fix(NO_GRAD_FIX.label, NO_GRAD_FIX)],
        )
    ]


def _profiler_cost_us(view: ProfileView, plain_ms: float | None) -> float:
    """The profiler's own cost in the window's one compiled region, per call, in us: its time
    per call profiled less the same call's median without the profiler (the paired calls,
    ``plain_ms``). 0.0 where it cannot be told: no plain time, or more than one region (a
    compiled call that breaks is several regions and eager code between them)."""
    regions = [region for region in view.regions if region.graph_calls]
    if plain_ms is None or len(regions) != 1 or not regions[0].calls:
        return 0.0
    return max(0.0, regions[0].us / regions[0].calls - 1000.0 * plain_ms)


def _overhead_bound(
    view: ProfileView,
    names: Mapping[str, str],
    device: str,
    plain_ms: float | None = None,
    call_sites: Mapping[str, SourceLine] | None = None,
    skipped_frames: Sequence[SkippedFrame] = (),
) -> list[Finding]:
    """``overhead_bound``: compiled regions that spend most of their time outside any kernel.
    The profiler lengthens every op it records, and that lands in the overhead; where the
    same call's time without the profiler is known (``plain_ms``, the paired calls of the one
    compiled callable), that cost is taken out before judging, and said."""
    cost = _profiler_cost_us(view, plain_ms)

    def overhead(region: RegionTime) -> float:
        return max(0.0, region.overhead_us - cost * region.calls)

    bound = [
        region
        for region in view.regions
        if region.graph_calls
        and region.us >= MIN_SHARE * view.wall_us
        and overhead(region) > OVERHEAD_SHARE * (region.us - cost * region.calls)
    ]
    if not bound:
        return []
    breaks = [f"{o.site.file}:{o.site.line}" for o in view.outside if o.site is not None]
    fix = (
        'Compile with `mode="reduce-overhead"` (CUDA graphs replay the kernels without '
        "Python and launch cost)."
        if device == "cuda"
        else "On CPU: give each call more work (batch requests: the overhead is paid per "
        "call, not per sample)."
    )
    sites = call_sites or {}
    # Where the program calls the compiled code: not a break's line, which "calls" the frame
    # Dynamo resumes after it.
    split = {(o.site.file, o.site.line) for o in view.outside if o.site is not None}
    site = next((sites[r.compile_id] for r in bound if r.compile_id in sites
                 and (sites[r.compile_id].file, sites[r.compile_id].line) not in split), None)  # fmt: skip
    owner = (None if site is None
             else owning_frame(site.file, site.function, site.line or 0, skipped_frames))  # fmt: skip
    inside = None if owner is None else skipped_frames[owner]
    if site is not None and site.file and library_path(site.file) is None:
        said = f" (`{site.statement}`)" if site.statement else ""
        if inside is not None:  # a loop over layers Dynamo runs eagerly: not requests
            fix = (f"The calls come from {Path(site.file).name}:{site.line}{said}, in "
                   f"{inside.where}, a frame Dynamo skipped and runs eagerly: each of its calls "
                   "into a compiled region pays the overhead again, where compiled whole it "
                   "would be one region.")  # fmt: skip
        else:
            fix += (f" The calls come from {Path(site.file).name}:{site.line}{said}: give that "
                    "call a batch of what it is now called with one at a time.")  # fmt: skip
    if breaks:  # only a break splits a region this loop could have as one
        fix += (f" The graph break{'s' if len(breaks) > 1 else ''} at {', '.join(breaks[:3])} "
                "split the step into more regions, each paying it again: removing "
                f"{'them' if len(breaks) > 1 else 'it'} merges them.")  # fmt: skip
    spent = sum(overhead(region) for region in bound)
    total = sum(region.us - cost * region.calls for region in bound)
    what = _region_name(bound[0], names) if len(bound) == 1 else f"{len(bound)} compiled regions"
    return [
        Finding(
            "warning",
            "overhead_bound",
            f"{what} {'is' if len(bound) == 1 else 'are'} overhead-bound: "
            f"{_pct(spent, total)} of {'its' if len(bound) == 1 else 'their'} time is "
            "outside any kernel",
            f"Each call spends more time getting to its kernels (guards, wrappers, the "
            f"autograd function, Python) than in them, so faster kernels cannot help. {fix}",
            [
                f"{_region_name(region, names)}: {region.calls} calls, "
                f"{_ms(region.us, view)} per loop call; kernels "
                f"{_ms(region.kernels_us + region.library_us + region.fallback_us, view)}, "
                f"overhead {_ms(region.overhead_us, view)}"
                + (f" (guards {_ms(region.guards_us, view)})" if region.guards_us else "")
                for region in bound
            ]
            + (
                [
                    f"without the profiler the call takes {plain_ms:.3f} ms (its paired calls): "
                    f"the profiler's own cost, {cost / 1000:.3f} ms per call, is left out of the "
                    "overhead before judging"
                ]
                if cost and plain_ms is not None
                else []
            ),
            saves_unmeasured=(
                'a try of mode="reduce-overhead" (`run --try-fixes`) measures it'
                if device == "cuda"
                else "its fixes change how the program calls the model (larger batches, "
                "fewer regions): pt2doctor cannot apply them for you; the overhead is the "
                "most they save"
            ),
        )
    ]


def _library_bound(view: ProfileView, device: str) -> list[Finding]:
    compiled = view.compiled_us
    library = sum(region.library_us for region in view.regions)
    if compiled < MIN_SHARE * view.wall_us or library <= LIBRARY_SHARE * compiled:
        return []
    top = [k for k in view.kernels if k.kind == "library"][:6]
    # Freezing applies to an inference graph only: grad disabled, so no autograd function.
    inference = view.forward_autograd_calls == 0 and view.backward_calls == 0
    convolutions = any("conv" in k.name for k in view.kernels if k.kind == "library")
    if device == "cuda":
        fix = ('On GPU, `mode="max-autotune"` tries Triton and CUTLASS templates against the '
               "library's matmuls and convolutions.")  # fmt: skip
    elif view.backward_calls > 0:  # training: the weights change every step
        fix = ("This loop trains (a backward runs), so freezing, which bakes the weights in "
               "as constants, does not apply; fewer or smaller matmuls move this part.")  # fmt: skip
    else:
        fix = (
            f"On CPU, `{FREEZING} = True` pre-packs weights for oneDNN"
            + (" and can make convolutions faster" if convolutions else "")
            + "; it applies to inference graphs only ("
            + ("these are: the loop runs without grad" if inference
               else "these record autograd: run the loop under `torch.no_grad()` first")
            + "), and bakes the weights in as constants (a later change to them is not "
            "seen). It changed nothing on an MLP measured here (docs/PERFORMANCE.md): measure "
            "it before keeping it (`run --profile --try-fixes` does). Fewer or smaller "
            "matmuls also move this part."
        )  # fmt: skip
    tryable = device != "cuda" and inference
    return [
        Finding(
            "info",
            "library_bound",
            f"Library kernels take {_pct(library, compiled)} of the compiled time: fusion "
            "shrinks only the rest",
            "Inductor calls matmuls and convolutions as library kernels (oneDNN, MKL, cuBLAS), "
            "and its fusion shrinks the code around them, not the calls. The calls themselves "
            "can still get faster than in eager (a weight layout or pre-packing Inductor "
            "picks), so this share says where the time is, not how much faster compiling can "
            f"make it. {fix}",
            _same_lines_merged(top, view)[:3],
            fixes=[Fix(FREEZING_FIX.label, FREEZING_FIX)] if tryable else [],
        )
    ]


def _same_lines_merged(kernels: Sequence[Any], view: ProfileView) -> list[str]:
    """``name (file:line: code): X ms per call`` per kernel, the kernels of one name and line
    (a layer's matmul in each of its repeated blocks) on one line with their count."""
    merged: dict[str, list[float]] = {}
    for kernel in kernels:
        merged.setdefault(f"{kernel.name} ({first_line_where(kernel.user_lines)})", []).append(
            kernel.us
        )
    return [f"{'' if len(us) == 1 else f'{len(us)} x '}{where}: {_ms(sum(us), view)} per call"
            for where, us in merged.items()]  # fmt: skip


def _fallback_ops(view: ProfileView) -> list[Finding]:
    found = []
    for kernel in view.kernels:
        if kernel.kind != "fallback" or kernel.us < MIN_SHARE * view.wall_us:
            continue
        op = kernel.name.removeprefix("torch.ops.")
        first = kernel.user_lines[0].file if kernel.user_lines else None
        library = library_path(first) if first else None
        where = (
            f" It is in the {library.split('/', 1)[0]} package's code ({library}), not "
            "yours: look for an option of that library that avoids the op (its own docs), and "
            "do not edit its source."
            if library
            else ""
        )
        found.append(
            Finding(
                "warning",
                "fallback_op",
                f"{op} runs as its ATen kernel inside compiled {kernel.compile_id} and takes "
                f"{_pct(kernel.us, view.wall_us)} of the step",
                "Inductor has no lowering for it here: it costs what it costs in eager, and "
                "the ops before and after it cannot fuse across it. Write it with ops Inductor "
                f"lowers, or move it out of the hot path.{where}",
                [
                    f"{first_line_where(kernel.user_lines)}: {_ms(kernel.us, view)} per call ({kernel.launches} launches)"
                ],
                Subject("op", op, compile_id=kernel.compile_id),
                saves_unmeasured=f"a rewrite of the op is {'not ' if library else ''}yours "
                f"to write: its {_ms(kernel.us, view)} per call is the most it saves",
            )
        )
    return found


def _unprofiled_scale(view: ProfileView, plain_ms: float | None) -> tuple[float, float] | None:
    """(scale, profiled ms): the one compiled callable's median call without the profiler
    (``plain_ms``, its paired calls) against the same call profiled in the window (its
    compiled regions and the eager code at its breaks), per call. The profiler lengthens
    every op it records, eager ops at a break as much as a graph's: this is the factor that
    takes its cost out of a time measured inside the call. None where it cannot be told."""
    if plain_ms is None:
        return None
    inside = sum(r.us for r in view.regions if r.graph_calls)
    inside += sum(item.us for item in view.outside if item.site is not None)
    profiled = view.per_call(inside)
    if profiled <= 0:
        return None
    return min(1.0, plain_ms / profiled), profiled


def _graph_break_cost(
    view: ProfileView, breaks: Mapping[str, BreakContext], plain_ms: float | None = None
) -> list[Finding]:
    """``graph_break_cost``: one finding per break site, its eager time summed over the
    compiles that end there (a layer called twice, a frame recompiled: one line breaks in
    several compiled regions). What removing it saves (``saves_ms``) is that time without the
    profiler's own cost, where the call's paired plain time tells it (``plain_ms``):
    measured on mlp_block's ``.item()`` break, the profiled time was 2.4x what the fix
    applied saved (tests/integration/test_claims.py)."""
    scaled = _unprofiled_scale(view, plain_ms)
    scale = scaled[0] if scaled is not None else 1.0
    by_site: dict[tuple[str | None, int | None], tuple[BreakContext, list[OutsideTime]]] = {}
    for item in view.outside:
        if item.site is None or item.us <= 0:
            continue
        context = breaks.get(item.compile_id or "", BreakContext(False, None))
        line = context.library_site or item.site
        by_site.setdefault((line.file, line.line), (context, []))[1].append(item)
    found = []
    for context, items in by_site.values():
        site = items[0].site
        assert site is not None
        eager_us = sum(item.us for item in items)
        guards_us = sum(item.resumed_guards_us for item in items)
        us = eager_us + guards_us
        share = us / view.wall_us
        eager: dict[str, float] = {}
        for item in items:
            for op, op_us in view.eager_at.get(item.compile_id or "", []):
                eager[op] = eager.get(op, 0.0) + op_us
        top = sorted(eager.items(), key=lambda pair: -pair[1])[:4]
        ops = ", ".join(f"{op} {_ms(op_us, view)}" for op, op_us in top)
        where = f"{site.file}:{site.line}"
        if context.library_site is not None:
            inner = context.library_site
            where += f" (in library code, at {library_path(inner.file or '') or inner.file}:{inner.line})"
        severity: Severity
        if context.by_design:
            severity, advice = (
                "info",
                (
                    "The break is there by design (see its graph-break finding): this is what it "
                    "costs, not something to rewrite."
                ),
            )
        else:
            severity = "warning" if share >= MIN_SHARE else "info"
            advice = (
                "This is the time from the graph's return to the next region (the break's own "
                "op, run eagerly, and the Python around it) and the resumed frame's guard "
                "check. Removing the break saves both and lets the two graphs fuse."
            )
        evidence = [f"{site.file}:{site.line}: {site.code or ''}".rstrip(": ")]
        if guards_us:
            evidence.append(
                f"eager code {_ms(eager_us, view)} and the guard check of the frame Dynamo "
                f"resumes after it {_ms(guards_us, view)} per call: a call pays both because "
                "the break splits it"
            )
        if scaled is not None and scale < 1.0:
            evidence.append(
                f"profiled, {_ms(us, view)} per call; without the profiler the compiled call "
                f"takes {plain_ms:.3f} ms against {scaled[1]:.3f} ms profiled (its paired "
                f"calls): the profiler's own cost, {1 - scale:.0%} of it, is left out"
            )
        elif scaled is None and not context.by_design:
            evidence.append(
                "profiled: the profiler's own cost is in this time (no quiet paired calls "
                "tell it), so removing the break may save less"
            )
        if len(items) > 1:
            ids = ", ".join(str(item.compile_id) for item in items)
            evidence.append(f"it ends {len(items)} compiled regions ({ids}), summed here")
        if ops:
            evidence.append(f"eager ATen ops there per call: {ops}")
        found.append(
            Finding(
                severity,
                "graph_break_cost",
                f"The graph break at {where} costs {_ms(us * scale, view)} per call "
                f"({_pct(us, view.wall_us)} of the step) in eager code between compiled "
                f"regions{' and a second guard check' if guards_us else ''}",
                advice,
                evidence,
                subject=Subject.of_line("site", context.library_site or site),
                saves_ms=None if context.by_design else round(view.per_call(us * scale), 6),
            )
        )
    return sorted(found, key=lambda f: -(f.saves_ms or 0.0))


def eager_op_us(view: ProfileView, owners: Sequence[EagerOwner] = ()) -> float:
    """The window's eager ATen op time less the ops of an eager optimizer step or data loading,
    which are theirs (named by their own finding, not "the compiled model running eagerly")."""
    return sum(us for _, us in view.eager_ops) - sum(owner.aten_us for owner in owners)


def eager_share(view: ProfileView, owners: Sequence[EagerOwner] = ()) -> float:
    """The share of the time in torch ops (compiled regions and eager ops) that is eager ATen
    ops of the model's (:func:`eager_op_us`): what ``eager_only_time`` and
    ``eager_outside_compiled`` stand on, against :data:`EAGER_SHARE`."""
    work = sum(us for _, us in view.eager_ops) + view.compiled_us
    return eager_op_us(view, owners) / work if work > 0 else 0.0


OUTSIDE_ADVICE = (
    "Most of these ops are not at a graph break or in a skipped frame: they run in code "
    "torch.compile was never given, the program's own code between the compiled "
    "calls{where}. Compiling it is "
    "worth measuring, not assuming: ops with no Inductor lowering (sort, multinomial and "
    "other fallbacks) run as they do in eager, and a small function pays a compiled call's "
    "own overhead. Time `torch.compile` on that function against it as it is{tried}, or move "
    "its tensor code into the compiled function, where what can fuse with the model's ops "
    "does."
)
INDUCTOR_RANDOM = "torch._inductor.config.fallback_random"


def compile_function_fix(
    line: EagerLine | None, call_sites: Mapping[str, SourceLine]
) -> Fix | None:
    """``torch.compile`` around the module-level function that holds ``line`` (the user's line
    that ran the most eager ops), as ``run --try-fixes`` applies it and times it; None where
    it cannot be wrapped from outside (a method, a nested function, module-level code) or
    where that function calls the compiled code (compiling it would take the model's calls
    in too: another fix than the one measured). A function that draws random numbers is
    tried with ``fallback_random``: compiled, it would draw other numbers than eager, and the
    try could not show that its results are unchanged."""
    found = None if line is None else top_level_function(line.file, line.line)
    if line is None or found is None:
        return None
    name, source = found
    if any(site.function == name and site.file == line.file for site in call_sites.values()):
        return None
    config = ((INDUCTOR_RANDOM, True),) if RANDOM_CODE.search(source) else ()
    label = f"torch.compile({name})" + (
        f" with {INDUCTOR_RANDOM.rsplit('.', 1)[1]} = True (its random draws as eager's)"
        if config else ""
    )  # fmt: skip
    return Fix(label, FixApplication(label, config=config, timed=True,
                                     functions=((line.file, name),)))  # fmt: skip


def _eager_only(
    view: ProfileView,
    skipped_frames: Sequence[SkippedFrame],
    owners: Sequence[EagerOwner] = (),
    lines: Sequence[EagerLine] = (),
    call_sites: Mapping[str, SourceLine] | None = None,
) -> list[Finding]:
    """``eager_only_time``: a large share of the time in torch ops is eager ATen ops that a
    graph break or a skipped frame leaves outside the compiled graphs; or, where they lead to
    less than half of them, ``eager_outside_compiled``: the program's own code that
    torch.compile was never given (not part of the compiled model, and not a break to
    remove)."""
    eager = eager_op_us(view, owners)
    # Against the time spent in torch (compiled regions and eager ops), not the wall time: a
    # loop's own Python or a machine's stalls between calls dilute a wall-time share.
    work = sum(us for _, us in view.eager_ops) + view.compiled_us
    if eager_share(view, owners) < EAGER_SHARE:
        return []
    top = ", ".join(f"{name} {_ms(us, view)}" for name, us in view.eager_ops[:4])
    evidence = [
        f"eager ATen ops per call: {top}",
        f"eager ops {_ms(eager, view)} and compiled regions {_ms(view.compiled_us, view)} "
        f"per call, together {_pct(eager + view.compiled_us, view.wall_us)} of the step",
    ]
    at_breaks, reached_us = [], 0.0
    for item in view.outside:
        at = view.eager_at.get(item.compile_id or "")
        if item.site is not None and at:
            spent = sum(us for _, us in at)
            reached_us += spent
            at_breaks.append(f"{_pct(spent, view.wall_us)} of the step at the graph break at "
                             f"{item.site.file}:{item.site.line}")  # fmt: skip
    evidence += at_breaks
    evidence += [
        f"skipped by Dynamo: {frame.where}"
        + (f": its own lines ran {_ms(frame.share * eager, view)} of these ops "
           f"({frame.share:.0%}, by the window's stack samples)" if frame.share else "")
        for frame in skipped_frames[:5]
    ]  # fmt: skip
    if lines:
        evidence.append("by the user's line that ran them (the window's stack samples): " + "; ".join(
            f"{Path(item.file).name}:{item.line} in {item.function} "
            f"{_ms(item.share * eager, view)} ({counted(item.samples, 'sample')})"
            for item in lines[:MAX_LINES]
        ))  # fmt: skip
    top_line = lines[0] if lines else None
    subject = (
        Subject("lines", top_line.function, top_line.file, top_line.line, None)
        if top_line is not None
        else PROGRAM
    )
    share = _pct(eager, work)
    # A skipped frame's ops are its sampled share; unsampled, they may be all of them.
    reached_us += (
        sum(frame.share for frame in skipped_frames) * eager
        if lines
        else (eager if skipped_frames else 0.0)
    )
    if reached_us < 0.5 * eager:  # most of it: no break or skipped frame leads there
        where = (f" (`{top_line.function}`, {Path(top_line.file).name}:{top_line.line})"
                 if top_line is not None else "")  # fmt: skip
        fix = compile_function_fix(top_line, call_sites or {})
        tried = (
            f" (`run --try-fixes` does: it runs the program with {fix.text} and times the "
            "loop)" if fix is not None else ""
        )  # fmt: skip
        return [
            Finding(
                "warning",
                "eager_outside_compiled",
                f"{share} of the time in torch ops is ATen ops run eagerly in code outside "
                "every compiled function",
                OUTSIDE_ADVICE.format(where=where, tried=tried),
                evidence,
                subject,
                saves_unmeasured=(
                    f"what {fix.text} saves is measured by a try of it (`run --try-fixes`)"
                    if fix is not None
                    else "what compiling that code would save is not measured here: its ops "
                    "may have no Inductor lowering"
                ),
                fixes=[fix] if fix is not None else [],
            )
        ]
    return [
        Finding(
            "warning",
            "eager_only_time",
            f"{share} of the time in torch ops is ATen ops run eagerly, outside "
            'every compiled graph: that part of the "compiled" model runs eagerly',
            "Code Dynamo skipped or did not reach (a frame it skipped, a disabled function, "
            "the code at a graph break, code outside the compiled module) gets none of the "
            "compiler's speedup. Compile it: remove the break or the disable, or compile the "
            "function that calls it.",
            evidence,
            subject,
        )
    ]


OPTIMIZER_ADVICE = (
    "{cls}.step() runs outside every compiled region, as eager PyTorch: with its default "
    "implementation on this device ({impl}) it updates the parameters one tensor at a time, "
    "a few small kernels each. Pass fused=True to the optimizer ({cls}(..., fused=True): "
    "one fused kernel per group of parameters, on CPU and CUDA for Adam, AdamW and SGD), or "
    "foreach=True (the per-tensor loop as multi-tensor ops), or compile the step "
    "(`@torch.compile` on a function that calls opt.step()). fused and foreach change the "
    "order of floating-point operations, not the update rule: results agree within rounding."
)


def _optimizer_lines(
    trial: Mapping[str, Any] | None,
) -> tuple[SourceLine | None, SourceLine | None]:
    """The user's line that called the optimizer's ``step()`` (the trial's ``step_at``) and
    the line above it that made the optimizer (``opt = torch.optim.AdamW(...)``), read from the
    user's file; None where unknown, or a library's."""
    at = (trial or {}).get("step_at")
    if not isinstance(at, dict) or not at.get("file") or not isinstance(at.get("line"), int):
        return None, None
    file, line = str(at["file"]), int(at["line"])
    if library_path(file) is not None:
        return None, None
    step = SourceLine(file, line, at.get("function"), linecache.getline(file, line).strip())
    name = called_on(step, "step")
    made = assigned_before(step, name) if name else None
    return step, made


AGREE = 0.75
"""The share of the optimizer trial's alternating pairs in which the fused step must be the
faster one for its saving to be claimed (the rest of the way down: "was not faster"; between:
cannot tell, a busy machine)."""


def _eager_optimizer(
    view: ProfileView,
    owners: Sequence[EagerOwner],
    device: str,
    trials: Sequence[Mapping[str, Any]] = (),
) -> list[Finding]:
    """``eager_optimizer``: an optimizer step that runs eagerly, outside compiled regions,
    for a visible share of the step: named with its class and its fix (fused, foreach, a
    compiled step), its measured cost per call, and what its fused (or foreach) variant
    saved when the run timed one against it (torchcompat/optimizer_trial.py)."""
    found = []
    for owner in owners:
        if owner.kind != "optimizer_step" or owner.us < MIN_SHARE * view.wall_us:
            continue
        impl = "a for-loop over tensors" if device == "cpu" else "foreach multi-tensor ops"
        evidence = [
            f"{owner.label}: {owner.calls} calls in the window, "
            f"{_ms(owner.us, view)} per call of the hot loop"
        ]
        facts: dict[str, float | str] = {
            "step_ms": round(view.per_call(owner.us), 6),
            "optimizer": owner.owner_class,
        }
        trial = next((t for t in trials if t.get("optimizer") == owner.owner_class), None)
        saves, unmeasured = None, _untimed(trial)
        cost = f"{_ms(owner.us, view)} per call"
        if trial is not None and unmeasured is None:
            default, variant = _median(trial["default_ms"]), _median(trial["variant_ms"])
            # Each alternating pair: the same moment for both, so a busy machine slows both.
            diffs = [d - v for d, v in zip(trial["default_ms"], trial["variant_ms"], strict=False)]
            faster = sum(1 for diff in diffs if diff > 0)
            steps = owner.calls / view.calls  # optimizer steps per call of the hot loop
            cost = f"{default * steps:.3g} ms per call without the profiler"
            if faster <= (1 - AGREE) * len(diffs):
                unmeasured = (f"{trial['variant']} was not faster when timed in the run "
                              f"({variant:.3f} ms against {default:.3f} ms per step, faster in "
                              f"{faster} of {len(diffs)} alternating steps)")  # fmt: skip
            elif faster < AGREE * len(diffs):
                unmeasured = (f"cannot tell: {trial['variant']} was faster in {faster} of "
                              f"{len(diffs)} alternating steps only ({variant:.3f} ms against "
                              f"{default:.3f} ms per step, medians; the machine was busy?)")  # fmt: skip
            else:  # the pairs' median saving per step, times the steps per call of the hot loop
                saves = round(_median(diffs) * steps, 6)
                evidence.append(
                    f"timed in the run on copies of its parameters: {owner.owner_class}.step() "
                    f"{default:.3f} ms as configured, {variant:.3f} ms with {trial['variant']} "
                    f"(medians of {len(trial['default_ms'])} alternating steps each)"
                )
                facts.update(trial_default_ms=round(default, 6),
                             trial_variant_ms=round(variant, 6),
                             variant=str(trial["variant"]))  # fmt: skip
        step_at, made_at = _optimizer_lines(trial)
        where = ""
        if step_at is not None:
            where = f" At {Path(step_at.file or '?').name}:{step_at.line} (`{step_at.statement}`)"
            there = ("there" if made_at is not None and f"{owner.owner_class}(" in made_at.statement
                     else f"to the {owner.owner_class}(...) call that makes it")  # fmt: skip
            where += (f", the optimizer is the {owner.owner_class} made at line {made_at.line} "
                      f"(`{made_at.statement}`): add fused=True {there}."
                      if made_at is not None else ".")  # fmt: skip
        found.append(
            Finding(
                "warning",
                "eager_optimizer",
                f"opt.step() of {owner.owner_class} runs eagerly: {cost} "
                f"({_pct(owner.us, view.wall_us)} of the step), outside every compiled "
                "region",
                OPTIMIZER_ADVICE.format(cls=owner.owner_class, impl=impl) + where,
                evidence,
                Subject(
                    "program",
                    f"{owner.owner_class}.step",
                    step_at.file if step_at else None,
                    step_at.line if step_at else None,
                    step_at.function if step_at else None,
                ),
                saves_ms=saves,
                saves_unmeasured=unmeasured,
                facts=facts,
            )
        )
    return found


DATA_LOADING_ADVICE = {
    "_SingleProcessDataLoaderIter": (
        "The DataLoader makes each batch in this process (num_workers=0), between the compiled "
        "calls: every step waits while its samples are loaded and collated. Pass "
        "num_workers=N (N > 0: worker processes make the next batches while the step runs; "
        "persistent_workers=True keeps them between epochs; pin_memory=True where batches go "
        "to a GPU). Workers need CPU cores of their own: what they save is at most the time "
        "above, and nothing where the cores are busy. The batches and their order stay the "
        "same (a random transform in the Dataset draws from each worker's own seed)."
    ),
    "_MultiProcessingDataLoaderIter": (
        "The step waits for the DataLoader's workers: they make batches slower than the "
        "compiled step uses them. Give it more workers where cores are free (num_workers), a "
        "larger prefetch_factor for uneven batches, or less work per sample in the Dataset "
        "(work done once per batch in collate_fn, or on the device)."
    ),
}


def _data_loading(view: ProfileView, owners: Sequence[EagerOwner]) -> list[Finding]:
    """``data_loading``: the step waits on its DataLoader (torch's profiler labels each
    ``__next__``: ``enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__``) for a visible
    share of the step. Its fix depends on the iterator: workers for one that loads in the
    process, more or faster workers for one that already has them. What workers would save is
    not measured here (it depends on free cores): the finding says so."""
    found = []
    for owner in owners:
        if owner.kind != "data_loading" or owner.us < MIN_SHARE * view.wall_us:
            continue
        kind = owner.owner_class  # the iterator's class: _SingleProcessDataLoaderIter
        advice = DATA_LOADING_ADVICE.get(
            kind, DATA_LOADING_ADVICE["_MultiProcessingDataLoaderIter"]
        )
        found.append(
            Finding(
                "warning",
                "data_loading",
                f"The step waits on its DataLoader: {_ms(owner.us, view)} per call "
                f"({_pct(owner.us, view.wall_us)} of the step) in {kind}.__next__, outside "
                "every compiled region",
                advice,
                [
                    f"{owner.label}: {owner.calls} calls in the window, {_ms(owner.us, view)} per "
                    f"call of the hot loop, of which ATen ops {_ms(owner.aten_us, view)}"
                ],
                Subject("program", "DataLoader"),
                saves_unmeasured=(
                    "what workers save depends on the CPU cores free for them: at most the "
                    f"{_ms(owner.us, view)} per call measured here; a try of "
                    f"{WORKERS_FIX.label} (`run --try-fixes`) measures it"
                    if kind == "_SingleProcessDataLoaderIter"
                    else "what more or faster workers save is not measured in this run"
                ),
                facts={"loading_ms": round(view.per_call(owner.us), 6), "iterator": kind},
                fixes=[Fix(WORKERS_FIX.label, WORKERS_FIX)]
                if kind == "_SingleProcessDataLoaderIter"
                else [],
            )
        )
    return found


def _median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def _untimed(trial: Mapping[str, Any] | None) -> str | None:
    """Why the run has no timing of the optimizer's fused variant (None: it has one)."""
    if trial is None:
        return ("no step of the optimizer was timed against its fused variant (it stepped "
                "before the profile window ended, or not at all after it)")  # fmt: skip
    if trial.get("skipped"):
        return f"its fused variant was not timed: {trial['skipped']}"
    if not trial.get("default_ms") or not trial.get("variant_ms"):
        return "its trial recorded no timed steps"
    return None

"""Guard overhead: frames whose guard checks cost a visible share of their compiled time.

Every call of a compiled frame first runs the guards of its cached variants until one passes.
The probes of ``pt2doctor run`` (and ``watch``) time one check of each variant's guards warm,
right after Dynamo builds them (``torchcompat.time_guards``: 200 checks against the frame's own
locals, the fastest batch of 10 kept), and count each variant's calls and time inside its graph. A call that ran variant *i*
evaluated at least *i*'s guards; with *n* variants it evaluates on average about half of the
others first (the cache is a list searched in order), so the estimate is calls x latency x
(1 + (n - 1) / 2).

Without that timing (a run on a torch without the hook), the latency is torch's own
``guard_latency_us``: one evaluation right after flushing the CPU caches, 50-600 us here where a
warm check of the same guards takes about 1 us, so the estimate is worded as an upper bound. A
frame called fewer than ``MIN_CALLS`` times is never flagged. Few variants: ``info`` (worth a
look, not an alarm); from ``MANY_VARIANTS`` on, where the search itself grows: ``warning``.
"""

from __future__ import annotations

from pt2doctor.analysis.breaks.heat import CompileHeat, Heat
from pt2doctor.analysis.findings.model import Finding
from pt2doctor.analysis.findings.trace_findings import frame_label, frame_subject
from pt2doctor.analysis.recompiles.ledger import CompileEntry, FrameEntry, Ledger
from pt2doctor.analysis.text import counted
from pt2doctor.torchcompat import GUARD_TIMING_BATCH, GUARD_TIMING_CHECKS

# How the probes time a variant's guards (torchcompat.time_guards), as the evidence says it.
GUARD_TIMING = (
    f"the fastest of up to {GUARD_TIMING_CHECKS} checks in batches of {GUARD_TIMING_BATCH} against "
    "the frame's locals right after Dynamo built them"
)

# A frame is flagged when guard checks cost at least this share of its time in compiled graphs
# (the time the probes measure around each graph call, guards excluded) ...
GUARD_SHARE_WARNING = 0.10
# ... and at least this much in total: below it no user will see the difference ...
MIN_GUARD_S = 0.001
# ... over at least this many calls: a cold evaluation is often 100x a warm one (hundreds of us
# for one tensor guard on a loaded machine), so for a frame called a few times the bound says
# more about the measurement than about the frame (a 3-call function read "up to 1.7 ms").
MIN_CALLS = 100
# From this many variants the guard search is a cost to act on (warning), below it: info.
MANY_VARIANTS = 4
GUARD_ADVICE = (
    "Each call checks the guards of the frame's variants before running one. Fewer variants "
    "(see the recompile findings: mark changing dimensions dynamic, keep changing Python values "
    "out of the compiled function) shortens the search; torch.compile(options="
    '{"guard_filter_fn": ...}) drops guards you know cannot fail (e.g. '
    "torch.compiler.skip_guard_on_globals_unsafe); once the variant set is stable, "
    'torch.compiler.set_stance("default", skip_guard_eval_unsafe=True) runs only the guards '
    "that tell variants apart."
)


def _latency_us(entry: CompileEntry, item: CompileHeat) -> tuple[float | None, bool]:
    """One check of a variant's guards in microseconds, and whether it was timed warm (the
    probes' own timing; else torch's one evaluation after a cache flush)."""
    if item.guard_check_us is not None:
        return item.guard_check_us, True
    return entry.record.counters.get("guard_latency_us"), False


def _frame_guard_seconds(
    frame: FrameEntry, heat: Heat
) -> tuple[float, float, int, list[tuple[float, bool]]] | None:
    """(estimated guard seconds, seconds in compiled graphs, calls, (latency, warm) per
    variant) of a frame."""
    guard_s = graph_s = 0.0
    calls_total = 0
    variants = max(frame.variants, 1)
    latencies = []
    for entry in frame.compiles:
        item = heat.compiles.get((entry.record.stream, entry.compile_id))
        if item is None:
            continue
        latency_us, warm = _latency_us(entry, item)
        if latency_us is None:
            continue
        latencies.append((latency_us, warm))
        if not item.calls:
            continue
        calls_total += item.calls
        guard_s += item.calls * latency_us / 1e6 * (1 + (variants - 1) / 2)
        graph_s += item.seconds_in_graph or 0.0
    if not calls_total:
        return None
    return guard_s, graph_s, calls_total, latencies


def guard_overhead_findings(ledger: Ledger, heat: Heat | None) -> list[Finding]:
    """``guard_overhead`` findings, one per frame over the thresholds (needs run heat)."""
    if heat is None:
        return []
    findings = []
    for frame in ledger.frames:
        measured = _frame_guard_seconds(frame, heat)
        if measured is None:
            continue
        guard_s, graph_s, calls, latencies = measured
        share = guard_s / graph_s if graph_s else float("inf")
        if calls < MIN_CALLS or guard_s < MIN_GUARD_S or share < GUARD_SHARE_WARNING:
            continue
        warm = all(timed_warm for _, timed_warm in latencies)
        known = ", ".join(f"{latency:.3g}" for latency, _ in latencies)
        share_text = f"{100 * share:.0f}%" if graph_s else "more than all"
        how = (
            f"one check per variant, timed warm ({GUARD_TIMING}): {known} us"
            if warm
            else f"guard_latency_us per variant: {known} (one evaluation after a cache flush, "
            "when the guards were built: an upper bound of a warm check)"
        )
        findings.append(
            Finding(
                "warning" if frame.variants >= MANY_VARIANTS else "info",
                "guard_overhead",
                f"{frame_label(frame.function, frame.file, frame.line)}: guard checks "
                f"{'take about' if warm else 'may cost up to'} {guard_s * 1e3:.1f} ms, "
                f"{share_text} of its {graph_s * 1e3:.1f} ms in compiled graphs "
                f"({counted(frame.variants, 'variant')}, {counted(calls, 'call')})",
                GUARD_ADVICE,
                [
                    how,
                    f"{counted(calls, 'call')}, {counted(frame.variants, 'variant')} searched in order",
                ],
                frame_subject(frame),
            )
        )
    return findings

"""Guard overhead: frames whose guard checks cost a visible share of their compiled time.

Every call of a compiled frame first runs the guards of its cached variants until one passes.
Dynamo measures one evaluation of each variant's guards when it builds them
(``guard_latency_us`` in compilation_metrics); the probes of ``pt2doctor run`` count each
variant's calls and time inside its graph. A call that ran variant *i* evaluated at least *i*'s
guards; with *n* variants it evaluates on average about half of the others first (the cache
is a list searched in order), so the estimate is calls x latency x (1 + (n - 1) / 2).

That is an upper bound, and is worded as one: torch measures ``guard_latency_us`` with one
evaluation right after flushing the CPU caches, and moves the variant that passed to the front
of the list, so a warm steady state checks fewer guards, faster. A frame called fewer than
``MIN_CALLS`` times is never flagged: there the cold measurement is all the bound says. Few variants: ``info`` (worth a
look, not an alarm); from ``MANY_VARIANTS`` on, where the search itself grows: ``warning``.
"""

from __future__ import annotations

from pt2doctor.analysis.findings import Finding, frame_label
from pt2doctor.analysis.heat import Heat
from pt2doctor.analysis.ledger import FrameEntry, Ledger

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


def _frame_guard_seconds(frame: FrameEntry, heat: Heat) -> tuple[float, float, int] | None:
    """(estimated guard seconds, seconds in compiled graphs, calls) of a frame."""
    guard_s = graph_s = 0.0
    calls_total = 0
    variants = max(frame.variants, 1)
    for entry in frame.compiles:
        item = heat.compiles.get((entry.record.stream, entry.compile_id))
        latency_us = entry.record.counters.get("guard_latency_us")
        if item is None or not item.calls or latency_us is None:
            continue
        calls_total += item.calls
        guard_s += item.calls * latency_us / 1e6 * (1 + (variants - 1) / 2)
        graph_s += item.seconds_in_graph or 0.0
    if not calls_total:
        return None
    return guard_s, graph_s, calls_total


def guard_overhead_findings(ledger: Ledger, heat: Heat | None) -> list[Finding]:
    """``guard_overhead`` findings, one per frame over the thresholds (needs run heat)."""
    if heat is None:
        return []
    findings = []
    for frame in ledger.frames:
        measured = _frame_guard_seconds(frame, heat)
        if measured is None:
            continue
        guard_s, graph_s, calls = measured
        share = guard_s / graph_s if graph_s else float("inf")
        if calls < MIN_CALLS or guard_s < MIN_GUARD_S or share < GUARD_SHARE_WARNING:
            continue
        latencies = [e.record.counters.get("guard_latency_us") for e in frame.compiles]
        known = [latency for latency in latencies if latency is not None]
        share_text = f"{100 * share:.0f}%" if graph_s else "more than all"
        findings.append(
            Finding(
                "warning" if frame.variants >= MANY_VARIANTS else "info",
                "guard_overhead",
                f"{frame_label(frame.function, frame.file, frame.line)}: guard checks may cost "
                f"up to {guard_s * 1e3:.1f} ms, {share_text} of its {graph_s * 1e3:.1f} ms "
                f"in compiled graphs ({frame.variants} variant(s), {calls} call(s))",
                GUARD_ADVICE,
                [
                    f"guard_latency_us per variant: {', '.join(f'{v:.0f}' for v in known)} "
                    "(one evaluation after a cache flush, when the guards were built: an upper "
                    "bound of a warm check)",
                    f"{calls} call(s), {frame.variants} variant(s) searched in order",
                ],
            )
        )
    return findings

"""Every analysis of a run, in order, into one :class:`RunAnalysis`: the report is assembled
from it afterwards (report/schema.py ``build_report``) and nothing in the report layer
computes or patches a finding. The order is the data flow: the ledger and break sites, heat
(a run's probes), each frame's explanation, ranks, cold start, then the findings of each
concern, the profile's (which replace a static fallback finding they measured), the plan's
input order, and what ``--try-fixes`` measured.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pt2doctor.analysis.breaks.sites import GraphBreakSite, graph_break_sites
from pt2doctor.analysis.built.fallbacks import fallback_findings
from pt2doctor.analysis.built.graph_size import many_small_inputs_findings, unrolled_loop_findings
from pt2doctor.analysis.built.kernels import KernelMap, kernel_map
from pt2doctor.analysis.coldstart.analyse import ColdStart, cold_start
from pt2doctor.analysis.coldstart.stale_constant import stale_constant_findings
from pt2doctor.analysis.findings.model import Finding
from pt2doctor.analysis.findings.trace_findings import (
    find_findings,
    sort_findings,
    without_unsafe_settings,
)
from pt2doctor.analysis.findings.verdicts import Outcome, outcome_of
from pt2doctor.analysis.ranks.divergence import (
    DEFAULT_COLLECTIVE_TIMEOUT_S,
    RankAnalysis,
    cross_rank_analysis,
)
from pt2doctor.analysis.ranks.findings import explain_cache_imbalance, rank_findings
from pt2doctor.analysis.recompiles.ledger import Ledger, compile_ledger
from pt2doctor.analysis.recompiles.outlook import (
    FrameExplanation,
    attach_attribute_stores,
    attach_compile_calls,
    attach_compile_sites,
    change_line,
    explain_frames,
)
from pt2doctor.trace.types import Run, Try

if TYPE_CHECKING:  # heat and the profile exist only for a run directory
    from pt2doctor.analysis.breaks.heat import Heat
    from pt2doctor.analysis.time.analyse import ProfileResult
    from pt2doctor.analysis.time.paired import Paired


@dataclass(frozen=True, slots=True)
class RunAnalysis:
    """A run, analysed: what report/schema.py writes report.json from."""

    run: Run
    ledger: Ledger
    sites: list[GraphBreakSite]
    heat: Heat | None
    environment: dict[str, Any]
    explanations: list[FrameExplanation]
    """One per ledger frame."""
    ranks: RankAnalysis | None
    cold: ColdStart
    kernel_maps: list[KernelMap | None]
    """One per ledger compile."""
    profile: ProfileResult | None
    findings: list[Finding]
    """Sorted: errors first (analysis/findings/trace_findings.py ``sort_findings``)."""
    outcome: Outcome
    paired: list[Paired]
    """``run --profile``: each compiled callable's paired compiled/eager calls."""


def _heat(run: Run, ledger: Ledger, sites: list[GraphBreakSite]) -> Heat | None:
    if run.probes is None:
        return None
    from pt2doctor.analysis.breaks.heat import break_heat, compile_heat  # a run dir's only

    heat = compile_heat(ledger, run.probes, run.manifest or {})
    if heat.breaks_measured:
        break_heat(sites, run.probes)
    return heat


def _changes_by_compile(
    ledger: Ledger, explanations: list[FrameExplanation]
) -> dict[tuple[str, str], list[str]]:
    """(stream, compile id) -> what its recompile changed, one evidence line per change."""
    return {
        (frame.stream, item.compile_id): [
            change_line(item.compile_id, item.compared_with, c) for c in item.changes
        ]
        for frame, explanation in zip(ledger.frames, explanations, strict=True)
        for item in explanation.recompiles
    }


def built_findings(ledger: Ledger, kernel_maps: list[KernelMap | None]) -> list[Finding]:
    """What the compiler built that an expert would point at: unrolled loops, graphs of many
    small inputs, ATen fallbacks."""
    return (
        unrolled_loop_findings(ledger)
        + many_small_inputs_findings(ledger)
        + fallback_findings(ledger.compiles, kernel_maps)
    )


def _run_findings(
    run: Run, ledger: Ledger, heat: Heat | None, explanations: list[FrameExplanation]
) -> list[Finding]:
    """What only a captured run shows (its manifest, probes and heat)."""
    if run.manifest is None:
        return []
    from pt2doctor.analysis.coldstart.guard_overhead import guard_overhead_findings
    from pt2doctor.analysis.findings.run_findings import run_findings

    changed = _changes_by_compile(ledger, explanations)
    return run_findings(ledger, run.manifest, run.probes, heat, changed) + (
        guard_overhead_findings(ledger, heat)
    )


def analyse_run(
    run: Run, collective_timeout_s: float = DEFAULT_COLLECTIVE_TIMEOUT_S
) -> RunAnalysis:
    """Every analysis of ``run``. ``collective_timeout_s`` is what cross-rank compile skew is
    compared with (multi-rank logs only)."""
    ledger = compile_ledger(run)
    sites = graph_break_sites(ledger)
    heat = _heat(run, ledger, sites)
    environment = dict(run.environment)
    if run.probes is not None:
        environment.update(run.probes.environment)
    explanations = explain_frames(ledger.frames, heat, environment)
    if run.probes is not None and run.probes.compile_calls:
        attach_compile_calls(ledger.frames, explanations, run.probes.compile_calls)
    if run.probes is not None and run.probes.attribute_stores:
        attach_attribute_stores(explanations, run.probes.attribute_stores)
    if run.probes is not None and run.probes.compile_sites:
        attach_compile_sites(explanations, run.probes.compile_sites)
    ranks = cross_rank_analysis(run, ledger, sites, collective_timeout_s)
    cold = cold_start(run, ledger, heat)
    explain_cache_imbalance(ranks, cold.miss_causes)
    kernel_maps = [kernel_map(entry.record.built) for entry in ledger.compiles]
    findings = sort_findings(
        find_findings(ledger, sites, run.parse_stats, explanations)
        + rank_findings(ranks)
        + built_findings(ledger, kernel_maps)
        + cold.findings
        + stale_constant_findings(ledger, explanations)
    )
    findings = sort_findings(findings + _run_findings(run, ledger, heat, explanations))
    paired = []
    if run.probes is not None and run.probes.paired_calls:
        from pt2doctor.analysis.time.paired import compiled_vs_eager_findings, paired_results

        paired = paired_results(run.probes.paired_calls)
        findings = sort_findings(findings + compiled_vs_eager_findings(run.probes.paired_calls))
    profiled = None
    if run.profile is not None:
        from pt2doctor.analysis.time.analyse import profile_analysis

        trials = run.probes.optimizer_trials if run.probes is not None else []
        # One compiled callable paired quietly: its plain time tells the profiler's own cost.
        plain = paired[0].compiled_ms if len(paired) == 1 and not paired[0].noisy else None
        probed = run.probes.compile_sites if run.probes is not None else {}
        profiled = profile_analysis(run.profile, ledger, sites, trials,
                                    [e.compile_call for e in explanations], plain, probed)  # fmt: skip
        if profiled.findings:  # a measured fallback op replaces the static finding of it
            measured = {f.code for f in profiled.findings if f.code == "fallback_op"}
            kept = [f for f in findings if f.code not in measured]
            findings = sort_findings(kept + profiled.findings)
    without_unsafe_settings(findings)
    outcome = outcome_of(ledger, sites, run.manifest)
    if run.tries:
        from pt2doctor.analysis.findings.verdicts import attach_tries

        analysed: dict[int, list[Finding]] = {}

        def findings_of(found: Try) -> list[Finding]:
            """A re-run's findings, analysed once however many findings its fix is for."""
            if found.n not in analysed:
                analysed[found.n] = analyse_run(found.run, collective_timeout_s).findings
            return analysed[found.n]

        attach_tries(findings, run.tries, outcome, run, findings_of)
    return RunAnalysis(run, ledger, sites, heat, environment, explanations, ranks, cold,
                       kernel_maps, profiled, findings, outcome, paired)  # fmt: skip

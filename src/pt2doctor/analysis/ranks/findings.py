"""Findings from the divergences between ranks, with the distributed-compile practice as advice."""

from __future__ import annotations

from typing import Any

from pt2doctor.analysis.findings.codes import Code
from pt2doctor.analysis.findings.model import Finding, Subject
from pt2doctor.analysis.ranks.divergence import Divergence, RankAnalysis

# Divergence kind -> finding code.
FINDING_CODES: dict[str, Code] = {
    "compile_skew": "rank_compile_skew",
    "rank_specific_recompile": "rank_specific_recompile",
    "cache_imbalance": "rank_cache_imbalance",
    "graph_count": "rank_graph_mismatch",
    "frames": "rank_graph_mismatch",
    "break_sites": "rank_graph_mismatch",
    "failures": "rank_specific_failure",
    "rank_name_mismatch": "rank_name_mismatch",
    "duplicate_rank": "rank_duplicate_logs",
}

COMPILE_SKEW_ADVICE = (
    "Ranks wait for the slowest one at the next collective. Compile once before the first "
    "collective (run one warmup step, or call the compiled function on every input shape, on "
    "every rank before training starts); warm the compile cache on all ranks or none. If "
    "compiling inside the loop cannot be avoided, raise the timeout only during warmup "
    "(init_process_group(timeout=...) or a warmup process group with a longer timeout) and "
    "restore it afterwards, so a real hang is still caught."
)
RANK_RECOMPILE_ADVICE = (
    "Stop rank-specific shapes and values from reaching compiled frames: pad or bucket inputs "
    "to the same shapes on every rank (an uneven last batch: DataLoader(drop_last=True); "
    "DistributedSampler already gives every rank the same number of samples), mark the "
    "varying dimension dynamic on every rank before the first call "
    "(torch._dynamo.maybe_mark_dynamic), and keep rank-dependent Python values (the rank itself, "
    "per-rank flags) out of the compiled function. One rank recompiling stalls all others at "
    "the next collective."
)
CACHE_ADVICE = (
    "Warm the cache on all ranks or none: give every rank the same cache (one "
    "TORCHINDUCTOR_CACHE_DIR on shared storage, a remote cache, or the artifacts of "
    "torch.compiler.save_cache_artifacts loaded on each rank), or start them all cold. A rank "
    "that misses compiles for minutes while the warm ranks wait at the first collective."
)
GRAPH_MISMATCH_ADVICE = (
    "Ranks should trace the same program. Branch on the rank outside compiled code, keep "
    "rank-dependent control flow and data-dependent breaks (.item(), prints) out of compiled "
    "frames, and check that every rank compiles the same frames before the first collective."
)
FAILURE_ADVICE = (
    "A compile failure on some ranks only means those ranks run a different program (eagerly, "
    "or not at all). Reproduce it on one process with that rank's inputs; see the "
    "compile_failure findings for the error."
)
NAME_MISMATCH_ADVICE = (
    "The rank comes from the records' envelopes, then from the file name. Check that the logs "
    "were not renamed or mixed up while they were gathered from the nodes (TORCH_TRACE per "
    "node, files copied under their original names)."
)
DUPLICATE_ADVICE = (
    "Several logs for one rank come from a restarted job or logs gathered twice: report on one "
    "attempt's logs at a time (one TORCH_TRACE directory per job attempt)."
)
ADVICE: dict[Code, str] = {
    "rank_compile_skew": COMPILE_SKEW_ADVICE,
    "rank_specific_recompile": RANK_RECOMPILE_ADVICE,
    "rank_cache_imbalance": CACHE_ADVICE,
    "rank_graph_mismatch": GRAPH_MISMATCH_ADVICE,
    "rank_specific_failure": FAILURE_ADVICE,
    "rank_name_mismatch": NAME_MISMATCH_ADVICE,
    "rank_duplicate_logs": DUPLICATE_ADVICE,
}


def _finding(divergence: Divergence) -> Finding:
    code = FINDING_CODES[divergence.kind]
    subject = Subject("rank", ", ".join(rank.label for rank in divergence.ranks) or None)
    return Finding(
        divergence.severity, code, divergence.title, ADVICE[code], list(divergence.evidence),
        subject,
    )  # fmt: skip


# Cache-miss causes added to the rank cache-imbalance divergence's evidence.
MAX_RANK_CAUSES = 6


def explain_cache_imbalance(analysis: RankAnalysis | None, causes: list[dict[str, Any]]) -> None:
    """Add why the ranks' lookups differ (the cold-start analysis's ``miss_causes``) to the
    evidence of the ``cache_imbalance`` divergence that reports them, before its finding and
    the ranks section are made from it."""
    lines = [f"{c['stream']} vs {c['against']}: {c['subject']}: {c['detail']}" for c in causes]
    if analysis is None or not lines:
        return
    for divergence in analysis.divergences:
        if divergence.kind == "cache_imbalance":
            divergence.evidence = [*divergence.evidence, *lines[:MAX_RANK_CAUSES]]


def rank_findings(analysis: RankAnalysis | None) -> list[Finding]:
    """One finding per divergence (none for a single-rank run)."""
    if analysis is None:
        return []
    return [_finding(divergence) for divergence in analysis.divergences]

"""The ``ranks`` section of report.json (multi-rank runs only): per-rank rows and divergences."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pt2doctor.analysis.ranks.divergence import Divergence, RankAnalysis
from pt2doctor.analysis.ranks.findings import FINDING_CODES
from pt2doctor.analysis.ranks.summary import FrameKey, RankRecompile, RankSummary
from pt2doctor.analysis.recompiles.ledger import Ledger
from pt2doctor.report import types
from pt2doctor.report.types import FrameRef, RankRow, Ranks

if TYPE_CHECKING:  # heat exists only for a run directory's probes
    from pt2doctor.analysis.breaks.heat import Heat


def _frame(frame: FrameKey | None) -> FrameRef | None:
    if frame is None:
        return None
    function, file, line = frame
    return {"function": function, "file": file, "line": line}


def _recompile(
    recompile: RankRecompile, rank: int | None = None, label: str | None = None
) -> types.RankRecompile:
    row: types.RankRecompile = {
        "compile_id": recompile.compile_id,
        "frame": _frame(recompile.frame),
        "failed_guards": [
            {"text": guard.text, "category": guard.category} for guard in recompile.failed_guards
        ],
    }
    if label is not None:  # listed under a divergence: whose recompile it is
        row = {"rank": rank, "label": label, **row}
    return row


def _graph_calls(rank: RankSummary, ledger: Ledger, heat: Heat | None) -> int | None:
    """Calls into this rank's compiled graphs (run only; None when not measured)."""
    if heat is None:
        return None
    calls = [
        item.calls
        for entry in ledger.compiles
        if entry.record.stream == rank.identity.stream
        and (item := heat.compiles.get((entry.record.stream, entry.compile_id))) is not None
    ]
    known = [count for count in calls if count is not None]
    return sum(known) if known else None


def _rank_row(rank: RankSummary, ledger: Ledger, heat: Heat | None) -> RankRow:
    identity = rank.identity
    return {
        "rank": identity.rank,
        "label": rank.label,
        "stream": identity.stream,
        "path": identity.path or None,
        "name_rank": identity.name_rank,
        "envelope_ranks": identity.envelope_ranks,
        "compiles": rank.compiles,
        "recompiles": [_recompile(recompile) for recompile in rank.recompiles],
        "compile_time_s": round(rank.compile_time_s, 6),
        "graphs": rank.graphs,
        "break_sites": len(rank.break_sites),
        "failures": rank.failures,
        "cache": {"hit": rank.cache_hits, "miss": rank.cache_misses},
        "graph_calls": _graph_calls(rank, ledger, heat),
    }


def _divergence(divergence: Divergence) -> types.Divergence:
    return {
        "kind": divergence.kind,
        "code": FINDING_CODES[divergence.kind],
        "severity": divergence.severity,
        "ranks": [rank.identity.rank for rank in divergence.ranks],
        "labels": [rank.label for rank in divergence.ranks],
        "title": divergence.title,
        "evidence": divergence.evidence,
        "frame": _frame(divergence.frame),
        "recompiles": [
            _recompile(recompile, rank.identity.rank, rank.label)
            for rank, recompile in divergence.recompiles
        ],
        "skew_s": None if divergence.skew_s is None else round(divergence.skew_s, 6),
    }


def ranks_section(analysis: RankAnalysis, ledger: Ledger, heat: Heat | None) -> Ranks:
    """report.json's ``ranks`` object."""
    return {
        "count": len({rank.identity.rank for rank in analysis.ranks}),
        "collective_timeout_s": analysis.collective_timeout_s,
        "compile_skew_s": round(analysis.compile_skew_s, 6),
        "timeout_share": round(analysis.timeout_share, 6),
        "slowest": analysis.slowest.label,
        "fastest": analysis.fastest.label,
        "per_rank": [_rank_row(rank, ledger, heat) for rank in analysis.ranks],
        "divergences": [_divergence(divergence) for divergence in analysis.divergences],
    }

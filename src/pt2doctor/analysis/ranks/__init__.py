"""Ranks: what each rank of a distributed run compiled, and how the ranks diverge.

``rank_summaries`` (which log is which rank and what it compiled), ``cross_rank_analysis``
(skew, extra recompiles, rank-specific failures), ``rank_findings``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pt2doctor._lazy import lazy_names

if TYPE_CHECKING:
    from pt2doctor.analysis.ranks.divergence import cross_rank_analysis
    from pt2doctor.analysis.ranks.findings import rank_findings
    from pt2doctor.analysis.ranks.summary import rank_identities, rank_summaries

_HOMES = {
    "cross_rank_analysis": "divergence",
    "rank_findings": "findings",
    "rank_identities": "summary",
    "rank_summaries": "summary",
}
__all__ = ["cross_rank_analysis", "rank_findings", "rank_identities", "rank_summaries"]
__getattr__ = lazy_names(__name__, _HOMES)

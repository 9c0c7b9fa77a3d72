"""Cross-rank analysis: how the ranks of one distributed run diverge in what they compiled.

Every rank must reach each collective. A rank that compiles more, or longer, than the others
keeps them waiting in the collective, and past the collective timeout (10 minutes by default
for NCCL and gloo) the job dies with a timeout that names no compile. Pure functions of the
per-rank summaries (``analysis.rank_summary``).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from pt2doctor.analysis.breaks.sites import GraphBreakSite
from pt2doctor.analysis.findings.codes import Severity
from pt2doctor.analysis.findings.trace_findings import frame_label
from pt2doctor.analysis.ranks.summary import (
    FrameKey,
    RankIdentity,
    RankRecompile,
    RankSummary,
    rank_identities,
    rank_summaries,
)
from pt2doctor.analysis.recompiles.ledger import Ledger
from pt2doctor.analysis.text import counted
from pt2doctor.trace.types import Run

# torch.distributed's default collective timeout (NCCL and gloo): 10 minutes.
DEFAULT_COLLECTIVE_TIMEOUT_S = 600.0
# Below this compile-time skew no collective is at risk: the skew alone is not reported.
MIN_SKEW_S = 1.0
# A skew above this share of the collective timeout is a warning (at 100% an error).
SKEW_WARNING_SHARE = 0.25
MAX_NAMED = 8
MAX_EVIDENCE = 12


def skew_severity(share: float) -> Severity:
    """How a compile-time skew compares with the collective timeout (``share`` of it): ``error``
    at the timeout, ``warning`` from :data:`SKEW_WARNING_SHARE`, else ``info``. The
    ``rank_compile_skew`` finding and the HTML ranks section both grade it here."""
    return "error" if share >= 1 else "warning" if share >= SKEW_WARNING_SHARE else "info"


Item = TypeVar("Item", bound=Hashable)


@dataclass(slots=True)
class Divergence:
    """One way the ranks differ, with the ranks it concerns."""

    kind: str
    """``compile_skew``, ``rank_specific_recompile``, ``cache_imbalance``, ``graph_count``,
    ``frames``, ``break_sites``, ``failures``, ``rank_name_mismatch``, ``duplicate_rank``."""
    severity: Severity
    ranks: list[RankSummary]
    title: str
    evidence: list[str] = field(default_factory=list)
    frame: FrameKey | None = None
    recompiles: list[tuple[RankSummary, RankRecompile]] = field(default_factory=list)
    skew_s: float | None = None


@dataclass(slots=True)
class RankAnalysis:
    ranks: list[RankSummary]
    collective_timeout_s: float
    slowest: RankSummary
    fastest: RankSummary
    divergences: list[Divergence] = field(default_factory=list)

    @property
    def compile_skew_s(self) -> float:
        """Compile time of the slowest rank minus the fastest's."""
        return self.slowest.compile_time_s - self.fastest.compile_time_s

    @property
    def timeout_share(self) -> float:
        """The skew as a share of the collective timeout (1.0: a collective would time out)."""
        return self.compile_skew_s / self.collective_timeout_s


def names(ranks: Sequence[RankSummary]) -> str:
    """``rank 0, rank 2`` (at most MAX_NAMED, then how many more)."""
    shown = ", ".join(rank.label for rank in ranks[:MAX_NAMED])
    more = len(ranks) - MAX_NAMED
    return shown + (f" and {more} more" if more > 0 else "")


def _frame_text(frame: FrameKey) -> str:
    return frame_label(*frame)


def _compile_skew(analysis: RankAnalysis) -> list[Divergence]:
    ranks, fast, slow = analysis.ranks, analysis.fastest, analysis.slowest
    fewest = min(rank.compiles for rank in ranks)
    skew = analysis.compile_skew_s
    if skew < MIN_SKEW_S and all(rank.compiles == fewest for rank in ranks):
        return []
    behind = [
        rank
        for rank in ranks
        if rank.compiles > fewest or rank.compile_time_s - fast.compile_time_s >= MIN_SKEW_S
    ]
    share = analysis.timeout_share
    severity = skew_severity(share)
    title = (
        f"{names(behind)} compiled more or longer than the others: {slow.label} "
        f"{slow.compile_time_s:.2f} s in {counted(slow.compiles, 'compile')}, {fast.label} "
        f"{fast.compile_time_s:.2f} s in {fast.compiles}; skew {skew:.2f} s, {share:.2%} of the "
        f"{analysis.collective_timeout_s:g} s collective timeout"
    )
    evidence = [
        f"{r.label}: {counted(r.compiles, 'compile')}, {r.compile_time_s:.3f} s" for r in ranks
    ]
    return [
        Divergence("compile_skew", severity, behind, title, evidence[:MAX_EVIDENCE], skew_s=skew)
    ]


def _extra_recompiles(
    ranks: list[RankSummary], frame: FrameKey
) -> tuple[list[RankSummary], list[tuple[RankSummary, RankRecompile]]]:
    """(ranks with the fewest recompiles of ``frame``, the recompiles other ranks did beyond
    them: those whose failed guards the fewest-ranks never saw, else the last ones)."""
    mine = {
        rank.identity.stream: [r for r in rank.recompiles if r.frame == frame] for rank in ranks
    }
    fewest = min(len(found) for found in mine.values())
    baseline = [rank for rank in ranks if len(mine[rank.identity.stream]) == fewest]
    known = {
        g.text for rank in baseline for r in mine[rank.identity.stream] for g in r.failed_guards
    }
    extra: list[tuple[RankSummary, RankRecompile]] = []
    for rank in ranks:
        own = mine[rank.identity.stream]
        if len(own) > fewest:
            new = [r for r in own if not {g.text for g in r.failed_guards} & known]
            extra += [(rank, r) for r in (new or own[fewest:])]
    return baseline, extra


def _rank_specific_recompiles(analysis: RankAnalysis) -> list[Divergence]:
    frames = list(dict.fromkeys(r.frame for rank in analysis.ranks for r in rank.recompiles))
    found = []
    for frame in frames:
        baseline, extra = _extra_recompiles(analysis.ranks, frame)
        if not extra:
            continue
        which = list({rank.identity.stream: rank for rank, _ in extra}.values())
        guards = [g.text for _, recompile in extra for g in recompile.failed_guards]
        title = (
            f"{names(which)} recompiled {_frame_text(frame)} where {names(baseline)} did not"
            + (f": {guards[0]}" if guards else "")
        )
        evidence = [
            f"{rank.label} {recompile.compile_id}: {guard.text}"
            for rank, recompile in extra
            for guard in recompile.failed_guards or []
        ] or [f"{rank.label} {recompile.compile_id}" for rank, recompile in extra]
        found.append(
            Divergence(
                "rank_specific_recompile",
                "warning",
                which,
                title,
                evidence[:MAX_EVIDENCE],
                frame=frame,
                recompiles=extra,
            )
        )
    return found


def _cache_imbalance(analysis: RankAnalysis) -> list[Divergence]:
    ranks = analysis.ranks
    misses = [rank.cache_misses for rank in ranks]
    if not any(rank.cache_hits or rank.cache_misses for rank in ranks) or min(misses) == max(
        misses
    ):
        return []
    most = [rank for rank in ranks if rank.cache_misses == max(misses)]
    least = [rank for rank in ranks if rank.cache_misses == min(misses)]
    title = (
        f"Compile-cache misses differ across ranks: {names(most)} missed {counted(max(misses), 'time')}, "
        f"{names(least)} {min(misses)}"
    )
    evidence = [
        f"{r.label}: {counted(r.cache_hits, 'hit')}, {counted(r.cache_misses, 'miss')}"
        for r in ranks
    ]
    return [Divergence("cache_imbalance", "warning", most, title, evidence[:MAX_EVIDENCE])]


def _graph_counts(analysis: RankAnalysis) -> list[Divergence]:
    ranks = analysis.ranks
    graphs = [rank.graphs for rank in ranks]
    if min(graphs) == max(graphs):
        return []
    most = [rank for rank in ranks if rank.graphs == max(graphs)]
    # More graphs from more compiles is the recompile's echo; the same compiles giving other
    # graphs means the ranks traced different code.
    same_compiles = len({rank.compiles for rank in ranks}) == 1
    title = f"Ranks produced different numbers of graphs: {max(graphs)} on {names(most)}, " + (
        f"{min(graphs)} on {names([r for r in ranks if r.graphs == min(graphs)])}"
    )
    evidence = [f"{r.label}: {r.graphs} graph(s) in {r.compiles} compile(s)" for r in ranks]
    severity: Severity = "warning" if same_compiles else "info"
    return [Divergence("graph_count", severity, most, title, evidence[:MAX_EVIDENCE])]


def _presence(
    analysis: RankAnalysis,
    kind: str,
    members: Callable[[RankSummary], set[Item]],
    what: str,
    describe: Callable[[Item], str],
) -> list[Divergence]:
    """Things (frames, break sites, failures) found on some ranks only."""
    ranks = analysis.ranks
    every = list(dict.fromkeys(item for rank in ranks for item in sorted(members(rank), key=str)))
    partial = [item for item in every if not all(item in members(rank) for rank in ranks)]
    if not partial:
        return []
    evidence = []
    concerned: dict[str, RankSummary] = {}
    for item in partial:
        having = [rank for rank in ranks if item in members(rank)]
        concerned.update((rank.identity.stream, rank) for rank in having)
        lacking = [rank for rank in ranks if item not in members(rank)]
        evidence.append(f"{describe(item)}: on {names(having)}, not on {names(lacking)}")
    title = f"{counted(len(partial), what)} on some ranks only"
    return [Divergence(kind, "warning", list(concerned.values()), title, evidence[:MAX_EVIDENCE])]


def _site_text(site: tuple[str | None, int | None]) -> str:
    return f"{site[0]}:{site[1]}"


def _frames_and_sites(analysis: RankAnalysis) -> list[Divergence]:
    return [
        *_presence(analysis, "frames", lambda r: set(r.frame_compiles), "frame", _frame_text),
        *_presence(
            analysis, "break_sites", lambda r: r.break_sites, "graph-break site", _site_text
        ),
        *_presence(
            analysis, "failures", lambda r: r.failure_frames, "compile failure(s)", _frame_text
        ),
    ]


def _identity_problems(
    identities: list[RankIdentity], by_stream: dict[str, RankSummary]
) -> list[Divergence]:
    found = []
    mismatched = [
        i
        for i in identities
        if (i.name_rank is not None and i.envelope_ranks and i.name_rank != i.envelope_ranks[0])
        or len(i.envelope_ranks) > 1
    ]
    if mismatched:
        evidence = [
            f"{i.path or i.stream}: file name says rank {i.name_rank}, records say rank "
            + ", ".join(map(str, i.envelope_ranks))
            for i in mismatched
        ]
        title = (
            f"{counted(len(mismatched), 'log')} whose file name and records disagree on the rank"
        )
        found.append(
            Divergence(
                "rank_name_mismatch",
                "warning",
                [by_stream[i.stream] for i in mismatched if i.stream in by_stream],
                title,
                evidence[:MAX_EVIDENCE],
            )
        )
    claims: dict[int, list[RankIdentity]] = {}
    for identity in identities:
        if identity.rank is not None:
            claims.setdefault(identity.rank, []).append(identity)
    for rank, claimants in claims.items():
        if len(claimants) > 1:
            title = f"rank {rank} has {len(claimants)} logs; each is compared as a rank of its own"
            evidence = [c.path or c.stream for c in claimants]
            concerned = [by_stream[c.stream] for c in claimants if c.stream in by_stream]
            found.append(Divergence("duplicate_rank", "warning", concerned, title, evidence))
    return found


def find_divergences(analysis: RankAnalysis, identities: list[RankIdentity]) -> list[Divergence]:
    """Every divergence between the ranks, in a fixed order of kinds."""
    by_stream = {rank.identity.stream: rank for rank in analysis.ranks}
    return [
        *_identity_problems(identities, by_stream),
        *_compile_skew(analysis),
        *_rank_specific_recompiles(analysis),
        *_cache_imbalance(analysis),
        *_graph_counts(analysis),
        *_frames_and_sites(analysis),
    ]


def cross_rank_analysis(
    run: Run,
    ledger: Ledger,
    sites: list[GraphBreakSite],
    collective_timeout_s: float = DEFAULT_COLLECTIVE_TIMEOUT_S,
) -> RankAnalysis | None:
    """Per-rank summaries and their divergences; None unless more than one rank is seen (in
    the envelopes or the file names)."""
    identities = rank_identities(run)
    seen = {rank for i in identities for rank in (i.rank, i.name_rank, *i.envelope_ranks)}
    if len(seen - {None}) < 2:
        return None
    summaries = rank_summaries(identities, ledger, sites)
    analysis = RankAnalysis(
        ranks=summaries,
        collective_timeout_s=collective_timeout_s,
        slowest=max(summaries, key=lambda s: s.compile_time_s),
        fastest=min(summaries, key=lambda s: s.compile_time_s),
    )
    analysis.divergences = find_divergences(analysis, identities)
    return analysis

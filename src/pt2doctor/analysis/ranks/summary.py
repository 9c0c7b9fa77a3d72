"""Per-rank summaries of a multi-rank run: which log is which rank, and what each compiled.

Pure functions of the Run, its ledger and its break sites; ``analysis.ranks`` compares them.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from pt2doctor.analysis.breaks.sites import GraphBreakSite
from pt2doctor.analysis.recompiles.guards import FailedGuard
from pt2doctor.analysis.recompiles.ledger import CompileEntry, Ledger
from pt2doctor.trace.types import Run, StreamInfo

FrameKey = tuple[str | None, str | None, int | None]
"""A frame across ranks: (function, file, first line). Frame ids differ between ranks as soon
as one rank compiles a frame the others do not."""
SiteKey = tuple[str | None, int | None]


@dataclass(slots=True)
class RankRecompile:
    """A recompile on one rank, with the guards that failed."""

    compile_id: str
    frame: FrameKey
    failed_guards: list[FailedGuard]


@dataclass(slots=True)
class RankIdentity:
    """Which rank one log belongs to: the envelope's rank, else the file name's."""

    stream: str
    path: str | None
    rank: int | None
    name_rank: int | None
    envelope_ranks: list[int]
    """Distinct ranks the envelopes give, most frequent first (normally one, or none)."""
    label: str = ""
    """``rank N``; ``rank N (file)`` when several logs claim rank N; the stream for no rank."""


@dataclass(slots=True)
class RankSummary:
    """What one rank compiled."""

    identity: RankIdentity
    compiles: int = 0
    compile_time_s: float = 0.0
    graphs: int = 0
    failures: int = 0
    cache_hits: int = 0
    cache_misses: int = 0
    recompiles: list[RankRecompile] = field(default_factory=list)
    frame_compiles: dict[FrameKey, int] = field(default_factory=dict)
    """Compiles per frame (resume functions included)."""
    break_sites: set[SiteKey] = field(default_factory=set)
    failure_frames: set[FrameKey] = field(default_factory=set)

    @property
    def label(self) -> str:
        return self.identity.label


def _identity(info: StreamInfo) -> RankIdentity:
    envelope = sorted(info.envelope_ranks, key=lambda r: (-info.envelope_ranks[r], r))
    rank = envelope[0] if envelope else info.name_rank
    return RankIdentity(info.stream, info.path, rank, info.name_rank, envelope)


def _stream_infos(run: Run) -> list[StreamInfo]:
    """The run's logs; a Run built by hand (no stream_info) gives its streams and their ranks."""
    if run.stream_info:
        return run.stream_info
    ranks: dict[str, dict[int, int]] = {}
    for record in run.compiles:
        if record.rank is not None:
            counts = ranks.setdefault(record.stream, {})
            counts[record.rank] = counts.get(record.rank, 0) + 1
    return [StreamInfo(stream, "", None, ranks.get(stream, {})) for stream in run.streams]


def rank_identities(run: Run) -> list[RankIdentity]:
    """The rank of every log, labelled; several logs may claim one rank (see ``label``)."""
    identities = [_identity(info) for info in _stream_infos(run)]
    claims = Counter(identity.rank for identity in identities if identity.rank is not None)
    for identity in identities:
        if identity.rank is None:
            identity.label = identity.stream
        elif claims[identity.rank] > 1:
            name = (identity.path or identity.stream).rsplit("/", 1)[-1]
            identity.label = f"rank {identity.rank} ({name})"
        else:
            identity.label = f"rank {identity.rank}"
    return identities


def frame_key(entry: CompileEntry) -> FrameKey:
    return (entry.function, entry.record.file, entry.record.line)


def _add_compile(summary: RankSummary, entry: CompileEntry) -> None:
    record = entry.record
    key = frame_key(entry)
    summary.compiles += 1
    summary.compile_time_s += record.compile_time_s or 0.0
    summary.graphs += record.graph_count
    summary.frame_compiles[key] = summary.frame_compiles.get(key, 0) + 1
    summary.cache_hits += sum(1 for outcome in record.cache.values() if outcome == "hit")
    summary.cache_misses += sum(1 for outcome in record.cache.values() if outcome == "miss")
    if record.fail_type is not None:
        summary.failures += 1
        summary.failure_frames.add(key)
    if entry.cause == "recompile":
        summary.recompiles.append(RankRecompile(entry.compile_id, key, entry.failed_guards))


def rank_summaries(
    identities: list[RankIdentity], ledger: Ledger, sites: list[GraphBreakSite]
) -> list[RankSummary]:
    """Per log: compiles, compile time, recompiles and their failed guards, graphs, cache hits
    and misses, break sites, failures."""
    summaries = {identity.stream: RankSummary(identity) for identity in identities}
    for entry in ledger.compiles:
        summary = summaries.get(entry.record.stream)
        if summary is not None:
            _add_compile(summary, entry)
    for site in sites:
        for stream in site.streams:
            if stream in summaries:
                summaries[stream].break_sites.add((site.site.file, site.site.line))
    return sorted(
        summaries.values(),
        key=lambda s: (s.identity.rank is None, s.identity.rank or 0, s.identity.stream),
    )

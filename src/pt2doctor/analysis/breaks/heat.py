"""Runtime heat and the recompile timeline, from what ``pt2doctor run``'s probes measured.

Pure functions: they read the ledger, the break sites, the probe data and the manifest, and
fill in ``hits`` per break site and calls/time per compile, ranking breaks hottest first.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pt2doctor.analysis.breaks.sites import GraphBreakSite, site_advice
from pt2doctor.analysis.recompiles.ledger import CompileEntry, Ledger
from pt2doctor.trace.types import Manifest, ProbeData


@dataclass(slots=True)
class CompileHeat:
    """Runtime facts about one compile."""

    calls: int | None = None
    seconds_in_graph: float | None = None
    t_s: float | None = None
    """Seconds after the program started when the compile began."""
    frame_calls: int | None = None
    """Calls its frame had made into compiled graphs when it compiled."""
    after_warmup: bool = False
    guard_check_us: float | None = None
    """One warm check of this variant's guards (the probes time it when Dynamo builds them)."""
    spread: dict[int, int] = field(default_factory=dict)
    """Its calls by duration bucket (trace/spread.py): the median and MAD per call."""


@dataclass(slots=True)
class Heat:
    compiles: dict[tuple[str, str], CompileHeat] = field(default_factory=dict)
    wall_s: float | None = None
    in_compiled_s: float | None = None
    breaks_measured: bool = False


def _resume_keys(
    site: GraphBreakSite, measured: dict[tuple[str, str, int], int]
) -> list[tuple[str, str, int]]:
    """The measured resume points that count this site's executions.

    Dynamo resumes right after the break, in the broken function itself
    (``torch_dynamo_resume_in_<function>_at_<line>``): that count is exact. A break inside an
    inlined helper also makes its caller break at the call and resume after it, once per call
    site; counting those too doubled a helper reached from three call sites. So the callers'
    resume points (every user frame above the site) count only when the site has none of its own
    (the helper was not compiled as a frame of its own), and then only the innermost one: each
    execution resumes every frame on the stack once (a compiled ``optimizer.step()`` resumes
    both the user's function and torch's ``wrapper`` per step), so the outer ones would count
    it again."""
    own = (site.site.file, site.site.function, site.site.line)
    if own in measured:
        return [own]
    for frame in reversed(site.user_stack):
        caller = (frame.file, frame.function, frame.line)
        if caller in measured:
            return [caller]
    return []


def _lower_bound(count: int | None, probes: ProbeData, measured: bool) -> int | None:
    """Without a final snapshot (a crash) counts are lower bounds, and a 0 says nothing."""
    if not measured or count is None:
        return None
    return count if count or probes.complete else None


def break_heat(sites: list[GraphBreakSite], probes: ProbeData) -> None:
    """Fill ``hits`` of each site from resume-function calls (and its advice, which states
    them), then rank hottest first."""
    claimed: set[tuple[str, str, int]] = set()
    if probes.snapshot_t is None:
        return  # the program died before the first snapshot: heat unknown, not zero
    for site in sites:
        matching = [key for key in _resume_keys(site, probes.break_hits) if key not in claimed]
        if not matching:
            # No resume function was installed for it: the whole frame runs eagerly (skipped),
            # or the break is in a `return` (Dynamo returns the call's value with no resume
            # function). Its executions cannot be counted: unknown, not 0.
            continue
        claimed.update(matching)
        site.hits = _lower_bound(sum(probes.break_hits[key] for key in matching), probes, True)
        # Hot: runs more than once. From a lower bound, only "more than once" is certain.
        if site.hits is not None and (site.hits > 1 or probes.complete):
            site.hot = site.hits > 1
        site.advice = site_advice(site)  # its facts now include the heat
    sites.sort(key=lambda s: -(s.hits or 0))


def _start_time(entry: CompileEntry, probes: ProbeData, run_start: float | None) -> float | None:
    # compilation_metrics gives the start; the probe saw the graph only once it was compiled.
    compiled = probes.compiled.get(entry.compile_id, {})
    wall = entry.record.start_time or compiled.get("wall_time")
    if wall is None or run_start is None:
        return None
    return max(float(wall) - run_start, 0.0)


def compile_heat(ledger: Ledger, probes: ProbeData, manifest: Manifest) -> Heat:
    """Calls, time in graph and the warmup verdict of every compile."""
    run_start = manifest.get("start_time")
    warmup_calls = manifest.get("warmup_calls")
    steady_after = manifest.get("steady_after_s")
    heat = Heat(breaks_measured=bool(probes.hooks.get("probes", {}).get("breaks")))
    for entry in ledger.compiles:
        # Compile ids repeat across ranks: read the probes of the rank that compiled this one.
        own = probes.for_rank(entry.record.rank)
        compiled = own.compiled.get(entry.compile_id)
        measured = own.snapshot_t is not None
        item = CompileHeat(
            calls=_lower_bound(own.graph_calls.get(entry.compile_id), own, measured),
            seconds_in_graph=own.graph_seconds.get(entry.compile_id) if measured else None,
            t_s=_start_time(entry, own, run_start),
            frame_calls=None if compiled is None else compiled.get("frame_calls"),
            guard_check_us=own.guard_check_us.get(entry.compile_id),
            spread=own.graph_spread.get(entry.compile_id, {}) if measured else {},
        )
        by_calls = warmup_calls is not None and (item.frame_calls or 0) >= warmup_calls
        by_time = steady_after is not None and item.t_s is not None and item.t_s >= steady_after
        item.after_warmup = by_calls or by_time
        heat.compiles[(entry.record.stream, entry.compile_id)] = item
    end, start = manifest.get("end_time"), manifest.get("start_time")
    if isinstance(end, (int, float)) and isinstance(start, (int, float)):
        heat.wall_s = end - start
    if probes.graph_seconds:
        heat.in_compiled_s = sum(probes.graph_seconds.values())
    return heat

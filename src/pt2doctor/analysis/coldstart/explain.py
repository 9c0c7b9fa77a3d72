"""Cold start explained: where compile time went, which caches missed, what a warm start costs.

Pure functions of the ledger (compiles with their timers, counters and cache lookups) and, for
a captured run, its wall time. The phases split each compile's nested timers into disjoint
parts; the warm-start estimate keeps the parts a cache hit never skips.

What a hit skips and what it does not (torch 2.13, CPU, measured on tests/programs/run/
run_cold_start.py with a private TORCHINDUCTOR_CACHE_DIR): an FX graph + AOTAutograd hit skips
Inductor's lowering, codegen and the C++/Triton build (72.7 s -> 5.8 s for the first graph, 5.6 s
-> 0.17 s for the second); it never skips Dynamo's bytecode tracing and guard building, nor
a once-per-process Inductor start-up that the warm run pays on its first cache load (4.7 s
here, 0.9 s in tlparse's multi_rank_logs) and the cold run pays in its first compile's
AOTAutograd phase outside Inductor (4.7 s here: pattern-matcher and runtime initialisation).
Later loads cost milliseconds.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from pt2doctor.analysis.coldstart.caches import worst_events
from pt2doctor.analysis.recompiles.frame_names import display_name
from pt2doctor.analysis.recompiles.ledger import CompileEntry, Ledger, compile_phases
from pt2doctor.analysis.recompiles.variant_values import guard_values
from pt2doctor.analysis.text import counted
from pt2doctor.trace.patterns import lazy_compile

# Phases in the order a compile runs them, with the words the report uses.
PHASE_LABELS = {
    "dynamo_tracing": "Dynamo tracing",
    "aot_autograd": "AOTAutograd",
    "backend": "backend",
    "inductor_lowering": "Inductor lowering",
    "autotuning": "autotuning",
    "inductor_codegen": "Inductor codegen",
    "cpp_triton_build": "C++/Triton build",
    "cache_load": "cache load",
}
# What a warm start costs per graph after the process's first cache load (torch 2.13: 5-20 ms).
LOAD_PER_GRAPH_S = 0.02
# A fresh process's first cache hit loads Inductor itself (its code cache, the compiled module):
# tests/programs/run/run_cold_start.py warm on 2 CPU cores, torch 2.13, measured 1.75 s of
# cache_load plus 0.27 s of AOTAutograd and build around it; the cold run's first AOTAutograd
# phase (0.5 s), used before, said far less. A modeled constant, machine-dependent: the docs say so.
FIRST_LOAD_S = 1.5
INDUCTOR_CACHES = ("fx_graph", "aotautograd")
ADVICE_PERSISTENT_DIR = (
    "Keep TORCHINDUCTOR_CACHE_DIR on persistent storage (the default, "
    "/tmp/torchinductor_<user>, is empty in a fresh container and after a reboot): the next "
    "run with the same cache should compile in about {warm:.1f} s instead of {cold:.1f} s."
)
ADVICE_KEYS_CHANGED = (
    "The cache dir held compiled graphs, and none had this run's keys: another program (or "
    "another torch) filled it, or something in the key changes from start to start. A Python "
    "float the graph bakes in is named in the findings when its value differs from the one "
    "the previous `pt2doctor run` of this program with this cache dir baked; otherwise "
    "`pt2doctor diff` of the run that filled the cache against this one names the key "
    "components that differ."
)
ADVICE_PROFILED_KEYS = (
    "This run was profiled (`run --profile`): it compiles with provenance tracking and kernel "
    "profiling on, which are part of Inductor's cache key, so entries an unprofiled run "
    "wrote never match it (and its own do not serve an unprofiled run). Another profiled run "
    "with this cache dir hits; judge the cold start of the program as served from an "
    "unprofiled `pt2doctor run`. If a profiled run filled the dir, something else in the key "
    "changed: `pt2doctor diff` of the two runs names it."
)
ADVICE_MEGA_CACHE = (
    "For fresh machines (CI, autoscaled servers), save the caches after warmup with "
    "torch.compiler.save_cache_artifacts() and load them before the first compile with "
    "torch.compiler.load_cache_artifacts()."
)
ADVICE_VARIANTS = (
    "{recompiles} of the {compiles} compiles are extra variants of {frames} "
    "({seconds:.1f} s): every variant is one more cache entry to build and load; fewer variants "
    "(see the recompile findings) cut both cold and warm start."
)
ADVICE_BYPASS = "{count} bypassed the cache ({reason}): those graphs compile fully on every start."
ADVICE_WARM = (
    "The caches hit: the {seconds:.1f} s left is Dynamo tracing, guard building and cache "
    "loading, which no cache skips; fewer variants or compiling a repeated block once "
    "(regional compilation) is what cuts it further."
)


@dataclass(slots=True)
class CacheState:
    """How the run's Inductor cache lookups went: counts per status, and the verdict word."""

    counts: Counter[str]
    state: str
    """``cold`` (every lookup missed), ``warm`` (every lookup hit), ``partial``,
    ``bypassed`` (no lookup used the cache) or ``no_cache`` (a backend without these caches)."""


def cold_start_phases(entry: CompileEntry) -> dict[str, float]:
    """A compile's disjoint phases (seconds): the ledger's split, with the cache load (an
    AOTAutograd hit loading Inductor's output) and autotuning (``compile_time_autotune_time_us``)
    carved out of the phase they happen in."""
    record = entry.record
    phases = compile_phases(record.timings)
    load = record.timings.get("cache_load")
    if load and ("backend" in phases or "aot_autograd" in phases):
        host = "aot_autograd" if "aot_autograd" in phases else "backend"
        phases["cache_load"] = min(load, phases[host])
        phases["aot_autograd"] = phases.pop(host) - phases["cache_load"]
    _nest_build(phases)
    autotune = record.counters.get("compile_time_autotune_time_us", 0.0) / 1e6
    if autotune and "inductor_lowering" in phases:
        phases["autotuning"] = min(autotune, phases["inductor_lowering"])
        phases["inductor_lowering"] -= phases["autotuning"]
    order = list(PHASE_LABELS)
    return {
        key: round(phases[key], 6)
        for key in sorted(phases, key=lambda k: order.index(k) if k in order else len(order))
    }


def phases_in_order(phases: dict[str, float]) -> list[tuple[str, float]]:
    """``(phase, seconds)`` in the order a compile runs them (report.json sorts keys)."""
    order = list(PHASE_LABELS)
    return sorted(phases.items(), key=lambda item: (item[0] not in order, order.index(item[0])
                                                    if item[0] in order else 0, item[0]))  # fmt: skip


def _nest_build(phases: dict[str, float]) -> None:
    """Without codegen (a cache hit) a kernel build happens inside the load or the backend:
    take it out of them rather than count it twice."""
    build = phases.get("cpp_triton_build", 0.0)
    if not build or "inductor_codegen" in phases:
        return
    for host in ("cache_load", "aot_autograd", "backend"):
        taken = min(build, phases.get(host, 0.0))
        if taken:
            phases[host] -= taken
            build -= taken
    phases["cpp_triton_build"] -= build


def cache_state(ledger: Ledger) -> CacheState:
    """Counts of the Inductor caches' lookups (FX graph, AOTAutograd), and the verdict word."""
    counts: Counter[str] = Counter()
    for entry in ledger.compiles:
        for cache, event in worst_events(entry.record).items():
            if cache in INDUCTOR_CACHES:
                counts[event.status] += 1
        for cache, status in entry.record.cache.items():
            if cache in INDUCTOR_CACHES and not entry.record.cache_events:
                counts[status] += 1
    if not counts:
        return CacheState(counts, "no_cache")
    if counts["miss"] and not counts["hit"]:
        return CacheState(counts, "cold" if not counts["bypass"] else "partial")
    if counts["hit"] and not counts["miss"] and not counts["bypass"]:
        return CacheState(counts, "warm")
    if counts["bypass"] and not counts["hit"] and not counts["miss"]:
        return CacheState(counts, "bypassed")
    return CacheState(counts, "partial")


def _all_hit(entry: CompileEntry) -> bool:
    statuses = [e.status for c, e in worst_events(entry.record).items() if c in INDUCTOR_CACHES]
    return bool(statuses) and all(status == "hit" for status in statuses)


def _uses_inductor_cache(entry: CompileEntry) -> bool:
    return any(cache in INDUCTOR_CACHES for cache in entry.record.cache) or any(
        event.cache in INDUCTOR_CACHES for event in entry.record.cache_events
    )


def warm_estimate(ledger: Ledger) -> float:
    """Seconds of compiling the next run with the same cache should cost.

    A compile that already hit costs what it cost. One that missed (or bypassed: it will again,
    but its bypass is counted as is) keeps the phases a hit never skips: Dynamo tracing and
    guard building, plus the load of its entry. The process's first load carries Inductor's
    start-up (``FIRST_LOAD_S``, or the first compile's AOTAutograd phase when that is longer);
    later loads cost ``LOAD_PER_GRAPH_S``."""
    total, started = 0.0, any(_all_hit(entry) for entry in ledger.compiles)
    for entry in ledger.compiles:
        phases = cold_start_phases(entry)
        seconds = entry.record.compile_time_s or sum(phases.values())
        cached = _uses_inductor_cache(entry)
        if _all_hit(entry) or not cached or _bypassed(entry):
            total += seconds
            continue
        total += phases.get("dynamo_tracing", 0.0)
        if not started:
            total += max(FIRST_LOAD_S, phases.get("aot_autograd", 0.0))
            started = True
        else:
            total += LOAD_PER_GRAPH_S
    return total


def _bypassed(entry: CompileEntry) -> bool:
    return any(
        event.status == "bypass"
        for cache, event in worst_events(entry.record).items()
        if cache in INDUCTOR_CACHES
    )


def _frame_rows(ledger: Ledger) -> list[dict[str, Any]]:
    """Per frame: its compiles (variants and failed attempts), compile time and phases."""
    rows = []
    for frame in ledger.frames:
        phases: Counter[str] = Counter()
        misses = 0
        for entry in frame.compiles:
            phases.update(cold_start_phases(entry))
            misses += sum(
                1 for c, e in worst_events(entry.record).items()
                if c in INDUCTOR_CACHES and e.status == "miss"
            )  # fmt: skip
        seconds = sum(entry.record.compile_time_s or 0.0 for entry in frame.compiles)
        rows.append(
            {
                "function": frame.function,
                "display_name": display_name(frame),
                "file": frame.file,
                "line": frame.line,
                "stream": frame.stream,
                "compiles": len(frame.compiles),
                "variants": frame.variants,
                "compile_s": round(seconds, 6),
                "cache_misses": misses,
                "phases": {key: round(value, 6) for key, value in phases.items()},
            }
        )
    return sorted(rows, key=lambda row: -row["compile_s"])


def _bypass_reasons(ledger: Ledger) -> list[str]:
    reasons = [
        event.bypass_reason.strip().splitlines()[0]
        for entry in ledger.compiles
        for event in worst_events(entry.record).values()
        if event.status == "bypass" and event.bypass_reason and event.bypass_reason.strip()
    ]
    return [reason for reason, _ in Counter(reasons).most_common()]


def _state_phrase(
    state: CacheState,
    reasons: list[str],
    inductor: bool,
    at_start: dict[str, Any] | None = None,
    profiled: bool = False,
    kernels: bool = False,
) -> str:
    counts, lookups = state.counts, sum(state.counts.values())
    if state.state == "cold":
        held = None if at_start is None else at_start.get("fx_graph")
        if held is None:
            return "cold: every cache missed (an empty or new cache dir, or keys that changed)"
        if not held:
            return "cold: every cache missed (the cache dir was empty at start)"
        if profiled:
            return (
                f"cold: every cache missed, though the cache dir held "
                f"{counted(int(held), 'compiled graph')} at start: a profiled run's keys hold "
                "its provenance and kernel-profiling settings, which unprofiled runs' do not"
            )
        return (
            f"cold: every cache missed, though the cache dir held "
            f"{counted(int(held), 'compiled graph')} at start: their keys differ from this "
            "run's (the graph, a config value or torch changed)"
        )
    if state.state == "warm":
        return "warm: every cache hit"
    if state.state == "bypassed":
        return (
            f"bypassed: no graph used the cache ({reasons[0] if reasons else 'no reason logged'})"
        )
    if state.state == "no_cache" and inductor and kernels:
        return ("no cache lookup: `run --kernels` turns the FX graph and AOTAutograd caches off, "
                "so every graph compiles afresh (a hit would replay another compile's kernel "
                "lines)")  # fmt: skip
    if state.state == "no_cache" and inductor:
        return "no cache lookup logged (Inductor's caches disabled, or not logged by this torch)"
    if state.state == "no_cache":
        return "no compile cache in use (a backend without Inductor's caches)"
    bypassed = f", {counts['bypass']} bypassed" if counts["bypass"] else ""
    return f"partial: {counts['miss']} of {lookups} cache lookups missed{bypassed}"


def _verdict(state_phrase: str, compile_s: float, wall_s: float | None,
             phases: dict[str, float]) -> str:  # fmt: skip
    where = f"{compile_s:.1f} s compiling"
    if wall_s:
        total = f"{wall_s:.0f}" if wall_s >= 10 else f"{wall_s:.1f}"
        where = f"{compile_s:.1f} s of {total} s compiling"
    if phases and compile_s > 0:
        top = max(phases, key=lambda key: phases[key])
        where += f", {100 * phases[top] / compile_s:.0f}% {PHASE_LABELS.get(top, top)}"
    return f"{state_phrase}; {where}"


def _advice(ledger: Ledger, state: CacheState, cold_s: float, warm_s: float,
            reasons: list[str], at_start: dict[str, Any] | None = None,
            profiled: bool = False) -> list[str]:  # fmt: skip
    advice: list[str] = []
    if state.state == "cold" and (at_start or {}).get("fx_graph"):
        advice.append(ADVICE_PROFILED_KEYS if profiled else ADVICE_KEYS_CHANGED)
    elif state.state in ("cold", "partial"):
        advice += [ADVICE_PERSISTENT_DIR.format(warm=warm_s, cold=cold_s), ADVICE_MEGA_CACHE]
    if state.counts["bypass"]:
        reason = reasons[0] if reasons else "no reason logged"
        bypassed = counted(state.counts["bypass"], "cache lookup")
        advice.append(ADVICE_BYPASS.format(count=bypassed, reason=reason))
    extra = [entry for frame in ledger.frames for entry in frame.compiles[1:]]
    if extra:
        frames = sum(1 for frame in ledger.frames if len(frame.compiles) > 1)
        seconds = sum(entry.record.compile_time_s or 0.0 for entry in extra)
        advice.append(ADVICE_VARIANTS.format(recompiles=len(extra), frames=counted(frames, "frame"),
                                             compiles=len(ledger.compiles), seconds=seconds))  # fmt: skip
    if state.state == "warm":
        advice.append(ADVICE_WARM.format(seconds=cold_s))
    return advice


_FLOAT = lazy_compile(r"-?(?:\d+\.\d*(?:e[-+]?\d+)?|\d+e[-+]?\d+|inf|nan)")


def baked_constants(ledger: Ledger, missed_only: bool = False) -> dict[str, str]:
    """``{"frame | expression": value}``: each Python float Dynamo specialized with an equality
    guard (recompiles/variant_values.py guard_values), so a constant of the graph and of its
    cache key; ``missed_only``: of compiles whose FX graph lookup missed. ``pt2doctor run``
    remembers them in the cache dir for the next start (capture/baked.py)."""
    found: dict[str, str] = {}
    for frame in ledger.frames:
        for entry in frame.compiles:
            event = worst_events(entry.record).get("fx_graph")
            if missed_only and (event is None or event.status != "miss"):
                continue
            for expr, value in guard_values(entry.record).items():
                if _FLOAT.fullmatch(value):
                    found.setdefault(f"{display_name(frame)}{_BAKED_SEP}{expr.text}", value)
    return found


_BAKED_SEP = " | "


def baked_key_parts(key: str) -> tuple[str, str]:
    """(frame, expression) of a :func:`baked_constants` key."""
    frame, _, expression = key.rpartition(_BAKED_SEP)
    return frame, expression


def cold_start_section(
    ledger: Ledger,
    wall_s: float | None,
    at_start: dict[str, Any] | None = None,
    profiled: bool = False,
    kernels: bool = False,
) -> dict[str, Any]:
    """The report's ``cold_start`` object (docs/report-schema.md); ``at_start``: the cache
    dir's entries before the first compile (probes), when the run recorded them; ``profiled``:
    the run compiled with ``--profile``'s settings, which are part of the cache key;
    ``kernels``: ``run --kernels`` turned the compile caches off."""
    compile_s = sum(entry.record.compile_time_s or 0.0 for entry in ledger.compiles)
    phases: Counter[str] = Counter()
    for entry in ledger.compiles:
        phases.update(cold_start_phases(entry))
    totals: dict[str, float] = {
        key: round(float(phases[key]), 6) for key in PHASE_LABELS if phases.get(key)
    }
    state = cache_state(ledger)
    reasons = _bypass_reasons(ledger)
    warm_s = warm_estimate(ledger)
    return {
        "compile_s": round(compile_s, 6),
        "wall_s": None if wall_s is None else round(wall_s, 6),
        "share": round(compile_s / wall_s, 4) if wall_s else None,
        "state": state.state,
        "lookups": dict(sorted(state.counts.items())),
        "bypass_reasons": reasons[:5],
        "phases": totals,
        "frames": _frame_rows(ledger),
        "verdict": _verdict(
            _state_phrase(
                state,
                reasons,
                any(key.startswith("inductor") for key in totals),
                at_start,
                profiled,
                kernels,
            ),
            compile_s,
            wall_s,
            totals,
        ),
        "warm_estimate_s": round(warm_s, 6),
        "advice": _advice(ledger, state, compile_s, warm_s, reasons, at_start, profiled),
        "cache_dir_at_start": at_start,
        "baked_constants": baked_constants(ledger),
    }

"""Cold start, analysed in one pass before the report is assembled: each compile's phases
and cache lookups (with the key components that are its own), the run's ``cold_start``
section, and, across ranks, why a rank's lookups missed where another's hit."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pt2doctor.analysis.coldstart.cache_diff import rank_miss_causes
from pt2doctor.analysis.coldstart.caches import (
    compile_caches,
    own_components,
    shared_components,
    worst_events,
)
from pt2doctor.analysis.coldstart.explain import (
    INDUCTOR_CACHES,
    baked_constants,
    baked_key_parts,
    cache_state,
    cold_start_phases,
    cold_start_section,
)
from pt2doctor.analysis.findings.model import PROGRAM, Finding, Subject
from pt2doctor.analysis.recompiles.ledger import Ledger
from pt2doctor.analysis.text import counted, id_ranges
from pt2doctor.trace.types import Run

if TYPE_CHECKING:
    from pt2doctor.analysis.breaks.heat import Heat


@dataclass(frozen=True, slots=True)
class ColdStart:
    """What the cold-start analysis found; ``phases`` and ``caches`` hold one entry per
    compile, in ledger order."""

    phases: list[dict[str, float]]
    caches: list[dict[str, dict[str, Any]]]
    section: dict[str, Any]
    """``report["cold_start"]`` (docs/report-schema.md)."""
    miss_causes: list[dict[str, Any]] = field(default_factory=list)
    """Across ranks: each graph a rank missed that the rank with the fewest misses looked
    up too, with the differing key components (``section["rank_miss_causes"]``)."""
    findings: list[Finding] = field(default_factory=list)
    """The cold-start findings (``COLD_START_FINDINGS``, each given the run's data)."""


def cold_start(run: Run, ledger: Ledger, heat: Heat | None) -> ColdStart:
    shared = shared_components(run)
    phases, caches, rows = [], [], []
    for entry in ledger.compiles:
        phases.append(cold_start_phases(entry))
        found = compile_caches(entry.record)
        own = own_components(entry.record, shared, run.cache_component_values)
        for cache, components in own.items():
            found[cache]["components"] = components
        caches.append(found)
        record = entry.record
        rows.append({"stream": record.stream, "function": entry.function, "file": record.file,
                     "line": record.line, "caches": found})  # fmt: skip
    at_start = None if run.probes is None else run.probes.cache_dir_at_start
    wall_s = None if heat is None else heat.wall_s
    kernels = bool((run.manifest or {}).get("kernels"))
    section: dict[str, Any] = cold_start_section(ledger, wall_s, at_start,
                                                 run.profile is not None, kernels)  # fmt: skip
    section["key_components"] = shared
    causes = rank_miss_causes(rows, shared)
    section["rank_miss_causes"] = causes
    findings = [found for finder in COLD_START_FINDINGS for found in finder(run, ledger)]
    return ColdStart(phases, caches, section, causes, findings)


# Bypass reasons Inductor gives (torch/_inductor/codecache.py _check_custom_passes) -> the
# config its custom pass was set on.
_PASS_REASONS = {
    "Unsupported pre grad custom pass": ("pre_grad_custom_pass",),
    "Unsupported post grad custom pass": (
        "post_grad_custom_pre_pass", "post_grad_custom_post_pass",
    ),
    "Unsupported joint custom pass": ("joint_custom_pre_pass", "joint_custom_post_pass"),
}  # fmt: skip
PASS_FIX = (
    "Inductor cannot key its cache on a plain function: make `{function}` a "
    "`torch._inductor.custom_graph_pass.CustomGraphPass` subclass (its body in `__call__(self, "
    "graph)`) whose `uuid()` returns a stable hash of its code, "
    "`torch._inductor.custom_graph_pass.get_hash_for_files((__file__,))`, and set an instance "
    "as `torch._inductor.config.{hook}`. The cache then keys on the pass and a warm start "
    "reuses the compiled graphs (an edit to the file is a new uuid, so a stale graph is never "
    "reused). A pass runs only when its graph compiles: on a cache hit it does not run, so "
    "what it prints or records happens on a cold start only."
)
OTHER_BYPASS_FIX = {
    "Skipping graph with frozen constants": (
        "`torch._inductor.config.freezing = True` bakes the parameters into the graph as "
        "constants, which the cache cannot key: every start compiles afresh. Keep freezing "
        "where the speedup is worth the compile (a long-lived inference server); turn it off "
        "where cold start matters."
    ),
    "FX graph cache is not enabled": (
        "The FX graph cache is off (TORCHINDUCTOR_FX_GRAPH_CACHE=0 or "
        "torch._inductor.config.fx_graph_cache = False), so AOTAutograd's cache is bypassed "
        "too: turn it back on to reuse compiled graphs across starts."
    ),
}
_NO_FX_GRAPH_CACHE = frozenset({"FX graph cache is not enabled"})
GENERIC_BYPASS_FIX = (
    "Inductor names the reason: until it is removed, these graphs compile fully on every "
    "start, whatever the cache dir holds."
)


def _bypasses(ledger: Ledger) -> dict[str, tuple[list[str], bool]]:
    """Bypass reason (its first line) -> the compiles whose FX graph or AOTAutograd cache
    lookup it bypassed, in order, and whether an FX graph lookup was among them (then Inductor
    compiles afresh; AOTAutograd's alone re-runs only tracing and partitioning)."""
    found: dict[str, tuple[list[str], bool]] = {}
    for entry in ledger.compiles:
        for cache, event in worst_events(entry.record).items():
            reason = (event.bypass_reason or "").strip().splitlines()[:1]
            if cache not in INDUCTOR_CACHES or event.status != "bypass" or not reason:
                continue
            text = reason[0].strip().rstrip(".")
            ids, fx_graph = found.get(text, ([], False))
            if entry.compile_id not in ids:
                ids.append(entry.compile_id)
            found[text] = (ids, fx_graph or cache == "fx_graph")
    return found


def _hook(run: Run, reason: str) -> dict[str, Any] | None:
    """The pass hook the program set (the probes' ``compiler_hooks``) that ``reason`` is about."""
    hooks = [] if run.probes is None else run.probes.environment.get("compiler_hooks") or []
    wanted = _PASS_REASONS.get(reason, ())
    return next((h for h in hooks if isinstance(h, dict) and h.get("hook") in wanted), None)


def cache_bypass_findings(run: Run, ledger: Ledger) -> list[Finding]:
    """``cache_bypass``: a compile Inductor's FX graph cache (or AOTAutograd's) refused to
    cache, one finding per reason, with the fix for that reason and the user's line that set
    the pass where the run recorded it. A bypass costs every start the whole compile."""
    findings = []
    seconds = {entry.compile_id: entry.record.compile_time_s or 0.0 for entry in ledger.compiles}
    builds = {entry.compile_id: cold_start_phases(entry).get("cpp_triton_build", 0.0)
              for entry in ledger.compiles}  # fmt: skip
    for reason, (ids, fx_graph) in _bypasses(ledger).items():
        hook = _hook(run, reason)
        fx_graph = fx_graph or reason in _NO_FX_GRAPH_CACHE  # no FX graph lookup was made at all
        paid = sum(seconds[cid] for cid in ids)
        # The C++/Triton build of the generated code is kept by Inductor's own code cache,
        # bypass or not: a later start pays the rest (11.4 s here, 2.7 s a later start).
        built = sum(builds.get(cid, 0.0) for cid in ids)
        again = max(paid - built, 0.0)
        cost = (
            f": {paid:.1f} s compiling this start, up to {again:.1f} s of it again at every "
            f"start ({built:.1f} s of C++/Triton build is kept by Inductor's code cache)"
            if paid >= 0.05 and built >= 0.05
            else f": {paid:.1f} s compiling, paid again on every start"
            if paid >= 0.05
            else ""
        )
        subject, evidence = PROGRAM, [f"{counted(len(ids), 'compile')} ({id_ranges(ids)}){cost}"]
        if reason in _PASS_REASONS:
            name = (hook or {}).get("function") or "the pass"
            setting = (hook or {}).get("hook") or _PASS_REASONS[reason][-1]
            advice = PASS_FIX.format(function=name, hook=setting)
            if hook and hook.get("file"):
                evidence.insert(0, f"torch._inductor.config.{setting} = {name} "
                                   f"(defined at {hook['file']}:{hook.get('line')})")  # fmt: skip
                subject = Subject("lines", name, hook["file"], hook.get("line"), name)
        else:
            advice = OTHER_BYPASS_FIX.get(reason, GENERIC_BYPASS_FIX)
        what = "they compile" if len(ids) > 1 else "it compiles"
        title = (
            f"{counted(len(ids), 'compile')} bypassed Inductor's FX graph cache ({reason}): "
            f"{what} fully on every start"
            if fx_graph
            else f"{counted(len(ids), 'compile')} bypassed AOTAutograd's cache ({reason}): "
            "tracing and partitioning run again on every start"
        )
        findings.append(Finding("warning" if fx_graph else "info", "cache_bypass", title, advice,
                                evidence, subject, facts={"reason": reason, "compiles": len(ids),
                                "compile_s": round(paid, 6), "fx_graph": fx_graph}))  # fmt: skip
    return findings


KEY_CONSTANT_FIX = (
    "Keep {names} out of the graph's constants: store {them} as a tensor (`self."
    "register_buffer('{attr}', torch.tensor(...))`, or a 0-d tensor attribute), so the graph "
    "takes {them} as an input and its cache key no longer changes with the value; or make "
    "the value the same at every start (a fixed seed, a saved statistic)."
)


def cache_key_constant_findings(run: Run, ledger: Ledger) -> list[Finding]:
    """``cache_key_constant``: every FX graph lookup missed although the cache dir held
    compiled graphs at start, and a Python float the graphs bake in (Dynamo guards it by
    value: ``L['self'].mean == 0.0274...``) differs from the value the previous start of this
    program baked (capture/baked.py): a value drawn at start-up (an unseeded sample's
    statistics) makes a new graph, and a new key, at every start. Evidence, not the look of
    the number: ``math.pi`` or a config's ``head_dim ** -0.5`` bakes the same value at every
    start and is never named. The attribute is named as the user knows it, with the user's
    line that stored it where the probes saw it."""
    probes = run.probes
    at_start = (probes.cache_dir_at_start or {}) if probes else {}
    held, before = at_start.get("fx_graph"), at_start.get("constants_before")
    if not held or not isinstance(before, dict) or cache_state(ledger).state != "cold":
        return []
    changed = {
        key: (before[key], value)
        for key, value in baked_constants(ledger, missed_only=True).items()
        if before.get(key) not in (None, value)
    }
    if not changed:
        return []
    stores = [] if probes is None else probes.attribute_stores
    names, lines, first = [], [], None
    for key, (was, value) in changed.items():
        frame_shown, source = baked_key_parts(key)
        names.append(source)
        attr = source.rsplit(".", 1)[-1] if "." in source else None
        store = next((s for s in stores if attr and s.get("attr") == attr), None)
        where = ""
        if store and store.get("file"):
            where = f", set at {store['file']}:{store.get('line')}: `{store.get('code')}`"
            first = first or store
        lines.append(f"{source} == {value} is a constant of {frame_shown}'s graph (Dynamo "
                     f"guards it by value); the previous start with this cache dir baked "
                     f"{was}{where}")  # fmt: skip
    lines.append(f"the cache dir held {counted(int(held), 'compiled graph')} at start; every "
                 "FX graph lookup of this run missed")  # fmt: skip
    attr = names[0].rsplit(".", 1)[-1]
    them = "them" if len(names) > 1 else "it"
    subject = PROGRAM
    if first is not None:
        subject = Subject("lines", names[0], first["file"], first.get("line"),
                          first.get("function"))  # fmt: skip
    title = (f"{', '.join(names)} {'are' if len(names) > 1 else 'is'} baked into the graph as "
             f"{'constants' if len(names) > 1 else 'a constant'} whose value changed since "
             "the previous start: a new cache key, so every start compiles cold")  # fmt: skip
    advice = KEY_CONSTANT_FIX.format(names=", ".join(f"`{n}`" for n in names), them=them,
                                     attr=attr)  # fmt: skip
    return [Finding("warning", "cache_key_constant", title, advice, lines, subject,
                    facts={"constants": len(names), "cache_entries_at_start": int(held)})]  # fmt: skip


COLD_START_FINDINGS: tuple[Callable[[Run, Ledger], list[Finding]], ...] = (
    cache_bypass_findings,
    cache_key_constant_findings,
)
"""The cold-start finders, each ``(run, ledger) -> findings``: one line here adds one."""

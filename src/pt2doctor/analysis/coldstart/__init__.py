"""Cold start: where compile time went, which caches missed and why, what a warm start costs,
and what guard checks cost at run time.

``cold_start_section`` (phases, cache state, verdict, warm estimate), ``compile_caches`` (each
cache's status, key and components per compile), ``cache_miss_causes`` (why a cache missed
between two runs), ``guard_overhead_findings``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pt2doctor._lazy import lazy_names

if TYPE_CHECKING:
    from pt2doctor.analysis.coldstart.cache_diff import cache_miss_causes
    from pt2doctor.analysis.coldstart.caches import compile_caches
    from pt2doctor.analysis.coldstart.explain import cache_state, cold_start_section
    from pt2doctor.analysis.coldstart.guard_overhead import guard_overhead_findings

_HOMES = {
    "cache_miss_causes": "cache_diff",
    "cache_state": "explain",
    "cold_start_section": "explain",
    "compile_caches": "caches",
    "guard_overhead_findings": "guard_overhead",
}
__all__ = [
    "cache_miss_causes",
    "cache_state",
    "cold_start_section",
    "compile_caches",
    "guard_overhead_findings",
]
__getattr__ = lazy_names(__name__, _HOMES)

"""Graph breaks: each site once, its category, how often it ran (heat), and its advice.

``graph_break_sites`` (sites and categories), ``break_heat`` / ``compile_heat`` (calls per
break and per compiled graph, from the run's probes), ``break_advice`` (the category
paragraphs), ``known_break`` (break sites inside torch and libraries that the user cannot
remove, with their own fix).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pt2doctor._lazy import lazy_names

if TYPE_CHECKING:
    from pt2doctor.analysis.breaks.advice import break_advice
    from pt2doctor.analysis.breaks.heat import Heat, break_heat, compile_heat
    from pt2doctor.analysis.breaks.library_breaks import known_break
    from pt2doctor.analysis.breaks.sites import GraphBreakSite, categorize_break, graph_break_sites

_HOMES = {
    "GraphBreakSite": "sites",
    "Heat": "heat",
    "break_advice": "advice",
    "break_heat": "heat",
    "categorize_break": "sites",
    "compile_heat": "heat",
    "graph_break_sites": "sites",
    "known_break": "library_breaks",
}
__all__ = [
    "GraphBreakSite",
    "Heat",
    "break_advice",
    "break_heat",
    "categorize_break",
    "compile_heat",
    "graph_break_sites",
    "known_break",
]
__getattr__ = lazy_names(__name__, _HOMES)

"""The ``ranks`` part of the HTML view-model (multi-rank run/report reports): the per-rank
table, the compile-time skew against the collective timeout, and the divergences with their
evidence; a bar chart of compile time per rank. Registered in report/views.py ``SECTIONS``
(which imports this module; this one imports only report/sections.py and report/format.py,
so there is no import cycle)."""

from __future__ import annotations

from typing import Any

from pt2doctor.analysis.ranks.divergence import skew_severity
from pt2doctor.report.format import cut, function_where
from pt2doctor.report.sections import Section
from pt2doctor.report.types import Divergence, RankRow, Ranks, RunReport

Report = RunReport
MAX_EVIDENCE = 6
MAX_GUARDS = 4


def _rank_row(row: RankRow, ranks: Ranks) -> dict[str, Any]:
    return {
        "label": row["label"],
        "compiles": row["compiles"],
        "compile_time_s": f"{row['compile_time_s']:.2f}",
        "recompiles": len(row["recompiles"]),
        "graphs": row["graphs"],
        "cache": f"{row['cache']['hit']}/{row['cache']['miss']}",
        "break_sites": row["break_sites"],
        "failures": row["failures"],
        "graph_calls": row["graph_calls"],
        "slowest": row["label"] == ranks["slowest"] and len(ranks["per_rank"]) > 1,
        "path": row["path"],
    }


def _divergence(divergence: Divergence) -> dict[str, Any]:
    return {
        "severity": divergence["severity"],
        "code": divergence["code"],
        "kind": divergence["kind"],
        "title": cut(divergence["title"]),
        "labels": divergence["labels"],
        "evidence": [cut(str(e), 200) for e in divergence["evidence"][:MAX_EVIDENCE]],
        "frame": function_where(divergence["frame"]),
        "recompiles": [
            {
                "label": r["label"],
                "compile_id": r["compile_id"],
                "where": function_where(r["frame"]),
                "guards": [cut(g["text"], 200) for g in r["failed_guards"][:MAX_GUARDS]],
            }
            for r in divergence["recompiles"]
        ],
    }


def ranks(report: Report) -> Section | None:
    """Per rank: compiles, compile time, recompiles, cache, break sites, failures, graph calls;
    the skew against the collective timeout; the divergences and their evidence."""
    ranks = report.get("ranks")
    if not ranks:
        return None
    rows = [_rank_row(row, ranks) for row in ranks["per_rank"]]
    skew = {
        "seconds": f"{ranks['compile_skew_s']:.2f}",
        "timeout_s": f"{ranks['collective_timeout_s']:g}",
        "share": f"{ranks['timeout_share']:.2%}",
        "severity": skew_severity(ranks["timeout_share"]),
        "slowest": ranks["slowest"],
        "fastest": ranks["fastest"],
    }
    chart = {
        "kind": "hbar",
        "title": "compile time per rank",
        "xlabel": "seconds compiling",
        "labels": [cut(row["label"], 60) for row in ranks["per_rank"]],
        "values": [round(row["compile_time_s"], 3) for row in ranks["per_rank"]],
        "highlight": [row["slowest"] for row in rows],
    }
    data = {
        "count": ranks["count"],
        "rows": rows,
        "skew": skew,
        "divergences": [_divergence(d) for d in ranks["divergences"]],
    }
    return Section("ranks", f"Ranks ({ranks['count']})", "ranks", data, [chart])

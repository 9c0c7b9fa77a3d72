"""The HTML "What was built" section: per compiled graph, its kernels in launch order and the
user lines they come from, each linked to the other (a kernel to its lines, a line back to its
kernels), the ops each line put in the graph, and the fusions the scheduler refused. The
tlparse provenance view, from ``compiles[].kernels``, ``graph`` and ``fusion``.

Anchors are built from indices only (``b3-k2``: compile 3, kernel 2), never from user text."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pt2doctor.report.format import compile_names, cut, file_name
from pt2doctor.report.sections import Section

Report = Mapping[str, Any]
MAX_GRAPHS = 30
"""Graphs shown, in compile order (the JSON keeps them all)."""
MAX_KERNELS = 300
"""Kernels shown per graph."""


def _line_key(line: Mapping[str, Any]) -> tuple[str, int]:
    return (str(line["file"]), int(line["line"]))


def _graph(index: int, entry: Mapping[str, Any], name: str | None) -> dict[str, Any]:
    prefix = f"b{index}"
    kernels = entry["kernels"][:MAX_KERNELS]
    graph = entry.get("graph") or {}
    ops_by_line = {_line_key(row): row["ops"] for row in graph.get("by_line", [])}
    lines: dict[tuple[str, int], dict[str, Any]] = {}
    rows = []
    for k_index, kernel in enumerate(kernels):
        anchor = f"{prefix}-k{k_index}"
        refs = []
        for user_line in kernel["user_lines"]:
            key = _line_key(user_line)
            if key not in lines:
                lines[key] = {
                    "anchor": f"{prefix}-l{len(lines)}",
                    "where": f"{file_name(key[0])}:{key[1]}",
                    "path": key[0],
                    "number": key[1],
                    "code": cut(user_line["code"], 160),
                    "ops": ops_by_line.get(key),
                    "kernels": [],
                }
            lines[key]["kernels"].append({"anchor": anchor, "name": kernel["name"]})
            refs.append({"anchor": lines[key]["anchor"], "where": lines[key]["where"]})
        rows.append(
            {
                "anchor": anchor,
                "name": kernel["name"],
                "kind": kernel["kind"],
                "ops": ", ".join(kernel["ops"][:12]) + (" …" if len(kernel["ops"]) > 12 else ""),
                "lines": refs,
            }
        )
    kinds: dict[str, int] = {}
    for kernel in entry["kernels"]:
        kinds[kernel["kind"]] = kinds.get(kernel["kind"], 0) + 1
    fusion = entry.get("fusion") or {}
    return {
        "compile_id": entry["compile_id"],
        "function": name or entry.get("function") or "",
        "kinds": ", ".join(f"{n} {kind}" for kind, n in kinds.items()),
        "graph_ops": graph.get("ops"),
        "kernels": rows,
        "more_kernels": max(0, len(entry["kernels"]) - MAX_KERNELS),
        "lines": sorted(lines.values(), key=lambda row: (row["path"], row["number"])),
        "partial": (entry.get("kernel_map") or {}).get("partial"),
        "fusion": {
            "available": bool(fusion.get("available")),
            "note": fusion.get("note"),
            "rejected": [
                {
                    "a": _side(r["a_side"]),
                    "b": _side(r["b_side"]),
                    "reason": r["reason"],
                    "count": r["count"],
                }
                for r in fusion.get("rejected", [])
            ],
            "more": fusion.get("more", 0),
        },
    }


def _side(side: Mapping[str, Any]) -> str:
    line = side.get("line")
    where = f" ({file_name(line['file'])}:{line['line']})" if line else ""
    return f"{side.get('kernel') or side['name']}{where}"


def built(report: Report) -> Section | None:
    """What each compiled graph was built into (None: no compile has a kernel map)."""
    names = compile_names(report)
    graphs = [
        _graph(index, entry, names.get((entry["stream"], entry["compile_id"])))
        for index, entry in enumerate(report["compiles"])
        if entry.get("kernels")
    ]
    if not graphs:
        return None
    data = {"graphs": graphs[:MAX_GRAPHS], "more": max(0, len(graphs) - MAX_GRAPHS)}
    return Section("built", "What was built", "built", data)

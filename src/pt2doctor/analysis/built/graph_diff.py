"""What the compiler built differently between two reports (``graph_ops`` and ``kernels``
changes of ``pt2doctor diff``): per graph, the ops each user line put in it, the kernels, new
fallbacks, lines that became unrolled, and fusions refused in B that A made.

Graphs are matched by place, as the cache diff matches them (the frame and the variant's rank
among its compiles). Lines are matched by file name and code (an edit above a line moves it),
kernels by name without Inductor's order suffix (``cpp_fused_gelu_1`` is ``cpp_fused_gelu``:
the number follows the kernel's position). A pure function of two report dicts.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

from pt2doctor.analysis.coldstart.cache_diff import graphs_by_place
from pt2doctor.analysis.diff.change import Change, file_name, not_comparable

Report = Mapping[str, Any]
_ORDER = re.compile(r"_\d+$")
_GRAPH_OF = re.compile(r"^graph (\S+):")
# Lines, kernels and fusions named in one change's detail (the reports have them all).
MAX_NAMED = 4


def _where(line: Mapping[str, Any] | None) -> str:
    return "" if not line else f"{file_name(line['file'])}:{line['line']}"


def _stem(kernel: Mapping[str, Any]) -> str:
    name = str(kernel["name"])
    return _ORDER.sub("", name) if kernel["kind"] == "generated" else name


def _lines_ops(row: Mapping[str, Any]) -> dict[tuple[str, str], tuple[int, int]]:
    """(file name, code) -> (ops, line number) of a graph's lines."""
    graph = row.get("graph") or {}
    return {
        (file_name(line["file"]), str(line["code"])): (int(line["ops"]), int(line["line"]))
        for line in graph.get("by_line", [])
    }


_REPEATING = ("unrolled_loop", "repeated_blocks")  # findings of a line that repeats in a graph


def _unrolled(report: Report) -> dict[str, set[tuple[str, str]]]:
    """compile id -> the (file name, code) of each line an unrolled_loop or repeated_blocks
    finding names."""
    found: dict[str, set[tuple[str, str]]] = {}
    for finding in report.get("findings", []):
        if finding.get("code") not in _REPEATING or len(finding.get("evidence", [])) < 2:
            continue
        graph = _GRAPH_OF.match(str(finding["evidence"][1]))
        site, _, code = str(finding["evidence"][0]).partition(": ")
        also = str((finding.get("facts") or {}).get("also_in_graphs") or "").split()
        for compile_id in ([graph[1]] if graph else []) + also:
            found.setdefault(compile_id, set()).add((file_name(site.rsplit(":", 1)[0]), code))
    return found


def _ops_change(place: str, old: Mapping[str, Any], new: Mapping[str, Any],
                unrolled: tuple[set[tuple[str, str]], set[tuple[str, str]]]) -> Change | None:  # fmt: skip
    before, after = (old.get("graph") or {}).get("ops"), (new.get("graph") or {}).get("ops")
    if before is None or after is None:
        return None
    lines_a, lines_b = _lines_ops(old), _lines_ops(new)
    moved = []
    for key in sorted(lines_a.keys() | lines_b.keys()):
        ops_a, ops_b = lines_a.get(key, (0, 0))[0], lines_b.get(key, (0, 0))[0]
        if ops_a != ops_b:
            number = (lines_b.get(key) or lines_a[key])[1]
            moved.append((abs(ops_b - ops_a), f"{key[0]}:{number} {ops_a} → {ops_b}"))
    # A line that put a different number of ops in the same graph (a torch upgrade, a new
    # loop count, an edit): lines only on one side moved to another graph (a graph break
    # came or went, which the break-site changes already say) or were written anew.
    regrown = [key for key in lines_a.keys() & lines_b.keys() if lines_a[key][0] != lines_b[key][0]]
    aten_a, aten_b = _aten(old), _aten(new)
    new_unrolled = unrolled[1] - unrolled[0]
    if not regrown and aten_a == aten_b and not new_unrolled:
        return None
    parts = [f"{before} → {after} ops"]
    if moved:
        ranked = [text for _, text in sorted(moved, key=lambda m: -m[0])]
        parts.append("by line: " + ", ".join(ranked[:MAX_NAMED]))
    if aten_b - aten_a:
        parts.append("new ATen ops: " + ", ".join(sorted(aten_b - aten_a)[:MAX_NAMED]))
    if aten_a - aten_b:
        parts.append("ATen ops gone: " + ", ".join(sorted(aten_a - aten_b)[:MAX_NAMED]))
    for file, code in sorted(new_unrolled):
        parts.append(f"now unrolled: {file} `{code}`")
    # A regression one way only: lines newly unrolled in B while none unrolled in A is gone.
    worse = bool(new_unrolled) and not (unrolled[0] - unrolled[1])
    return Change("graph_ops", place, before, after, worse, "; ".join(parts))


def _aten(row: Mapping[str, Any]) -> set[str]:
    return {op for kernel in row.get("kernels", []) for op in kernel["ops"]}


def _refusals(row: Mapping[str, Any]) -> dict[tuple[str, str, str], Mapping[str, Any]]:
    """(a, b, reason), a and b as kernel stem and line, -> the refusal, for a graph's refused
    fusions."""

    def side(value: Mapping[str, Any]) -> str:
        kernel = _ORDER.sub("", value.get("kernel") or "")
        return f"{kernel} {_where(value.get('line'))}".strip() or value["name"]

    fusion = row.get("fusion") or {}
    return {
        (side(r["a_side"]), side(r["b_side"]), r["reason"]): r for r in fusion.get("rejected", [])
    }


def _kernels_change(place: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> Change | None:
    kernels_a, kernels_b = old.get("kernels") or [], new.get("kernels") or []
    if not kernels_a or not kernels_b:
        return None  # a side without a kernel map: nothing to compare
    stems_a, stems_b = Counter(map(_stem, kernels_a)), Counter(map(_stem, kernels_b))
    logged = all((row.get("fusion") or {}).get("available") for row in (old, new))
    refused_a, refused_b = (_refusals(old), _refusals(new)) if logged else ({}, {})
    fresh = [refused_b[key] for key in refused_b if key not in refused_a]
    if stems_a == stems_b and not fresh:
        return None
    count_a, count_b = len(kernels_a), len(kernels_b)
    more = count_b - count_a
    head = (
        f"{abs(more)} {'more' if more > 0 else 'fewer'} kernels ({count_a} → {count_b})"
        if more
        else f"{count_b} kernels" + (", not the same ones" if stems_a != stems_b else "")
    )
    parts = [head]
    added = [k for k in kernels_b if stems_b[_stem(k)] > stems_a.get(_stem(k), 0)]
    gone = [k for k in kernels_a if stems_a[_stem(k)] > stems_b.get(_stem(k), 0)]
    fallbacks = [k for k in added if k["kind"] == "fallback"]
    if fallbacks:
        parts.append("new fallbacks: " + ", ".join(_named(k) for k in fallbacks[:MAX_NAMED]))
    if added:
        parts.append("new: " + ", ".join(_named(k) for k in _unique(added)[:MAX_NAMED]))
    if gone:
        parts.append("gone: " + ", ".join(_named(k) for k in _unique(gone)[:MAX_NAMED]))
    parts += [f"now refused: {refused_pair(refusal)}" for refusal in fresh[:MAX_NAMED]]
    if len(fresh) > MAX_NAMED:
        parts.append(f"{len(fresh) - MAX_NAMED} more fusions refused")

    # Worse one way only: by the first that differs of the kernel count, the fallback count
    # and the refused fusions (a different set of as many is a change, not a regression).
    def weight(kernels: list[Any], refused: dict[Any, Any]) -> tuple[int, int, int]:
        return (len(kernels), sum(k["kind"] == "fallback" for k in kernels), len(refused))

    worse = weight(kernels_b, refused_b) > weight(kernels_a, refused_a)
    return Change("kernels", place, count_a, count_b, worse, "; ".join(parts))


def refused_pair(refusal: Mapping[str, Any]) -> str:
    """``cpp_fused_gelu_1 (m.py:9) not fused with cpp_fused_add_2 (m.py:11): reason``; two
    loops of one C++ kernel read ``two loops of cpp_fused_norm_0 (m.py:8, m.py:8) not fused``."""
    a, b = refusal["a_side"], refusal["b_side"]
    name_a, name_b = a.get("kernel") or a["name"], b.get("kernel") or b["name"]
    where_a, where_b = _where(a.get("line")), _where(b.get("line"))
    if name_a == name_b:
        lines = ", ".join(dict.fromkeys(w for w in (where_a, where_b) if w))
        return (
            f"two loops of {name_a}"
            + (f" ({lines})" if lines else "")
            + (f" not fused: {refusal['reason']}")
        )
    return (
        f"{name_a}" + (f" ({where_a})" if where_a else "") + f" not fused with {name_b}"
        + (f" ({where_b})" if where_b else "") + f": {refusal['reason']}"
    )  # fmt: skip


def _unique(kernels: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    seen: dict[str, Mapping[str, Any]] = {}
    for kernel in kernels:
        seen.setdefault(_stem(kernel), kernel)
    return list(seen.values())


def _named(kernel: Mapping[str, Any]) -> str:
    lines = ", ".join(_where(line) for line in kernel["user_lines"][:2])
    return f"{kernel['name']} ({lines})" if lines else str(kernel["name"])


def graph_changes(a: Report, b: Report) -> list[Change]:
    """A ``graph_ops`` and a ``kernels`` change for each graph of B whose build differs from
    the same graph's in A."""
    before, unrolled_a, unrolled_b = graphs_by_place(a), _unrolled(a), _unrolled(b)
    changes = []
    for place, new in graphs_by_place(b).items():
        old = before.get(place)
        if old is None:
            continue
        subject = f"graph {new['compile_id']} {place}"
        lines = (
            unrolled_a.get(old["compile_id"], set()),
            unrolled_b.get(new["compile_id"], set()),
        )
        dynamic = (_dynamic_sources(old), _dynamic_sources(new))
        for change in (_ops_change(subject, old, new, lines), _kernels_change(subject, old, new)):
            if change is not None and change.regression and dynamic[0] != dynamic[1]:
                change = not_comparable(change, OTHER_SHAPES)
            if change is not None:
                changes.append(change)
    return changes


OTHER_SHAPES = (
    "not comparable: the two graphs at this place are compiled for other dynamic sizes (one "
    "specialized where the other is dynamic: another variant, and a graph with dynamic sizes "
    "also builds its backward ahead of time)"
)


def _dynamic_sources(row: Mapping[str, Any]) -> frozenset[str]:
    return frozenset(str(s.get("source")) for s in row.get("dynamic_symbols") or [])

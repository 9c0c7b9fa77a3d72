"""Two profiler traces compared (``pt2doctor diff A.json.gz B.json.gz``, or two reports of kind
``profile``): step time, device busy time, the kernel groups that moved most, syncs and CUDA-graph
replays added or removed, each per step so traces of different lengths compare.

Times change beyond :class:`~pt2doctor.analysis.diff.change.Noise` (relative, and an absolute
floor of 0.5 ms per step); a change found from A to B is found from B to A with its values
swapped and its direction reversed.
"""

from __future__ import annotations

from statistics import median
from typing import Any

from pt2doctor.analysis.diff.change import Change, Noise, time_change
from pt2doctor.analysis.diff.reports import Diff

FLOOR_MS = 0.5
"""Per-step time changes smaller than this are noise, whatever their ratio."""
TOP_GROUPS = 5


def _steps(device: dict[str, Any]) -> int:
    return max(len(device["steps"]), 1)


def _median_ms(device: dict[str, Any], key: str) -> float | None:
    values = [step[key] for step in device["steps"]]
    return round(median(values) / 1000, 3) if values else None


def _groups(device: dict[str, Any]) -> dict[str, float]:
    """ms per step of each kernel kind and of the ten longest kernels."""
    steps = _steps(device)
    groups = {f"{kind} kernels": g["us"] / steps / 1000 for kind, g in device["by_kind"].items()}
    for kernel in device["top_kernels"]:
        groups[kernel["name"]] = kernel["us"] / steps / 1000
    return groups


def _count_change(kind: str, subject: str, before: float, after: float, worse: bool) -> Change:
    return Change(kind, subject, round(before, 2), round(after, 2), worse,
                  "more per step" if after > before else "fewer per step")  # fmt: skip


def diff_device_reports(
    a: dict[str, Any], b: dict[str, Any], noise: Noise, names: tuple[str, str]
) -> Diff:
    """The changes from A's traces to B's (paired in their order: one trace each, or the
    ranks of two runs)."""
    diff = Diff(*names)
    for device_a, device_b in zip(a["device"], b["device"], strict=False):
        diff.changes += _diff_one(device_a, device_b, noise, len(a["device"]) > 1)
    if len(a["device"]) != len(b["device"]):
        diff.changes.append(
            Change(
                "traces",
                "profiler traces",
                len(a["device"]),
                len(b["device"]),
                False,
                "only the first ones are compared",
            )
        )
    return diff


def _diff_one(a: dict[str, Any], b: dict[str, Any], noise: Noise, named: bool) -> list[Change]:
    prefix = f"{a['path']} / {b['path']}: " if named else ""
    changes: list[Change] = []
    gpus_a, gpus_b = sorted(set(a["gpus"])), sorted(set(b["gpus"]))
    if gpus_a != gpus_b:
        changes.append(Change("gpu", f"{prefix}recorded on", ", ".join(gpus_a) or None,
                              ", ".join(gpus_b) or None, False,
                              "different GPUs: times compare the machines too"))  # fmt: skip
    for key, kind in (("wall_us", "step_time_ms"), ("busy_us", "device_busy_ms")):
        changes += time_change(kind, f"{prefix}median per step", _median_ms(a, key),
                               _median_ms(b, key), FLOOR_MS, noise)  # fmt: skip
    groups_a, groups_b = _groups(a), _groups(b)
    moved = []
    for name in sorted(set(groups_a) | set(groups_b)):
        before, after = groups_a.get(name, 0.0), groups_b.get(name, 0.0)
        found = time_change("kernel_group", f"{prefix}{name} (ms per step)", round(before, 3),
                            round(after, 3), FLOOR_MS, noise)  # fmt: skip
        moved += [(abs(after - before), name, change) for change in found]
    moved.sort(key=lambda item: (-item[0], item[1]))
    changes += [change for _, _, change in moved[:TOP_GROUPS]]
    for key, kind, worse_when_more in (("syncs", "syncs", True),
                                       ("graph_launches", "graph_replays", False)):  # fmt: skip
        before, after = a[key] / _steps(a), b[key] / _steps(b)
        if round(before, 2) != round(after, 2):
            changes.append(
                _count_change(
                    kind,
                    f"{prefix}{key.replace('_', ' ')}",
                    before,
                    after,
                    (after > before) == worse_when_more,
                )
            )
    return changes

"""Who the eager time belongs to: the profiled window's time outside compiled regions, split by
what ran there as torch's profiler labels it (``Optimizer.step#AdamW.step``,
``Optimizer.zero_grad#...``, ``enumerate(DataLoader)#...``), so an optimizer that runs eagerly is
named as such, never called "part of the compiled model".

A label's time is its events' time in the window less the compiled regions nested in it (an
optimizer step the program compiled is compiled time).
"""

from __future__ import annotations

from dataclasses import dataclass

from pt2doctor.trace.chrome import ChromeTrace

OWNER_PREFIXES = ("Optimizer.step#", "Optimizer.zero_grad#", "enumerate(DataLoader)#")
_REGION_PREFIX = "Torch-Compiled Region: "


@dataclass(frozen=True, slots=True)
class EagerOwner:
    """One label's eager time in the window."""

    label: str
    """As the profiler names it: ``Optimizer.step#AdamW.step``."""
    us: float
    calls: int
    aten_us: float = 0.0
    """Of its time, the outermost ATen ops it ran (what the eager-ops total counts too)."""

    @property
    def kind(self) -> str:
        """``optimizer_step``, ``zero_grad`` or ``data_loading``."""
        if self.label.startswith("Optimizer.step#"):
            return "optimizer_step"
        if self.label.startswith("Optimizer.zero_grad#"):
            return "zero_grad"
        return "data_loading"

    @property
    def owner_class(self) -> str:
        """``AdamW`` of ``Optimizer.step#AdamW.step``."""
        return self.label.split("#", 1)[-1].split(".", 1)[0]


def eager_owners(trace: ChromeTrace, start: float, end: float) -> list[EagerOwner]:
    """The labelled eager time of the window [start, end), the largest first."""
    owned: dict[str, list[tuple[int, float, float]]] = {}
    regions: dict[int, list[tuple[float, float]]] = {}
    aten: dict[int, list[tuple[float, float]]] = {}
    for i, name_id in enumerate(trace.name):
        ts = trace.ts[i]
        if not start <= ts < end:
            continue
        name = trace.names[name_id]
        stop = min(ts + trace.dur[i], end)
        if name.startswith(_REGION_PREFIX):
            regions.setdefault(trace.thread[i], []).append((ts, stop))
        elif name.startswith(OWNER_PREFIXES):
            owned.setdefault(name, []).append((trace.thread[i], ts, stop))
        elif name.startswith("aten::"):
            aten.setdefault(trace.thread[i], []).append((ts, stop))
    found = []
    for label, spans in owned.items():
        total = ops = 0.0
        for thread, begin, stop in spans:
            inside = sum(
                max(0.0, min(stop, r_end) - max(begin, r_start))
                for r_start, r_end in regions.get(thread, [])
            )
            total += max(stop - begin - inside, 0.0)
            ops += _outermost(aten.get(thread, []), begin, stop)
        found.append(EagerOwner(label, total, len(spans), ops))
    return sorted(found, key=lambda owner: -owner.us)


def _outermost(spans: list[tuple[float, float]], begin: float, stop: float) -> float:
    """The time of the outermost of ``spans`` that lie within [begin, stop)."""
    total, covered = 0.0, begin
    for ts, end in sorted(spans):
        if ts < begin or ts >= stop or ts < covered:
            continue
        total += min(end, stop) - ts
        covered = end
    return total

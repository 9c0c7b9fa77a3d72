"""``diff`` of two profiled runs: the step's time per call, each region's and each kernel's,
where they moved beyond noise (the torch-upgrade regression: "cpp_fused_gelu_1 went 0.18 ->
0.45 ms").

Regions are matched by the frame's name and part (compile ids can differ between runs), and
kernels within a region by name, else by kind and first user line (a kernel renumbered by a
new torch keeps its line). A window still noisy after its re-measure (``window.noise.noisy``)
makes every change "cannot tell", never a regression.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pt2doctor.analysis.diff.change import Change, Noise, not_comparable, time_change

KERNEL_FLOOR_MS = 0.01
"""A kernel's change counts above this (and the relative floor)."""
STEP_SHARE_FLOOR = 0.02
"""... and above this share of A's step."""
SPREAD_MADS = 3.0
"""... and above this many MADs of the two windows' calls together (their own spread)."""


def _window_noise(profile: Mapping[str, Any]) -> Mapping[str, Any]:
    return (profile.get("window") or {}).get("noise") or {}


def _too_noisy(profile: Mapping[str, Any], side: str) -> str | None:
    """Why ``side``'s window is too noisy to compare (None: quiet enough, or not measured)."""
    noise = _window_noise(profile)
    if not noise.get("noisy"):
        return None
    median = float(noise.get("median_ms") or 0.0)
    spread = f", the others spread {noise['mad_ms'] / median:.0%}" if median else ""
    return (f"cannot tell: {side}'s profile window was noisy even when measured again "
            f"({len(noise.get('preempted') or [])} of {noise.get('calls')} calls preempted"
            f"{spread}); profile both on a quiet machine")  # fmt: skip


def _region_key(row: Mapping[str, Any]) -> str:
    name = row.get("display_name") or row["compile_id"]
    return f"{name} (backward)" if row.get("part") == "backward" else str(name)


def _kernel_keys(kernel: Mapping[str, Any]) -> tuple[str, str]:
    lines = kernel.get("user_lines") or []
    where = f"{lines[0]['file']}:{lines[0]['line']}" if lines else ""
    return kernel["name"], f"{kernel['kind']} at {where}"


def _kernels(profile: Mapping[str, Any]) -> dict[str, dict[str, Mapping[str, Any]]]:
    """Region key -> kernels by name and by (kind, line); region keys from compile ids."""
    regions = {
        (row["compile_id"], row.get("part", "forward")): _region_key(row)
        for row in profile.get("regions", [])
    }
    found: dict[str, dict[str, Mapping[str, Any]]] = {}
    for kernel in profile.get("kernels", []):
        region = regions.get((kernel["compile_id"], kernel.get("part", "forward")))
        if region is None:
            continue
        by = found.setdefault(region, {})
        name, line = _kernel_keys(kernel)
        by.setdefault(name, kernel)
        by.setdefault(line, kernel)
    return found


def profile_changes(a: Mapping[str, Any], b: Mapping[str, Any], noise: Noise) -> list[Change]:
    """Time changes between two reports' profiles ([] unless both have one)."""
    pa, pb = a.get("profile") or {}, b.get("profile") or {}
    if not (pa.get("available") and pb.get("available")):
        return []
    step_a, step_b = pa["window"]["ms_per_call"], pb["window"]["ms_per_call"]
    spread = sum(float(_window_noise(p).get("mad_ms") or 0.0) for p in (pa, pb))
    kernel_floor = max(KERNEL_FLOOR_MS, STEP_SHARE_FLOOR * step_a)
    changes = time_change("profile_step_ms", "time per call of the hot loop", step_a, step_b,
                          max(kernel_floor, SPREAD_MADS * spread), noise)  # fmt: skip
    regions_a = {_region_key(r): r for r in pa["regions"]}
    regions_b = {_region_key(r): r for r in pb["regions"]}
    for key in sorted(regions_a.keys() & regions_b.keys()):
        ra, rb = regions_a[key], regions_b[key]
        moved = time_change("profile_region_ms", key, ra["ms_per_call"], rb["ms_per_call"],
                            kernel_floor, noise)  # fmt: skip
        for change in moved:
            parts = ("kernels_ms", "library_ms", "fallback_ms", "overhead_ms")
            most = max(parts, key=lambda p: abs(rb[p] - ra[p]))
            change.detail += f"; most in {most[:-3]}: {ra[most]:.3f} → {rb[most]:.3f} ms"
        changes += moved
    kernels_a, kernels_b = _kernels(pa), _kernels(pb)
    for region in sorted(kernels_a.keys() & kernels_b.keys()):
        seen: set[int] = set()
        for kernel in {id(k): k for k in kernels_a[region].values()}.values():
            name, line = _kernel_keys(kernel)
            other = kernels_b[region].get(name) or kernels_b[region].get(line)
            if other is None or id(other) in seen:
                continue
            seen.add(id(other))
            label = name if other["name"] == name else f"{name} (now {other['name']})"
            changes += time_change("profile_kernel_ms", f"{region}: {label}",
                                   kernel["ms_per_call"], other["ms_per_call"], kernel_floor,
                                   noise)  # fmt: skip
    why = _too_noisy(pa, "A") or _too_noisy(pb, "B")
    return [not_comparable(change, why) for change in changes] if why else changes

"""Guards: each new variant's guard checks timed warm, right after Dynamo builds them
(``guard_manager_testing_hook_fn``), for ``guard_overhead``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pt2doctor.torchcompat.dynamo import current_compile_id
from pt2doctor.torchcompat.version import ErrorCallback, ignore_error

GUARD_TIMING_CHECKS = 200
GUARD_TIMING_BATCH = 10
GUARD_TIMING_BUDGET_S = 0.02  # at most ~20 ms per compile (at least 10 checks) for huge guard sets
GuardsCallback = Callable[[str, float], None]
_guard_hooks: list[tuple[GuardsCallback, ErrorCallback]] = []


def time_guards(on_timed: GuardsCallback, on_error: ErrorCallback = ignore_error) -> bool:
    """Time every new variant's guards warm, right after Dynamo builds them: GUARD_TIMING_CHECKS
    checks (fewer past GUARD_TIMING_BUDGET_S) against the frame's own locals in batches of
    GUARD_TIMING_BATCH, then ``on_timed(compile_id, microseconds per check of the fastest
    batch)``. torch's own ``guard_latency_us`` is one evaluation after a cache flush, 50-600 us
    where a warm check of the same guards takes ~1 us. Uses guards.py's
    ``guard_manager_testing_hook_fn`` (a private hook; one set before is still called), installed
    once; :func:`unwrap` removes ``on_timed``. False where unavailable."""
    try:
        from torch._dynamo import guards
    except ImportError:
        return False
    if not hasattr(guards, "guard_manager_testing_hook_fn"):
        return False
    _guard_hooks.append((on_timed, on_error))
    previous = guards.guard_manager_testing_hook_fn
    if getattr(previous, "_pt2doctor", False):
        return True

    def timed(guard_manager: Any, local_scope: Any, builder: Any) -> None:
        if previous is not None:
            previous(guard_manager, local_scope, builder)
        if _guard_hooks:
            _time_guard_check(guard_manager, local_scope)

    timed._pt2doctor = True  # type: ignore[attr-defined]
    guards.guard_manager_testing_hook_fn = timed
    return True


def _time_guard_check(guard_manager: Any, local_scope: Any) -> None:
    import time

    try:
        check, clock = guard_manager.check, time.perf_counter
        deadline = clock() + GUARD_TIMING_BUDGET_S
        fastest, done = float("inf"), 0
        # Batches of GUARD_TIMING_BATCH checks, the fastest batch's mean kept: a batch the
        # scheduler interrupted (a loaded machine) measures the machine, not the guards.
        while done < GUARD_TIMING_CHECKS and (done < 10 or clock() < deadline):
            start = clock()
            for _ in range(GUARD_TIMING_BATCH):
                check(local_scope)
            fastest = min(fastest, (clock() - start) / GUARD_TIMING_BATCH)
            done += GUARD_TIMING_BATCH
        microseconds = round(fastest * 1e6, 3)
    except Exception as error:  # never fail the user's compile because of a probe
        for _, report_error in list(_guard_hooks):
            report_error("guard_timing", error)
        return
    compile_id = current_compile_id() or "?"
    for hook, _ in list(_guard_hooks):
        hook(compile_id, microseconds)

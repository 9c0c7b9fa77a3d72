"""How a fix of time's re-run moved against the main run (analysis/findings/verdicts.py
``time_moved``): two windows of calls timed in two processes, at two moments. Clear shifts
are faster or slower, small ones the same; a shift inside the windows' noise whose calls are
still apart by rank is a shift; one whose calls overlap cannot be told; and two windows timed
under different loads (their calls off the CPU for different shares) never compare."""

from __future__ import annotations

import statistics
from types import SimpleNamespace
from typing import Any

from pt2doctor.analysis.findings.verdicts import time_moved
from pt2doctor.trace.spread import calls_noise
from pt2doctor.trace.types import ProfileCapture


def _run(walls: list[float], off: float = 0.0) -> Any:
    """A run whose window timed ``walls`` (ms), each call ``off`` of its time off the CPU."""
    noise = calls_noise(walls)
    assert noise is not None
    window = {"periods_ms": walls, "periods_cpu_ms": [w * (1 - off) for w in walls],
              "noise": {**noise.as_json(), "noisy": False}}  # fmt: skip
    return SimpleNamespace(profile=ProfileCapture(window, None, "profile/trace.json"), probes=None)


QUIET = [10.0, 10.1, 9.9, 10.2, 9.8, 10.0, 10.1, 9.9, 10.0, 10.05] * 2


def test_clear_shifts_are_faster_or_slower_and_small_ones_the_same() -> None:
    assert time_moved(_run(QUIET), _run([w * 0.7 for w in QUIET])) == "faster"
    assert time_moved(_run(QUIET), _run([w * 1.4 for w in QUIET])) == "slower"
    assert time_moved(_run(QUIET), _run([w * 1.02 for w in QUIET])) == "same"


def test_a_shift_inside_the_noise_is_one_where_the_calls_are_apart_by_rank() -> None:
    """A main window drifting from 12 to 5 ms (load easing off), a re-run steady at 2.8: the
    shift is under three MADs, but every call of the re-run is below every call of the main
    run (postprocess_outside.py's try under load, 2026-12-07)."""
    drifting = [12.5, 11.1, 9.8, 9.3, 8.2, 8.1, 9.0, 5.7, 8.4, 5.4,
                5.4, 5.2, 5.1, 5.2, 8.0, 7.5, 5.3, 6.2, 5.3, 5.3]  # fmt: skip
    steady = [3.0, 3.05, 3.0, 2.8, 2.7, 2.8, 2.75, 2.7, 2.65, 2.85] * 2
    main, tried = _run(drifting), _run(steady)
    mads = statistics.median(abs(w - statistics.median(drifting)) for w in drifting)
    assert statistics.median(drifting) - statistics.median(steady) < 3 * mads
    assert time_moved(main, tried) == "faster"
    # Faster by its median as much, but seven of its calls as slow as the main run's: cannot
    # tell.
    overlapping = [2.8, 2.9, 3.0, 3.2, 3.5, 3.6, 3.8, 4.0, 4.1, 4.2,
                   9.0, 10.0, 11.0, 12.0, 12.5, 13.0, 4.3, 4.8, 5.2, 8.5]  # fmt: skip
    assert time_moved(main, _run(overlapping)) is None


def test_windows_timed_under_different_loads_do_not_compare() -> None:
    """A re-run whose calls spent half their time off the CPU (the machine busy elsewhere; a
    freezing try read 15.5 -> 257 ms, outside review 2026-12-07) against a main run that spent
    none: cannot tell, whatever the medians say."""
    assert time_moved(_run(QUIET), _run([w * 16 for w in QUIET], off=0.5)) is None
    assert time_moved(_run(QUIET, off=0.02), _run([w * 16 for w in QUIET], off=0.05)) == "slower"


def test_a_workers_try_is_never_judged_by_the_profile_windows() -> None:
    """DataLoader workers: the profiler records the ops that make each batch in the main run
    and none in the workers (loader_eval's windows read 13.9 ms saved of a 10.2 ms wait), and
    the loop waits on their queue off the CPU by design (text_loader: 57% against 0%; by hand
    1.5 -> 2.7 ms per batch on 2 cores): cannot tell, whatever the windows say."""
    workers = {"loader_workers": 2, "timed": True}
    assert time_moved(_run(QUIET), _run([w * 0.5 for w in QUIET]), workers) is None
    assert time_moved(_run(QUIET), _run([w * 1.5 for w in QUIET], off=0.57), workers) is None
    assert time_moved(_run(QUIET), _run([w * 0.5 for w in QUIET])) == "faster"  # another fix

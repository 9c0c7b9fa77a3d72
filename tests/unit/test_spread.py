"""Each compiled graph's calls kept as a duration histogram (trace/spread.py): the probes count
them (capture/probes.py, a stepped clock: the one nondeterministic seam), the run directory
reads them back summed over processes, and ``diff`` compares medians within the calls' own
spread instead of means that one stalled call inflates."""

from __future__ import annotations

import copy
import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from pt2doctor.analysis.diff.change import Noise
from pt2doctor.analysis.diff.reports import diff_reports
from pt2doctor.capture.probes import ProbeRecorder
from pt2doctor.rundir.read import load_probes
from pt2doctor.trace.spread import median_mad, spread_bucket

DATA = Path(__file__).resolve().parents[1] / "data" / "reports"


class SteppedClock:
    """Returns the next planned time on each read: start, then start + duration, per call."""

    def __init__(self, durations: list[float]) -> None:
        self.times: Iterator[float] = iter(self._plan(durations))

    @staticmethod
    def _plan(durations: list[float]) -> list[float]:
        # the recorder's t0, the compiled event's timestamp and the compile_site event's
        plan, now = [0.0, 0.0, 0.0], 0.0
        for duration in durations:
            plan += [now, now + duration]
            now += duration + 1.0
        return plan

    def __call__(self) -> float:
        return next(self.times, 1e9)


def test_a_median_is_within_one_bucket_and_a_stall_does_not_move_it() -> None:
    calls = [0.002] * 95 + [0.2] * 5
    buckets = Counter(spread_bucket(s) for s in calls)
    result = median_mad(buckets)
    assert result is not None
    median, mad = result
    assert abs(median - 0.002) / 0.002 < 0.05
    assert mad < 0.0002
    assert sum(calls) / len(calls) > 5 * median  # the mean the stalls inflate
    assert median_mad({}) is None


def test_the_probes_count_each_call_and_the_run_reads_the_median_back(tmp_path: Path) -> None:
    durations = [0.001] * 18 + [0.05, 0.08]
    recorder = ProbeRecorder(tmp_path, clock=SteppedClock(durations))
    graph = recorder.count_graph("0/0", lambda: None)
    for _ in durations:
        graph()
    recorder.close()
    saved = json.loads(next((tmp_path / "counters").iterdir()).read_text())
    assert sum(saved["graph_spread"]["0/0"].values()) == len(durations)
    probes = load_probes(tmp_path)
    assert probes is not None
    result = median_mad(probes.graph_spread["0/0"])
    assert result is not None and abs(result[0] - 0.001) / 0.001 < 0.05
    assert abs(probes.graph_seconds["0/0"] - sum(durations)) < 1e-6


def _with_spread(report: dict, function: str, median: float, mad: float, mean: float) -> dict:
    report = copy.deepcopy(report)
    for entry in report["compiles"]:
        if entry["function"] == function and entry["calls"]:
            entry["seconds_in_graph"] = mean * entry["calls"]
            entry["seconds_per_call_median"] = median
            entry["seconds_per_call_mad"] = mad
    return report


def _per_call(a: dict, b: dict) -> list:
    changes = diff_reports(a, b, Noise(per_call_s=0, per_call_rel=0.25)).changes
    return [c for c in changes if c.kind == "time_per_call_s"]


def test_diff_reads_medians_and_a_stalled_mean_is_no_regression() -> None:
    demo = json.loads((DATA / "demo_eager.json").read_text())
    a = _with_spread(demo, "forward", median=0.001, mad=0.00005, mean=0.001)
    stalled = _with_spread(demo, "forward", median=0.00102, mad=0.00005, mean=0.004)
    assert _per_call(a, stalled) == []  # the mean is 4x; the median is the same
    slower = _with_spread(demo, "forward", median=0.002, mad=0.00005, mean=0.002)
    (change,) = _per_call(a, slower)
    assert change.regression and "medians of the calls" in change.detail
    assert (change.before, change.after) == (0.001, 0.002)


def test_a_change_within_the_calls_own_spread_is_noise() -> None:
    demo = json.loads((DATA / "demo_eager.json").read_text())
    a = _with_spread(demo, "forward", median=0.001, mad=0.0004, mean=0.001)
    b = _with_spread(demo, "forward", median=0.0018, mad=0.0004, mean=0.0018)
    assert _per_call(a, b) == []  # 0.8 ms apart, under 3 x (0.4 + 0.4) ms
    assert len(_per_call(a, _with_spread(b, "forward", 0.004, 0.0004, 0.004))) == 1

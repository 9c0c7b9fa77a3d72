"""Which skipped frame a sampled line belongs to (analysis/time/lines.py
``skipped_frame_shares``): its file and function, at or after its ``def``; of two frames of
one name in one file, the nearer ``def`` above the line. The lines are built here the way
``eager_lines`` returns them; the integration test (test_profile.py) checks the shares
against a real run's profiler events."""

from __future__ import annotations

from pt2doctor.analysis.time.lines import EagerLine, SkippedFrame, skipped_frame_shares


def _frame(function: str, line: int, file: str = "/w/train.py") -> SkippedFrame:
    return SkippedFrame(f"{function} ({file}:{line})", file, function, line)


def test_each_line_goes_to_the_nearest_def_above_it_of_its_own_function() -> None:
    lines = [
        EagerLine("/w/train.py", 12, "step", 6, 0.5),  # the first step (def at 10)
        EagerLine("/w/train.py", 42, "step", 3, 0.25),  # the second step (def at 40)
        EagerLine("/w/train.py", 5, "step", 1, 0.125),  # above both: neither's
        EagerLine("/w/other.py", 41, "step", 1, 0.125),  # another file
    ]
    first, second = _frame("step", 10), _frame("step", 40)
    shares = skipped_frame_shares(lines, [second, first])
    assert [(f.line, f.share) for f in shares] == [(10, 0.5), (40, 0.25)]


def test_a_skipped_frame_no_sample_fell_in_keeps_a_zero_share() -> None:
    lines = [EagerLine("/w/train.py", 21, "loss", 4, 1.0)]
    (frame,) = skipped_frame_shares(lines, [_frame("step", 10)])
    assert frame.share == 0.0 and frame.where == "step (/w/train.py:10)"

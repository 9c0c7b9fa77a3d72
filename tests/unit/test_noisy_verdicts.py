"""A noisy profile window withholds the verdicts a loaded machine can flip (analysis/time/
analyse.py): what bounds the loop always, and the eager-share verdicts only where their share
is close enough to the 25% line to have been carried across it."""

from __future__ import annotations

import pytest

from pt2doctor.analysis.findings.model import Finding
from pt2doctor.analysis.time.analyse import _noise_findings, _Quiet
from pt2doctor.trace.spread import calls_noise

QUIET = [10.0, 10.2, 9.9, 10.1, 10.0, 10.3, 9.8, 10.0, 10.1, 10.2]
NOISY = [10.0, 19.0, 4.0, 15.0, 6.0, 12.0, 25.0, 5.0, 17.0, 8.0]
"""Call times (ms): the second spread far more than a quarter of the median around it."""


def _findings() -> list[Finding]:
    return [
        Finding("warning", "overhead_bound", "overhead", "batch"),
        Finding("warning", "eager_only_time", "eager ops", "compile it"),
        Finding("info", "fallback_op", "a sort", "as in eager"),
    ]


def _codes(walls: list[float], eager: float) -> set[str]:
    noise = calls_noise(walls)
    assert noise is not None
    return {f.code for f in _noise_findings(_findings(), _Quiet(noise), eager=eager)}


def test_a_quiet_window_keeps_every_verdict() -> None:
    assert calls_noise(QUIET) is not None and not calls_noise(QUIET).noisy  # type: ignore[union-attr]
    assert _codes(QUIET, 0.3) == {"overhead_bound", "eager_only_time", "fallback_op"}


@pytest.mark.parametrize(("share", "kept"), [(0.3, False), (0.49, False), (0.8, True)])
def test_a_noisy_window_withholds_an_eager_share_near_its_line(share: float, kept: bool) -> None:
    codes = _codes(NOISY, share)
    assert "noisy_profile" in codes and "overhead_bound" not in codes and "fallback_op" in codes
    assert ("eager_only_time" in codes) is kept

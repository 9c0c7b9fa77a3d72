"""compiler_bisector at the culprit (cases/numerics_culprit.py): a rerun that raises ends the
bisection with what it said, and the search's own answer stands."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from pt2doctor.cases.numerics_culprit import bisect


def test_a_rerun_that_raises_is_said_and_nothing_else_is_lost() -> None:
    def passes() -> bool:
        raise RuntimeError("boom")

    found = bisect(passes)
    assert found["available"] is None and "boom" in found["reason"]
    assert found["meaning"].startswith("compiler_bisector did not finish: RuntimeError: boom")

"""Performance fixes applied to programs (tests/perf_fix_catalog.py): each program run with
``pt2doctor run --profile`` as written and with the fix its finding names, by the program's
own flag. The truth is the fixed run's: the finding is gone, and what the program printed is
the same (to float32's rounding). What a fix saves in time is the claims tier's
(tests/integration/test_claims.py); here, what it changes in the profile."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytestmark = pytest.mark.torch_run


def _profiled(doctor_run: Any, key: str, program: str, *args: str) -> dict[str, Any]:
    run = doctor_run(key, ("--profile",), f"../time/{program}", *args)
    assert run.returncode == 0, run.stderr[-3000:]
    report: dict[str, Any] = json.loads((run.run_dir / "report.json").read_text())
    report["_printed"] = [line.split() for line in (run.run_dir / "stdout.log").read_text()
                          .splitlines() if line.startswith("checksum")]  # fmt: skip
    return report


def _codes(report: dict[str, Any]) -> set[str]:
    return {finding["code"] for finding in report["findings"]}


def _same_printed(before: dict[str, Any], after: dict[str, Any]) -> None:
    for old, new in zip(before["_printed"], after["_printed"], strict=True):
        assert float(old[1]) == pytest.approx(float(new[1]), rel=1e-6), (old, new)


def _eager_ops(report: dict[str, Any]) -> set[str]:
    """The ATen ops the window ran outside every compiled graph."""
    return {op["name"] for op in report["profile"]["eager_ops"]}


@pytest.mark.parametrize(
    ("program", "written", "fixed", "ops"),
    [
        ("mlp_block", ("--eager-mlp", "--width", "256"), ("--width", "256"),
         {"aten::linear", "aten::gelu"}),
        ("disabled_norm", (), ("--fixed",), {"aten::rsqrt", "aten::pow", "aten::mean"}),
    ],
)  # fmt: skip
def test_the_disable_removed_ends_eager_only_time(
    doctor_run: Any, program: str, written: tuple[str, ...], fixed: tuple[str, ...],
    ops: set[str],
) -> None:  # fmt: skip
    """A function behind ``torch.compiler.disable`` (mlp_block's MLP; disabled_norm's four
    RMSNorms, left from a NaN hunt): its ATen ops run eagerly, ``eager_only_time``. Compiled
    with the rest (the disable removed, as its advice says), the finding is gone and its ops
    no longer run eagerly (the profiler's events); the outputs are the same."""
    before = _profiled(doctor_run, f"eager_only_{program}", program, *written)
    after = _profiled(doctor_run, f"eager_only_{program}_fixed", program, *fixed)
    (finding,) = [f for f in before["findings"] if f["code"] == "eager_only_time"]
    assert "remove the break or the disable" in finding["advice"]
    assert "eager_only_time" not in _codes(after), _codes(after)
    assert ops <= _eager_ops(before) and not ops & _eager_ops(after), _eager_ops(after)
    _same_printed(before, after)


@pytest.mark.parametrize(
    ("program", "written", "fixed"),
    [("mlp_block", (), ("--matmul-cumsum",)), ("position_ids", (), ("--fixed",))],
)
def test_a_cumsum_written_as_a_matmul_ends_the_fallback(
    doctor_run: Any, program: str, written: tuple[str, ...], fixed: tuple[str, ...]
) -> None:
    """``cumsum`` has no Inductor lowering on CPU: ``fallback_op`` (mlp_block's block output;
    position_ids' ids from the attention mask, as Hugging Face models make them). Written with
    an op Inductor lowers (a matmul with a triangle of ones), the fallback is gone from the
    compiled graph and the results are the same. (On long rows the matmul costs more than the
    scan it replaces: the finding says a rewrite is worth it only where the op is a visible
    share of the step.)"""
    key = "profile_no_grad" if program == "mlp_block" else f"fallback_{program}"
    before = _profiled(doctor_run, key, program, *written)
    after = _profiled(doctor_run, f"fallback_{program}_fixed", program, *fixed)
    (finding,) = [f for f in before["findings"] if f["code"] == "fallback_op"]
    assert "cumsum" in finding["title"]
    assert "fallback_op" not in _codes(after), _codes(after)
    _same_printed(before, after)

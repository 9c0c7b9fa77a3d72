"""Performance fixes applied to programs (tests/perf_fix_catalog.py): each program run with
``pt2doctor run --profile`` as written and with the fix its finding names, by the program's
own flag. The truth is the fixed run's: the finding is gone, and what the program printed is
the same (to float32's rounding). What a fix saves in time is the claims tier's
(tests/integration/test_claims.py); here, what it changes in the profile."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.torch_run


def _report(run: Any) -> dict[str, Any]:
    """The run's report.json, with ``_printed``: the program's ``checksum`` lines, split."""
    assert run.returncode == 0, run.stderr[-3000:]
    report: dict[str, Any] = json.loads((run.run_dir / "report.json").read_text())
    report["_printed"] = [line.split() for line in (run.run_dir / "stdout.log").read_text()
                          .splitlines() if line.startswith("checksum")]  # fmt: skip
    return report


def _profiled(doctor_run: Any, key: str, program: str, *args: str) -> dict[str, Any]:
    return _report(doctor_run(key, ("--profile",), f"../time/{program}", *args))


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


def _guards(doctor_run: Any, key: str, program: str, env: dict[str, str]) -> dict[str, Any]:
    report = _report(doctor_run(key, ("--backend", "eager"), program, env=env))
    found = [f for f in report["findings"] if f["code"] == "guard_overhead"]
    report["_finding"] = found[0] if found else None
    return report


@pytest.mark.parametrize(
    ("program", "fix"),
    [("run_hot_guards", {"PT2D_FEWER_VARIANTS": "1"}), ("run_hot_shapes", {"PT2D_DYNAMIC": "1"})],
)
def test_fewer_variants_end_the_guard_overhead_warning(
    doctor_run: Any, program: str, fix: dict[str, str]
) -> None:
    """A frame with eight variants searched on every call of a tiny graph: ``guard_overhead``
    (run_hot_guards: one variant per mode string; run_hot_shapes: one per sequence length
    under ``dynamic=False``). With fewer variants, as its advice says (the mode's length
    passed instead of the string; the length marked dynamic), one variant: the warning is
    gone (an info line may be left: its guards are checked once a call), the estimated guard
    time falls with the variants searched, and the results are the same."""
    before = _guards(doctor_run, f"guards_{program}", program, {})
    after = _guards(doctor_run, f"guards_{program}_fixed", program, fix)
    warned = before["_finding"]
    assert warned is not None and "Fewer variants" in warned["advice"]
    assert warned["severity"] == "warning" and "(8 variants" in warned["title"]
    functions = [row["function"] for row in after["compiles"]]
    assert len(functions) == len(set(functions)), functions  # one variant each
    left = after["_finding"]  # guards checked once a call: at most an info line (a busy
    if left is not None:  # machine's slower calls can leave it under the share it needs)
        assert left["severity"] == "info" and "(1 variant," in left["title"]
        said = (left["title"], warned["title"])
        assert _guard_ms(left) < _guard_ms(warned), said
    assert before["_printed"] and before["_printed"] == after["_printed"]


def _guard_ms(finding: dict[str, Any]) -> float:
    return float(finding["title"].split("take about ")[1].split(" ms")[0])


def _start(doctor_run: Any, key: str, cache: Path, env: dict[str, str]) -> dict[str, Any]:
    return _report(doctor_run(key, (), "run_calibrated_scale",
                              env={"TORCHINDUCTOR_CACHE_DIR": str(cache), **env}))  # fmt: skip


def test_a_calibrated_scale_kept_as_a_buffer_ends_the_cache_key_constant(
    doctor_run: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """run_calibrated_scale.py: a scale calibrated from an unseeded batch, kept as a Python
    float, is baked into the graph, so a second start in a full cache dir misses:
    ``cache_key_constant`` names ``self.scale`` and says to make it a buffer. Made a buffer
    (PT2D_AS_BUFFER=1), the second start in its own cache dir is warm, and the finding is
    gone (run_baked_stats.py is the first program: tests/integration/test_cold_start.py)."""
    root = tmp_path_factory.mktemp("calibrated")
    _start(doctor_run, "calibrated_first", root / "cache", {})
    second = _start(doctor_run, "calibrated_second", root / "cache", {})
    (finding,) = [f for f in second["findings"] if f["code"] == "cache_key_constant"]
    assert "self.scale" in finding["title"] and "register_buffer" in finding["advice"]
    fixed = {"PT2D_AS_BUFFER": "1"}
    _start(doctor_run, "calibrated_fixed_first", root / "fixed-cache", fixed)
    again = _start(doctor_run, "calibrated_fixed_second", root / "fixed-cache", fixed)
    assert again["cold_start"]["state"] == "warm", again["cold_start"]["verdict"]
    assert not [f for f in again["findings"] if f["code"] == "cache_key_constant"]


def test_a_statistic_kept_as_a_tensor_removes_the_break_and_its_cost(doctor_run: Any) -> None:
    """activation_monitor.py: layer 2 of a compiled encoder keeps ``float(h.abs().amax())``
    for a dashboard, a graph break inside the encoder's loop over its layers, so Dynamo runs
    the encoder's own frame eagerly and compiles each layer apart: ``graph_break_cost`` at
    that line, and the frame skipped. The window's periods are whole steps of the loop: the
    unmonitored layers' graph runs three times a period (layers 0, 1 and 3), never a period
    of its own. The break removed as its advice says (the statistic kept as a tensor, read
    when the loop logs it): one compiled region, no break, no skipped frame, the same
    printed outputs and statistic."""
    before = _profiled(doctor_run, "break_cost_monitor", "activation_monitor")
    after = _profiled(doctor_run, "break_cost_monitor_fixed", "activation_monitor", "--fixed")
    source = Path(__file__).parents[1] / "programs" / "time" / "activation_monitor.py"
    line = next(n for n, text in enumerate(source.read_text().splitlines(), 1)
                if "# MARK:peak" in text)  # fmt: skip
    (cost,) = [f for f in before["findings"] if f["code"] == "graph_break_cost"]
    assert cost["evidence"][0].startswith(f"{source}:{line}: ")
    assert "Removing the break saves both" in cost["advice"] and cost["saves_ms"] > 0
    assert "frame_skipped" in _codes(before)
    profile = before["profile"]
    periods = profile["window"]["calls"]
    layer = next(r for r in profile["regions"] if r["calls"] > periods)
    assert layer["calls"] == 3 * periods, (layer, periods)
    assert not {"graph_break_cost", "frame_skipped", "graph_break"} & _codes(after)
    assert len(after["profile"]["regions"]) == 1
    _same_printed(before, after)


@pytest.mark.parametrize(
    ("program", "key", "written", "fixed"),
    [("mlp_block", "break_cost_block", ("--item-break",), ("--item-where",)),
     ("activation_monitor", "break_cost_monitor", (), ("--fixed",))],
)  # fmt: skip
def test_the_break_removed_merges_the_overhead_bound_regions(
    doctor_run: Any, program: str, key: str, written: tuple[str, ...], fixed: tuple[str, ...]
) -> None:
    """Regions that spend most of their time outside their kernels, split by a graph break:
    ``overhead_bound`` says removing the break merges them (mlp_block's ``.item()`` branch
    between its norm and its MLP; activation_monitor's ``float()`` in one layer, whose loop
    Dynamo then runs eagerly, a region per layer: there the calls are not requests to batch,
    and the advice says so). Applied (the branch as ``torch.where``; the statistic kept as a
    tensor): one compiled region, no break left; the outputs are the same."""
    before = _profiled(doctor_run, key, program, *written)
    after = _profiled(doctor_run, f"{key}_fixed", program, *fixed)
    (bound,) = [f for f in before["findings"] if f["code"] == "overhead_bound"]
    assert "removing it merges them" in bound["advice"]
    skipped = "a frame Dynamo skipped and runs eagerly" in bound["advice"]
    assert skipped == (program == "activation_monitor") and skipped != ("batch" in bound["advice"])
    assert len(before["profile"]["regions"]) > 1 and len(after["profile"]["regions"]) == 1
    assert not {"graph_break", "graph_break_cost"} & _codes(after)
    _same_printed(before, after)
    assert before["_printed"]


def test_inference_mode_ends_autograd_in_inference(doctor_run: Any) -> None:
    """mlp_block.py ``--grad`` serves requests with grad enabled: every compiled call goes
    through the autograd function (``autograd_in_inference``). Its other fix applied, the loop
    under ``torch.inference_mode()``: the finding is gone, no call in the window goes through
    ``CompiledFunction`` (the profiler's own events), and the outputs are the same."""
    before = _profiled(doctor_run, "profile_grad", "mlp_block", "--grad")
    after = _profiled(doctor_run, "autograd_inference_mode", "mlp_block", "--inference-mode")
    (finding,) = [f for f in before["findings"] if f["code"] == "autograd_in_inference"]
    assert "under `with torch.inference_mode():`" in finding["advice"]
    assert "autograd_in_inference" not in _codes(after)
    trace = json.loads(Path(after["profile"]["trace_file"]).read_text())
    names = {e["name"] for e in trace["traceEvents"] if e.get("ph") == "X"}
    assert "CompiledFunction" not in names and any(n.startswith("Torch-Compiled") for n in names)
    _same_printed(before, after)
    assert before["_printed"]


def test_a_try_that_removes_the_break_measures_what_removing_it_saves(doctor_run: Any) -> None:
    """activation_monitor.py with ``--try-fixes 1``: the break's fix (capture_scalar_outputs,
    the value stored on self) is re-run profiled; it removes the break with the same outputs,
    and what that saved on the compiled calls, timed without the profiler in both runs,
    replaces the profile's estimate, or the evidence says the times cannot tell. (How close the
    measure lands to the fix applied by hand: docs/PERFORMANCE.md.)"""
    report = _report(doctor_run("break_cost_monitor_try", ("--profile", "--try-fixes", "1"),
                                "../time/activation_monitor"))  # fmt: skip
    (site,) = [f for f in report["findings"] if f["code"] == "graph_break"]
    assert site["tried"]["fix"] == "torch._dynamo.config.capture_scalar_outputs = True"
    assert site["tried"]["verdict"] == "helped", site["tried"]["summary"]
    (cost,) = [f for f in report["findings"] if f["code"] == "graph_break_cost"]
    said = " ".join(cost["evidence"])
    if cost.get("saves_ms") is not None and "measured: re-run 1" in said:
        assert "removing it saved" in cost["title"] and "(estimated " in said
        moved = re.search(r"time per call of the hot loop ([\d.]+) → ([\d.]+) ms", said)
        assert moved and cost["saves_ms"] == pytest.approx(
            float(moved[1]) - float(moved[2]), abs=2e-3
        )
    else:  # a loaded machine: said, never claimed
        assert "re-run 1" in said and ("cannot tell" in said or cost.get("saves_unmeasured"))

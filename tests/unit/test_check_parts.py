"""The pure parts of ``check``: cell ids and filters, the budget and its clauses, the
steady-state statistics and the per-tensor accuracy rules."""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import pytest
import torch

from pt2doctor.cases import Built, Case, Cell, Matrix
from pt2doctor.cases.accuracy import compare_tensor, default_tolerance, same_run
from pt2doctor.cases.align import align_cell, make_optimizer
from pt2doctor.cases.case import cells, matches
from pt2doctor.cases.loader import load_cases
from pt2doctor.check.contract import BudgetError, evaluate, parse_budget
from pt2doctor.check.perf_views import frame_place
from pt2doctor.check.report import cell_notes
from pt2doctor.check.statistics import percentile, speedup_interval, steady_summary
from pt2doctor.check.timing import ModelRunner, timed_step


def _build(cell: Cell) -> Built:
    return Built(lambda x: x, (torch.ones(1),))


CASE = Case(
    "m",
    _build,
    Matrix(
        shapes={"s": 1, "l": 2},
        dtypes=("float32", "bfloat16"),
        train=(False, True),
        grad=(False, True),
        state={"flag": (0, 1)},
    ),
)


def test_cells_cover_the_matrix_and_drop_no_grad_training() -> None:
    found = cells(CASE)
    # 2 shapes x 2 dtypes x 2 flags x (eval: no_grad, grad; train: grad only) = 24
    assert len(found) == 24 == len({cell.id for cell in found})
    assert all(cell.grad for cell in found if cell.train)
    assert "m/s/bfloat16/train/grad/flag=1" in {cell.id for cell in found}
    groups = {cell.group for cell in found}  # shape and grad mode vary inside a group
    assert len(groups) == 2 * 2 * 2


def test_cell_filters() -> None:
    ids = [cell.id for cell in cells(CASE)]
    assert all("bfloat16" in i and "/train/" in i for i in ids if matches(i, ["bfloat16/train"]))
    assert sum(matches(i, ["bfloat16/train"]) for i in ids) == 4
    assert sum(matches(i, ["m/l/*"]) for i in ids) == 12
    assert not any(matches(i, ["float64"]) for i in ids)


def test_invalid_matrix_is_rejected() -> None:
    bad = Case("x", _build, Matrix(shapes={"s": 1}, dtypes=("float33",), layouts=("diagonal",)))
    with pytest.raises(ValueError, match=r"unknown dtype 'float33'.*unknown layout 'diagonal'"):
        cells(bad)


def test_budget_rejects_typos_and_wrong_types() -> None:
    with pytest.raises(BudgetError, match="did you mean max_variants_per_frame"):
        parse_budget({"max_variant_per_frame": 2})
    with pytest.raises(BudgetError, match="cold_start_s must be float"):
        parse_budget({"cold_start_s": "fast"})
    with pytest.raises(BudgetError, match="needs a written reason"):
        parse_budget({"allowed_breaks": [{"site": "a.py:3", "reason": " "}]})


def test_clauses_judge_the_worst_measured_value() -> None:
    budget = parse_budget(
        {
            "cold_start_s": 10,
            "min_speedup": 1.2,
            "max_graph_breaks": 0,
            "allowed_breaks": [{"site": "model.py:42", "reason": "logs once per epoch"}],
        }
    )
    measured = {
        "cold_start_s": (12.5, "default"),
        "min_speedup": (1.3, "default g"),
        "min_speedup_low": (1.25, "default g", 1.3, 1.38),
        "graph_breaks": [
            {"file": "/src/model.py", "line": 42, "function": "forward"},
            {"file": "/src/data.py", "line": 7, "function": "load"},
        ],
        "recompiles_after_warmup": (0, ""),
        "misaligned_cells": [],
    }
    clauses = {clause.name: clause for clause in evaluate(budget, measured)}
    assert clauses["cold_start_s"].ok is False and clauses["cold_start_s"].measured == 12.5
    assert clauses["min_speedup"].ok is True
    # The allowed break is covered by its written reason; the other one breaks the budget.
    assert (clauses["max_graph_breaks"].measured, clauses["max_graph_breaks"].ok) == (1, False)
    assert "data.py:7" in clauses["max_graph_breaks"].detail
    assert clauses["recompiles_after_warmup"].ok is True and clauses["alignment"].ok is True


def test_min_speedup_gates_on_the_interval_s_lower_bound_by_default() -> None:
    """A speedup of 1.05 whose 95% interval reaches down to 0.91 does not establish a 1.0
    budget (it passed on the point estimate); the estimate can still be asked for."""
    measured = {"min_speedup": (1.05, "default g"), "misaligned_cells": [],
                "min_speedup_low": (0.91, "default g", 1.05, 1.19)}  # fmt: skip
    (clause,) = [c for c in evaluate(parse_budget({"min_speedup": 1.0}), measured)
                 if c.name == "min_speedup"]  # fmt: skip
    assert (clause.ok, clause.measured) == (False, 0.91)
    assert clause.detail.startswith("not established: default g: speedup 1.05 meets 1")
    assert "0.91-1.19" in clause.detail
    on_estimate = parse_budget({"min_speedup": 1.0, "min_speedup_on": "estimate"})
    (clause,) = [c for c in evaluate(on_estimate, measured) if c.name == "min_speedup"]
    assert (clause.ok, clause.measured) == (True, 1.05)
    with pytest.raises(BudgetError, match="must be one of lower_bound, estimate"):
        parse_budget({"min_speedup_on": "median"})


def test_percentiles_match_the_standard_library() -> None:
    values = [0.9, 0.1, 0.5, 0.3, 0.7, 0.2, 0.8]
    quartiles = statistics.quantiles(values, n=4, method="inclusive")
    assert percentile(values, 25) == pytest.approx(quartiles[0])
    assert percentile(values, 50) == pytest.approx(statistics.median(values))
    assert percentile(values, 75) == pytest.approx(quartiles[2])


def test_speedup_interval_brackets_the_estimate() -> None:
    eager = [2.0, 2.2, 1.9, 2.1, 2.0, 2.4]
    compiled = [1.0, 1.0, 1.1, 0.9, 1.0, 1.2]
    speedup, low, high = speedup_interval(eager, compiled)
    assert speedup == pytest.approx(sum(eager) / sum(compiled))
    assert low <= speedup <= high
    assert speedup_interval([2.0] * 5, [1.0] * 5) == (2.0, 2.0, 2.0)  # no spread, no width


def test_steady_summary_flags_noise() -> None:
    samples = []
    for i, (e, c) in enumerate([(1.0, 1.0), (5.0, 1.0), (1.0, 4.0), (3.0, 1.0), (1.0, 1.0)]):
        samples += [
            {"iteration": i, "kind": "eager", "part": "call", "seconds": e},
            {"iteration": i, "kind": "compiled", "part": "call", "seconds": c},
        ]
    summary = steady_summary(samples)
    assert summary["iterations"] == 5
    assert summary["eager"]["p50_s"] == 1.0 and summary["compiled"]["p50_s"] == 1.0
    assert any("spread is wide" in w for w in summary["noise_warnings"])


def test_a_preempted_iteration_is_named_and_left_out_of_the_speedup() -> None:
    """Twenty iterations at 2 ms eager and 1 ms compiled, and one compiled call stalled 60 ms
    by the machine: the total-time speedup would read 2.0 as 0.5; left out, it stays 2.0,
    and the warning names the iteration. The percentiles keep it (tail latency is the
    user's)."""
    times = [(2e-3, 1e-3)] * 20
    times[7] = (2e-3, 60e-3)
    samples = [
        {"iteration": i, "kind": kind, "part": "call", "seconds": seconds}
        for i, pair in enumerate(times)
        for kind, seconds in zip(("eager", "compiled"), pair, strict=True)
    ]
    summary = steady_summary(samples)
    assert summary["preempted"] == [7]
    assert summary["speedup"] == pytest.approx(2.0)
    assert summary["speedup_ci95"] == [pytest.approx(2.0), pytest.approx(2.0)]
    assert summary["compiled"]["p99_s"] > 10e-3
    (warning, *_) = summary["noise_warnings"]
    assert warning.startswith(
        "1 of 20 steady iterations preempted (iteration 7: up to 60 ms against a median of 1 ms)"
    )
    quiet = steady_summary([s for s in samples if s["iteration"] != 7])
    assert quiet["preempted"] == [] and not quiet["noise_warnings"]


def test_rmse_rule_accepts_rounding_noise_but_not_a_wrong_result() -> None:
    torch.manual_seed(0)
    fp64 = torch.randn(4096, dtype=torch.float64)
    eager = fp64.to(torch.bfloat16)
    rounded = (fp64 * (1 + 1e-3)).to(torch.bfloat16)  # another rounding of the same values
    row = compare_tensor("out", eager, rounded, fp64, tol=1e-4, cosine=False)
    assert not torch.allclose(eager, rounded, atol=1e-4, rtol=1e-4)
    assert (row.passed, row.rule) == (True, "rmse")
    assert row.rmse_ratio is not None and row.rmse_ratio < 3
    wrong = compare_tensor("out", eager, eager + 1, fp64, tol=1e-2, cosine=False)
    assert not wrong.passed and wrong.max_abs_error == pytest.approx(1.0, abs=0.02)  # bf16 rounding


def test_exact_for_integers_and_mismatched_shapes_fail() -> None:
    ints = torch.arange(5)
    assert compare_tensor("i", ints, ints.clone(), None, 1e-4, False).passed
    assert not compare_tensor("i", ints, ints + 1, None, 1e-4, False).passed
    assert not compare_tensor("t", torch.ones(2, 3), torch.ones(3, 2), None, 1e-4, False).passed
    strided = torch.ones(3, 2).t()
    assert compare_tensor("t", torch.ones(2, 3), strided, None, 1e-4, False).stride_mismatch


def test_tolerances_and_nondeterminism() -> None:
    assert default_tolerance("float32", False, None) == 1e-4
    assert default_tolerance("bfloat16", True, None) > default_tolerance("float32", True, None)
    first = {"a": torch.ones(3), "b": torch.zeros(2)}
    assert same_run(first, {"a": torch.ones(3), "b": torch.zeros(2)}, 1e-4) == []
    assert same_run(first, {"a": torch.ones(3) * 2, "b": torch.zeros(2)}, 1e-4) == ["a"]


def test_the_old_harness_import_path_is_an_alias_of_cases() -> None:
    import pt2doctor.cases
    import pt2doctor.harness

    assert pt2doctor.harness.Case is pt2doctor.cases.Case
    assert pt2doctor.harness.Matrix is pt2doctor.cases.Matrix


class ScriptedClock:
    """The timing seam (``ModelRunner.clock``): each read returns the next scripted time."""

    def __init__(self, *times: float) -> None:
        self.times = iter(times)

    def __call__(self) -> float:
        return next(self.times)


def test_a_training_step_is_timed_part_by_part_with_the_runner_clock() -> None:
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    built = Built(model, (torch.randn(3, 4),), loss=lambda out: out.sum())
    cell = Cell("m", "s", 3, train=True, grad=True, id="m/s/train")
    clock = ScriptedClock(10.0, 10.25, 11.0, 11.125)  # binary fractions: exact differences
    runner = ModelRunner(model, {cell.id: built}, make_optimizer(built, model), clock=clock)
    before = model.weight.detach().clone()
    assert timed_step(runner, cell) == {"forward": 0.25, "backward": 0.75, "optimizer": 0.125}
    assert not torch.equal(model.weight, before)  # the step between the last two reads ran


def test_an_eval_call_is_one_timed_part() -> None:
    built = Built(torch.nn.Identity(), (torch.ones(2),))
    cell = Cell("m", "s", 2, id="m/s/eval")
    runner = ModelRunner(built.model, {cell.id: built}, clock=ScriptedClock(3.0, 3.5))
    assert timed_step(runner, cell) == {"call": 0.5}


def test_a_wrapped_frame_is_not_placed_twice() -> None:
    """A frame that goes through a wrapper (``through``) is placed by it already; a plain one
    gets file:line."""
    wrapped = {"function": "wrapper", "file": "/x/site-packages/transformers/utils/generic.py",
               "line": 1030, "display_name": "GPT2LMHeadModel.forward (through transformers' "
               "wrapper at utils/generic.py:1030)", "name": "GPT2LMHeadModel.forward",
               "through": "transformers' wrapper at utils/generic.py:1030"}  # fmt: skip
    plain = {"function": "forward", "file": "/w/model.py", "line": 21,
             "display_name": "Scaled.forward"}  # fmt: skip
    assert frame_place(wrapped) == ""
    assert frame_place(plain) == "/w/model.py:21"
    assert frame_place({"function": "forward", "file": "/w/old.py", "line": 3}) == "/w/old.py:3"


LIBRARY_ROOT_CASE = """
import torch

from pt2doctor.cases import Built, Case, Matrix


class Scale(torch.nn.Module):
    def forward(self, x):
        return torch.tanh(x) * 2


def build(cell):
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), Scale())
    return Built(model, (torch.randn(cell.shape, 4),), {})


CASES = [Case("seq", build, Matrix(shapes={"b2": 2}, train=(False,)))]
"""


def test_a_case_files_module_inside_a_library_module_compiles(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """nn.Sequential's forward is the compiled frame, and Dynamo inlines the case file's
    Scale.forward, whose globals are the case file's: Dynamo then imports that module by name.
    Loaded with runpy it was in no sys.modules, and every such cell crashed with
    ``ModuleNotFoundError: No module named '__pt2doctor_cases__'`` (in check and in ablate)."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    path = tmp_path / "seq_case.py"
    path.write_text(LIBRARY_ROOT_CASE)
    (case,) = load_cases(path)
    (cell,) = cells(case)
    built = case.build(cell)
    compiled = torch.compile(built.model, backend="eager")
    torch.testing.assert_close(compiled(*built.inputs), built.model(*built.inputs))


def test_a_case_file_imports_the_modules_beside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As a script does: the case file's folder is on sys.path while it loads and after (the
    workers build the model from it later)."""
    monkeypatch.setattr(sys, "path", list(sys.path))  # the loader's entry goes with the test
    (tmp_path / "mymodels_beside.py").write_text("import torch\nNet = torch.nn.Linear\n")
    path = tmp_path / "cases_beside.py"
    path.write_text(
        "import torch\nfrom mymodels_beside import Net\n"
        "from pt2doctor.cases import Built, Case, Matrix\n"
        "def build(cell):\n    return Built(Net(4, 2), (torch.randn(cell.shape, 4),), {})\n"
        "CASES = [Case('net', build, Matrix(shapes={'b3': 3}, train=(False,)))]\n"
    )
    (case,) = load_cases(path)
    (cell,) = cells(case)
    assert case.build(cell).model(torch.randn(3, 4)).shape == (3, 2)


def test_an_eval_cell_whose_model_was_built_in_training_mode_gets_a_note() -> None:
    """A freshly made nn.Module is in training mode: an eval cell whose build forgot
    model.train(cell.train) ran dropout, which only the random-ops note said before."""

    def build(cell: Cell) -> Built:
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout(0.5))
        fixed = model.train(cell.train) if cell.state["fixed"] else model
        return Built(fixed, (torch.randn(2, 4),))

    case = Case(
        "drop", build, Matrix(shapes={"b2": 2}, train=(False,), state={"fixed": [False, True]})
    )
    notes = {}
    for cell in cells(case):
        alignment = align_cell(case, cell, lambda m: torch.compile(m, backend="eager"))
        row = {"id": cell.id, "axes": {"train": cell.train}, "verdict": alignment["verdict"],
               "variants": {"default": alignment}}  # fmt: skip
        notes[cell.state["fixed"]] = (alignment["module_training"], cell_notes(row, []))
    training, forgot = notes[False]
    assert training is True
    assert any("built in training mode for an eval cell" in note for note in forgot), forgot
    assert notes[True] == (False, [])


def test_the_terminal_says_noise_once_for_every_noisy_group() -> None:
    """check_budget's two groups are both noisy (8 iterations): one line, with the widest
    spread and interval (computed here from the samples' summaries), not five."""
    import io
    import json
    from pathlib import Path

    from rich.console import Console

    from pt2doctor.check.terminal import render_check

    data = Path(__file__).resolve().parents[1] / "data" / "checks" / "check_budget.json"
    report = json.loads(data.read_text())
    steadies = [g["steady"] for v in report["variants"] for g in v["groups"] if g.get("steady")]
    assert len(steadies) == 2 and all(s["noise_warnings"] for s in steadies)
    widest = max(
        s[side]["iqr_s"] / s[side]["p50_s"] for s in steadies for side in ("eager", "compiled")
    )
    half = max((s["speedup_ci95"][1] - s["speedup_ci95"][0]) / 2 / s["speedup"] for s in steadies)
    out = io.StringIO()
    render_check(report, Console(file=out, width=400, color_system=None))
    (line,) = [text for text in out.getvalue().splitlines() if text.startswith("noise")]
    assert line.startswith("noise in every group (8 iterations)")
    assert f"latency IQR up to {widest:.0%} of the median" in line
    assert f"speedup interval up to ±{half:.0%}" in line and line.endswith("raise --iterations")


def test_the_cells_table_shows_whole_cell_ids_and_the_notes_whole_under_it() -> None:
    import copy
    import io
    import json
    from pathlib import Path

    from rich.console import Console

    from pt2doctor.check.terminal import render_check

    data = Path(__file__).resolve().parents[1] / "data" / "checks" / "check_accuracy.json"
    report = json.loads(data.read_text())

    def table_of(report: dict) -> str:
        out = io.StringIO()
        render_check(report, Console(file=out, width=80, color_system=None))
        text = out.getvalue()
        return text[text.index("Alignment per cell") : text.index("Compile variants")]

    quiet = copy.deepcopy(report)
    for cell in quiet["cells"]:
        cell["notes"] = []
        for entry in cell["variants"].values():
            entry.pop("stride_mismatches", None)
            entry.pop("eager_nondeterministic", None)
            entry.pop("where", None)  # the module where numbers diverge is a note too
    table = table_of(quiet)
    assert all(cell["id"] in table for cell in quiet["cells"]), table
    assert "notes" not in table
    # A note is printed whole under the table (a fix of 300 characters, not cut in a column).
    note = "a long note, " * 25 + "the end"
    quiet["cells"][0]["notes"] = [note]
    shown = " ".join(table_of(quiet).split())
    assert f"{quiet['cells'][0]['id']}: {note}" in shown

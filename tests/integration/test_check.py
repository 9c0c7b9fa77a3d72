"""``pt2doctor check`` on real compiles: each test runs the real CLI in a subprocess on a case
file under tests/programs/check and reads the report.json and raw samples it wrote."""

from __future__ import annotations

import importlib.util
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from pt2doctor.cli import main
from pt2doctor.report.format import md_text

CHECK_DIR = Path(__file__).resolve().parents[1] / "programs" / "check"
TIMEOUT_S = 900


class CheckRun:
    def __init__(
        self, out: Path, done: subprocess.CompletedProcess[str], elapsed: float = 0.0
    ) -> None:
        self.out, self.returncode, self.elapsed = out, done.returncode, elapsed
        self.stdout, self.stderr = done.stdout, done.stderr
        self.report: dict[str, Any] = json.loads((out / "report.json").read_text())

    def cell(self, cell_id: str) -> dict[str, Any]:
        return next(c for c in self.report["cells"] if c["id"] == cell_id)

    def clause(self, name: str) -> dict[str, Any]:
        return next(c for c in self.report["contract"]["clauses"] if c["name"] == name)

    def groups(self, variant: str = "default") -> dict[str, dict[str, Any]]:
        rows = [v for v in self.report["variants"] if v["name"] == variant]
        return {group["group"]: group for row in rows for group in row["groups"]}


def run_check(tmp: Path, env: dict[str, str], case_file: str, *flags: str) -> CheckRun:
    out = tmp / "out"
    command = [
        sys.executable,
        "-m",
        "pt2doctor",
        "check",
        str(CHECK_DIR / case_file),
        "--out",
        str(out),
        *flags,
    ]
    started = time.monotonic()
    done = subprocess.run(
        command, cwd=tmp, env=env, capture_output=True, text=True, timeout=TIMEOUT_S, check=False
    )
    elapsed = time.monotonic() - started
    assert (out / "report.json").is_file(), done.stderr[-3000:]
    return CheckRun(out, done, elapsed)


@pytest.fixture(scope="module")
def inductor_run(tmp_path_factory: pytest.TempPathFactory, run_env: dict[str, str]) -> CheckRun:
    """Inductor, default and reduce-overhead, cold starts on: ~80 s on 2 cores."""
    tmp = tmp_path_factory.mktemp("inductor-check")
    return run_check(
        tmp,
        run_env,
        "inductor_dropout.py",
        "--modes",
        "default,reduce-overhead",
        "--iterations",
        "6",
    )


def test_dropout_in_train_mode_aligns_under_inductor(inductor_run: CheckRun) -> None:
    assert inductor_run.returncode == 0, inductor_run.stderr[-2000:]
    cells = {c["id"]: c for c in inductor_run.report["cells"]}
    assert set(cells) == {"mlp/b4/eval", "mlp/b4/train", "mlp/b16/eval", "mlp/b16/train"}
    assert {c["verdict"] for c in cells.values()} == {"pass"}
    train = cells["mlp/b16/train"]["variants"]["default"]
    names = {t["name"] for t in train["tensors"]}
    # Training compares the output, the loss, every gradient and every parameter after steps.
    assert {"output", "loss", "grad.net.0.weight", "param.net.3.bias"} <= names
    assert train["fp64_reference"] is True
    output = next(t for t in train["tensors"] if t["name"] == "output")
    assert output["rmse_ratio"] is not None and output["max_abs_error"] < 1e-4
    # Dropout draws random numbers: the cell says it was compared under fallback_random.
    assert train["random_ops"] is True
    assert any("fallback_random=True" in note for note in cells["mlp/b16/train"]["notes"])


def test_min_speedup_gates_on_the_lower_bound_of_the_measured_interval(
    inductor_run: CheckRun,
) -> None:
    """The real run's speedups and bootstrap intervals, judged offline (as ``report CHECKDIR``
    does) by a ``min_speedup`` set between the lowest interval's lower bound and the worst
    estimate: the default gate (the lower bound) fails it as "not established"; the point
    estimate (``min_speedup_on = "estimate"``) passes it."""
    from pt2doctor.check.contract import parse_budget
    from pt2doctor.check.report import build_check_report

    lines = (inductor_run.out / "results.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines if line.strip()]

    def clause(**budget: Any) -> dict[str, Any]:
        report = build_check_report(records, parse_budget(budget))
        (found,) = [c for c in report["contract"]["clauses"] if c["name"] == "min_speedup"]
        return dict(found)

    low = clause(min_speedup=0.0)["measured"]
    estimate = clause(min_speedup=0.0, min_speedup_on="estimate")["measured"]
    assert low < estimate  # a measured interval around each estimate
    wanted = round((low + estimate) / 2, 4)
    on_bound = clause(min_speedup=wanted)
    assert on_bound["ok"] is False and on_bound["detail"].startswith("not established")
    assert f"meets {wanted:g}" in on_bound["detail"]
    assert clause(min_speedup=wanted, min_speedup_on="estimate")["ok"] is True


def test_cuda_graph_mode_is_not_applicable_on_cpu(inductor_run: CheckRun) -> None:
    variants = {v["name"]: v for v in inductor_run.report["variants"]}
    assert variants["reduce-overhead"]["applicable"] is False
    assert "CUDA graphs" in variants["reduce-overhead"]["reason"]
    assert variants["default"]["applicable"] is True


def test_html_report_shows_the_variant_not_applicable_and_cold_starts(
    inductor_run: CheckRun,
) -> None:
    html = (inductor_run.out / "report.html").read_text()
    assert "not applicable: this mode uses CUDA graphs, which need a CUDA device" in html
    assert "empty cache" in html and "warm cache" in html
    assert (inductor_run.out / "report.md").read_text().startswith("## pt2doctor check")


def test_cold_start_empty_vs_warm_cache(inductor_run: CheckRun) -> None:
    """What the cache did is exact (one miss, then one hit); times are single samples of two
    processes, so they are checked against what contains them, not against each other."""
    cold = next(v for v in inductor_run.report["variants"] if v["name"] == "default")["cold_start"]
    empty, warm = cold["empty_cache"], cold["warm_cache"]
    assert empty["cache"]["fx_graph"] == {"miss": 1}
    assert warm["cache"]["fx_graph"] == {"hit": 1}
    # The first result came after the process started, imported torch and compiled.
    for start in (empty, warm):
        assert start["first_result_s"] > start["compile_time_s"] > 0
    # Peak RSS is the cold-start process's own; the kernel's figure for this test process's
    # finished descendants (the check run and its workers) is an upper bound of it.
    children_peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    for start in (empty, warm):
        assert 100 < start["memory"]["peak_rss_mb"] <= children_peak_mb + 0.1


def test_steady_state_keeps_raw_samples(inductor_run: CheckRun) -> None:
    for group in inductor_run.groups().values():
        samples = [json.loads(line) for line in Path(group["samples"]).read_text().splitlines()]
        train = group["group"].split("/")[2] == "train"
        parts = {"forward", "backward", "optimizer"} if train else {"call"}
        assert {s["part"] for s in samples} == parts
        assert len(samples) == 6 * 2 * len(parts)  # iterations x (eager, compiled) x parts
        totals: dict[str, dict[int, float]] = {"eager": {}, "compiled": {}}
        for sample in samples:
            per_kind = totals[sample["kind"]]
            per_kind[sample["iteration"]] = per_kind.get(sample["iteration"], 0) + sample["seconds"]
        steady = group["steady"]
        for kind, per_iteration in totals.items():
            values = list(per_iteration.values())
            # Linear interpolation between closest ranks, as numpy's default percentile.
            cuts = statistics.quantiles(values, n=100, method="inclusive")
            assert steady[kind]["p50_s"] == pytest.approx(statistics.median(values), abs=1e-8)
            assert steady[kind]["p95_s"] == pytest.approx(cuts[94], abs=1e-8)
            assert steady[kind]["p99_s"] == pytest.approx(cuts[98], abs=1e-8)
        left_out = set(steady["preempted"])  # the machine's stalls (test_a_stalled_...)
        eager_s, compiled_s = (sum(v for i, v in totals[kind].items() if i not in left_out)
                               for kind in ("eager", "compiled"))  # fmt: skip
        assert steady["iterations"] == 6
        assert steady["speedup"] == pytest.approx(eager_s / compiled_s, abs=1e-4)
        low, high = steady["speedup_ci95"]
        assert low <= steady["speedup"] <= high
        assert group["late_compiles"] == []
        assert set(group["warmup"]["per_cell"]) == set(group["cells"])


def test_a_stalled_iteration_is_named_and_left_out_of_the_speedup(
    tmp_path: Path, run_env: dict[str, str]
) -> None:
    """tests/programs/check/preempted.py stops its own process for 0.2 s on one call, as a
    busy machine does. The truth is the raw samples': the one iteration that took over 0.15 s.
    The report names that iteration (and only it: a 20 us call's jitter is no stall), the
    speedup is the other iterations', and the terminal says so."""
    done = run_check(tmp_path, run_env, "preempted.py", "--backend", "eager",
                     "--iterations", "30", "--no-cold-start")  # fmt: skip
    (group,) = done.groups().values()
    samples = [json.loads(line) for line in Path(group["samples"]).read_text().splitlines()]
    (stalled,) = {s["iteration"] for s in samples if s["seconds"] > 0.15}
    steady = group["steady"]
    flagged = steady["preempted"]
    assert stalled in flagged
    # A busy machine (the suite's other worker) stalls others too: each one named is, in the
    # raw samples, over three times its side's median by a millisecond or more; none is a
    # call's usual jitter.
    medians = {kind: statistics.median(s["seconds"] for s in samples if s["kind"] == kind)
               for kind in ("eager", "compiled")}  # fmt: skip
    for iteration in flagged:
        assert any(s["seconds"] > 3 * medians[s["kind"]] and s["seconds"] - medians[s["kind"]]
                   >= 1e-3 for s in samples if s["iteration"] == iteration), iteration  # fmt: skip
    count = len(flagged)
    assert steady["noise_warnings"][0].startswith(f"{count} of 30 steady iterations preempted")
    kept = {kind: sum(s["seconds"] for s in samples
                      if s["kind"] == kind and s["iteration"] not in flagged)
            for kind in ("eager", "compiled")}  # fmt: skip
    assert steady["speedup"] == pytest.approx(kept["eager"] / kept["compiled"], abs=1e-4)
    assert max(steady["compiled"]["p99_s"], steady["eager"]["p99_s"]) > 0.1  # kept there
    said = f"{count} iteration{'s' if count > 1 else ''} preempted (left out of the speedup)"
    assert said in " ".join(done.stdout.split())


def test_warmup_reuses_what_alignment_compiled(inductor_run: CheckRun) -> None:
    """The eval group draws no random numbers, so alignment compiles under the user's config
    and in the warmup's order (b4 static, then b16 dynamic): the warmup's compiles in the same
    process are FX graph and AOTAutograd cache hits, not a second build. The train group's
    dropout is aligned under fallback_random (part of the cache key), so it builds again."""
    groups = inductor_run.groups()
    eval_group = groups["mlp/float32/eval/cpu"]
    assert eval_group["compiles"] == 2  # b4, then b16 as a dynamic graph
    assert eval_group["cache"]["fx_graph"] == {"hit": 2}
    assert eval_group["cache"]["aotautograd"] == {"hit": 2}
    cells = {c["id"]: c["variants"]["default"] for c in inductor_run.report["cells"]}
    assert not cells["mlp/b16/eval"]["random_ops"] and cells["mlp/b16/train"]["random_ops"]


def test_custom_op_with_a_wrong_fake_is_named_on_the_cell(
    tmp_path: Path, run_env: dict[str, str]
) -> None:
    """The failing cell names the custom op, opcheck's failing test and the fix; the contract
    clause custom_ops_opcheck covers every custom op the model calls."""
    run = run_check(
        tmp_path, run_env, "../ablate/custom_op_fake.py", "--no-cold-start", "--iterations", "2"
    )
    assert run.returncode == 1, run.stderr[-2000:]
    cell = run.cell("fake/b10")
    assert cell["verdict"] == "error"
    assert "torch.ops.pt2doctor_test.rms_score" in cell["variants"]["default"]["error"]
    note = next(n for n in cell["notes"] if n.startswith("user side (custom_op_fake)"))
    assert "torch.ops.pt2doctor_test.rms_score.default fails" in note
    assert "test_faketensor (the kernel returns shape [10], register_fake [10, 24])" in note
    assert "register_fake return what its kernel returns" in note
    clause = run.clause("custom_ops_opcheck")
    assert clause["ok"] is False and clause["measured"] == "1 of 1 custom op failing"
    assert "pt2doctor_test.rms_score.default (" in clause["detail"]
    assert "test_faketensor" in clause["detail"]
    # The note is the fix: whole in report.md, under the failing cells, and in the terminal
    # (under the cell table, not a narrow column that cut it).
    markdown = (run.out / "report.md").read_text()
    assert f"- <code>fake/b10</code>: {md_text(note)}" in markdown
    assert " ".join(note.split()) in " ".join(run.stdout.split())


def test_bf16_rounding_is_noted_as_precision_by_design(
    tmp_path: Path, run_env: dict[str, str]
) -> None:
    """The bfloat16 multiply chain fails alignment (Inductor rounds once, eager after each
    op); rerun with emulate_precision_casts=True it passes, and the cell says so."""
    run = run_check(
        tmp_path, run_env, "../ablate/bf16_casts.py", "--no-cold-start", "--iterations", "2"
    )
    cell = run.cell("bf16/b64")
    assert cell["verdict"] == "fail", cell
    assert cell["variants"]["default"]["precision_casts"] == "pass"
    assert any(n.startswith("by design (precision): default matches eager") for n in cell["notes"])


@pytest.fixture(scope="module")
def budget_run(tmp_path_factory: pytest.TempPathFactory, run_env: dict[str, str]) -> CheckRun:
    """A check whose budget fails: the budget file is gone once it has run (what it ran with is
    kept in results.jsonl)."""
    tmp = tmp_path_factory.mktemp("budget-check")
    budget = tmp / "pt2doctor.toml"
    budget.write_text("max_variants_per_frame = 1\ntop_fix_tried = true\n")
    flags = ("--backend", "eager", "--no-cold-start", "--iterations", "8", "--budget", str(budget))
    run = run_check(tmp, run_env, "variants_budget.py", *flags)
    budget.unlink()
    return run


def test_variant_budget_and_recompile_after_warmup(budget_run: CheckRun) -> None:
    run = budget_run
    assert run.returncode == 1
    variants = run.clause("max_variants_per_frame")
    assert (variants["ok"], variants["measured"], variants["budget"]) == (False, 2, 1)
    groups = run.groups()
    assert groups["grow/float32/eval/cpu"]["max_variants_per_frame"] == 2
    assert groups["grow/float32/eval/cpu"]["late_compiles"] == []
    late = groups["flip/float32/train/cpu"]["late_compiles"]
    assert len(late) == 1
    guard = late[0]["failed_guards"][0]
    assert "double_output" in guard["text"] and guard["category"] == "attribute_value"
    # Named as the user knows it (the module's class), in the report and what renders it.
    frames = groups["grow/float32/eval/cpu"]["frames"]
    assert [(f["function"], f["display_name"]) for f in frames] == [("forward", "Scaled.forward")]
    assert late[0]["display_name"] == "Scaled.forward"
    assert (
        "<code>Scaled.forward</code> recompiled after warmup" in (run.out / "report.md").read_text()
    )
    assert "Scaled.forward" in run.stdout
    source = (CHECK_DIR / "variants_budget.py").read_text().splitlines()
    assert "self.double_output else" in source[guard["source"]["line"] - 1]
    recompiles = run.clause("recompiles_after_warmup")
    assert (recompiles["ok"], recompiles["measured"]) == (False, 1)


def test_the_top_fix_clause_reruns_the_group_with_the_fix_and_fails_when_it_helps(
    budget_run: CheckRun,
) -> None:
    """``top_fix_tried = true``: check runs the ``grow`` group again with its report's first
    fix applied (maybe_mark_dynamic on forward's ``x``, through torch.compile's wrapper): one
    compile instead of two, so a fix proven to help is left unapplied and the clause fails.
    ``flip``'s fix is code (pre-warm both states): nothing to try."""
    groups = budget_run.groups()
    grow = groups["grow/float32/eval/cpu"]
    assert grow["top_fix"]["trial"]["marks"] == [{"arg": "x", "dim": 0}]
    tried = grow["tried"]
    assert (tried["verdict"], tried["before"]["compiles"], tried["after"]["compiles"]) == (
        "helped", 2, 1)  # fmt: skip
    assert any(event.get("ok") for event in tried["applied"])  # the marks reached torch.compile
    assert groups["flip/float32/train/cpu"].get("top_fix") is None
    assert "tried" not in groups["flip/float32/train/cpu"]
    clause = budget_run.clause("top_fix_tried")
    assert clause["ok"] is False and clause["measured"] == "1 fix tried, 1 helped"
    assert "torch._dynamo.maybe_mark_dynamic(x, 0) helped (recompiles 1 → 0, compiles 2 → 1)" \
        in clause["detail"]  # fmt: skip


def test_crash_and_hang_become_cell_verdicts(tmp_path: Path, run_env: dict[str, str]) -> None:
    run = run_check(
        tmp_path,
        run_env,
        "crashing.py",
        "--backend",
        "eager",
        "--no-cold-start",
        "--iterations",
        "4",
        "--cell-timeout",  # a good cell's unit of work takes well under 2 s in a forked worker
        "6",
    )
    assert run.returncode == 1
    crashed = run.cell("fragile/bad/kind=segfault")
    assert crashed["verdict"] == "crash"
    assert "SIGSEGV" in crashed["variants"]["default"]["error"]
    hung = run.cell("fragile/bad/kind=hang")
    assert hung["verdict"] == "timeout"
    raised = run.cell("fragile/bad/kind=raises")
    assert raised["verdict"] == "error"
    assert "ValueError: no weights for this bucket" in raised["variants"]["default"]["error"]
    for good in (
        "fragile/good/kind=segfault",
        "fragile/good/kind=hang",
        "fragile/good/kind=raises",
    ):
        assert run.cell(good)["verdict"] == "pass"
    for group in run.groups().values():  # the rest of each group was benchmarked after all
        kind = group["group"].rsplit("kind=", 1)[1]
        assert group["cells"] == [f"fragile/good/kind={kind}"]
        assert group["steady"]["iterations"] == 4


def test_interrupted_check_keeps_what_it_measured(tmp_path: Path, run_env: dict[str, str]) -> None:
    out = tmp_path / "out"
    command = [
        sys.executable,
        "-m",
        "pt2doctor",
        "check",
        str(CHECK_DIR / "crashing.py"),
        "--out",
        str(out),
        "--backend",
        "eager",
        "--no-cold-start",
        "--cell-timeout",
        "60",
    ]
    process = subprocess.Popen(
        command,
        cwd=tmp_path,
        env=run_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # As from a terminal: a test run started in the background inherits SIGINT ignored.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 300
    results = out / "results.jsonl"
    reached = False
    while not reached and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.2)  # the segfault cell's verdict, then the hang starts
        text = results.read_text() if results.exists() else ""
        reached = '"verdict":"crash"' in text and text.count('"record":"alignment"') >= 2
    if not reached:
        process.kill()
        _, stderr = process.communicate(timeout=60)
        pytest.fail(
            f"check never reached the hanging cell (exit {process.returncode}): {stderr[-2000:]}"
        )
    os.kill(process.pid, signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr[-2000:]
    report = json.loads((out / "report.json").read_text())
    assert report["interrupted"] is True
    verdicts = {c["id"]: c["verdict"] for c in report["cells"]}
    assert verdicts["fragile/bad/kind=segfault"] == "crash"
    assert verdicts["fragile/good/kind=segfault"] == "pass"
    assert verdicts["fragile/good/kind=hang"] == "not run"


def test_layout_grad_mode_and_autocast_vary_inside_one_group(
    tmp_path: Path, run_env: dict[str, str]
) -> None:
    run = run_check(
        tmp_path,
        run_env,
        "call_axes.py",
        "--backend",
        "eager",
        "--no-cold-start",
        "--iterations",
        "8",
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert {c["verdict"] for c in run.report["cells"]} == {"pass"}
    for cell in run.report["cells"]:  # autocast really ran: the conv output is bf16
        (output,) = cell["variants"]["default"]["tensors"]
        bf16 = cell["axes"]["autocast"] == "bfloat16"
        assert output["dtype"] == ("bfloat16" if bf16 else "float32")
    (group,) = run.groups().values()
    assert len(group["cells"]) == 8  # layout, grad mode and autocast are call-level axes
    # Dynamo guards on all three, so warmup compiled one variant per combination, and the
    # steady state that followed, drawn from the same cells, compiled nothing.
    assert group["max_variants_per_frame"] == 8
    assert group["late_compiles"] == []
    report = json.loads((Path(group["samples"]).parent / "compile-report.json").read_text())
    categories = {
        guard["category"]
        for frame in report["frames"]
        for recompile in frame["recompiles"]
        for guard in recompile["failed_guards"]
    }
    assert {"stride", "grad_mode", "autocast"} <= categories


@pytest.fixture(scope="module")
def regional_run(tmp_path_factory: pytest.TempPathFactory, run_env: dict[str, str]) -> CheckRun:
    """``--backend eager``, cold starts on: two variants (whole model, regional), each with its
    group worker and its two cold starts."""
    tmp = tmp_path_factory.mktemp("regional-check")
    return run_check(tmp, run_env, "repeated_blocks.py", "--backend", "eager", "--iterations", "6")


def test_regional_variant_compiles_each_repeated_block(regional_run: CheckRun) -> None:
    run = regional_run
    assert run.returncode == 0, run.stderr[-2000:]
    names = [v["name"] for v in run.report["variants"]]
    assert names == ["default", "regional:default"]
    (whole,) = run.groups("default").values()
    (regional,) = run.groups("regional:default").values()
    # The whole model compiles Stack.forward; regionally only Block.forward is compiled, once
    # for all four blocks (one shape, no grad): they share the artifact.
    assert [f["function"] for f in whole["frames"]] == ["forward"]
    assert whole["frames"][0]["line"] != regional["frames"][0]["line"]
    assert regional["regional"] == {
        "blocks": 4,
        "block_compiles": 1,
        "recompile_causes": [],
        "shared": True,
    }
    assert regional["cells"] == ["stack/b4"] and regional["steady"]["iterations"] == 6
    for variant in run.report["variants"]:  # each variant has its own cold starts
        assert set(variant["cold_start"]) == {"empty_cache", "warm_cache"}
        assert variant["cold_start"]["empty_cache"]["first_result_s"] > 0
    assert run.cell("stack/b4")["variants"].keys() == {"default", "regional:default"}


def test_check_cost_accounts_for_its_wall_time(regional_run: CheckRun) -> None:
    """``check`` reports where its own wall time went, compared with what the file system (the
    worker directories) and this test's clock say independently."""
    run, out, elapsed = regional_run, regional_run.out, regional_run.elapsed
    cost = run.report["cost"]
    workers = list(out.glob("groups/*/*/attempt-*")) + list(out.glob("cold/*/*/*_cache"))
    assert cost["launches"] == len(workers) > 0
    parts = [key for key in cost if key.endswith("_s") and key not in ("wall_s", "compile_s",
             "warmup_compile_s", "command_s", "parent_s")]  # fmt: skip
    assert sum(cost[key] for key in parts) == pytest.approx(cost["wall_s"], abs=1e-3)
    for key in ("process_start_s", "align_eager_s", "fp64_reference_s", "align_compile_s",
                "warmup_s", "measure_s", "cold_start_s"):  # fmt: skip
        assert cost[key] > 0, key
    # The workers are most of the check; the parent only plans, polls and writes the report.
    assert 0.5 * elapsed <= cost["wall_s"] <= elapsed
    # The command's own time: from its start (after the interpreter and pt2doctor's imports,
    # which this test's clock also counts) to its last worker; the rest is the parent's.
    assert cost["wall_s"] < cost["command_s"] <= elapsed
    assert cost["parent_s"] == pytest.approx(cost["command_s"] - cost["wall_s"], abs=1e-5)
    useful = cost["compile_s"] + cost["measure_s"]
    assert cost["ratio"] == pytest.approx(cost["wall_s"] / useful, rel=1e-2)
    printed = " ".join(run.stdout.split())
    assert f"check took {cost['command_s']:.1f} s: its own process {cost['parent_s']:.1f} s" in (
        printed
    )
    processes = f"{cost['launches']} process{'es' if cost['launches'] != 1 else ''}"
    assert f"worker {processes} {cost['wall_s']:.1f} s" in printed
    # The HTML page says it too, under the contract.
    page = " ".join((out / "report.html").read_text().split())
    assert f"check took {cost['command_s']:.1f} s: its own process {cost['parent_s']:.1f} s" in page


def _marked_line(name: str, mark: str) -> int:
    lines = (CHECK_DIR / name).read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if f"# MARK: {mark}" in line)


def test_graph_break_budget_with_an_allow_list(tmp_path: Path, run_env: dict[str, str]) -> None:
    allowed = _marked_line("graph_breaks.py", "allowed")
    unexplained = _marked_line("graph_breaks.py", "unexplained")
    (tmp_path / "pt2doctor.toml").write_text(
        "max_graph_breaks = 0\n"
        f"allowed_breaks = [{{site = 'graph_breaks.py:{allowed}', reason = 'progress log'}}]\n"
    )
    run = run_check(
        tmp_path,
        run_env,
        "graph_breaks.py",
        "--backend",
        "eager",
        "--no-cold-start",
        "--iterations",
        "4",
    )
    assert run.returncode == 1
    (group,) = run.groups().values()
    assert {b["site"]["line"] for b in group["graph_breaks"]} == {allowed, unexplained}
    clause = run.clause("max_graph_breaks")
    assert (clause["ok"], clause["measured"], clause["budget"]) == (False, 1, 0)
    assert clause["detail"].endswith(f"graph_breaks.py:{unexplained}")
    assert run.cell("chatty/b4")["verdict"] == "pass"


def test_an_output_eager_computes_as_inf_is_said_and_compared_where_finite(
    tmp_path: Path, run_env: dict[str, str]
) -> None:
    """A hand-written log-sum-exp in float16 overflows: eager's scores are inf, compiled's the
    same inf, the fp64 reference finite (measured here with plain torch). The cell passes with
    no error over the finite elements and a note that says so; the terminal report prints it
    (it crashed on the inf)."""
    import torch

    spec = importlib.util.spec_from_file_location("overflow_half", CHECK_DIR / "overflow_half.py")
    assert spec is not None and spec.loader is not None
    case = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(case)
    torch.manual_seed(0)
    model = case.Scorer().half().eval()
    x = torch.randn(64, 128, dtype=torch.float16) * 3
    with torch.no_grad():
        eager = model(x)
        fp64 = case.Scorer().double().eval()
        fp64.load_state_dict(model.state_dict())
        reference = fp64(x.double())
    assert torch.isinf(eager).all() and torch.isfinite(reference).all()
    run = run_check(tmp_path, run_env, "overflow_half.py", "--no-cold-start", "--iterations", "4")
    assert run.returncode == 0, run.stderr[-3000:]
    cell = run.cell("lse/b64/float16")
    (tensor,) = cell["variants"]["default"]["tensors"]
    assert cell["verdict"] == "pass" and tensor["max_abs_error"] == 0.0
    assert tensor["nonfinite"] == 64 and tensor["nonfinite_fp64_finite"] is True
    (note,) = [n for n in cell["notes"] if "inf or NaN" in n]
    assert "in 64 of 64 elements where the fp64 reference is finite: float16 overflows" in note
    assert "Traceback" not in run.stderr and "inf or NaN in 64 of 64" in " ".join(
        run.stdout.split()
    )
    float32 = run.cell("lse/b64/float32")["variants"]["default"]["tensors"][0]
    assert "nonfinite" not in float32


def test_report_rejudges_a_check_directory_offline(
    budget_run: CheckRun, capsys: pytest.CaptureFixture[str]
) -> None:
    run = budget_run  # its budget file is gone: the budget it ran with is in results.jsonl
    assert run.returncode == 1
    capsys.readouterr()
    assert main(["report", str(run.out), "--format", "json"]) == 1  # in process: no torch run
    assert json.loads(capsys.readouterr().out) == run.report

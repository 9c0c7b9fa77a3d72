"""A check worker: ``python -m pt2doctor.check.worker SPEC.json`` runs one group of cells
under one compile variant (alignment, warmup, steady state) or one cold start, in a fresh
process, and appends what it measures to ``events.jsonl`` as it goes (so a crash or a hang
loses only the cell in flight: the parent attributes it from the last ``cell_start``)."""

from __future__ import annotations

import time
import traceback
from pathlib import Path
from typing import IO, Any

import orjson

from pt2doctor import torchcompat
from pt2doctor.analysis.findings.verdicts import next_trial, report_outcome
from pt2doctor.cases.align import align_cell
from pt2doctor.cases.case import Case, Cell, cells
from pt2doctor.cases.loader import spec_case
from pt2doctor.cases.variants import CompileVariant, compile_model
from pt2doctor.check.timing import GroupModels, memory_now, timed_step
from pt2doctor.forkserver import exit_now
from pt2doctor.workers import Emit, one_line, serve


def _case_and_cells(spec: dict[str, Any]) -> tuple[Case, list[Cell]]:
    case = spec_case(spec)
    by_id = {cell.id: cell for cell in cells(case)}
    return case, [by_id[cell_id] for cell_id in spec["cells"]]


LOW_PRECISION = ("bfloat16", "float16")


def custom_ops_phase(case: Case, cell: Cell, variant: CompileVariant, emit: Emit) -> None:
    """Every custom op the cell's eager run calls, checked alone on the inputs it received
    (torch.library.opcheck, eager vs compiled with the variant's backend): the
    ``custom_ops`` event, only when the model calls one."""
    from pt2doctor.cases.align import custom_op_calls
    from pt2doctor.inprocess.custom_ops import check_recorded_call

    emit("cell_start", cell=cell.id, phase="align")
    try:
        calls = custom_op_calls(case, cell)
    except Exception:  # the factory or the eager model fails: the cell's alignment says so
        return
    if calls:
        ops = [
            check_recorded_call(name, op, args, kwargs, variant.backend)
            for name, (op, args, kwargs) in calls.items()
        ]
        emit("custom_ops", cell=cell.id, ops=ops)


def _precision_casts(case: Case, cell: Cell, variant: CompileVariant) -> str | None:
    """For a low-precision cell that fails: does it pass when Inductor rounds every
    intermediate like eager does (``emulate_precision_casts``)? pass / fail / None."""
    low = cell.dtype in LOW_PRECISION or cell.autocast in LOW_PRECISION
    if not low or variant.backend != "inductor":
        return None
    try:
        with torchcompat.inductor_config_patch(emulate_precision_casts=True):
            again = align_cell(case, cell, lambda model: compile_model(model, variant))
    except Exception:
        return "fail"
    return "pass" if again["verdict"] == "pass" else "fail"


# Cells aligned between two Dynamo resets. Without a reset, each cell's new shape or state adds
# a variant until the recompile limit (8 by default) silently sends later cells to eager, and
# they would pass unchecked; with a reset per cell, every cell after the first compiles a static
# graph the warmup never asks for (the warmup's second shape goes dynamic) and the warmup builds
# it again. Four cells in a row compile what the warmup will, so its lookups hit the cache.
CELLS_PER_RESET = 4


def align_phase(case: Case, group: list[Cell], variant: CompileVariant, emit: Emit) -> None:
    import torch

    if group:
        custom_ops_phase(case, group[0], variant, emit)
    for index, cell in enumerate(group):
        if index and index % CELLS_PER_RESET == 0:
            torch.compiler.reset()
        emit("cell_start", cell=cell.id, phase="align")
        try:
            result = align_cell(
                case,
                cell,
                lambda model: compile_model(model, variant),
                inductor=variant.backend == "inductor",
            )
            if result["verdict"] == "fail":
                torch.compiler.reset()
                result["precision_casts"] = _precision_casts(case, cell, variant)
        except Exception as error:  # the cell's verdict; the next cell goes on
            result = {
                "verdict": "error",
                "error": one_line(error),
                "traceback": traceback.format_exc()[-4000:],
            }
        emit("alignment", cell=cell.id, **result)
        if result["verdict"] != "pass":  # no graph compiled under a toggle or half-built is reused
            torch.compiler.reset()


def warmup_phase(models: GroupModels, group: list[Cell], emit: Emit) -> None:
    started = time.perf_counter()
    for cell in group:
        emit("cell_start", cell=cell.id, phase="warmup")
        try:
            timed_step(models.eager, cell)  # eager's first call has its own one-time costs
            seconds = sum(timed_step(models.compiled, cell).values())
            emit("warmup", cell=cell.id, seconds=seconds)
        except Exception as error:
            emit("warmup", cell=cell.id, error=one_line(error))
    emit("warmup_done", seconds=time.perf_counter() - started)


def steady_phase(
    models: GroupModels, group: list[Cell], spec: dict[str, Any], samples: IO[bytes], emit: Emit
) -> None:
    emit("cell_start", cell=None, phase="steady")
    draw = models.traffic(group, int(spec["seed"]))
    for iteration in range(int(spec["iterations"])):
        cell = draw()
        order = ("eager", "compiled") if iteration % 2 == 0 else ("compiled", "eager")
        for kind in order:  # interleaved, alternating which goes first
            for part, seconds in timed_step(getattr(models, kind), cell).items():
                samples.write(
                    orjson.dumps(
                        {
                            "iteration": iteration,
                            "cell": cell.id,
                            "kind": kind,
                            "part": part,
                            "seconds": seconds,
                        }
                    )
                    + b"\n"
                )
    samples.flush()


def profile_phase(
    models: GroupModels, group: list[Cell], calls: int, out: Path, emit: Emit
) -> None:
    """``check --profile``: ``calls`` steady-state calls of the group's first cell profiled,
    eager then compiled, outside the timed samples; each kind's Chrome trace is kept in the
    attempt's directory, bounded by the same window marks as ``run --profile``."""
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    from pt2doctor.rundir import PROFILE_END_MARK, PROFILE_START_MARK

    cell = group[0]
    activities = [ProfilerActivity.CPU]
    if torch.cuda.is_available():
        activities.append(ProfilerActivity.CUDA)
    traces = {}
    for kind in ("eager", "compiled"):
        runner = getattr(models, kind)
        timed_step(runner, cell)  # the other kind ran last: caches warm for this one
        path = out / f"profile-{kind}.json"
        with profile(activities=activities) as prof:
            with record_function(PROFILE_START_MARK):
                pass
            for _ in range(calls):
                timed_step(runner, cell)
            with record_function(PROFILE_END_MARK):
                pass
        prof.export_chrome_trace(str(path))
        traces[kind] = str(path)
    emit("profile", cell=cell.id, calls=calls, **traces)


def _compile_facts(report: dict[str, Any], models: GroupModels) -> dict[str, Any]:
    """What the captured compile report says about this group: variants, breaks, late
    compiles with their failed guards, and whether repeated blocks share one artifact."""
    failed = {
        (r["compile_id"], f["stream"]): r["failed_guards"]
        for f in report["frames"]
        for r in f["recompiles"]
    }
    names = {(f["stream"], f["frame_id"]): f for f in report["frames"]}
    late = [
        {
            "compile_id": c["compile_id"],
            "function": c["function"],
            "display_name": names.get((c["stream"], c["frame_id"]), c).get(
                "display_name", c["function"]
            ),
            "through": names.get((c["stream"], c["frame_id"]), {}).get("through"),
            "file": c["file"],
            "line": c["line"],
            "cause": c["cause"],
            "failed_guards": failed.get((c["compile_id"], c["stream"]), []),
        }
        for c in report["compiles"]
        if c["after_warmup"]
    ]
    frames = [
        {
            key: frame[key]
            for key in (
                "function",
                "display_name",
                "through",
                "file",
                "line",
                "variants",
                "limit_hit",
                "skipped",
                "is_resume",
            )
        }
        for frame in report["frames"]
    ]
    breaks = [
        {key: site[key] for key in ("site", "category", "reason", "hits", "advice")}
        for site in report["graph_breaks"]
    ]
    # The report's first fix pt2doctor can apply itself, for a budget that wants it tried
    # (top_fix_tried), and the numbers a try is judged by.
    candidates = [list(f["tryable"]) for f in report["findings"] if f.get("tryable")]
    top = next_trial(candidates, {})
    finding = next((f for f in report["findings"] if top in (f.get("tryable") or [])), None)
    facts = {
        "top_fix": None
        if top is None or finding is None
        else {"trial": top, "finding": finding["code"], "title": finding["title"]},
        "outcome": report_outcome(report),
        "frames": frames,
        "graph_breaks": breaks,
        "late_compiles": late,
        "compiles": report["summary"]["compiles"],
        "compile_time_s": report["summary"]["total_compile_time_s"],
        "cache": report["summary"]["cache"],
        "failures": len(report["failures"]),
    }
    if models.variant.regional:
        facts["regional"] = models.block_sharing(report["frames"])
    return facts


def build_cells(case: Case, group: list[Cell], emit: Emit) -> tuple[list[Cell], dict[str, Any]]:
    """Each cell's model and inputs; a cell whose factory raises gets that as its warmup
    error and leaves the group, so the other cells are still warmed up and measured."""
    built, kept = {}, []
    for cell in group:
        emit("cell_start", cell=cell.id, phase="warmup")
        try:
            built[cell.id] = case.build(cell)
        except Exception as error:
            emit("warmup", cell=cell.id, error=one_line(error))
            continue
        kept.append(cell)
    return kept, built


def run_group(spec: dict[str, Any], out: Path, emit: Emit) -> None:
    import torch

    from pt2doctor.inprocess.session import Watch

    case, group = _case_and_cells(spec)
    variant = CompileVariant.from_dict(spec["variant"])
    emit("environment", environment=torchcompat.environment())
    applied: list[dict[str, Any]] = []
    if spec.get("try_fix"):  # a re-run of the group with its top fix applied (top_fix_tried)
        from pt2doctor.torchcompat.apply import apply_fix

        apply_fix(spec["try_fix"], lambda kind, **fields: applied.append({"kind": kind, **fields}))
    if spec.get("align_cells"):
        align_phase(case, [c for c in group if c.id in spec["align_cells"]], variant, emit)
    torch.compiler.reset()
    if not spec.get("bench", True):
        emit("done", memory=memory_now())
        return
    group, builts = build_cells(case, group, emit)
    if not group:
        emit("done", memory=memory_now())
        return
    models = GroupModels.build(case, group, variant, builts=builts)
    emit("model", repeated_blocks=models.blocks)
    with (out / "samples.jsonl").open("ab") as samples, Watch(out / "capture") as watch:
        warmup_phase(models, group, emit)
        watch.mark_warmup_done()
        steady_phase(models, group, spec, samples, emit)
        report = watch.report()
    (out / "compile-report.json").write_bytes(orjson.dumps(report, option=orjson.OPT_INDENT_2))
    facts = _compile_facts(report, models)
    if spec.get("try_fix"):
        facts["try_fix_applied"] = applied
    emit("steady_done", cells=[cell.id for cell in group], **facts)
    if spec.get("profile_calls"):
        try:
            profile_phase(models, group, int(spec["profile_calls"]), out, emit)
        except Exception as error:  # the measurements are kept: say why there is no profile
            emit("profile", cell=group[0].id, error=one_line(error))
    emit("done", memory=memory_now())


def run_cold(spec: dict[str, Any], out: Path, emit: Emit) -> None:
    """First call end to end in this fresh process: imports, build, compile, first result."""
    started = time.time()
    import torch  # noqa: F401  (timed: part of every cold start)

    from pt2doctor.inprocess.session import Watch

    imported = time.time()
    case, group = _case_and_cells(spec)
    variant = CompileVariant.from_dict(spec["variant"])
    models = GroupModels.build(case, group[:1], variant, with_eager=False)
    built = time.time()
    with Watch(out / "capture") as watch:
        timed_step(models.compiled, group[0])
        finished = time.time()
        summary = watch.report()["summary"]
    spawned = float(spec.get("spawn_time", started))
    emit(
        "cold",
        first_result_s=finished - spawned,
        interpreter_start_s=started - spawned,
        import_s=imported - started,
        build_s=built - imported,
        first_call_s=finished - built,
        compile_time_s=summary["total_compile_time_s"],
        compiles=summary["compiles"],
        cache=summary["cache"],
        memory=memory_now(),
    )


def main(argv: list[str] | None = None) -> int:
    return serve(argv, lambda spec: run_cold if spec["kind"] == "cold" else run_group)


if __name__ == "__main__":
    exit_now(main())

"""Every finding code, declared once, as data: the registry the plan, the severity order, the
advice tables and docs/report-schema.md's table of codes read.

A finding's ``code`` is a :data:`Code` (mypy rejects any other string) and
:class:`~pt2doctor.analysis.findings.model.Finding` refuses a code or a severity its entry
does not declare, so a new finding cannot silently become "performance" in the plan or go
undocumented: ``tests/unit/test_finding_codes.py`` checks the table in the docs against
:func:`docs_table` and every code's step.

Adding a finding: add its code to :data:`Code` and a :class:`CodeSpec` to :data:`SPECS`, write
its analysis (it returns ``Finding``\\ s with a typed ``subject``), add a test, and run
``python -m pt2doctor.analysis.findings.codes`` to write the docs table (docs/ARCHITECTURE.md,
"Adding a finding").
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

Severity = Literal["error", "warning", "info"]
SEVERITIES: tuple[Severity, ...] = get_args(Severity)

Step = Literal["correctness", "recompiles", "graph breaks", "performance"]
"""The plan's steps, in the practice's order: correctness, then recompiles, then graph
breaks, then performance."""
STEPS: tuple[Step, ...] = get_args(Step)

Code = Literal[
    # from the trace (analysis/findings/trace_findings.py)
    "compile_failure",
    "recompile_limit_hit",
    "frame_skipped",
    "recompiles",
    "large_graph",
    "graph_break",
    "parse_problems",
    # what the compiler built (analysis/built/)
    "unrolled_loop",
    "repeated_blocks",
    "many_small_inputs",
    "fallback_op",
    # what only a captured run shows (analysis/findings/run_findings.py)
    "program_failed",
    "unexplained_recompile_after_warmup",
    "compiled_but_never_called",
    "no_compilation_observed",
    "probes_unavailable",
    "triage_run",
    "hook_changed_after_compile",
    # cold start (analysis/coldstart/)
    "guard_overhead",
    "cache_bypass",
    "cache_key_constant",
    "stale_cache_constant",
    # the profile (analysis/time/findings.py)
    "autograd_in_inference",
    "overhead_bound",
    "library_bound",
    "graph_break_cost",
    "eager_only_time",
    "eager_outside_compiled",
    "compiled_slower_than_eager",
    "eager_optimizer",
    "data_loading",
    "noisy_profile",
    # the device side of a profiler trace (analysis/time/device_findings.py)
    "dtoh_sync",
    "launch_bound",
    "cudagraphs",
    "exposed_communication",
    "tf32_off",
    # several ranks (analysis/ranks/findings.py)
    "rank_compile_skew",
    "rank_specific_recompile",
    "rank_cache_imbalance",
    "rank_graph_mismatch",
    "rank_specific_failure",
    "rank_name_mismatch",
    "rank_duplicate_logs",
]
CODES: tuple[Code, ...] = get_args(Code)

Area = Literal["trace", "built", "run", "cold start", "profile", "device", "ranks"]
"""Where a code comes from: what the report must hold for it to appear."""


@dataclass(frozen=True, slots=True)
class CodeSpec:
    """One finding code: what it means, how severe it can be, and where it goes in the plan."""

    code: Code
    area: Area
    step: Step | None
    """The plan step it belongs to; None: it is about the capture, not the program, and never
    enters the plan."""
    severities: tuple[Severity, ...]
    """The severities it can have, most severe first."""
    rule: str
    """When it is given and how its severity is decided (the docs' row)."""


def _spec(
    code: Code, area: Area, step: Step | None, severities: str, rule: str
) -> tuple[Code, CodeSpec]:
    levels = tuple(level for level in SEVERITIES if level in severities.split("|"))
    return code, CodeSpec(code, area, step, levels, rule)


SPECS: dict[Code, CodeSpec] = dict(
    [
        _spec("compile_failure", "trace", "correctness", "error",
              "a compile raised (not a refused one at the recompile limit); the error's first "
              "line and where in the user's code it was raised; custom-op advice when it names "
              "an op"),
        _spec("recompile_limit_hit", "trace", "recompiles", "error",
              "a frame reached torch._dynamo.config.recompile_limit and runs eagerly for every "
              "new variant; shares `cause` with the frame's `recompiles`"),
        _spec("frame_skipped", "trace", "graph breaks", "error|warning",
              "Dynamo skipped a whole frame (it runs eagerly); a known library break's fix "
              "when one caused it. `warning` (`facts.partial`): Dynamo gave up on one "
              "recompile of a frame it had compiled, and the inputs that needed it run "
              "eagerly; the line it could not trace"),
        _spec("recompiles", "trace", "recompiles", "info|warning|error",
              "a frame recompiled: `info` when its variant set is bounded, `warning` when it "
              "is unbounded or unknown, `error` at the limit; the fixes are written for this "
              "code (`frames[].fixes`)"),
        _spec("large_graph", "trace", "performance", "info",
              "a Dynamo graph of more than 2000 ops"),
        _spec("graph_break", "trace", "graph breaks", "info|warning",
              "a graph-break site: `warning` when it ran more than once (or heat is "
              "unknown), `info` when it ran at most once, splits nothing or is PyTorch's by "
              "design"),
        _spec("parse_problems", "trace", None, "warning",
              "the log is damaged: unreadable lines or records (see `parse_stats`)"),
        _spec("unrolled_loop", "built", "performance", "info|warning",
              "one loop's body repeated at least 8 times holds 30% of a graph's ops; "
              "`warning` from 200 ops or a 10 s compile"),
        _spec("repeated_blocks", "built", "performance", "info|warning",
              "the same module code inlined once per module that runs it (a layer stack): "
              "regional compilation; `warning` from 200 ops or a 10 s compile"),
        _spec("many_small_inputs", "built", "performance", "warning",
              "a graph of at least 1000 ops over at least 200 small inputs (an optimizer "
              "step over many parameters)"),
        _spec("fallback_op", "built", "performance", "info|warning",
              "an ATen op with no Inductor lowering inside a compiled graph (`info`); with a "
              "profile, `warning` when it takes at least 5% of the step"),
        _spec("program_failed", "run", "correctness", "error",
              "the program ended badly (exception, signal, timeout); the exception and the "
              "innermost frame of the user's code it was raised in"),
        _spec("unexplained_recompile_after_warmup", "run", "recompiles", "error",
              "a compile after the end of warmup (first compiles included)"),
        _spec("compiled_but_never_called", "run", "correctness", "warning",
              "the program called torch.compile and Dynamo compiled nothing"),
        _spec("no_compilation_observed", "run", "correctness", "info",
              "the program never imported torch._dynamo"),
        _spec("probes_unavailable", "run", None, "warning",
              "runtime heat could not be measured on this torch"),
        _spec("triage_run", "run", None, "info",
              "a `--backend` triage run: some findings are not covered"),
        _spec("hook_changed_after_compile", "run", "correctness", "warning",
              "the program added or removed a module hook after its first compile while "
              "Dynamo does not guard on hooks (`skip_nnmodule_hook_guards`, the default): "
              "compiled code keeps running the hooks it traced"),
        _spec("guard_overhead", "cold start", "recompiles", "info|warning",
              "a frame's guard checks cost a visible share of its compiled time; `warning` "
              "from 8 variants"),
        _spec("stale_cache_constant", "cold start", "correctness", "error",
              "a compile served from the FX graph / AOTAutograd cache lacks a guard on an "
              "expression an earlier variant of the frame made a constant (`alpha=1 - "
              "decay`): the cached code computes with the old constant (a torch 2.13 bug); "
              "the 0-d tensor fix, and the caches off until then"),
        _spec("cache_bypass", "cold start", "performance", "info|warning",
              "a compile's FX graph cache lookup was bypassed (`warning`: it compiles fully on "
              "every start) or only AOTAutograd's (`info`); one finding per reason, with its "
              "fix (a plain-function custom pass: a `CustomGraphPass` with `uuid()`, at the "
              "line that defined it)"),
        _spec("cache_key_constant", "cold start", "performance", "warning",
              "every FX graph lookup missed against a cache dir that held compiled graphs, "
              "and a Python float the graphs bake in (Dynamo guards it by value) differs "
              "from the value the previous `pt2doctor run` of the program with that cache "
              "dir baked (an unseeded statistic): named with the line that stored it, and "
              "kept as a tensor. A float the same at every start is never named"),
        _spec("autograd_in_inference", "profile", "performance", "warning",
              "compiled graphs ran through `CompiledFunction` and no backward ran; the "
              "wrapper's time is a floor (`saves_unmeasured`), `run --try-fixes` measures the "
              "saving with `torch.no_grad()` around each compiled call"),
        _spec("overhead_bound", "profile", "performance", "warning",
              "a region of at least 5% of the step spends more than half its time outside "
              "kernels; where the one compiled callable was paired quietly, the profiler's "
              "own cost (the region's profiled time less the paired plain median) is left "
              "out of the overhead first"),
        _spec("library_bound", "profile", "performance", "info",
              "library kernels take more than 60% of the compiled time (device time on a "
              "GPU trace): where the time is, not a ceiling"),
        _spec("noisy_profile", "profile", "performance", "info",
              "the profile window stayed too noisy after one re-measure (over a quarter of "
              "its calls preempted, or a spread over a quarter of the median): the verdicts "
              "that rest on shares of its time (overhead_bound, library_bound; "
              "eager_only_time and eager_outside_compiled where the eager share is under "
              "50%) are withheld"),
        _spec("graph_break_cost", "profile", "graph breaks", "info|warning",
              "a break site's eager time per call; `warning` from 5% of the step; `saves_ms` "
              "adds the resumed frame's guard check and takes the profiler's own cost out "
              "where the call was paired quietly. Added 2026-12-07: with `run --try-fixes`, "
              "the try of a fix that removes the break (its `graph_break` finding's, e.g. "
              "`capture_scalar_outputs`) is profiled too, and where it helped with the results "
              "unchanged, what it saved, the compiled callable's calls timed without the "
              "profiler in both runs, replaces the estimate (the title adds \"removing it saved "
              "X ms a call (measured, re-run N)\", the evidence both numbers; `warning` from "
              "5% of the step): a break inside a loop makes Dynamo run the loop's frame "
              "eagerly, which the estimate does not count"),
        _spec("eager_only_time", "profile", "graph breaks", "warning",
              "at least 25% of the time in torch ops (compiled regions and eager ops) is eager "
              "ATen ops outside every compiled graph"),
        _spec("eager_outside_compiled", "profile", "performance", "warning",
              "at least 25% of the time in torch ops is eager ATen ops, of which graph breaks and "
              "skipped frames lead to less than half (an unsampled skipped frame counts whole): "
              "the program's own code torch.compile was never given "
              "(with `--profile-stacks`, its lines); compiling it is to be measured: where "
              "that code is a module-level function of the user's that does not call the "
              "compiled code, `run --try-fixes` tries `torch.compile(FUNCTION)` and measures "
              "`saves_ms`"),
        _spec("eager_optimizer", "profile", "performance", "warning",
              "opt.step() runs eagerly, outside compiled regions, for at least 5% of the step "
              "(torch's profiler labels it): fused=True, foreach=True or a compiled step; "
              "`saves_ms` is its fused (or foreach) variant timed in the run on copies of "
              "its parameters"),
        _spec("data_loading", "profile", "performance", "warning",
              "the step waits on its DataLoader's `__next__` (torch's profiler labels it) for "
              "at least 5% of the step, outside compiled regions: workers where it loads in "
              "the process (`run --try-fixes` tries `num_workers=2` and measures `saves_ms`), "
              "more or faster workers where it has them (not measured: `saves_unmeasured`)"),
        _spec("compiled_slower_than_eager", "profile", "performance", "warning",
              "a compiled callable's paired calls (compiled and eager one after the other, "
              "`run --profile`) ran slower compiled: both medians, at least 5% apart, and the "
              "pairs agreeing (an exact one-sided sign test, p <= 0.05); `saves_ms` is their "
              "difference per call"),
        _spec("dtoh_sync", "device", "performance", "info|warning",
              "the host waited in synchronize calls (`.item()`, `.cpu()`, `.tolist()`, a "
              "print or a Python branch on a tensor: a device-to-host copy and its sync), "
              "at the ops around them; `warning` from 5% of the steps' time, inside steps; a "
              "sync outside every step (the profiler's stop) is said apart"),
        _spec("launch_bound", "device", "performance", "warning",
              "a compiled region's kernels are small (median under 50 us) and the device "
              "sits idle at least 30% of its span waiting for the host to launch the next "
              "one: CUDA graphs (`mode=\"reduce-overhead\"`), larger batches, fewer breaks"),
        _spec("cudagraphs", "device", "performance", "info",
              "CUDA graphs replayed (cudaGraphLaunch), attributed to the regions that "
              "launched them, and the regions launching at least 100 kernels per call "
              "without them"),
        _spec("exposed_communication", "device", "performance", "info|warning",
              "communication kernels (NCCL) with no compute running beside them; `warning` "
              "from 10% of the trace's span"),
        _spec("tf32_off", "device", "performance", "info",
              "on a GPU with TF32 (compute capability 8+), FP32 matmuls ran as SIMT sgemm "
              "kernels (no tensor cores) for at least 10% of the kernel time and 1 ms per "
              "step: TF32 is off for matmuls (PyTorch's default); "
              "`torch.set_float32_matmul_precision(\"high\")`"),
        _spec("rank_compile_skew", "ranks", "performance", "info|warning|error",
              "ranks finish compiling at different times; severity by the share of the "
              "collective timeout"),
        _spec("rank_specific_recompile", "ranks", "recompiles", "warning",
              "a recompile on some ranks only"),
        _spec("rank_cache_imbalance", "ranks", "performance", "warning",
              "some ranks hit the compile cache and others missed; why their keys differ"),
        _spec("rank_graph_mismatch", "ranks", "performance", "info|warning",
              "ranks compiled different graphs, frames or break sites"),
        _spec("rank_specific_failure", "ranks", "correctness", "warning",
              "a compile failure on some ranks only"),
        _spec("rank_name_mismatch", "ranks", "performance", "warning",
              "a log's envelope rank differs from its file name's"),
        _spec("rank_duplicate_logs", "ranks", "performance", "warning",
              "several logs for one rank"),
    ]
)  # fmt: skip


def spec(code: Code) -> CodeSpec:
    return SPECS[code]


def step_of(code: Code) -> Step | None:
    """The plan step of ``code``; None for a finding about the capture."""
    return SPECS[code].step


def docs_table() -> str:
    """docs/report-schema.md's table of finding codes, as the registry declares them."""
    rows = ["| code | from | severity | plan step | when |", "|---|---|---|---|---|"]
    for entry in SPECS.values():
        step = entry.step or "not an action"
        levels = " \\| ".join(entry.severities)
        rows.append(f"| `{entry.code}` | {entry.area} | {levels} | {step} | {entry.rule} |")
    return "\n".join(rows)


DOCS_BEGIN = "<!-- finding codes: generated by python -m pt2doctor.analysis.findings.codes -->"
DOCS_END = "<!-- end of finding codes -->"


def docs_with_table(text: str) -> str:
    """``text`` (docs/report-schema.md) with its generated table replaced by today's."""
    head, begin, rest = text.partition(DOCS_BEGIN)
    _, end, tail = rest.partition(DOCS_END)
    if not begin or not end:
        raise ValueError(f"no {DOCS_BEGIN!r} ... {DOCS_END!r} block")
    return f"{head}{DOCS_BEGIN}\n{docs_table()}\n{DOCS_END}{tail}"


def main(argv: list[str] | None = None) -> int:
    """Write the registry's table into docs/report-schema.md (the path given, or the repo's)."""
    args = sys.argv[1:] if argv is None else argv
    path = Path(args[0]) if args else Path(__file__).parents[4] / "docs" / "report-schema.md"
    path.write_text(docs_with_table(path.read_text(encoding="utf-8")), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Findings and the ``run`` section that only a captured run (``pt2doctor run``) can give:
how the program ended, recompiles after warmup, triage-run limits, time in compiled code."""

from __future__ import annotations

from typing import Any

from pt2doctor.analysis.breaks.heat import Heat
from pt2doctor.analysis.findings.model import Finding, Subject
from pt2doctor.analysis.findings.trace_findings import (
    compile_subject,
    frame_label,
    frame_subject,
    frame_where,
    raised_in_label,
)
from pt2doctor.analysis.recompiles.fix_model import HOOK_GUARDS_CONFIG, Fix, FixApplication
from pt2doctor.analysis.recompiles.ledger import Ledger
from pt2doctor.analysis.userside.causes import custom_op_advice
from pt2doctor.analysis.userside.causes import where as file_line
from pt2doctor.trace.messages import error_line
from pt2doctor.trace.types import Manifest, ProbeData, SourceLine

TRIAGE_NOT_COVERED = [
    "accuracy (eager vs compiled)",
    "kernel time and speedup",
    "Inductor failures",
]
AFTER_WARMUP_ADVICE = (
    "A compile after warmup is a latency spike in production (the p99 jitter). Pre-warm every "
    "shape bucket and flag value during warmup, mark changing dimensions dynamic "
    "(torch._dynamo.maybe_mark_dynamic), or keep the changing value out of the compiled function; "
    "the failed guards say which value changed."
)


def ending(manifest: Manifest) -> str | None:
    """How the program ended, when it did not end well (None: it exited 0)."""
    if manifest.get("stopped_by") == "timeout":
        return f"was killed after the --timeout of {manifest.get('timeout_s')} s"
    if manifest.get("stopped_by") == "interrupted":
        return "was interrupted (Ctrl-C)"
    if manifest.get("signal"):
        return f"was killed by {manifest['signal']}"
    if manifest.get("exit_code") not in (0, None):
        return f"exited with code {manifest['exit_code']}"
    if manifest.get("end_time") is None:
        return "did not finish (pt2doctor itself was stopped)"
    return None


# torchrun's own exception when a rank failed: its banner repeats what the ranks raised.
_LAUNCHER_ERRORS = frozenset({"ChildFailedError"})


def _program_exceptions(probes: ProbeData | None) -> list[dict[str, Any]]:
    """The exceptions the program raised, torchrun's summary left out when a rank's own
    exception is there."""
    exceptions = list(probes.exceptions) if probes else []
    if any(e.get("rank") is not None for e in exceptions):
        exceptions = [e for e in exceptions if str(e.get("type")) not in _LAUNCHER_ERRORS]
    return exceptions


def _exception_lines(exceptions: list[dict[str, Any]]) -> list[str]:
    """One line per distinct exception (type and message on one line), with the ranks that
    raised it: ``AssertionError: ... (ranks 0, 1)``."""
    ranks: dict[str, list[int]] = {}
    for e in exceptions:
        line = error_line(str(e.get("type")), str(e.get("message") or ""))
        rank = e.get("rank")
        ranks.setdefault(line, [])
        if isinstance(rank, int) and rank not in ranks[line]:
            ranks[line].append(rank)
    return [
        f"{line} (rank{'s' if len(found) > 1 else ''} {', '.join(map(str, sorted(found)))})"
        if found
        else line
        for line, found in ranks.items()
    ]


_DOUBLE_BACKWARD = "does not currently support double backward"


def _double_backward_advice(messages: str, ledger: Ledger) -> str | None:
    """AOTAutograd's "does not currently support double backward": a gradient taken with
    create_graph=True (a gradient penalty, a Hessian-vector product) through a compiled
    graph, because a graph break at ``torch.autograd.grad`` left it outside the graph that
    computes what it differentiates. Tracing autograd.grad keeps the double backward inside
    one graph (tests/programs/real/blind/gradient_penalty.py: the run then completes)."""
    if _DOUBLE_BACKWARD not in messages:
        return None
    grad = next((event.site for entry in ledger.compiles for event in entry.record.graph_breaks
                 if event.site is not None and "trace_autograd_ops" in event.gb_type), None)  # fmt: skip
    at = f" at {file_line({'file': grad.file, 'line': grad.line})}" if grad else ""
    return (
        "A gradient with create_graph=True (a gradient penalty, a Hessian-vector product) "
        "was taken through a compiled graph, whose backward cannot be differentiated again: "
        f"the graph break at torch.autograd.grad{at} left the call outside the graph that "
        "computes what it differentiates. Set `torch._dynamo.config.trace_autograd_ops = "
        "True` before compiling, so Dynamo traces torch.autograd.grad into the graph, or "
        "keep the code that computes the penalty out of the compiled function. The "
        "`--backend eager` triage run does not show this failure: AOTAutograd raises it."
    )


def _failure_finding(ledger: Ledger, manifest: Manifest, probes: ProbeData | None) -> Finding:
    how = ending(manifest) or ""
    exceptions = _program_exceptions(probes)
    evidence = _exception_lines(exceptions)
    root = min(exceptions, key=lambda e: e.get("t") or 0.0, default=None)  # the first raised
    frames = (root or {}).get("frames") or []
    if frames:
        top = frames[0]  # the innermost frame of the user's code
        label = raised_in_label(SourceLine(top["file"], top["line"], top["function"]))
        evidence += [label] if label else []
    evidence += probes.fatal_error if probes else []
    evidence += [
        (
            f"raised inside compiled graph {e.get('compile_id')}: "
            + error_line(str(e.get("type")), str(e.get("message") or ""))
        )[:500]
        for e in (probes.graph_exceptions[-1:] if probes else [])
    ]
    exception_types = {str(e.get("type")) for e in exceptions}
    for failure in ledger.failures:
        if failure.kind == "compile_error" and (
            not exception_types or any(t in failure.fail_type for t in exception_types)
        ):
            evidence.append(f"raised while compiling {failure.compile_id} ({failure.function})")
    messages = " ".join(str(e.get("message")) for e in exceptions)
    advice = custom_op_advice(messages) or _double_backward_advice(messages, ledger)
    compiled = any(
        line.startswith(("raised inside compiled", "raised while compiling")) for line in evidence
    )
    above = "the exception and the compile id above" if compiled else "the exception above"
    return Finding(
        "error",
        "program_failed",
        f"The program {how}; everything captured until then is reported",
        (f"{advice} " if advice else "")
        + f"See {above}; stdout.log, stderr.log and faulthandler.*.log in the run directory keep "
        "the program's output.",
        evidence[:7],
    )


def run_findings(
    ledger: Ledger,
    manifest: Manifest,
    probes: ProbeData | None,
    heat: Heat | None,
    changes: dict[tuple[str, str], list[str]] | None = None,
) -> list[Finding]:
    """Findings only a run has (its ending, probes, compiles after warmup). ``changes`` gives
    what changed per (stream, compile id) in the user's names (analysis/recompiles/outlook.py); Dynamo's
    guard text is the evidence where it is missing."""
    findings: list[Finding] = []
    ended_badly = ending(manifest) is not None
    if ended_badly:
        findings.append(_failure_finding(ledger, manifest, probes))
    findings += _probe_findings(probes)
    findings += hook_findings(probes)
    # A program that died before it called what it compiled has its failure to fix first.
    if probes is not None and probes.compile_calls and not ledger.compiles and not ended_badly:
        findings.append(_never_called(probes.compile_calls))
    if manifest.get("backend_override"):
        findings.append(
            Finding(
                "info",
                "triage_run",
                f"Triage run with --backend {manifest['backend_override']}: graph breaks and "
                "recompiles are real, some findings are not covered",
                "Re-run without --backend to cover: " + ", ".join(TRIAGE_NOT_COVERED) + ".",
                [],
            )
        )
    if heat is not None:
        frame_of = {id(entry): frame for frame in ledger.frames for entry in frame.compiles}
        for entry in ledger.compiles:
            item = heat.compiles.get((entry.record.stream, entry.compile_id))
            if item is None or not item.after_warmup:
                continue
            evidence = (changes or {}).get((entry.record.stream, entry.compile_id)) or [
                f"{entry.compile_id}: {g.text}" for g in entry.failed_guards
            ]
            evidence = evidence or [f"{entry.compile_id}: {entry.cause}"]
            when = f"at {item.t_s:.1f} s" if item.t_s is not None else ""
            calls = f", after {item.frame_calls} calls of its frame" if item.frame_calls else ""
            frame = frame_of.get(id(entry))
            where = (
                frame_where(frame)
                if frame is not None
                else frame_label(entry.function, entry.record.file, entry.record.line)
            )
            subject = (
                frame_subject(frame, entry.compile_id)
                if frame is not None
                else compile_subject(None, entry.compile_id, entry.function)
            )
            findings.append(
                Finding(
                    "error",
                    "unexplained_recompile_after_warmup",
                    f"{where} compiled after warmup ({when}{calls})",
                    AFTER_WARMUP_ADVICE,
                    evidence[:8],
                    subject,
                )
            )
    return findings


# What a torch.compile call that compiled nothing left undone, and the fix, by what it compiled.
NEVER_CALLED: dict[str, tuple[str, str]] = {
    "module": (
        "the compiled module itself was never called",
        "torch.compile(model) returns a new module that compiles when it is called: call what it "
        "returned (`model = torch.compile(model)`, then `model(x)`). The original module, and any "
        "method other than forward (Hugging Face `model.generate(...)`, which calls the original "
        "module inside), run eagerly. To compile every call of the module in place, generate()'s "
        "included, use `model.compile()`; or compile the method that runs: "
        "`model.forward = torch.compile(model.forward)`.",
    ),
    "module.compile()": (
        "the module was not called after it",
        "model.compile() compiles the module's own calls, and none came after it on the path that "
        "ran: call it before the loop that calls the module.",
    ),
    "function": (
        "the function it returned was never called",
        "torch.compile(fn) returns a compiled function and leaves fn as it was: call what it "
        "returned (`fn = torch.compile(fn)`, or `@torch.compile` on its definition).",
    ),
}


def _never_called(calls: list[dict[str, Any]]) -> Finding:
    """torch.compile was called, yet Dynamo compiled nothing: what it returned never ran."""

    def call_line(call: dict[str, Any]) -> str:
        name = call.get("name")
        if call.get("target") == "module.compile()":
            what = f"{name}.compile()"
        else:
            what = f"torch.compile({name})"
        return f"{what} at {file_line(call)}" if isinstance(call.get("file"), str) else what

    first = calls[0]
    undone, advice = NEVER_CALLED.get(str(first.get("target")), NEVER_CALLED["function"])
    return Finding(
        "warning",
        "compiled_but_never_called",
        f"{call_line(first)} compiled nothing: {undone}",
        advice,
        [call_line(call) for call in calls[:5]],
    )


HOOKS_ADVICE = (
    "Dynamo does not guard on module hooks (torch._dynamo.config.skip_nnmodule_hook_guards = "
    "True, torch's default): a graph traced with a hook keeps running it after "
    "handle.remove(), and one traced without it keeps skipping a hook registered later, so "
    "the results are silently those of the hooks at trace time. Register the hooks once, "
    "before the first compiled call, and switch what they do with a flag they read; or set "
    "torch._dynamo.config.skip_nnmodule_hook_guards = False before compiling (each set of "
    "hooks then compiles a variant of its own); or call torch._dynamo.reset() after changing "
    "them (everything compiles again)."
)
MAX_HOOK_EVIDENCE = 4
HOOKS_OFF = FixApplication(f"{HOOK_GUARDS_CONFIG} = False", config=((HOOK_GUARDS_CONFIG, False),))
"""The hooks finding's fix ``run --try-fixes`` (and ablate's toggle) can apply."""


def _hook_where(event: dict[str, Any]) -> str:
    where = f" at {event['file']}:{event.get('line')}" if event.get("file") else ""
    return f"{event.get('action')} {event.get('method')} on a {event.get('module')}{where}"


def hook_findings(probes: ProbeData | None) -> list[Finding]:
    """``hook_changed_after_compile``: the program added or removed a module hook after its
    first compile while Dynamo does not guard on hooks (the default): compiled code keeps
    what it traced, a correctness problem no error reports."""
    if probes is None or not probes.module_hooks or not probes.compiled:
        return []
    config = (probes.environment.get("config_changes") or {}).get("dynamo") or {}
    if str(config.get("skip_nnmodule_hook_guards")) == "False":
        return []  # hooks are guarded: a change recompiles
    first = min(float(info.get("t") or 0.0) for info in probes.compiled.values())
    late = [e for e in probes.module_hooks if float(e.get("t") or 0.0) > first]
    if not late:
        return []
    modules = sorted({str(e.get("module")) for e in late})
    head = late[0]
    subject = (
        Subject("lines", head.get("function"), head["file"], head.get("line"), head.get("function"))
        if head.get("file")
        else Subject("program")
    )
    adds = sum(e.get("action") == "add" for e in late)
    changes = ", ".join(
        f"{n} {what}" for n, what in ((adds, "added"), (len(late) - adds, "removed")) if n
    )
    evidence = [f"the first compile at {first:.1f} s"]
    same: dict[str, list[float]] = {}  # one line per change and place, with its count
    for event in late:
        same.setdefault(_hook_where(event), []).append(float(event["t"]))
    evidence += [
        f"{where} at {times[0]:.1f} s" + (f" (×{len(times)}, until {times[-1]:.1f} s)"
                                          if len(times) > 1 else "")
        for where, times in list(same.items())[:MAX_HOOK_EVIDENCE]
    ]  # fmt: skip
    title = (
        f"Module hooks changed after the first compile ({changes}, on "
        f"{', '.join(modules[:3])}): compiled code does not see the change"
    )
    facts = {"changes": len(late), "first_compile_s": round(first, 6)}
    return [
        Finding(
            "warning",
            "hook_changed_after_compile",
            title,
            HOOKS_ADVICE,
            evidence,
            subject,
            facts=facts,
            fixes=[Fix(HOOKS_OFF.label, HOOKS_OFF)],
        )
    ]  # fmt: skip


def _probe_findings(probes: ProbeData | None) -> list[Finding]:
    """Say when heat could not be measured, rather than showing empty counters."""
    installed = (probes.hooks if probes else {}).get("probes")
    if installed is None:
        return [
            Finding(
                "info",
                "no_compilation_observed",
                "The program never imported torch._dynamo: nothing was compiled, no heat",
                "Check that the program calls torch.compile on the code path it ran.",
                [],
            )
        ]
    missing = [name for name in ("graphs", "breaks") if not installed.get(name)]
    if not missing:
        return []
    return [
        Finding(
            "warning",
            "probes_unavailable",
            f"Runtime heat for {' and '.join(missing)} is unavailable on this torch",
            "Compile causes and breaks are still reported from the trace; heat needs the torch "
            "internals pt2doctor hooks (torch >= 2.6; graph-break heat needs a torch that "
            "installs resume functions through OutputGraph.install_resume_function_global).",
            [f"probes: {installed}"],
        )
    ]


def run_section(manifest: Manifest, probes: ProbeData | None, heat: Heat | None) -> dict[str, Any]:
    """The ``run`` object of report.json: the manifest plus what the probes measured."""
    override = manifest.get("backend_override")
    return {
        "ending": ending(manifest),
        "command": manifest.get("command"),
        "cwd": manifest.get("cwd"),
        "start_time": manifest.get("start_time"),
        "end_time": manifest.get("end_time"),
        "wall_s": None if heat is None else heat.wall_s,
        "in_compiled_s": None if heat is None else heat.in_compiled_s,
        "exit_code": manifest.get("exit_code"),
        "signal": manifest.get("signal"),
        "stopped_by": manifest.get("stopped_by"),
        "returned": manifest.get("returned"),
        "backend_override": override,
        "triage": bool(override),
        "not_covered": TRIAGE_NOT_COVERED if override else [],
        "warmup_calls": manifest.get("warmup_calls"),
        "steady_after_s": manifest.get("steady_after_s"),
        "launcher": manifest.get("launcher"),
        "exceptions": [] if probes is None else probes.exceptions,
        "fatal_error": [] if probes is None else probes.fatal_error,
        "graph_exceptions": [] if probes is None else probes.graph_exceptions,
        "probes": {} if probes is None else probes.hooks,
        "probe_bad_lines": None if probes is None else probes.bad_lines,
        "heat_complete": None if probes is None else probes.complete,
        "heat_as_of_s": None if probes is None else probes.snapshot_t,
    }

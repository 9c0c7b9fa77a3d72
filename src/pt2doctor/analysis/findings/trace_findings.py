"""The findings a TORCH_TRACE log supports on its own: compile failures, recompiles and
recompile limits, skipped frames, graph breaks, large graphs, a damaged log."""

from __future__ import annotations

import itertools
import os
from collections import Counter
from typing import Any

from pt2doctor.analysis.breaks.advice import (
    COMPILE_ERROR_ADVICE,
    LARGE_GRAPH_ADVICE,
    LIMIT_HIT_ADVICE,
    RECOMPILE_ADVICE,
    SKIPPED_FRAME_ADVICE,
    SKIPPED_LOOP_FIX,
)
from pt2doctor.analysis.breaks.sites import GraphBreakSite, user_caller
from pt2doctor.analysis.findings.codes import SEVERITIES, Severity
from pt2doctor.analysis.findings.model import LOG, Finding, Subject
from pt2doctor.analysis.paths import library_path, short_library_path
from pt2doctor.analysis.recompiles.changes import FLAG_KINDS, LAYOUT_KINDS
from pt2doctor.analysis.recompiles.fix_model import CARRIED, DYNAMO_CONFIG, Fix, FixApplication
from pt2doctor.analysis.recompiles.fixes import (
    handed_over,
    hf_generate_pattern,
    partial_batch_fix,
    recompile_candidates,
    user_specialized,
)
from pt2doctor.analysis.recompiles.frame_names import compiled_at_label, frame_name
from pt2doctor.analysis.recompiles.ledger import RESUME_NAME, FailureEntry, FrameEntry, Ledger
from pt2doctor.analysis.recompiles.outlook import (
    FrameExplanation,
    Varying,
    explain_frames,
    merged_change_lines,
    schedule_steps,
    settled,
    unfreezing_params,
)
from pt2doctor.analysis.recompiles.state_fixes import inference_mode_alone
from pt2doctor.analysis.recompiles.value_fixes import learning_rate_sources, list_arguments
from pt2doctor.analysis.source_lines import defined_at
from pt2doctor.analysis.text import counted, id_ranges
from pt2doctor.trace.messages import is_user_file
from pt2doctor.trace.records import ParseStats
from pt2doctor.trace.types import SourceLine

# Above this many ops a Dynamo graph is usually an unrolled Python loop.
LARGE_GRAPH_OPS = 2000


def resume_label(function: str | None) -> str | None:
    """A resume function as the part of its function after a break (``forward after its graph
    break at line 35``); None for any other function."""
    resume = RESUME_NAME.match(function or "")
    if resume is None:
        return None
    return f"{resume.group(1)} after its graph break at line {resume.group(2)}"


def frame_label(function: str | None, file: str | None, line: int | None) -> str:
    """``fn (file:line)``; a resume function reads as the part of ``fn`` after a break."""
    resume = resume_label(function)
    if resume is not None:
        return f"{resume} ({file})"
    return f"{function} ({file}:{line})"


def frame_where(frame: FrameEntry, call: dict[str, Any] | None = None) -> str:
    """The frame as a user knows it (:func:`display_name`), with its location: the user's own
    ``torch.compile`` call (``call``, as the run recorded it) where the frame's code is a
    library's (a decoder layer compiled by ``layer.compile()`` runs transformers' code)."""
    name = frame_name(frame)
    compiled = compiled_at_label(name.name, frame.file, call)
    if compiled is not None:
        return compiled
    if frame.is_resume or name.display == frame.function:
        return frame_label(frame.function, frame.file, frame.line)
    if name.through is not None:
        return name.display  # names the wrapper's file:line already
    return f"{name.display} ({frame.file}:{frame.line})"


def frame_subject(frame: FrameEntry, compile_id: str | None = None) -> Subject:
    """A frame as a finding's subject: its name as the user knows it, and where it is
    (``compile_id``: the compile of it the finding is about, when one is)."""
    name = resume_label(frame.function) or frame_name(frame).name
    return Subject(
        "frame", name, frame.file, frame.line, frame.function,
        stream=frame.stream, frame_id=frame.frame_id, compile_id=compile_id,
    )  # fmt: skip


def compile_subject(
    frame: FrameEntry | None, compile_id: str, function: str | None = None
) -> Subject:
    """One compile of a frame (``frame`` None: a compile the ledger put in no frame)."""
    if frame is None:
        return Subject("compile", function, function=function, compile_id=compile_id)
    return Subject(
        "compile", frame_name(frame).name, frame.file, frame.line, frame.function,
        stream=frame.stream, frame_id=frame.frame_id, compile_id=compile_id,
    )  # fmt: skip


def _benign(frame: FrameEntry) -> bool:
    """Static first, then one recompile that made the changing value dynamic: automatic
    dynamic shapes working as designed."""
    guards = [g for e in frame.recompiles for g in e.failed_guards]
    return (
        len(frame.recompiles) == 1
        and bool(guards)
        and all(g.now_dynamic or g.category == "stride" for g in guards)
    )


COSTLY_RECOMPILES_S = 5.0
"""Recompiles that took at least this long in all (and longer than the frame's first compile,
and two or more of them) are a warning even when bounded: by design or not, they are where
the run's compile time goes."""


def _recompile_seconds(frame: FrameEntry) -> float | None:
    """The seconds the frame's recompiles took to compile, when they cost more than
    ``COSTLY_RECOMPILES_S`` and than its first compile, over two recompiles or more; else
    None."""
    if len(frame.recompiles) < 2 or not frame.compiles:
        return None
    spent = sum(e.record.compile_time_s or 0.0 for e in frame.recompiles)
    first = frame.compiles[0].record.compile_time_s or 0.0
    return spent if spent >= max(COSTLY_RECOMPILES_S, first) else None


def _recompile_severity(frame: FrameEntry, explanation: FrameExplanation) -> Severity:
    """Bounded: info; unbounded: warning; limit hit: error. Unknown outlook: warning, unless it
    is one recompile that went dynamic. Bounded recompiles that cost more compile time than
    the first compile (``_recompile_seconds``): warning. A compile after warmup is an error of
    its own (``unexplained_recompile_after_warmup``, one per compile): this finding only
    names it."""
    if frame.limit_hit:
        return "error"
    if _recompile_seconds(frame) is not None or user_specialized(explanation):
        return "warning"  # (a size the user's line keeps static: a line to change)
    if any(row.kind == "inference" for row in explanation.outlook.varying) or (
        inference_mode_alone(explanation)
    ):
        # inputs made, or calls run, under inference_mode and outside it: not by design
        return "warning"
    if explanation.outlook.bounded is True or (
        explanation.outlook.bounded is None and _benign(frame)
    ):
        return "info"
    return "warning"


def _recompile_title(frame: FrameEntry, explanation: FrameExplanation) -> str:
    where = frame_where(frame, explanation.compile_call)
    count = f"{where} recompiled {counted(len(frame.recompiles), 'time')}"
    if frame.refused is not None:
        count += " + 1 refused"
    spent = _recompile_seconds(frame)
    if spent is not None:
        first = frame.compiles[0].record.compile_time_s or 0.0
        count += f" ({spent:.1f} s of compiling, the first compile {first:.1f} s)"
    return f"{count}: {_recompile_state(frame, explanation)}"


def _recompile_state(frame: FrameEntry, explanation: FrameExplanation) -> str:
    """What a frame's variants are, after ``recompiled N times: `` in its title (also the
    finding's ``facts["state"]``)."""
    bounded = explanation.outlook.bounded
    static = "Static" in (explanation.hf_cache_class or "")
    if bounded is True and hf_generate_pattern(explanation) and static:
        state = f"{frame.variants} variants by design (Hugging Face generate(), static cache)"
    elif bounded is True and hf_generate_pattern(explanation):  # by design, yet fewer exist
        state = f"{frame.variants} variants by design (Hugging Face generate()); a static cache compiles fewer"
    elif bounded is True and (instances := [v for v in explanation.outlook.varying if v.instances]):
        state = (
            f"{frame.variants} variants, one per instance of the "
            f"{instances[0].instances} modules compiled one by one"
        )
    elif (
        bounded is True and len(explanation.outlook.varying) == 1 and partial_batch_fix(explanation)
    ):
        state = f"{frame.variants} variants: a smaller last batch"
    elif (
        bounded is True
        and explanation.outlook.varying
        and all(v.kind in LAYOUT_KINDS for v in explanation.outlook.varying)
    ):
        tensors = sorted({v.source.partition(".stride()")[0] for v in explanation.outlook.varying})
        state = (
            f"{frame.variants} variants: {', '.join(tensors)} in {frame.variants} memory layouts"
        )
    elif (
        bounded is True
        and explanation.outlook.varying
        and all(v.kind == "dtype" for v in explanation.outlook.varying)
    ):
        inputs = sorted({v.source for v in explanation.outlook.varying})
        count = max(len(v.values) for v in explanation.outlook.varying)
        state = f"{frame.variants} variants: {', '.join(inputs)} in {count} dtypes"
    elif bounded is True and (lists := list_arguments(explanation)):
        state = f"{frame.variants} variants: one per length of the list {lists[0].expr.length_of}"  # type: ignore[union-attr]
    elif bounded is not False and learning_rate_sources(explanation):
        state = f"{frame.variants} variants: a float learning rate (a tensor lr compiles once)"
    elif bounded is True and unfreezing_params(list(explanation.outlook.varying)):
        state = f"{frame.variants} variants, one per stage of unfreezing parameters"
    elif bounded is True and (specialized := user_specialized(explanation)):
        row, line = specialized[0]
        state = (f"{frame.variants} variants: {row.source} made static by your code at "
                 f"{os.path.basename(str(line.file))}:{line.line}")  # fmt: skip
    elif bounded is True and _recompile_seconds(frame) is not None:
        state = (f"{frame.variants} variants; their recompiles cost more than the first compile: "
                 "have fewer (the fixes below)")  # fmt: skip
    elif (
        bounded is True
        and explanation.outlook.varying
        and all(v.kind == "type" and "Tensor" in v.values for v in explanation.outlook.varying)
    ):
        row = explanation.outlook.varying[0]
        state = f"{frame.variants} variants: {row.source} arrives as {' and as '.join(row.values)}"
    elif bounded is True and explanation.outlook.branch:
        state = f"{frame.variants} variants: {explanation.outlook.branch}"
    elif bounded is True and all(v.dynamic for v in explanation.outlook.varying):
        # Automatic dynamic shapes: the second variant serves every new value, nothing to
        # pre-warm (a boolean mask's count after a break: mask_select).
        dynamic = len(explanation.outlook.varying)
        serve = "serves" if dynamic == 1 else "serve"
        state = (f"{frame.variants} variants: {counted(dynamic, 'value')} became dynamic after "
                 f"one recompile and {serve} every new value")  # fmt: skip
    elif bounded is True and inference_mode_alone(explanation):
        state = (f"{frame.variants} variants: called under torch.inference_mode() and outside "
                 "it")  # fmt: skip
    elif bounded is True and any(v.kind == "inference" for v in explanation.outlook.varying):
        names = ", ".join(v.source for v in explanation.outlook.varying if v.kind == "inference")
        state = (f"{frame.variants} variants: {names} arrives as an inference tensor and as a "
                 "normal one")  # fmt: skip
    elif (
        bounded is True
        and any(v.dynamic and v.kind == "size" for v in explanation.outlook.varying)
        and all(
            (v.dynamic and v.kind == "size") or v.kind in FLAG_KINDS
            for v in explanation.outlook.varying
        )
    ):
        # Sizes a mark makes dynamic from the first call, and flags (train/eval, grad mode)
        # whose variants are by design: not all of it is.
        sized = [v for v in explanation.outlook.varying if v.kind == "size"]
        flags = [v.source for v in explanation.outlook.varying if v.kind in FLAG_KINDS]
        state = (f"{frame.variants} variants: {counted(len(sized), 'size')} became dynamic "
                 f"after recompiles, and {', '.join(flags[:3])} "
                 f"{'changes' if len(flags) == 1 else 'change'} by design")  # fmt: skip
    elif bounded is True:
        state = f"{frame.variants} variants by design; pre-warm them"
    elif (
        bounded is False
        and frame.limit_hit
        and all(v.recurs or v.dynamic for v in explanation.outlook.varying)
    ):
        recurring = [v.source for v in explanation.outlook.varying if v.recurs]
        state = (
            f"{frame.variants} variants: more values that recur ({', '.join(recurring[:3])}) "
            f"than the recompile limit ({explanation.outlook.recompile_limit}) holds"
        )
    elif bounded is False:
        growing = [v.source for v in explanation.outlook.varying if not v.dynamic]
        state = f"{frame.variants} variants, unbounded ({', '.join(growing[:3])} keeps changing)"
    else:
        unclear = [v.source for v in explanation.outlook.varying if not settled(v)]
        steps = [v.source for v in schedule_steps(explanation.outlook.varying)]
        if steps:  # a schedule that steps: each value held for many calls
            state = (f"{frame.variants} variants, one per step of a schedule "
                     f"({', '.join(steps[:3])} held each value for several calls)")  # fmt: skip
        elif unclear:  # what changed once, by name: the outlook cannot bound it yet
            shown = ", ".join(unclear[:3]) + (", …" if len(unclear) > 3 else "")
            state = f"{frame.variants} variants, bound unknown ({shown} changed once)"
        else:
            causes = Counter(g.category for e in frame.recompiles for g in e.failed_guards[:1])
            summary = ", ".join(f"{cause} x{n}" for cause, n in causes.most_common()) or "other"
            state = f"{counted(frame.variants, 'variant')}: {summary}"
    late = explanation.after_warmup
    if late:  # compile ids: "compile 2/2", never "2/2" alone (it reads as a fraction)
        state = state.replace("; pre-warm them", "")
        which = f"compile{'s' if len(late) > 1 else ''} {', '.join(late)}"
        return f"{state}; {which} came after warmup: pre-warm them"
    return state


def _recompile_finding(frame: FrameEntry, explanation: FrameExplanation) -> Finding | None:
    if not frame.recompiles and frame.refused is None:
        return None
    fixes = recompile_candidates(explanation)
    if not fixes:
        categories = sorted({g.category for e in frame.recompiles for g in e.failed_guards})
        fixes = [Fix(RECOMPILE_ADVICE.get(c, RECOMPILE_ADVICE["other"])) for c in categories[:1]]
    evidence = [f"outlook: {explanation.outlook.reason}"]
    items = [*explanation.recompiles, *([explanation.refused] if explanation.refused else [])]
    # Each recompile's first change, then each one's second, ...: a view that shows only the
    # first lines still names every recompile (a decode step's layout change, not only the
    # prefill's three changes).
    rounds = itertools.zip_longest(*(item.changes for item in items))
    changed = [
        (item.compile_id, item.compared_with, change)
        for row in rounds
        for item, change in zip(items, row, strict=True)
        if change is not None
    ]
    evidence += merged_change_lines(changed)[:11]  # one line for every layer's same change
    return Finding(
        severity=_recompile_severity(frame, explanation),
        code="recompiles",
        title=_recompile_title(frame, explanation),
        advice=" ".join(fix.text for fix in fixes) or RECOMPILE_ADVICE["other"],
        evidence=evidence,
        subject=frame_subject(frame),
        facts={
            "recompiles": len(frame.recompiles),
            "refused": frame.refused is not None,
            "state": _recompile_state(frame, explanation),
        },
        fixes=fixes,
    )


def _in_called_function(frame: FrameEntry, site: GraphBreakSite) -> bool:
    """The break is in another function than the skipped frame's own (one its loop calls), by
    the function around the break's line in the user's file; False when that is unknown."""
    if site.site.file != frame.file:
        return bool(site.site.file and frame.file)
    lines = defined_at(site.site.file, site.site.line)
    return lines is not None and frame.line is not None and frame.line not in lines


def _skipped_frame_advice(frame: FrameEntry, sites: list[GraphBreakSite]) -> str:
    """The generic advice, or the known fix of the library break that made Dynamo skip it."""
    ids = {entry.compile_id for entry in frame.compiles}
    for site in sites:
        same_stream = not site.streams or frame.stream in site.streams
        if site.frame_skipped and same_stream and ids & set(site.compile_ids):
            where = f"{os.path.basename(str(site.site.file))}:{site.site.line}"
            code = f" (`{site.site.code}`)" if site.site.code and not site.known else ""
            said = f"Dynamo runs this function eagerly because of its break at {where}{code}"
            called = site.site.function
            if "loop" in site.reason and called and _in_called_function(frame, site):
                # The break is in a function the loop calls: that one is still compiled, as a
                # frame of its own (with its break); only this function's own code runs eagerly.
                return (f"{said}, in {called}(), which its loop calls. {called}() is still "
                        "compiled as a frame of its own (split at that break); what runs "
                        "eagerly is this function's own code around the calls. Remove the "
                        f"break in {called}() to compile this function whole. {site.fix}")  # fmt: skip
            if "loop" in site.reason:
                return f"{said}, inside its loop. {SKIPPED_LOOP_FIX} {site.fix}"
            return f"{said}: removing that break compiles it. {site.fix}"
    return SKIPPED_FRAME_ADVICE


GAVE_UP_ADVICE = (
    "Dynamo could not trace{where} with the inputs of this recompile and ran the frame "
    "eagerly instead, with no compiled variant for them. Make that line traceable or keep it "
    "out of the compiled code (a print or a log line: behind "
    "`if not torch.compiler.is_compiling():`, or after the compiled call)."
)


def _given_up_findings(frame: FrameEntry) -> list[Finding]:
    """``frame_skipped`` (warning) for a recompile Dynamo gave up on (Unsupported) in a frame
    whose earlier compiles made code: the frame is not skipped, but the inputs that needed
    the new variant run eagerly; the count of failures said so with no finding."""
    if frame.skipped:
        return []
    found = []
    for entry in frame.compiles:
        record = entry.record
        if record.fail_type != "Unsupported" or entry is frame.refused:
            continue
        reason = (record.fail_reason or "").strip().splitlines()
        raised = record.raised_in
        where = ""
        evidence = [f"compile {entry.compile_id}: {reason[0] if reason else record.fail_type}"]
        if raised is not None and raised.file:
            where = f" {os.path.basename(raised.file)}:{raised.line}"
            if raised.code:
                where += f" (`{raised.code.strip()}`)"
            evidence.append(f"raised at {raised.file}:{raised.line}")
        title = (f"{frame_where(frame)} runs eagerly for the inputs of compile "
                 f"{entry.compile_id}: Dynamo gave up on that recompile")  # fmt: skip
        subject = frame_subject(frame)
        if raised is not None and raised.file:
            subject = Subject("lines", frame_where(frame), raised.file, raised.line,
                              raised.function)  # fmt: skip
        found.append(Finding("warning", "frame_skipped", title,
                             GAVE_UP_ADVICE.format(where=where or " this frame"), evidence,
                             subject, facts={"partial": True}))  # fmt: skip
    return found


def _frame_findings(
    frame: FrameEntry, explanation: FrameExplanation, sites: list[GraphBreakSite]
) -> list[Finding]:
    findings = []
    ids = [entry.compile_id for entry in frame.compiles]
    if frame.limit_hit:
        per_instance = [row for row in explanation.outlook.varying if row.instances]
        advice = LIMIT_HIT_ADVICE
        if per_instance and explanation.outlook.bounded:
            advice = (
                "This frame hit Dynamo's recompile limit (torch._dynamo.config.recompile_limit, "
                f"default 8) and now runs eagerly for every new variant. Its variants are one "
                f"per instance of the {per_instance[0].instances} modules compiled one by one: "
                "raising the limit to cover them is the fix here (see the recompiles finding)."
            )
        title = f"{frame_where(frame, explanation.compile_call)} hit the recompile limit"
        evidence = [f"compiles {id_ranges(ids)}"]
        findings.append(
            Finding("error", "recompile_limit_hit", title, advice, evidence, frame_subject(frame))
        )
    if frame.skipped:
        reason = (frame.skip_reason or "").strip().splitlines()
        findings.append(
            Finding(
                "error",
                "frame_skipped",
                f"{frame_where(frame)} runs eagerly: Dynamo skipped the whole frame",
                _skipped_frame_advice(frame, sites),
                [f"compiles {id_ranges(ids)}", *reason[:1]],
                frame_subject(frame),
            )
        )
    findings += _given_up_findings(frame)
    recompiles = _recompile_finding(frame, explanation)
    last = frame.compiles[-1] if frame.compiles else None
    if (recompiles is not None and last is not None and last.record.fail_type
            and last is not frame.refused):  # fmt: skip
        # The last recompile raised: its change is what the failing call brought, not a
        # variant that serves anything (it never compiled).
        recompiles.title = (f"{frame_where(frame, explanation.compile_call)} recompiled and its "
                            f"recompile {last.compile_id} failed")  # fmt: skip
        recompiles.severity = "info"
        recompiles.advice = (
            f"The last recompile ({last.compile_id}) failed: the change above is what the "
            "failing call brought (see the compile failure); it serves nothing."
        )
        recompiles.fixes = []
    if recompiles is not None:
        if frame.limit_hit:  # the limit hit is what the recompiles led to: one cause
            findings[0].cause = recompiles.cause = f"frame {frame.stream}/{frame.frame_id}"
        findings.append(recompiles)
    for entry in frame.compiles:
        ops = entry.record.graph_op_count
        if ops is not None and ops > LARGE_GRAPH_OPS:
            findings.append(
                Finding(
                    "info",
                    "large_graph",
                    f"{frame_where(frame)}: graph of {ops} ops",
                    LARGE_GRAPH_ADVICE,
                    [entry.compile_id],
                    compile_subject(frame, entry.compile_id),
                )
            )
    return findings


def _break_finding(site: GraphBreakSite) -> Finding:
    where = f"{site.site.file}:{site.site.line} in {site.site.function}"
    caller = user_caller(site)
    if caller is not None:  # a library's break: the user's line that reached it first
        where = (f"{caller.file}:{caller.line} in {caller.function}, inside "
                 f"{site.site.function} ({short_library_path(site.site.file or '')}:"
                 f"{site.site.line})")  # fmt: skip
    heat = "" if site.hits is None else f", ran {site.hits} times"
    # Heat known: a break that ran at most once (startup) is not worth a rewrite; a break
    # between frames that compiled no ops splits nothing; PyTorch's own by-design break is not
    # the user's to fix.
    quiet = site.hot is False or site.splits_nothing or site.by_design
    severity: Severity = "info" if quiet else "warning"
    evidence = [f"compile ids: {id_ranges(site.compile_ids)}"]
    if site.site.code:
        evidence.insert(0, site.site.code)
    if caller is not None and caller.statement:
        evidence.insert(0, caller.statement)
    return Finding(
        severity=severity,
        code="graph_break",
        title=f"Graph break at {where} ({site.category}{heat}): {site.gb_type}"
        + (" (PyTorch's, by design)" if site.by_design else ""),
        advice=site.advice,
        evidence=evidence,
        subject=Subject.of_line("site", site.site),
        fixes=[] if site.by_design else break_setting_fixes(site.fix),
    )


CAPTURE_SCALARS = f"{DYNAMO_CONFIG}.capture_scalar_outputs"
CAPTURE_SHAPES = f"{DYNAMO_CONFIG}.capture_dynamic_output_shape_ops"
_SETTINGS = (CAPTURE_SCALARS, CAPTURE_SHAPES)


def break_setting_fixes(fix: str) -> list[Fix]:
    """The settings a break's advice recommends, each one ``run --try-fixes`` can apply: the
    advice names ``X = True`` as a fix and does not say that X does not help here (a value that
    decides a branch, a routing index). The advice itself stays as written: a try's result is
    said beside it (verdicts.py ``tried_advice``)."""
    found = []
    for name in _SETTINGS:
        short = name.rsplit(".", 1)[-1]
        if f"{short} = True" in fix and f"{short} does not" not in fix:
            found.append(Fix(f"{name} = True", FixApplication(f"{name} = True",
                                                              config=((name, True),))))  # fmt: skip
    return found


def without_unsafe_settings(findings: list[Finding]) -> None:
    """A precondition no break site can check alone: where the program changed module hooks
    after compiling, capturing a scalar removes the break that kept the hooked module out of
    the graph, and Dynamo does not guard hooks, so the hooks silently stop firing. The setting
    is then not offered as a fix to try."""
    if not any(f.code == "hook_changed_after_compile" for f in findings):
        return
    for finding in findings:
        if finding.code == "graph_break":
            finding.fixes = [fix for fix in finding.fixes
                             if fix.application is None
                             or CAPTURE_SCALARS not in dict(fix.application.config)]  # fmt: skip


def raised_in_label(frame: SourceLine | None) -> str | None:
    """``raised in channels_last_prep_pass (passes.py:12)``, or None."""
    if frame is None or frame.file is None:
        return None
    return f"raised in {frame.function} ({os.path.basename(frame.file)}:{frame.line})"


def _compile_failure(failure: FailureEntry, name: str | None = None) -> Finding:
    """A compile that raised: the first line of the error, where in the user's code it was
    raised (a user pass, a custom kernel), and custom-op advice when the error names one.
    ``name``: its frame as the user knows it (a compiled module's forward, not torch's
    ``inner`` wrapper)."""
    reason = failure.fail_reason.strip()
    evidence = [failure.compile_id, reason.splitlines()[0] if reason else failure.fail_type]
    raised = raised_in_label(failure.raised_in)
    if raised:
        evidence.append(raised)
    from pt2doctor.analysis.userside.causes import (
        compile_error_advice,  # only a failed compile needs it
    )

    advice = compile_error_advice(failure.fail_type, reason)
    return Finding(
        "error",
        "compile_failure",
        f"Compile {failure.compile_id} of {name or failure.function} failed: {failure.fail_type}",
        advice or COMPILE_ERROR_ADVICE,
        evidence,
        Subject(
            "compile", failure.function, function=failure.function, stream=failure.stream,
            compile_id=failure.compile_id,
        ),
    )  # fmt: skip


def find_findings(
    ledger: Ledger,
    sites: list[GraphBreakSite],
    stats: ParseStats,
    explanations: list[FrameExplanation] | None = None,
) -> list[Finding]:
    """All findings, errors first (pure function of the analyses). ``explanations`` (one per
    ledger frame, with the run's heat) are computed without heat when not given."""
    if explanations is None:
        explanations = explain_frames(ledger.frames, None, {})
    findings: list[Finding] = []
    frames = {(frame.stream, str(frame.frame_id)): (frame, explanation)
              for frame, explanation in zip(ledger.frames, explanations, strict=True)}  # fmt: skip
    for failure in ledger.failures:
        if failure.kind == "compile_error":
            found = frames.get((failure.stream, failure.compile_id.split("/")[0]))
            name = frame_where(found[0], found[1].compile_call) if found is not None else None
            findings.append(_compile_failure(failure, name))
    by_frame = [
        (frame, explanation, _frame_findings(frame, explanation, sites))
        for frame, explanation in zip(ledger.frames, explanations, strict=True)
    ]
    _share_twin_diagnosis(by_frame)
    findings += [finding for _, _, own in by_frame for finding in own]
    breaks = [_break_finding(site) for site in sites]
    _group_under_breaks(by_frame, sites, breaks)
    findings += breaks
    if stats.problems:
        findings.append(
            Finding(
                "warning",
                "parse_problems",
                f"The log is damaged: {stats.problems} unreadable line(s) or record(s)",
                "Everything readable is reported; see parse_stats. Re-capture the log if counts "
                "look incomplete.",
                [
                    f"{key}: {value}"
                    for key, value in stats.as_dict().items()
                    if key
                    in ("non_trace_lines", "bad_envelopes", "md5_mismatches", "truncated_records")
                    and value
                ],
                LOG,
            )
        )
    return sort_findings(findings)


HINT_ONLY = "Dynamo's hint: "
"""How a recompiles finding's advice starts where pt2doctor has no fix of its own."""


def _share_twin_diagnosis(
    by_frame: list[tuple[FrameEntry, FrameExplanation, list[Finding]]],
) -> None:
    """Two frames of one code (Dynamo resumes after a break in one frame per path through
    it) recompiling on the same value: where one has a fix and the other only Dynamo's hint
    (it changed once, too few to tell), the other gets the first's fix, and both, with the
    first's limit hit, share one cause (the reports show them as one)."""
    recompiles = [(frame, explanation, f) for frame, explanation, own in by_frame
                  for f in own if f.code == "recompiles"]  # fmt: skip
    for frame, explanation, finding in recompiles:
        if not finding.advice.startswith(HINT_ONLY):
            continue
        sources = {row.source for row in explanation.outlook.varying}
        for other, other_explanation, diagnosed in recompiles:
            if (
                other is frame
                or diagnosed.advice.startswith(HINT_ONLY)
                or (other.file, other.function) != (frame.file, frame.function)
                or not sources & {row.source for row in other_explanation.outlook.varying}
            ):
                continue
            # Where the diagnosed frame hit the limit, its findings already share a cause.
            cause = diagnosed.cause or f"frame {other.stream}/{other.frame_id}"
            finding.advice, finding.fixes = diagnosed.advice, list(diagnosed.fixes)
            finding.cause = diagnosed.cause = cause
            break


def _package(file: str | None) -> str | None:
    """The installed package a file is in (``transformers``; ``<stdlib>`` for the standard
    library's), None for the user's own."""
    where = library_path(file) if file else None
    if where is None:
        return "<stdlib>" if file and not is_user_file(file) else None
    return where.split("/")[0]


def _group_under_breaks(
    by_frame: list[tuple[FrameEntry, FrameExplanation, list[Finding]]],
    sites: list[GraphBreakSite],
    breaks: list[Finding],
) -> None:
    """A break splits every frame on its stack into frames of their own (the user's function,
    a library's wrapper, the model's forward ...), and each recompiles when the input changes:
    one by-design recompiles finding per frame for one cause (a logging break in a GPT-2
    fine-tune made five). Those (``info`` ones only: a warning has a fix of its own) share the
    break's ``cause``, and the reports show them under it."""
    # A resume frame goes under the break at its own line first, then under a caller's
    # (the same function broke at another call) where no break claims it by its line.
    for exact in (True, False):
        for site, finding in zip(sites, breaks, strict=True):
            _group_under(site, finding, by_frame, exact)


def _group_under(
    site: GraphBreakSite,
    finding: Finding,
    by_frame: list[tuple[FrameEntry, FrameExplanation, list[Finding]]],
    exact: bool,
) -> None:
    stack = {(line.file, line.function) for line in [*site.user_stack, site.site]}
    package = _package(site.site.file)

    def resumes(frame: FrameEntry) -> bool:
        return _resumes_at(frame, site, exact)

    members = [
        own
        for frame, explanation, findings in by_frame
        for own in findings
        if (own.cause is None
            and own.code == "recompiles"
            and ((own.severity == "info"
                  and ((frame.file, frame.function) in stack or resumes(frame)))
                 # a library's frame the break split off (Dynamo compiled it on its own, with
                 # what the library made): its recompiles are the break's, whatever they are
                 or (explanation.split_off and package and _package(frame.file) == package)
                 # a warning has a fix of its own, unless it recompiles only on what the
                 # break handed over (a resume frame recompiling on an argument of the
                 # function, `decay`, does so with the break removed too)
                 or (resumes(frame) and _only_carried(explanation))))
        # a limit hit and its recompiles (one block) on what the break handed over
        or (frame.limit_hit and own.code in ("recompiles", "recompile_limit_hit")
            and not (own.cause or "").startswith("break ")  # not under another break
            and resumes(frame) and _only_carried(explanation))
    ]  # fmt: skip
    if members:
        key = f"break {site.site.file}:{site.site.line}"
        finding.cause = key
        for own in members:
            own.cause = key


def _only_carried(explanation: FrameExplanation) -> bool:
    """Every value the frame recompiles on is one the break handed over (a Python float read
    from a tensor, a bound method), or an element of a Python container the code after the
    break updates with them (``confusion[8][1]`` after ``for t, p in zip(y.tolist(), ...):
    confusion[t][p] += 1``): the break's fix removes the recompiles, limit and all."""
    varying = explanation.outlook.varying
    carried = [row for row in varying
               if CARRIED in row.source or handed_over(explanation, row)]  # fmt: skip
    return bool(carried) and all(row in carried or _container_element(row) for row in varying)


def _container_element(row: Varying) -> bool:
    """A number kept in a plain Python container the frame reads (``confusion[8][1]``): not
    an attribute, a tensor's size or the container's length."""
    root, bracket, _ = row.source.partition("[")
    return bool(bracket) and row.kind == "value" and root.isidentifier() and root != "self"


def _resumes_at(frame: FrameEntry, site: GraphBreakSite, exact: bool = True) -> bool:
    """The frame is the code after this break (its resume function, in the frame that broke
    or in a caller that broke with it): what it recompiles on is what the break left on the
    stack, a cause the break's fix removes with it."""
    resume = RESUME_NAME.match(frame.function or "")
    if resume is None:
        return False
    # The break's own line, or a line of its stack where a caller's frame broke (a break in
    # an inlined function splits each frame on the way: QLinear.forward at its apply() call).
    lines = [site.site, *site.user_stack]
    if any(frame.file == line.file and str(line.line) == resume.group(2) for line in lines):
        return True
    if exact:
        return False
    # The same caller broke at another call of the break's function (a second apply()).
    return any(frame.file == line.file and line.function == resume.group(1)
               for line in site.user_stack)  # fmt: skip


def sort_findings(findings: list[Finding]) -> list[Finding]:
    """Errors first, then warnings, then info; within a severity, what the profile measured a
    fix to save (the most first), then the rest in their order."""
    return sorted(
        findings,
        key=lambda f: (SEVERITIES.index(f.severity), f.saves_ms is None, -(f.saves_ms or 0.0)),
    )

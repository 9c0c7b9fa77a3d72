"""What ``run --try-fixes`` measured: each fix re-run with the fix applied, its effect on the
run (compiles, recompiles, limit hits, graph breaks, wall time, exit code) before and after, a
verdict, and the finding's advice rewritten so that a fix that did not help is never shown as
the fix.

A try that changed what the program printed (its numbers, beyond a relative 1e-3: a fix of
compiles or speed must leave the results as they were), or what its compiled callables
returned on their first calls (torchcompat/digests.py), is ``unsafe`` and never shown as the
fix; a correctness finding's fix is meant to change them, and is judged by the counts alone.

The verdict compares, in order, whether the program still ran, then recompile-limit hits
(a frame past the limit runs eagerly: raising the limit adds compiles and still helps; a
limit still hit as often is ``no_effect`` whatever it added), then recompiles, then graph
breaks: the first that differs decides (fewer: ``helped``, more: ``worse``); all equal is
``no_effect``. Wall time is reported, not judged (one run each).
"""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Callable, Mapping, Set
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pt2doctor.analysis.breaks.sites import GraphBreakSite, graph_break_sites
from pt2doctor.analysis.findings.codes import SEVERITIES, spec
from pt2doctor.analysis.findings.model import Finding
from pt2doctor.analysis.recompiles.ledger import Ledger, compile_ledger
from pt2doctor.analysis.text import counted
from pt2doctor.trace.spread import calls_noise, rank_p_smaller
from pt2doctor.trace.types import Manifest, Run, Try

if TYPE_CHECKING:
    from pt2doctor.analysis.recompiles.fix_model import Fix

Verdict = Literal["helped", "partly", "no_effect", "worse", "unsafe", "cannot_tell"]
VERDICT_WORDS = {
    "helped": "helped",
    "partly": "helped partly, the finding remains",
    "no_effect": "no effect",
    "worse": "made it worse",
    "unsafe": "changed the program's results",
    "cannot_tell": "cannot tell",
}
_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?(?![\w.])")
# Lines whose numbers are the machine's or the compiler's, not the program's results:
# timings, rates, dates, and counts of what compiled (a fix is meant to change those).
_MEASURED = re.compile(
    r"(?:^|[^a-z])(?:ms|us|µs|ns|sec|secs|seconds?|times?|timed|timing|took|elapsed|latency|"
    r"throughput|speed|speedup|fps|wall|duration|date|pid|it/s|tok/s|graphs?|compiles?|"
    r"compiled|compilations?|recompiles?|recompilations?|breaks?|frames?|guards?|variants?|"
    r"cache|hits?|misses?|dynamo|inductor)(?:[^a-z]|$)"
    r"|\d\s*s\b|\d\d:\d\d",
    re.I,
)
RTOL, ATOL = 1e-3, 1e-6
INPUT_RTOL = 1e-6
"""Two calls were given the same inputs only within this (float64 sums of the same float32
tensors agree to rounding): at RTOL, the hidden states of two runs of an unseeded program
once matched by chance (-1.986 against -2.000 of an absolute sum of hundreds), and their
outputs read as a change the fix made."""
_JUDGED = ("limit_hits", "recompiles", "graph_breaks")
_NAMES = {
    "compiles": "compiles",
    "recompiles": "recompiles",
    "limit_hits": "limit hits",
    "graph_breaks": "graph breaks",
    "wall_s": "wall",
    "exit_code": "exit code",
}


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a run did, in the numbers a fix is judged by."""

    compiles: int
    recompiles: int
    limit_hits: int
    graph_breaks: int
    wall_s: float | None
    exit_code: int | None


def outcome(run: Run) -> Outcome:
    """``run``'s numbers, from its ledger and break sites (:func:`outcome_of`)."""
    ledger = compile_ledger(run)
    return outcome_of(ledger, graph_break_sites(ledger), run.manifest)


def outcome_of(ledger: Ledger, sites: list[GraphBreakSite], manifest: Manifest | None) -> Outcome:
    """The numbers of a run already analysed (the report's summary counts the same way); wall
    time and exit code from its manifest."""
    manifest = manifest or {}
    start, end = manifest.get("start_time"), manifest.get("end_time")
    wall = round(end - start, 3) if isinstance(start, float) and isinstance(end, float) else None
    returned = manifest.get("returned")
    return Outcome(
        compiles=len(ledger.compiles),
        recompiles=sum(len(frame.recompiles) for frame in ledger.frames),
        limit_hits=sum(1 for frame in ledger.frames if frame.limit_hit),
        graph_breaks=sum(len(site.compile_ids) for site in sites),
        wall_s=wall,
        exit_code=returned if isinstance(returned, int) else None,
    )


def report_outcome(report: Mapping[str, Any]) -> dict[str, Any]:
    """A report's numbers as :class:`Outcome` fields, from its summary (which
    :func:`outcome_of` counted); a check group's in-process report has no wall time or exit
    code."""
    summary = report["summary"]
    return {
        **{
            name: summary[name] for name in ("compiles", "recompiles", "limit_hits", "graph_breaks")
        },
        "wall_s": None,
        "exit_code": None,
    }


def printed_values(text: str) -> list[tuple[int, str, float]]:
    """The numbers a program printed, with their line (number, text), leaving out the lines
    that measure the machine (``step took 12.3 ms``, a time of day)."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        if _MEASURED.search(line):
            continue
        found += [(number, line.strip(), float(m.group())) for m in _NUMBER.finditer(line)]
    return found


def printed_change(before: str | None, after: str | None) -> str | None:
    """How what the program printed with a fix differs from what it printed without it
    (None: the same numbers, within RTOL/ATOL, or either output missing)."""
    if before is None or after is None:
        return None
    old, new = printed_values(before), printed_values(after)
    for (line, text, value), (_, text_after, value_after) in zip(old, new, strict=False):
        if abs(value - value_after) > ATOL + RTOL * abs(value):
            return (f"line {line} printed {text_after!r} with the fix, {text!r} without "
                    "it")  # fmt: skip
    if len(old) != len(new):
        return f"it printed {len(new)} numbers with the fix, {len(old)} without it"
    return None


def output_change(before: Run, after: Run) -> str | None:
    """How what the compiled callables returned with a fix differs from what they returned
    without it (``output_digest`` events, torchcompat/digests.py: per call, each tensor's shape
    and float64 sums), beyond RTOL of the tensor's absolute sum; None: the same, or nothing to
    compare (a call given other inputs, a module that started with other weights: a program
    that draws them unseeded at each start)."""
    new = _digests(after)
    old = _digests(before)
    # A module that starts with other weights (an unseeded init) is another computation.
    other_state = {site for (site, call), e in old.items() if call == 1
                   and _same(e.get("state"), (new.get((site, 1)) or {}).get("state"), INPUT_RTOL) is False}  # fmt: skip
    for (site, call), event in old.items():
        found = new.get((site, call))
        if found is None or site in other_state:
            continue
        if _same(event.get("inputs"), found.get("inputs"), INPUT_RTOL) is False:
            continue  # given other inputs (drawn unseeded): nothing to compare
        values, after_values = list(event.get("values") or []), list(found.get("values") or [])
        where = f"the compiled code at {site.rsplit('#', 1)[0]} returned"
        if len(values) != len(after_values):
            return (f"{where} {len(after_values)} values on call {call} with the fix, "
                    f"{len(values)} without it")  # fmt: skip
        for index, (a, b) in enumerate(zip(values, after_values, strict=True)):
            differs = _differs(a, b)
            if differs:
                return f"{where} {differs} on call {call} (output {index})"
    return None


def _same(a: Any, b: Any, rtol: float = RTOL) -> bool | None:
    """Whether two digests are the same, within tolerance (None: either is missing)."""
    if a is None or b is None:
        return None
    return len(a) == len(b) and not any(_differs(x, y, rtol) for x, y in zip(a, b, strict=True))


def _differs(a: Any, b: Any, rtol: float = RTOL) -> str | None:
    """How one digested value differs with the fix (``b``) from without it (``a``)."""
    if isinstance(a, list) and isinstance(b, list):
        if a[0] != b[0]:
            return f"a tensor of shape {b[0]} with the fix, {a[0]} without it,"
        scale = max(abs(a[2]), abs(b[2]))
        if max(abs(a[1] - b[1]), abs(a[2] - b[2])) > ATOL + rtol * scale:
            return f"other values (sum {b[1]:.6g} with the fix, {a[1]:.6g} without it)"
        return None
    if isinstance(a, float) and isinstance(b, float) and abs(a - b) > ATOL + rtol * abs(a):
        return f"{b:.6g} with the fix, {a:.6g} without it,"
    return None


def _digests(run: Run) -> dict[tuple[str, int], dict[str, Any]]:
    events = run.probes.output_digests if run.probes is not None else []
    return {(str(e.get("site")), int(e.get("call") or 0)): e for e in events}


def results_change(before: Run, after: Run, vary: Set[str] = frozenset()) -> str | None:
    """What a fix changed in the program's results: what it printed
    (:func:`printed_change`), else what its compiled callables returned
    (:func:`output_change`); None when neither changed. ``vary``: what differs between two runs
    without the fix too (:func:`results_vary`), which is not compared: not the fix's doing."""
    printed = None if "printed" in vary else printed_change(before.stdout, after.stdout)
    returned = None if "returned" in vary else output_change(before, after)
    return printed or returned


def results_vary(before: Run, control: Run | None) -> set[str]:
    """What differs between two runs of the program without a fix (``control``: a re-run of
    it): ``printed`` numbers, or what its compiled code ``returned``; such a result varies run
    to run (the program draws unseeded numbers), and a try cannot be judged by it."""
    if control is None:
        return set()
    vary = set()
    if printed_change(before.stdout, control.stdout) is not None:
        vary.add("printed")
    if output_change(before, control) is not None:
        vary.add("returned")
    return vary


CONTROL_LABEL = "the program again, no fix"
"""A ``--try-fixes`` re-run without any fix (``trial["control"]``), made when a try's results
differ from the main run's: whether they differ run to run anyway."""


def control_of(tries: list[Try]) -> Try | None:
    return next((found for found in tries if found.trial.get("control")), None)


def verdict(
    before: Outcome, after: Outcome, changed: str | None = None, remains: bool | None = None
) -> Verdict:
    """``changed``: how the try changed what the program printed (:func:`printed_change`),
    None for a correctness fix or when it did not; ``remains``: whether the finding the fix is
    for is still there, as severe, in the re-run (:func:`target_remains`; None: not known).
    A fix helped only when its finding is gone or less severe (a recompile bounded); counts
    that improved while it remains are ``partly``, and the next candidate is tried."""
    if (after.exit_code or 0) != 0 and (before.exit_code or 0) == 0:
        return "worse"
    if changed is not None:
        return "unsafe"
    by_counts = _by_counts(before, after)
    if remains is False:
        return "helped" if by_counts != "worse" else "worse"
    if remains is True and by_counts == "helped":
        return "partly"
    return by_counts


def _by_counts(before: Outcome, after: Outcome) -> Verdict:
    if before.limit_hits and after.limit_hits == before.limit_hits:
        return "no_effect"  # still past the limit: the compiles a raised limit adds are no harm
    for name in _JUDGED:
        old, new = getattr(before, name), getattr(after, name)
        if new != old:
            return "helped" if new < old else "worse"
    return "no_effect"


Target = tuple[str, dict[str, Any], str]
"""What a fix is for: its finding's code, subject (as JSON) and severity."""


def _identity(finding: Finding) -> dict[str, Any]:
    """A finding's subject as two runs of one program share it: less the name of the log
    stream, which is the run's own."""
    return {k: v for k, v in finding.subject.as_json().items() if k != "stream"}


def target_of(finding: Finding) -> Target:
    return finding.code, _identity(finding), finding.severity


def target_remains(target: Target, findings: list[Finding]) -> bool:
    """Whether the re-run still has the finding a fix is for: the same code about the same
    subject, at least as severe."""
    code, subject, severity = target
    rank = SEVERITIES.index(severity)
    return any(f.code == code and _identity(f) == subject
               and SEVERITIES.index(f.severity) <= rank for f in findings)  # fmt: skip


def target_moved(target: Target, findings: list[Finding], before: list[Finding]) -> Finding | None:
    """For a graph break gone from the re-run: a break the re-run has at another line of the
    same function, which the run without the fix did not have. The break moved (with
    capture_scalar_outputs an ``.item()`` stays in the graph, and the ``if`` on its value
    breaks instead): not a break removed. None otherwise."""
    code, subject, _ = target
    if code != "graph_break" or not subject.get("file"):
        return None
    had = {(f.subject.file, f.subject.line) for f in before if f.code == code}
    return next(
        (f for f in findings if f.code == code and f.subject.file == subject.get("file")
         and f.subject.function == subject.get("function")
         and (f.subject.file, f.subject.line) not in had),
        None,
    )  # fmt: skip


TIME_FLOOR = 0.05
"""A fix of time helps when the hot loop's call got faster by more than this share ..."""
TIME_MADS = 3.0
"""... and by more than this many MADs of the two windows' calls together; or by more than
one MAD where the two windows' calls are apart by rank beyond RANK_P."""
RANK_P = 0.005
"""The rank-sum test's one-sided p-value below which two runs' calls are apart (six against
six, every call of one below every call of the other: 0.0015)."""


def window_call_ms(run: Run) -> tuple[float, float] | None:
    """The median and MAD of the hot loop's call in ``run``'s profile window (ms; the calls the
    machine preempted left out), None when the run kept no window or it was noisy."""
    noise = (run.profile.window.get("noise") if run.profile is not None else None) or {}
    if not noise or noise.get("noisy") or not noise.get("median_ms"):
        return None
    return float(noise["median_ms"]), float(noise.get("mad_ms") or 0.0)


def window_calls(run: Run) -> list[float]:
    """The hot loop's calls (ms) ``run``'s profile window kept: less those the machine
    preempted and those that held a compile."""
    window = run.profile.window if run.profile is not None else {}
    left_out = {*((window.get("noise") or {}).get("preempted") or []),
                *(window.get("compile_periods") or [])}  # fmt: skip
    return [float(ms) for i, ms in enumerate(window.get("periods_ms") or []) if i not in left_out]


OFF_CPU_APART = 0.15
"""Two windows whose calls spent shares of their time off the CPU this far apart were timed
under different loads (on a CPU run: descheduled threads), and their times do not compare."""


def off_cpu_share(run: Run) -> float | None:
    """The median share of the hot loop's call that ``run``'s window spent off the CPU (wall
    less the calling thread's CPU time); None without CPU times, or on a GPU run, whose host
    waits on the device off the CPU by design."""
    window = run.profile.window if run.profile is not None else {}
    trace = run.profile.trace if run.profile is not None else None
    if "kernel" in (getattr(trace, "categories", None) or ()):
        return None
    walls = [float(v) for v in window.get("periods_ms") or []]
    cpus = [float(v) for v in window.get("periods_cpu_ms") or []]
    if not walls or len(cpus) != len(walls):
        return None
    return statistics.median(max(w - c, 0.0) / w for w, c in zip(walls, cpus, strict=True) if w)


def incomparable(before: Run, after: Run, trial: Mapping[str, Any] | None = None) -> str | None:
    """Why the two runs' call times do not compare (None: they do): where their calls spent shares of their time
    off the CPU OFF_CPU_APART apart (the machine ran something else during one of them). For
    DataLoader workers (``trial``), always: the profiler records each op that makes a batch in
    the main run, and none in the workers, whose processes it does not profile (loader_eval:
    the windows read 13.9 ms saved of a 10.2 ms wait); and the loop waits for their batches on
    a queue, off the CPU by design (text_loader: 57% of each call against 0%; by hand the
    workers made it slower on 2 cores, 1.5 -> 2.7 ms per batch)."""
    if trial is not None and trial.get("loader_workers"):
        return ("the profiler records the ops that make each batch in the main run and not in "
                "the workers, whose processes it does not profile: the windows' times do not "
                "compare; time the loop without the profiler")  # fmt: skip
    off = (off_cpu_share(before), off_cpu_share(after))
    if off[0] is None or off[1] is None or abs(off[0] - off[1]) <= OFF_CPU_APART:
        return None
    return (f"the two runs were timed under different loads: the calls spent {off[1]:.0%} of "
            f"their time off the CPU with the fix, {off[0]:.0%} without it")  # fmt: skip


@dataclass(frozen=True, slots=True)
class CallTimes:
    """The hot loop's call in two runs (ms): each run's calls, median and MAD, and what they
    are: the compiled callable's calls timed without the profiler (its paired calls, after the
    window), or the profile windows' calls."""

    before: list[float]
    after: list[float]
    medians: tuple[float, float]
    mads: tuple[float, float]
    source: str


def _median_mad(calls: list[float]) -> tuple[float, float] | None:
    noise = calls_noise(calls)
    if noise is None or noise.noisy:
        return None
    return noise.median_ms, noise.mad_ms


PLAIN_CALLS = 10
"""Plain calls (after the pairs) a run needs for them to judge a try."""


def _compiled_calls(run: Run, kind: str) -> dict[tuple[Any, Any], list[float]]:
    """Each compiled callable's calls (ms) by its file and line: ``plain`` (timed after the
    pairs, nothing between them) or ``paired`` (its compiled half of the pairs)."""
    if run.probes is None:
        return {}
    events, key = ((run.probes.plain_calls, "plain_ms") if kind == "plain"
                   else (run.probes.paired_calls, "compiled_ms"))  # fmt: skip
    return {(e.get("file"), e.get("line")): [float(v) for v in e.get(key) or []] for e in events}


def outside_compiled(trial: Mapping[str, Any]) -> bool:
    """A fix of the code around the compiled calls (a function compiled, DataLoader workers):
    its saving is in the loop's time, not in a compiled call's."""
    return bool(trial.get("functions") or trial.get("loader_workers"))


def call_times(before: Run, after: Run, compiled: bool = True) -> CallTimes | None:
    """The hot loop's call in both runs: the one compiled callable both runs paired, timed
    without the profiler, where a fix of that call is what moved (the profiler's own cost is
    not even across graphs: an inference graph's saving read 0.5 ms profiled and 2.5 ms plain
    on a BERT encoder): its calls after the pairs, as the program made them, where both runs
    have PLAIN_CALLS (its paired compiled calls, else: those follow eager calls, whose memory
    they pay for); else the profile windows' calls. None when none is there, or quiet, in
    both."""
    kinds = (("plain", "the compiled calls timed without the profiler"),
             ("paired", "the paired compiled calls timed without the profiler"))  # fmt: skip
    for kind, source in kinds if compiled else ():
        old, new = _compiled_calls(before, kind), _compiled_calls(after, kind)
        # One compiled callable, the same in both: a fix that compiles more (a function of
        # the loop's own code) moves time the first one's calls do not hold.
        if len(old) != 1 or old.keys() != new.keys():
            continue
        calls = (old[next(iter(old))], new[next(iter(new))])
        if kind == "plain" and min(map(len, calls)) < PLAIN_CALLS:
            continue
        found = (_median_mad(calls[0]), _median_mad(calls[1]))
        if found[0] is not None and found[1] is not None:
            return CallTimes(*calls, (found[0][0], found[1][0]), (found[0][1], found[1][1]),
                             source)  # fmt: skip
    windows = (window_call_ms(before), window_call_ms(after))
    if windows[0] is None or windows[1] is None:
        return None
    return CallTimes(window_calls(before), window_calls(after), (windows[0][0], windows[1][0]),
                     (windows[0][1], windows[1][1]), "the profile windows' calls")  # fmt: skip


def time_moved(
    before: Run, after: Run, trial: Mapping[str, Any] | None = None
) -> Literal["faster", "slower", "same"] | None:
    """For a fix of time (``trial``; None: one of the compiled call): how the re-run's
    hot-loop call moved against the main run's (:func:`call_times`, :func:`moved_by`)."""
    times = call_times(before, after, trial is None or not outside_compiled(trial))
    return moved_by(times, incomparable(before, after, trial))


def moved_by(
    times: CallTimes | None, apart: str | None
) -> Literal["faster", "slower", "same"] | None:
    """Beyond TIME_FLOOR and TIME_MADS, or beyond TIME_FLOOR and one MAD with the calls apart
    by rank (RANK_P): faster or slower; within TIME_FLOOR or one MAD: the same; in between,
    with the times missing or noisy, or with the two runs under different loads (``apart``,
    :func:`incomparable`): None (cannot tell: the two runs are two processes at two moments,
    and a noisy pair of measures must not read as "no effect")."""
    if times is None or apart:
        return None
    (old, new), mads = times.medians, sum(times.mads)
    shift = old - new
    floor = TIME_FLOOR * old
    if abs(shift) <= max(floor, mads):
        return "same"
    if abs(shift) > max(floor, TIME_MADS * mads):
        return "faster" if shift > 0 else "slower"
    rank_p = (rank_p_smaller(times.after, times.before) if shift > 0
              else rank_p_smaller(times.before, times.after))  # fmt: skip
    if rank_p < RANK_P:
        return "faster" if shift > 0 else "slower"
    return None


def timed_verdict(before: Outcome, after: Outcome, changed: str | None,
                  moved: Literal["faster", "slower", "same"] | None) -> Verdict:  # fmt: skip
    """A fix of time's verdict (``moved``: :func:`moved_by`): as :func:`verdict`, its finding
    gone when the call got faster, ``worse`` when it got slower, and ``cannot_tell`` when the
    measures cannot say."""
    found = verdict(before, after, changed, None if moved is None else moved != "faster")
    if found == "no_effect" and moved is None:
        return "cannot_tell"
    return "worse" if found == "no_effect" and moved == "slower" else found


def trial_key(trial: dict[str, Any]) -> str:
    """A trial's identity: the same fix proposed again is the same try."""
    return json.dumps({k: v for k, v in trial.items() if k != "label"}, sort_keys=True)


def _recorded(events: list[dict[str, Any]], kind: str, field: str) -> Any:
    """``field`` of the first ``kind`` event the re-run recorded (None: none)."""
    return next((e.get(field) for e in events if e.get("kind") == kind), None)


def applied_as(trial: dict[str, Any], run: Run) -> str:
    """How the re-run applied the fix, from what its process recorded doing."""
    events = run.probes.try_fix if run.probes is not None else []
    parts = []
    for event in events:
        if event.get("kind") == "try_fix_config":
            if event.get("ok"):
                parts.append(
                    f"{event.get('key')} = {event.get('value')!r} set before the program ran"
                )
            else:
                parts.append(f"{event.get('key')} not set: {event.get('error')}")
    compile_settings = trial.get("compile") or {}
    if compile_settings:
        settings = ", ".join(f"{k}={v!r}" for k, v in compile_settings.items())
        parts.append(f"every torch.compile call given {settings}")
    if trial.get("marks"):
        made = _recorded(events, "try_fix_marks", "made")
        if made:
            counts = ", ".join(f"{key.replace(':', ' dim ')}: {n} calls" for key, n in made.items())
            parts.append(f"maybe_mark_dynamic before each call of the compiled code ({counts})")
        else:
            parts.append("marks reached no call: no compiled callable takes that argument")
    if trial.get("no_grad"):
        made = _recorded(events, "try_fix_no_grad_calls", "calls")
        parts.append(f"torch.no_grad() around each call of the compiled code ({made or 0} calls)")
    if trial.get("loader_workers"):
        made = _recorded(events, "try_fix_workers_made", "loaders")
        parts.append(f"num_workers={trial['loader_workers']} given to "
                     f"{counted(made or 0, 'DataLoader')} made without workers")  # fmt: skip
    if trial.get("functions"):
        calls = _recorded(events, "try_fix_function_calls", "calls")
        for function in trial["functions"]:
            key = f"{Path(function['file']).name}:{function['function']}"
            made = (calls or {}).get(key)
            parts.append(
                f"torch.compile around {function['function']} "
                + (f"({made} calls ran compiled)" if made else
                   "(no call reached it: the program calls it by another reference)")
            )  # fmt: skip
    return "; ".join(parts) or "not applied (the re-run recorded nothing)"


def changes(before: dict[str, Any], after: dict[str, Any], wall: bool = True) -> str:
    """``limit hits 1 → 0, compiles 8 → 10``: what moved, the compiles always, and the wall
    time when ``wall``."""
    shown = []
    for name in ("exit_code", *_JUDGED, "compiles"):
        old, new = before.get(name), after.get(name)
        if old != new or name == "compiles" or (name == "limit_hits" and old):
            shown.append(f"{_NAMES[name]} {old} → {new}")
    if wall and before.get("wall_s") is not None and after.get("wall_s") is not None:
        shown.append(f"wall {before['wall_s']:.1f} → {after['wall_s']:.1f} s (the whole run, "
                     "its compiles included)")  # fmt: skip
    return ", ".join(shown)


def effect(row: dict[str, Any]) -> str:
    """A try in a few words, for the plan: ``tried recompile_limit = 10: helped, limit hits
    1 → 0, compiles 9 → 10``."""
    verdict_words = VERDICT_WORDS.get(row["verdict"], row["verdict"])
    fix = str(row["fix"]).replace("torch._dynamo.config.", "").replace("torch._dynamo.", "")
    return f"tried {fix}: {verdict_words}, {changes(row['before'], row['after'], wall=False)}"


def tried_row(
    trial: dict[str, Any],
    before: Outcome,
    found: Try,
    main: Run | None = None,
    remains: bool | None = None,
    control: Run | None = None,
    moved: Finding | None = None,
) -> dict[str, Any]:
    """The ``findings[].tried`` object of one try; ``main``: the run without the fix, None for
    a correctness finding's fix (meant to change the results); ``control``: the program
    re-run without any fix, where one was made (:data:`CONTROL_LABEL`); ``remains``: whether the
    finding is still there in the re-run (:func:`verdict`), None for a fix of time
    (``timed``), which is judged by the hot loop's call alone: its finding may rightly remain
    (a library-bound loop that freezing made faster is still library-bound)."""
    after = outcome(found.run)
    vary = set() if main is None else results_vary(main, control)
    changed = None if main is None else results_change(main, found.run, vary)
    timed = trial.get("timed")  # a fix of time: judged by the hot loop's call
    # Its measure, once: the call's times in both runs, and whether their loads compare.
    times = (None if main is None or not timed
             else call_times(main, found.run, not outside_compiled(trial)))  # fmt: skip
    apart = None if main is None or not timed else incomparable(main, found.run, trial)
    row = {
        "fix": trial.get("label", ""),
        "applied_as": applied_as(trial, found.run),
        "before": asdict(before),
        "after": asdict(after),
        "verdict": (
            timed_verdict(before, after, changed, moved_by(times, apart))
            if timed
            else verdict(before, after, changed, True if moved is not None else remains)
        ),
        "run_dir": f"tries/{found.n}",
        "trial": trial,
        "summary": changes(asdict(before), asdict(after)),
    }
    if timed:
        row["summary"] = f"{row['summary']}; {_time_said(times)}"
        if apart:
            row["summary"] += f"; {apart}"
        if times is not None:
            row["time_per_call_ms"] = {"before": round(times.medians[0], 6),
                                       "after": round(times.medians[1], 6)}  # fmt: skip
    elif moved is not None:
        row["finding_remains"] = True
        row["moved_to"] = {"line": moved.subject.line, "title": moved.title}
        row["summary"] = (f"{row['summary']}; the break moved to line {moved.subject.line}: "
                          f"{moved.title}")  # fmt: skip
    elif remains is not None:
        row["finding_remains"] = remains
        gone = "the finding is gone from the re-run" if not remains else "the finding remains"
        row["summary"] = f"{row['summary']}; {gone}"
    if vary:
        said = " and ".join(sorted(vary))
        row["results_vary"] = sorted(vary)
        row["summary"] += (f"; what the program {said} was not compared: it differs between two "
                           "runs without the fix too (unseeded random numbers?)")  # fmt: skip
    if changed is not None:
        row["results_changed"] = changed
        row["summary"] = f"{row['summary']}; {changed}"
        drawn = random_line(found.run)
        if drawn is not None:
            more = (after.limit_hits < before.limit_hits
                    or after.graph_breaks != before.graph_breaks)  # fmt: skip
            row["summary"] += RANDOM_DRAWN.format(
                line=drawn, more=" and this fix compiles calls that ran eagerly before," if more
                else ","
            )  # fmt: skip
    return row


def _timed_unmeasured(row: dict[str, Any]) -> str:
    """Why a fix of time that was tried gives no saving: it saved nothing beyond the windows'
    noise, it made the loop slower, it changed the results, or a window could not tell."""
    moved = row.get("time_per_call_ms")
    times = (f" (time per call {moved['before']:.3g} → {moved['after']:.3g} ms)"
             if moved else " (a profile window was missing or noisy: cannot tell)")  # fmt: skip
    said = {"no_effect": "it saved nothing beyond the noise of the two windows",
            "cannot_tell": "the two windows cannot tell whether it saves anything (their "
            "noise, or the machine's load apart)",
            "worse": "it made the loop slower",
            "unsafe": "it changed the program's results, so its time is not a saving"}  # fmt: skip
    verdict = row["verdict"]
    return f"tried {row['fix']}: {said.get(verdict, VERDICT_WORDS.get(verdict, verdict))}{times}"


def _time_said(times: CallTimes | None) -> str:
    if times is None:
        return "time per call of the hot loop: cannot tell (its times missing or noisy)"
    (before, after), (mad_before, mad_after) = times.medians, times.mads
    return (f"time per call of the hot loop {before:.3g} → {after:.3g} ms (medians of "
            f"{times.source}, MAD {mad_before:.2g} and {mad_after:.2g} ms)")  # fmt: skip


RANDOM_DRAWN = (
    "; its graphs draw random numbers ({line}): compiled code draws them with Inductor's "
    "generator, not eager's,{more} so other numbers are expected; to compare the results, "
    "re-run both with torch._inductor.config.fallback_random = True"
)
RANDOM_CODE = re.compile(
    r"\btorch\.(?:rand|randn|randint|randperm|rand_like|randn_like|randint_like|bernoulli|"
    r"normal|multinomial|poisson)\(|\.(?:bernoulli_|uniform_|normal_|random_|exponential_)\("
)
"""A line that draws random numbers whatever mode its module is in (a dropout module draws
none in eval: its kernels say whether it did, _RANDOM_KERNEL)."""
_RANDOM_KERNEL = re.compile(r"(?:^|_)(?:rand|randn|bernoulli|native_dropout)(?:_|$)")


def random_line(run: Run) -> str | None:
    """Where a run's compiled graphs draw random numbers: the first user line whose code calls
    a random function (``train.py:22: `keep = (torch.rand(...``), or the first generated
    kernel with a random op in its name; None when none does."""
    kernel = None
    for record in run.compiles:
        built = record.built
        if built is None:
            continue
        for line in built.graph.lines if built.graph is not None else []:
            if RANDOM_CODE.search(line.code):
                code = line.code.split("  #", 1)[0].strip()
                return f"{line.file.rsplit('/', 1)[-1]}:{line.line}: `{code}`"
        for graph in built.inductor_graphs:
            launches = graph.code.launches if graph.code is not None else []
            kernel = kernel or next(
                (k.name for k in launches if _RANDOM_KERNEL.search(k.name)), None
            )
    return f"kernel {kernel}" if kernel else None


def costed_break(target: Target, findings: list[Finding]) -> bool:
    """Whether a fix is for a graph break whose cost the profile measured
    (``graph_break_cost`` at the same line): its try is then profiled too."""
    code, subject, _ = target
    return code == "graph_break" and any(
        f.code == "graph_break_cost" and (f.subject.file, f.subject.line)
        == (subject.get("file"), subject.get("line")) for f in findings
    )  # fmt: skip


def measured_break_costs(findings: list[Finding], tries: list[Try], main: Run | None) -> None:
    """A ``graph_break_cost`` whose break a try removed (its ``graph_break`` finding's fix
    helped, the results the same): what removing the break saves, measured, replaces the
    profile's estimate. The estimate counts the break's own eager code and the resumed frame's
    guards; removing it can save far more (a break inside a loop makes Dynamo run the loop's
    whole frame eagerly, each layer a compiled region of its own: 0.020 ms estimated, 0.078 ms
    measured on tests/programs/time/activation_monitor.py). The measure is the one compiled
    callable's calls timed without the profiler in both runs (:func:`call_times`)."""
    if main is None:
        return
    by_key = {trial_key(found.trial): found for found in tries}
    for cost in findings:
        if cost.code != "graph_break_cost":
            continue
        site = (cost.subject.file, cost.subject.line)
        rows = [row for f in findings if f.code == "graph_break" and f.tries
                and (f.subject.file, f.subject.line) == site
                for row in f.tries if row["verdict"] == "helped"]  # fmt: skip
        found = next((by_key.get(trial_key(row["trial"])) for row in rows), None)
        if found is None:
            continue
        label = found.trial.get("label")
        times = call_times(main, found.run)
        moved = moved_by(times, incomparable(main, found.run))
        if times is None or moved is None:
            cost.evidence.append(f"tried {label} (re-run {found.n}): it removed the break, and "
                                 "its times cannot tell what that saves (the estimate stands); "
                                 f"{_time_said(times)}")  # fmt: skip
            continue
        saved = times.medians[0] - times.medians[1]
        estimate = cost.saves_ms
        if moved == "faster":
            from pt2doctor.analysis.time.profile import MIN_SHARE

            cost.saves_ms, cost.saves_unmeasured = round(saved, 6), None
            cost.title += f"; removing it saved {saved:.3g} ms a call (measured, re-run {found.n})"
            if saved >= MIN_SHARE * times.medians[0]:  # of the step, as the estimate's share
                cost.severity = "warning"
        else:
            what = ("removing the break saved nothing beyond the noise" if moved == "same"
                    else "the loop got slower without the break")  # fmt: skip
            cost.saves_ms, cost.saves_unmeasured = None, f"tried {label}: {what}"
        said = "" if estimate is None else f" (estimated {estimate:.3g} ms from the profile)"
        cost.evidence.append(f"measured: re-run {found.n} with {label} removed the break: "
                             f"{_time_said(times)}{said}")  # fmt: skip


def attach_tries(
    findings: list[Finding],
    tries: list[Try],
    before: Outcome,
    main: Run | None = None,
    findings_of: Callable[[Try], list[Finding]] | None = None,
) -> None:
    """Give each finding whose fixes were tried its measured ``tries`` (``before``: the main
    run's outcome; ``findings_of``: a re-run's findings, to tell whether the finding is gone),
    and rewrite its advice: a tried fix that helped is said first with its numbers; one that
    did not is replaced by "tried X: no effect (…)" and the next candidate."""
    control = control_of(tries)
    tries = [found for found in tries if found is not control]
    by_key = {trial_key(found.trial): found for found in tries}
    for finding in findings:
        rows: list[tuple[int, dict[str, Any]]] = []
        for index, fix in enumerate(finding.fixes):
            trial = None if fix.application is None else fix.application.as_json()
            found = None if trial is None else by_key.get(trial_key(trial))
            if trial is not None and found is not None:
                kept = None if spec(finding.code).step == "correctness" else main
                judged = findings_of is not None and not trial.get("timed")
                after = findings_of(found) if judged and findings_of is not None else []
                remains = target_remains(target_of(finding), after) if judged else None
                moved_to = (target_moved(target_of(finding), after, findings)
                            if judged and not remains else None)  # fmt: skip
                row = tried_row(trial, before, found, kept, remains,
                                None if control is None else control.run, moved_to)  # fmt: skip
                rows.append((index, row))
                moved = row.get("time_per_call_ms")
                if row["verdict"] == "helped" and moved and finding.saves_ms is None:
                    finding.saves_ms = round(moved["before"] - moved["after"], 6)
                    finding.saves_unmeasured = None
                elif trial.get("timed") and finding.saves_ms is None:
                    finding.saves_unmeasured = _timed_unmeasured(row)
        if tries:
            finding.not_tried = _not_tried(finding, rows, len(tries))
        if not rows:
            if tries and any(fix.application is not None for fix in finding.fixes):
                finding.evidence.append(
                    f"not tried: the --try-fixes budget ({counted(len(tries), 're-run')}) went to the "
                    "findings before it; a larger budget tries it"
                )
            continue
        finding.tries = [row for _, row in rows]
        finding.advice = tried_advice(finding, rows)
        if any(item["why"] == CODE_CHANGE for item in finding.not_tried):
            finding.advice += " " + CODE_FIXES_UNTRIED
    measured_break_costs(findings, tries, main)


CODE_CHANGE = (
    "a change to the program's code: --try-fixes applies only settings, input marks and "
    "torch.compile arguments; make the change and run again to compare"
)
CODE_FIXES_UNTRIED = (
    "(The fixes that change the code were not tried: --try-fixes applies only settings, "
    "input marks and torch.compile arguments.)"
)


def _fix_name(fix: Fix) -> str:
    """A fix as the user knows it: its label where pt2doctor can apply it, else its text's
    first sentence (cut at 160 characters)."""
    if fix.application is not None:
        return fix.application.label
    first = fix.text.split(". ")[0].strip()
    return first if len(first) <= 160 else first[:159].rstrip() + "…"


def _not_tried(
    finding: Finding, rows: list[tuple[int, dict[str, Any]]], runs: int
) -> list[dict[str, str]]:
    """Each fix of ``finding`` that ``run --try-fixes`` did not re-run, and why: a change to
    the code (never applied by pt2doctor), an earlier fix of the finding that helped, or the
    budget of re-runs spent first."""
    tried = {index for index, _ in rows}
    helped = any(row["verdict"] == "helped" for _, row in rows)
    found = []
    for index, fix in enumerate(finding.fixes):
        if index in tried:
            continue
        if fix.application is None:
            why = CODE_CHANGE
        elif helped:
            why = "an earlier fix of this finding helped"
        else:
            why = (f"the --try-fixes budget ({counted(runs, 're-run')}) was spent first; a "
                   "larger budget tries it")  # fmt: skip
        found.append({"fix": _fix_name(fix), "why": why})
    if finding.code in SETTINGS_IN_ADVICE and all(f.application for f in finding.fixes):
        # Its advice names the settings among changes to the code, which are not fixes of
        # their own here: said once.
        found.append({"fix": "the changes to the code its advice names", "why": CODE_CHANGE})
    return found


def tried_advice(finding: Finding, rows: list[tuple[int, dict[str, Any]]]) -> str:
    """The advice once fixes were tried: the try that helped, then what the others did, then
    the fixes not ruled out (a fix that did not help is dropped; "Next:" leads to the
    candidate after it)."""
    helped = [row for _, row in rows if row["verdict"] == "helped"]
    said = [f"Tried {row['fix']}: {VERDICT_WORDS['helped']} ({row['summary']})." for row in helped]
    if finding.code in SETTINGS_IN_ADVICE:  # the fixes tried are settings the advice names
        said += [f"Tried {row['fix']}: {VERDICT_WORDS[row['verdict']]} ({row['summary']})."
                 + (MOVED if row.get("moved_to") else "")
                 for _, row in rows if row["verdict"] != "helped"]  # fmt: skip
        tried = [str(name).rsplit(".", 1)[-1] for _, row in rows if row["verdict"] != "helped"
                 for name in dict(row["trial"].get("config") or {})]  # fmt: skip
        return " ".join([*said, _without_hints_of(finding.advice, tried)])
    # What helped is the news: the tries that did not come after it, in the order run.
    said += [
        f"Tried {row['fix']}{' before it' if helped else ''}: {VERDICT_WORDS[row['verdict']]} "
        f"({row['summary']})."
        for _, row in rows
        if row["verdict"] != "helped"
    ]
    failed = {index for index, row in rows if row["verdict"] != "helped"}
    # A setting a failed try applied, said again by another fix (Dynamo's hint repeats it):
    # not a next step.
    settings = {f"{str(name).rsplit('.', 1)[-1]} = {value}"
                for _, row in rows if row["verdict"] != "helped"
                for name, value in dict(row["trial"].get("config") or {}).items()}  # fmt: skip
    rest = [(i, fix.text) for i, fix in enumerate(finding.fixes)
            if i not in failed and not any(setting in fix.text for setting in settings)]  # fmt: skip
    if not any(row["verdict"] == "helped" for _, row in rows):
        after = [i for i, _ in rest if i > max(failed)]  # the candidate after the last tried
        if after:
            rest = [(i, f"Next: {text}" if i == after[0] else text) for i, text in rest]
        else:
            bounded = finding.severity == "info" and finding.code == "recompiles"
            rest.append((len(finding.fixes), BOUNDED_LEFT if bounded else NOTHING_LEFT))
    return " ".join(said + [text for _, text in rest])


MOVED = (
    " The value is now read where the code uses it, and the break is there: the setting alone "
    "does not remove it; the rewrite below does."
)


def _without_hints_of(advice: str, settings: list[str]) -> str:
    """``advice`` without torch's relayed hints (``torch (gb0124): Set
    `...capture_scalar_outputs = True` ...``) that name a setting a try showed does not help:
    repeating it after the try would contradict it."""
    for setting in settings:
        advice = re.sub(rf"torch \(gb\d+\): (?:(?!\. ).)*\b{re.escape(setting)}\b(?:(?!\. ).)*\.\s*",
                        "", advice)  # fmt: skip
    return advice


SETTINGS_IN_ADVICE = frozenset(
    {
        "graph_break",
        "hook_changed_after_compile",
        "library_bound",
        "eager_outside_compiled",
        "autograd_in_inference",
        "data_loading",
    }
)
"""Findings whose tried fixes are ones their advice names among other fixes (settings, a
function to compile): a try's result is said before the advice, which stays whole."""
BOUNDED_LEFT = (
    "Nothing else needs fixing: the variants are bounded; call the compiled code once in each "
    "before timing or serving."
)
NOTHING_LEFT = (
    "No other fix here is one pt2doctor can apply: the evidence says what differs between the "
    "variants."
)


def next_trial(
    candidates: list[list[dict[str, Any]]], verdicts: dict[str, str]
) -> dict[str, Any] | None:
    """The next fix to try: ``candidates`` are each finding's ``tryable`` trials, findings in
    the report's order; ``verdicts`` what each trial tried so far gave (by :func:`trial_key`).
    Each finding in order until one of its fixes helped; its candidates in order, each trial
    tried once."""
    for trials in candidates:
        if any(verdicts.get(trial_key(trial)) == "helped" for trial in trials):
            continue
        for trial in trials:
            if trial_key(trial) not in verdicts:
                return dict(trial)
    return None

"""The parent side of ``pt2doctor ablate CASES.py --cell ID``: the backend ladder (each rung in a
fresh worker process, with a timeout; a signal or a hang is that rung's crash), the
``dynamic=False`` and no-CUDA-graph toggles, the module bisection with the repro, Inductor's
compiler_bisector, and a check that the written repro reproduces in plain python."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pt2doctor import torchcompat
from pt2doctor.ablate.classify import LADDER, eager_failure, first_failure, layer_of
from pt2doctor.ablate.hook_verdict import NUMERICS_SKIPPED, hooks_proven
from pt2doctor.ablate.hook_verdict import TOGGLE as HOOK_GUARDS
from pt2doctor.ablate.signature import failure_signature, repro_signature
from pt2doctor.ablate.types import LADDER_STOPS
from pt2doctor.analysis.userside.causes import custom_op_verdict
from pt2doctor.cases.case import Cell
from pt2doctor.trace.messages import error_line
from pt2doctor.workers import EventName, Launcher, kill_group, last_event
from pt2doctor.workers import launch as launch_worker

Progress = Callable[[str], None]
T = TypeVar("T")
WORKER = "pt2doctor.ablate.trial"
# What a rung's outcome keeps (tracebacks stay in the worker's events.jsonl).
OUTCOME_KEYS = (
    "status",
    "error",
    "error_types",
    "root_type",
    "worst",
    "tolerance",
    "failed_tensors",
    "user_frames",
    "hooks",
    "user_backend",
    "random_ops",
    "hook_changes",
)
LOW_PRECISION = ("bfloat16", "float16")


@dataclass(slots=True)
class AblateOptions:
    case_file: Path
    cell: Cell
    out: Path
    backend: str = "inductor"
    dynamic: bool | None = None
    mode: str | None = None
    fullgraph: bool = False
    modules: bool = True
    bisect: bool | None = None  # None: when the failure first appears in Inductor
    repro: bool = True
    verify_repro: bool = True
    timeout: float = 600.0
    bisect_timeout: float = 600.0


def ladder(backend: str) -> list[str]:
    """eager -> aot_eager -> aot_eager_decomp_partition -> ``backend`` (cut at ``backend`` when
    it is one of the lower rungs)."""
    if backend in LADDER:
        return list(LADDER[: LADDER.index(backend) + 1])
    return [*LADDER, backend]


def launch(spec: dict[str, Any], out: Path, timeout: float, launcher: Launcher) -> dict[str, Any]:
    """Run one worker; its events, and how it ended (``ok``, ``crash``, ``timeout``, ``fatal``).
    A worker stopped at the timeout keeps no events: the stage it was in did not finish."""
    ending = launcher(WORKER, spec, out, total_timeout=timeout)
    events = [] if ending.status == "timeout" else ending.events
    return {"ending": ending.status, "detail": ending.detail, "events": events}


def _event(result: dict[str, Any], name: EventName) -> dict[str, Any] | None:
    return last_event(result["events"], name)


def _outcome(result: dict[str, Any], name: EventName = "trial") -> dict[str, Any]:
    """A trial's outcome; a worker that died or hung is a crash of that trial."""
    event = _event(result, name)
    if event is not None:
        return {key: event[key] for key in OUTCOME_KEYS if key in event}
    fatal = _event(result, "fatal")
    if fatal is not None:
        return {"status": "error", "error": f"ablation worker failed: {fatal['error']}"}
    kind = "hang" if result["ending"] == "timeout" else "process_crash"
    return {"status": "crash", "error": result["detail"], "root_type": kind, "error_types": [kind]}


class Ablation:
    """One ablation of one cell; ``run()`` returns the pieces the report is built from."""

    def __init__(
        self,
        options: AblateOptions,
        progress: Progress | None = None,
        launcher: Launcher = launch_worker,
    ) -> None:
        self.options, self.launcher = options, launcher
        self.progress = progress or (lambda message: None)
        self.base = {
            "case_file": str(options.case_file.resolve()),
            "case": options.cell.case,
            "cell": options.cell.id,
        }

    def trial(self, name: str, backend: str, **settings: Any) -> dict[str, Any]:
        self.progress(f"{name}: backend {backend}")
        started = time.monotonic()
        spec = {**self.base, "kind": "trial", "backend": backend, **settings}
        out = self.options.out / "trials" / name
        result = launch(spec, out, self.options.timeout, self.launcher)
        return {**_outcome(result), "seconds": round(time.monotonic() - started, 2)}

    def rungs(self) -> list[dict[str, Any]]:
        """The ladder, stopped at the first rung that fails (later rungs: ``not run``)."""
        found: list[dict[str, Any]] = []
        names = ladder(self.options.backend)
        for backend in names:
            if any(r["status"] in LADDER_STOPS for r in found):
                outcome: dict[str, Any] = {"status": "not run"}
            else:
                outcome = self.trial(backend, backend, **self._settings(backend))
            layer = layer_of(backend, self.options.backend)
            found.append({"backend": backend, "layer": layer, **outcome})
        return found

    def _settings(self, backend: str) -> dict[str, Any]:
        mode = self.options.mode if backend == "inductor" else None
        return {"dynamic": self.options.dynamic, "mode": mode, "fullgraph": self.options.fullgraph}

    def toggles(self, failing: dict[str, Any]) -> list[dict[str, Any]]:
        """The failing rung again without ``dynamic=True``, without ``fullgraph=True`` (after
        a crash: Dynamo's incompleteness then becomes a graph break), and without CUDA graphs,
        where they were in use."""
        found = []
        backend = failing["backend"]
        fullgraph = self.options.fullgraph
        if self.options.dynamic:
            outcome = self.trial(
                "dynamic-false", backend, dynamic=False, mode=self._mode(backend),
                fullgraph=fullgraph,
            )  # fmt: skip
            found.append({"name": "dynamic=False", "backend": backend, **outcome})
        if fullgraph and failing.get("status") == "crash":
            outcome = self.trial(
                "fullgraph-false", backend, dynamic=self.options.dynamic,
                mode=self._mode(backend), fullgraph=False,
            )  # fmt: skip
            found.append({"name": "fullgraph=False", "backend": backend, **outcome})
        found += self.user_side_toggles(failing)
        options = (torchcompat.compile_modes() or {}).get(self.options.mode or "default", {})
        if backend == "inductor" and torchcompat.uses_cuda_graphs(options):
            if not self.options.cell.device.startswith("cuda"):
                reason = "not applicable: CUDA graphs need a CUDA device"
                found.append({"name": "no_cudagraphs", "status": "not applicable", "error": reason})
            else:
                mode = (
                    "max-autotune-no-cudagraphs" if "autotune" in str(self.options.mode) else None
                )
                outcome = self.trial(
                    "no-cudagraphs", backend, dynamic=self.options.dynamic, mode=mode
                )
                found.append({"name": "no_cudagraphs", "backend": backend, **outcome})
        return found

    def user_side_toggles(self, failing: dict[str, Any]) -> list[dict[str, Any]]:
        """The failing rung again without the program's compiler hooks (when it set any); with
        Dynamo guarding on module hooks (when the user's code changed one after a compile);
        for a wrong result, with eager's RNG (when eager drew random numbers) and with
        Inductor rounding like eager (low-precision cells): a pass proves the user's side."""
        backend, cell = failing["backend"], self.options.cell
        wanted = []
        if failing.get("hooks"):
            wanted.append(("without user hooks", "no-user-hooks", "no_user_hooks"))
        if failing.get("hook_changes"):
            wanted.append((HOOK_GUARDS, "hook-guards", "hook_guards"))
        if failing["status"] == "diverged" and failing.get("random_ops"):
            wanted.append(("fallback_random=True", "fallback-random", "fallback_random"))
        low = cell.dtype in LOW_PRECISION or cell.autocast in LOW_PRECISION
        if failing["status"] == "diverged" and low and backend == "inductor":
            wanted.append(
                ("emulate_precision_casts=True", "emulate-precision", "emulate_precision_casts")
            )
        found = []
        for name, folder, toggle in wanted:
            outcome = self.trial(folder, backend, **self._settings(backend), toggle=toggle)
            found.append({"name": name, "backend": backend, **outcome})
        return found

    def accepted_gap_toggles(self, rungs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Where every rung passed but Inductor's passed by the RMSE rule alone (an elementwise
        gap over tolerance) in a low-precision cell: that rung again with Inductor rounding
        like eager (``emulate_precision_casts``), which says whether the gap is the rounding,
        as script mode's toggle says for the same failure. [] otherwise."""
        cell = self.options.cell
        low = cell.dtype in LOW_PRECISION or cell.autocast in LOW_PRECISION
        gaps = [rung for rung in rungs if rung.get("backend") == "inductor"
                and rung.get("status") == "ok" and (rung.get("worst") or {}).get("rule") == "rmse"]  # fmt: skip
        if not (low and gaps):
            return []
        outcome = self.trial("emulate-precision", "inductor", **self._settings("inductor"),
                             toggle="emulate_precision_casts")  # fmt: skip
        return [{"name": "emulate_precision_casts=True", "backend": "inductor", **outcome}]

    def custom_ops(self, failing: dict[str, Any]) -> list[dict[str, Any]]:
        """opcheck and eager-vs-compiled of every custom op the cell calls, on the inputs
        it received in the eager run (one worker)."""
        self.progress("custom ops: opcheck")
        spec = {**self.base, "kind": "custom_ops", "backend": failing["backend"]}
        result = launch(spec, self.options.out / "custom_ops", self.options.timeout, self.launcher)
        checked = [
            {k: v for k, v in e.items() if k not in ("event", "t")}
            for e in result["events"]
            if e["event"] == "custom_op"
        ]
        if _event(result, "custom_ops_done") is None:  # the worker died: say so, not "none"
            why = result["detail"] or "the worker stopped before it finished"
            checked.append({"op": "?", "checks": [], "passed": None,
                            "error": f"the opcheck stage did not finish: {why}"})  # fmt: skip
        return checked

    def _mode(self, backend: str) -> str | None:
        return self.options.mode if backend == "inductor" else None

    def modules(self, failing: dict[str, Any], sentence: str) -> dict[str, Any]:
        """Module bisection and the repro, in one worker (a reset between trials)."""
        self.progress("module bisection")
        spec = {
            **self.base,
            "kind": "modules",
            "backend": failing["backend"],
            "dynamic": self.options.dynamic,
            "fullgraph": self.options.fullgraph,
            "mode": self._mode(failing["backend"]),
            "failure": failing,
            "sentence": sentence,
            "bisect_modules": self.options.modules,
            "repro_dir": str((self.options.out / "repro").resolve())
            if self.options.repro
            else None,
        }
        result = launch(spec, self.options.out / "modules", self.options.timeout, self.launcher)
        trials = [
            {"module": e["target"], "reproduced": e["reproduced"], "status": e["status"],
             "error": e.get("error")}
            for e in result["events"]
            if e["event"] == "module_trial"
        ]  # fmt: skip
        done = _event(result, "modules_done")
        repro = _event(result, "repro")
        if repro is None and spec["repro_dir"]:  # the worker died before it could say
            why = result["detail"] or "the worker stopped before writing it"
            repro = {"written": False, "reason": f"the repro stage did not finish: {why}"}
        return {
            "completed": done is not None,
            "detail": None if done else result["detail"] or "the worker stopped early",
            "module": done["module"] if done else None,
            "trials": trials,
            "repro": {k: v for k, v in repro.items() if k not in ("event", "t")} if repro else None,
        }

    def numerics(self, failing: dict[str, Any]) -> dict[str, Any]:
        """Where the numbers diverge, module by module (ablate/trial.py ``run_numerics``)."""
        self.progress("where the numbers diverge")
        spec = {
            **self.base,
            "kind": "numerics",
            "backend": failing["backend"],
            "dynamic": self.options.dynamic,
            "fullgraph": self.options.fullgraph,
            "mode": self._mode(failing["backend"]),
            "repro_dir": str((self.options.out / "numerics" / "repro").resolve()),
        }
        result = launch(spec, self.options.out / "numerics", self.options.timeout, self.launcher)
        event = _event(result, "numerics")
        if event is None:
            return {"completed": False, "detail": result["detail"] or "the worker stopped early"}
        return {"completed": True, **{k: v for k, v in event.items() if k not in ("event", "t")}}

    def bisect(self, failing: dict[str, Any], module: str | None) -> dict[str, Any]:
        self.progress("compiler_bisector")
        spec = {
            **self.base,
            "kind": "bisect",
            "backend": "inductor",
            "dynamic": self.options.dynamic,
            "fullgraph": self.options.fullgraph,
            "mode": self.options.mode,
            "failure": failing,
            "target": module or "",
        }
        started = time.monotonic()
        out = self.options.out / "bisect"
        result = launch(spec, out, self.options.bisect_timeout, self.launcher)
        event = _event(result, "bisect")
        seconds = round(time.monotonic() - started, 2)
        if event is None:
            return {"available": None, "detail": result["detail"], "seconds": seconds}
        found = {k: v for k, v in event.items() if k not in ("event", "t")}
        return {**found, "seconds": seconds}


def guarded(stage: str, run: Callable[[], T], failed: Callable[[str], T]) -> T:
    """``run()``; when it raises, what ``failed`` makes of the one-line cause: a stage's
    failure is a line in the report (every format says it), never a traceback that loses what
    the ladder measured."""
    try:
        return run()
    except Exception as error:
        return failed(f"the {stage} stage failed: {error_line(type(error).__name__, str(error))}")


def verify_repro(
    path: Path, timeout: float, failure: dict[str, Any], python: str = sys.executable
) -> dict[str, Any]:
    """Run the written repro with plain ``python`` in a fresh process, in its own folder: does
    it fail (exit 1) the way ``failure`` (the rung it reproduces) failed? ``signature`` and
    ``expected`` are the two failure signatures (ablate/signature.py), side by side. Script
    mode passes the program's own interpreter: the repro needs the program's environment."""
    path = path.resolve()  # it runs in its folder: a relative --out would be joined twice
    expected = failure_signature(failure)
    unchecked = {"expected": expected.text(), "signature": None, "same_failure": False}
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    # Its own process group: at the timeout, what the repro started goes with it.
    process = subprocess.Popen([python, str(path)], cwd=path.parent, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)  # fmt: skip
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(process)
        process.communicate()
        output = f"timed out after {timeout:g} s"
        return {"reproduces": False, "exit_code": None, "output": output, **unchecked}
    done = subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
    line = _verdict_line(done.stdout, done.stderr)
    got = repro_signature(line) if done.returncode == 1 else None
    same = got is not None and got == expected
    return {
        "reproduces": same,
        "exit_code": done.returncode,
        "output": line[:500],
        "signature": None if got is None else got.text(),
        "expected": expected.text(),
        "same_failure": same,
    }


def _verdict_line(stdout: str, stderr: str) -> str:
    """What the repro said: its REPRODUCED / not reproduced line, else the last line of its
    stderr (where a traceback ends with the error), else of its stdout (not a progress bar
    that happened to come last)."""
    said = [line for line in stdout.splitlines() if line.startswith(VERDICTS)]
    if said:
        return said[-1]
    for stream in (stderr, stdout):
        lines = stream.strip().splitlines()
        if lines:
            return lines[-1]
    return ""


VERDICTS = ("REPRODUCED", "not reproduced")


def run_ablation(options: AblateOptions, progress: Progress | None = None) -> dict[str, Any]:
    """Every stage that applies; the raw pieces (``rungs``, ``toggles``, ``modules``,
    ``bisect``, ``repro``) for :func:`pt2doctor.ablate.report.build_ablate_report`."""
    from pt2doctor.ablate.classify import conclusion

    ablation = Ablation(options, progress)
    rungs = ablation.rungs()
    failing = first_failure(rungs)
    pieces: dict[str, Any] = {"rungs": rungs, "toggles": [], "modules": None, "bisect": None}
    eager = eager_failure(rungs)
    if eager is not None:  # a custom op can make the model fail without compiling too
        pieces["custom_ops"] = ablation.custom_ops(eager)
        pieces["repro"] = {"written": False, "reason": "the model fails without compiling: "
                           "the case is its own repro, and nothing compiled is to blame"}  # fmt: skip
    if failing is None:
        pieces["toggles"] = ablation.accepted_gap_toggles(rungs)
        return pieces
    pieces["hooks"] = failing.get("hooks") or []
    pieces["hook_changes"] = failing.get("hook_changes") or []
    pieces["user_backend"] = failing.get("user_backend")
    pieces["custom_ops"] = ablation.custom_ops(failing)
    pieces["toggles"] = ablation.toggles(failing)
    if options.modules or options.repro:
        pieces["modules"] = ablation.modules(failing, conclusion(rungs, None, None)["sentence"])
    if failing["status"] == "diverged" and options.modules and hooks_proven(pieces["toggles"]):
        pieces["numerics"] = {"skipped": NUMERICS_SKIPPED}
    elif failing["status"] == "diverged" and options.modules:
        pieces["numerics"] = guarded(
            "numerics", lambda: ablation.numerics(failing),
            lambda why: {"completed": False, "detail": why},
        )  # fmt: skip
    module = (pieces["modules"] or {}).get("module")
    # A custom op that fails opcheck is the diagnosis: the bisector (minutes) adds nothing.
    proven = custom_op_verdict(pieces["custom_ops"]) is not None
    wanted = (
        options.bisect
        if options.bisect is not None
        else failing["layer"] == "inductor" and not proven
    )
    if wanted and failing["layer"] == "inductor":
        pieces["bisect"] = ablation.bisect(failing, module)
    repro = (pieces["modules"] or {}).get("repro")
    if repro and repro.get("written") and options.verify_repro:
        progress and progress("running the repro")
        repro["verified"] = guarded(
            "repro check",
            lambda: verify_repro(Path(repro["path"]), options.timeout, failing),
            lambda why: {"reproduces": False, "exit_code": None, "output": why},
        )
    return pieces

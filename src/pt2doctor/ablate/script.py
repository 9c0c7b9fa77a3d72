"""``pt2doctor ablate -- python script.py``: the backend ladder on a whole program. Each rung
runs the command in a fresh process under ``pt2doctor run``'s bootstrap with every
``torch.compile`` forced to the rung's backend; the failure is the program's exit status, or
the exit status of ``--accuracy-check CMD`` run after it (non-zero: the outputs are wrong).
There is no module bisection; after a crash, the repro is torch's runnable graph of the
failing compile (:mod:`pt2doctor.ablate.script_repro`), run once to confirm it fails."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pt2doctor.ablate.classify import LADDER, conclusion, eager_failure, first_failure, layer_of
from pt2doctor.ablate.driver import guarded, ladder, verify_repro
from pt2doctor.ablate.hook_changes import late_hook_changes
from pt2doctor.ablate.hook_verdict import CONFIG as HOOK_GUARDS_CONFIG
from pt2doctor.ablate.hook_verdict import NUMERICS_SKIPPED, hooks_proven
from pt2doctor.ablate.hook_verdict import TOGGLE as HOOK_GUARDS
from pt2doctor.ablate.minifier import minify, repro_after
from pt2doctor.ablate.program_repro import write_program_repro
from pt2doctor.ablate.script_numerics import (
    NUMERICS_BACKEND_ENV,
    NUMERICS_REPRO_ENV,
    numerics_result,
)
from pt2doctor.ablate.script_numerics import PLUGIN as NUMERICS_PLUGIN
from pt2doctor.ablate.script_opcheck import (
    OPCHECK_BACKEND_ENV,
    OPCHECK_EAGER_ENV,
    PLUGIN,
    custom_op_runs,
)
from pt2doctor.ablate.script_repro import header, program_of, repro_imports, write_script_repro
from pt2doctor.ablate.script_toggles import PLUGIN as NO_HOOKS_PLUGIN
from pt2doctor.ablate.signature import failure_signature
from pt2doctor.ablate.types import COMPILED_FAILURES
from pt2doctor.analysis.recompiles.fix_model import FixApplication
from pt2doctor.analysis.userside.causes import custom_ops_named
from pt2doctor.capture.child import PLUGIN_ENV, TRY_FIX_ENV
from pt2doctor.capture.options import RunOptions
from pt2doctor.capture.runner import child_env
from pt2doctor.errors import UsageError
from pt2doctor.rundir.read import load_probes
from pt2doctor.trace.messages import error_line, stopped_at
from pt2doctor.trace.patterns import lazy_compile
from pt2doctor.trace.types import ProbeData
from pt2doctor.workers import Deadlines, supervise

BACKEND_VAR = "PT2DOCTOR_ABLATE_BACKEND"  # tells the accuracy check which rung it judges
MESSAGE_CHARS = 4000
"""How much of the program's raw error message a rung keeps (its one-line ``error`` drops
Dynamo's debug context, where a known library site's details are)."""
AS_WRITTEN = "program"
"""The top rung's folder when no --backend is given: the program runs as written, with its own
backend and settings, and the rung is named by the backend its torch.compile calls asked for."""


def rung_dir(out: Path, rung: dict[str, Any]) -> Path:
    """Where a rung ran (``out/rungs/BACKEND``; the as-written top rung in ``out/rungs/program``)."""
    return out / "rungs" / str(rung.get("dir") or rung["backend"])


def program_backend(probes: ProbeData) -> str:
    """The backend the program's torch.compile calls asked for ('inductor' when they name none;
    several, joined by '+')."""
    names: list[str] = []
    for call in probes.compile_calls:
        name = str((call.get("settings") or {}).get("backend") or "inductor")
        if name not in names:
            names.append(name)
    return "+".join(names) or "inductor"


def _probes(run_dir: Path) -> ProbeData:
    """What the rung's probes recorded (empty when the rung never ran or wrote none)."""
    return load_probes(run_dir) or ProbeData()


def _environment(rungs_dir: Path, rungs: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The program's own environment (its python, torch, config changes, hooks), as the
    highest rung that got as far as importing torch recorded it at exit; None when none did."""
    for rung in reversed(rungs):
        if rung["status"] == "not run":
            continue
        environment = _probes(rung_dir(rungs_dir.parent, rung)).environment
        if environment:
            return dict(environment)
    return None


def _run(argv: list[str], env: dict[str, str], run_dir: Path, timeout: float, name: str) -> Any:
    """The command's exit code, or None when it outlasted ``timeout``: then its whole process
    group is stopped (compile workers, ranks, anything it started), not only the command."""
    with (
        (run_dir / f"{name}.stdout.log").open("wb") as out,
        (run_dir / f"{name}.stderr.log").open("wb") as err,
    ):
        try:
            process = subprocess.Popen(
                argv, env=env, stdout=out, stderr=err, start_new_session=True
            )
        except OSError as error:
            raise UsageError(f"cannot run {argv[0]}: {error.strerror}") from error
    if supervise(process, Deadlines(None, timeout, time.monotonic)) == "timeout":
        return None
    return process.wait()


def script_rung(
    command: list[str],
    backend: str,
    run_dir: Path,
    timeout: float,
    check: str | None,
    extra_env: dict[str, str] | None = None,
    forced: bool = True,
) -> dict[str, Any]:
    """Run ``command`` with ``backend`` forced: ok, crash (non-zero exit) or diverged.
    ``extra_env``: variables for the program; a child plugin among them forces its own
    backend (then ``backend`` is only what the accuracy check is told). ``forced=False``: the program runs as written, and the
    outcome's ``backend`` is the one its torch.compile calls asked for."""
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "trace").mkdir(exist_ok=True)
    plugin = PLUGIN_ENV in (extra_env or {})
    override = None if plugin or not forced else backend
    env = {**child_env(RunOptions(command, run_dir, backend=override)), BACKEND_VAR: backend,
           **(extra_env or {})}  # fmt: skip
    code = _run(command, env, run_dir, timeout, "program")
    if not forced:
        backend = program_backend(_probes(run_dir))
        return {"backend": backend, **_judged(command, backend, code, env, run_dir, timeout, check)}
    return _judged(command, backend, code, env, run_dir, timeout, check)


def _stopped_at(message: str) -> dict[str, Any] | None:
    """Where Dynamo stopped in the user's code (its ``from user code:`` traceback), or None."""
    frame = stopped_at(message)
    return None if frame is None else frame.as_dict()


def _judged(
    command: list[str],
    backend: str,
    code: int | None,
    env: dict[str, str],
    run_dir: Path,
    timeout: float,
    check: str | None,
) -> dict[str, Any]:
    """A rung's outcome from the program's exit code, and the accuracy check after it."""
    if code != 0:
        probes = _probes(run_dir)
        errors = probes.exceptions
        if code is not None and code > 0 and not errors and probes.environment:
            # sys.exit(N) with no exception: the program's own check of its results failed
            # (a crash raises; a signal exits below 0). Read as wrong numbers, as
            # --accuracy-check would say them.
            return {"status": "diverged", "exit_code": code,
                    "error": f"the program exited {code} on its own (sys.exit, no exception): "
                             "its own check of the results",
                    "own_exit": True,
                    "hooks": list(probes.environment.get("compiler_hooks") or [])}  # fmt: skip
        last = errors[-1] if errors else {}
        what = "timed out" if code is None else f"exit {code}"
        message = error_line(last["type"], str(last.get("message", ""))) if last else what
        return {
            "status": "crash",
            "exit_code": code,
            "error": message,
            "message": str(last.get("message", ""))[:MESSAGE_CHARS],
            "stopped_at": _stopped_at(str(last.get("message", ""))),
            "root_type": last.get("type", what),
            "error_types": [last["type"]] if last else [],
            "user_frames": last.get("frames") or [],
            # The compiler hooks the program had set when it exited (its environment probe).
            "hooks": list(probes.environment.get("compiler_hooks") or []),
        }
    if check:
        plain = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        verdict = _run(
            shlex.split(check), {**plain, BACKEND_VAR: backend}, run_dir, timeout, "check"
        )
        if verdict != 0:
            hooks = list(_probes(run_dir).environment.get("compiler_hooks") or [])
            return {"status": "diverged", "exit_code": 0, "error": f"accuracy check exit {verdict}",
                    "hooks": hooks}  # fmt: skip
    return {"status": "ok", "exit_code": 0}


def ablate_script(
    command: list[str],
    backend: str | None,
    out: Path,
    timeout: float,
    check: str | None,
    progress: Callable[[str], None] | None = None,
    *,
    repro: bool = True,
    verify: bool = True,
) -> dict[str, Any]:
    """The ladder on a program, stopped at the first rung that fails; after a crash, the repro
    (unless ``repro`` is off), run once to confirm it fails (unless ``verify`` is off). The
    environment is the program's, as a rung recorded it (its interpreter may not be ours).
    ``backend`` None: the top rung is the program as written (its own backend and settings),
    not a backend forced on it."""
    rungs: list[dict[str, Any]] = []
    names = ladder(backend) if backend else [*LADDER, AS_WRITTEN]
    for name in names:
        outcome: dict[str, Any] = {"status": "not run"}
        as_written = name == AS_WRITTEN
        if not any(r["status"] in ("crash", "diverged") for r in rungs):
            if progress:
                shown = "your program as written" if as_written else name
                progress(f"{shown}: {' '.join(command)}")
            started = time.monotonic()
            outcome = script_rung(command, "inductor" if as_written else name,
                                  out / "rungs" / name, timeout, check,
                                  forced=not as_written)  # fmt: skip
            outcome["seconds"] = round(time.monotonic() - started, 2)
        rung = {"backend": name, **outcome}
        if as_written:
            rung["backend"] = outcome.get("backend") or "as written"
            rung["dir"] = AS_WRITTEN
        # The as-written rung's backend is known only once it ran: not run, no layer either.
        unknown = as_written and outcome["status"] == "not run"
        rung["layer"] = None if unknown else layer_of(rung["backend"], backend or rung["backend"])
        rungs.append(rung)
    pieces: dict[str, Any] = {"rungs": rungs, "toggles": [], "modules": None, "bisect": None}
    # The backend the program compiles with: unknown when the as-written rung did not run.
    top = rungs[-1]
    pieces["backend"] = None if top["status"] == "not run" and top.get("dir") else top["backend"]
    if rungs[-1].get("dir") == AS_WRITTEN:  # a backend the program wrote itself, if any
        calls = _probes(out / "rungs" / AS_WRITTEN).compile_calls
        pieces["user_backend"] = next((c["user_backend"] for c in calls if c.get("user_backend")),
                                      None)  # fmt: skip

    pieces["environment"] = _environment(out / "rungs", rungs)
    # What the program's own torch.compile calls asked for, as any rung that ran recorded
    # them (a backend forced on a rung leaves the other settings as written).
    ran = [rung for rung in rungs if rung["status"] != "not run"]
    calls = [c for rung in ran[:1] for c in _probes(rung_dir(out, rung)).compile_calls]
    pieces["program_fullgraph"] = any(
        (c.get("settings") or {}).get("fullgraph") is True for c in calls
    )
    without = guarded(
        "without torch.compile",
        lambda: _without_compile(command, rungs[0], out, timeout, check, progress),
        lambda why: {"name": "without torch.compile", "backend": None, "status": "error",
                     "error": why},
    )  # fmt: skip
    pieces["toggles"] = [without] if without else []
    failing = first_failure(rungs) or eager_failure(rungs)
    if failing is None:
        return pieces
    pieces["custom_ops"] = guarded(
        "opcheck",
        lambda: _custom_ops(command, failing, out, timeout, progress),
        lambda why: [{"op": "?", "checks": [], "passed": None, "error": why}],
    )
    if pieces.get("program_fullgraph") and failing["status"] == "crash":
        pieces["toggles"] += guarded(
            "fullgraph=False",
            lambda: _without_fullgraph(command, failing, out, timeout, check, progress),
            lambda why: [{"name": "fullgraph=False", "backend": failing["backend"],
                          "status": "error", "error": why}],
        )  # fmt: skip
    pieces["toggles"] += guarded(
        "without user hooks",
        lambda: _without_hooks(command, failing, out, timeout, check, progress),
        lambda why: [{"name": "without user hooks", "backend": "inductor", "status": "error",
                      "error": why}],
    )  # fmt: skip
    pieces["toggles"] += guarded(
        "numerics toggles",
        lambda: _numerics_toggles(command, failing, out, timeout, check, progress),
        lambda why: [{"name": "numerics toggles", "backend": "inductor", "status": "error",
                      "error": why}],
    )  # fmt: skip
    pieces["hook_changes"] = late_hook_changes(_probes(rung_dir(out, failing)))
    pieces["toggles"] += guarded(
        HOOK_GUARDS,
        lambda: _hook_guards(command, failing, pieces["hook_changes"], out, timeout, check,
                             progress),
        lambda why: [{"name": HOOK_GUARDS, "backend": failing["backend"], "status": "error",
                      "error": why}],
    )  # fmt: skip
    pieces["hooks"] = failing.get("hooks") or []
    if failing["status"] == "diverged" and hooks_proven(pieces["toggles"]):
        pieces["numerics"] = {"skipped": NUMERICS_SKIPPED}
    elif failing["status"] == "diverged":
        pieces["numerics"] = guarded(
            "numerics",
            lambda: _numerics(command, failing, out, timeout, progress),
            lambda why: {"completed": False, "detail": why},
        )
    if repro:
        pieces["repro"] = guarded(
            "repro",
            lambda: _script_repro(
                command,
                failing,
                out,
                timeout,
                verify,
                progress,
                own_backend=pieces.get("user_backend") is not None,
            ),
            lambda why: {"written": False, "reason": why},
        )
    return pieces


def _without_compile(
    command: list[str],
    first: dict[str, Any],
    out: Path,
    timeout: float,
    check: str | None,
    progress: Callable[[str], None] | None,
) -> dict[str, Any] | None:
    """When the first rung (Dynamo with the eager backend) fails: the program once more with
    torch.compile off (``TORCHDYNAMO_DISABLE=1``). Failing the same way, the program fails
    without compiling: the rung becomes ``eager_error`` (nothing compiled is to blame)."""
    if first["status"] not in ("crash", "diverged"):
        return None
    if progress:
        progress("your program without torch.compile")
    run_dir = out / "toggles" / "no-compile"
    outcome = script_rung(command, "eager", run_dir, timeout, check,
                          extra_env={"TORCHDYNAMO_DISABLE": "1"}, forced=False)  # fmt: skip
    outcome.pop("backend", None)
    same = outcome["status"] == first["status"] and (
        failure_signature(outcome) == failure_signature(first)
    )
    if same:
        first["status"] = "eager_error"
    return {"name": "without torch.compile", "backend": None, **outcome}


def _custom_ops(
    command: list[str],
    failing: dict[str, Any],
    out: Path,
    timeout: float,
    progress: Callable[[str], None] | None,
) -> list[dict[str, Any]]:
    """opcheck of the custom ops the failing rung's graphs call, on the inputs they got in
    one more eager run of the program (ablate/script_opcheck.py); [] when the graphs call
    none. A crash in Dynamo itself can come before any graph names an op (a register_fake
    of the wrong shape fails Dynamo's fake-tensor call): then the program runs with
    torch.compile off and every custom op it calls is checked. A run that checked nothing to
    the end says why, as an op entry without checks."""
    names = _custom_ops_in_trace(rung_dir(out, failing) / "trace")
    in_dynamo = not names and failing["status"] == "crash" and failing.get("layer") == "dynamo"
    if not names and not in_dynamo:
        return []
    if progress:
        progress(f"custom ops: opcheck {', '.join(names) or 'every one the program calls'}")
    run_dir = out / "custom_ops"
    plugin = {PLUGIN_ENV: PLUGIN, OPCHECK_BACKEND_ENV: failing["backend"]}
    if in_dynamo:
        plugin |= {OPCHECK_EAGER_ENV: "1", "TORCHDYNAMO_DISABLE": "1"}
    outcome = script_rung(command, "eager", run_dir, timeout, None, extra_env=plugin)
    found = custom_op_runs(run_dir)
    if found is None:
        code = outcome["exit_code"]
        why = "timed out" if code is None else f"exit {code}"
        return [{"op": n, "checks": [], "passed": None, "error": f"the opcheck run ended "
                 f"before checking it ({why})"} for n in names or ["?"]]  # fmt: skip
    return found


def _numerics(
    command: list[str],
    failing: dict[str, Any],
    out: Path,
    timeout: float,
    progress: Callable[[str], None] | None,
) -> dict[str, Any]:
    """Where the numbers diverge: one more run of the program, whose compiled units' first
    calls are searched at exit with the failing rung's backend (ablate/script_numerics.py)."""
    if progress:
        progress("where the numbers diverge: the program's compiled units")
    run_dir = out / "numerics"
    plugin = {PLUGIN_ENV: NUMERICS_PLUGIN, NUMERICS_BACKEND_ENV: failing["backend"],
              NUMERICS_REPRO_ENV: str((run_dir / "repro").resolve())}  # fmt: skip
    outcome = script_rung(command, failing["backend"], run_dir, timeout, None, extra_env=plugin)
    found = numerics_result(run_dir)
    if found is None:
        code = outcome["exit_code"]
        why = "timed out" if code is None else f"exit {code}"
        return {"completed": False, "detail": f"the numerics run ended before its search ({why})"}
    return found


def _without_hooks(
    command: list[str],
    failing: dict[str, Any],
    out: Path,
    timeout: float,
    check: str | None,
    progress: Callable[[str], None] | None,
) -> list[dict[str, Any]]:
    """The failing Inductor rung once more with the program's pass hooks off (the toggle
    case mode runs): [] when the program set none, or the rung is not Inductor's."""
    if not failing.get("hooks") or failing["backend"] != "inductor":
        return []
    if progress:
        progress("inductor without your compiler hooks")
    run_dir = out / "toggles" / "no-user-hooks"
    outcome = script_rung(command, "inductor", run_dir, timeout, check,
                          extra_env={PLUGIN_ENV: NO_HOOKS_PLUGIN})  # fmt: skip
    return [{"name": "without user hooks", "backend": "inductor", **outcome}]


_LOW_PRECISION = lazy_compile(r"\b(?:bf16|f16)\[|torch\.(?:bfloat16|float16)\b")
_RANDOM_OPS = lazy_compile(
    r"\b(?:native_dropout|bernoulli_?|inductor_random|inductor_seeds|rand_like|randn_like|"
    r"rand|randn|randint|multinomial)\b"
)
NUMERICS_TOGGLES = (
    ("emulate_precision_casts=True", "emulate-precision",
     "torch._inductor.config.emulate_precision_casts", _LOW_PRECISION),
    ("fallback_random=True", "fallback-random", "torch._inductor.config.fallback_random",
     _RANDOM_OPS),
)  # fmt: skip
"""Case mode's RNG and precision toggles for a program: (name, folder, config, what in the
failing rung's graphs makes the toggle worth a run)."""


def _numerics_toggles(
    command: list[str],
    failing: dict[str, Any],
    out: Path,
    timeout: float,
    check: str | None,
    progress: Callable[[str], None] | None,
) -> list[dict[str, Any]]:
    """For wrong numbers at the Inductor rung, the toggles case mode tries: the rung once more
    with ``emulate_precision_casts=True`` when its graphs compute in bfloat16 or float16, and
    with ``fallback_random=True`` when they draw random numbers (the graphs as torch logged
    them in the rung's TORCH_TRACE). A toggle under which the accuracy check passes makes the
    divergence by design (analysis/userside toggle_verdict), as in case mode."""
    if failing["status"] != "diverged" or failing["backend"] != "inductor":
        return []
    text = _trace_text(rung_dir(out, failing) / "trace")
    found = []
    for name, folder, key, wanted in NUMERICS_TOGGLES:
        if not wanted.search(text):
            continue
        if progress:
            progress(f"inductor with {name}")
        fix = FixApplication(name, config=((key, True),)).as_json()
        outcome = script_rung(command, "inductor", out / "toggles" / folder, timeout, check,
                              extra_env={TRY_FIX_ENV: json.dumps(fix)},
                              forced=failing.get("dir") != AS_WRITTEN)  # fmt: skip
        outcome.pop("backend", None)
        found.append({"name": name, "backend": "inductor", **outcome})
    return found


def _hook_guards(
    command: list[str],
    failing: dict[str, Any],
    changes: list[dict[str, Any]],
    out: Path,
    timeout: float,
    check: str | None,
    progress: Callable[[str], None] | None,
) -> list[dict[str, Any]]:
    """When the failing rung's program changed a module hook after its first compile
    (``changes``, from its probes): the rung once more with Dynamo guarding on module hooks
    (``skip_nnmodule_hook_guards=False``, set in the child as ``--try-fixes`` sets a config).
    Passing, the hooks changed after compile are the cause (ablate/hook_verdict.py)."""
    if not changes or failing["status"] not in COMPILED_FAILURES:
        return []
    if progress:
        progress(f"{failing['backend']} with {HOOK_GUARDS}")
    fix = FixApplication(HOOK_GUARDS, config=((HOOK_GUARDS_CONFIG, False),)).as_json()
    outcome = script_rung(command, str(failing["backend"]), out / "toggles" / "hook-guards",
                          timeout, check, extra_env={TRY_FIX_ENV: json.dumps(fix)},
                          forced=failing.get("dir") != AS_WRITTEN)  # fmt: skip
    outcome.pop("backend", None)
    return [{"name": HOOK_GUARDS, "backend": failing["backend"], **outcome}]


def _without_fullgraph(
    command: list[str],
    failing: dict[str, Any],
    out: Path,
    timeout: float,
    check: str | None,
    progress: Callable[[str], None] | None,
) -> list[dict[str, Any]]:
    """The failing rung once more with every torch.compile call given fullgraph=False (the
    program asked for fullgraph=True: the setting case mode's ``--fullgraph`` toggles), the
    setting replaced in the child as ``--try-fixes`` replaces one (torchcompat/apply.py)."""
    if progress:
        progress(f"{failing['backend']} with fullgraph=False")
    fix = FixApplication("fullgraph=False", compile=(("fullgraph", False),)).as_json()
    outcome = script_rung(command, str(failing["backend"]), out / "toggles" / "fullgraph-false",
                          timeout, check, extra_env={TRY_FIX_ENV: json.dumps(fix)})  # fmt: skip
    return [{"name": "fullgraph=False", "backend": failing["backend"], **outcome}]


def _trace_text(trace: Path) -> str:
    return "".join(
        log.read_text(encoding="utf-8", errors="replace") for log in sorted(trace.glob("*.log"))
    )


def _custom_ops_in_trace(trace: Path) -> list[str]:
    """The custom ops (``ns.op``, torch's namespaces left out) the rung's graphs name."""
    text = _trace_text(trace)
    return [name.removeprefix("torch.ops.") for name in custom_ops_named(text)]


def _script_repro(
    command: list[str],
    failing: dict[str, Any],
    out: Path,
    timeout: float,
    verify: bool,
    progress: Callable[[str], None] | None,
    own_backend: bool = False,
) -> dict[str, Any]:
    """The smallest repro there is for the failing rung, run once to confirm it fails the same
    way: at the dynamo layer the program itself (no graph holds the failure); else torch's
    runnable graph of the failing compile (Inductor), or the graph torch's minifier dumps
    (other backends). When that repro cannot stand alone or does not reproduce, torch's
    minifier is the last rung (``repro.minifier``). ``own_backend``: the failing backend is
    one the program wrote, which only the program defines: the program is the repro."""
    sentence = conclusion([failing], None, None)["sentence"]
    hooks = failing.get("hooks") or []
    program = program_of(command)
    forced = None if failing.get("dir") == AS_WRITTEN else str(failing["backend"])
    # The program's interpreter checks the repro (``python3.11 train.py``: its torch, not ours).
    python = command[0] if Path(command[0]).name.startswith("python") else sys.executable

    def check(repro: dict[str, Any]) -> dict[str, Any]:
        if repro.get("written") and verify:
            if progress:
                progress(f"running the repro ({repro.get('source')})")
            repro["verified"] = verify_repro(Path(repro["path"]), timeout, failing, python)
        return repro

    def minified(folder: Path) -> dict[str, Any]:
        if progress:
            progress(f"torch's minifier (TORCHDYNAMO_REPRO_AFTER={repro_after(failing['layer'])})")
        return check(minify(
            folder, failing,
            lambda env: script_rung(command, str(failing["backend"]), folder / "run", timeout,
                                    None, extra_env=env, forced=forced is not None),
            lambda graph, where: repro_imports(graph, hooks, program[0], where) if program
            else ([], []),
            lambda what, missing: header(sentence, what, missing),
            timeout,
        ))  # fmt: skip

    if failing["status"] == "eager_error":
        if failing.get("exit_code", 1) is None:
            return {"written": False, "reason": "the program hangs without torch.compile "
                    "too: nothing compiled is to blame, and the program is its own repro"}  # fmt: skip
        why = "the program fails without torch.compile"
        return check(write_program_repro(out / "repro", command, None, sentence, why))
    if failing.get("layer") == "dynamo":
        why = (
            "it fails at the dynamo layer: in Dynamo's tracing of the program's code or in "
            "the code run around its graphs"
        )
        return check(write_program_repro(out / "repro", command, forced, sentence, why))
    repro = write_script_repro(out / "repro", rung_dir(out, failing) / "trace", command, hooks,
                               sentence, accuracy=failing["status"] == "diverged")  # fmt: skip
    if not repro["written"] and own_backend:
        why = "the failing backend is one the program defines"
        return check(write_program_repro(out / "repro", command, forced, sentence, why))
    if not repro["written"]:  # no Inductor graph: the minifier's dump of Dynamo's graph
        dumped = minified(out / "repro")
        if dumped.get("written") and (dumped.get("verified") or {}).get("reproduces", True):
            return dumped
        # The minifier's graph names a backend only the program defines, or did not fail:
        # the program itself is the repro, the minifier's attempt reported beside it.
        why = "the graph torch's minifier dumped does not reproduce it alone"
        fallback = check(write_program_repro(out / "program", command, forced, sentence, why))
        return {**fallback, "minifier": dumped} if fallback.get("written") else dumped
    check(repro)
    reproduced = (repro.get("verified") or {}).get("reproduces", True)
    if not repro.get("standalone", True) or not reproduced:
        repro["minifier"] = minified(out / "minifier")
    return repro

"""Shared fixtures: real TORCH_TRACE logs from the programs in tests/programs, and the corpus.

``traced("item_break")`` runs ``tests/programs/item_break.py`` once per test session in a child
process with ``TORCH_TRACE`` set and returns the trace directory. Each program costs ~3-5 s (torch
import plus a ``backend="eager"`` compile), so runs are cached: per name within a process, and
across pytest-xdist workers through a file lock in the session's shared temporary root.
``doctor_run`` does the same for ``pt2doctor run`` on the programs in ``tests/programs/run``.

Tiers (markers, set here by directory and fixture, not by hand): ``unit`` (tests/unit),
``integration`` (tests/integration), and ``torch_run`` on every test that runs a torch program
in another process (a module's ``pytestmark``, or any test that uses one of the fixtures below
that start one). ``make test-fast`` deselects ``torch_run``.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from filelock import FileLock

REPO_ROOT = Path(__file__).resolve().parents[1]
PROGRAMS_DIR = REPO_ROOT / "tests" / "programs"
QUICK_EXIT = REPO_ROOT / "tests" / "quick_exit"  # its sitecustomize skips the teardown
# A program that does not finish in this time is hung (the slowest takes ~10 s on 2 CPU cores).
PROGRAM_TIMEOUT_S = 300
# Env vars that change what torch logs; the programs must trace the same way on every machine.
_TORCH_LOG_VARS = ("TORCH_LOGS", "TORCH_COMPILE_DEBUG", "TORCHDYNAMO_VERBOSE")

Traced = Callable[[str], Path]
TIERS = ("unit", "integration")
# Fixtures that start a torch program in a child process: their users are torch_run tests.
_TORCH_RUN_FIXTURES = frozenset({"traced", "doctor_run", "doctor_command", "run_env"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test with its tier (its directory), and torch_run where it runs a program."""
    for item in items:
        tier = item.path.parent.name
        if tier in TIERS:
            item.add_marker(tier)
        if _TORCH_RUN_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker("torch_run")


CORPUS_DIR = REPO_ROOT.parent / "shared" / "corpus"


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A ``corpus`` test skips cleanly on a checkout without ../shared beside it (CI has it)."""
    if item.get_closest_marker("corpus") is not None and not CORPUS_DIR.is_dir():
        pytest.skip(f"needs {CORPUS_DIR} (../shared/corpus beside the checkout)")


@pytest.fixture(scope="session")
def programs_dir() -> Path:
    """tests/programs: one small torch.compile program per planted scenario."""
    return PROGRAMS_DIR


def _shared_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory every xdist worker of this session sees (the session's own tmp otherwise)."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return base.parent
    return base


def _run_program(name: str, trace_dir: Path, cache_dir: Path) -> None:
    """Run the program with TORCH_TRACE=trace_dir; its stdout is kept beside, as <name>.stdout."""
    program = PROGRAMS_DIR / f"{name}.py"
    assert program.is_file(), f"no program {program}"
    env = {k: v for k, v in os.environ.items() if k not in _TORCH_LOG_VARS}
    env["TORCH_TRACE"] = str(trace_dir)
    env.setdefault("TORCHINDUCTOR_CACHE_DIR", str(cache_dir))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(QUICK_EXIT), env.get("PYTHONPATH"))))
    done = subprocess.run(
        [sys.executable, str(program)],
        cwd=trace_dir.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=PROGRAM_TIMEOUT_S,
        check=False,
    )
    (trace_dir.parent / f"{trace_dir.name}.stdout").write_text(done.stdout)
    assert done.returncode == 0, (
        f"{program.name} exited {done.returncode}\n--- stderr ---\n{done.stderr[-6000:]}"
    )
    assert any(trace_dir.iterdir()), f"{program.name} wrote no trace log into {trace_dir}"


@pytest.fixture(scope="session")
def traced(tmp_path_factory: pytest.TempPathFactory, vec_isa_trusted: None) -> Traced:
    """A function ``traced(name) -> trace dir`` that runs tests/programs/<name>.py under
    TORCH_TRACE (once per session, shared by xdist workers) and returns its trace directory."""
    root = _shared_root(tmp_path_factory) / "traced"
    root.mkdir(parents=True, exist_ok=True)
    cache_dir = root / "inductor-cache"
    results: dict[str, Path] = {}

    def run(name: str) -> Path:
        if name in results:
            return results[name]
        trace_dir = root / name  # a name may be a sub-folder's program: "recompiles/hf_generate"
        trace_dir.parent.mkdir(parents=True, exist_ok=True)
        done_marker = root / f"{name}.done"
        with FileLock(str(root / f"{name}.lock")):
            if not done_marker.exists():
                if trace_dir.exists():  # a run that failed half-way in another worker
                    for stale in trace_dir.iterdir():
                        stale.unlink()
                trace_dir.mkdir(exist_ok=True)
                _run_program(name, trace_dir, cache_dir)
                done_marker.touch()
        results[name] = trace_dir
        return trace_dir

    return run


# --- pt2doctor run ---------------------------------------------------------------------------

RUN_PROGRAMS_DIR = PROGRAMS_DIR / "run"


@dataclass(frozen=True)
class DoctorRun:
    """One finished ``pt2doctor run``: its exit code, what it printed, and its run directory."""

    run_dir: Path
    returncode: int
    stdout: str
    stderr: str

    @property
    def report(self) -> dict[str, Any]:
        """report.json as ``pt2doctor run`` wrote it into the run directory."""
        return json.loads((self.run_dir / "report.json").read_text())

    @property
    def counts(self) -> dict[str, Any]:
        """The program's own counters: its ``COUNTS {json}`` line."""
        return self.counts_of("")

    def counts_of(self, program: str) -> dict[str, Any]:
        """The counters of one of several programs run in one process: ``COUNTS[program] {json}``
        (``program`` empty: the one ``COUNTS {json}`` line)."""
        prefix = f"COUNTS[{program}] " if program else "COUNTS "
        (line,) = [x for x in self.stdout.splitlines() if x.startswith(prefix)]
        return dict(json.loads(line.removeprefix(prefix)))


# Inductor probes each CPU vector ISA in every process that compiles: it builds a test library
# (cached) and starts one `python -c` per ISA to load it, ~0.4 s of CPU per process. The suite
# starts dozens of such processes, so one probe per session decides whether the probe can be
# skipped: only when every ISA the CPU's flags name really builds and loads, the case in which
# skipping it changes nothing (TORCHINDUCTOR_VEC_ISA_OK=1 trusts the flags).
_VEC_ISA_PROBE = """
from torch._inductor import config, cpu_vec_isa
probed = [str(isa) for isa in cpu_vec_isa.valid_vec_isa_list()]
config.cpp.vec_isa_ok = True
cpu_vec_isa.valid_vec_isa_list.cache_clear()
print(int(bool(probed) and probed == [str(isa) for isa in cpu_vec_isa.valid_vec_isa_list()]))
"""
_VEC_ISA_VAR = "TORCHINDUCTOR_VEC_ISA_OK"


def _trust_vec_isa_flags(root: Path) -> None:
    """Set TORCHINDUCTOR_VEC_ISA_OK=1 in this process (its children inherit it) when the
    session's one real probe found what the CPU flags promise; otherwise leave the probe on."""
    if _VEC_ISA_VAR in os.environ:
        return
    verdict = root / "vec-isa-ok"
    with FileLock(str(root / "vec-isa-ok.lock")):
        if not verdict.exists():
            done = subprocess.run(
                [sys.executable, "-c", _VEC_ISA_PROBE],
                capture_output=True,
                text=True,
                timeout=PROGRAM_TIMEOUT_S,
                check=False,
            )
            verdict.write_text(done.stdout.strip() if done.returncode == 0 else "0")
    if verdict.read_text() == "1":
        os.environ[_VEC_ISA_VAR] = "1"


@pytest.fixture(scope="session")
def vec_isa_trusted(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Once per worker: see ``_trust_vec_isa_flags``. Fixtures that start torch programs ask
    for it; so does every torch_run test (``_vec_isa_before_torch_runs``)."""
    _trust_vec_isa_flags(_shared_root(tmp_path_factory))


@pytest.fixture(autouse=True)
def _vec_isa_before_torch_runs(request: pytest.FixtureRequest) -> None:
    if request.node.get_closest_marker("torch_run") is not None:
        request.getfixturevalue("vec_isa_trusted")


@pytest.fixture(scope="session")
def run_env(tmp_path_factory: pytest.TempPathFactory, vec_isa_trusted: None) -> dict[str, str]:
    """Environment for the programs under tests/programs/run (and for ``pt2doctor run``): torch
    logging variables removed, the session's Inductor cache (shared with ``traced``)."""
    env = {k: v for k, v in os.environ.items() if k not in _TORCH_LOG_VARS}
    cache_dir = _shared_root(tmp_path_factory) / "traced" / "inductor-cache"
    env.setdefault("TORCHINDUCTOR_CACHE_DIR", str(cache_dir))
    return env


def _doctor_command(run_dir: Path, flags: Sequence[str], program: str, *args: str) -> list[str]:
    """``pt2doctor run --out RUN_DIR FLAGS -- python tests/programs/run/PROGRAM.py ARGS``."""
    script = (RUN_PROGRAMS_DIR / f"{program}.py").resolve()  # ../real/x: a clean path
    assert script.is_file(), f"no program {script}"
    return [
        sys.executable,
        *("-m", "pt2doctor", "run", "--out", str(run_dir), *flags, "--"),
        *(sys.executable, str(script), *args),
    ]


@pytest.fixture(scope="session")
def doctor_command() -> Callable[..., list[str]]:
    """``doctor_command(run_dir, flags, program, *args)``: the argv of ``pt2doctor run`` on
    tests/programs/run/<program>.py, for tests that start it themselves (Ctrl-C)."""
    return _doctor_command


@pytest.fixture(scope="session")
def doctor_run(
    tmp_path_factory: pytest.TempPathFactory, run_env: dict[str, str]
) -> Callable[..., DoctorRun]:
    """``doctor_run(key, flags, program, *args, env=None) -> DoctorRun``: runs ``pt2doctor run``
    in a real subprocess once per session and key (``env`` added to the run's) (shared by xdist workers, like ``traced``). Each run
    costs ~4 s (torch import plus a ``--backend eager`` compile); Inductor ones ~15 s cold."""
    root = _shared_root(tmp_path_factory) / "doctor-runs"
    root.mkdir(parents=True, exist_ok=True)

    def run(
        key: str, flags: Sequence[str], program: str, *args: str, env: dict[str, str] | None = None
    ) -> DoctorRun:
        run_dir, result_file = root / key, root / f"{key}.result.json"
        with FileLock(str(root / f"{key}.lock")):
            if not result_file.exists():
                shutil.rmtree(run_dir, ignore_errors=True)  # a run that died half-way
                done = subprocess.run(
                    _doctor_command(run_dir, flags, program, *args),
                    cwd=root,
                    env={**run_env, **(env or {})},
                    capture_output=True,
                    text=True,
                    timeout=PROGRAM_TIMEOUT_S,
                    check=False,
                )
                result = {"returncode": done.returncode, "stdout": done.stdout}
                result_file.write_text(json.dumps({**result, "stderr": done.stderr}))
        result = json.loads(result_file.read_text())
        return DoctorRun(run_dir, result["returncode"], result["stdout"], result["stderr"])

    return run


# --- CPU time per test (PT2DOCTOR_TEST_CPU=FILE) ---------------------------------------------


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """With ``PT2DOCTOR_TEST_CPU=FILE``, append each test's CPU seconds (this process and every
    child it waited for: the CLI runs, their workers, the programs) to FILE as JSON lines: the
    suite's cost measured without the noise a busy machine adds to wall times."""
    path = os.environ.get("PT2DOCTOR_TEST_CPU")
    if not path:
        yield
        return
    before = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    started, t0 = time.monotonic(), time.time()
    yield
    after = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    cpu = sum(
        a.ru_utime + a.ru_stime - b.ru_utime - b.ru_stime
        for a, b in zip(after, before, strict=True)
    )
    line = {
        "test": item.nodeid,
        "cpu_s": round(cpu, 3),
        "wall_s": round(time.monotonic() - started, 3),
        "t0": round(t0, 3),
        "worker": os.environ.get("PYTEST_XDIST_WORKER", ""),
    }
    with open(path, "a") as stream:
        stream.write(json.dumps(line) + "\n")

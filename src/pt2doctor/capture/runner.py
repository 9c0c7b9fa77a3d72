"""Run the user's program unchanged in a child process and capture it into a run directory.

The child gets TORCH_TRACE (torch's own structured trace, written as it happens) and our
sitecustomize bootstrap (probes). Its stdout/stderr stream live to the terminal and into
``stdout.log``/``stderr.log``. The manifest is written before the program starts and completed
when it ends, however it ends: exit, exception, signal, ``--timeout`` kill or Ctrl-C.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import pt2doctor
from pt2doctor.capture.child import BACKEND_ENV, DIGEST_ENV, RUN_DIR_ENV, TRY_FIX_ENV
from pt2doctor.capture.fusion import FUSION_ENV
from pt2doctor.capture.launch import Launch, check_program, launch_argv
from pt2doctor.capture.options import RunOptions, manifest_settings
from pt2doctor.capture.profile import (
    DEFAULT_SECONDS,
    DEFAULT_WARMUP,
    PROFILE_ENV,
    STACK_SAMPLES_ENV,
)
from pt2doctor.capture.sampler import INTERVAL_S
from pt2doctor.capture.screen import Screen
from pt2doctor.errors import Pt2DoctorError, UsageError
from pt2doctor.rundir import STDOUT_LOG
from pt2doctor.rundir.read import load_probes
from pt2doctor.rundir.write import require_fresh_dir, write_manifest
from pt2doctor.trace.types import Manifest
from pt2doctor.workers import Deadlines, Stopping, signal_name, supervise

TIMEOUT_EXIT = 124
# After a --timeout, the program gets this long to exit on SIGTERM before SIGKILL.
KILL_GRACE_SECONDS = 5.0


# torch._inductor.config.trace.provenance_tracking_level reads it (torch >= 2.8): the trace
# then carries inductor_provenance_tracking_{node_mappings,kernel_stack_traces}.
PROVENANCE_ENV = "INDUCTOR_PROVENANCE"
FX_GRAPH_CACHE_ENV = "TORCHINDUCTOR_FX_GRAPH_CACHE"
# torch._inductor.config.cpp.enable_kernel_profile: each C++ kernel records a profiler event.
KERNEL_PROFILE_ENV = "TORCHINDUCTOR_CPP_ENABLE_KERNEL_PROFILE"
AUTOGRAD_CACHE_ENV = "TORCHINDUCTOR_AUTOGRAD_CACHE"


def child_env(options: RunOptions) -> dict[str, str]:
    env = dict(os.environ)
    bootstrap = Path(__file__).resolve().parent / "bootstrap"
    package_root = Path(pt2doctor.__file__).resolve().parents[1]
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(bootstrap), env.get("PYTHONPATH", "")) if p)
    env["PT2DOCTOR_PACKAGE_ROOT"] = str(package_root)
    env[RUN_DIR_ENV] = str(options.out.resolve())
    env["TORCH_TRACE"] = str((options.out / "trace").resolve())
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONFAULTHANDLER"] = "1"
    if options.profile_calls is not None:
        warmup = options.warmup_calls or DEFAULT_WARMUP
        seconds = options.profile_seconds or DEFAULT_SECONDS
        env[PROFILE_ENV] = f"{options.profile_calls},{warmup},{seconds}"
        if options.profile_stacks:
            env[STACK_SAMPLES_ENV] = f"{INTERVAL_S * 1e3:g}"
        env[KERNEL_PROFILE_ENV] = "1"
    if options.kernels:
        env[FUSION_ENV] = "1"
    if options.kernels or options.profile_calls is not None:
        env[PROVENANCE_ENV] = "1"
    if options.kernels:
        # Each graph compiled afresh: an FX graph (or AOTAutograd) cache hit replays the
        # provenance of the compile that filled the cache, with that day's line numbers (an
        # edit above a line leaves the graph, and so the key, unchanged), and the scheduler,
        # whose fusion log this run keeps, does not run. Kernel builds stay cached. --profile
        # keeps the caches: its kernel names come from the trace of the window, and a hit's
        # kernel map says its lines are the filling compile's (kernel_map.cached_lines).
        env[FX_GRAPH_CACHE_ENV] = "0"
        env[AUTOGRAD_CACHE_ENV] = "0"
    if options.backend:
        env[BACKEND_ENV] = options.backend
    else:
        env.pop(BACKEND_ENV, None)
    if options.try_fix is not None:
        env[TRY_FIX_ENV] = json.dumps(options.try_fix)
    else:
        env.pop(TRY_FIX_ENV, None)
    if options.digest_outputs:
        env[DIGEST_ENV] = "1"
    else:
        env.pop(DIGEST_ENV, None)
    return env


def _tee(
    source: IO[bytes], sink: IO[bytes] | None, log: Path, screen: Screen | None = None
) -> threading.Thread:
    def pump() -> None:
        with log.open("wb") as kept:
            for chunk in iter(lambda: source.read1(65536), b""):  # type: ignore[attr-defined]
                kept.write(chunk)
                kept.flush()
                if sink is None:
                    continue
                if screen is not None:
                    screen.write(sink, chunk)
                    continue
                try:
                    sink.write(chunk)
                    sink.flush()
                except (BrokenPipeError, ValueError):
                    pass

    thread = threading.Thread(target=pump, daemon=True)
    thread.start()
    return thread


# ``run`` asks the program to stop (SIGTERM at --timeout, SIGINT at Ctrl-C) before SIGKILL.
_STOPPING = Stopping(
    on_timeout=signal.SIGTERM,
    on_interrupt=signal.SIGINT,
    grace=KILL_GRACE_SECONDS,
    reraise_interrupt=False,
)


def _wait(process: subprocess.Popen[bytes], timeout: float | None) -> str | None:
    """Wait for the program; returns 'timeout' or 'interrupted' when pt2doctor stopped it."""
    return supervise(process, Deadlines(None, timeout, time.monotonic), stopping=_STOPPING)


def exit_code(returncode: int, stopped_by: str | None) -> int:
    """The exit code ``run`` returns: the program's, 124 on timeout, 128+N for signal N."""
    if stopped_by == "timeout":
        return TIMEOUT_EXIT
    if stopped_by == "interrupted":
        return 130
    return 128 - returncode if returncode < 0 else returncode


def _launcher(argv: list[str], launch: Launch | None) -> dict[str, Any] | None:
    """What started the ranks (None: the command ran as given, one process)."""
    if launch is None:
        return None
    return {
        "name": "torchrun",
        "nproc_per_node": launch.nproc,
        "options": launch.torchrun_options,
        "argv": argv,
    }


def remove_empty_fault_logs(out: Path) -> None:
    """faulthandler needs its file open before anything can crash, so every process of the
    program (Inductor's compile workers too) creates one; once all have ended, the empty ones
    (no fatal signal) say nothing. Processes that exit normally remove their own already."""
    for log in out.glob("faulthandler.*.log"):
        with contextlib.suppress(OSError):
            if log.stat().st_size == 0:
                log.unlink()


def _live_on(options: RunOptions) -> bool:
    if options.quiet:
        return False
    return options.live if options.live is not None else sys.stderr.isatty()


class _Live:
    """The run's own TORCH_TRACE followed while the program runs (report/live.py
    ``LiveFollower`` on a trace/tail.py thread): with ``--live``, each notable event explained
    on stderr as it happens, between the program's own lines; with ``--metrics-port`` /
    ``--metrics-textfile``, the events as metrics. Made before the program starts, so a busy
    port is the run's one-line error. At a terminal, a status line stays at its bottom
    (capture/screen.py), the program's output and the events scrolling above it."""

    def __init__(self, options: RunOptions) -> None:
        from pt2doctor.analysis.live import LiveState
        from pt2doctor.report.live import LiveFollower

        self.state = LiveState(slow_s=options.slow_compile, skew_s=options.skew_warn)
        if options.steady_after is not None:
            self.state.warmup_s = options.steady_after
        live = _live_on(options)
        self.screen = Screen(sys.stderr.buffer) if live and sys.stderr.isatty() else None
        self.follower = LiveFollower(self.state, self._show if live else None, (),
                                     options.metrics_port, options.metrics_textfile)  # fmt: skip
        self.trace_dir = options.out / "trace"
        self.thread: Any = None

    def _show(self, event: Any) -> None:
        if event.kind == "compile":
            return
        line = f"pt2doctor: {event.line().strip()}"
        if self.screen is not None:
            self.screen.line(line, self._status())
            return
        sys.stderr.write(line + "\n")
        sys.stderr.flush()

    def _status(self) -> str:
        now = self.state.now_s()
        return f"pt2doctor {now:.0f} s: {self.state.status(now)}"

    def _handle(self, records: list[Any], final: bool) -> None:
        self.follower.handle(records, final)
        if self.screen is not None and not final:
            self.screen.show(self._status())

    @staticmethod
    def wanted(options: RunOptions) -> bool:
        return not options.quiet and (
            _live_on(options)
            or options.metrics_port is not None
            or options.metrics_textfile is not None
        )

    def start(self) -> None:
        from pt2doctor.trace.tail import TailThread

        self.state.start_clock()  # event times and the status line count from the start
        self.thread = TailThread(self.trace_dir, self._handle, name="pt2doctor-live")

    def stop(self) -> None:
        if self.thread is not None:
            self.thread.stop()
        self.follower.close()
        if self.screen is not None:
            self.screen.close()


def run_program(options: RunOptions, clock: Callable[[], float] = time.time) -> Manifest:
    """Run ``options.command``; return the completed manifest (also written to the run dir)."""
    if not options.command:
        raise UsageError("no command to run: use `pt2doctor run -- python script.py ARGS`")
    check_program(options.command)
    argv = launch_argv(options.command, options.launch)
    require_fresh_dir(options.out)
    try:
        (options.out / "trace").mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UsageError(f"cannot create run directory {options.out}: {error.strerror}") from error
    manifest: Manifest = {
        "command": options.command,
        "cwd": os.getcwd(),
        "start_time": clock(),
        "end_time": None,
        "exit_code": None,
        "signal": None,
        "stopped_by": None,
        **manifest_settings(options),
        "launcher": _launcher(argv, options.launch),
        "host": {"python": platform.python_version(), "platform": platform.platform()},
        "pt2doctor_version": pt2doctor.__version__,
    }
    if options.try_fix is not None:
        manifest["try_fix"] = options.try_fix
    write_manifest(options.out, manifest)
    try:
        live = _Live(options) if _Live.wanted(options) else None
    except Pt2DoctorError:
        shutil.rmtree(options.out, ignore_errors=True)  # nothing ran, nothing to keep
        raise
    try:
        process = subprocess.Popen(
            argv,
            env=child_env(options),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as error:
        if live is not None:
            live.stop()
        shutil.rmtree(options.out, ignore_errors=True)  # nothing ran, nothing to keep
        raise UsageError(f"cannot run {argv[0]}: {error.strerror}") from error
    assert process.stdout is not None and process.stderr is not None
    sinks = (None, None) if options.quiet else (sys.stdout.buffer, sys.stderr.buffer)
    screen = live.screen if live is not None else None
    pumps = [
        _tee(process.stdout, sinks[0], options.out / STDOUT_LOG, screen),
        _tee(process.stderr, sinks[1], options.out / "stderr.log", screen),
    ]
    if live is not None:
        live.start()
    stopped_by = _wait(process, options.timeout)
    for pump in pumps:
        pump.join(timeout=5)
    if live is not None:
        live.stop()
    returncode = process.returncode
    manifest["end_time"] = clock()
    manifest["exit_code"] = returncode if returncode >= 0 else None
    manifest["signal"] = signal_name(-returncode) if returncode < 0 else None
    manifest["stopped_by"] = stopped_by
    manifest["returned"] = exit_code(returncode, stopped_by)
    remove_empty_fault_logs(options.out)
    probes = load_probes(options.out)  # the child fingerprinted torch, CUDA, Triton, config
    manifest["environment"] = {} if probes is None else probes.environment
    write_manifest(options.out, manifest)
    return manifest

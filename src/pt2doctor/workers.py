"""One launcher for the processes pt2doctor supervises, and the body those workers share.

``check`` and ``ablate`` run each group of cells or each trial in a fresh worker process
(``python -m MODULE SPEC.json``), so a segfault, an OOM kill or a hang costs only that worker:
:func:`launch` writes the spec, starts the worker in its own process group, follows the
``events.jsonl`` it appends to, stops the group at a timeout, and says how it ended
(:class:`Outcome`). ``run`` starts the user's unchanged command instead of a worker, and shares
the lower layer: :func:`supervise` (the wait with its timeouts and Ctrl-C) and :func:`kill_group`.

The worker side is :func:`serve` with an :data:`Emit` callback. Every event name a worker writes
is one of :data:`EventName`, so mypy checks each ``emit("...")`` and each lookup by name.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal, Protocol

import orjson

EVENTS = "events.jsonl"
SPEC = "spec.json"
POLL_SECONDS = 0.2

EventName = Literal[
    # every worker
    "environment",
    "fatal",
    # check workers (pt2doctor.check.worker)
    "cell_start",
    "alignment",
    "warmup",
    "warmup_done",
    "model",
    "steady_done",
    "cold",
    "done",
    "custom_ops",  # the custom ops a group's models call, each with its opcheck
    "profile",  # check --profile: a group's eager and compiled Chrome traces
    # ablate workers (pt2doctor.ablate.trial)
    "trial_start",
    "trial",
    "module_trial",
    "modules_done",
    "repro",
    "bisect",
    "custom_op",  # one custom op the cell called, with its opcheck and alignment alone
    "custom_ops_done",
    "numerics",  # where the numbers diverge: compare_modules' result (or why it was skipped)
]
# A unit of work (a cell's phase, a trial) begins with a start event and ends with a result:
# a worker that dies or hangs in between loses that unit, which is "in flight".
UNIT_STARTS: frozenset[EventName] = frozenset({"cell_start", "trial_start"})
UNIT_RESULTS: frozenset[EventName] = frozenset(
    {
        "alignment",
        "warmup",
        "steady_done",
        "cold",
        "trial",
        "module_trial",
        "repro",
        "bisect",
        "numerics",
    }
)

Event = dict[str, Any]
Spec = dict[str, Any]
OnEvent = Callable[[Event], None]
Ending = Literal["ok", "crash", "timeout", "fatal"]
Stopped = Literal["timeout", "interrupted"]


class Emit(Protocol):
    """A worker's way to append one event to its events.jsonl."""

    def __call__(self, event: EventName, /, **fields: Any) -> None: ...


@dataclass(slots=True)
class Outcome:
    """How a worker ended (``ok``, ``crash``, ``timeout``, ``fatal``), and the events it wrote.
    ``in_flight`` is the start event of the unit of work it did not finish."""

    events: list[Event]
    status: Ending
    detail: str = ""
    in_flight: Event | None = None


class Process(Protocol):
    """What a supervisor needs of a worker process: ``subprocess.Popen``, or a worker forked
    by the fork server (pt2doctor.forkserver.ForkedProcess)."""

    pid: int
    returncode: int | None

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...


class Launcher(Protocol):
    """:func:`launch`'s signature: supervisors take one, so tests can replay scripted events."""

    def __call__(
        self,
        module: str,
        spec: Spec,
        out: Path,
        *,
        idle_timeout: float | None = None,
        total_timeout: float | None = None,
        on_event: OnEvent | None = None,
        env: Mapping[str, str] | None = None,
    ) -> Outcome: ...


# ---- the parent side ---------------------------------------------------------------------


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:  # real-time signals have no name
        return f"signal {number}"


def kill_group(process: Process, sig: int = signal.SIGKILL, grace: float = 0) -> None:
    """Send ``sig`` to the process's group (the worker and whatever it started: compile
    workers, torchrun ranks), SIGKILL the group if it is still there after ``grace`` seconds,
    and reap the process."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, sig)
    if sig != signal.SIGKILL:
        try:
            process.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
    process.wait()


@dataclass(frozen=True, slots=True)
class Stopping:
    """How a supervisor stops a process group it gives up on. Workers get SIGKILL at once and
    a Ctrl-C goes on up to the command; ``run`` asks the user's program first (SIGTERM at a
    timeout, SIGINT at Ctrl-C), gives it ``grace`` seconds, and reports the interruption."""

    on_timeout: int = signal.SIGKILL
    on_interrupt: int = signal.SIGKILL
    grace: float = 0.0
    reraise_interrupt: bool = True


KILL_AT_ONCE = Stopping()


class Deadlines:
    """The total limit from the start, and the idle limit from the last start event (a unit of
    work that takes longer than ``idle`` is hung)."""

    def __init__(self, idle: float | None, total: float | None, clock: Callable[[], float]) -> None:
        self.idle, self.total, self.clock = idle, total, clock
        self.started = self.restarted = clock()
        self.passed: float | None = None  # the limit that passed

    def restart_idle(self) -> None:
        self.restarted = self.clock()

    def remaining(self) -> float | None:
        """Seconds until the nearer limit (inf without limits); None once one has passed
        (``passed`` then says which)."""
        now, left = self.clock(), float("inf")
        for limit, since in ((self.total, self.started), (self.idle, self.restarted)):
            if limit is None:
                continue
            if now - since > limit:
                self.passed = limit
                return None
            left = min(left, limit - (now - since))
        return left


def supervise(
    process: Process,
    deadlines: Deadlines,
    watch: Callable[[], bool] = lambda: False,
    stopping: Stopping = KILL_AT_ONCE,
) -> Stopped | None:
    """Wait for ``process`` to end; None when it ended by itself. ``watch`` runs at every poll
    and after the end (it reads new events) and returns True when a unit of work started."""
    try:
        try:
            while True:
                ended = process.poll() is not None
                if watch():
                    deadlines.restart_idle()
                if ended:
                    return None
                left = deadlines.remaining()
                if left is None:
                    kill_group(process, stopping.on_timeout, stopping.grace)
                    return "timeout"
                time.sleep(min(POLL_SECONDS, left))  # (Popen.wait with a timeout busy-polls)
        except KeyboardInterrupt:
            kill_group(process, stopping.on_interrupt, stopping.grace)
            if stopping.reraise_interrupt:
                raise
            return "interrupted"
    finally:  # a second Ctrl-C during the grace period must not orphan the group
        if process.poll() is None:
            kill_group(process)


class EventTail:
    """New complete lines of a worker's events.jsonl since the last read."""

    def __init__(self, path: Path) -> None:
        self.path, self.offset = path, 0
        self.events: list[Event] = []

    def read(self) -> Iterator[Event]:
        try:
            with self.path.open("rb") as stream:
                stream.seek(self.offset)
                data = stream.read()
        except OSError:
            return
        end = data.rfind(b"\n") + 1
        self.offset += end
        for line in data[:end].splitlines():
            try:
                event = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            self.events.append(event)
            yield event


class Flight:
    """Follows a worker's events: passes each to ``on_event`` and keeps the start event of the
    unit of work in progress (None between units)."""

    def __init__(self, tail: EventTail, on_event: OnEvent | None) -> None:
        self.tail, self.on_event = tail, on_event
        self.current: Event | None = None

    def follow(self) -> bool:
        """Read the new events; True when one of them started a unit of work."""
        started = False
        for event in self.tail.read():
            if self.on_event is not None:
                self.on_event(event)
            if event["event"] in UNIT_STARTS:
                self.current, started = event, True
            elif event["event"] in UNIT_RESULTS:
                self.current = None
        return started


def last_event(events: list[Event], name: EventName) -> Event | None:
    return next((event for event in reversed(events) if event["event"] == name), None)


def _stderr_tail(out: Path) -> str:
    try:
        lines = (out / "stderr.log").read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return lines[-1][:300] if lines else ""


def worker_ending(
    returncode: int, events: list[Event], in_flight: Event | None, out: Path
) -> Outcome:
    """A worker that exited by itself: ok (exit 0), fatal (its ``fatal`` event), or a crash
    (a signal, or a non-zero exit with the last line of its stderr)."""
    fatal = next((event for event in events if event["event"] == "fatal"), None)
    if returncode == 0:
        return Outcome(events, "ok")
    if fatal is not None:
        return Outcome(events, "fatal", fatal["error"], in_flight)
    if returncode < 0:
        name = signal_name(-returncode)
        hint = " (out of memory?)" if name == "SIGKILL" else ""
        return Outcome(events, "crash", f"crashed: {name}{hint}", in_flight)
    detail = f"crashed: exit {returncode}"
    last = _stderr_tail(out)
    return Outcome(events, "crash", f"{detail}: {last}" if last else detail, in_flight)


def launch(
    module: str,
    spec: Spec,
    out: Path,
    *,
    idle_timeout: float | None = None,
    total_timeout: float | None = None,
    on_event: OnEvent | None = None,
    env: Mapping[str, str] | None = None,
) -> Outcome:
    """Run ``python -m module out/spec.json`` in a fresh process group with stdout.log and
    stderr.log in ``out``; stop it when ``total_timeout`` passes or a unit of work outlasts
    ``idle_timeout``; pass each event to ``on_event`` as it arrives."""
    out.mkdir(parents=True, exist_ok=True)
    write_spec(out, {**spec, "out": str(out), "spawn_time": time.time()})
    process = start_worker(module, out, env, compiles_with(spec))
    flight = Flight(EventTail(out / EVENTS), on_event)
    deadlines = Deadlines(idle_timeout, total_timeout, time.monotonic)
    if supervise(process, deadlines, flight.follow) == "timeout":
        detail = f"timed out after {deadlines.passed:g} s"
        return Outcome(flight.tail.events, "timeout", detail, flight.current)
    returncode = process.wait()  # it ended: supervise saw it
    return worker_ending(returncode, flight.tail.events, flight.current, out)


def start_worker(
    module: str, out: Path, env: Mapping[str, str] | None, backend: str | None
) -> Process:
    """The worker forked by the fork server (torch already imported; the server first runs
    Inductor's CPU probe when ``backend`` is inductor), or, for a job with its own environment
    or when the server is unavailable, ``python -m module`` afresh."""
    from pt2doctor.forkserver import fork_server

    server = None if env else fork_server()
    if server is not None:
        warm = "inductor" if backend == "inductor" else None
        with contextlib.suppress(OSError):  # the server died: start afresh
            return server.spawn(
                module, [str(out / SPEC)], out / "stdout.log", out / "stderr.log", warm
            )
    with (out / "stdout.log").open("wb") as stdout, (out / "stderr.log").open("wb") as stderr:
        return subprocess.Popen(
            [sys.executable, "-m", module, str(out / SPEC)],
            env={**os.environ, **(env or {})},
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
        )


def compiles_with(spec: Spec) -> str | None:
    """The backend a worker compiles with: an ablate spec's ``backend``, a check spec's
    ``variant.backend`` (None for a spec that names none)."""
    variant = spec.get("variant")
    backend = spec.get("backend") or (variant.get("backend") if isinstance(variant, dict) else None)
    return str(backend) if backend else None


def write_spec(out: Path, spec: Spec) -> Path:
    path = out / SPEC
    path.write_bytes(orjson.dumps(spec))
    return path


# ---- the worker side ---------------------------------------------------------------------


def read_spec(path: Path) -> Spec:
    """The spec :func:`launch` wrote (its ``out`` is where the worker writes)."""
    spec: Spec = orjson.loads(path.read_bytes())
    return spec


def one_line(error: BaseException) -> str:
    """``Type: message`` on one line, at most 500 characters (see ``error_line``)."""
    from pt2doctor.trace.messages import error_line

    return error_line(type(error).__name__, str(error))


def event_emitter(stream: IO[bytes]) -> Emit:
    def emit(event: EventName, /, **fields: Any) -> None:
        stream.write(
            orjson.dumps(
                {"event": event, "t": time.time(), **fields},
                option=orjson.OPT_SERIALIZE_NUMPY,
                default=str,
            )
            + b"\n"
        )
        stream.flush()

    return emit


Job = Callable[[Spec, Path, Emit], None]


def fatal_fields(error: BaseException) -> dict[str, Any]:
    return {"error": one_line(error), "traceback": traceback.format_exc()[-4000:]}


def serve(
    argv: list[str] | None,
    job_for: Callable[[Spec], Job],
    fatal: Callable[[BaseException], dict[str, Any]] = fatal_fields,
) -> int:
    """A worker process's body: read the spec, run its job with an emitter on events.jsonl;
    an error outside any cell or trial is the ``fatal`` event (exit 1)."""
    args = sys.argv[1:] if argv is None else argv
    spec = read_spec(Path(args[0]))
    out = Path(spec["out"])
    out.mkdir(parents=True, exist_ok=True)
    with (out / EVENTS).open("ab") as stream:
        emit = event_emitter(stream)
        try:
            job_for(spec)(spec, out, emit)
        except Exception as error:
            emit("fatal", **fatal(error))
            return 1
    return 0

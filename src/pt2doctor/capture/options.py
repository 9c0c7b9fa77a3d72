"""``pt2doctor run``'s options, declared once: each :class:`RunOptions` field that the user
sets carries its command-line flag (cli/run.py makes the click option from it) and its
manifest key (the run directory records it), so a new option is one field here, its effect
(the child's environment in capture/runner.py ``child_env``, or the code that reads it) and a
test. ``--try-fixes`` re-runs with ``dataclasses.replace`` of the same options.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, cast

from pt2doctor.capture.launch import Launch
from pt2doctor.trace.types import Manifest

Kind = Literal[
    "choice",
    "positive_float",
    "nonnegative_float",
    "positive_int",
    "port",
    "path",
    "flag",
    "switch",
]
"""``switch``: ``--name/--no-name``, unset (None) when neither is given."""


@dataclass(frozen=True, slots=True)
class Flag:
    """How a field is set on the command line: ``--warmup-calls N``."""

    name: str
    kind: Kind
    help: str
    choices: tuple[str, ...] = ()


def _setting(default: Any, manifest: str | None = None, flag: Flag | None = None) -> Any:
    return field(default=default, metadata={"manifest": manifest, "flag": flag})


@dataclass(slots=True)
class RunOptions:
    command: list[str]
    out: Path
    backend: str | None = _setting(None, "backend_override", Flag(
        "--backend", "choice", "Override the backend every torch.compile asks for (eager: "
        "fast triage).", ("eager", "aot_eager", "inductor")))  # fmt: skip
    timeout: float | None = _setting(None, "timeout_s", Flag(
        "--timeout", "positive_float", "Kill the program after S seconds (exit 124)."))  # fmt: skip
    warmup_calls: int | None = _setting(None, "warmup_calls", Flag(
        "--warmup-calls", "positive_int", "Warmup ends after a frame's N-th compiled call."))  # fmt: skip
    steady_after: float | None = _setting(None, "steady_after_s", Flag(
        "--steady-after", "nonnegative_float", "Warmup ends S seconds after start."))  # fmt: skip
    launch: Launch | None = None
    """Start the program on several ranks through torchrun (``--nproc``)."""
    collective_timeout: float | None = _setting(None, "collective_timeout_s")
    """The collective timeout cross-rank analysis compares compile skew with (kept for report;
    its flag is ``report``'s too: cli/report.py)."""
    kernels: bool = _setting(False, "kernels", Flag(
        "--kernels", "flag", "Map every Inductor kernel to your lines (INDUCTOR_PROVENANCE=1; "
        "compiles afresh) and keep the fusion log."))  # fmt: skip
    """Inductor's provenance tracking on (``--kernels``): every kernel mapped to user lines,
    and the fusion log kept (``fusion.log``)."""
    profile_calls: int | None = _setting(None, "profile_calls")
    """``--profile``: profile this many steady-state calls of the hot graph, with provenance
    (kernels mapped to lines) and kernel profiling on. The compile caches stay on (a second
    profiled run starts warm); a graph from the FX graph cache brings back the lines of the
    compile that filled it, and the profile says so. Its flags, ``--profile`` and
    ``--profile-calls``, are cli/run.py's."""
    profile_seconds: float | None = _setting(None, None, Flag(
        "--profile-seconds", "positive_float", "With --profile: close the window after S "
        "seconds (default 30)."))  # fmt: skip
    profile_stacks: bool = _setting(False, None, Flag(
        "--profile-stacks", "flag", "With --profile: sample the Python stack every 0.25 ms "
        "in the window, to name your lines that ran the eager time (it slows the window's "
        "calls: docs/PERFORMANCE.md)."))  # fmt: skip
    live: bool | None = _setting(None, None, Flag(
        "--live", "switch", "Explain each recompile, limit hit, new break site and failed "
        "compile on stderr as it happens (default: when stderr is a terminal)."))  # fmt: skip
    slow_compile: float | None = _setting(None, None, Flag(
        "--slow-compile", "positive_float", "With --live: a compile longer than S seconds is "
        "an event."))  # fmt: skip
    skew_warn: float | None = _setting(None, None, Flag(
        "--skew-warn", "positive_float", "With --live and --nproc: one rank compiling S "
        "seconds while every other rank has finished its compiles is an event (rank-skew)."))  # fmt: skip
    metrics_port: int | None = _setting(None, None, Flag(
        "--metrics-port", "port", "Serve the compile events as OpenMetrics on port N while the "
        "program runs (pip install 'pt2doctor[metrics]')."))  # fmt: skip
    metrics_textfile: Path | None = _setting(None, None, Flag(  # noqa: RUF009 (a field())
        "--metrics-textfile", "path", "Write the same metrics to PATH while the program runs "
        "(node_exporter's textfile collector; replaced atomically)."))  # fmt: skip
    try_fix: dict[str, Any] | None = None
    """A fix the child applies to the program (``--try-fixes``: torchcompat/apply.py)."""
    quiet: bool = False
    """Keep the program's output in stdout.log/stderr.log only (a ``--try-fixes`` re-run)."""
    digest_outputs: bool = False
    """Digest what each compiled callable returns on its first calls (``--try-fixes``: the
    main run and each re-run, compared; torchcompat/digests.py)."""


def flagged() -> list[tuple[str, Flag]]:
    """(field name, its flag) of every option set on the command line, in declared order."""
    return [(f.name, f.metadata["flag"]) for f in fields(RunOptions) if f.metadata.get("flag")]


def manifest_settings(options: RunOptions) -> Manifest:
    """The manifest's record of the options (``{"warmup_calls": 3, "timeout_s": None, ...}``)."""
    settings = {
        f.metadata["manifest"]: getattr(options, f.name)
        for f in fields(RunOptions)
        if f.metadata.get("manifest")
    }
    return cast(Manifest, settings)

"""``with pt2doctor.watch() as w:`` — capture compile behaviour in process, for tests and notebooks.

The same records and heat as ``pt2doctor run``, without a subprocess: structured trace records go
to a TORCH_TRACE-format file through an in-process log handler, the probes count graph calls and
break executions, and ``w.report()`` builds the same report dict as the CLI from that capture
directory. Assertions fail with the explanation (site, category, reason, failed guards) so a
test log says why.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, TextIO

from pt2doctor import torchcompat
from pt2doctor.analysis.findings.trace_findings import frame_label
from pt2doctor.analysis.paths import library_path
from pt2doctor.analysis.recompiles.ledger import RESUME_NAME
from pt2doctor.analysis.text import counted
from pt2doctor.capture.probes import ProbeRecorder, install_torch_probes
from pt2doctor.capture.profile import DEFAULT_SECONDS, DEFAULT_WARMUP, ProfileWindow
from pt2doctor.errors import Pt2DoctorError
from pt2doctor.report import build_report
from pt2doctor.report.frame_story import change_text
from pt2doctor.report.notebook import Report
from pt2doctor.rundir.load import load_profile
from pt2doctor.rundir.read import load_probes
from pt2doctor.trace.collect import collect_run
from pt2doctor.trace.types import Manifest

TRACE_FILE = "dedicated_log_torch_trace_watch.log"


class Watch:
    """An in-process capture; use as a context manager (see :func:`watch`)."""

    def __init__(
        self, out: Path | None = None, profile: int | None = None, metrics_port: int | None = None
    ) -> None:
        self._own_dir = out is None
        self.metrics_port = metrics_port
        self._live: _LiveExport | None = None
        self.profile_calls = profile
        self.dir = Path(tempfile.mkdtemp(prefix="pt2doctor-watch-")) if out is None else out
        self.manifest: Manifest = {}
        self._stream: TextIO | None = None
        self._detach: Callable[[], None] | None = None
        self._recorder: ProbeRecorder | None = None

    def __enter__(self) -> Watch:
        (self.dir / "trace").mkdir(parents=True, exist_ok=True)
        self._stream = (self.dir / "trace" / TRACE_FILE).open("a", encoding="utf-8")
        self._detach = torchcompat.attach_trace_file(self._stream)
        if self._detach is None:
            raise Pt2DoctorError("watch() is unavailable on this torch (no structured trace)")
        self._recorder = ProbeRecorder(self.dir)
        if self.profile_calls:
            recorder = self._recorder
            self._recorder.window = ProfileWindow(
                self.dir,
                self.profile_calls,
                DEFAULT_WARMUP,
                DEFAULT_SECONDS,
                lambda what, error: recorder.event("probe_error", what=what, error=repr(error)),
                kernel_profile=False,  # the kernels compiled here record no events of their own
            )
        install_torch_probes(self._recorder)
        if self.metrics_port is not None:
            self._live = _LiveExport(self.dir / "trace", self.metrics_port, self._stream)
        self.manifest = {
            "command": ["<watch>"],
            "start_time": time.time(),
            "end_time": None,
            "exit_code": 0,
        }
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._stop()

    def _stop(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None
        if self._recorder is not None and self._recorder.window is not None:
            window = self._recorder.window
            window.guarded(lambda: window.close("exit"))
        if self._recorder is not None:
            torchcompat.unwrap(self._recorder.count_graph)
            torchcompat.unwrap(self._recorder.count_resume)
            torchcompat.unwrap(self._recorder.guards_timed)
            self._recorder.close()
            self._recorder = None
        if self._detach is not None:
            self._detach()
            self._detach = None
        if self._stream is not None:
            self._stream.close()
            self._stream = None
        self.manifest["end_time"] = time.time()

    def mark_warmup_done(self) -> None:
        """Compiles from now on are reported as ``unexplained_recompile_after_warmup``."""
        self.manifest["steady_after_s"] = time.time() - self.manifest["start_time"]

    def report(self) -> Report:
        """The report of everything captured so far (the same dict as ``report.json``; HTML
        in Jupyter, the terminal summary as ``str()``)."""
        if self._recorder is not None:
            self._recorder.snapshot(final=True)
        if self._stream is not None:
            self._stream.flush()
        logs = sorted((self.dir / "trace").glob("*.log"))
        run = collect_run([log for log in logs if log.stat().st_size])
        run.manifest = {**self.manifest, "end_time": self.manifest.get("end_time") or time.time()}
        run.probes = load_probes(self.dir)
        if self.profile_calls:
            run.profile = load_profile(self.dir)
        return Report(build_report(run))

    # -- assertions ---------------------------------------------------------------------------
    def assert_no_graph_breaks(self) -> None:
        breaks = self.report()["graph_breaks"]
        if breaks:
            raise AssertionError(
                f"{counted(len(breaks), 'graph-break site')}:\n"
                + "\n".join(map(_describe_break, breaks))
            )

    def assert_max_variants(self, fn: Callable[..., Any], n: int) -> None:
        """At most ``n`` compiled variants of ``fn`` (a function, or a module's forward) and of
        each resume function Dynamo made from it after a graph break."""
        from pt2doctor import torchcompat  # torch is imported: the caller compiled fn
        from pt2doctor.inprocess.arguments import compiled_argument, count_argument

        compiled_argument("assert_max_variants", "fn", fn)
        count_argument("assert_max_variants", "n", n)

        # What torch.compile returned is unwrapped: a compiled module is its module, a
        # compiled function the function it wraps (their own code is torch's wrapper).
        target = torchcompat.original_module(fn)
        target = getattr(target, "_torchdynamo_orig_callable", target)
        code = getattr(getattr(target, "forward", target), "__code__", None)
        name = getattr(code, "co_name", getattr(target, "__name__", None))

        # A compiled torch module (nn.Linear) is compiled through torch's own wrapper frame,
        # which the report names by the module's class and method, or by the method alone
        # where the class is not known (watch() does not record torch.compile calls).
        module = hasattr(target, "forward")
        torch_module = (
            module
            and code is not None
            and str(library_path(code.co_filename) or "").startswith("torch/")
        )

        def through(frame: dict[str, Any], shown: str) -> bool:
            return str(frame.get("display_name") or "").startswith(f"{shown} (through ")

        def is_part_of_fn(frame: dict[str, Any]) -> bool:
            resume = RESUME_NAME.match(frame["function"] or "")
            own = resume.group(1) if resume else frame["function"]
            if module and through(frame, f"{type(target).__name__}.forward"):
                return True
            return bool(own == name and (code is None or frame["file"] == code.co_filename))

        seen = self.report()["frames"]
        frames = [frame for frame in seen if is_part_of_fn(frame)]
        if not frames and torch_module:
            frames = [frame for frame in seen if through(frame, "forward")]
        if not frames:
            where = f" ({code.co_filename}:{code.co_firstlineno})" if code is not None else ""
            compiled = ", ".join(frame_label(f["function"], f["file"], f["line"]) for f in seen)
            before = (
                ": nothing compiled while this watch was open; code compiled before it (an "
                "earlier watch, or another instance of the same class) is not recompiled, so "
                "call torch._dynamo.reset() before the watch to see it"
                if not compiled
                else ""
            )
            raise AssertionError(
                f"no compiled frame of {name}{where} was captured (compiled: "
                f"{compiled or 'none'}){before}"
            )
        too_many = [frame for frame in frames if frame["variants"] > n]
        if too_many:
            raise AssertionError("\n".join(_describe_variants(frame, n) for frame in too_many))

    def assert_no_recompiles(self) -> None:
        """No compile after :meth:`mark_warmup_done` (no recompile at all if never marked)."""
        report = self.report()
        marked = "steady_after_s" in self.manifest
        late = [
            c
            for c in report["compiles"]
            if (c["after_warmup"] if marked else c["cause"] == "recompile")
        ]
        if late:
            raise AssertionError("\n".join(_describe_compile(report, c) for c in late))

    def close(self) -> None:
        """Stop capturing and delete the capture directory if watch() created it."""
        self._stop()
        if self._own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)


def watch(
    out: Path | None = None, profile: int | None = None, metrics_port: int | None = None
) -> Watch:
    """Capture torch.compile behaviour in this process: ``with pt2doctor.watch() as w: ...``.
    ``profile=N``: also profile N steady-state calls of the hot compiled graph, as ``run
    --profile`` does (``w.report()["profile"]``; generated kernels are timed together, as the
    time each graph call spends outside its library and fallback ops). ``metrics_port=N``:
    serve the compile events as OpenMetrics on port N while it watches (the ``metrics``
    extra), as ``report --follow --metrics-port`` does."""
    from pt2doctor.inprocess.arguments import count_argument

    count_argument("watch", "profile", profile, optional=True)
    count_argument("watch", "metrics_port", metrics_port, optional=True)
    return Watch(Path(out) if out is not None else None, profile, metrics_port)


class _LiveExport:
    """The watch's own trace file followed by a thread (trace/tail.py), its events counted
    as metrics (report/live.py ``LiveFollower``) and served on a port until the watch stops."""

    def __init__(self, trace_dir: Path, port: int, stream: TextIO | None) -> None:
        from pt2doctor.analysis.live import LiveState
        from pt2doctor.report.live import LiveFollower
        from pt2doctor.trace.tail import TailThread

        self.follower = LiveFollower(LiveState(), metrics_port=port)
        self.stream = stream
        self.thread = TailThread(trace_dir, self.follower.handle, 0.2, self._flush,
                                 "pt2doctor-metrics")  # fmt: skip

    def _flush(self) -> None:
        if self.stream is not None and not self.stream.closed:
            self.stream.flush()

    def stop(self) -> None:
        self.thread.stop()
        self.follower.close()


def _describe_break(row: dict[str, Any]) -> str:
    site = row["site"]
    return (
        f"  {site['file']}:{site['line']} in {site['function']} [{row['category']}] "
        f"{row['gb_type']} (compiles {', '.join(row['compile_ids'])})\n    fix: {row['advice']}"
    )


def _describe_variants(frame: dict[str, Any], n: int) -> str:
    name = frame.get("display_name") or frame["function"]
    where = frame_label(name, frame["file"], frame["line"])
    lines = [f"{where} has {frame['variants']} variants, more than {n}:"]
    for recompile in frame["recompiles"]:
        lines += [f"  {recompile['compile_id']}: {text}" for text in _what_changed(recompile)]
    outlook = frame.get("outlook")
    if outlook:
        lines.append(f"  outlook: {outlook['reason']}")
    lines += [f"  fix: {fix}" for fix in frame.get("fixes") or []]
    return "\n".join(lines)


def _what_changed(recompile: dict[str, Any]) -> list[str]:
    """The recompile's changes in the user's names; Dynamo's guard text when there are none."""
    if recompile.get("changes"):
        return [change_text(change) for change in recompile["changes"]]
    return [f"[{guard['category']}] {guard['text']}" for guard in recompile["failed_guards"]]


def _describe_compile(report: dict[str, Any], row: dict[str, Any]) -> str:
    guards = [
        f"    {text}"
        for frame in report["frames"]
        for recompile in frame["recompiles"]
        if recompile["compile_id"] == row["compile_id"] and frame["stream"] == row["stream"]
        for text in _what_changed(recompile)
    ]
    frame = next(
        (f for f in report["frames"]
         if row["compile_id"] in f.get("compile_ids", []) and f["stream"] == row["stream"]),
        None,
    )  # fmt: skip
    # A compile refused at the recompile limit has no place of its own: its frame's.
    place = frame or row
    name = (frame or {}).get("display_name") or row["function"]
    where = frame_label(name, place["file"], place["line"])
    cause = "refused: the frame hit the recompile limit" if row.get("refused") else row["cause"]
    head = f"  {row['compile_id']} {where}: {cause}"
    return "\n".join([head, *guards])

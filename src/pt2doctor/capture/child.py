"""Bootstrap inside the watched process: start the probes, arm crash reporting, and hook torch
as soon as the program imports it (a post-import hook, so nothing is imported early)."""

from __future__ import annotations

import atexit
import faulthandler
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pt2doctor import torchcompat
from pt2doctor.capture.frames import caller_frame, user_frames
from pt2doctor.capture.fusion import FUSION_ENV, FusionLogKeeper
from pt2doctor.capture.probes import ProbeRecorder, flush_periodically, install_torch_probes
from pt2doctor.capture.profile import window_from_env
from pt2doctor.rundir import FUSION_LOG

RUN_DIR_ENV = "PT2DOCTOR_RUN_DIR"
BACKEND_ENV = "PT2DOCTOR_BACKEND"
TRY_FIX_ENV = "PT2DOCTOR_TRY_FIX"
DIGEST_ENV = "PT2DOCTOR_DIGEST_OUTPUTS"
"""A fix to apply (JSON, ``run --try-fixes``: torchcompat/apply.py), before any compile."""
PLUGIN_ENV = "PT2DOCTOR_CHILD_PLUGIN"
"""``package.module:function`` a command (ablate's script mode) runs in the child once torch
is imported, with the probe recorder: the command's own probes, without capture importing
the command."""


class _LoaderProxy(importlib.abc.Loader):
    """Runs ``callback`` right after the wrapped loader executed the module."""

    def __init__(self, loader: importlib.abc.Loader, callback: Callable[[], None]) -> None:
        self.loader = loader
        self.callback = callback

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        self.loader.exec_module(module)
        # Give the module its real loader back (resources, get_source) before our callback.
        module.__loader__ = self.loader
        if module.__spec__ is not None:
            module.__spec__.loader = self.loader
        self.callback()


class _AfterImport(importlib.abc.MetaPathFinder):
    """A meta-path finder that only wraps the loader of one module name."""

    def __init__(self, name: str, callback: Callable[[], None]) -> None:
        self.name = name
        self.callback = callback
        self.busy = False

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.name or self.busy:
            return None
        self.busy = True
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self.busy = False
        if spec is None or spec.loader is None:
            return None
        sys.meta_path.remove(self)
        spec.loader = _LoaderProxy(spec.loader, self.callback)
        return spec


def after_import(name: str, callback: Callable[[], None]) -> None:
    """Call ``callback`` once module ``name`` is imported (now, if it already is)."""
    if name in sys.modules:
        callback()
    else:
        sys.meta_path.insert(0, _AfterImport(name, callback))


def _guarded(recorder: ProbeRecorder, what: str, action: Callable[[], Any]) -> Callable[[], None]:
    def run() -> None:
        try:
            action()
        except Exception as error:  # a probe must never break the program
            recorder.event("probe_error", what=what, error=f"{type(error).__name__}: {error}")

    return run


def _drop_if_empty(fault_path: Path) -> None:
    """At a normal exit faulthandler has nothing to say: remove its empty log (Inductor's
    compile workers each start one). A fatal signal skips this, and its report stays."""
    try:
        if fault_path.stat().st_size == 0:
            fault_path.unlink()
    except OSError:
        pass


def start() -> ProbeRecorder | None:
    """Start capturing if this process runs under ``pt2doctor run`` (PT2DOCTOR_RUN_DIR set)."""
    run_dir = os.environ.get(RUN_DIR_ENV)
    if not run_dir:
        return None
    recorder = ProbeRecorder(Path(run_dir))
    recorder.event("start", pid=os.getpid(), wall_time=recorder.wall0)
    recorder.window = window_from_env(
        Path(run_dir),
        lambda what, error: recorder.event(
            "probe_error", what=what, error=f"{type(error).__name__}: {error}"
        ),
    )
    stop = flush_periodically(recorder)
    fault_path = Path(run_dir) / f"faulthandler.{os.getpid()}.log"
    fault_log = fault_path.open("w")
    faulthandler.enable(file=fault_log)

    def at_exit() -> None:
        if recorder.window is not None:
            recorder.window.guarded(lambda: recorder.window.close("exit"))
        stop()
        _drop_if_empty(fault_path)
        if "torch" in sys.modules:
            _guarded(
                recorder,
                "environment",
                lambda: recorder.event("environment", **torchcompat.environment()),
            )()
        recorder.close()

    atexit.register(at_exit)
    previous_hook = sys.excepthook

    def excepthook(kind: type[BaseException], value: BaseException, tb: Any) -> None:
        try:
            frames = user_frames(value)[:3]
        except Exception:  # a probe must never break the program's own error report
            frames = []
        recorder.event("exception", type=kind.__name__, message=str(value)[:4000], frames=frames)
        previous_hook(kind, value, tb)

    sys.excepthook = excepthook
    after_import(
        "torch._dynamo", _guarded(recorder, "torch", lambda: install_torch_probes(recorder))
    )
    after_import("torch", lambda: _on_torch(recorder, os.environ.get(BACKEND_ENV)))
    if os.environ.get(FUSION_ENV):
        after_import(
            "torch._inductor",
            _guarded(recorder, "fusion log", lambda: _keep_fusion_log(Path(run_dir))),
        )
    return recorder


def _keep_fusion_log(run_dir: Path) -> None:
    """Inductor's fusion log into ``fusion.log`` of the run directory (``run --kernels``)."""
    rank = os.environ.get("RANK", "")
    name = FUSION_LOG if not rank.isdigit() else FUSION_LOG.replace(".log", f".rank{rank}.log")
    keeper = FusionLogKeeper((run_dir / name).open("a", encoding="utf-8"))
    detach = torchcompat.attach_fusion_log(keeper, keeper.keep)
    atexit.register(detach)


def _on_torch(recorder: ProbeRecorder, backend: str | None) -> None:
    """Once torch is imported: apply the fix a ``--try-fixes`` re-run tries, record what
    torch.compile is called on (a compiled object that is never called compiles nothing;
    recorded as the program wrote it), and force ``backend`` when the run asks for one."""
    trial = os.environ.get(TRY_FIX_ENV)
    if trial:
        _guarded(recorder, "apply fix", lambda: _apply_fix(recorder, trial))()
    _guarded(
        recorder,
        "compile calls",
        lambda: torchcompat.record_compile_calls(
            lambda call: recorder.event("compile_call", **call), where=caller_frame
        ),
    )()
    _guarded(
        recorder,
        "module hooks",
        lambda: torchcompat.record_module_hooks(
            lambda change: recorder.event("module_hook", **change), where=caller_frame
        ),
    )()
    _guarded(
        recorder,
        "attribute stores",
        lambda: torchcompat.record_attribute_stores(
            lambda store: recorder.event("attribute_store", **store), where=caller_frame
        ),
    )()
    if backend:
        _guarded(
            recorder,
            "backend",
            lambda: recorder.event(
                "backend_override", backend=backend, ok=torchcompat.override_backend(backend)
            ),
        )()
    window = recorder.window
    if os.environ.get(DIGEST_ENV):  # run --try-fixes: what the compiled code returned
        _guarded(
            recorder,
            "output digests",
            lambda: torchcompat.digest_compiled_outputs(
                lambda found: recorder.event("output_digest", **found),
                where=caller_frame,
                paused=lambda: window is not None and not window.warming,
            ),
        )()
    if window is not None:  # run --profile: compiled against eager, paired, after the window
        _guarded(recorder, "paired calls", lambda: _pair(recorder, window))()
    plugin = os.environ.get(PLUGIN_ENV)
    if plugin:
        _guarded(recorder, f"plugin {plugin}", lambda: _plugin(plugin)(recorder))()


def _pair(recorder: ProbeRecorder, window: Any) -> None:
    """Pair compiled and eager calls of each compiled callable once the profile window is
    done (torchcompat/paired.py: its eager half stays out of the profile, and the window gets
    the program's calls right after warmup); a program that ends sooner sends the pairs made."""
    paired = torchcompat.pair_compiled_calls(
        lambda result: recorder.event("paired_calls", **result),
        ready=lambda: window.state in ("done", "failed"),
        where=caller_frame,
    )
    if paired is not None:

        def finish() -> None:
            for pairing in paired:
                pairing.finish()
                plain = pairing.plain()
                if plain is not None:
                    recorder.event("plain_calls", **plain)

        atexit.register(finish)
    # An eager optimizer's fused step, timed against its own on copies, after the window (or
    # between a noisy one and its re-measure: an optimizer step comes between two forwards).
    torchcompat.try_optimizer_steps(
        lambda result: recorder.event("optimizer_trial", **result),
        ready=window.between_windows,
        where=caller_frame,
    )


def _apply_fix(recorder: ProbeRecorder, trial: str) -> None:
    import json

    from pt2doctor.capture.compile_functions import compile_functions

    fix = json.loads(trial)
    marker = torchcompat.apply_fix(fix, recorder.event)
    if marker is not None:  # how many calls each mark reached, at exit
        atexit.register(lambda: recorder.event("try_fix_marks", made=dict(marker.made)))
    if fix.get("no_grad"):  # and how many compiled calls ran without grad
        without = torchcompat.compiled_calls_without_grad()
        recorder.event("try_fix_no_grad", ok=without is not None)
        if without is not None:
            atexit.register(lambda: recorder.event("try_fix_no_grad_calls", calls=without[0]))
    if fix.get("loader_workers"):  # and how many DataLoaders got workers
        loaders = torchcompat.loaders_with_workers(int(fix["loader_workers"]))
        recorder.event("try_fix_workers", ok=loaders is not None)
        if loaders is not None:
            atexit.register(lambda: recorder.event("try_fix_workers_made", loaders=loaders[0]))
    if fix.get("functions"):  # and how many calls each compiled function got
        compiler = compile_functions(fix["functions"], recorder.event)
        atexit.register(
            lambda: recorder.event("try_fix_function_calls", calls=dict(compiler.calls))
        )


def _plugin(spec: str) -> Callable[[ProbeRecorder], None]:
    import importlib

    module, _, function = spec.partition(":")
    found: Callable[[ProbeRecorder], None] = getattr(importlib.import_module(module), function)
    return found

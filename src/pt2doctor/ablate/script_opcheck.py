"""opcheck in script mode: the program's custom ops checked on the inputs they received in the
program's own eager run.

``pt2doctor ablate -- python train.py`` has no case file to call the ops with, so one more run
of the program does it: ``install`` (loaded in the child through ``capture.child``'s plugin
hook) compiles every graph with Dynamo's eager backend, records the first call of each custom
op inside those graphs (its inputs cloned before the call, as case mode records them), and at
exit runs ``torch.library.opcheck`` and the op's eager-vs-compiled alignment with the failing
rung's backend on them, each result a ``custom_op`` probe event. ``custom_op_runs`` reads them
back in the shape case mode's worker emits, so the same diagnosis reads both.
"""

from __future__ import annotations

import atexit
import contextlib
import os
from pathlib import Path
from typing import Any

OPCHECK_BACKEND_ENV = "PT2DOCTOR_OPCHECK_BACKEND"
OPCHECK_EAGER_ENV = "PT2DOCTOR_OPCHECK_EAGER"
"""Set (with ``TORCHDYNAMO_DISABLE=1``): the program runs eagerly and every custom op call is
recorded, for a failure in Dynamo itself, before any graph named the op."""
PLUGIN = "pt2doctor.ablate.script_opcheck:install"
MAX_OPS = 20
"""Custom ops checked per run (the first ones called)."""


def install(recorder: Any) -> None:
    """In the child: record custom-op calls in every compiled graph, check them at exit."""
    import torch

    from pt2doctor import torchcompat
    from pt2doctor.inprocess.custom_ops import check_recorded_call

    seen: dict[str, tuple[Any, Any, Any]] = {}

    def recording_eager(gm: Any, example_inputs: Any) -> Any:
        def run(*args: Any) -> Any:
            if len(seen) >= MAX_OPS:
                return gm(*args)
            out: list[Any] = []
            calls = torchcompat.record_custom_op_calls(
                lambda: out.append(gm(*args)), grad=torch.is_grad_enabled()
            )
            for name, call in calls.items():
                seen.setdefault(name, call)
            return out[0]

        return run

    stack = contextlib.ExitStack()
    if os.environ.get(OPCHECK_EAGER_ENV):
        everywhere = stack.enter_context(torchcompat.recording_custom_op_calls(grad=True))
    else:
        everywhere = {}
        recorder.event("opcheck_backend", ok=torchcompat.override_backend(recording_eager))
    backend = os.environ.get(OPCHECK_BACKEND_ENV) or "inductor"

    def check_all() -> None:
        stack.close()  # the eager run's recording ends here, before the checks run ops
        for name, call in list(everywhere.items())[:MAX_OPS]:
            seen.setdefault(name, call)
        if everywhere:
            torchcompat.enable_dynamo()  # the alignment check compiles each op alone
        for name, (op, args, kwargs) in list(seen.items()):
            try:
                result = check_recorded_call(name, op, args, kwargs, backend)
            except Exception as error:  # one op's check must not stop the others'
                result = {"op": name, "checks": [], "passed": None, "error": repr(error)[:500]}
            recorder.event("custom_op", **result)
        recorder.event("custom_ops_done", ops=list(seen))

    atexit.register(check_all)


def custom_op_runs(run_dir: Path) -> list[dict[str, Any]] | None:
    """The ``custom_op`` results of an opcheck run (None: it checked nothing to the end)."""
    from pt2doctor.rundir import PROBES_FILE
    from pt2doctor.rundir.read import read_jsonl

    events = read_jsonl(run_dir / PROBES_FILE) or []
    if not any(event.get("kind") == "custom_ops_done" for event in events):
        return None
    return [
        {k: v for k, v in event.items() if k not in ("kind", "t", "rank")}
        for event in events
        if event.get("kind") == "custom_op"
    ]

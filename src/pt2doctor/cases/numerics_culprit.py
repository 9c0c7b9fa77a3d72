"""At the culprit of :func:`pt2doctor.compare_modules`, compiled alone: the kernels Inductor
made for it, with the user's lines each came from (its provenance, as ``run --kernels`` maps
a run's), and torch's compiler_bisector's answer where no knob clears it (which backend
first diverges, and which Inductor subsystem, switched off, makes it pass).
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

MAX_LINES = 3
"""User lines kept per kernel (a fused kernel can take ops from many)."""


def culprit_kernels(run: Callable[[], Any]) -> list[dict[str, Any]]:
    """The kernels of the compile ``run()`` makes (the culprit compiled alone and called),
    in launch order: ``name``, ``kind`` (generated, library, fallback), ``ops`` and ``lines``
    (``file:line: code`` of the user's lines it came from; a library's lines are left out).
    [] where nothing was compiled with Inductor (another backend) or the structured trace is
    unavailable on this torch."""
    import tempfile

    from pt2doctor.analysis.built.kernels import kernel_map
    from pt2doctor.torchcompat.inductor import provenance_compile
    from pt2doctor.torchcompat.trace_log import attach_trace_file
    from pt2doctor.trace.collect import collect_run
    from pt2doctor.trace.messages import is_user_file

    with tempfile.TemporaryDirectory(prefix="pt2doctor-kernels-") as folder:
        path = Path(folder) / "trace.log"
        with path.open("w") as stream:
            detach = attach_trace_file(stream)
            if detach is None:
                return []
            try:
                with provenance_compile():
                    run()
            finally:
                detach()
        compiled = collect_run([path])
    found = []
    for record in compiled.compiles:
        mapped = kernel_map(record.built)
        for kernel in mapped.kernels if mapped is not None else []:
            lines = [f"{line.file}:{line.line}: {line.code}" for line in kernel.user_lines
                     if is_user_file(line.file)]  # fmt: skip
            found.append({"name": kernel.name, "kind": kernel.kind, "ops": list(kernel.ops),
                          "lines": lines[:MAX_LINES]})  # fmt: skip
    return found


def kernel_lines(kernels: list[dict[str, Any]]) -> list[str]:
    """Each kernel in a line: ``name (kind: ops) from file:line: code`` (the first line)."""
    said = []
    for kernel in kernels:
        ops = ", ".join(kernel.get("ops") or [])
        lines = kernel.get("lines") or []
        origin = f" from {lines[0]}" if lines else ""
        said.append(f"{kernel['name']} ({kernel['kind']}{': ' + ops if ops else ''}){origin}")
    return said


def bisect(passes: Callable[[], bool]) -> dict[str, Any]:
    """torch's compiler_bisector on ``passes`` (True: the culprit compiled alone passes): its
    answer (torchcompat ``bisect_compiler``) with ``meaning``; its progress, which it prints,
    is kept out of the program's output."""
    from pt2doctor.torchcompat.inductor import bisect_compiler

    try:
        with contextlib.redirect_stdout(io.StringIO()):
            found = bisect_compiler(passes)
    except Exception as error:  # a rerun that fails otherwise: the search's answer stands
        found = {"available": None, "reason": f"{type(error).__name__}: {error}"[:300]}
    found["meaning"] = bisected_meaning(found)
    return found


_SUBSYSTEMS = {
    "pre_grad_passes": "one of Inductor's pre-grad pattern passes",
    "joint_graph_passes": "one of Inductor's joint-graph pattern passes",
    "post_grad_passes": "one of Inductor's post-grad pattern passes",
    "decomposition": "a decomposition",
    "cse": "common-subexpression elimination in AOTAutograd",
    "lowerings": "Inductor's lowering",
    "inductor_layout_optimization": "Inductor's layout optimization",
    "inductor_comprehensive_padding": "Inductor's padding of strides",
    "inductor_fallback_random": "Inductor's random numbers (by design)",
    "inductor_emulate_precision_casts": "Inductor's low-precision casts (by design)",
    "cudagraphs": "CUDA graphs",
}


_PASS_HOOKS = (
    "post_grad_custom_pre_pass",
    "post_grad_custom_post_pass",
    "joint_custom_pre_pass",
    "joint_custom_post_pass",
    "pre_grad_custom_pass",
)
"""Inductor's config hooks for the program's own passes (their names appear in the pass the
bisector switched off)."""


def bisected_meaning(found: dict[str, Any]) -> str:
    """compiler_bisector's answer as a sentence: where in the compiler the numbers leave."""
    if found.get("available") is False:
        return f"compiler_bisector is unavailable: {found.get('reason')}"
    if found.get("available") is None:
        return f"compiler_bisector did not finish: {found.get('reason')}"
    backend, subsystem = found.get("backend"), found.get("subsystem")
    if backend is None:
        return "under compiler_bisector the failure did not reproduce"
    if backend == "eager":
        return ("it already diverges with backend eager: the code Dynamo traces differs from "
                "what eager runs, not the compiler's")  # fmt: skip
    if backend == "aot_eager":
        return "it first diverges under AOTAutograd (backend aot_eager): its tracing of the graph"
    info = found.get("debug_info")
    number = found.get("bisect_number")
    what = _SUBSYSTEMS.get(str(subsystem), str(subsystem)) if subsystem else None
    if what is None:
        return (f"it first diverges with backend {backend}, and switching off none of its "
                "subsystems clears it: Inductor's code generation or scheduling")  # fmt: skip
    of = f" of {info}" if info else ""
    application = f" (application {number})" if number is not None and not info else ""
    said = f"switching off {what}{of}{application} clears it (backend {backend})"
    if "by design" in what:
        return said
    hook = next((name for name in _PASS_HOOKS if name in str(info or "")), None)
    if hook is not None:  # the program's own pass, run by Inductor's pass manager
        return (f"{said}: that is the program's own pass set as {hook}, not Inductor's: fix or "
                "drop that pass")  # fmt: skip
    return f"{said}: that is where the numbers leave eager's; report it upstream with the repro"

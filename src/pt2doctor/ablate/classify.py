"""Ablation, as pure functions: which compiler layer a failure first appears at, what kind of
failure it is, what to do about it, and the smallest submodule whose compilation reproduces it.

The ladder turns the compiler stack on one layer at a time: ``eager`` (Dynamo only),
``aot_eager`` (+ AOTAutograd), ``aot_eager_decomp_partition`` (+ decompositions and the
partitioner), then the backend the user compiles with (``inductor``, or any other backend).
The first rung that fails names the layer the failure comes from.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pt2doctor.ablate.types import COMPILED_FAILURES, Category, Conclusion

LADDER = ("eager", "aot_eager", "aot_eager_decomp_partition")
# The compiler layer a rung adds to the one below it.
LAYER_OF = {"eager": "dynamo", "aot_eager": "aot", "aot_eager_decomp_partition": "decomp_partition"}

# Exception class names (anywhere in the error's MRO or its cause chain) -> category.
INCOMPLETE = {"Unsupported"}
USER_SIDE = {
    "GuardOnDataDependentSymNode",
    "UserError",
    "ConstraintViolationError",
    "DataDependentOutputException",
    "DynamicOutputShapeException",
}

ADVICE = {
    "incompleteness": (
        "Dynamo cannot trace this code: wrap the function it stops in with "
        "torch.compiler.disable (a function higher in the stack), or compile the submodules "
        "that work (child.compile()) instead of the whole model."
    ),
    "user_side": (
        "The program guards on a data-dependent value: tell the compiler what holds with "
        "torch._check(...), keep the .item()/nonzero() branch out of the compiled region "
        "(torch.compiler.disable that function), or do not mark the shape dynamic."
    ),
    "compiler_bug": (
        "A compiler bug: keep the failing piece out of the compiled region until it is fixed "
        "(compile the other submodules, or torch.compiler.disable the failing one), or compile "
        "with the last backend that worked; report it upstream with the repro."
    ),
}


def layer_of(backend: str, top: str) -> str:
    """The layer a rung stands for: dynamo / aot / decomp_partition, ``inductor`` for the
    Inductor rung, ``backend`` for any other top backend (it replaces everything after Dynamo)."""
    if backend in LAYER_OF:
        return LAYER_OF[backend]
    return "inductor" if top == "inductor" else "backend"


def failed(outcome: dict[str, Any]) -> bool:
    return outcome.get("status") in COMPILED_FAILURES


def first_failure(rungs: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The first rung whose compiled result crashed or diverged from eager."""
    return next((rung for rung in rungs if failed(rung)), None)


def eager_failure(rungs: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The rung whose model (or program) fails without compiling at all, if any."""
    return next((rung for rung in rungs if rung.get("status") == "eager_error"), None)


def classify(outcome: dict[str, Any]) -> Category | None:
    """``incompleteness`` (Dynamo's Unsupported), ``user_side`` (data-dependent guards and other
    user errors), ``compiler_bug`` (any other crash, and every wrong result); None when it
    did not fail."""
    if not failed(outcome):
        return None
    names = set(outcome.get("error_types") or ())
    if outcome["status"] == "crash" and names & INCOMPLETE:
        return "incompleteness"
    if outcome["status"] == "crash" and names & USER_SIDE:
        return "user_side"
    return "compiler_bug"


def same_failure(reference: dict[str, Any], outcome: dict[str, Any]) -> bool:
    """Does ``outcome`` fail the way ``reference`` did: same kind, and for a crash the same
    innermost exception type (a different crash is another bug)."""
    if not failed(outcome) or outcome["status"] != reference["status"]:
        return False
    if reference["status"] == "crash":
        return outcome.get("root_type") == reference.get("root_type")
    return True


def smallest_failing(
    children: Callable[[str], list[str]], reproduces: Callable[[str], bool], root: str = ""
) -> tuple[str | None, list[tuple[str, bool]]]:
    """Walk the module tree from ``root``: compile each child alone; descend into the first
    child whose compilation alone reproduces the failure, until none of a module's children
    does. Returns that module's path (None: only compiling the whole model fails) and every
    trial made, in order, as (path, reproduced)."""
    tried: list[tuple[str, bool]] = []
    found: str | None = None
    level = children(root)
    while level:
        for path in level:
            hit = reproduces(path)
            tried.append((path, hit))
            if hit:
                found, level = path, children(path)
                break
        else:
            break
    return found, tried


def _toggle_fix(toggles: Sequence[dict[str, Any]]) -> list[str]:
    fixes = []
    for toggle in toggles:
        if toggle.get("status") == "ok" and toggle["name"] == "dynamic=False":
            fixes.append("Drop dynamic=True: the failure disappears with static shapes.")
        if toggle.get("status") == "ok" and toggle["name"] == "fullgraph=False":
            fixes.append(
                "Drop fullgraph=True: without it Dynamo compiles around the code it cannot "
                "trace (a graph break) and the program runs; rewrite that code to get one graph."
            )
        if toggle.get("status") == "ok" and toggle["name"] == "no_cudagraphs":
            fixes.append(
                "Drop the CUDA-graph mode (mode='max-autotune-no-cudagraphs' or the default "
                "mode): the failure disappears without CUDA graphs."
            )
    return fixes


FULLGRAPH_ADVICE = {
    # torch.compiler.disable inside a fullgraph=True region is an error of its own (Dynamo
    # cannot skip a function without a graph break): never the fix there.
    "incompleteness": (
        "Under fullgraph=True Dynamo must trace all of it (a torch.compiler.disable'd function "
        "is an error there too): rewrite the code it stops at so it traces (a Python branch on "
        "a tensor's value: torch.cond(pred, true_fn, false_fn) or torch.where; a check on "
        "data: move it out of the compiled function), or drop fullgraph=True so Dynamo "
        "compiles around it (a graph break), or compile the submodules that trace "
        "(child.compile(fullgraph=True))."
    ),
    "user_side": (
        "The program guards on a data-dependent value: tell the compiler what holds with "
        "torch._check(...), replace the branch with torch.cond or torch.where, or move the "
        ".item()/nonzero() code out of the compiled function (under fullgraph=True "
        "torch.compiler.disable is an error too)."
    ),
    "compiler_bug": (
        "A compiler bug: compile the submodules that work (child.compile()) and leave the "
        "failing one eager, or compile with the last backend that worked; report it upstream "
        "with the repro (under fullgraph=True torch.compiler.disable is an error too)."
    ),
}


def workarounds(
    category: str | None,
    toggles: Sequence[dict[str, Any]],
    module: str | None,
    last_good: str | None,
    user_side: dict[str, Any] | None = None,
    fullgraph: bool = False,
) -> list[str]:
    """What to do, most specific first: the fix of the user's code when it is to blame, a
    toggle that made it pass, then the category's advice specialized to the module and the
    last backend that worked (never "report it upstream" for the user's own code).
    ``fullgraph``: the program compiles with fullgraph=True, where torch.compiler.disable is
    no fix (it fails there too)."""
    if category is None:
        return []
    found = [user_side["fix"]] if user_side else []
    found += _toggle_fix(toggles)
    if module:
        skip = "" if fullgraph else "torch.compiler.disable its forward, or "
        found.append(
            f"Compile without submodule {module!r}: {skip}compile the other submodules "
            f"(child.compile()) and leave {module!r} eager."
        )
    if category == "compiler_bug" and last_good:
        found.append(f"Compile with backend={last_good!r}, the last layer that worked.")
    if not user_side:
        found.append((FULLGRAPH_ADVICE if fullgraph else ADVICE)[category])
    return found


def error_numbers(outcome: dict[str, Any]) -> str:
    """One line for a rung: the error, or the worst tensor's error numbers."""
    worst = outcome.get("worst")
    if outcome.get("status") == "diverged" and worst:
        ratio = worst.get("rmse_ratio")
        return (
            f"{worst.get('name')}: max abs error {worst.get('max_abs_error')}, max rel error "
            f"{worst.get('max_rel_error')}"
            + (f", RMSE vs fp64 {ratio}x eager's" if ratio is not None else "")
            + f" (tolerance {outcome.get('tolerance')})"
        )
    return str(outcome.get("error") or "")


def accepted_gap(rungs: Sequence[dict[str, Any]], toggles: Sequence[dict[str, Any]] = ()) -> str:
    """Where a passing rung's worst tensor failed allclose and passed by the RMSE rule (compiled
    no further from float64 than eager is), the gap that was accepted, in a sentence: a large
    elementwise error is never passed over in silence. With the rung run again under
    ``emulate_precision_casts`` (``toggles``), what that did to the gap: closed, it is the
    low-precision rounding, by design (script mode's verdict for the same failure). '' when
    there is none."""
    accepted = [
        (rung, rung["worst"]) for rung in rungs
        if rung.get("status") == "ok" and (rung.get("worst") or {}).get("rule") == "rmse"
    ]  # fmt: skip
    if not accepted:
        return ""
    rung, worst = max(accepted, key=lambda pair: pair[1].get("max_abs_error") or 0.0)
    ratio = worst.get("rmse_ratio")
    versus = f" ({ratio:.2f}x eager's)" if isinstance(ratio, (int, float)) else ""
    return (
        f" The largest difference accepted: {worst['name']} differs from eager by up to "
        f"{worst['max_abs_error']:.3g} at the {rung['backend']!r} rung (allclose at tolerance "
        f"{rung.get('tolerance')} fails), passed by the RMSE rule: compiled is no further from "
        f"the float64 reference than eager{versus}." + _rounding(worst, toggles)
    )


def _rounding(worst: dict[str, Any], toggles: Sequence[dict[str, Any]]) -> str:
    """What ``emulate_precision_casts=True`` did to the accepted gap, in a sentence."""
    toggle = next((t for t in toggles if t.get("name") == "emulate_precision_casts=True"), None)
    if toggle is None:
        return ""
    emulated = (toggle.get("worst") or {}).get("max_abs_error")
    gap = worst.get("max_abs_error")
    if toggle.get("status") != "ok" or not isinstance(emulated, int | float) or not isinstance(
            gap, int | float):  # fmt: skip
        return f" emulate_precision_casts=True was tried: {toggle.get('status')}."
    if emulated <= gap / 4:
        return (
            f" With torch._inductor.config.emulate_precision_casts = True it is {emulated:.3g}: "
            "the gap is low-precision rounding (Inductor keeps intermediates in float32 where "
            "eager rounds each op), by design, not a compiler bug."
        )
    return (
        f" With emulate_precision_casts = True it is still {emulated:.3g}: not the rounding alone."
    )


def conclusion(
    rungs: Sequence[dict[str, Any]],
    module: str | None,
    bisected: dict[str, Any] | None,
    user_side: dict[str, Any] | None = None,
    compared: bool = True,
    toggles: Sequence[dict[str, Any]] = (),
) -> Conclusion:
    """The verdict: layer, failure kind, category and one sentence saying it; ``user_side``
    (from :mod:`pt2doctor.ablate.userside`) makes the category ``user_side`` and names the
    user's code. ``compared``: False for a command run without ``--accuracy-check`` (then a
    rung that exits 0 ran, and nothing says its outputs matched)."""
    first = first_failure(rungs)
    eager_error = eager_failure(rungs)
    if eager_error is not None:
        subject = "program" if "exit_code" in eager_error else "model"  # script mode: a program
        sentence = (
            f"The {subject} fails without compiling: {str(eager_error.get('error')).rstrip('.')}"
        )
        if user_side:
            sentence += f"; the cause is user code: {user_side['detail']}"
        return {
            "layer": None, "failure": "eager_error",
            "category": "user_side" if user_side else None, "sentence": sentence + ".",
            "user_side": user_side,
        }  # fmt: skip
    if first is None:
        sentence = (
            "No layer fails: every rung of the ladder matches eager."
            if compared
            else "No layer crashes: the command exits 0 under every rung. Its outputs were not "
            "compared: --accuracy-check CMD says whether they match."
        )
        sentence += accepted_gap(rungs, toggles)
        return {
            "layer": None, "failure": None, "category": None, "sentence": sentence,
            "user_side": None,
        }  # fmt: skip
    kind = "crashes" if first["status"] == "crash" else "diverges from eager"
    sentence = f"It {kind} first at layer {first['layer']} (backend {first['backend']!r})"
    if module is not None:
        sentence += f"; compiling submodule {module!r} alone reproduces it"
    if bisected and bisected.get("subsystem"):
        sentence += f"; compiler_bisector points at Inductor's {bisected['subsystem']}"
        if bisected.get("bisect_number"):
            sentence += f" (application #{bisected['bisect_number']})"
    if user_side:
        sentence += f"; the cause is user code: {user_side['detail']}"
    return {
        "layer": first["layer"],
        "failure": first["status"],
        "category": "user_side" if user_side else classify(first),
        "backend": first["backend"],
        "sentence": sentence + ".",
        "user_side": user_side,
    }

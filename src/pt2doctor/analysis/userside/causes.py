"""Is the failure the user's own code? Pure functions over what the ablation measured: the
custom ops' opcheck results, the compiler hooks the program set (and where the error was
raised), compiler_bisector's answer and the toggles. Each proof gives
``{kind, detail, evidence, fix}`` (``conclusion.user_side`` in the report); none gives None
and the failure stays the compiler's.

Blaming the compiler for user code sends people to file bogus bugs upstream, so these proofs
come before ``compiler_bug``."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pt2doctor.analysis.recompiles.sources import human_source
from pt2doctor.torchcompat.dispatch import TORCH_NAMESPACES
from pt2doctor.trace.patterns import lazy_compile

# opcheck's tests -> the registration they prove wrong, in the order a fix should go.
OPCHECK_KINDS = (
    ("test_schema", "custom_op_schema"),
    ("test_faketensor", "custom_op_fake"),
    ("test_autograd_registration", "custom_op_autograd"),
    ("test_aot_dispatch_static", "custom_op_fake"),
    ("test_aot_dispatch_dynamic", "custom_op_fake"),
)
CACHE_NOTE = (
    " Then clear the compile caches before you check the fix: delete the Inductor cache "
    "directory (TORCHINDUCTOR_CACHE_DIR; by default /tmp/torchinductor_$USER), or point "
    "TORCHINDUCTOR_CACHE_DIR at a new empty one. The caches key on the traced graph, not on "
    "the op's register_fake or mutates_args, so a warm cache keeps running the code compiled "
    "before the fix, and a run with the cache turned off does not replace that entry."
)
FIXES = {
    "custom_op_fake": (
        "Make {op}'s register_fake return what its kernel returns: the same shape, dtype and "
        "strides for the same inputs{numbers} ({shape})." + CACHE_NOTE
    ),
    "custom_op_no_fake": (
        "Give {op} a fake implementation: {register}, a function of the same inputs that "
        "returns an empty tensor of the kernel's output shape, dtype and strides ({shape}), "
        "for example `return torch.empty_like(x)` for an op whose output is its input's "
        "shape. It has none: the compiler cannot trace the op without one."
    ),
    "custom_op_schema": (
        "Declare what {op} mutates: torch.library.custom_op(..., mutates_args=(...)) must name "
        "every input the kernel writes to (or make the kernel write to a new tensor): the "
        "compiler assumes undeclared inputs are left unchanged." + CACHE_NOTE
    ),
    "custom_op_autograd": (
        "Register {op}'s backward: torch.library.register_autograd({op_name!r}, backward, "
        "setup_context=...) (a custom op has no autograd formula of its own)."
    ),
    "user_pass": (
        "Turn off your compiler pass {function} ({where}): torch._inductor.config.{hook} = None, "
        "then fix the pass; the model compiles correctly without it."
    ),
    "user_backend": (
        "Compile with a stock backend (backend='inductor' or 'aot_eager') instead of your "
        "backend {backend!r} ({function}, {where}), then fix that backend."
    ),
    "rng": (
        "By design: compiled code draws different random numbers than eager (dropout masks "
        "differ). Compare with torch._inductor.config.fallback_random = True, or compare "
        "statistics rather than values; this is not a bug."
    ),
    "precision": (
        "By design: Inductor keeps low-precision intermediates in float32 where eager rounds "
        "each op. Compare with torch._inductor.config.emulate_precision_casts = True, or judge "
        "against a float64 reference with a low-precision tolerance; this is not a bug."
    ),
    "dynamic_specialized": (
        "The code needs {dim} to be {value} ({where}: `{code}`), so it cannot stay dynamic: "
        "mark it with torch._dynamo.maybe_mark_dynamic instead of mark_dynamic (the compiler "
        "may then specialize it), drop the mark, or make that code independent of the size."
    ),
    "fake_op_error": (
        "Dynamo ran {op} with this call's shapes and dtypes (on fake tensors, which follow "
        "eager's rules) and it raised {error}. The same call raises in eager: the program "
        "passes inputs that do not fit{at} (a size or dtype the model was not built for). "
        "Fix the inputs, not the compiler; `torch.compiler.set_stance('force_eager')` runs "
        "the call eagerly to show the same error."
    ),
    "data_dependent_value": (
        "The program turns a tensor into a Python number{at} (float(), int(), .item()): a "
        "value the compiler only knows at run time, which under fullgraph=True is an error "
        "(without it, a graph break). Keep it a tensor (arithmetic with tensors works the "
        "same, and stays in the graph), or move that code out of the compiled function and "
        "pass the value in as a tensor."
    ),
    "data_dependent": (
        "The program guards on a data-dependent value{at}: a Python branch on a size or value "
        "the compiler only knows at run time. If the check only skips work the code after it "
        "handles anyway (ops on zero rows do nothing), remove it; else tell the compiler what "
        "holds with torch._check(...), make the branch a tensor op (torch.where, torch.cond), "
        "or move the .item()/nonzero() code out of the compiled function (under fullgraph=True "
        "torch.compiler.disable is an error too)."
    ),
}
DATA_DEPENDENT = {
    "GuardOnDataDependentSymNode",
    "UserError",
    "ConstraintViolationError",
    "DataDependentOutputException",
    "DynamicOutputShapeException",
}
CUSTOM_OP_ADVICE = (
    "The failure names custom op {ops}: check it with torch.library.opcheck (or "
    "pt2doctor.opcheck(op, samples)) on the inputs it receives. Its register_fake must return "
    "the kernel's shape, dtype and strides; mutates_args must name every input it writes to; "
    "a differentiable op needs register_autograd. `pt2doctor ablate CASES.py` runs these "
    "checks for you."
)
_OP_NAME = lazy_compile(r"torch\.ops\.(\w+)\.(\w+)")
_NO_FAKE = lazy_compile(r"no fake impl registered[^.]*\.(?:.*?Please use `(\w+)\.register_fake`)?")
_SHAPES = lazy_compile(r"Shapes torch\.Size\((\[[^\]]*\])\) and torch\.Size\((\[[^\]]*\])\)")
_DTYPES = lazy_compile(r"(?:Dtypes|dtype) (torch\.\w+) and (torch\.\w+)")


def custom_ops_named(text: str) -> list[str]:
    """``torch.ops.ns.op`` names in an error message whose namespace is not torch's."""
    found = []
    for namespace, name in _OP_NAME.findall(text or ""):
        qualified = f"torch.ops.{namespace}.{name}"
        if namespace not in TORCH_NAMESPACES and qualified not in found:
            found.append(qualified)
    return found


_DATA_DEPENDENT_TEXT = lazy_compile(r"Could not guard on data-dependent expression")


def compile_error_advice(fail_type: str, reason: str) -> str | None:
    """The fix a compile error's own text names, where it names one: a custom op (opcheck),
    or a guard on a data-dependent value at the user's line; None otherwise."""
    ops = custom_op_advice(reason)
    if ops is not None:
        return ops
    line = _user_line(reason)
    at = f" at {line[0]} (`{line[1]}`)" if line else ""
    fake = _FAKE_OP_ERROR.search(reason)
    if fake is not None and "making fake tensor call" in reason:
        op = fake["builtin"] or fake["target"]
        return FIXES["fake_op_error"].format(op=op, error=f"{fake['type']}: {fake['message'].rstrip('.')}",
                                             at=at)  # fmt: skip
    if fail_type in DATA_DEPENDENT or _DATA_DEPENDENT_TEXT.search(reason):
        code = line[1] if line else ""
        from pt2doctor.analysis.breaks.advice import HOST_RANDOM, HOST_RANDOM_ADVICE, RANDOM_DRAW

        if RANDOM_DRAW.search(code) or HOST_RANDOM.search(code):
            # NumPy's RNG is traced as a tensor op: the value read from it is data-dependent.
            return f"The value{at} is a host random draw. {HOST_RANDOM_ADVICE}"
        if code and not _BRANCH.search(code):
            return FIXES["data_dependent_value"].format(at=at)
        return FIXES["data_dependent"].format(at=at)
    return None


_FAKE_OP_ERROR = lazy_compile(
    r"call_\w+ (?:<built-in function (?P<builtin>\w+)>|(?P<target>\S+?))\(.*?got "
    r"(?P<type>\w+(?:Error|Exception))\('(?P<message>[^']*)'\)",
    re.S,
)
_BRANCH = lazy_compile(r"^\s*(?:if|elif|while|assert)\b|\bif\b.+\belse\b|\bbool\(")


def custom_op_advice(text: str) -> str | None:
    ops = custom_ops_named(text)
    return CUSTOM_OP_ADVICE.format(ops=", ".join(ops)) if ops else None


def where(frame: dict[str, Any]) -> str:
    return f"{os.path.basename(str(frame.get('file')))}:{frame.get('line')}"


_TENSOR_SHAPE = lazy_compile(r"^Tensor\[([\d, ]*)\]")
GENERIC_SHAPE = "compute the output shape from the inputs' shapes"


def _dims(text: str) -> list[int]:
    return [int(part) for part in text.strip("[]").split(",") if part.strip()]


def shape_example(message: str, inputs: Sequence[str], names: Sequence[str] | None) -> str:
    """How this op's register_fake can make its output, when the kernel's output shape (from
    opcheck's message) is an input's shape or that shape without its last dim; else the rule."""
    shapes = _SHAPES.search(message)
    dtypes = _DTYPES.search(message)
    if shapes is None and dtypes is not None and names:
        return _dtype_example(dtypes[1], inputs, names)
    if shapes is None or not names:
        return GENERIC_SHAPE
    kernel = _dims(shapes[1])
    for text, name in zip(inputs, names, strict=False):
        match = _TENSOR_SHAPE.match(text)
        if match is None or not name:
            continue
        dims = _dims(match[1])
        if kernel == dims:
            return f"the kernel returns {name}'s shape: torch.empty_like({name})"
        if dims and kernel == dims[:-1]:
            return f"the kernel drops {name}'s last dim: {name}.new_empty({name}.shape[:-1])"
    return GENERIC_SHAPE


def _dtype_example(kernel: str, inputs: Sequence[str], names: Sequence[str]) -> str:
    """How register_fake gets the kernel's dtype: from the input that has it."""
    short = kernel.removeprefix("torch.")
    for text, name in zip(inputs, names, strict=False):
        if name and text.split()[-1:] == [short]:
            return (f"the kernel returns {name}'s dtype: allocate with {name}.new_empty(...) "
                    f"or dtype={name}.dtype (torch.empty's default is float32)")  # fmt: skip
    return f"allocate the output as {kernel}"


def _numbers(message: str) -> str:
    """``: the kernel returns [10], register_fake [10, 24]`` from opcheck's message."""
    shapes = _SHAPES.search(message)
    if shapes:
        return f" (the kernel returns shape {shapes[1]}, register_fake {shapes[2]})"
    dtypes = _DTYPES.search(message)
    if dtypes:
        return f" (the kernel returns {dtypes[1]}, register_fake {dtypes[2]})"
    return ""


def _first_failure(checks: Sequence[dict[str, Any]]) -> tuple[str, dict[str, Any]] | None:
    failing = {c["name"]: c for c in checks if c.get("passed") is False}
    for test, kind in OPCHECK_KINDS:
        if test in failing:
            check = failing[test]
            message = str(check.get("message", ""))
            if kind == "custom_op_fake" and test.startswith("test_aot") and "grad" in message:
                kind = "custom_op_autograd"
            return kind, check
    return None


def custom_op_verdict(ops: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The first custom op whose opcheck fails, as a user-side verdict naming the op, the
    test, the numbers and the fix."""
    for op in ops:
        found = _first_failure(op.get("checks", []))
        if found is None:
            continue
        kind, check = found
        name = str(op["op"])
        message = " ".join(str(check.get("message", "")).split())
        numbers = _numbers(message)
        op_name = name.removesuffix(".default").replace(".", "::", 1)
        shape = shape_example(message, op.get("inputs") or [], op.get("arguments"))
        missing = _NO_FAKE.search(message)
        register = (f"`@{missing[1]}.register_fake`" if missing and missing[1] else
                    f"`@torch.library.register_fake({op_name!r})`")  # fmt: skip
        fix = FIXES["custom_op_no_fake" if missing else kind].format(
            op=f"torch.ops.{name}", op_name=op_name, numbers=numbers, shape=shape,
            register=register,
        )  # fmt: skip
        inputs = ", ".join(op.get("inputs", []))
        return {
            "kind": kind,
            "detail": f"custom op torch.ops.{name} fails torch.library.opcheck's "
            f"{check['name']}{numbers}",
            "evidence": [
                f"opcheck({name}, inputs it received in the eager run: {inputs}): "
                f"{check['name']} failed: {message[:300]}"
            ],
            "op": name,
            "test": check["name"],
            "fix": fix,
        }
    return None


def _hook_hit(
    hooks: Sequence[dict[str, Any]], frames: Sequence[dict[str, Any]]
) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The hook whose function the error was raised in (the innermost user frame that is a
    hook's function), with that frame."""
    for frame in frames:
        for hook in hooks:
            name = str(hook.get("function") or "").rsplit(".", 1)[-1]
            same_file = os.path.realpath(str(frame["file"])) == os.path.realpath(
                str(hook.get("file"))
            )
            if same_file and frame["function"] in (name, "__call__"):
                return hook, frame
    return None


def hook_verdict(
    hooks: Sequence[dict[str, Any]],
    frames: Sequence[dict[str, Any]],
    bisected: dict[str, Any] | None,
    without_hooks: dict[str, Any] | None,
) -> dict[str, Any] | None:
    """A user pass is to blame when the error was raised inside it, when compiler_bisector
    names the hook it is installed in, or when the failing rung passes without the hooks."""
    evidence = []
    hit = _hook_hit(hooks, frames)
    hook = hit[0] if hit else None
    if hit:
        evidence.append(f"the error was raised in {hit[1]['function']} ({where(hit[1])})")
    named = (bisected or {}).get("debug_info")
    by_name = next((h for h in hooks if h["hook"] == named), None)
    if by_name is not None:
        hook = hook or by_name
        evidence.append(f"compiler_bisector points at {named}, which the program set")
    names = ", ".join(str(h["function"]) for h in hooks)
    if without_hooks and without_hooks.get("status") == "ok" and hooks:
        hook = hook or (hooks[0] if len(hooks) == 1 else None)
        evidence.append(f"the failing rung passes without the program's hooks ({names})")
    if not evidence:
        return None
    if hook is None:  # several hooks and only the all-off toggle says it: name them all
        hook = {"hook": " / ".join(h["hook"] for h in hooks), "function": names, "file": None}
    fix = FIXES["user_pass"].format(function=hook["function"], where=where(hook), hook=hook["hook"])
    return {
        "kind": "user_pass",
        "detail": f"your compiler pass {hook['function']} ({where(hook)}), installed as "
        f"{hook['hook']}",
        "evidence": evidence,
        "hook": hook["hook"],
        "function": hook["function"],
        "file": hook.get("file"),
        "line": hook.get("line"),
        "fix": fix,
    }


def backend_verdict(backend: dict[str, Any] | None, layer: str | None) -> dict[str, Any] | None:
    """A backend the program registered, failing at the ``backend`` layer."""
    if backend is None or layer != "backend":
        return None
    fix = FIXES["user_backend"].format(
        backend=backend["backend"], function=backend["function"], where=where(backend)
    )
    return {
        "kind": "user_backend",
        "detail": f"your backend {backend['backend']!r} ({backend['function']}, {where(backend)})",
        "evidence": [f"the failure first appears at the backend rung, {backend['backend']!r}"],
        "function": backend["function"],
        "file": backend.get("file"),
        "line": backend.get("line"),
        "fix": fix,
    }


def toggle_verdict(toggles: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """RNG or precision by design: the divergence disappears with ``fallback_random=True``
    or ``emulate_precision_casts=True``."""
    for toggle in toggles:
        if toggle.get("status") != "ok":
            continue
        if toggle["name"] == "fallback_random=True":
            kind, what = "rng", "random ops draw different numbers compiled than eager"
        elif toggle["name"] == "emulate_precision_casts=True":
            kind, what = "precision", "low-precision rounding differs compiled from eager"
        else:
            continue
        return {
            "kind": kind,
            "detail": f"by design: {what}",
            "evidence": [f"the failing rung matches eager with {toggle['name']}"],
            "fix": FIXES[kind],
        }
    return None


_SPECIALIZED = lazy_compile(
    r"You marked (\S+) as dynamic but your code specialized it to be a constant \(([^)]*)\)"
)
_USER_STACK = lazy_compile(r'File "([^"]+)", line (\d+), in (\w+)\s+(.+?)(?:\s+\^+|\s*$)')
_CAUSED_BY = lazy_compile(r"Caused by: (.+?) # (\S+):(\d+) in (\w+)")


def _user_line(error: str) -> tuple[str, str] | None:
    """(``file:line``, code) of the user's line an error names: Dynamo's ``User stack:``
    (its last frame) or ``Caused by: CODE # FILE:LINE in FUNCTION``."""
    stack = error.split("User stack:", 1)
    frames = list(_USER_STACK.finditer(stack[1])) if len(stack) == 2 else []
    if frames:
        last = frames[-1]
        code = last[4].split(" # ")[0].strip()
        return f"{os.path.basename(last[1])}:{last[2]}", code
    caused = _CAUSED_BY.search(error)
    if caused:
        return f"{os.path.basename(caused[2])}:{caused[3]}", caused[1].split(" # ")[0].strip()
    return None


def data_dependent_verdict(outcome: dict[str, Any]) -> dict[str, Any] | None:
    """A guard the program's own code makes the compiler take: on a data-dependent value, or
    one specializing a size it marked dynamic (ConstraintViolationError), at the user's line."""
    names = set(outcome.get("error_types") or ()) & DATA_DEPENDENT
    if outcome.get("status") != "crash" or not names:
        return None
    error = str(outcome.get("error") or "")
    line = _user_line(error)
    specialized = _SPECIALIZED.search(error)
    if specialized and line:
        where, code = line
        dim = human_source(specialized[1])
        return {
            "kind": "dynamic_specialized",
            "detail": f"{dim} is marked dynamic, but your code specializes it to "
            f"{specialized[2]} ({where}: `{code}`)",
            "evidence": [error[:300]],
            "where": where,
            "fix": FIXES["dynamic_specialized"].format(
                dim=dim, value=specialized[2], where=where, code=code
            ),
        }
    at = f" at {line[0]} (`{line[1]}`)" if line else ""
    return {
        "kind": "data_dependent",
        "detail": f"a guard on a data-dependent value{at} ({', '.join(sorted(names))})",
        "evidence": [error[:300]],
        **({"where": line[0]} if line else {}),
        "fix": FIXES["data_dependent"].format(at=at),
    }


def diagnose(pieces: dict[str, Any], failing: dict[str, Any] | None) -> dict[str, Any] | None:
    """The user-side verdict for an ablation, most direct proof first; None: not user code."""
    if failing is None:
        return None
    toggles = pieces.get("toggles") or []
    without = next((t for t in toggles if t["name"] == "without user hooks"), None)
    return (
        custom_op_verdict(pieces.get("custom_ops") or [])
        or hook_verdict(
            pieces.get("hooks") or failing.get("hooks") or [],
            failing.get("user_frames") or [],
            pieces.get("bisect"),
            without,
        )
        or backend_verdict(pieces.get("user_backend"), failing.get("layer"))
        or toggle_verdict(toggles)
        or data_dependent_verdict(failing)
        or traced_code_verdict(pieces.get("numerics"), failing)
    )


def _is_compiling_line(source: str | None) -> tuple[str, str] | None:
    """(``file:line``, code) of a ``torch.compiler.is_compiling()`` (or Dynamo's
    ``is_compiling()``) test in the forward that starts at ``source`` (``file:line``)."""
    if not source or ":" not in source:
        return None
    file, _, start = source.rpartition(":")
    try:
        lines = Path(file).read_text(encoding="utf-8").splitlines()
        first = int(start)
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    body = lines[first - 1 :]
    indent = len(body[0]) - len(body[0].lstrip()) if body else 0
    for offset, text in enumerate(body[1:], first + 1):
        if text.strip() and len(text) - len(text.lstrip()) <= indent:
            break  # the end of the forward
        if "is_compiling(" in text:
            return f"{os.path.basename(file)}:{offset}", text.strip()
    return None


def traced_code_verdict(
    numerics: dict[str, Any] | None, failing: dict[str, Any]
) -> dict[str, Any] | None:
    """Wrong numbers at the Dynamo rung (backend eager: nothing compiles the graph), in a
    module that diverges traced alone: the code Dynamo traces is not the code eager runs, by
    the program's own hand (a ``torch.compiler.is_compiling()`` branch, a custom op whose
    kernel differs from the eager path)."""
    found = numerics or {}
    if failing.get("status") != "diverged" or failing.get("layer") != "dynamo":
        return None
    if not found.get("diverges") or found.get("culprit") is None or not found.get("dynamo_only"):
        return None
    ops = list(found.get("custom_ops") or [])
    branch = _is_compiling_line(found.get("culprit_source"))
    if not ops and branch is None:
        return None
    culprit = found.get("culprit") or "the model"
    worst = ((found.get("path") or [{}])[-1]).get("worst") or {}
    evidence = (f"{culprit} traced alone by Dynamo (backend eager) on eager's recorded input: "
                f"{worst.get('name')} max abs error {worst.get('max_abs_error')} against "
                "eager")  # fmt: skip
    where = os.path.basename(str(found.get("culprit_source") or "")) or "?"
    parts = []
    if branch is not None:
        parts.append(f"its forward branches on is_compiling() ({branch[0]}: `{branch[1]}`)")
    if ops:
        parts.append(f"its traced graph calls {', '.join(ops)}")
    detail = (f"{culprit} ({found.get('culprit_kind')}, {where}) gives other numbers traced by "
              f"Dynamo than eager: {' and '.join(parts)}")  # fmt: skip
    fix = (
        "Make the compiled path compute what the eager path computes: "
        + (f"compare {', '.join(ops)}'s kernel with the eager code and fix the one that is "
           "wrong" if ops else "the two sides of the is_compiling() branch must agree")
        + (f"; the branch at {branch[0]} runs one side in eager and the other compiled"
           if branch is not None and ops else "")
        + "."
    )  # fmt: skip
    return {
        "kind": "traced_code",
        "detail": detail,
        "evidence": [evidence],
        "where": branch[0] if branch is not None else where,
        "fix": fix,
    }

"""Write a repro for the smallest failing piece: ``repro.py`` (plain torch, no pt2doctor), the
piece as ``module.pt`` (a pickled module), its inputs as ``inputs.pt`` (captured by a forward
pre-hook during an eager run of the cell) and ``model_source.py`` (the case file, its pt2doctor
imports replaced by stubs, so the pickled classes load without pt2doctor).

The case file is loaded under the module name ``__pt2doctor_cases__``, which no other process can
import; while pickling, its classes are registered as module ``model_source`` instead.
"""

from __future__ import annotations

import contextlib
import copy
import os
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pt2doctor import torchcompat
from pt2doctor.ablate.script_repro import COMPILE_AFRESH
from pt2doctor.cases.align import run_cell
from pt2doctor.cases.case import Case, Cell
from pt2doctor.cases.loader import CASES_MODULE

SOURCE_MODULE = "model_source"

REPRO = '''\
"""Repro written by pt2doctor ablate: {sentence}

Compiles {what} with torch.compile({options}) and compares it with eager on the saved inputs.
Exits 1 (and says REPRODUCED) when the failure reproduces, 0 when the compiled result matches.
Run: python repro.py             (another backend: python repro.py --backend aot_eager)
"""

import argparse
import contextlib
import os
import sys

{fresh}
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE]  # model_source.py and the local modules it imports, copied beside it
import model_source  # noqa: E402,F401  the case file: classes, custom ops, config, hooks
{config}OPTIONS = {options_dict!r}
TOLERANCE = {tolerance!r}
GRAD = {grad!r}
AUTOCAST = {autocast!r}  # the cell's autocast dtype (None: none), on device DEVICE
DEVICE = {device!r}


def root(error):
    """The error the others wrap (BackendCompilerFailed wraps the backend's own)."""
    seen = []
    while error is not None and error not in seen and len(seen) < 10:
        seen.append(error)
        inner = getattr(error, "inner_exception", None)
        error = inner if isinstance(inner, BaseException) else error.__cause__
    return seen[-1]


def flat(value):
    if isinstance(value, torch.Tensor):
        return [value.detach()]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in flat(item)]
    return []


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default=OPTIONS["backend"])
    backend = parser.parse_args().backend
    options = dict(OPTIONS, backend=backend)
    if backend != "inductor":
        options.pop("mode", None)
    module = torch.load(os.path.join(HERE, "module.pt"), weights_only=False)
    saved = torch.load(os.path.join(HERE, "inputs.pt"), weights_only=False)
    args, kwargs = saved["args"], saved["kwargs"]
    cast = torch.autocast(DEVICE, dtype=getattr(torch, AUTOCAST)) if AUTOCAST else None
    with torch.set_grad_enabled(GRAD), cast or contextlib.nullcontext():
        torch.manual_seed(0)
        expected = flat(module(*args, **kwargs))
        compiled = torch.compile(module, **options)
        try:
            torch.manual_seed(0)
            got = flat(compiled(*args, **kwargs))
        except Exception as error:
            error = root(error)
            text = " ".join(str(error).split())[:400]
            print(f"REPRODUCED: the compiled call raised {{type(error).__name__}}: {{text}}")
            return 1
    for index, (want, have) in enumerate(zip(expected, got)):
        if want.shape != have.shape or not torch.allclose(
            want, have, atol=TOLERANCE, rtol=TOLERANCE
        ):
            error = (want.double() - have.double()).abs().max().item()
            print(f"REPRODUCED: output {{index}} differs from eager: max abs error {{error:.4g}}")
            return 1
    print(f"not reproduced: backend {{backend!r}} matches eager")
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''


def _stub(statement: str) -> str:
    """Stubs for the names one ``from pt2doctor... import ...`` statement binds."""
    imported = statement.split(" import ", 1)[1].replace("(", " ").replace(")", " ")
    names = [n.split(" as ")[-1].strip() for n in imported.replace("\n", " ").split(",")]
    lines = [
        "def _pt2doctor_stub(*args, **kwargs):  # pt2doctor is not needed here",
        "    return None",
    ]
    return "\n".join(lines + [f"{name} = _pt2doctor_stub" for name in names if name]) + "\n"


def stub_imports(source: str) -> str:
    """The case file without pt2doctor: each name it imports from pt2doctor becomes a stub
    (the repro only needs the model's classes, not the case declarations)."""
    out: list[str] = []
    pending: list[str] = []
    for line in source.splitlines(keepends=True):
        if pending or line.startswith("from pt2doctor"):
            pending.append(line)
            statement = "".join(pending)
            if "(" not in statement or ")" in statement:
                out.append(_stub(statement))
                pending = []
        elif line.startswith("import pt2doctor"):
            out.append("# " + line)
        else:
            out.append(line)
    return "".join(out)


@contextlib.contextmanager
def importable_as(namespace: dict[str, Any], name: str) -> Iterator[None]:
    """While pickling: the case file's classes and functions claim module ``name``, which is
    registered in sys.modules with the case file's globals."""
    module = types.ModuleType(name)
    module.__dict__.update(namespace)
    moved = [
        value
        for value in namespace.values()
        if isinstance(value, (type, types.FunctionType))
        and getattr(value, "__module__", None) == CASES_MODULE
    ]
    previous = sys.modules.get(name)
    sys.modules[name] = module
    for value in moved:
        value.__module__ = name
    try:
        yield
    finally:
        for value in moved:
            value.__module__ = CASES_MODULE
        if previous is None:
            sys.modules.pop(name, None)
        else:
            sys.modules[name] = previous


def capture_call(case: Case, cell: Cell, target: str) -> tuple[Any, Any, Any]:
    """Run the cell eagerly; return (a copy of the ``target`` submodule as it was called first,
    its positional inputs, its keyword inputs)."""
    built = case.build(cell)
    model: Any = built.model
    module = model.get_submodule(target)
    seen: list[tuple[Any, Any, Any]] = []

    def hook(mod: Any, args: Any, kwargs: Any) -> None:
        if not seen:
            twin = copy.deepcopy(mod)
            twin._forward_pre_hooks.clear()  # this hook is a local function: not picklable
            twin._forward_pre_hooks_with_kwargs.clear()
            seen.append((twin, _detached(args), _detached(kwargs)))

    handle = module.register_forward_pre_hook(hook, with_kwargs=True)
    try:
        run_cell(built, built.model, cell, case)
    finally:
        handle.remove()
    if not seen:
        raise ValueError(f"submodule {target!r} was never called")
    return seen[0]


def copy_local_sources(case_file: Path, out: Path) -> list[str]:
    """Copy the modules the case file imported from its own folder (``from mymodels import
    Net``) beside the repro, so it runs wherever the repro folder is copied."""
    import shutil

    root = case_file.resolve().parent
    copied = []
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if not isinstance(path, str) or name.startswith(("pt2doctor", CASES_MODULE)):
            continue
        # Only a real file path is a source: torch.ops (torch/_ops.py's _Ops object) carries
        # the relative ``__file__ = "_ops.py"``, which resolves into the working directory.
        if not os.path.isabs(path) or "site-packages" in path or not os.path.isfile(path):
            continue
        source = Path(path).resolve()
        if source == case_file.resolve() or not source.is_relative_to(root):
            continue
        if source.suffix != ".py":
            continue
        target = out / source.relative_to(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        copied.append(str(source.relative_to(root)))
    return sorted(copied)


def config_lines(changes: dict[str, dict[str, str]]) -> str:
    """``torch._inductor.config.NAME = VALUE`` for each config value the program changed that
    is a plain literal (hooks are functions: importing model_source sets them again)."""
    import ast

    modules = {"inductor": "torch._inductor.config", "dynamo": "torch._dynamo.config"}
    lines: list[str] = []
    for label, values in sorted(changes.items()):
        for name, text in sorted(values.items()):
            try:
                ast.literal_eval(text)
            except (ValueError, SyntaxError):
                continue
            if label in modules and len(lines) < 10:
                lines.append(f"{modules[label]}.{name} = {text}  # set by your program\n")
    return "".join(lines)


def _detached(value: Any) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, (list, tuple)):
        return type(value)(_detached(item) for item in value)
    if isinstance(value, dict):
        return {key: _detached(item) for key, item in value.items()}
    return value


def write_repro(
    out: Path, case: Case, cell: Cell, target: str, spec: dict[str, Any]
) -> dict[str, Any]:
    """Write the repro directory for ``target`` ("" for the whole model); returns what the
    report says about it (``written``, ``path``, ``module``, ``command``, or ``reason``)."""
    import torch

    if not isinstance(case.build(cell).model, torch.nn.Module):
        return {"written": False, "reason": "the model is a function, not an nn.Module"}
    module, args, kwargs = capture_call(case, cell, target)
    out.mkdir(parents=True, exist_ok=True)
    namespace = type(module).forward.__globals__
    (out / f"{SOURCE_MODULE}.py").write_text(stub_imports(Path(spec["case_file"]).read_text()))
    copied = copy_local_sources(Path(spec["case_file"]), out)
    try:
        with importable_as(namespace, SOURCE_MODULE):
            torch.save(module, out / "module.pt")
    except Exception as error:  # a class nested in a function, a lambda attribute ...
        return {"written": False, "reason": f"cannot pickle the module: {error}"}
    torch.save({"args": args, "kwargs": kwargs}, out / "inputs.pt")
    options: dict[str, Any] = {"backend": spec["backend"]}
    if spec.get("dynamic") is not None:
        options["dynamic"] = spec["dynamic"]
    if spec.get("fullgraph"):
        options["fullgraph"] = True
    if spec.get("mode") and spec["backend"] == "inductor":
        options["mode"] = spec["mode"]
    text = REPRO.format(
        sentence=spec.get("sentence", "a compiled result differs from eager"),
        what=f"submodule {target!r}" if target else "the whole model",
        options=", ".join(f"{k}={v!r}" for k, v in options.items()),
        options_dict=options,
        config=config_lines(torchcompat.environment().get("config_changes", {})),
        tolerance=float(spec["failure"].get("tolerance") or 1e-4),
        grad=bool(cell.grad or cell.train),
        autocast=cell.autocast,
        fresh=COMPILE_AFRESH,
        device=cell.device.split(":")[0],
    )
    (out / "repro.py").write_text(text)
    return {
        "written": True,
        "path": str(out / "repro.py"),
        "module": target or None,
        "module_class": type(module).__name__,
        "lines": text.count("\n"),
        "copied_sources": copied,
        "command": f"python {out / 'repro.py'}",
    }

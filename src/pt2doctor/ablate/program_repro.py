"""The repro of a failure no compiled graph holds: the program itself, copied beside a runner.

A failure at the dynamo layer (the ladder's ``eager`` rung) happens while Dynamo traces the
program's own code, or in what that code does with the result (a backward through a custom op
without autograd): there is no graph to hand over, and the program, when it is small and
imports nothing from its folder that cannot be copied too, is the smallest repro there is.

``repro.py`` runs the copy with ``runpy`` as ``__main__`` (its arguments as the rung gave
them) with every ``torch.compile`` forced to the failing rung's backend, as the rung did, and
exits 1 with ``REPRODUCED: running the program raised Type: message`` (the error the others
wrap), the line the signature check reads (ablate/signature.py)."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path
from typing import Any

from pt2doctor.ablate.script_repro import COMPILE_AFRESH, UNWRAP, program_of, standalone_note

MAX_LINES = 400
"""A longer program is no repro: the report says to cut it down instead."""

RUNNER = '''"""Repro written by pt2doctor ablate (script mode): {sentence}

No compiled graph holds this failure ({why}), so the program is the repro: {program}, copied
beside this file, run as __main__ with every torch.compile {forcing}.
Exits 1 (and says REPRODUCED) when it raises. Run: python repro.py
{standalone}"""
import os
import runpy
import sys

{fresh}
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # the program's own modules, copied beside it
BACKEND = {backend!r}  # None: the program's own backend, as written
WRAPPERS = ("BackendCompilerFailed", "InductorError")  # torch's wrappers of the error raised
_compile = torch.compile


def _forced(model=None, **kwargs):
    if BACKEND is not None:
        kwargs["backend"] = BACKEND
        kwargs.pop("mode", None)  # only Inductor takes a mode or options
        kwargs.pop("options", None)
    return _compile(**kwargs) if model is None else _compile(model, **kwargs)


torch.compile = _forced

if __name__ == "__main__":
    sys.argv = [os.path.join(HERE, {name!r}), *{args!r}]
    try:
        runpy.run_path(sys.argv[0], run_name="__main__")
    except SystemExit as stop:
        if stop.code not in (0, None):
            print(f"REPRODUCED: the program exited {{stop.code}}")
            sys.exit(1)
    except Exception as error:
{unwrap}        print(f"REPRODUCED: running the program raised {{type(error).__name__}}: {{text}}")
        sys.exit(1)
    print("not reproduced: the program ran to the end")
'''


def local_imports(program: Path) -> tuple[list[Path], list[str]]:
    """The modules beside the program that it imports, and those they import in turn (a
    ``model.py`` that imports ``ops.py``), to copy with it; and what cannot be read (a
    syntax error)."""
    found: list[Path] = []
    unreadable: list[str] = []
    todo, seen = [program], {program.resolve()}
    while todo:
        source = todo.pop(0)
        if source.is_dir():
            continue  # a package beside the program is copied whole
        try:
            tree = ast.parse(source.read_text(errors="replace"))
        except SyntaxError as error:
            unreadable.append(f"{source.name} does not parse ({error.msg}, line {error.lineno})")
            continue
        names: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module.split(".")[0])
        for name in sorted(names):
            for candidate in (program.parent / f"{name}.py", program.parent / name):
                if candidate.exists():
                    if candidate.resolve() not in seen:
                        seen.add(candidate.resolve())
                        found.append(candidate)
                        todo.append(candidate)
                    break
    return found, unreadable


def write_program_repro(
    out: Path, command: list[str], backend: str | None, sentence: str, why: str
) -> dict[str, Any]:
    """``out/repro.py`` running a copy of the program; what the report says about it.
    ``backend``: the failing rung's backend, forced on every torch.compile (None: the
    program's own)."""
    found = program_of(command)
    if found is None:
        return {"written": False, "reason": f"{why}, and the command runs no .py file to copy"}
    program, args = found
    size = program.read_text(errors="replace").count("\n")
    if size > MAX_LINES:
        return {
            "written": False,
            "reason": f"{why}; the program ({size} lines) is the repro, too long to hand over: "
            "cut it down to the function that fails",
        }
    modules, missing = local_imports(program)
    paths = [arg for arg in args if Path(arg).exists()]
    missing += [f"argument {arg} is a path on this machine" for arg in paths]
    out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(program, out / program.name)
    for module in modules:
        copy = shutil.copytree if module.is_dir() else shutil.copyfile
        copy(module, out / module.name)
    forcing = f"forced to backend {backend!r}, as the failing rung did" if backend else "as written"
    text = RUNNER.format(
        sentence=sentence, why=why, program=program.name, forcing=forcing, backend=backend,
        name=program.name, args=args, standalone=standalone_note(missing), unwrap=UNWRAP,
        fresh=COMPILE_AFRESH,
    )  # fmt: skip
    (out / "repro.py").write_text(text)
    return {
        "written": True,
        "source": "program",
        "path": str(out / "repro.py"),
        "module": None,
        "lines": text.count("\n") + size,
        "copied_sources": sorted([program.stem, *(m.stem for m in modules)]),
        "standalone": not missing,
        "not_standalone_because": missing,
        "command": f"python {out / 'repro.py'}",
    }

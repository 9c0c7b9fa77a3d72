"""A standalone repro of where compiled numbers leave eager's (cases/numerics.py's culprit).

The folder holds ``culprit.pt`` (the culprit module's structure, pickled with its tensors on
the meta device; its ``state_dict`` apart, with the buffers a state_dict leaves out; the eager
and fp64 inputs recorded at its boundary), ``defs_<file>.py`` for each of the user's source
files the module's classes or the Inductor pass hooks come from (the definitions read with
cases/extract.py, never run: importing a training script would run it), and ``repro.py``
(under 100 lines, torch only): it loads the module (the pickle's class references moved to
the copied definitions) and its state_dict into it, sets the pass hooks the program had, runs
fp64, eager and compiled, prints each one's RMSE against fp64, and exits 1 when compiled fails
check's rule (allclose, else RMSE against fp64 within a multiple of eager's), 0 when it passes.
A module that cannot move to the meta device is pickled whole, with its weights.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

from pt2doctor.cases.extract import extract_definitions
from pt2doctor.trace.messages import is_user_file

_REPRO = '''\
"""Repro written by pt2doctor.compare_modules: {culprit} ({kind}{where}) compiled with
backend {backend!r} leaves eager's numbers on the input recorded at its boundary.
Run: python repro.py   (torch only; exit 1 when the failure reproduces, else 0)"""
import copy
import pickle
import sys
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
MOVED = {moved!r}  # (module, name) in the pickle -> the copied definitions
TOLERANCE = {tolerance!r}
BACKEND = {backend!r}


class _Unpickler(pickle.Unpickler):
    def find_class(self, module, name):
        return super().find_class(MOVED.get((module, name), module), name)


class _Pickle:
    Unpickler = _Unpickler
    load = staticmethod(pickle.load)


{hooks}

def tensors(value):
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in tensors(v)]
    return [t for v in getattr(value, "__dict__", {{}}).values() for t in tensors(v)]


def rmse(result, reference):
    diff = result.double() - reference.double()
    return diff.pow(2).mean().sqrt().item() if diff.numel() else 0.0


saved = torch.load(HERE / "culprit.pt", pickle_module=_Pickle, weights_only=False)
module = saved["module"]  # its structure: the weights are the state_dict's
if saved["state_dict"] is not None:
    module = module.to_empty(device=saved["device"])
    module.load_state_dict(saved["state_dict"])
    for name, buffer in saved["buffers"].items():  # the buffers a state_dict leaves out
        owner, _, attribute = name.rpartition(".")
        setattr(module.get_submodule(owner), attribute, buffer)
args, kwargs = saved["eager_input"]
fp64_args, fp64_kwargs = saved["fp64_input"]
with torch.no_grad():
    fp64 = copy.deepcopy(module).double()(*fp64_args, **fp64_kwargs)
    eager = module(*args, **kwargs)
    compiled = torch.compile(module, backend=BACKEND)(*args, **kwargs)
failed = False
for index, (e, c, r) in enumerate(zip(tensors(eager), tensors(compiled), tensors(fp64))):
    if not e.is_floating_point():
        ok = torch.equal(e, c)
    else:
        small = c.dtype in (torch.float16, torch.bfloat16) or r.numel() < 1000 or TOLERANCE >= 2e-2
        bound = (3.0 if small else 2.0) * rmse(e, r) + TOLERANCE / 10
        ok = torch.allclose(e, c, atol=TOLERANCE, rtol=TOLERANCE) or rmse(c, r) <= bound
    print(f"output {{index}}: eager RMSE vs fp64 {{rmse(e, r):.3g}}, compiled {{rmse(c, r):.3g}}, "
          f"max |compiled - eager| {{(c.double() - e.double()).abs().max().item():.3g}}: "
          f"{{'ok' if ok else 'WRONG NUMBERS'}}")
    failed = failed or not ok
print("reproduces: compiled leaves eager's numbers" if failed else "does not reproduce")
sys.exit(1 if failed else 0)
'''


def users_file(thing: Any) -> Path | None:
    """The source file of a class or function the user wrote (None: a library's, or none;
    trace/messages.py ``is_user_file`` decides). A class is found by its ``forward``'s code
    (a class defined in a script run as ``__main__`` under a runner has no module file of its
    own)."""
    # An nn.Module by its forward; another class (a pass object's) by its own __call__.
    method = getattr(thing, "forward", None)
    if method is None and isinstance(thing, type):
        method = vars(thing).get("__call__")
    method = thing if method is None else method
    code = getattr(method, "__code__", None) or getattr(thing, "__code__", None)
    file = code.co_filename if code is not None else None
    if not file:
        try:
            file = inspect.getsourcefile(thing)
        except (TypeError, OSError):
            return None
    if not file or not is_user_file(str(Path(file).resolve())):
        return None
    return Path(file).resolve()


def write_repro(
    folder: Path,
    module: Any,
    eager_input: tuple[Any, Any],
    fp64_input: tuple[Any, Any],
    backend: str,
    tolerance: float,
    hooks: list[dict[str, Any]],
    culprit: str,
    where: str | None,
    ops: list[str] | None = None,
) -> dict[str, Any]:
    """Write the repro of ``module`` into ``folder``; returns what was written and whether it
    stands alone (``not_standalone_because``: each piece that could not be copied). ``ops``:
    the custom ops (``ns::op``) its graph calls, whose definitions are copied too."""
    import torch

    folder.mkdir(parents=True, exist_ok=True)
    wanted: dict[Path, list[str]] = {}
    modules_of: dict[Path, str] = {}
    for cls in {type(m) for m in module.modules()}:
        path = users_file(cls)
        if path is not None:
            wanted.setdefault(path, []).append(cls.__name__)
            modules_of[path] = cls.__module__
    hook_lines, missing = [], []
    for hook in hooks:
        function = hook.get("callable")
        made = type(function) if hook.get("instance_of") else function  # a pass object: its class
        path = users_file(made) if made is not None else None
        name = getattr(made, "__name__", None)
        if path is None or name is None or "<" in str(getattr(made, "__qualname__", "<")):
            missing.append(f"the {hook['hook']} hook {name or '?'} is not a top-level function "
                           "or class of a source file")  # fmt: skip
            continue
        wanted.setdefault(path, []).append(name)
        modules_of.setdefault(path, getattr(made, "__module__", path.stem))
        value = f"{name}()" if hook.get("instance_of") else name
        hook_lines.append(f"from defs_{path.stem} import {name}  # noqa: E402\n"
                          f"torch._inductor.config.{hook['hook']} = {value}")  # fmt: skip
    moved: dict[tuple[str, str], str] = {}
    files = []
    for path, names in sorted(wanted.items()):
        extracted = extract_definitions(path.read_text(), sorted(set(names)), list(ops or []))
        missing += extracted.missing
        target = folder / f"defs_{path.stem}.py"
        target.write_text(f'"""Definitions copied by pt2doctor from {path.name}."""\n\n'
                          + extracted.source)  # fmt: skip
        files.append(target.name)
        for name in names:
            moved[(modules_of[path], name)] = target.stem
    hooks_text = ""
    if hook_lines:
        hooks_text = "import torch._inductor.config  # noqa: E402\n" + "\n".join(hook_lines) + "\n"
    torch.save({**_weights_apart(module), "eager_input": eager_input, "fp64_input": fp64_input},
               folder / "culprit.pt")  # fmt: skip
    source = _REPRO.format(culprit=culprit or "<model>", kind=type(module).__name__,
                           where=f", {where}" if where else "", backend=backend, moved=moved,
                           tolerance=tolerance, hooks=hooks_text)  # fmt: skip
    (folder / "repro.py").write_text(source)
    return {
        "path": str(folder / "repro.py"),
        "files": ["repro.py", "culprit.pt", *files],
        "lines": source.count("\n"),
        "standalone": not missing,
        "not_standalone_because": sorted(set(missing)),
    }


def _weights_apart(module: Any) -> dict[str, Any]:
    """The module saved as its structure (its tensors on the meta device) and its
    ``state_dict``, with the non-persistent buffers a state_dict leaves out; the module whole
    (``state_dict`` None) where its structure cannot be moved to meta."""
    import copy

    try:
        state = module.state_dict()
        kept = set(state)
        buffers = {name: b for name, b in module.named_buffers() if name not in kept}
        tensors = [*state.values(), *buffers.values()]
        device = str(tensors[0].device) if tensors else "cpu"
        skeleton = copy.deepcopy(module).to("meta")
    except Exception:  # a module that will not move: pickled with its weights
        return {"module": module, "state_dict": None, "buffers": {}, "device": None}
    return {"module": skeleton, "state_dict": state, "buffers": buffers, "device": device}

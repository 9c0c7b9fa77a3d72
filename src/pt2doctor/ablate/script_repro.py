"""The repro of ``pt2doctor ablate -- python train.py``: torch's own runnable graph
(the ``fx_graph_runnable`` artifact Inductor logs for each graph it compiles: the post-AOT
graph, its inputs' metadata and the compile config) of the failing rung's last compile,
made portable and self-checking:

- the environment lines that carry this machine's paths (cache dir, trace dir) are dropped;
- a custom op the graph calls is registered by importing the module that defines it (found
  beside the program by its ``"namespace::"`` string and copied beside the repro);
- a compiler hook the program set is imported from its module (copied) and set again;
- ``run_repro`` is wrapped: exit 1 with ``REPRODUCED`` when it raises.

Where that is impossible (the op or the hook lives in the program itself, whose import would
run the program), the repro is still written and ``standalone`` says precisely why not."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

from pt2doctor.analysis.userside.causes import custom_ops_named
from pt2doctor.cases.extract import extract_definitions
from pt2doctor.trace.discover import find_trace_logs
from pt2doctor.trace.reader import read_records
from pt2doctor.trace.records import ParseStats

RUNNABLE = "fx_graph_runnable"
_ENV_LINE = re.compile(r"^os\.environ\[['\"](\w+)['\"]\] = .*$", re.MULTILINE)
_RUN_CALL = re.compile(r"^\s*(run_repro\(mod, load_args,.*\))\s*$", re.MULTILINE)
UNWRAP = """\
        for _ in range(10):  # the error the others wrap (InductorError wraps the pass's own)
            inner = getattr(error, "inner_exception", None)
            if not isinstance(inner, BaseException) and type(error).__name__ in WRAPPERS:
                inner = error.__cause__
            if not isinstance(inner, BaseException):
                break
            error = inner
        text = " ".join(str(error).split())[:400]
"""
"""In a repro's ``except Exception as error:``: the innermost error and its one-line text
(every repro flavor says it the same way, so their signatures compare)."""
COMPILE_AFRESH = """\
# Compile afresh: torch's FX graph and AOTAutograd caches key on the graph, not on a custom
# op's register_fake, mutates_args or autograd, so a warm cache can replay code compiled before
# (or after) a fix, and the verdict would be the cache's.
os.environ.setdefault("TORCHINDUCTOR_FX_GRAPH_CACHE", "0")
os.environ.setdefault("TORCHINDUCTOR_AUTOGRAD_CACHE", "0")
"""
"""What every repro does before it imports torch (case mode's, script mode's, the program's)."""
MAIN = """
WRAPPERS = ("BackendCompilerFailed", "InductorError")  # torch's wrappers of the error raised
if __name__ == '__main__':
    import contextlib
    import logging
    from torch._dynamo.repro.{flavor} import run_repro

    said = []  # torch logs the error numbers of an accuracy comparison (RMSE vs float64)

    class Said(logging.Handler):
        def emit(self, record):
            said.append(record.getMessage())

    logging.getLogger("torch._dynamo.utils").addHandler(Said())
    try:
        with {context}:
            {call}
    except Exception as error:
        if type(error).__name__ == "AccuracyError":  # run_repro(accuracy=True) compared them
            numbers = next((" ".join(s.split())[:300] for s in said if "RMSE" in s), "")
            print(f"REPRODUCED: output differs from eager: {{error}}; {{numbers}}")
            sys.exit(1)
{unwrap}        print(f"REPRODUCED: compiling the graph raised {{type(error).__name__}}: {{text}}")
        sys.exit(1)
    print("not reproduced: the graph compiled and ran")
"""
HEADER = '''"""Repro written by pt2doctor ablate (script mode): {sentence}

{what}.
Exits 1 (and says REPRODUCED) when compiling or running it raises. Run: python repro.py
{standalone}"""
import os
import sys

{fresh}
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # the modules copied beside this file
'''


def header(sentence: str, what: str, missing: list[str]) -> str:
    """The repro's docstring and path setup: the verdict, what the file holds, and why it
    cannot stand alone (if it cannot)."""
    return HEADER.format(
        sentence=sentence, what=what, standalone=standalone_note(missing), fresh=COMPILE_AFRESH
    )


def standalone_note(missing: list[str]) -> str:
    """The docstring line naming what a repro cannot carry ('' when it stands alone)."""
    return "" if not missing else "NOT STANDALONE: " + "; ".join(missing) + "\n"


def program_of(command: list[str]) -> tuple[Path, list[str]] | None:
    """The Python file a command runs and its arguments (None: it runs no ``.py`` file)."""
    for index, arg in enumerate(command):
        if arg.endswith(".py") and Path(arg).is_file():
            return Path(arg), command[index + 1 :]
    return None


def copied_modules(imports: list[str]) -> list[str]:
    """The modules beside a repro its import lines name."""
    return sorted({line.split()[1] for line in imports if line.startswith("import")})


def compact(text: str) -> str:
    """torch's repro text with its runs of blank lines cut to one (a shorter file to read)."""
    return re.sub(r"\n{3,}", "\n\n", text)


def main_block(call: str, flavor: str = "after_aot", grad: bool = False) -> str:
    """``if __name__ == '__main__':`` running ``call`` (torch's ``run_repro(...)`` from
    ``torch._dynamo.repro.FLAVOR``), exit 1 with REPRODUCED when it raises. ``grad``: run it
    with grad mode as it is (a Dynamo graph); else under no_grad (AOT's forward graph)."""
    context = "contextlib.nullcontext()" if grad else "torch.no_grad()"
    return MAIN.format(call=call, flavor=flavor, context=context, unwrap=UNWRAP)


def without_environment(text: str) -> str:
    """torch's repro text with its ``os.environ[...] = ...`` lines (this machine's cache and
    trace paths) commented out."""
    return _ENV_LINE.sub(lambda m: f"# (pt2doctor: {m[1]} left to the environment)", text)


def last_runnable(trace_dir: Path) -> tuple[str, str] | None:
    """(compile id, text) of the last ``fx_graph_runnable`` in a rung's trace."""

    def wanted(kind: str, meta: Any) -> bool:
        return kind == "artifact" and isinstance(meta, dict) and meta.get("name") == RUNNABLE

    try:
        paths = find_trace_logs(trace_dir)
    except Exception:  # no trace: the program never compiled
        return None
    found = None
    for record in read_records(paths, ParseStats(), wanted):
        if wanted(record.kind, record.meta) and record.payload:
            found = (str(record.compile_id), record.payload)
    return found


def _defining_module(op: str, folder: Path, program: Path) -> Path | None:
    """The module that registers custom op ``torch.ops.NS.NAME``: the program, or a module
    beside it, whose source names ``"NS::NAME"`` (several modules of one namespace each
    register their own ops)."""
    namespace, name = op.split(".")[2:4]
    named = re.compile(re.escape(f"{namespace}::{name}") + r"(?!\w)")
    candidates = [
        program,
        *(p for p in sorted(folder.glob("*.py")) if p.resolve() != program.resolve()),
    ]
    for path in candidates:
        if path.is_file() and named.search(path.read_text(errors="replace")):
            return path
    return None


PROGRAM_DEFS = "program_defs"
"""The module beside a repro holding what it needs from the program itself (read, not run)."""


def repro_imports(
    graph: str, hooks: list[dict[str, Any]], program: Path, out: Path
) -> tuple[list[str], list[str]]:
    """Import lines for the custom ops and hooks, the modules copied beside the repro, and
    why the repro cannot stand alone (empty: it can). What the program itself defines is
    read from its source into program_defs.py (cases/extract.py): importing the program
    would run it."""
    lines: list[str] = []
    missing: list[str] = []
    own_ops: list[str] = []
    own_hooks: list[dict[str, Any]] = []
    for op in custom_ops_named(graph):
        module = _defining_module(op, program.parent, program)
        if module is None:
            missing.append(f"custom op {op} is registered by no module beside the program; "
                           "import it before running")  # fmt: skip
        elif module.resolve() == program.resolve():
            own_ops.append(op)
        else:
            shutil.copyfile(module, out / module.name)
            lines.append(f"import {module.stem}  # noqa: E402,F401  registers {op}")
    for hook in hooks:
        source = Path(str(hook.get("file")))
        if source.is_file() and source.resolve() == program.resolve():
            own_hooks.append(hook)
            continue
        if not source.is_file():
            missing.append(f"hook {hook['hook']} = {hook['function']} is defined in "
                           f"{source.name}, which is not found; set it before running")  # fmt: skip
            continue
        shutil.copyfile(source, out / source.name)
        lines.append(f"import {source.stem}  # noqa: E402")
        lines.append(f"torch._inductor.config.{hook['hook']} = {source.stem}.{_made(hook)}")
    if own_ops or own_hooks:
        own, why = _program_defs(program, own_ops, own_hooks, out)
        lines += own
        missing += why
    return lines, missing


def _made(hook: dict[str, Any]) -> str:
    """The hook as the repro sets it: the function by name, or a new instance of the class
    whose object the program set (a CustomGraphPass: ``TanhViaSigmoid()``)."""
    return f"{hook['instance_of']}()" if hook.get("instance_of") else str(hook["function"])


def _uncapturable(hook: dict[str, Any]) -> str:
    """Why a hook the program set cannot be copied into the repro, naming the piece."""
    name = str(hook["function"])
    where = f"{hook['hook']} = {name}"
    if "<lambda>" in name:
        return f"hook {where} is a lambda: it has no name to copy it by; set it before running"
    outer = name.split(".<locals>.")[0]
    return (f"hook {where} is a closure made by {outer}() while the program runs (its captured "
            "values exist only then); set it before running")  # fmt: skip


def _program_defs(
    program: Path, ops: list[str], hooks: list[dict[str, Any]], out: Path
) -> tuple[list[str], list[str]]:
    """program_defs.py from the program's own definitions of ``ops`` and ``hooks``."""
    functions = [str(h["function"]) for h in hooks if "<" not in str(h["function"])]
    nested = [h for h in hooks if "<" in str(h["function"])]
    op_names = [op.removeprefix("torch.ops.").replace(".", "::", 1).rsplit(".", 1)[0]
                for op in ops]  # fmt: skip
    try:
        found = extract_definitions(program.read_text(), [f.split(".")[0] for f in functions],
                                    op_names)  # fmt: skip
    except (OSError, SyntaxError, ValueError) as error:
        return [], [f"the program's own definitions could not be read ({error})"]
    missing = [_uncapturable(h) for h in nested]
    missing += [f"{name} is not defined at the program's top level" for name in
                [*op_names, *functions] if name.split(".")[0] not in found.found]  # fmt: skip
    missing += [f"from the program: {sentence}" for sentence in found.missing]
    if not found.source:
        return [], missing
    header = (
        f'"""What the repro needs from {program.name}: its definitions, copied by pt2doctor."""\n'
    )
    (out / f"{PROGRAM_DEFS}.py").write_text(header + found.source)
    lines = [f"import {PROGRAM_DEFS}  # noqa: E402,F401  {', '.join([*op_names, *functions])}"]
    lines += [f"torch._inductor.config.{h['hook']} = {PROGRAM_DEFS}.{_made(h)}"
              for h in hooks if h not in nested]  # fmt: skip
    return lines, missing


def write_script_repro(
    out: Path,
    trace_dir: Path,
    command: list[str],
    hooks: list[dict[str, Any]],
    sentence: str,
    accuracy: bool = False,
) -> dict[str, Any]:
    """Write ``out/repro.py`` from the rung's runnable graph; what the report says about it.
    ``accuracy``: the failure is wrong numbers, so the repro compares the compiled graph with
    the graph run eagerly (torch's run_repro(accuracy=True), as TORCHDYNAMO_REPRO_LEVEL=4
    does) and fails when they differ; the graph is the last one Inductor compiled."""
    found = last_runnable(trace_dir)
    if found is None:
        return {
            "written": False,
            "reason": "no fx_graph_runnable in the failing rung's trace (torch writes it for "
            "graphs Inductor compiles): the program is its own repro",
        }
    compile_id, graph = found
    found_program = program_of(command)
    program = found_program[0] if found_program else Path(command[-1])
    out.mkdir(parents=True, exist_ok=True)
    imports, missing = repro_imports(graph, hooks, program, out)
    body = without_environment(graph)
    call = _RUN_CALL.search(body)
    if call is not None:
        run = call[1].replace("accuracy=False", "accuracy=True") if accuracy else call[1]
        body = body[: body.index("if __name__ == '__main__':")] + main_block(run)
    shown = " ".join(Path(arg).name if "/" in arg else arg for arg in command)  # no local paths
    what = f"torch's runnable graph for compile {compile_id} of `{shown}`, compiled with Inductor"
    head = header(sentence, what, missing)
    marker = "import torch\n"
    body = body.replace(marker, marker + "".join(f"{line}\n" for line in imports), 1)
    text = compact(head + body)
    (out / "repro.py").write_text(text)
    return {
        "written": True,
        "source": RUNNABLE,
        "path": str(out / "repro.py"),
        "module": None,
        "compile_id": compile_id,
        "lines": text.count("\n"),
        "copied_sources": copied_modules(imports),
        "standalone": not missing,
        "not_standalone_because": missing,
        "command": f"python {out / 'repro.py'}",
    }

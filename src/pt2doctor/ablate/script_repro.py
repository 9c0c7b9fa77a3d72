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
from pt2doctor.trace.discover import find_trace_logs
from pt2doctor.trace.reader import read_records
from pt2doctor.trace.records import ParseStats

RUNNABLE = "fx_graph_runnable"
_ENV_LINE = re.compile(r"^os\.environ\[['\"](\w+)['\"]\] = .*$", re.MULTILINE)
_RUN_CALL = re.compile(r"^\s*(run_repro\(mod, load_args,.*\))\s*$", re.MULTILINE)
MAIN = """
if __name__ == '__main__':
    from torch._dynamo.repro.after_aot import run_repro
    try:
        with torch.no_grad():
            {call}
    except Exception as error:
        for _ in range(10):  # the error the others wrap (InductorError wraps the pass's own)
            inner = getattr(error, "inner_exception", None)
            inner = inner if isinstance(inner, BaseException) else error.__cause__
            if inner is None:
                break
            error = inner
        text = " ".join(str(error).split())[:400]
        print(f"REPRODUCED: compiling the graph raised {{type(error).__name__}}: {{text}}")
        sys.exit(1)
    print("not reproduced: the graph compiled and ran")
"""
HEADER = '''"""Repro written by pt2doctor ablate (script mode): {sentence}

torch's runnable graph for compile {compile_id} of `{command}`, compiled with Inductor.
Exits 1 (and says REPRODUCED) when compiling or running it raises. Run: python repro.py
{standalone}"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # the modules copied beside this file
'''


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


def _defining_module(text: str, folder: Path, program: Path) -> Path | None:
    """The module beside the program whose source contains ``text``."""
    for path in sorted(folder.glob("*.py")):
        if path.resolve() != program.resolve() and text in path.read_text(errors="replace"):
            return path
    return program if text in program.read_text(errors="replace") else None


def _imports(
    graph: str, hooks: list[dict[str, Any]], program: Path, out: Path
) -> tuple[list[str], list[str]]:
    """Import lines for the custom ops and hooks, the modules copied beside the repro, and
    why the repro cannot stand alone (empty: it can)."""
    lines: list[str] = []
    missing: list[str] = []
    for op in custom_ops_named(graph):
        namespace = op.split(".")[2]
        module = _defining_module(f"{namespace}::", program.parent, program)
        if module is None or module.resolve() == program.resolve():
            where = "the program itself" if module else "no module beside the program"
            missing.append(f"custom op {op} is registered by {where}; import it before running")
            continue
        shutil.copyfile(module, out / module.name)
        lines.append(f"import {module.stem}  # noqa: E402,F401  registers {op}")
    for hook in hooks:
        source = Path(str(hook.get("file")))
        if not source.is_file() or source.resolve() == program.resolve():
            missing.append(
                f"hook {hook['hook']} = {hook['function']} is defined in "
                f"{source.name} (the program itself, or not found); set it before running"
            )
            continue
        shutil.copyfile(source, out / source.name)
        lines.append(f"import {source.stem}  # noqa: E402")
        lines.append(f"torch._inductor.config.{hook['hook']} = {source.stem}.{hook['function']}")
    return lines, missing


def write_script_repro(
    out: Path, trace_dir: Path, command: list[str], hooks: list[dict[str, Any]], sentence: str
) -> dict[str, Any]:
    """Write ``out/repro.py`` from the rung's runnable graph; what the report says about it."""
    found = last_runnable(trace_dir)
    if found is None:
        return {
            "written": False,
            "reason": "no fx_graph_runnable in the failing rung's trace (torch writes it for "
            "graphs Inductor compiles): the program is its own repro",
        }
    compile_id, graph = found
    program = next((Path(arg) for arg in command if arg.endswith(".py")), Path(command[-1]))
    out.mkdir(parents=True, exist_ok=True)
    imports, missing = _imports(graph, hooks, program, out)
    body = _ENV_LINE.sub(lambda m: f"# (pt2doctor: {m[1]} left to the environment)", graph)
    call = _RUN_CALL.search(body)
    if call is not None:
        body = body[: body.index("if __name__ == '__main__':")] + MAIN.format(call=call[1])
    standalone = "" if not missing else "NOT STANDALONE: " + "; ".join(missing) + "\n"
    shown = " ".join(Path(arg).name if "/" in arg else arg for arg in command)  # no local paths
    head = HEADER.format(
        sentence=sentence, compile_id=compile_id, command=shown, standalone=standalone
    )
    marker = "import torch\n"
    body = body.replace(marker, marker + "".join(f"{line}\n" for line in imports), 1)
    text = head + body
    (out / "repro.py").write_text(text)
    return {
        "written": True,
        "path": str(out / "repro.py"),
        "module": None,
        "compile_id": compile_id,
        "lines": text.count("\n"),
        "copied_sources": sorted(
            {line.split()[1] for line in imports if line.startswith("import")}
        ),
        "standalone": not missing,
        "not_standalone_because": missing,
        "command": f"python {out / 'repro.py'}",
    }

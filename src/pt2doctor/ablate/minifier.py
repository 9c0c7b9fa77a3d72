"""torch's minifier as the repro's last rung, in script mode.

The failing rung runs once more with ``TORCHDYNAMO_REPRO_AFTER`` set (``dynamo`` for a failure
in a backend that gets Dynamo's graph, ``aot`` for one in Inductor) and
``TORCHDYNAMO_REPRO_LEVEL=2``: when the compile fails, torch writes ``minifier_launcher.py``,
the failing graph with its inputs' shapes and the backend, into ``TORCH_COMPILE_DEBUG_DIR``.
``python minifier_launcher.py minify`` then shrinks the graph while it still fails, within
MINIFY_SECONDS, and writes ``repro.py`` beside the launcher. What it produced (the minified
graph, else the launcher's whole graph) becomes a portable, self-checking repro as the
runnable graph does (ablate/script_repro.py): machine paths dropped, the program's custom ops
and passes imported, ``run_repro`` wrapped to say REPRODUCED."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pt2doctor.ablate.script_repro import (
    compact,
    copied_modules,
    main_block,
    without_environment,
)

MINIFY_SECONDS = 300.0
"""How long ``minifier_launcher.py minify`` may shrink the graph (then the launcher's whole
graph is the repro)."""
DEBUG_DIR_ENV = "TORCH_COMPILE_DEBUG_DIR"
LAUNCHER = "minifier_launcher.py"
_SAVE_DIR = re.compile(r"save_dir=(?:'[^']*'|\"[^\"]*\")")


def repro_after(layer: str | None) -> str:
    """Where torch's minifier cuts: after AOTAutograd for Inductor, else after Dynamo."""
    return "aot" if layer == "inductor" else "dynamo"


def minifier_env(after: str, debug_dir: Path) -> dict[str, str]:
    return {
        "TORCHDYNAMO_REPRO_AFTER": after,
        "TORCHDYNAMO_REPRO_LEVEL": "2",
        DEBUG_DIR_ENV: str(debug_dir.resolve()),
    }


def _launcher(debug_dir: Path) -> Path | None:
    found = sorted(debug_dir.rglob(LAUNCHER), key=lambda path: path.stat().st_mtime)
    return found[-1] if found else None


def _call(text: str) -> tuple[int, int] | None:
    """Where the ``run_repro(...)`` call under ``if __name__ == '__main__':`` is (start, end)."""
    main = text.find("if __name__ == '__main__':")
    start = text.find("run_repro(", main) if main >= 0 else -1
    if start < 0:
        return None
    depth = 0
    for index in range(start + len("run_repro"), len(text)):
        depth += {"(": 1, ")": -1}.get(text[index], 0)
        if depth == 0:
            return start, index + 1
    return None


def portable_graph(text: str, after: str, imports: list[str], accuracy: bool) -> str | None:
    """The minifier's file made portable and self-checking (None: it holds no run_repro
    call): its environment lines dropped, the inputs random (no saved storages), the
    program's definitions imported, the call run (not minified) and wrapped."""
    found = _call(text)
    if found is None:
        return None
    call = " ".join(text[found[0] : found[1]].split())
    call = call.replace("command='minify'", "command='run'")
    call = _SAVE_DIR.sub("save_dir=None", call)
    if accuracy:
        call = call.replace("accuracy=False", "accuracy=True")
    body = without_environment(text[: text.find("if __name__ == '__main__':")])
    marker = "import torch\n"
    body = body.replace(marker, marker + "".join(f"{line}\n" for line in imports), 1)
    return body + main_block(call, f"after_{after}", grad=after == "dynamo")


def minify(
    out: Path,
    failing: dict[str, Any],
    rerun: Callable[[dict[str, str]], dict[str, Any]],
    imports: Callable[[str, Path], tuple[list[str], list[str]]],
    header: Callable[[str, list[str]], str],
    timeout: float,
) -> dict[str, Any]:
    """Run the failing rung again under torch's minifier, shrink its graph, and write
    ``out/repro.py`` from it; what the report says (``minifier``: how it went).
    ``rerun(env)``: the failing rung once more with ``env`` added; ``imports(graph, out)``:
    the import lines the graph needs and why it cannot stand alone;
    ``header(what, missing)``: the repro's docstring."""
    after = repro_after(failing.get("layer"))
    debug = out / "debug"
    started = time.monotonic()
    outcome = rerun(minifier_env(after, debug))
    launcher = _launcher(debug)
    record: dict[str, Any] = {"after": after, "launcher": None, "minified": False}
    if launcher is None:
        how = "ran to the end" if outcome.get("status") == "ok" else "failed before any graph"
        record["seconds"] = round(time.monotonic() - started, 2)
        return {"written": False, "source": "minifier", "minifier": record,
                "reason": f"torch's minifier (TORCHDYNAMO_REPRO_AFTER={after!r}) wrote no "
                f"launcher: the program {how}"}  # fmt: skip
    record["launcher"] = str(launcher)
    budget = min(timeout, MINIFY_SECONDS)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    try:
        done = subprocess.run([sys.executable, LAUNCHER, "minify"], cwd=launcher.parent, env=env,
                              capture_output=True, text=True, timeout=budget,
                              check=False)  # fmt: skip
        record["exit_code"] = done.returncode
        tail = (done.stderr or done.stdout).strip().splitlines()
        record["output"] = tail[-1][:300] if tail else ""
    except subprocess.TimeoutExpired:
        record["output"] = f"stopped after {budget:g} s"
    minified = launcher.parent / "repro.py"
    record["minified"] = minified.is_file()
    record["seconds"] = round(time.monotonic() - started, 2)
    source = minified if minified.is_file() else launcher
    text = source.read_text(errors="replace")
    out.mkdir(parents=True, exist_ok=True)
    lines, missing = imports(text, out)
    body = portable_graph(text, after, lines, failing.get("status") == "diverged")
    if body is None:
        return {"written": False, "source": "minifier", "minifier": record,
                "reason": f"torch's {source.name} holds no run_repro call"}  # fmt: skip
    what = (
        "torch's minifier shrank the failing graph to this"
        if record["minified"]
        else (
            "torch's minifier launcher (it did not shrink the graph in time): the whole failing graph"
        )
    )
    text = compact(header(what, missing) + body)
    (out / "repro.py").write_text(text)
    return {
        "written": True,
        "source": "minifier",
        "path": str(out / "repro.py"),
        "module": None,
        "lines": text.count("\n"),
        "copied_sources": copied_modules(lines),
        "standalone": not missing,
        "not_standalone_because": missing,
        "command": f"python {out / 'repro.py'}",
        "minifier": record,
    }

"""``--tlparse``: drill down from our HTML into tlparse's report of the same trace.

When the ``tlparse`` executable is installed (``pip install tlparse``), it renders its report
of the trace into a folder; our report.html then links every compile id to tlparse's page for
it (its compilation_metrics page, else its entry in tlparse's index).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from pt2doctor.errors import UsageError

# tlparse reads a 200 MB log in ~10 s (docs/PERFORMANCE.md); a hung one is killed.
TLPARSE_TIMEOUT_S = 600
_KEY = re.compile(r"^\[(\d+)/(\d+)(?:_(\d+))?\]$")


def find_tlparse() -> str | None:
    """The tlparse executable: on PATH, or beside the running Python (a venv not activated)."""
    found = shutil.which("tlparse")
    if found:
        return found
    beside = Path(sys.executable).parent / "tlparse"
    return str(beside) if beside.is_file() and os.access(beside, os.X_OK) else None


def run_tlparse(log: Path, out_dir: Path) -> Path:
    """Render tlparse's report of ``log`` into ``out_dir``; returns its index.html."""
    executable = find_tlparse()
    if executable is None:
        raise UsageError("--tlparse: the tlparse executable is not installed (pip install tlparse)")
    command = [executable, str(log), "-o", str(out_dir), "--overwrite", "--no-browser"]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=TLPARSE_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired as error:
        raise UsageError(f"tlparse did not finish in {TLPARSE_TIMEOUT_S} s") from error
    index = out_dir / "index.html"
    if done.returncode != 0 or not index.is_file():
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise UsageError(f"tlparse failed on {log} (exit {done.returncode}): {last}")
    return index


def compile_pages(out_dir: Path) -> dict[str, str]:
    """Compile id (``"2/1"``) -> page inside ``out_dir`` (relative to it): the metrics page of
    the compile's last attempt, else its anchor in index.html."""
    try:
        directory = json.loads((out_dir / "compile_directory.json").read_text())
    except (OSError, ValueError):
        directory = {}
    pages: dict[str, tuple[int, str]] = {}
    for key, entry in directory.items():
        match = _KEY.match(key)
        if match is None:
            continue
        compile_id, attempt = f"{match[1]}/{match[2]}", int(match[3] or 0)
        metrics = [
            a["url"]
            for a in entry.get("artifacts", [])
            if str(a.get("name", "")).startswith("compilation_metrics")
        ]
        page = metrics[-1] if metrics else f"index.html#{key}"
        if compile_id not in pages or attempt >= pages[compile_id][0]:
            pages[compile_id] = (attempt, page)
    return {compile_id: page for compile_id, (_, page) in pages.items()}


def render_tlparse(logs: list[Path], out_dir: Path) -> dict[str, str]:
    """Run tlparse on the trace into ``out_dir``; compile id -> page relative to ``out_dir``.
    With several logs (ranks) the first is rendered: tlparse's compile ids are per log."""
    if not logs:
        raise UsageError("--tlparse: no trace log to render")
    run_tlparse(logs[0], out_dir)
    return compile_pages(out_dir)


def links_from(pages: dict[str, str], out_dir: Path, html_dir: Path) -> dict[str, str]:
    """``pages`` (relative to ``out_dir``) as links from a page written in ``html_dir``."""
    prefix = Path(os.path.relpath(out_dir.resolve(), html_dir.resolve()))
    return {cid: (prefix / page).as_posix() for cid, page in pages.items()}

"""The Python floats each start of a program baked into its graphs, remembered in Inductor's
cache dir (``<cache dir>/pt2doctor/baked-constants.json``) so that the next start can show
which of them changed: the evidence behind ``cache_key_constant``. A value that is the same at
every start (``math.pi``, a config's ``head_dim ** -0.5``) never changes a cache key, however
computed it looks; only a value seen to differ between two starts is named.

The watched process reads the previous start's values before its first compile (capture/
probes.py, in the ``cache_dir`` event); ``pt2doctor run`` writes this start's after the report.
Keyed by the program (its script's path, text hash and arguments: :func:`program_key`), each
``{"frame | expression": value}``.
Standard library only (the watched interpreter may lack pt2doctor's dependencies)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path

FOLDER = "pt2doctor"
FILE = "baked-constants.json"
MAX_PROGRAMS = 200
"""Programs remembered per cache dir; the oldest go first."""


def program_key(argv: list[str] | None = None) -> str:
    """The program as the next start will name it: its script's absolute path, a hash of the
    script's text and its arguments (``/w/train.py#3f2a9c01 --lr 0.1``), so that an edited
    script or other arguments (``--scale 0.6``) are another program, whose other constants
    are no evidence of values drawn at start-up. A ``-c`` string or ``-m`` module (argv[0]
    is ``-c`` or a module's file) is keyed by what argv holds."""
    argv = sys.argv if argv is None else argv
    first = argv[0] if argv else ""
    if not first or first in ("-c", "-m"):
        return " ".join(argv)
    path = os.path.abspath(first)
    digest = "?"
    with contextlib.suppress(OSError):
        digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()[:12]
    return " ".join([f"{path}#{digest}", *argv[1:]])


def _path(cache_dir: str) -> Path:
    return Path(cache_dir) / FOLDER / FILE


def _load(cache_dir: str) -> dict[str, dict[str, str]]:
    with contextlib.suppress(OSError, ValueError):
        data = json.loads(_path(cache_dir).read_text())
        if isinstance(data, dict):
            return {k: v for k, v in data.items() if isinstance(v, dict)}
    return {}


def previous_constants(cache_dir: str, program: str) -> dict[str, str] | None:
    """The constants the last start of ``program`` with this cache dir baked, None when no
    start recorded any (the first start, or a run without pt2doctor)."""
    return _load(cache_dir).get(program)


def remember_constants(cache_dir: str, program: str, constants: dict[str, str]) -> None:
    """Record this start's baked constants for the next (atomically; an unwritable cache dir
    is left alone: the finding then needs evidence it cannot get, and stays silent)."""
    data = _load(cache_dir)
    data.pop(program, None)
    data[program] = dict(constants)
    while len(data) > MAX_PROGRAMS:
        data.pop(next(iter(data)))
    target = _path(cache_dir)
    with contextlib.suppress(OSError):
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".baked-")
        with os.fdopen(fd, "w") as out:
            json.dump(data, out, indent=1, sort_keys=True)
        os.replace(tmp, target)

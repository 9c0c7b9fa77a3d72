"""Name, claim and stamp a new run directory (``run``, ``check`` and ``ablate`` alike)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from pt2doctor.errors import UsageError
from pt2doctor.rundir import FORMAT_VERSION, MANIFEST

if TYPE_CHECKING:
    from pt2doctor.trace.types import Manifest


def default_run_dir(kind: str) -> Path:
    """``./pt2doctor-<kind>/<time>-<pid>``: where a command writes when --out is not given."""
    return Path(f"pt2doctor-{kind}") / f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"


def require_fresh_dir(out: Path, what: str = "run directory") -> None:
    """A command never writes into a directory that already holds something."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError(f"{what} {out} already exists: choose another --out")


def write_manifest(out: Path, manifest: Manifest) -> None:
    """Replace ``out/manifest.json`` atomically (a reader never sees half of one), stamped
    with the format's version."""
    tmp = out / (MANIFEST + ".tmp")
    stamped = {**manifest, "format_version": FORMAT_VERSION}
    tmp.write_bytes(orjson.dumps(stamped, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS))
    tmp.replace(out / MANIFEST)

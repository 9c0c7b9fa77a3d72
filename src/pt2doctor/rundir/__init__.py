"""The run directory: the contract between capture and everything that reads a run.

Capture writes it (``capture/``: ``run``'s child and probes; ``check`` and ``ablate`` write
theirs), and ``report``, ``diff``, ``watch`` and the commands' own reports read it back through
this layer, never through capture. It sits above ``trace/`` (a run directory holds a
TORCH_TRACE log) and below the analyses.

The layout (docs/report-schema.md says what each file holds)::

    manifest.json      command, times, exit code, settings, format_version (write.write_manifest)
    trace/*.log        TORCH_TRACE
    probes.jsonl       events, one JSON object a line, flushed as they happen
    counters/<pid>.json  each process's latest counters, replaced atomically
    fusion.log         Inductor's fusion log, bounded (``run --kernels``; capture/fusion.py);
                       fusion.rank<N>.log for each rank of a distributed run
    profile/trace.json the profiled window's Chrome trace, profile/window.json what it held
                       (``run --profile``; capture/profile.py)
    tries/index.json   the fixes ``run --try-fixes`` tried, tries/<n>/ the run with each one
    stdout.log, stderr.log, faulthandler.<pid>.log
    results.jsonl      what ``check`` streams (its run directory has no manifest)

``FORMAT_VERSION`` is written into every new manifest; a manifest without it is from before
version 1 and reads the same way. The names here are plain constants, so the child's probes can
import them inside the user's program at no cost; the readers load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pt2doctor._lazy import lazy_names

if TYPE_CHECKING:
    from pt2doctor.rundir.load import load_run
    from pt2doctor.rundir.read import (
        is_check_dir,
        is_run_dir,
        load_manifest,
        load_probes,
        read_jsonl,
    )
    from pt2doctor.rundir.write import default_run_dir, require_fresh_dir, write_manifest

FORMAT_VERSION = 1
"""The run directory's format: 1 since 2026-12 (manifests before it carry no version)."""
MANIFEST = "manifest.json"
PROBES_FILE = "probes.jsonl"
TRACE_DIR = "trace"
CHECK_RESULTS = "results.jsonl"
"""What ``check`` writes in its run directory (here so ``report`` can tell one apart cheaply)."""
FUSION_LOG = "fusion.log"
"""Inductor's fusion log in TORCH_LOGS format, as ``run --kernels`` keeps it."""
PROFILE_DIR = "profile"
"""``run --profile``: the profiled window (capture/profile.py)."""
PROFILE_TRACE = "trace.json"
"""The window's Chrome trace, under PROFILE_DIR (opens in Perfetto)."""
PROFILE_WINDOW = "window.json"
"""What the window held (hot compile id, calls, wall time, why it closed), under PROFILE_DIR."""
STDOUT_LOG = "stdout.log"
"""What the program printed (beside stderr.log)."""
TRIES_DIR = "tries"
"""``run --try-fixes``: one run directory per fix tried (tries/<n>/), and TRIES_INDEX."""
TRIES_INDEX = "index.json"
"""Under TRIES_DIR: ``[{"n", "trial"}]``, the fixes tried, in order."""
PROFILE_START_MARK = "pt2doctor: window start"
PROFILE_END_MARK = "pt2doctor: window end"
PROFILE_PERIOD_MARK = "pt2doctor: call"
"""Right after each of the hot graph's calls in the window: the loop's periods."""
"""Zero-length profiler events that bound the window in its trace."""
COUNTERS_DIR = "counters"
"""Each process's latest counters (capture/probes.py): counters/<pid>.json."""

_HOMES = {
    "default_run_dir": "write",
    "is_check_dir": "read",
    "is_run_dir": "read",
    "load_manifest": "read",
    "load_probes": "read",
    "load_run": "load",
    "read_jsonl": "read",
    "require_fresh_dir": "write",
    "write_manifest": "write",
}
__all__ = [
    "CHECK_RESULTS",
    "COUNTERS_DIR",
    "FORMAT_VERSION",
    "FUSION_LOG",
    "MANIFEST",
    "PROBES_FILE",
    "PROFILE_DIR",
    "PROFILE_END_MARK",
    "PROFILE_PERIOD_MARK",
    "PROFILE_START_MARK",
    "PROFILE_TRACE",
    "PROFILE_WINDOW",
    "TRACE_DIR",
    "default_run_dir",
    "is_check_dir",
    "is_run_dir",
    "load_manifest",
    "load_probes",
    "load_run",
    "read_jsonl",
    "require_fresh_dir",
    "write_manifest",
]
__getattr__ = lazy_names(__name__, _HOMES)

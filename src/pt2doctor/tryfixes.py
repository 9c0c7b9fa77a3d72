"""``run --try-fixes N``: prove a fix by re-running the program with it applied.

After the main run, its report's findings offer the fixes pt2doctor can apply itself
(``findings[].tryable``: a config value, input marks, a torch.compile setting). Each is
re-run once, in order, with the main run's command, backend and timeout, in
``tries/<n>/`` under the main run directory (the program's output goes only to that run's
logs). After each re-run the report is built again: a finding whose fix helped is done;
one whose fix did not help has its next candidate tried. At most N re-runs.

The order is the report's: errors first, then warnings, then info.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pt2doctor.capture.runner import RunOptions, run_program
from pt2doctor.rundir import TRIES_DIR, TRIES_INDEX


def _findings(run_dir: Path) -> list[dict[str, Any]]:
    from pt2doctor.report.schema import build_report
    from pt2doctor.rundir.load import load_run

    return [dict(finding) for finding in build_report(load_run(run_dir))["findings"]]


def try_fixes(options: RunOptions, budget: int, say: Callable[[str], None] = lambda _: None) -> int:
    """Re-run ``options.command`` with each fix to try, at most ``budget`` times; returns how
    many re-runs were made. ``say`` hears one line per re-run."""
    from pt2doctor.analysis.findings.tries import next_trial

    index: list[dict[str, Any]] = []
    folder = options.out / TRIES_DIR
    for n in range(1, budget + 1):
        trial = next_trial(_findings(options.out))
        if trial is None:
            break
        say(f"try {n}/{budget}: {trial['label']}")
        run_program(
            dataclasses.replace(
                options,
                out=folder / str(n),
                try_fix=trial,
                quiet=True,
                profile_calls=None,  # a try measures compiles, not the profile
                launch=options.launch,
            )
        )
        index.append({"n": n, "trial": trial})
        (folder / TRIES_INDEX).write_text(json.dumps(index, indent=1), encoding="utf-8")
    return len(index)

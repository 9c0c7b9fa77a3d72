"""``run --try-fixes N``: prove a fix by re-running the program with it applied.

After the main run, its report's findings offer the fixes pt2doctor can apply itself
(``findings[].tryable``: a config value, input marks, a torch.compile setting). Each is
re-run once, in order, with the main run's command, backend and timeout, in
``tries/<n>/`` under the main run directory (the program's output goes only to that run's
logs). Each re-run is judged against the main run (analysis/findings/verdicts.py ``verdict``): a
finding whose fix helped is done; one whose fix did not help has its next candidate tried. At
most N re-runs. The report then judges them again, offline, from the run directories.

The order is the report's: errors first, then warnings, then info.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

from pt2doctor.capture.options import RunOptions
from pt2doctor.capture.runner import run_program
from pt2doctor.rundir import TRIES_DIR, TRIES_INDEX


def run_tries(options: RunOptions, budget: int, say: Callable[[str], None] = lambda _: None) -> int:
    """Re-run ``options.command`` with each fix to try, at most ``budget`` times; returns how
    many re-runs were made. ``say`` hears one line per re-run. The main run's report is built
    once; each re-run is judged by its own outcome against the main run's."""
    from pt2doctor.analysis.findings.codes import spec
    from pt2doctor.analysis.findings.verdicts import (
        next_trial,
        outcome,
        printed_change,
        trial_key,
        verdict,
    )
    from pt2doctor.report.schema import build_report
    from pt2doctor.rundir.load import load_run

    main = load_run(options.out)
    findings = build_report(main)["findings"]
    candidates = [list(f.get("tryable", [])) for f in findings]
    # A correctness fix is meant to change the results; any other must leave them alone.
    judged = {trial_key(t): spec(f["code"]).step != "correctness"
              for f in findings for t in f.get("tryable", [])}  # fmt: skip
    before = outcome(main)
    verdicts: dict[str, str] = {}
    index: list[dict[str, Any]] = []
    folder = options.out / TRIES_DIR
    for n in range(1, budget + 1):
        trial = next_trial(candidates, verdicts)
        if trial is None:
            break
        say(f"try {n}/{budget}: {trial['label']}")
        out = folder / str(n)
        # A try measures compiles, not the profile.
        run_program(
            dataclasses.replace(options, out=out, try_fix=trial, quiet=True, profile_calls=None)
        )
        tried = load_run(out)
        changed = (
            printed_change(main.stdout, tried.stdout) if judged.get(trial_key(trial)) else None
        )
        verdicts[trial_key(trial)] = verdict(before, outcome(tried), changed)
        index.append({"n": n, "trial": trial})
        (folder / TRIES_INDEX).write_text(json.dumps(index, indent=1), encoding="utf-8")
    return len(index)

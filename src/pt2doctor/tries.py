"""``run --try-fixes N``: prove a fix by re-running the program with it applied.

After the main run, its report's findings offer the fixes pt2doctor can apply itself
(``findings[].tryable``: a config value, input marks, a torch.compile setting). Each is
re-run once, in order, with the main run's command, backend and timeout, in
``tries/<n>/`` under the main run directory (the program's output goes only to that run's
logs). Each re-run is judged against the main run (analysis/findings/verdicts.py ``verdict``): a
fix helped when the finding it is for is gone from the re-run, or less severe (a recompile now
bounded); a finding whose fix helped is done; one whose fix did not help, or helped only
partly (counts down, the finding still there), has its next candidate tried. A fix of time
(``timed``: freezing) is re-run profiled, and helped when the hot loop's call got faster beyond
both windows' noise; so is the fix of a break whose cost the profile measured, which then
measures what removing that break saves. At most N re-runs. The report then judges them again, offline, from the run directories.

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
        CONTROL_LABEL,
        Target,
        costed_break,
        next_trial,
        outcome,
        results_change,
        results_vary,
        target_moved,
        target_of,
        target_remains,
        time_moved,
        timed_verdict,
        trial_key,
        verdict,
    )
    from pt2doctor.analysis.pipeline import analyse_run
    from pt2doctor.rundir.load import load_run

    main = load_run(options.out)
    findings = analyse_run(main).findings
    trials = [[fix.application.as_json() for fix in f.fixes if fix.application is not None]
              for f in findings]  # fmt: skip
    candidates = [found for found in trials if found]
    # A correctness fix is meant to change the results; any other must leave them alone.
    judged = {trial_key(t): spec(f.code).step != "correctness"
              for f, found in zip(findings, trials, strict=True) for t in found}  # fmt: skip
    # What each fix is for: the first finding that offers it, gone or not in the re-run.
    targets: dict[str, Target] = {}
    for finding, found in zip(findings, trials, strict=True):
        for t in found:
            targets.setdefault(trial_key(t), target_of(finding))
    before = outcome(main)
    # The program re-run without a fix, once a try's results differ, and what differed there.
    controls: list[dict[str, Any]] = []
    vary: set[str] = set()
    verdicts: dict[str, str] = {}
    index: list[dict[str, Any]] = []
    folder = options.out / TRIES_DIR
    for n in range(1, budget + 1):
        trial = next_trial(candidates, verdicts)
        if trial is None:
            break
        say(f"try {n}/{budget}: {trial['label']}")
        out = folder / str(n)
        # A try measures compiles, not the profile; a fix of time is profiled as the main run,
        # and so is a break's fix where the profile costed that break (what removing it saves
        # is then measured: verdicts.py ``measured_break_costs``).
        timed = trial.get("timed") or costed_break(targets[trial_key(trial)], findings)
        profile = options.profile_calls if timed else None
        run_program(
            dataclasses.replace(options, out=out, try_fix=trial, quiet=True, profile_calls=profile)
        )
        tried = load_run(out)
        key = trial_key(trial)
        changed = results_change(main, tried, vary) if judged.get(key) else None
        if changed is not None and not controls:
            # Other results: the fix's doing, or the program's (unseeded draws)? The program
            # once more without a fix says; it is not one of the N tries.
            say(f"re-run without a fix: do the results change run to run? ({changed})")
            controls.append({"n": budget + 1, "trial": {"label": CONTROL_LABEL, "control": True}})
            run_program(dataclasses.replace(options, out=folder / str(budget + 1), try_fix=None,
                                            quiet=True, profile_calls=None))  # fmt: skip
            vary = results_vary(main, load_run(folder / str(budget + 1)))
            changed = results_change(main, tried, vary)
        if trial.get("timed"):
            moved = time_moved(main, tried, trial)
            verdicts[key] = timed_verdict(before, outcome(tried), changed, moved)
        else:
            after = analyse_run(tried).findings
            remains = target_remains(targets[key], after) or (
                target_moved(targets[key], after, findings) is not None
            )
            verdicts[key] = verdict(before, outcome(tried), changed, remains)
        index.append({"n": n, "trial": trial})
        (folder / TRIES_INDEX).write_text(json.dumps(index + controls, indent=1),
                                          encoding="utf-8")  # fmt: skip
    if not index:  # asked, and nothing it could apply: the report says so
        folder.mkdir(parents=True, exist_ok=True)
        (folder / TRIES_INDEX).write_text("[]", encoding="utf-8")
    return len(index)

"""The verdict of a fix tried by ``run --try-fixes``, the next fix to try, and the advice once
tried (analysis/findings/verdicts.py): pure functions of the numbers and findings."""

from __future__ import annotations

from pt2doctor.analysis.findings.model import Finding
from pt2doctor.analysis.findings.verdicts import (
    BOUNDED_LEFT,
    NOTHING_LEFT,
    Outcome,
    next_trial,
    trial_key,
    tried_advice,
    verdict,
)
from pt2doctor.analysis.recompiles.fix_model import Fix, FixApplication


def _outcome(**numbers: int) -> Outcome:
    base = {"compiles": 9, "recompiles": 7, "limit_hits": 1, "graph_breaks": 0, "exit_code": 0}
    return Outcome(wall_s=1.0, **{**base, **numbers})  # type: ignore[arg-type]


def test_a_limit_no_longer_hit_helped_though_it_compiled_more() -> None:
    assert verdict(_outcome(), _outcome(limit_hits=0, recompiles=11, compiles=12)) == "helped"


def test_a_limit_still_hit_is_no_effect_whatever_it_added() -> None:
    assert verdict(_outcome(), _outcome(recompiles=8, compiles=10)) == "no_effect"


def test_fewer_recompiles_helped_more_breaks_or_a_failed_run_is_worse() -> None:
    before = _outcome(limit_hits=0)
    assert verdict(before, _outcome(limit_hits=0, recompiles=1)) == "helped"
    assert verdict(before, _outcome(limit_hits=0, graph_breaks=2)) == "worse"
    assert verdict(before, _outcome(limit_hits=0, recompiles=0, exit_code=1)) == "worse"
    assert verdict(before, before) == "no_effect"


def _row(trial: FixApplication, result: str) -> dict[str, object]:
    return {"fix": trial.label, "trial": trial.as_json(), "verdict": result, "summary": "…"}


LOW, HIGH = (
    FixApplication("limit = 9", config=(("a.b", 9),)),
    FixApplication("limit = 12", config=(("a.b", 12),)),
)


def test_the_next_trial_is_the_first_untried_candidate_of_a_finding_not_yet_helped() -> None:
    candidates = [[LOW.as_json(), HIGH.as_json()]]
    verdicts: dict[str, str] = {}
    assert next_trial(candidates, verdicts) == LOW.as_json()
    verdicts[trial_key(LOW.as_json())] = "no_effect"
    assert next_trial(candidates, verdicts) == HIGH.as_json()
    verdicts[trial_key(HIGH.as_json())] = "helped"
    assert next_trial(candidates, verdicts) is None


def test_a_fix_that_did_not_help_is_replaced_by_what_it_measured_and_the_next() -> None:
    fixes = [Fix("Layers are constants."), Fix("Set 9.", LOW), Fix("Or set 12.", HIGH)]
    finding = Finding("error", "recompiles", "t", "", fixes=fixes)
    advice = tried_advice(finding, [(1, _row(LOW, "no_effect"))])
    assert advice == "Tried limit = 9: no effect (…). Layers are constants. Next: Or set 12."
    advice = tried_advice(finding, [(1, _row(LOW, "no_effect")), (2, _row(HIGH, "worse"))])
    assert advice.endswith("made it worse (…). Layers are constants. " + NOTHING_LEFT)
    advice = tried_advice(finding, [(1, _row(LOW, "no_effect")), (2, _row(HIGH, "helped"))])
    assert advice == (
        "Tried limit = 12: helped (…). Tried limit = 9 before it: no effect (…). Layers are "
        "constants. Or set 12."
    )


def test_a_bounded_findings_failed_try_does_not_say_the_evidence_is_all_there_is() -> None:
    """An info recompiles finding (bounded, by design) whose one tryable fix did nothing:
    what is left is to pre-warm, not "no other fix here"."""
    finding = Finding("info", "recompiles", "t", "", fixes=[Fix("Mark it.", LOW)])
    advice = tried_advice(finding, [(0, _row(LOW, "no_effect"))])
    assert advice == f"Tried limit = 9: no effect (…). {BOUNDED_LEFT}"
